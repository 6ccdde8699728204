//===- SafeTensors.h - read and write .safetensors files ------------------===//
//
// The Hugging Face safetensors format (huggingface/safetensors README and
// safetensors/src/tensor.rs):
//
//   N                 8 bytes, uint64 little-endian: the header length
//   header            N bytes of UTF-8 JSON, an object:
//                       {"__metadata__": {"format": "pt"},
//                        "wte": {"dtype": "F32", "shape": [50257, 768],
//                                "data_offsets": [0, 154389504]}, ...}
//                     possibly padded with trailing spaces
//   data              the tensors' bytes; data_offsets are [begin, end)
//                     relative to the start of this section
//
// Reading checks everything the reference implementation checks: header
// length at most 100,000,000 bytes (MAX_HEADER_SIZE) and inside the file,
// valid JSON, shape products and byte sizes overflow-checked, end - begin
// equal to the byte size, and tensors that tile the data section exactly,
// with no overlap, no hole and no trailing bytes (the reference's rule
// against polyglot files). `__metadata__` must be a string-to-string map or
// null. Dtypes Sinter has no DType for (U32, U64, C64, F8_*) are rejected by
// name.
//
// It is deliberately stricter than the reference (safetensors 0.8.0 accepts
// all of these): duplicate keys are an error (the README forbids them, but
// serde keeps the last one silently), entries may hold only dtype, shape and
// data_offsets, rank is capped at 32, and Bool bytes must be 0 or 1.
//
// Writing lays the tensors out in the order given, writes `__metadata__`
// first (with "format": "pt" added when the caller's metadata has no
// "format", because transformers' from_pretrained refuses files without
// it), pads the header with spaces to a multiple of 8 bytes, and replaces
// the file atomically (temp file, fsync, rename, directory fsync).
// streamSafeTensors writes the same bytes from tensors read a piece at a
// time (a checkpoint out of device buffers), holding one piece at once.
//
// Every error is one line starting with the file name and, where it has one
// place, "byte offset N:".
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_FORMATS_SAFETENSORS_H
#define SINTER_RUNTIME_FORMATS_SAFETENSORS_H

#include "runtime/Formats/FileIO.h"
#include "runtime/Formats/HostTensor.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sinter::formats {

/// The reference's MAX_HEADER_SIZE.
inline constexpr uint64_t kSafeTensorsMaxHeaderSize = 100'000'000;

struct SafeTensorsFile {
  /// Named tensors; on read, in the order their keys appear in the header.
  std::vector<std::pair<std::string, HostTensor>> tensors;
  /// The `__metadata__` map (absent in the file: empty).
  std::map<std::string, std::string> metadata;

  /// The tensor called `name`, or null.
  const HostTensor *find(std::string_view name) const;
};

/// Reads the .safetensors file at `path`. The header is validated against
/// the file size before any tensor buffer is allocated, and each tensor's
/// bytes are read straight into it.
absl::StatusOr<SafeTensorsFile> readSafeTensors(const std::string &path);

/// Parses .safetensors bytes already in memory; errors start with
/// `nameForErrors`.
absl::StatusOr<SafeTensorsFile>
parseSafeTensors(std::string_view bytes, std::string_view nameForErrors);

/// The complete .safetensors encoding of `file`.
absl::StatusOr<std::string> serializeSafeTensors(const SafeTensorsFile &file);

/// Writes `file` to `path`, atomically. Fails without touching `path` when a
/// tensor's data does not match its shape, a name repeats or is
/// "__metadata__", or a name or metadata string is not valid UTF-8.
absl::Status writeSafeTensors(const std::string &path,
                              const SafeTensorsFile &file);

/// A tensor to write whose bytes are read a piece at a time (out of a
/// device buffer, say), so that writing it holds no second copy of it.
struct TensorSource {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// Copies bytes [offset, offset + count) of the tensor to `dst`.
  std::function<absl::Status(uint64_t offset, uint64_t count, void *dst)> read;
};

/// A .safetensors file to write, by source.
struct SafeTensorsSources {
  std::vector<TensorSource> tensors;
  std::map<std::string, std::string> metadata;
};

/// Sources that read `file`'s tensors in place (`file` must outlive them).
SafeTensorsSources sourcesOf(const SafeTensorsFile &file);

/// The pieces streamSafeTensors reads a tensor in: a multiple of every
/// element size, so no element is split between two.
inline constexpr uint64_t kSafeTensorsPieceBytes = uint64_t(4) << 20;

/// Sees each piece of a streamed write before it is written: the tensor,
/// the piece's byte offset in it and its bytes. An error stops the write.
using PieceCheck = std::function<absl::Status(
    const TensorSource &tensor, uint64_t offset, std::string_view piece)>;

/// Writes the .safetensors encoding of `file` to `sink` (the bytes
/// serializeSafeTensors gives for the same tensors), reading each tensor
/// through one buffer of kSafeTensorsPieceBytes, and passes every piece to
/// `check` (when set) before writing it. Errors are those of
/// serializeSafeTensors, then of the reads, the check and the sink.
absl::Status streamSafeTensors(const SafeTensorsSources &file, ByteSink &sink,
                               const PieceCheck &check = {});

} // namespace sinter::formats

#endif // SINTER_RUNTIME_FORMATS_SAFETENSORS_H
