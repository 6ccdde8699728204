//===- StepPlan.h - where every tensor of a fused step lives ----*- C++ -*-===//
//
// The memory plan of one fused function, as plain data: the step each op
// runs at, the slab and offset of every value, and the planner's result
// (passes/Analysis/MemoryPlanner.h). sinter-assign-buffers builds the
// scheduled program from it; sinter-recompute plans copies of the step with
// it to measure what a recompute choice saves, so both see the plan the
// binary will use. Nothing here writes to the IR.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_PASSES_STEPPLAN_H
#define SINTER_PASSES_STEPPLAN_H

#include "passes/Analysis/MemoryPlanner.h"
#include "abi/Abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace sinter::plan {

/// Bytes of a ranked tensor type (the ABI's element sizes).
int64_t tensorBytes(mlir::Type tensorType);

/// Where a value lives.
struct Place {
  abi::SlabKind slab = abi::Slab::arena;
  int64_t offset = 0;
  abi::CategoryKind category = abi::Category::activations;
  /// The value whose bytes this one shares on purpose (a reshape of it, or
  /// the state argument an update writes in place); null for an owner.
  mlir::Value aliasOf;
  /// The bucket (FunctionPlan::buckets) whose bytes hold this value: a
  /// gradient written in place for its all-reduce, or the all-reduce's
  /// result. -1 for every other value.
  int64_t bucket = -1;
};

/// One gradient bucket: the bytes one all-reduce works on, in the arena.
struct BucketPlace {
  mlir::Operation *op = nullptr; // the sgraph.all_reduce
  int64_t offset = 0;
  int64_t bytes = 0;             // slots padded to the alignment
  /// Each operand's offset from the bucket's start.
  std::vector<int64_t> slotOffsets;
  /// Operand i is written into its slot by the op that makes it (true), or
  /// copied in right before the collective (an argument, a value with other
  /// readers, an operand of another bucket).
  std::vector<bool> inPlace;
};

/// What the plan decided for one function.
struct FunctionPlan {
  /// The arena's buffers as given to the planner, and the value each one
  /// holds (a kernel or matmul result, or a reshape: a view).
  std::vector<analysis::Buffer> buffers;
  std::vector<mlir::Value> values;
  analysis::MemoryPlan memory;
  /// Bytes of each slab, by abi::SlabKind.
  std::array<int64_t, abi::kNumSlabs> slabBytes{};
  /// The step of every op that runs (kernels and matmuls), in op order.
  llvm::DenseMap<mlir::Operation *, int64_t> stepOf;
  int64_t numSteps = 0;
  /// Every value of the function: arguments, kernel and matmul results,
  /// reshapes and the constants read outside kernels.
  llvm::DenseMap<mlir::Value, Place> places;
  /// The all-reduces' buckets, in op order.
  std::vector<BucketPlace> buckets;
  /// Each matmul's workspace (planFunction's `matmulWorkspaceBytes`, 0:
  /// none): its arena offset, live at the matmul's step only.
  int64_t workspaceBytes = 0;
  llvm::DenseMap<mlir::Operation *, int64_t> workspaceOffsets;
  int64_t inPlaceUpdates = 0;
};

/// Plans every tensor of `fn` (fused already): arguments in their slabs in
/// argument order, constants read outside kernels in the constants slab,
/// kernel and matmul results in the arena by liveness (StepPlan.cpp says
/// how); with `matmulWorkspaceBytes`, each matmul also gets that many
/// bytes of scratch in the arena for its step alone (the library's
/// workspace); fails with a diagnostic on `fn`.
mlir::FailureOr<FunctionPlan> planFunction(mlir::func::FuncOp fn,
                                           bool noReuse = false,
                                           int64_t matmulWorkspaceBytes = 0);

/// The memory report of the dumps (NN-memory-plan.txt): slabs, arena,
/// lower bound, peaks by category, the `largestCount` largest buffers.
std::string formatFunctionPlan(mlir::func::FuncOp fn, const FunctionPlan &plan,
                               int largestCount = 20);

} // namespace sinter::plan

#endif // SINTER_PASSES_STEPPLAN_H
