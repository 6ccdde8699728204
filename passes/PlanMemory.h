//===- PlanMemory.h - buffer places shared by planning and lowering -*- C++
//-*-===//
//
// The attributes sinter-plan-memory writes and code generation reads:
// `sinter.buffers` on ops (one dictionary per result), `sinter.buffer` on
// arguments, each {slab, offset, bytes, category}; slab names are those of
// docs/StepProgram.md.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_PASSES_PLANMEMORY_H
#define SINTER_PASSES_PLANMEMORY_H

#include "passes/Analysis/MemoryPlanner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Types.h"

#include <string>
#include <vector>

namespace sinter::plan {

/// Bytes of one element in memory (i1 takes a byte).
int64_t elementBytes(mlir::Type elementType);
/// Bytes of a ranked tensor type.
int64_t tensorBytes(mlir::Type tensorType);
/// {slab, offset, bytes, category}.
mlir::DictionaryAttr bufferAttr(mlir::MLIRContext *ctx, llvm::StringRef slab,
                                int64_t offset, int64_t bytes,
                                llvm::StringRef category);

/// What sinter-plan-memory decided for one function.
struct FunctionPlan {
  /// The arena's buffers as given to the planner, and the value each one
  /// holds (a kernel or matmul result, or a reshape: a view).
  std::vector<analysis::Buffer> buffers;
  std::vector<mlir::Value> values;
  analysis::MemoryPlan memory;
  /// arena, params, opt_state, io, constants (the slab order of
  /// docs/StepProgram.md).
  int64_t slabBytes[5] = {0, 0, 0, 0, 0};
  /// Steps (kernels and matmuls) in the schedule.
  int64_t numSteps = 0;
  int64_t inPlaceUpdates = 0;
};

/// Plans every tensor of `fn` (fused already), writes the attributes the
/// pass writes (`sinter.buffers`, `sinter.buffer`, `sinter.step`,
/// `sinter.memory`) and returns the plan; fails with a diagnostic on `fn`.
/// sinter-recompute calls it on copies of the step to measure candidate
/// schedules with the planner the binary will use.
mlir::FailureOr<FunctionPlan> planFunction(mlir::func::FuncOp fn,
                                           bool noReuse = false);

/// The memory report of the dumps (NN-memory-plan.txt): slabs, arena,
/// lower bound, peaks by category, the `largestCount` largest buffers.
std::string formatFunctionPlan(mlir::func::FuncOp fn, const FunctionPlan &plan,
                               int largestCount = 20);

} // namespace sinter::plan

#endif // SINTER_PASSES_PLANMEMORY_H
