//===- Driver.cpp - sinterc as a library ---------------------------------===//

#include "compiler/Driver/Driver.h"

#include "compiler/CodeGen/CpuCodeGen.h"
#include "compiler/Importer/ImportModel.h"
#include "compiler/Interpreter/RunFunction.h"
#include "dialects/Graph/GraphOps.h"
#include "passes/Recompute.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace sinter;

namespace {

/// Writes numbered per-phase IR files and an index explaining them.
class PhaseDumper {
public:
  PhaseDumper(MLIRContext &context, StringRef dir)
      : context(context), dir(dir.str()) {}

  LogicalResult prepare() {
    if (dir.empty())
      return success();
    if (std::error_code ec = llvm::sys::fs::create_directories(dir))
      return emitError(UnknownLoc::get(&context))
             << dir << ": cannot create the dump directory: " << ec.message();
    index = "Sinter compilation dump: one file per phase, in order.\n";
    return success();
  }

  LogicalResult dump(ModuleOp module, Phase phase, StringRef what) {
    if (dir.empty())
      return success();
    std::string path =
        entryPath((phaseName(phase) + ".mlir").str(), what);
    if (failed(writeModule(module, path)))
      return failure();
    return writeIndex();
  }

  /// fusion.txt: every kernel with its ops and why each is there, and every
  /// op left outside a kernel with the reason.
  LogicalResult writeFusionReport(ModuleOp module) {
    if (dir.empty())
      return success();
    std::string text;
    llvm::raw_string_ostream os(text);
    module.walk([&](func::FuncOp fn) {
      os << "@" << fn.getName() << "\n";
      for (Operation &op : fn.getBody().front()) {
        if (auto fusion = dyn_cast<sgraph::FusionOp>(op)) {
          os << "  kernel " << fusion.getSymName() << " (" << fusion.getKind()
             << ", " << fusion.getInputs().size() << " inputs, "
             << fusion.getNumResults() << " outputs)\n";
          if (auto why = fusion->getAttrOfType<StringAttr>("sinter.fusion"))
            os << "    " << why.getValue() << "\n";
          for (Operation &inner : fusion.getBody().front())
            if (auto why = inner.getAttrOfType<StringAttr>("sinter.fusion"))
              if (!isa<sgraph::ConstantOp>(inner))
                os << "    " << inner.getName() << ": " << why.getValue()
                   << "\n";
          continue;
        }
        if (auto why = op.getAttrOfType<StringAttr>("sinter.fusion"))
          os << "  " << op.getName() << ": " << why.getValue() << "\n";
      }
    });
    return writeSideFile("fusion.txt",
                         "the fusion decisions: each kernel's ops and why",
                         text);
  }

  /// The path of a numbered side file (e.g. the memory report) written
  /// next to the phase that produces it, now listed in the index; empty
  /// without a dump directory.
  std::string sideFile(StringRef name, StringRef what) {
    if (dir.empty())
      return "";
    std::string path = entryPath(name, what);
    return succeeded(writeIndex()) ? path : "";
  }

  /// Writes a numbered side file with `text` (nothing without a dump
  /// directory).
  LogicalResult writeSideFile(StringRef name, StringRef what, StringRef text) {
    std::string path = sideFile(name, what);
    return path.empty() ? success() : writeFile(path, [&](raw_ostream &os) {
      os << text;
    });
  }

private:
  /// The next numbered file's path, entered in the index.
  std::string entryPath(StringRef name, StringRef what) {
    std::string file = llvm::formatv("{0:d2}-{1}", count++, name).str();
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, file);
    index += file + ": " + what.str() + "\n";
    return path.str().str();
  }

  LogicalResult writeIndex() {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, "index.txt");
    return writeFile(path, [&](raw_ostream &os) { os << index; });
  }

  LogicalResult writeFile(StringRef path,
                          llvm::function_ref<void(raw_ostream &)> write) {
    std::string error;
    auto out = openOutputFile(path, &error);
    if (!out)
      return emitError(UnknownLoc::get(&context)) << error;
    write(out->os());
    out->keep();
    return success();
  }

  LogicalResult writeModule(ModuleOp module, StringRef path) {
    // Dumps are meant to be re-parsed and diffed: locations on, nothing
    // elided.
    OpPrintingFlags flags;
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
    return writeFile(path, [&](raw_ostream &os) { module.print(os, flags); });
  }

  MLIRContext &context;
  std::string dir;
  std::string index;
  int count = 0;
};

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
    return "composite ops decomposed, kernel regions (sgraph.fusion) formed; "
           "every op's sinter.fusion says why it is where it is";
  case Phase::Scheduled:
    return "every tensor placed: sinter.buffers / sinter.buffer give slab "
           "and offset, sinter.step the order, sinter.memory the totals";
  case Phase::Lowered:
    return "kernels as linalg on memref views of the slabs; the step "
           "program is the module's sinter.program attribute, the "
           "evaluation program's (kernels sinter_eval_*) "
           "sinter.eval_program";
  case Phase::Binary:
    return "kernels in the LLVM dialect, as compiled into the object file";
  }
  llvm_unreachable("every phase has a description");
}

