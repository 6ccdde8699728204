//===- Driver.cpp - sinterc as a library ---------------------------------===//
//
// A compilation is a list of phases (compiler/Pipelines/Pipelines.h), run
// in order from the one the input is in to the one asked for: each builds
// its pipeline for the chosen target, runs it (timed under the phase with
// --timings), and dumps its IR. What sinterc prints or writes at the end
// (a summary, the memory report, an interpreter run, IR, an object or the
// training binary) is decided by where the list stops.
//
// The evaluation step and, with gradient accumulation, the accumulate step
// are compiled apart: after the training phase a copy of the module holding
// only @eval_step (or @accumulate_step) goes through the optimized,
// scheduled and lowered pipelines on its own (its program's role is "eval"
// or "accumulate", its kernels named sinter_eval_* or sinter_acc_*), and is
// merged into the lowered module, so the training step's own pipelines and
// dumps are what they would be without it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/Driver.h"

#include "compiler/CodeGen/Passes.h"
#include "compiler/CodeGen/StepProgramBuilder.h"
#include "compiler/Driver/PhaseDumper.h"
#include "compiler/Importer/ImportModel.h"
#include "compiler/Interpreter/PassBisect.h"
#include "compiler/Interpreter/RunFunction.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Schedule/ScheduleOps.h"
#include "passes/MemoryReport.h"
#include "passes/Recompute.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace sinter;

namespace {

const char *phaseDescription(Phase phase) {
  switch (phase) {
  case Phase::Import:
    return "the model as imported: @forward(params, inputs) -> (loss, "
           "metrics)";
  case Phase::Training:
    return "after autodiff: @train_step with gradients, clipping, the "
           "learning-rate schedule and optimizer updates; @eval_step, "
           "@forward without dropout (compiled on its own from here on)";
  case Phase::Optimized:
    return "composite ops decomposed, kernel regions (sgraph.fusion) formed "
           "and ordered; every op's sinter.fusion says why it is where it is";
  case Phase::Scheduled:
    return "the step as a sched.program: slabs, a typed view per buffer at "
           "its offset, and the launches, matmul calls and copies in order "
           "(docs/dialects/sched.md); kernels as sched.kernel";
  case Phase::Lowered:
    return "kernels as linalg on memref views of the slabs (sinter_k*, the "
           "evaluation program's sinter_eval_k*); the programs' launches "
           "name them";
  case Phase::Binary:
    return "kernels in the LLVM dialect and each program as the ABI's "
           "symbols, as compiled into the object file";
  }
  llvm_unreachable("every phase has a description");
}

/// One line per parameter of @forward (name, aliases, shape, count, frozen
/// or buffer) and the totals.
LogicalResult printSummary(ModuleOp module, llvm::raw_ostream &os) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("--summary needs a module with @forward");
  struct Row {
    std::string name, shape;
    int64_t count;
    bool frozen, buffer;
  };
  std::vector<Row> rows;
  size_t nameWidth = 9, shapeWidth = 5;
  // Buffers (running statistics) are state, not parameters: PyTorch's
  // parameters() leaves them out too.
  int64_t total = 0, frozen = 0, buffers = 0, bufferTensors = 0;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    if (!forward.getArgAttr(i, sgraph::attr::kParam))
      continue;
    auto type = cast<RankedTensorType>(forward.getArgumentTypes()[i]);
    Row row;
    row.name = sgraph::argumentName(forward, i);
    if (auto aliases =
            forward.getArgAttrOfType<ArrayAttr>(i, sgraph::attr::kAliases))
      for (auto alias : aliases.getAsRange<StringAttr>())
        row.name += " = " + alias.str();
    row.shape = "[";
    for (auto [k, d] : llvm::enumerate(type.getShape()))
      row.shape += (k ? ", " : "") + std::to_string(d);
    row.shape += "]";
    row.count = type.getNumElements();
    row.frozen = bool(forward.getArgAttr(i, sgraph::attr::kFrozen));
    row.buffer = bool(forward.getArgAttr(i, sgraph::attr::kBuffer));
    if (row.buffer) {
      buffers += row.count;
      ++bufferTensors;
    } else {
      total += row.count;
      frozen += row.frozen ? row.count : 0;
    }
    nameWidth = std::max(nameWidth, row.name.size());
    shapeWidth = std::max(shapeWidth, row.shape.size());
    rows.push_back(row);
  }
  auto withCommas = [](int64_t n) {
    std::string digits = std::to_string(n), out;
    for (size_t k = 0; k < digits.size(); ++k) {
      if (k && (digits.size() - k) % 3 == 0)
        out += ',';
      out += digits[k];
    }
    return out;
  };
  os << llvm::left_justify("parameter", nameWidth) << "  "
     << llvm::left_justify("shape", shapeWidth) << "  "
     << llvm::right_justify("count", 13) << "\n";
  for (const Row &row : rows) {
    StringRef mark = row.buffer ? "  buffer" : row.frozen ? "  frozen" : "";
    os << llvm::left_justify(row.name, nameWidth) << "  "
       << llvm::left_justify(row.shape, shapeWidth) << "  "
       << llvm::right_justify(withCommas(row.count), 13) << mark << "\n";
  }
  os << "total: " << withCommas(total) << " parameters in "
     << rows.size() - bufferTensors << " tensors ("
     << withCommas(total - frozen) << " trainable, " << withCommas(frozen)
     << " frozen)";
  if (bufferTensors)
    os << "; " << withCommas(buffers) << " buffer values in " << bufferTensors
       << " tensors";
  os << "\n";
  return success();
}

