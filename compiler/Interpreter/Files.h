//===- Files.h - the interpreter's tensors in and out of files ---*- C++
//-*-===//
//
// What `--run` (RunFunction.cpp, Runnable.cpp) and `--bisect` (Bisect.cpp)
// share about tensor files: the element types and the errors at a file.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_INTERPRETER_FILES_H
#define SINTER_COMPILER_INTERPRETER_FILES_H

#include "compiler/Interpreter/Tensor.h"
#include "runtime/Formats/HostTensor.h"

#include "absl/status/status.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LogicalResult.h"

#include <optional>
#include <string>

namespace sinter::interp {

/// The file element type of an interpreter element kind.
formats::DType dtypeOfKind(ElementKind kind);
/// The interpreter element kind of a file element type; nullopt for those
/// the interpreter does not hold (u8, i8, ...).
std::optional<ElementKind> kindOfDType(formats::DType dtype);

/// Reports a file error at the file it is about (the formats' messages
/// start with "<path>: ", which is dropped).
mlir::LogicalResult fileError(mlir::MLIRContext *context,
                              const std::string &path,
                              const absl::Status &status);

} // namespace sinter::interp

#endif // SINTER_COMPILER_INTERPRETER_FILES_H
