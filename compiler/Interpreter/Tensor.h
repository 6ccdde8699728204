//===- Tensor.h - host tensors of the reference interpreter ----*- C++ -*-===//
//
// The interpreter's values: a shape, an element kind, and the elements in
// row-major order. Float elements are held as doubles that are always
// exactly representable in the element kind (every op rounds what it
// computes); integer and boolean elements as int64.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_INTERPRETER_TENSOR_H
#define SINTER_COMPILER_INTERPRETER_TENSOR_H

#include "abi/HalfFloat.h"

#include "mlir/IR/Types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sinter::interp {

/// one-definition: the interpreter's own storage of MLIR element types;
/// its tensors never cross into a step program.
enum class ElementKind { F16, BF16, F32, F64, I1, I32, I64 };

bool isFloat(ElementKind kind);
std::string kindName(ElementKind kind);
/// The kind of an MLIR element type; nullopt for unsupported types.
std::optional<ElementKind> kindOf(mlir::Type elementType);

/// Rounds `value` to the nearest value of a float kind, ties to even. bf16
/// and f16 are rounded from the f32 rounding of the value, as hardware that
/// computes in f32 and converts does.
double roundTo(ElementKind kind, double value);
/// Wraps an integer to the kind's width (two's complement); i1 is 0 or 1.
int64_t wrapTo(ElementKind kind, int64_t value);

/// f32 <-> bf16 / f16 bit patterns (round to nearest even, NaN kept): the
/// runtime's, so interpreter and training binary round alike.
using half::bf16BitsToFloat;
using half::f16BitsToFloat;
using half::floatToBf16Bits;
using half::floatToF16Bits;

struct Tensor {
  ElementKind kind = ElementKind::F32;
  std::vector<int64_t> shape;
  /// Elements of float kinds.
  std::vector<double> f;
  /// Elements of integer kinds and i1.
  std::vector<int64_t> i;

  Tensor() = default;
  Tensor(ElementKind kind, std::vector<int64_t> shape);

  int64_t numElements() const;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  bool isFloat() const { return interp::isFloat(kind); }
  /// Element `k` as a double (integers converted).
  double get(int64_t k) const {
    return isFloat() ? f[k] : static_cast<double>(i[k]);
  }
  /// "f32[2, 3]"
  std::string describe() const;
};

/// Bytes of one element in memory (an i1 takes a byte).
int64_t byteWidth(ElementKind kind);
/// The tensor whose elements are the bytes at `data`: row-major,
/// little-endian, as files and the runtime's slabs hold them.
Tensor tensorFromBytes(ElementKind kind, std::vector<int64_t> shape,
                       const uint8_t *data);
/// Writes `t`'s elements to `data` (numElements x byteWidth bytes).
void tensorToBytes(const Tensor &t, uint8_t *data);

/// Row-major strides of a shape.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape);

} // namespace sinter::interp

#endif // SINTER_COMPILER_INTERPRETER_TENSOR_H