/// The data folder a binary built from `modelPath` reads when given none:
/// `<folder of the model file>/data/<model name>/`, absolute, if it exists;
/// "" otherwise (and for a name that is not a single path component).
std::string defaultDataFolder(StringRef modelPath, StringRef modelName) {
  if (modelName.empty() || modelName == "." || modelName == ".." ||
      modelName.find_first_of("/\\") != StringRef::npos)
    return "";
  llvm::SmallString<256> path(modelPath);
  if (llvm::sys::fs::make_absolute(path))
    return "";
  llvm::sys::path::remove_filename(path);
  llvm::sys::path::append(path, "data", modelName);
  llvm::SmallString<256> real;
  if (!llvm::sys::fs::is_directory(path) ||
      llvm::sys::fs::real_path(path, real))
    return "";
  return real.str().str();
}

/// A copy of `module` holding only the function `name` (and the module's
/// attributes), to compile on its own.
OwningOpRef<ModuleOp> cloneWithOnly(ModuleOp module, StringRef name) {
  OwningOpRef<ModuleOp> copy = module.clone();
  for (auto fn : llvm::make_early_inc_range(copy->getOps<func::FuncOp>()))
    if (fn.getName() != name)
      fn.erase();
  return copy;
}

class Compilation {
public:
  Compilation(const DriverOptions &options, MLIRContext &context,
              const codegen::Target &target)
      : options(options), context(context), target(target),
        fileLoc(FileLineColLoc::get(&context, options.input, 0, 0)),
        dumper(context, options.dumpDir),
        entry(options.runFunction.empty() ? options.entry
                                          : options.runFunction) {}

