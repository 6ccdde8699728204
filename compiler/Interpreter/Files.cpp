//===- Files.cpp - the interpreter's tensors in and out of files ---------===//

#include "compiler/Interpreter/Files.h"

#include "runtime/Formats/AbslCompat.h"

#include "mlir/IR/Diagnostics.h"

#include <utility>

using namespace mlir;
using namespace sinter::interp;
using sinter::formats::DType;

namespace {
/// Each interpreter element kind with the file element type that holds it.
constexpr std::pair<ElementKind, DType> kKinds[] = {
    {ElementKind::F64, DType::F64}, {ElementKind::F32, DType::F32},
    {ElementKind::F16, DType::F16}, {ElementKind::BF16, DType::BF16},
    {ElementKind::I64, DType::I64}, {ElementKind::I32, DType::I32},
    {ElementKind::I1, DType::Bool},
};
} // namespace

DType sinter::interp::dtypeOfKind(ElementKind kind) {
  for (auto [k, dtype] : kKinds)
    if (k == kind)
      return dtype;
  return DType::F32;
}

std::optional<ElementKind> sinter::interp::kindOfDType(DType dtype) {
  for (auto [kind, d] : kKinds)
    if (d == dtype)
      return kind;
  return std::nullopt;
}

LogicalResult sinter::interp::fileError(MLIRContext *context,
                                        const std::string &path,
                                        const absl::Status &status) {
  std::string_view message = sinter::formats::toStd(status.message());
  if (message.substr(0, path.size() + 2) == path + ": ")
    message.remove_prefix(path.size() + 2);
  return emitError(FileLineColLoc::get(context, path, 0, 0)) << message;
}
