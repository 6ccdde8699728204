//===- Diagnostics.h - one line per diagnostic ------------------*- C++ -*-===//
//
// Users read our errors in a terminal and editors jump to them, so each
// diagnostic is exactly one line, `model.pbtxt:12:3: error: message`, with
// the location taken from the innermost file position of the op's location
// (named and fused locations wrap it).
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_SUPPORT_DIAGNOSTICS_H
#define SINTER_COMPILER_SUPPORT_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

namespace sinter {

/// The innermost file:line:col of `loc`, if there is one.
std::optional<mlir::FileLineColLoc> findFileLoc(mlir::Location loc);

/// "file:line:col" (or "file" when the line is 0); empty if unknown.
std::string formatLocation(mlir::Location loc);

/// Prints every diagnostic of the context as one line on `os` while alive.
class OneLineDiagnostics {
public:
  OneLineDiagnostics(mlir::MLIRContext &context, llvm::raw_ostream &os);
  ~OneLineDiagnostics();
  unsigned errors() const { return errorCount; }

private:
  mlir::MLIRContext &context;
  mlir::DiagnosticEngine::HandlerID id;
  unsigned errorCount = 0;
};

} // namespace sinter

#endif // SINTER_COMPILER_SUPPORT_DIAGNOSTICS_H