  int run();

private:
  /// The phase the compilation stops after.
  Phase goal() const;
  LogicalResult load();
  LogicalResult training(TimingScope &timing);
  LogicalResult optimized(TimingScope &timing);
  LogicalResult scheduled(TimingScope &timing);
  LogicalResult lowered(TimingScope &timing);
  LogicalResult binary(TimingScope &timing);
  /// A program compiled apart: @eval_step or @accumulate_step, from a copy
  /// of the module holding only that function.
  struct SideProgram {
    std::string function;
    const abi::ProgramSymbols *symbols;
    OwningOpRef<ModuleOp> module;
  };
  /// A side program, compiled up to the lowered phase and merged into
  /// `module`.
  LogicalResult addSideProgram(SideProgram &side, TimingScope &timing);
  /// The memory budget of the optimized pipeline for the training and
  /// accumulate programs: --memory-budget, or "none" when it is empty and
  /// --recompute is none.
  std::string trainingMemoryBudget() const {
    return options.memoryBudget.empty() && options.recompute == "none"
               ? "none"
               : options.memoryBudget;
  }
  LogicalResult runPipeline(ModuleOp on, TimingScope &timing,
                            llvm::function_ref<void(OpPassManager &)> build);
  LogicalResult dumpStepPrograms();
  /// --bisect: the entry's step program as the binary's build makes it,
  /// from a lowered copy of the scheduled module.
  FailureOr<abi::StepProgram> lowerStepProgram(TimingScope &timing);
  int finish(TimingScope &timing);

  const DriverOptions &options;
  MLIRContext &context;
  const codegen::Target &target;
  Location fileLoc;
  PhaseDumper dumper;
  OwningOpRef<ModuleOp> module;
  std::vector<SideProgram> sidePrograms;
  Phase reached = Phase::Import;
  std::string defaultData;
  /// The function compiled: --run's, else --entry's.
  std::string entry;
  /// --bisect-passes: a copy of the module after every pass that changes
  /// it, and the phase running.
  std::unique_ptr<interp::PassBisection> passBisection;
  Phase running = Phase::Import;
};

Phase Compilation::goal() const {
  // Without --compile-to, stop where the function to run is (if any), else
  // build the binary.
  if (options.summary && !options.compileTo)
    return Phase::Import;
  if (options.memoryReport || !options.bisectTrace.empty() ||
      options.bisectPasses)
    return Phase::Scheduled;
  if (options.compileTo)
    return *options.compileTo;
  if (!options.runFunction.empty())
    return options.runFunction == "train_step" ||
                   options.runFunction == "forward_grad" ||
                   options.runFunction == "eval_step" ||
                   options.runFunction == "accumulate_step"
               ? Phase::Training
               : Phase::Import;
  return Phase::Binary;
}

LogicalResult
Compilation::runPipeline(ModuleOp on, TimingScope &timing,
                         llvm::function_ref<void(OpPassManager &)> build) {
  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  pm.enableTiming(timing);
  if (passBisection)
    pm.addInstrumentation(passBisection->instrumentation(phaseName(running)));
  build(pm);
  return pm.run(on);
}

LogicalResult Compilation::load() {
  bool isMlir = StringRef(options.input).ends_with(".mlir");
  if (!isMlir) {
    ImportOptions importOptions;
    importOptions.batchSize = options.batchSize;
    importOptions.precision = options.precision;
    importOptions.recompute = options.recompute;
    module = importModelFile(options.input, context, importOptions);
    if (!module)
      return failure();
    // Where the binary looks for data by default (model files only).
    if (options.input != "-" && module->getSymName())
      defaultData = defaultDataFolder(options.input, *module->getSymName());
    return success();
  }
  // Any phase's IR parses, the target's too.
  DialectRegistry registry;
  target.registerDialects(registry);
  context.appendDialectRegistry(registry);
  llvm::SourceMgr sourceMgr;
  std::string error;
  auto file = openInputFile(options.input, &error);
  if (!file)
    return emitError(fileLoc) << "cannot read the file: " << error;
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return failure();
  // A module with a sched.program is scheduled (lowered once its launches
  // name the functions the object calls); one that already has the
  // function to compile (or a training step) is past autodiff.
  auto programs = module->getOps<sched::ProgramOp>();
  if (!programs.empty()) {
    bool lowered = llvm::all_of(programs, [](sched::ProgramOp p) {
      return llvm::all_of(p.getBlock().getOps<sched::LaunchOp>(),
                          [](sched::LaunchOp l) { return l.getSymbol(); });
    });
    reached = lowered && module->getOps<sched::KernelOp>().empty()
                  ? Phase::Lowered
                  : Phase::Scheduled;
  } else if (module->lookupSymbol(entry) ||
             module->lookupSymbol("train_step") ||
             module->lookupSymbol("forward_grad"))
    reached = Phase::Training;
  else if (!module->lookupSymbol("forward") && goal() > Phase::Training) {
    std::string names;
    for (auto fn : module->getOps<func::FuncOp>())
      names += (names.empty() ? "" : ", ") + fn.getName().str();
    return emitError(fileLoc)
           << "no function @" << entry << " to compile (the module "
           << "has: " << (names.empty() ? "none" : names)
           << "); name it with --entry";
  }
  return success();
}

