//===- CpuCodeGen.h - the scheduled step to kernels, object, binary -*- C++
//-*-===//
//
// The last three steps of sinterc on the CPU:
//
//   lowerStep:        scheduled module -> a new module holding one kernel
//                     function per sgraph.fusion (linalg on memref views of
//                     the slabs) and the step program as its `sinter.program`
//                     attribute (JSON, docs/StepProgram.md);
//   lowerToLLVM:      that module to the LLVM dialect (loops, polynomial
//                     math, memrefs, ...);
//   emitObject:       LLVM IR optimized at O3 for the host CPU, plus the
//                     `sinter_program_json` and `sinter_kernels` symbols of
//                     runtime/Abi/KernelAbi.h, written as an object file;
//   linkExecutable:   the object, the runtime and its main linked by the
//                     system C++ compiler.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_CODEGEN_CPUCODEGEN_H
#define SINTER_COMPILER_CODEGEN_CPUCODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace sinter::codegen {

/// Registers the dialects and translations the lowering needs.
void registerCpuCodeGenDialects(mlir::DialectRegistry &registry);

/// Builds the kernels and the step program of `entry` in a planned module.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
lowerStep(mlir::ModuleOp planned, llvm::StringRef entry);

/// Lowers a lowerStep module to the LLVM dialect, in place.
mlir::LogicalResult lowerToLLVM(mlir::ModuleOp kernels);

/// Writes the object file of an LLVM-dialect kernels module.
mlir::LogicalResult emitObject(mlir::ModuleOp kernels, llvm::StringRef path);

/// Links `object` with the runtime into the executable `output`.
mlir::LogicalResult linkExecutable(mlir::Location loc, llvm::StringRef object,
                                   llvm::StringRef output);

} // namespace sinter::codegen

#endif // SINTER_COMPILER_CODEGEN_CPUCODEGEN_H
