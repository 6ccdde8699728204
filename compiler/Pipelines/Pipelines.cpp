//===- Pipelines.cpp - Sinter's phases and their pipelines ---------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/CodeGen/Target.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ErrorHandling.h"

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
  Option<bool> geluEpilogues{
      *this, "gelu-epilogues",
      llvm::cl::desc("Round a linear layer's tanh GELU as cuBLASLt's GELU "
                     "epilogues do (sinter-mixed-precision)"),
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
  // training.precision: @forward's matmuls in bf16 or f16, before autodiff
  // derives the backward graph from them.
  MixedPrecisionPassOptions precision;
  precision.geluEpilogues = options.geluEpilogues;
  pm.addPass(createMixedPrecisionPass(precision));
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
  const codegen::Target &target = *options.target;
  // softmax, layer_norm, cross-entropy, ... into elementwise ops and
  // single reductions: the only forms fusion and code generation know.
  pm.addPass(createDecomposeOpsPass());
  // Fold constants, merge the duplicates decomposition and autodiff leave
  // behind (two reduce_max of the same logits, ...), drop dead values.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Matmul dimensions the target's library wants aligned, padded.
  if (int64_t align = target.matmulAlignBytes()) {
    AlignMatmulsPassOptions aligned;
    aligned.alignBytes = align;
    pm.addPass(createAlignMatmulsPass(aligned));
  }
  // Causal attention's matmuls marked with the triangle they may skip
  // (before fusion hides their readers in kernel regions).
  if (options.causalMatmuls)
    pm.addPass(createCausalMatmulsPass());
  // Kernel regions, each op annotated with why it is (not) fused, cut as
  // the target's kernels are.
  analysis::KernelLimits limits = target.kernelLimits();
  FuseKernelsPassOptions fuse;
  fuse.minElementsToSplit = limits.minElementsToSplit;
  fuse.chunkElements = limits.chunkElements;
  fuse.maxScratchBytes = limits.maxScratchBytes;
  fuse.memoryBound = limits.memoryBound;
  // The options hold an ArrayRef: the list must outlive the pass's creation.
  std::vector<std::string> epilogues =
      options.matmulEpilogues.value_or(target.matmulEpilogues());
  fuse.matmulEpilogues = epilogues;
  fuse.matmulLibrary = target.matmulLibrary().str();
  pm.addPass(createFuseKernelsPass(fuse));
  // The gradients' all-reduces merged into buckets, each right after the
  // kernel that finishes its last gradient.
  BucketGradientsPassOptions buckets;
  buckets.bucketBytes = options.bucketBytes;
  buckets.firstBucketBytes = std::min<int64_t>(1 << 20, options.bucketBytes);
  buckets.lastBucketBytes = buckets.firstBucketBytes;
  pm.addPass(createBucketGradientsPass(buckets));
  // The order the kernels run in (recompute measures memory on it).
  ScheduleKernelsPassOptions schedule;
  schedule.smallResultBytes = target.smallResultBytes();
  schedule.bigOperandBytes = target.bigOperandBytes();
  pm.addPass(createScheduleKernelsPass(schedule));
  // Activations recomputed in the backward pass instead of kept: annotated
  // layers, and what a memory budget needs (measured with the real
  // planner). Whole kernels are cloned, so results stay bitwise identical.
  RecomputePassOptions recompute;
  recompute.entry = options.entry;
  recompute.budget = options.memoryBudget;
  recompute.report = options.recomputeReport;
  pm.addPass(createRecomputePass(recompute));
  // Kernel inputs that are 0 above a causal diagonal (the softmax's
  // probabilities, read by its gradient): a row kernel need not read them
  // there.
  pm.addPass(createCausalKernelInputsPass());
  // The contract: kernels, matmuls, reshapes and constants only.
  VerifyOptimizedPassOptions verify;
  verify.entry = options.entry;
  pm.addPass(createVerifyOptimizedPass(verify));
}

void sinter::buildScheduledPipeline(OpPassManager &pm,
                                    const ScheduledPipelineOptions &options) {
  // Slabs and arena offsets from liveness, state updated in place; the
  // entry becomes a sched.program.
  AssignBuffersPassOptions assign;
  assign.entry = options.entry;
  assign.role = options.role;
  assign.report = options.report;
  assign.noReuse = !options.memoryReuse;
  assign.matmulWorkspaceBytes = options.matmulWorkspaceBytes;
  pm.addPass(createAssignBuffersPass(assign));
  // No two buffers live at once share a byte (checked a second time, by
  // the planner's own checker); every kernel is launched.
  VerifySchedulePassOptions verify;
  verify.entry = options.entry;
  pm.addPass(createVerifySchedulePass(verify));
}

