//===- Pipelines.cpp - Sinter's phases and their pipelines ---------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace {
constexpr sinter::Phase kAllPhases[] = {
    sinter::Phase::Import,    sinter::Phase::Training, sinter::Phase::Optimized,
    sinter::Phase::Scheduled, sinter::Phase::Lowered,  sinter::Phase::Binary};

/// sinter-opt --sinter-training-pipeline='eval-step runtime-lr'.
struct TrainingPipelineCLOptions
    : public PassPipelineOptions<TrainingPipelineCLOptions> {
  Option<bool> evalStep{*this, "eval-step",
                        llvm::cl::desc("Also build @eval_step"),
                        llvm::cl::init(false)};
  Option<bool> runtimeLr{
      *this, "runtime-lr",
      llvm::cl::desc("Give @train_step an lr argument (kind hyper)"),
      llvm::cl::init(false)};
};
} // namespace

llvm::StringRef sinter::phaseName(Phase phase) {
  switch (phase) {
  case Phase::Import:
    return "import";
  case Phase::Training:
    return "training";
  case Phase::Optimized:
    return "optimized";
  case Phase::Scheduled:
    return "scheduled";
  case Phase::Lowered:
    return "lowered";
  case Phase::Binary:
    return "binary";
  }
  return "";
}

std::optional<sinter::Phase> sinter::parsePhase(llvm::StringRef name) {
  if (name == "sgraph")
    return Phase::Import;
  for (Phase phase : kAllPhases)
    if (phaseName(phase) == name)
      return phase;
  return std::nullopt;
}

std::string sinter::phaseNames() {
  std::string names;
  for (Phase phase : kAllPhases)
    names += (names.empty() ? "" : ", ") + phaseName(phase).str();
  return names;
}

void sinter::buildTrainingPipeline(OpPassManager &pm,
                                   const TrainingPipelineOptions &options) {
  // Reverse mode, the optimizer step and the schedule: @train_step (or
  // only the gradients: @forward_grad).
  AutodiffPassOptions autodiff;
  autodiff.mode = options.gradientsOnly ? "gradients" : "train-step";
  autodiff.runtimeLr = options.runtimeLr && !options.gradientsOnly;
  pm.addPass(createAutodiffPass(autodiff));
  // @forward without dropout, for evaluation (before stop_gradient goes,
  // so that it has none either).
  if (options.evalStep && !options.gradientsOnly)
    pm.addPass(createBuildEvalStepPass());
  // stop_gradient has done its job; later phases must not see it.
  pm.addPass(createEraseStopGradientPass());
  // The contract: one gradient and one update per trainable parameter.
  if (!options.gradientsOnly)
    pm.addPass(createVerifyTrainingGraphPass());
}

void sinter::buildOptimizedPipeline(OpPassManager &pm,
                                    const OptimizedPipelineOptions &options) {
  // softmax, layer_norm, cross-entropy, ... into elementwise ops and
  // single reductions: the only forms fusion and code generation know.
  pm.addPass(createDecomposeOpsPass());
  // Fold constants, merge the duplicates decomposition and autodiff leave
  // behind (two reduce_max of the same logits, ...), drop dead values.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Kernel regions, each op annotated with why it is (not) fused.
  pm.addPass(createFuseKernelsPass());
  // Activations recomputed in the backward pass instead of kept: annotated
  // layers, and what a memory budget needs (measured with the real
  // planner). Whole kernels are cloned, so results stay bitwise identical.
  RecomputePassOptions recompute;
  recompute.entry = options.entry;
  recompute.budget = options.memoryBudget;
  recompute.report = options.recomputeReport;
  pm.addPass(createRecomputePass(recompute));
}

void sinter::buildScheduledPipeline(OpPassManager &pm, llvm::StringRef entry,
                                    llvm::StringRef report,
                                    bool memoryReuse) {
  // Slabs and arena offsets from liveness, state updated in place.
  PlanMemoryPassOptions plan;
  plan.entry = entry.str();
  plan.report = report.str();
  plan.noReuse = !memoryReuse;
  pm.addPass(createPlanMemoryPass(plan));
  // No two buffers live at once share a byte.
  VerifyMemoryPlanPassOptions verify;
  verify.entry = entry.str();
  pm.addPass(createVerifyMemoryPlanPass(verify));
}

void sinter::registerSinterPipelines() {
  PassPipelineRegistration<TrainingPipelineCLOptions>(
      "sinter-training-pipeline",
      "The training phase: @forward -> @train_step, verified",
      [](OpPassManager &pm, const TrainingPipelineCLOptions &cl) {
        TrainingPipelineOptions options;
        options.evalStep = cl.evalStep;
        options.runtimeLr = cl.runtimeLr;
        buildTrainingPipeline(pm, options);
      });
  PassPipelineRegistration<>(
      "sinter-optimized-pipeline",
      "The optimized phase: decomposition, cleanup, kernel regions and "
      "recompute",
      [](OpPassManager &pm) { buildOptimizedPipeline(pm); });
}
