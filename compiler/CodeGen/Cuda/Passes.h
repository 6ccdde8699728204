//===- Passes.h - the CUDA target's code generation passes -----*- C++ -*-===//

#ifndef SINTER_COMPILER_CODEGEN_CUDA_PASSES_H
#define SINTER_COMPILER_CODEGEN_CUDA_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace sinter::codegen {

/// A kernel's `memref.alloca` marked so is the block's shared memory: the
/// outlining makes it a workgroup attribution of the gpu.func, the host
/// emulation (one thread) an ordinary alloca.
inline constexpr llvm::StringLiteral kWorkgroupAttr = "sched.cuda_workgroup";

/// On a kernel function sinter-merge-cuda-launches made: its members'
/// grids, in the order its blocks run them.
inline constexpr llvm::StringLiteral kMembersAttr = "sched.cuda_members";

#define GEN_PASS_DECL
#include "compiler/CodeGen/Cuda/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/CodeGen/Cuda/Passes.h.inc"

} // namespace sinter::codegen

#endif // SINTER_COMPILER_CODEGEN_CUDA_PASSES_H
