//===- Recompute.h - recompute attributes and reports ----------*- C++ -*-===//
//
// The attributes sinter-recompute reads and writes. What it did is printed
// by `sinterc --memory-report` (passes/MemoryReport.h).
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_PASSES_RECOMPUTE_H
#define SINTER_PASSES_RECOMPUTE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace sinter {

/// On the module (set by the importer): the layer instances whose
/// activations are recomputed from their inputs, e.g. ["transformer.h.3"]
/// (a layer with `recompute: true`; every instance of a repeated one). An
/// instance's ops are the forward ops located in it: `loc("transformer.h.3")`
/// or a sub-layer such as `loc("transformer.h.3.attn")`. Locations, unlike
/// attributes, do not stop CSE from merging ops, so the step is the same
/// as without recompute up to this pass.
inline constexpr llvm::StringLiteral kRecomputeLayersAttr =
    "sinter.recompute_layers";
/// On a kernel (or matmul, or reshape) sinter-recompute cloned into the
/// backward pass: "r<k>: <why>", the same for every copy of one
/// recomputation; a cloned region is renamed "<kernel>_r<k>".
inline constexpr llvm::StringLiteral kRecomputedAttr = "sinter.recomputed";
/// On the entry function (and then its scheduled program): what
/// sinter-recompute did (budget, arena before and after, values and kernels
/// recomputed, their FLOPs).
inline constexpr llvm::StringLiteral kRecomputePlanAttr =
    "sinter.recompute_plan";

/// Whether sinter-recompute has work on `entry` of `module`: layers to
/// recompute (`sinter.recompute_layers`), a budget given (`budget`, not
/// "none"), or a budget in the module's training section. The driver names a
/// dump file for the recompute report only then.
bool recomputeRequested(mlir::ModuleOp module, llvm::StringRef entry,
                        llvm::StringRef budget);

} // namespace sinter

#endif // SINTER_PASSES_RECOMPUTE_H
