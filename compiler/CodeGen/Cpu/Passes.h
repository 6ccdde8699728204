//===- Passes.h - the CPU target's code generation passes ------*- C++ -*-===//

#ifndef SINTER_COMPILER_CODEGEN_CPU_PASSES_H
#define SINTER_COMPILER_CODEGEN_CPU_PASSES_H

#include "passes/Analysis/KernelChunks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace sinter::codegen {

#define GEN_PASS_DECL
#include "compiler/CodeGen/Cpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/CodeGen/Cpu/Passes.h.inc"

} // namespace sinter::codegen

#endif // SINTER_COMPILER_CODEGEN_CPU_PASSES_H
