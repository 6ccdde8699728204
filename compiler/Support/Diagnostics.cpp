//===- Diagnostics.cpp - one line per diagnostic -------------------------===//

#include "compiler/Support/Diagnostics.h"

#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;

std::optional<FileLineColLoc> sinter::findFileLoc(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return file;
  if (auto name = dyn_cast<NameLoc>(loc))
    return findFileLoc(name.getChildLoc());
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return findFileLoc(callSite.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto file = findFileLoc(inner))
        return file;
  return std::nullopt;
}

std::string sinter::formatLocation(Location loc) {
  std::optional<FileLineColLoc> file = findFileLoc(loc);
  if (!file)
    return "";
  std::string text = file->getFilename().str();
  if (file->getLine() > 0) {
    text += ":" + std::to_string(file->getLine());
    if (file->getColumn() > 0)
      text += ":" + std::to_string(file->getColumn());
  }
  return text;
}

sinter::OneLineDiagnostics::OneLineDiagnostics(MLIRContext &context,
                                               llvm::raw_ostream &os)
    : context(context) {
  // The op is not printed under the message: one line per diagnostic.
  context.printOpOnDiagnostic(false);
  id = context.getDiagEngine().registerHandler([this, &os](Diagnostic &diag) {
    std::string where = formatLocation(diag.getLocation());
    if (!where.empty())
      os << where << ": ";
    switch (diag.getSeverity()) {
    case DiagnosticSeverity::Error:
      ++errorCount;
      os << "error: ";
      break;
    case DiagnosticSeverity::Warning:
      os << "warning: ";
      break;
    case DiagnosticSeverity::Note:
      os << "note: ";
      break;
    case DiagnosticSeverity::Remark:
      os << "remark: ";
      break;
    }
    std::string message = diag.str();
    // Ops the importer builds are named after their layer instance
    // ("transformer.h.3.attn"): say which, since a repeated layer shares one
    // position in the file.
    if (auto name = dyn_cast<NameLoc>(diag.getLocation()))
      message = "in '" + name.getName().str() + "': " + message;
    // Messages are single lines; keep it so even when a library's is not.
    std::replace(message.begin(), message.end(), '\n', ' ');
    os << message << "\n";
    os.flush();
    return success();
  });
}

sinter::OneLineDiagnostics::~OneLineDiagnostics() {
  context.getDiagEngine().eraseHandler(id);
}
