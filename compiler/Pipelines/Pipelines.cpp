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

void sinter::buildTrainingPipeline(OpPassManager &pm, bool gradientsOnly) {
  // Reverse mode, the optimizer step and the schedule: @train_step (or
  // only the gradients: @forward_grad).
  AutodiffPassOptions autodiff;
  autodiff.mode = gradientsOnly ? "gradients" : "train-step";
  pm.addPass(createAutodiffPass(autodiff));
  // stop_gradient has done its job; later phases must not see it.
  pm.addPass(createEraseStopGradientPass());
  // The contract: one gradient and one update per trainable parameter.
  if (!gradientsOnly)
    pm.addPass(createVerifyTrainingGraphPass());
}

void sinter::buildOptimizedPipeline(OpPassManager &pm) {
  // softmax, layer_norm, cross-entropy, ... into elementwise ops and
  // single reductions: the only forms fusion and code generation know.
  pm.addPass(createDecomposeOpsPass());
  // Fold constants, merge the duplicates decomposition and autodiff leave
  // behind (two reduce_max of the same logits, ...), drop dead values.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Kernel regions, each op annotated with why it is (not) fused.
  pm.addPass(createFuseKernelsPass());
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
  PassPipelineRegistration<>(
      "sinter-training-pipeline",
      "The training phase: @forward -> @train_step, verified",
      [](OpPassManager &pm) { buildTrainingPipeline(pm); });
  PassPipelineRegistration<>(
      "sinter-optimized-pipeline",
      "The optimized phase: decomposition, cleanup and kernel regions",
      [](OpPassManager &pm) { buildOptimizedPipeline(pm); });
}
