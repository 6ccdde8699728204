//===- Pipelines.cpp - Sinter's phases and their pipelines ---------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
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

void sinter::buildTrainingPipeline(OpPassManager &pm) {
  // Reverse mode, the optimizer step and the schedule: @train_step.
  pm.addPass(createAutodiffPass());
  // stop_gradient has done its job; later phases must not see it.
  pm.addPass(createEraseStopGradientPass());
  // The contract: one gradient and one update per trainable parameter.
  pm.addPass(createVerifyTrainingGraphPass());
}

void sinter::registerSinterPipelines() {
  PassPipelineRegistration<>(
      "sinter-training-pipeline",
      "The training phase: @forward -> @train_step, verified",
      [](OpPassManager &pm) { buildTrainingPipeline(pm); });
}
