//===- Passes.h - code generation passes every target shares ---*- C++ -*-===//

#ifndef SINTER_COMPILER_CODEGEN_PASSES_H
#define SINTER_COMPILER_CODEGEN_PASSES_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace sinter::codegen {

/// The module attribute (a string) the driver sets to the data folder the
/// binary reads when given none; sinter-lower-step turns it into the ABI's
/// symbol.
inline constexpr llvm::StringLiteral kDefaultDataAttr = "sinter.default_data";

#define GEN_PASS_DECL
#include "compiler/CodeGen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/CodeGen/Passes.h.inc"

} // namespace sinter::codegen

#endif // SINTER_COMPILER_CODEGEN_PASSES_H
