//===- Pipelines.h - Sinter's phases and their pipelines --------*- C++ -*-===//
//
// The compiler runs in named phases (docs/Architecture.md); each pipeline
// takes the module from one phase to the next and ends in the pass that
// checks the next phase's contract. `sinterc --compile-to=<phase>` stops
// after one; `--dump-dir` writes the IR at the end of each; `sinter-opt`
// runs each by name (registerSinterPipelines).
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_PIPELINES_PIPELINES_H
#define SINTER_COMPILER_PIPELINES_PIPELINES_H

#include "compiler/CodeGen/Target.h"
#include "abi/Abi.h"

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
  /// Under mixed precision, a linear layer followed by a tanh GELU rounds
  /// after the GELU, as cuBLASLt's GELU epilogues do (the target's matmul
  /// epilogues include gelu_tanh and gelu_aux; sinter-mixed-precision's
  /// gelu-epilogues).
  bool geluEpilogues = false;
};

/// Import -> Training: builds @train_step (and, when asked, @eval_step)
/// from @forward, or @forward_grad.
void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const TrainingPipelineOptions &options = {});

struct OptimizedPipelineOptions {
  /// The function sinter-recompute works on and the phase's contract is
  /// checked on.
  std::string entry = "train_step";
  /// sinter-recompute's budget: bytes or a fraction (docs/Recompute.md);
  /// "none" ignores the model's; empty: the model's, if any.
  std::string memoryBudget;
  /// Where sinter-recompute writes its report (may be empty).
  std::string recomputeReport;
  /// sinter-bucket-gradients' bucket size (0: one all-reduce per gradient).
  int64_t bucketBytes = 25 << 20;
  /// Whose kernel limits, matmul epilogues and cache sizes fusion and
  /// scheduling use.
  const codegen::Target *target = &codegen::defaultTarget();
  /// The matmul epilogues fusion may use (a subset of the target's, checked
  /// by the driver); unset: the target's.
  std::optional<std::vector<std::string>> matmulEpilogues;
  /// sinter-causal-matmuls: causal attention's matmuls skip their
  /// triangles (--causal-matmuls).
  bool causalMatmuls = true;
};

/// Training -> Optimized: composite ops decomposed, cleaned up, grouped into
/// kernel regions in the order they run, and kernels recomputed in the
/// backward pass where layers ask for it or the memory budget needs it.
void buildOptimizedPipeline(mlir::OpPassManager &pm,
                            const OptimizedPipelineOptions &options = {});

struct ScheduledPipelineOptions {
  std::string entry = "train_step";
  /// The program's role: "step", or "eval" for the evaluation program.
  std::string role{abi::kStepProgram.role};
  /// Where the memory plan's report goes (may be empty).
  std::string report;
  bool memoryReuse = true;
  /// Arena bytes each matmul gets as the library's scratch, at its step
  /// only (Target::matmulWorkspaceBytes).
  int64_t matmulWorkspaceBytes = 0;
};

/// Optimized -> Scheduled: the entry becomes a sched.program, every tensor
/// in a slab at its offset; the plan is checked.
void buildScheduledPipeline(mlir::OpPassManager &pm,
                            const ScheduledPipelineOptions &options = {});

/// Scheduled -> Lowered: every kernel as the target's code.
void buildLoweredPipeline(mlir::OpPassManager &pm,
                          const codegen::Target &target);

/// Lowered -> Binary: the target's LLVM IR, each program as the ABI's
/// symbols; what emitObject compiles.
void buildBinaryPipeline(mlir::OpPassManager &pm,
                         const codegen::Target &target);

/// Registers the pipelines by name for sinter-opt:
/// --sinter-training-pipeline (eval-step, runtime-lr),
/// --sinter-optimized-pipeline (entry, target),
/// --sinter-scheduled-pipeline (entry, role, no-reuse),
/// --sinter-lowered-pipeline (target), --sinter-binary-pipeline (target).
void registerSinterPipelines();

} // namespace sinter

#endif // SINTER_COMPILER_PIPELINES_PIPELINES_H
