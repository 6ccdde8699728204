//===- ObjectEmitter.h - an LLVM-dialect module as a host object -*- C++ -*-===//
//
// The CPU target's object file: the module translated to LLVM IR, optimized
// at O2 for the host CPU (its name and features), and compiled to machine
// code. See ObjectEmitter.cpp for how the work is split over threads.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_CODEGEN_CPU_OBJECTEMITTER_H
#define SINTER_COMPILER_CODEGEN_CPU_OBJECTEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/Timing.h"

namespace sinter::codegen {

/// Writes the object file of `module` (LLVM dialect only) to `path`.
mlir::LogicalResult emitHostObject(mlir::ModuleOp module, llvm::StringRef path,
                                   mlir::TimingScope &timing);

} // namespace sinter::codegen

#endif // SINTER_COMPILER_CODEGEN_CPU_OBJECTEMITTER_H
