//===- RecomputeStep.h - The step as sinter-recompute sees it ---*- C++ -*-===//
//
// What sinter-recompute (passes/Recompute.cpp) knows about the fused
// training step: stable ids of its top-level ops (kernels, matmul calls,
// reshapes), which of them are the forward pass and which forward values
// the backward pass reads, what each op costs, and a real memory plan of a
// copy of the step (Trial) with, per arena buffer, the step value it holds
// and when the forward and the backward pass read it. Not a public header.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_PASSES_RECOMPUTESTEP_H
#define SINTER_PASSES_RECOMPUTESTEP_H

#include "dialects/Graph/GraphOps.h"
#include "passes/Analysis/MemoryPlanner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <string>
#include <vector>

namespace sinter::recompute {

/// Numbers every top-level op of the step while the pass runs, so that
/// copies of the function map back to it.
inline constexpr llvm::StringLiteral kIdAttr = "sinter.recompute_id";

//===----------------------------------------------------------------------===//
// Describing ops and costs
//===----------------------------------------------------------------------===//

/// The layer instance an op's location names ("transformer.h.3.mlp"), or "".
std::string layerOf(mlir::Operation *op);
/// `sgraph.gelu @ 'transformer.h.3.mlp'`.
std::string describe(mlir::Operation *op);
/// `k42: sgraph.gelu @ '...'` for a kernel's result; describe() otherwise.
std::string describeValue(mlir::Value v);
/// "1x1024x3072xf32".
std::string typeText(mlir::Type type);
/// "1.23 GFLOP".
std::string flopsText(double flops);
/// FLOPs of an op, or of every op in a kernel: 2MNK per matmul, one per
/// element for arithmetic, more for division, roots and transcendental
/// functions (polynomial approximations), nothing for views.
double opFlops(mlir::Operation *op);
int64_t bytesOf(mlir::Value v);
bool isView(mlir::Operation *op);
/// What can be cloned: kernels, matmul calls and reshapes (not ops with
/// effects, such as collectives).
bool isRecomputable(mlir::Operation *op);

//===----------------------------------------------------------------------===//
// The step
//===----------------------------------------------------------------------===//

/// A result of a top-level op by the op's id: stable across copies.
using ValueRef = uint64_t;
ValueRef refOf(int64_t id, unsigned result);
int64_t idOf(mlir::Operation *op);
/// A copy sinter-recompute made (`sinter.recomputed`).
bool isCopy(mlir::Operation *op);

struct StepGraph {
  mlir::func::FuncOp fn;
  /// Ops the loss and the metrics depend on: the forward pass.
  llvm::DenseSet<mlir::Operation *> forward;
  /// Forward values some backward op reads (before any recomputation).
  llvm::DenseSet<mlir::Value> residual;
  llvm::DenseMap<mlir::Operation *, int64_t> position;
  std::vector<mlir::Operation *> byId;

  /// Every op but the forward ones and the return.
  bool isBackwardUser(mlir::Operation *user) const {
    return !forward.contains(user) && !mlir::isa<mlir::func::ReturnOp>(user);
  }
  mlir::Value resolve(ValueRef ref) const;
  ValueRef ref(mlir::Value v) const;
  /// Defined by an original op of the step (with an id, not a copy).
  bool hasId(mlir::Value v) const;
};

/// Analyses `fn`, whose ops carry ids. The forward results are those not
/// named lr, grad_norm, grad.* or after a parameter or optimizer state.
StepGraph analyzeStep(mlir::func::FuncOp fn);

//===----------------------------------------------------------------------===//
// Measuring
//===----------------------------------------------------------------------===//

/// An arena buffer of a measured plan.
struct BufferInfo {
  /// The id of the forward op whose result the buffer holds (not a copy),
  /// or -1; `ref` names the result.
  int64_t origin = -1;
  ValueRef ref = 0;
  /// Live steps; for a root, widened over its views.
  int64_t first = 0, last = 0;
  /// The last step of a forward reader (at least the writer's) and the first
  /// of a backward one (-1 if none).
  int64_t lastForward = -1, firstBackward = -1;
  bool returned = false;
  bool isView = false;
  std::string what;
};

/// The real memory plan of a copy of the step.
struct Trial {
  bool ok = false;
  analysis::MemoryPlan memory;
  std::vector<analysis::Buffer> buffers;
  std::vector<BufferInfo> info;
  int64_t numSteps = 0;
  /// What runs at each step ("k12: sgraph.exp @ 'loss'").
  std::vector<std::string> stepText;
  llvm::DenseMap<ValueRef, int64_t> bufferOf;
  /// Per step, the highest byte any live buffer occupies in the plan: the
  /// arena is its maximum; above the live bytes where placement left holes.
  std::vector<int64_t> highWater;
  /// The planner's report (formatFunctionPlan).
  std::string report;
  /// The arena slab as sinter-plan-memory sizes it (64-byte aligned).
  int64_t arena() const { return (memory.arenaBytes + 63) / 64 * 64; }
};

/// Plans a copy of `fn` (fused, ops with ids) with the planner the binary
/// uses; `forwardIds[id]` says whether op `id` is a forward op.
Trial measure(mlir::func::FuncOp fn, const std::vector<bool> &forwardIds);

/// "at step 334 (k251: sgraph.sub @ 'loss'): activations 1.20 GiB, ...;
/// largest live: 196.31 MiB k248: sgraph.exp @ 'loss' [332, 338], ..."
std::string describePeak(const Trial &t, int largest);

} // namespace sinter::recompute

#endif // SINTER_PASSES_RECOMPUTESTEP_H
