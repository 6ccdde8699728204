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
//   addEvalProgram:   a second lowerStep module (the evaluation step, its
//                     kernels under another symbol prefix) merged into the
//                     first;
//   emitObject:       LLVM IR optimized at O2 for the host CPU, plus the
//                     symbols of runtime/Abi/KernelAbi.h
//                     (`sinter_program_json`, `sinter_kernels`,
//                     `sinter_eval_program_json`, `sinter_eval_kernels`,
//                     `sinter_default_data`), written as an object file;
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

/// Attributes of a lowered module (strings): the step program (JSON,
/// docs/StepProgram.md), the evaluation step program (optional), and the
/// folder the binary reads data from when given none (optional).
inline constexpr llvm::StringLiteral kProgramAttr = "sinter.program";
inline constexpr llvm::StringLiteral kEvalProgramAttr = "sinter.eval_program";
inline constexpr llvm::StringLiteral kDefaultDataAttr = "sinter.default_data";

/// The kernel symbol prefix of the evaluation program.
inline constexpr llvm::StringLiteral kEvalSymbolPrefix = "sinter_eval_";

/// Registers the dialects and translations the lowering needs.
void registerCpuCodeGenDialects(mlir::DialectRegistry &registry);

/// Builds the kernels and the step program of `entry` in a planned module.
/// Kernel functions are named `<symbolPrefix>kN`.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
lowerStep(mlir::ModuleOp planned, llvm::StringRef entry,
          llvm::StringRef symbolPrefix = "sinter_");

/// Moves the functions of `eval` (a lowerStep module whose kernels have
/// another symbol prefix) into `kernels` and records its step program as
/// the evaluation program (kEvalProgramAttr). Fails on a symbol clash.
mlir::LogicalResult addEvalProgram(mlir::ModuleOp kernels,
                                   mlir::ModuleOp eval);

/// Lowers a lowerStep module to the LLVM dialect, in place.
mlir::LogicalResult lowerToLLVM(mlir::ModuleOp kernels);

/// Writes the object file of an LLVM-dialect kernels module.
mlir::LogicalResult emitObject(mlir::ModuleOp kernels, llvm::StringRef path);

/// Links `object` with the runtime into the executable `output`.
mlir::LogicalResult linkExecutable(mlir::Location loc, llvm::StringRef object,
                                   llvm::StringRef output);

} // namespace sinter::codegen

#endif // SINTER_COMPILER_CODEGEN_CPUCODEGEN_H
