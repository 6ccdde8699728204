//===- Pipelines.h - Sinter's phases and their pipelines --------*- C++ -*-===//
//
// The compiler runs in named phases (docs/Architecture.md); each ends in a
// verifier. `sinterc --compile-to=<phase>` stops after one; `--dump-dir`
// writes the IR at the end of each.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_PIPELINES_PIPELINES_H
#define SINTER_COMPILER_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace sinter {

enum class Phase { Import, Training, Optimized, Scheduled, Lowered, Binary };

llvm::StringRef phaseName(Phase phase);
/// Parses a phase name; "sgraph" is accepted for "import".
std::optional<Phase> parsePhase(llvm::StringRef name);
/// The comma-separated list of phase names, for help and errors.
std::string phaseNames();
/// The last phase this version of the compiler can produce.
constexpr Phase kLastImplementedPhase = Phase::Binary;

struct TrainingPipelineOptions {
  /// Build @forward_grad (loss, metrics and every gradient) instead of
  /// @train_step.
  bool gradientsOnly = false;
  /// Also build @eval_step (@forward without dropout; the binary's
  /// evaluation program). Ignored with gradientsOnly.
  bool evalStep = false;
  /// Give @train_step an `lr` argument (kind hyper, default the model's
  /// lr) that sets the schedule's peak learning rate at run time.
  bool runtimeLr = false;
};

/// Import -> Training: builds @train_step (and, when asked, @eval_step)
/// from @forward, or @forward_grad.
void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const TrainingPipelineOptions &options = {});

struct OptimizedPipelineOptions {
  /// The function sinter-recompute works on.
  std::string entry = "train_step";
  /// sinter-recompute's budget: bytes or a fraction (docs/Recompute.md);
  /// "none" ignores the model's; empty: the model's, if any.
  std::string memoryBudget;
  /// Where sinter-recompute writes its report (may be empty).
  std::string recomputeReport;
};

/// Training -> Optimized: composite ops decomposed, cleaned up, grouped into
/// kernel regions, and kernels recomputed in the backward pass where layers
/// ask for it or the memory budget needs it.
void buildOptimizedPipeline(mlir::OpPassManager &pm,
                            const OptimizedPipelineOptions &options = {});

/// Optimized -> Scheduled: every tensor of `entry` gets a slab and offset;
/// the plan is verified. `report` (may be empty) receives the memory report.
void buildScheduledPipeline(mlir::OpPassManager &pm, llvm::StringRef entry,
                            llvm::StringRef report, bool memoryReuse = true);

/// Registers the pipelines by name for sinter-opt
/// (--sinter-training-pipeline, with options eval-step and runtime-lr).
void registerSinterPipelines();

} // namespace sinter

#endif // SINTER_COMPILER_PIPELINES_PIPELINES_H
