//===- Driver.cpp - sinterc as a library ---------------------------------===//

#include "compiler/Driver/Driver.h"

#include "compiler/Importer/ImportModel.h"
#include "compiler/Interpreter/RunFunction.h"
#include "dialects/Graph/GraphOps.h"

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
    llvm::SmallString<128> path(dir);
    std::string file = llvm::formatv("{0:d2}-{1}.mlir", count++,
                                     phaseName(phase))
                           .str();
    llvm::sys::path::append(path, file);
    if (failed(writeModule(module, path)))
      return failure();
    index += file + ": " + what.str() + "\n";
    llvm::SmallString<128> indexPath(dir);
    llvm::sys::path::append(indexPath, "index.txt");
    std::string error;
    auto out = openOutputFile(indexPath, &error);
    if (!out)
      return emitError(UnknownLoc::get(&context)) << error;
    out->os() << index;
    out->keep();
    return success();
  }

  LogicalResult writeModule(ModuleOp module, StringRef path) {
    std::string error;
    auto out = openOutputFile(path, &error);
    if (!out)
      return emitError(UnknownLoc::get(&context)) << error;
    // Dumps are meant to be re-parsed and diffed: locations on, nothing
    // elided.
    OpPrintingFlags flags;
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
    module.print(out->os(), flags);
    out->keep();
    return success();
  }

private:
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
           "learning-rate schedule and optimizer updates";
  default:
    return "";
  }
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

} // namespace

int sinter::runDriver(const DriverOptions &options, MLIRContext &context) {
  context.loadDialect<sgraph::SGraphDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(&context, options.input, 0, 0);

  // Without --compile-to, stop where the function to run is (if any), else
  // build the binary.
  Phase target = Phase::Binary;
  if (options.summary && !options.compileTo)
    target = Phase::Import;
  else if (options.compileTo)
    target = *options.compileTo;
  else if (!options.runFunction.empty())
    target = options.runFunction == "train_step" ? Phase::Training
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
    if (module->lookupSymbol("train_step"))
      reached = Phase::Training;
  } else {
    ImportOptions importOptions;
    importOptions.batchSize = options.batchSize;
    module = importModelFile(options.input, context, importOptions);
    if (!module)
      return 1;
  }

  PhaseDumper dumper(context, options.dumpDir);
  if (failed(dumper.prepare()) ||
      failed(dumper.dump(*module, reached, phaseDescription(reached))))
    return 1;

  // Phase 2: training.
  if (reached < Phase::Training && target >= Phase::Training) {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return 1;
    buildTrainingPipeline(pm);
    if (failed(pm.run(*module)))
      return 1;
    reached = Phase::Training;
    if (failed(dumper.dump(*module, reached, phaseDescription(reached))))
      return 1;
  }

  if (options.summary)
    return failed(printSummary(*module, llvm::outs())) ? 1 : 0;

  if (!options.runFunction.empty()) {
    RunOptions run;
    run.function = options.runFunction;
    run.inputs = options.runInputs;
    run.output = options.runOutput;
    return failed(runFunction(*module, run)) ? 1 : 0;
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
