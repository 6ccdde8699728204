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

namespace llvm {
class Module;
} // namespace llvm

namespace sinter::codegen {

/// Asks LLVM's loop vectorizer for 16 lanes in each innermost loop of
/// `module` that rounds f32 to bf16 (`fptrunc` to `bfloat`, native on
/// AVX-512 BF16 hosts; elsewhere ConvertCpuToLLVM expands it to integer
/// code) and calls nothing but intrinsics. LLVM 19's cost model prices the
/// vector `fptrunc` to `bfloat` so high that it vectorizes such loops 4
/// wide (the softmax's normalization, which writes f32 and bf16; casts; the
/// softmax's gradient), where one `vcvtneps2bf16` converts 16. A hint
/// (`llvm.loop.vectorize.width`), not a forced vectorization: a loop LLVM
/// cannot vectorize stays scalar without a warning. A loop with at least 32
/// f32 instructions an iteration (GELU's gradient: an exp, a division and
/// two polynomials in one dependent chain, longer than the out-of-order
/// window overlaps) is also asked to interleave 4 vectors
/// (`llvm.loop.interleave.count`), which LLVM declines by itself for the
/// register pressure: char-GPT bf16's GELU backward kernels 8.8 -> 7.0 ms a
/// step; shorter loops gained nothing (the softmax lost at 8). Run on
/// AVX-512 hosts, before O2 (docs/CodeGen.md, "Binary").
void hintBf16StoreLoops(llvm::Module &module);

/// Writes the object file of `module` (LLVM dialect only) to `path`.
mlir::LogicalResult emitHostObject(mlir::ModuleOp module, llvm::StringRef path,
                                   mlir::TimingScope &timing);

} // namespace sinter::codegen

#endif // SINTER_COMPILER_CODEGEN_CPU_OBJECTEMITTER_H
