//===- sinterc.cpp - the Sinter compiler driver ----------------------------===//
//
//   sinterc model.pbtxt --emit=sgraph              print the imported IR
//   sinterc model.pbtxt --compile-to=training      stop after a phase
//   sinterc model.pbtxt --dump-dir=D ...           every phase's IR in D
//   sinterc model.pbtxt --run=train_step --input=params.safetensors ...
//
// All the work is in compiler/Driver; see docs/CLI.md.
//
//===----------------------------------------------------------------------===//

#include "compiler/Support/Diagnostics.h"
#include "compiler/CodeGen/Target.h"
#include "compiler/Driver/Driver.h"
#include "passes/Analysis/RecomputeSelection.h"
#include "compiler/CodeGen/Cpu/Passes.h"
#include "compiler/CodeGen/Passes.h"
#include "passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"

namespace cl = llvm::cl;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::OptionCategory category("sinterc options");
  cl::opt<std::string> input(cl::Positional, cl::desc("<model.pbtxt | .mlir>"),
                             cl::Required, cl::cat(category));
  cl::opt<std::string> output("o", cl::desc("Output file: IR (default: stdout), an object (.o) or the training binary"),
                              cl::value_desc("file"), cl::init("-"),
                              cl::cat(category));
  cl::opt<std::string> emit(
      "emit",
      cl::desc("Print the IR of a phase and stop: sgraph (= import), "
               "training"),
      cl::value_desc("phase"), cl::cat(category));
  // cl::desc keeps a reference: the text must outlive the option.
  static const std::string compileToHelp =
      "Stop after a phase: " + sinter::phaseNames();
  cl::opt<std::string> compileTo(
      "compile-to", cl::desc(compileToHelp),
      cl::value_desc("phase"), cl::cat(category));
  cl::opt<std::string> dumpDir(
      "dump-dir", cl::desc("Write every phase's IR, numbered, to this folder"),
      cl::value_desc("dir"), cl::cat(category));
  cl::opt<int64_t> batchSize(
      "batch-size", cl::desc("Override training.batch_size"),
      cl::value_desc("n"), cl::init(0), cl::cat(category));
  cl::opt<std::string> precision(
      "precision",
      cl::desc("Override training.precision: fp32, bf16_mixed (matmuls in "
               "bf16) or fp16_mixed; see docs/MixedPrecision.md"),
      cl::value_desc("name"), cl::cat(category));
  cl::opt<bool> summary(
      "summary",
      cl::desc("Print the parameters (names, shapes, counts) and their total"),
      cl::cat(category));
  cl::opt<std::string> entry(
      "entry",
      cl::desc("The function to compile: train_step (default), "
               "forward_grad (loss, metrics and gradients; for checks), or "
               "any function of a .mlir input"),
      cl::value_desc("function"), cl::init("train_step"), cl::cat(category));
  cl::opt<bool> noMemoryReuse(
      "no-memory-reuse",
      cl::desc("Give every intermediate its own bytes (for bisecting a "
               "suspected planning bug; uses far more memory)"),
      cl::cat(category));
  cl::opt<bool> runtimeLr(
      "runtime-lr",
      cl::desc("Give @train_step an `lr` argument (kind hyper, default the "
               "model's lr) that sets the peak learning rate at run time; "
               "on by default when building the binary (=false: the lr is "
               "fixed at compile time)"),
      cl::cat(category));
  cl::opt<std::string> memoryBudget(
      "memory-budget",
      cl::desc("Recompute activations so that the arena fits: bytes (2GiB, "
               "1500MB, 123456) or a fraction of the arena without "
               "recompute (0.5, 50%); see docs/Recompute.md"),
      cl::value_desc("bytes|fraction"), cl::cat(category));
  cl::opt<double> bucketMb(
      "bucket-mb",
      cl::desc("Data parallelism: merge the gradient all-reduces into "
               "buckets of this many MiB, in the order the backward pass "
               "finishes them (default 25, the first bucket 1; 0: one "
               "all-reduce per gradient); see docs/Distributed.md"),
      cl::value_desc("MiB"), cl::init(25.0), cl::cat(category));
  cl::opt<bool> memoryReport(
      "memory-report",
      cl::desc("Compile to the scheduled phase and print the memory by "
               "category and whether it fits the budget"),
      cl::cat(category));
  cl::opt<std::string> recompute(
      "recompute",
      cl::desc("Which layers to recompute: model (default: layers marked "
               "recompute: true and the model's training.recompute), "
               "blocks (also every instance of a repeated layer), none "
               "(ignore the model's marks and budget; --memory-budget "
               "still applies)"),
      cl::value_desc("model|blocks|none"), cl::cat(category));
  // cl::desc keeps a reference: the text must outlive the option.
  static const std::string targetHelp =
      "The machine the training binary is for: " +
      sinter::codegen::targetNames() + " (default cpu: the host CPU)";
  cl::opt<std::string> target("target", cl::desc(targetHelp),
                              cl::value_desc("name"), cl::init("cpu"),
                              cl::cat(category));
  cl::list<std::string> cudaArch(
      "cuda-arch",
      cl::desc("--target=cuda: the GPU architectures to compile for, "
               "comma-separated (default sm_90; sm_80 for A100)"),
      cl::value_desc("sm_XX,..."), cl::CommaSeparated, cl::cat(category));
  cl::opt<std::string> cudaToolkit(
      "cuda-toolkit",
      cl::desc("--target=cuda: the CUDA toolkit for ptxas and libdevice "
               "(default $CUDA_HOME, then the one sinterc was built with)"),
      cl::value_desc("dir"), cl::cat(category));
  cl::opt<std::string> cudaPtxDir(
      "cuda-ptx-dir",
      cl::desc("--target=cuda: write each architecture's PTX and ptxas's "
               "report (registers, spills) to this folder"),
      cl::value_desc("dir"), cl::cat(category));
  cl::opt<int64_t> cudaRowSlots(
      "cuda-row-slots",
      cl::desc("--target=cuda: elements of a row each thread of a row "
               "kernel (softmax, layer norm and their gradients) keeps in "
               "registers across the row's phases, and loads at once where "
               "a row is too long to keep or a column kernel sums; 0 to 16 "
               "(default 8; 0: one element at a time, every phase re-read)"),
      cl::value_desc("n"), cl::init(sinter::codegen::CudaOptions().rowSlots),
      cl::cat(category));
  cl::opt<bool> cudaMergeLaunches(
      "cuda-merge-launches",
      cl::desc("--target=cuda: run each run of neighbouring kernels that "
               "touch disjoint bytes (the optimizer's updates, the "
               "gradients' squared sums, the weights' casts) as one launch "
               "(default true)"),
      cl::init(sinter::codegen::CudaOptions().mergeLaunches),
      cl::cat(category));
  cl::list<std::string> matmulEpilogues(
      "matmul-epilogues",
      cl::desc("The matmul epilogues fusion may use, comma-separated: a "
               "subset of the target's (cpu: scale, bias, activation; cuda: "
               "scale, bias, relu, gelu_tanh, gelu_aux, dgelu, dgelu_bgrad), "
               "or none (default: all the target's)"),
      cl::value_desc("name,..."), cl::CommaSeparated, cl::cat(category));
  cl::opt<bool> causalMatmuls(
      "causal-matmuls",
      cl::desc("Let causal attention's matmuls skip the triangle above the "
               "diagonal that is 0 or never read (default true; false "
               "computes every product whole)"),
      cl::init(sinter::DriverOptions().causalMatmuls), cl::cat(category));
  cl::opt<bool> timings(
      "timings",
      cl::desc("Print where the compile time went, per phase and pass"),
      cl::cat(category));
  cl::opt<std::string> run(
      "run", cl::desc("Run a function (forward, train_step, ...) with the "
                      "reference interpreter"),
      cl::value_desc("function"), cl::cat(category));
  cl::list<std::string> runInputs(
      "input",
      cl::desc("Tensors for --run: x.safetensors, x.npy or name=x.npy"),
      cl::value_desc("file"), cl::cat(category));
  cl::opt<std::string> runOutput(
      "output",
      cl::desc("Where --run writes its results: a .safetensors file or a "
               "folder of .npy files"),
      cl::value_desc("path"), cl::cat(category));
  cl::opt<std::string> bisect(
      "bisect",
      cl::desc("Hold the scheduled program against a binary's step trace "
               "(train --inputs=F --trace=TRACE), step by step, each step "
               "from the binary's inputs to it; name the first step over "
               "its tolerance (docs/Testing.md)"),
      cl::value_desc("trace.safetensors"), cl::cat(category));
  cl::opt<bool> bisectPasses(
      "bisect-passes",
      cl::desc("Compile --entry's function to the scheduled phase keeping "
               "the IR after every pass, run each in the reference "
               "interpreter on the --input tensors, and name the first pass "
               "that changes the results beyond its tolerance "
               "(docs/Testing.md)"),
      cl::cat(category));
  cl::opt<double> bisectRtol(
      "bisect-rtol",
      cl::desc("--bisect's and --bisect-passes' normwise tolerance for f32 "
               "and f64 (default 1e-4; bf16 and f16: 10x); --bisect-passes "
               "takes 0: bit for bit"),
      cl::init(sinter::DriverOptions().bisectRtol), cl::cat(category));

  // Registered so that --mlir-print-ir-before/after=<pass> can name them.
  sinter::registerSinterPasses();
  sinter::codegen::registerSinterCodeGenPasses();
  sinter::codegen::registerSinterCpuPasses();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "sinterc: compile a model description into a training step\n\n"
      "  MLIR's --mlir-print-ir-*, --mlir-timing and other --mlir-* options\n"
      "  work too (listed by --help-hidden). See docs/CLI.md.\n");

  mlir::MLIRContext context;
  sinter::OneLineDiagnostics diagnostics(context, llvm::errs());
  mlir::Location here = mlir::FileLineColLoc::get(&context, input, 0, 0);

  sinter::DriverOptions options;
  options.input = input;
  options.output = output;
  options.dumpDir = dumpDir;
  options.runFunction = run;
  if (entry.empty()) {
    mlir::emitError(here) << "--entry needs a function name";
    return 1;
  }
  options.entry = entry;
  options.memoryReuse = !noMemoryReuse;
  if (runtimeLr.getNumOccurrences())
    options.runtimeLr = runtimeLr;
  options.summary = summary;
  if (memoryBudget.getNumOccurrences()) {
    std::string error;
    if (!sinter::analysis::parseMemoryBudget(memoryBudget, error)) {
      mlir::emitError(here) << "--memory-budget=" << memoryBudget << ": "
                            << error;
      return 1;
    }
    options.memoryBudget = memoryBudget;
  }
  if (recompute.getNumOccurrences()) {
    if (recompute != "model" && recompute != "blocks" && recompute != "none") {
      mlir::emitError(here) << "--recompute=" << recompute
                            << " is not a policy; use model, blocks or none";
      return 1;
    }
    if (recompute != "model")
      options.recompute = recompute;
  }
  if (!(bucketMb >= 0 && bucketMb <= 1e6)) {
    mlir::emitError(here) << "--bucket-mb=" << bucketMb
                          << " is not a size in MiB in [0, 1000000]";
    return 1;
  }
  options.bucketBytes = static_cast<int64_t>(bucketMb * (1 << 20));
  options.memoryReport = memoryReport;
  if (memoryReport && (!run.empty() || summary || !emit.empty() ||
                       !compileTo.empty())) {
    mlir::emitError(here) << "--memory-report compiles to the scheduled "
                             "phase itself; it cannot be combined with "
                             "--run, --summary, --emit or --compile-to";
    return 1;
  }
  options.runInputs = runInputs;
  options.runOutput = runOutput;
  options.target = target;
  if (target != "cuda" && (cudaArch.getNumOccurrences() ||
                           cudaToolkit.getNumOccurrences() ||
                           cudaPtxDir.getNumOccurrences())) {
    mlir::emitError(here) << "--cuda-arch, --cuda-toolkit and --cuda-ptx-dir "
                             "need --target=cuda";
    return 1;
  }
  if (cudaRowSlots.getNumOccurrences() && target != "cuda" &&
      target != "cuda-host") {
    mlir::emitError(here) << "--cuda-row-slots needs --target=cuda (or "
                             "cuda-host)";
    return 1;
  }
  if (cudaMergeLaunches.getNumOccurrences() && target != "cuda" &&
      target != "cuda-host") {
    mlir::emitError(here) << "--cuda-merge-launches needs --target=cuda "
                             "(or cuda-host)";
    return 1;
  }
  if (cudaRowSlots < 0 || cudaRowSlots > 16) {
    mlir::emitError(here) << "--cuda-row-slots=" << cudaRowSlots.getValue()
                          << " is not in [0, 16]";
    return 1;
  }
  {
    sinter::codegen::CudaOptions cuda;
    if (!cudaArch.empty())
      cuda.chips.assign(cudaArch.begin(), cudaArch.end());
    for (const std::string &chip : cuda.chips) {
      llvm::StringRef digits(chip);
      unsigned number = 0;
      bool named = digits.consume_front("sm_");
      (void)digits.consume_back("a");
      if (!named || digits.getAsInteger(10, number) || number < 70 ||
          number > 90) {
        mlir::emitError(here) << "--cuda-arch: '" << chip
                              << "' is not an architecture this compiler "
                                 "targets (sm_70 ... sm_90)";
        return 1;
      }
    }
    cuda.toolkit = cudaToolkit;
    cuda.ptxDir = cudaPtxDir;
    cuda.rowSlots = cudaRowSlots;
    cuda.mergeLaunches = cudaMergeLaunches;
    sinter::codegen::setCudaOptions(std::move(cuda));
  }
  if (matmulEpilogues.getNumOccurrences()) {
    options.matmulEpilogues.emplace(matmulEpilogues.begin(),
                                    matmulEpilogues.end());
  }
  options.causalMatmuls = causalMatmuls;
  options.timings = timings;
  if (batchSize.getNumOccurrences()) {
    if (batchSize < 1) {
      mlir::emitError(here) << "--batch-size must be >= 1, got " << batchSize;
      return 1;
    }
    options.batchSize = batchSize;
  }
  if (precision.getNumOccurrences()) {
    if (precision != "fp32" && precision != "bf16_mixed" &&
        precision != "fp16_mixed") {
      mlir::emitError(here) << "--precision=" << precision
                            << " is not one of fp32, bf16_mixed, fp16_mixed";
      return 1;
    }
    options.precision = precision;
  }
  auto parsePhaseFlag = [&](const std::string &flag,
                            const std::string &value) -> bool {
    std::optional<sinter::Phase> phase = sinter::parsePhase(value);
    if (!phase) {
      mlir::emitError(here) << "--" << flag << "=" << value
                            << " is not a phase; phases are: sgraph, "
                            << sinter::phaseNames();
      return false;
    }
    if (options.compileTo && *options.compileTo != *phase) {
      mlir::emitError(here) << "--emit and --compile-to name different phases";
      return false;
    }
    options.compileTo = phase;
    return true;
  };
  if (!compileTo.empty() && !parsePhaseFlag("compile-to", compileTo))
    return 1;
  if (!emit.empty() && !parsePhaseFlag("emit", emit))
    return 1;
  if (summary && (!run.empty() || !emit.empty())) {
    mlir::emitError(here) << "--summary cannot be combined with --run or --emit";
    return 1;
  }
  if (!run.empty() && !emit.empty()) {
    mlir::emitError(here) << "--run and --emit cannot be combined";
    return 1;
  }
  if (!runOutput.empty() && run.empty()) {
    mlir::emitError(here) << "--output needs --run=<function>";
    return 1;
  }
  if (!runInputs.empty() && run.empty() && bisect.empty() && !bisectPasses) {
    mlir::emitError(here)
        << "--input needs --run=<function>, --bisect or --bisect-passes";
    return 1;
  }
  if (bisectPasses && (!bisect.empty() || !run.empty() || !emit.empty() ||
                       summary || !compileTo.empty() || memoryReport)) {
    mlir::emitError(here) << "--bisect-passes compiles --entry's function "
                             "to the scheduled phase itself; it cannot be "
                             "combined with --bisect, --run, --emit, "
                             "--summary, --compile-to or --memory-report";
    return 1;
  }
  if (!bisect.empty() && (!run.empty() || !emit.empty() || summary ||
                          !compileTo.empty() || memoryReport)) {
    mlir::emitError(here) << "--bisect compiles the scheduled phase of "
                             "--entry's function itself; it cannot be "
                             "combined with --run, --emit, --summary, "
                             "--compile-to or --memory-report";
    return 1;
  }
  // Bit for bit is a claim passes make (recompute, the memory plan), not
  // one a binary makes against the interpreter.
  if (!(bisectRtol < 1 && (bisectPasses ? bisectRtol >= 0 : bisectRtol > 0))) {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%g", bisectRtol.getValue());
    mlir::emitError(here) << "--bisect-rtol=" << text
                          << " is not a tolerance in "
                          << (bisectPasses ? "[0, 1)" : "(0, 1)");
    return 1;
  }
  options.bisectTrace = bisect;
  options.bisectPasses = bisectPasses;
  options.bisectRtol = bisectRtol;
  return sinter::runDriver(options, context);
}
