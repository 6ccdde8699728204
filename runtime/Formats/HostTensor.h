//===- HostTensor.h - element types and the host tensor the formats share -===//
//
// The reference interpreter and the training binary exchange tensors with
// the outside world as .npy and .safetensors files. Both formats store a
// dtype tag, a row-major shape and raw little-endian bytes, so that is all a
// HostTensor is: no strides, no views, no ownership tricks. Element values
// are never interpreted here; readers copy bytes, so NaN payloads and -0
// survive a round trip bit for bit.
//
// Every size computed from a shape goes through numElements()/numBytes(),
// which reject negative dimensions and 64-bit overflow: shapes come from
// untrusted files, and a wrapped product would turn a huge claimed tensor
// into a small allocation followed by an out-of-bounds copy.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_FORMATS_HOSTTENSOR_H
#define SINTER_RUNTIME_FORMATS_HOSTTENSOR_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace sinter::formats {

/// The element types Sinter reads and writes. Bool is one byte holding 0 or
/// 1, as in numpy and safetensors.
/// one-definition: the file formats' dtypes (safetensors, .npy), not the
/// step program's.
enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, U16, Bool };

/// Every DType, in declaration order (for tests and table-driven code).
inline constexpr DType kAllDTypes[] = {
    DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
    DType::I16, DType::I8,  DType::U8,  DType::U16,  DType::Bool};

/// numpy cannot create arrays of more than 32 dimensions (NPY_MAXDIMS in
/// numpy 1.x), so no file we need to read has more; the cap also bounds the
/// work a hostile header can ask for.
inline constexpr int kMaxRank = 32;

/// Bytes per element.
int64_t dtypeByteSize(DType dtype);

/// The safetensors spelling ("F32", "BF16", "BOOL", ...), also used in
/// messages.
std::string_view dtypeName(DType dtype);

/// Parses a safetensors dtype string. Types Sinter has no DType for (U32,
/// U64, C64, the F8 family, ...) give nullopt.
std::optional<DType> parseSafeTensorsDType(std::string_view name);

/// Parses a numpy descr such as "<f4" or "|u1". Single-byte types accept any
/// byte-order mark since byte order cannot matter for them (numpy writes
/// '|', other writers such as cnpy write '<'). Big-endian and every other
/// descr give nullopt; callers explain why.
std::optional<DType> parseNpyDescr(std::string_view descr);

/// The descr numpy writes for `dtype`, or nullopt for BF16, which numpy has
/// no native type for.
std::optional<std::string_view> npyDescr(DType dtype);

/// The product of `shape`, or an error when a dimension is negative or the
/// product does not fit in int64. The message names the dimension but not
/// the file; callers add that.
absl::StatusOr<int64_t> numElements(const std::vector<int64_t> &shape);

/// numElements(shape) * dtypeByteSize(dtype), overflow-checked the same way.
absl::StatusOr<int64_t> numBytes(DType dtype,
                                 const std::vector<int64_t> &shape);

/// A dense row-major tensor in host memory: `data` holds exactly
/// numBytes(dtype, shape) little-endian bytes.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  absl::StatusOr<int64_t> numElements() const {
    return formats::numElements(shape);
  }

  /// OK when the shape is valid and `data` has exactly the bytes it implies.
  absl::Status validate() const;

  /// A zero-filled tensor (all-false for Bool), or an error for a bad shape.
  static absl::StatusOr<HostTensor> zeros(DType dtype,
                                          std::vector<int64_t> shape);
};

/// The NaN and infinite elements of a float tensor (0 for other dtypes),
/// and in `first` the index of the first of them (-1 when none).
int64_t countNonFinite(const HostTensor &tensor, int64_t *first = nullptr);
/// The same for `bytes` holding whole elements of `dtype`.
int64_t countNonFinite(DType dtype, std::string_view bytes,
                       int64_t *first = nullptr);

bool operator==(const HostTensor &lhs, const HostTensor &rhs);
inline bool operator!=(const HostTensor &lhs, const HostTensor &rhs) {
  return !(lhs == rhs);
}

} // namespace sinter::formats

#endif // SINTER_RUNTIME_FORMATS_HOSTTENSOR_H