void sinter::buildLoweredPipeline(OpPassManager &pm,
                                  const codegen::Target &target) {
  target.buildLoweredPipeline(pm);
}

void sinter::buildBinaryPipeline(OpPassManager &pm,
                                 const codegen::Target &target) {
  target.buildBinaryPipeline(pm);
}

namespace {

/// The `target=<name>` of a pipeline that depends on it. A pipeline builder
/// cannot fail, so an unknown name ends the program with one line.
const sinter::codegen::Target *targetNamed(const std::string &name) {
  const sinter::codegen::Target *target = sinter::codegen::lookupTarget(name);
  if (!target)
    llvm::report_fatal_error(
        llvm::Twine("target=") + name +
            " is not a target; targets are: " + sinter::codegen::targetNames(),
        /*gen_crash_diag=*/false);
  return target;
}

struct EntryTargetCLOptions : public PassPipelineOptions<EntryTargetCLOptions> {
  Option<std::string> entry{*this, "entry",
                            llvm::cl::desc("The entry function"),
                            llvm::cl::init("train_step")};
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("The target (cpu)"),
                             llvm::cl::init("cpu")};
};

struct ScheduledCLOptions : public PassPipelineOptions<ScheduledCLOptions> {
  Option<std::string> entry{*this, "entry",
                            llvm::cl::desc("The entry function"),
                            llvm::cl::init("train_step")};
  Option<std::string> role{
      *this, "role",
      llvm::cl::desc("The program's role: step, eval or accumulate"),
      llvm::cl::init(std::string(sinter::abi::kStepProgram.role))};
  Option<bool> noReuse{*this, "no-reuse",
                       llvm::cl::desc("Give every arena value its own bytes"),
                       llvm::cl::init(false)};
};

struct TargetCLOptions : public PassPipelineOptions<TargetCLOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("The target (cpu)"),
                             llvm::cl::init("cpu")};
};

} // namespace

void sinter::registerSinterPipelines() {
  PassPipelineRegistration<TrainingPipelineCLOptions>(
      "sinter-training-pipeline",
      "The training phase: @forward -> @train_step, verified",
      [](OpPassManager &pm, const TrainingPipelineCLOptions &cl) {
        TrainingPipelineOptions options;
        options.evalStep = cl.evalStep;
        options.runtimeLr = cl.runtimeLr;
        options.geluEpilogues = cl.geluEpilogues;
        buildTrainingPipeline(pm, options);
      });
  PassPipelineRegistration<EntryTargetCLOptions>(
      "sinter-optimized-pipeline",
      "The optimized phase: decomposition, cleanup, kernel regions, their "
      "order and recompute, verified",
      [](OpPassManager &pm, const EntryTargetCLOptions &cl) {
        OptimizedPipelineOptions options;
        options.entry = cl.entry;
        if (const codegen::Target *target = targetNamed(cl.target))
          options.target = target;
        buildOptimizedPipeline(pm, options);
      });
  PassPipelineRegistration<ScheduledCLOptions>(
      "sinter-scheduled-pipeline",
      "The scheduled phase: the entry as a sched.program, its memory plan "
      "verified",
      [](OpPassManager &pm, const ScheduledCLOptions &cl) {
        ScheduledPipelineOptions options;
        options.entry = cl.entry;
        options.role = cl.role;
        options.memoryReuse = !cl.noReuse;
        buildScheduledPipeline(pm, options);
      });
  PassPipelineRegistration<TargetCLOptions>(
      "sinter-lowered-pipeline",
      "The lowered phase: every kernel as the target's code, verified",
      [](OpPassManager &pm, const TargetCLOptions &cl) {
        if (const codegen::Target *target = targetNamed(cl.target))
          buildLoweredPipeline(pm, *target);
      });
  PassPipelineRegistration<TargetCLOptions>(
      "sinter-binary-pipeline",
      "The binary phase: the target's LLVM IR and each program as the "
      "ABI's symbols, verified",
      [](OpPassManager &pm, const TargetCLOptions &cl) {
        if (const codegen::Target *target = targetNamed(cl.target))
          buildBinaryPipeline(pm, *target);
      });
}