LogicalResult Compilation::training(TimingScope &timing) {
  return runPipeline(*module, timing, [&](OpPassManager &pm) {
    TrainingPipelineOptions training;
    training.gradientsOnly = entry == "forward_grad" ||
                             options.runFunction == "forward_grad";
    training.evalStep = true;
    // The binary's trainer sets the peak learning rate at run time.
    training.runtimeLr = options.runtimeLr.value_or(
        goal() == Phase::Binary || !options.bisectTrace.empty() ||
        options.bisectPasses);
    // The GELU's rounding where the target's matmul library applies it.
    std::vector<std::string> epilogues =
        options.matmulEpilogues.value_or(target.matmulEpilogues());
    training.geluEpilogues = llvm::is_contained(epilogues, "gelu_tanh") &&
                             llvm::is_contained(epilogues, "gelu_aux");
    buildTrainingPipeline(pm, training);
  });
}

LogicalResult Compilation::optimized(TimingScope &timing) {
  // @eval_step and @accumulate_step are compiled on their own (each from a
  // copy with nothing else), so that the training step's pipeline and dumps
  // are what they would be without them; they become the binary's
  // evaluation and accumulate programs.
  for (const abi::ProgramSymbols *symbols :
       {&abi::kEvalProgram, &abi::kAccumulateProgram}) {
    std::string function = std::string(symbols->role) + "_step";
    if (entry == function || options.runFunction == function)
      continue;
    if (auto fn = module->lookupSymbol<func::FuncOp>(function)) {
      if (goal() >= Phase::Lowered)
        sidePrograms.push_back(
            {function, symbols, cloneWithOnly(*module, function)});
      fn.erase();
    }
  }
  // From here on the module is the entry alone: nothing else is compiled.
  for (auto fn : llvm::make_early_inc_range(module->getOps<func::FuncOp>()))
    if (fn.getName() != entry)
      fn.erase();
  OptimizedPipelineOptions optimized;
  optimized.entry = entry;
  optimized.target = &target;
  optimized.bucketBytes = options.bucketBytes;
  optimized.matmulEpilogues = options.matmulEpilogues;
  optimized.causalMatmuls = options.causalMatmuls;
  optimized.memoryBudget = trainingMemoryBudget();
  if (recomputeRequested(*module, entry, optimized.memoryBudget))
    optimized.recomputeReport = dumper.sideFile(
        "recompute.txt", "the recompute decisions: every recomputed value "
                         "with its reason and cost, memory before and after");
  return runPipeline(*module, timing, [&](OpPassManager &pm) {
    buildOptimizedPipeline(pm, optimized);
  });
}

LogicalResult Compilation::scheduled(TimingScope &timing) {
  ScheduledPipelineOptions scheduled;
  scheduled.entry = entry;
  scheduled.memoryReuse = options.memoryReuse;
  scheduled.matmulWorkspaceBytes = target.matmulWorkspaceBytes();
  scheduled.report = dumper.sideFile(
      "memory-plan.txt", "the memory plan: slabs, arena peak by category, "
                         "saving from reuse, the largest buffers");
  return runPipeline(*module, timing, [&](OpPassManager &pm) {
    buildScheduledPipeline(pm, scheduled);
  });
}