/// One line per parameter of @forward (name, aliases, shape, count, frozen)
/// and the totals.
LogicalResult printSummary(ModuleOp module, llvm::raw_ostream &os) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("--summary needs a module with @forward");
  struct Row {
    std::string name, shape;
    int64_t count;
    bool frozen;
  };
  std::vector<Row> rows;
  size_t nameWidth = 9, shapeWidth = 5;
  int64_t total = 0, frozen = 0;
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
    total += row.count;
    frozen += row.frozen ? row.count : 0;
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
  for (const Row &row : rows)
    os << llvm::left_justify(row.name, nameWidth) << "  "
       << llvm::left_justify(row.shape, shapeWidth) << "  "
       << llvm::right_justify(withCommas(row.count), 13)
       << (row.frozen ? "  frozen" : "") << "\n";
  os << "total: " << withCommas(total) << " parameters in " << rows.size()
     << " tensors (" << withCommas(total - frozen) << " trainable, "
     << withCommas(frozen) << " frozen)\n";
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

} // namespace

int sinter::runDriver(const DriverOptions &options, MLIRContext &context) {
  context.loadDialect<sgraph::SGraphDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(&context, options.input, 0, 0);

  // Without --compile-to, stop where the function to run is (if any), else
  // build the binary.
  Phase target = Phase::Binary;
  if (options.summary && !options.compileTo)
    target = Phase::Import;
  else if (options.memoryReport)
    target = Phase::Scheduled;
  else if (options.compileTo)
    target = *options.compileTo;
  else if (!options.runFunction.empty())
    target = options.runFunction == "train_step" ||
                     options.runFunction == "forward_grad" ||
                     options.runFunction == "eval_step"
                 ? Phase::Training
                 : Phase::Import;
  if (target > kLastImplementedPhase) {
    emitError(fileLoc) << "phase '" << phaseName(target)
                       << "' is not available yet: this version of sinterc "
                          "compiles up to '"
                       << phaseName(kLastImplementedPhase)
                       << "' (use --compile-to=" << phaseName(kLastImplementedPhase)
                       << " or --emit=" << phaseName(kLastImplementedPhase)
                       << ")";
    return 1;
  }

  // Phase 1: import (or read IR the user wrote).
  OwningOpRef<ModuleOp> module;
  bool isMlir = StringRef(options.input).ends_with(".mlir");
  Phase reached = Phase::Import;
  if (isMlir) {
    llvm::SourceMgr sourceMgr;
    std::string error;
    auto file = openInputFile(options.input, &error);
    if (!file) {
      emitError(fileLoc) << "cannot read the file: " << error;
      return 1;
    }
    sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return 1;
    // A module that already has the function to compile (or a training
    // step) is past autodiff.
    if (module->lookupSymbol(options.entry) ||
        module->lookupSymbol("train_step") ||
        module->lookupSymbol("forward_grad"))
      reached = Phase::Training;
    else if (!module->lookupSymbol("forward") && target > Phase::Training) {
      std::string names;
      for (auto fn : module->getOps<func::FuncOp>())
        names += (names.empty() ? "" : ", ") + fn.getName().str();
      emitError(fileLoc) << "no function @" << options.entry
                         << " to compile (the module has: "
                         << (names.empty() ? "none" : names)
                         << "); name it with --entry";
      return 1;
    }
  } else {
    ImportOptions importOptions;
    importOptions.batchSize = options.batchSize;
    importOptions.recompute = options.recompute;
    module = importModelFile(options.input, context, importOptions);
    if (!module)
      return 1;
  }

  // Where the binary looks for data by default (model files only).
  std::string defaultData;
  if (!isMlir && options.input != "-" && module->getSymName())
    defaultData = defaultDataFolder(options.input, *module->getSymName());

  PhaseDumper dumper(context, options.dumpDir);
  if (failed(dumper.prepare()) ||
      failed(dumper.dump(*module, reached, phaseDescription(reached))))
    return 1;

  // Phase 2: training.
  if (reached < Phase::Training && target >= Phase::Training) {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return 1;
    TrainingPipelineOptions training;
    training.gradientsOnly = options.entry == "forward_grad" ||
                             options.runFunction == "forward_grad";
    training.evalStep = true;
    // The binary's trainer sets the peak learning rate at run time.
    training.runtimeLr = options.runtimeLr.value_or(target == Phase::Binary);
    buildTrainingPipeline(pm, training);
    if (failed(pm.run(*module)))
      return 1;
    reached = Phase::Training;
    if (failed(dumper.dump(*module, reached, phaseDescription(reached))))
      return 1;
  }

  if (options.summary)
    return failed(printSummary(*module, llvm::outs())) ? 1 : 0;

  // @eval_step is compiled on its own (from a copy with nothing else), so
  // that the training step's pipeline and dumps are what they would be
  // without it; it becomes the binary's evaluation program.
  OwningOpRef<ModuleOp> evalModule;
  if (target >= Phase::Optimized && options.entry != "eval_step" &&
      options.runFunction != "eval_step")
    if (auto eval = module->lookupSymbol<func::FuncOp>("eval_step")) {
      if (target >= Phase::Lowered)
        evalModule = cloneWithOnly(*module, "eval_step");
      eval.erase();
    }

  // Phase 3: optimized.
  if (target >= Phase::Optimized && reached < Phase::Optimized) {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return 1;
    OptimizedPipelineOptions optimized;
    optimized.entry = options.entry;
    optimized.memoryBudget = options.memoryBudget.empty() &&
                                     options.recompute == "none"
                                 ? "none"
                                 : options.memoryBudget;
    if (recomputeRequested(*module, options.entry, optimized.memoryBudget))
      optimized.recomputeReport = dumper.sideFile(
          "recompute.txt", "the recompute decisions: every recomputed value "
                           "with its reason and cost, memory before and after");
    buildOptimizedPipeline(pm, optimized);
    if (failed(pm.run(*module)))
      return 1;
    reached = Phase::Optimized;
    if (failed(dumper.dump(*module, reached, phaseDescription(reached))) ||
        failed(dumper.writeFusionReport(*module)))
      return 1;
  }

  // Phase 4: scheduled.
  if (target >= Phase::Scheduled && reached < Phase::Scheduled) {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return 1;
    std::string report = dumper.sideFile(
        "memory-plan.txt", "the memory plan: slabs, arena peak by category, "
                           "saving from reuse, the largest buffers");
    buildScheduledPipeline(pm, options.entry, report, options.memoryReuse);
    if (failed(pm.run(*module)))
      return 1;
    reached = Phase::Scheduled;
    if (failed(dumper.dump(*module, reached, phaseDescription(reached))))
      return 1;
  }

  if (options.memoryReport) {
    if (auto fn = module->lookupSymbol<func::FuncOp>(options.entry);
        fn && reached >= Phase::Scheduled) {
      llvm::outs() << formatMemoryReport(fn);
      return 0;
    }
    emitError(fileLoc) << "--memory-report needs @" << options.entry
                       << " in the scheduled phase";
    return 1;
  }

  // The reference interpreter runs any phase up to scheduled: kernel
  // regions run op by op, so pass invariance can be checked phase by phase.
  if (!options.runFunction.empty()) {
    if (target > Phase::Scheduled) {
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

  // Phase 5: lowered (a new module: kernels + step program).
  if (target >= Phase::Lowered) {
    DialectRegistry registry;
    codegen::registerCpuCodeGenDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    auto lowered = codegen::lowerStep(*module, options.entry);
    if (failed(lowered))
      return 1;
    module = std::move(*lowered);
    // The evaluation program: the optimized and scheduled phases on
    // @eval_step alone, lowered with kernels of their own names.
    if (evalModule) {
      PassManager pm(&context);
      if (failed(applyPassManagerCLOptions(pm)))
        return 1;
      buildOptimizedPipeline(pm);
      buildScheduledPipeline(pm, "eval_step", /*report=*/"",
                             options.memoryReuse);
      if (failed(pm.run(*evalModule)))
        return 1;
      auto evalLowered = codegen::lowerStep(*evalModule, "eval_step",
                                            codegen::kEvalSymbolPrefix);
      if (failed(evalLowered) ||
          failed(codegen::addEvalProgram(*module, **evalLowered)))
        return 1;
    }
    if (!defaultData.empty())
      (*module)->setAttr(codegen::kDefaultDataAttr,
                         StringAttr::get(&context, defaultData));
    if (failed(verify(*module)))
      return 1;
    if (failed(dumper.dump(*module, Phase::Lowered,
                           phaseDescription(Phase::Lowered))))
      return 1;
    if (failed(dumper.writeSideFile(
            "step-program.json",
            "the step program the runtime runs (docs/StepProgram.md)",
            (*module)
                ->getAttrOfType<StringAttr>(codegen::kProgramAttr)
                .getValue())))
      return 1;
    if (auto eval =
            (*module)->getAttrOfType<StringAttr>(codegen::kEvalProgramAttr))
      if (failed(dumper.writeSideFile(
              "eval-step-program.json",
              "the evaluation step program (@eval_step: the forward pass "
              "without dropout, nothing updated)",
              eval.getValue())))
        return 1;
    if (target == Phase::Binary) {
      if (failed(codegen::lowerToLLVM(*module)))
        return 1;
      if (failed(dumper.dump(*module, Phase::Binary,
                             phaseDescription(Phase::Binary))))
        return 1;
    }
    reached = target;
  }

  if (target == Phase::Binary) {
    if (options.output == "-") {
      emitError(fileLoc) << "the binary needs a file name: -o <train>";
      return 1;
    }
    StringRef out = options.output;
    if (out.ends_with(".o"))
      return failed(codegen::emitObject(*module, out)) ? 1 : 0;
    llvm::SmallString<128> object;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "sinter-kernels", "o", object)) {
      emitError(fileLoc) << "cannot create a temporary file: " << ec.message();
      return 1;
    }
    bool ok = succeeded(codegen::emitObject(*module, object)) &&
              succeeded(codegen::linkExecutable(fileLoc, object, out));
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
