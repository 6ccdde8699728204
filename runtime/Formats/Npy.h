//===- Npy.h - read and write NumPy .npy files ----------------------------===//
//
// The .npy format (NEP 1; numpy/lib/format.py):
//
//   "\x93NUMPY" major minor            6 + 2 bytes
//   header length                      uint16 LE (1.0) or uint32 LE (2.0, 3.0)
//   header                             a Python dict literal, e.g.
//       {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//                                      space-padded and ended by '\n'
//   data                               raw elements, C order
//
// Reading accepts versions 1.0, 2.0 and 3.0. The header is parsed by a tiny
// strict parser for exactly that dict shape (it is never evaluated) and must
// name exactly the keys descr, fortran_order and shape. Rejected, each with
// its own message: bad magic or version, an oversized header, Fortran
// order, big-endian or non-numeric dtypes (objects, strings, structured),
// rank above 32, shapes whose byte size overflows, and files whose data is
// shorter or longer than the shape says. Bool bytes must be 0 or 1.
//
// Writing produces version 1.0 laid out byte for byte as numpy's np.save
// (keys sorted, the growth-axis spare spaces, header padded so the data
// starts on a 64-byte boundary), through the same atomic temp-file + rename
// as checkpoints. BF16 cannot be written: numpy has no bfloat16, and a '<V2'
// or '<u2' descr would load as something that is not a number.
//
// Every error is one line starting with the file name, and where it has one
// place, "byte offset N:".
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_FORMATS_NPY_H
#define SINTER_RUNTIME_FORMATS_NPY_H

#include "runtime/Formats/HostTensor.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <string>
#include <string_view>

namespace sinter::formats {

/// Reads the .npy file at `path`. Sizes are checked against the file size
/// before the data buffer is allocated.
absl::StatusOr<HostTensor> readNpy(const std::string &path);

/// Parses .npy bytes already in memory; errors start with `nameForErrors`.
absl::StatusOr<HostTensor> parseNpy(std::string_view bytes,
                                    std::string_view nameForErrors);

/// The .npy v1.0 encoding of `tensor` (header + data).
absl::StatusOr<std::string> serializeNpy(const HostTensor &tensor);

/// Writes `tensor` to `path` as .npy v1.0, atomically.
absl::Status writeNpy(const std::string &path, const HostTensor &tensor);

} // namespace sinter::formats

#endif // SINTER_RUNTIME_FORMATS_NPY_H