LogicalResult Compilation::addSideProgram(SideProgram &side,
                                          TimingScope &timing) {
  bool eval = side.symbols == &abi::kEvalProgram;
  TimingScope sideTiming =
      timing.nest(eval ? "evaluation program" : "accumulate program");
  if (failed(runPipeline(*side.module, sideTiming, [&](OpPassManager &pm) {
        OptimizedPipelineOptions optimized;
        optimized.entry = side.function;
        optimized.target = &target;
        optimized.matmulEpilogues = options.matmulEpilogues;
        optimized.causalMatmuls = options.causalMatmuls;
        // The accumulate program holds the training step's activations: the
        // same memory budget (its recompute decisions are not reported).
        if (!eval)
          optimized.memoryBudget = trainingMemoryBudget();
        buildOptimizedPipeline(pm, optimized);
        ScheduledPipelineOptions scheduled;
        scheduled.entry = side.function;
        scheduled.role = side.symbols->role;
        scheduled.memoryReuse = options.memoryReuse;
        scheduled.matmulWorkspaceBytes = target.matmulWorkspaceBytes();
        buildScheduledPipeline(pm, scheduled);
        buildLoweredPipeline(pm, target);
      })))
    return failure();
  // The programs' kernels end up in one object: their names differ (each
  // role has its own kernel prefix), which a clash would contradict.
  SymbolTable symbols(*module);
  for (Operation &op : llvm::make_early_inc_range(*side.module->getBody())) {
    if (auto name =
            op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
      if (symbols.lookup(name))
        return op.emitError("symbol @")
               << name.getValue() << " of the " << side.symbols->role
               << " program is also one of the training program";
    op.moveBefore(module->getBody(), module->getBody()->end());
  }
  side.module = nullptr;
  return success();
}

LogicalResult Compilation::lowered(TimingScope &timing) {
  DialectRegistry registry;
  target.registerDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  if (failed(runPipeline(*module, timing, [&](OpPassManager &pm) {
        buildLoweredPipeline(pm, target);
      })))
    return failure();
  for (SideProgram &side : sidePrograms)
    if (failed(addSideProgram(side, timing)))
      return failure();
  sidePrograms.clear();
  if (!defaultData.empty())
    (*module)->setAttr(codegen::kDefaultDataAttr,
                       StringAttr::get(&context, defaultData));
  return verify(*module);
}

FailureOr<abi::StepProgram> Compilation::lowerStepProgram(TimingScope &timing) {
  OwningOpRef<ModuleOp> copy = module->clone();
  DialectRegistry registry;
  target.registerDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  TimingScope t = timing.nest("the binary's step program");
  if (failed(runPipeline(*copy, t, [&](OpPassManager &pm) {
        buildLoweredPipeline(pm, target);
      })))
    return failure();
  auto program = copy->lookupSymbol<sched::ProgramOp>(entry);
  if (!program)
    return emitError(fileLoc)
           << "no sched.program @" << entry << " after lowering";
  return codegen::buildStepProgram(program);
}

LogicalResult Compilation::dumpStepPrograms() {
  for (auto program : module->getOps<sched::ProgramOp>()) {
    FailureOr<abi::StepProgram> built = codegen::buildStepProgram(program);
    if (failed(built))
      return failure();
    StringRef role = program.getRole();
    std::string file = "step-program.json";
    std::string what =
        "the step program the runtime runs (docs/StepProgram.md)";
    if (role == StringRef(abi::kEvalProgram.role)) {
      file = "eval-step-program.json";
      what = "the evaluation step program (@eval_step: the forward pass "
             "without dropout, nothing updated)";
    } else if (role == StringRef(abi::kAccumulateProgram.role)) {
      file = "accumulate-step-program.json";
      what = "the accumulate step program (@accumulate_step: a micro-batch "
             "before a step's last, its gradients added to the accumulators)";
    }
    if (failed(dumper.writeSideFile(file, what,
                                    codegen::stepProgramJson(*built))))
      return failure();
  }
  return success();
}

LogicalResult Compilation::binary(TimingScope &timing) {
  return runPipeline(*module, timing, [&](OpPassManager &pm) {
    buildBinaryPipeline(pm, target);
  });
}

int Compilation::run() {
  context.loadDialect<sgraph::SGraphDialect, sched::ScheduleDialect,
                      func::FuncDialect>();
  DefaultTimingManager timingManager;
  timingManager.setEnabled(options.timings);
  TimingScope root = timingManager.getRootScope();
  Phase target = goal();
  if (target > kLastImplementedPhase) {
    emitError(fileLoc) << "phase '" << phaseName(target)
                       << "' is not available yet: this version of sinterc "
                          "compiles up to '"
                       << phaseName(kLastImplementedPhase) << "'";
    return 1;
  }
  {
    TimingScope t = root.nest(phaseName(Phase::Import));
    if (failed(load()))
      return 1;
  }
  if (options.bisectPasses) {
    passBisection = std::make_unique<interp::PassBisection>(options.bisectRtol);
    passBisection->record(StringRef(options.input).ends_with(".mlir")
                              ? "the input"
                              : "the importer",
                          phaseName(reached), *module);
  }
  if (failed(dumper.prepare()) ||
      failed(dumper.dump(*module, reached, phaseDescription(reached))))
    return 1;

  using Step = LogicalResult (Compilation::*)(TimingScope &);
  const std::pair<Phase, Step> phases[] = {
      {Phase::Training, &Compilation::training},
      {Phase::Optimized, &Compilation::optimized},
      {Phase::Scheduled, &Compilation::scheduled},
      {Phase::Lowered, &Compilation::lowered},
      {Phase::Binary, &Compilation::binary},
  };
  for (auto [phase, step] : phases) {
    if (phase > target)
      break;
    if (phase <= reached)
      continue;
    // The parameter table is @forward's, which later phases drop.
    if (options.summary && phase > Phase::Training)
      break;
    TimingScope t = root.nest(phaseName(phase));
    running = phase;
    if (failed((this->*step)(t)))
      return 1;
    reached = phase;
    if (failed(dumper.dump(*module, phase, phaseDescription(phase))))
      return 1;
    if (phase == Phase::Optimized && failed(dumper.writeFusionReport(*module)))
      return 1;
    if (phase == Phase::Lowered && failed(dumpStepPrograms()))
      return 1;
  }
  return finish(root);
}

int Compilation::finish(TimingScope &timing) {
  if (options.summary)
    return failed(printSummary(*module, llvm::outs())) ? 1 : 0;

  if (options.memoryReport) {
    auto program = module->lookupSymbol<sched::ProgramOp>(entry);
    if (!program) {
      emitError(fileLoc) << "--memory-report needs @" << entry
                         << " in the scheduled phase";
      return 1;
    }
    llvm::outs() << formatMemoryReport(program);
    return 0;
  }

  if (passBisection) {
    llvm::outs().flush();
    bool ok = succeeded(
        passBisection->run(entry, options.runInputs, fileLoc, llvm::outs()));
    // The first pass over, as IR to read side by side.
    auto [input, output] = passBisection->firstOverIR();
    if (input && output) {
      if (options.dumpDir.empty())
        llvm::outs() << "(--dump-dir=D writes the IR that pass was given "
                        "and the IR it made)\n";
      for (auto [ir, name, what] :
           {std::make_tuple(input, "bisect-input.mlir",
                            "the IR the first pass over its tolerance was "
                            "given"),
            std::make_tuple(output, "bisect-output.mlir",
                            "the IR the first pass over its tolerance "
                            "made")}) {
        std::string text;
        llvm::raw_string_ostream os(text);
        ir.print(os, OpPrintingFlags().enableDebugInfo());
        if (failed(dumper.writeSideFile(name, what, text)))
          return 1;
      }
      if (!options.dumpDir.empty())
        llvm::outs() << "the IR that pass was given and the IR it made: "
                        "*-bisect-input.mlir and *-bisect-output.mlir in "
                     << options.dumpDir << "\n";
    }
    llvm::outs().flush();
    return ok ? 0 : 1;
  }

  if (!options.bisectTrace.empty()) {
    // The step program the binary would run, from a copy lowered as the
    // binary's build lowers it: the trace must be of the same.
    FailureOr<abi::StepProgram> lowered = lowerStepProgram(timing);
    if (failed(lowered))
      return 1;
    RunOptions run;
    run.function = entry;
    run.inputs = options.runInputs;
    run.bisect = options.bisectTrace;
    run.bisectRtol = options.bisectRtol;
    run.bisectProgram = &*lowered;
    return failed(runFunction(*module, run)) ? 1 : 0;
  }
  // The reference interpreter runs any phase up to scheduled: kernel
  // regions run op by op, so pass invariance can be checked phase by phase.
  if (!options.runFunction.empty()) {
    if (reached > Phase::Scheduled) {
      emitError(fileLoc) << "--run needs --compile-to="
                         << phaseName(Phase::Scheduled) << " or earlier";
      return 1;
    }
    RunOptions run;
    run.function = options.runFunction;
    run.inputs = options.runInputs;
    run.output = options.runOutput;
    return failed(runFunction(*module, run)) ? 1 : 0;
  }

  if (reached == Phase::Binary) {
    if (options.output == "-") {
      emitError(fileLoc) << "the binary needs a file name: -o <train>";
      return 1;
    }
    StringRef out = options.output;
    TimingScope objectTiming = timing.nest("object");
    if (out.ends_with(".o"))
      return failed(target.emitObject(*module, out, objectTiming)) ? 1 : 0;
    llvm::SmallString<128> object;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("sinter-kernels", "o", object)) {
      emitError(fileLoc) << "cannot create a temporary file: " << ec.message();
      return 1;
    }
    bool ok = succeeded(target.emitObject(*module, object, objectTiming));
    objectTiming.stop();
    if (ok) {
      TimingScope linkTiming = timing.nest("link");
      ok = succeeded(target.linkExecutable(fileLoc, object, out));
    }
    llvm::sys::fs::remove(object);
    return ok ? 0 : 1;
  }

  std::string error;
  auto out = openOutputFile(options.output, &error);
  if (!out) {
    emitError(fileLoc) << error;
    return 1;
  }
  module->print(out->os());
  out->keep();
  return 0;
}

} // namespace

int sinter::runDriver(const DriverOptions &options, MLIRContext &context) {
  const codegen::Target *target = codegen::lookupTarget(options.target);
  if (!target) {
    emitError(FileLineColLoc::get(&context, options.input, 0, 0))
        << "--target=" << options.target
        << " is not a target; targets are: " << codegen::targetNames();
    return 1;
  }
  if (options.matmulEpilogues) {
    // A subset of what the target's matmul library runs: the rest would
    // make programs its executor refuses.
    std::vector<std::string> offered = target->matmulEpilogues();
    for (const std::string &e : *options.matmulEpilogues)
      if (e != "none" && !llvm::is_contained(offered, e)) {
        emitError(FileLineColLoc::get(&context, options.input, 0, 0))
            << "--matmul-epilogues: '" << e << "' is not an epilogue the "
            << options.target << " target's " << target->matmulLibrary()
            << " runs; it runs: " << llvm::join(offered, ",");
        return 1;
      }
  }
  return Compilation(options, context, *target).run();
}
