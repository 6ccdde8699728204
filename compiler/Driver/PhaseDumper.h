//===- PhaseDumper.h - sinterc --dump-dir ----------------------*- C++ -*-===//
//
// Writes each phase's IR to a numbered file of the dump directory, the side
// files passes and the driver produce (the fusion decisions, the memory
// plan, the step programs, ...) numbered in the order they are made, and an
// index.txt saying what each file is. Without a directory it writes
// nothing and every call succeeds.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_DRIVER_PHASEDUMPER_H
#define SINTER_COMPILER_DRIVER_PHASEDUMPER_H

#include "compiler/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace sinter {

class PhaseDumper {
public:
  PhaseDumper(mlir::MLIRContext &context, llvm::StringRef dir)
      : context(context), dir(dir.str()) {}

  /// Creates the directory.
  mlir::LogicalResult prepare();
  /// NN-<phase>.mlir: the module with locations, nothing elided.
  mlir::LogicalResult dump(mlir::ModuleOp module, Phase phase,
                           llvm::StringRef what);
  /// NN-fusion.txt: every kernel with its ops and why each is there, and
  /// every op left outside a kernel with the reason.
  mlir::LogicalResult writeFusionReport(mlir::ModuleOp module);
  /// The path of a numbered side file (e.g. the memory report) written
  /// next to the phase that produces it, now listed in the index; empty
  /// without a dump directory.
  std::string sideFile(llvm::StringRef name, llvm::StringRef what);
  /// Writes a numbered side file with `text`.
  mlir::LogicalResult writeSideFile(llvm::StringRef name, llvm::StringRef what,
                                    llvm::StringRef text);

private:
  std::string entryPath(llvm::StringRef name, llvm::StringRef what);
  mlir::LogicalResult writeIndex();
  mlir::LogicalResult
  writeFile(llvm::StringRef path,
            llvm::function_ref<void(llvm::raw_ostream &)> write);

  mlir::MLIRContext &context;
  std::string dir;
  std::string index;
  int count = 0;
};

} // namespace sinter

#endif // SINTER_COMPILER_DRIVER_PHASEDUMPER_H
