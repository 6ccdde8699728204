//===- PassBisect.cpp - the pipeline's passes held against one another ---===//

#include "compiler/Interpreter/PassBisect.h"

#include "compiler/Interpreter/Compare.h"
#include "compiler/Interpreter/Runnable.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

using namespace mlir;
using namespace sinter;
using namespace sinter::interp;

namespace {

class Recorder : public PassInstrumentation {
public:
  Recorder(PassBisection &bisection, StringRef phase)
      : bisection(bisection), phase(phase.str()) {}
  void runAfterPass(Pass *pass, Operation *op) override {
    // Nested passes leave the module to their parent pass's end.
    auto module = dyn_cast<ModuleOp>(op);
    if (!module || module->getParentOp())
      return;
    StringRef name = pass->getArgument();
    bisection.record(name.empty() ? pass->getName() : name, phase, module);
  }

private:
  PassBisection &bisection;
  std::string phase;
};

/// One copy's results held against the copy's before.
struct Row {
  /// The copy and the one it is held against (-1: none).
  int snapshot = -1, input = -1;
  std::string pass, phase;
  std::vector<std::string> unchanged;
  bool reference = false;
  /// Why it could not be compared ("" when it was).
  std::string problem;
  /// Per result: the difference from the copy before and from the
  /// reference.
  std::vector<std::pair<std::string, Difference>> before;
  Difference worstBefore, worstReference;
  std::string worstBeforeName;
  bool over() const {
    return !problem.empty() ||
           llvm::any_of(before, [](auto &d) { return d.second.over(); });
  }
};

std::string ratioText(const Difference &d, StringRef name) {
  if (d.nonFinite)
    return "NaN or infinity in '" + name.str() + "'";
  if (d.error == 0)
    return "bit for bit";
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::format("%.2g", d.error) << (d.counted ? " of '" : " in '")
      << name << "'" << (d.over() ? " OVER" : "");
  return text;
}

/// The result with the largest error against its tolerance (first on ties).
template <typename Range>
std::pair<std::string, Difference> worstOf(const Range &differences) {
  std::pair<std::string, Difference> worst;
  std::pair<double, double> largest{-1, -1};
  for (const auto &[name, d] : differences) {
    std::pair<double, double> key{d.ratio(), d.error};
    if (key > largest)
      largest = key, worst = {name, d};
  }
  return worst;
}

} // namespace

void PassBisection::record(StringRef pass, StringRef phase, ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  if (!snapshots.empty() && text == lastText) {
    snapshots.back().unchanged.push_back(pass.str());
    return;
  }
  lastText = std::move(text);
  snapshots.push_back(
      {pass.str(), phase.str(), OwningOpRef<ModuleOp>(module.clone()), {}});
}

std::pair<ModuleOp, ModuleOp> PassBisection::firstOverIR() const {
  if (firstOver < 0 || firstOverInput < 0)
    return {};
  return {*snapshots[firstOverInput].module, *snapshots[firstOver].module};
}

std::unique_ptr<PassInstrumentation>
PassBisection::instrumentation(StringRef phase) {
  return std::make_unique<Recorder>(*this, phase);
}

std::vector<std::pair<std::string, std::string>> PassBisection::passes() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Snapshot &s : snapshots)
    out.push_back({s.pass, s.phase});
  return out;
}

LogicalResult PassBisection::run(StringRef function,
                                 ArrayRef<std::string> inputs, Location loc,
                                 raw_ostream &os) {
  ProvidedTensors provided;
  if (failed(readInputs(inputs, loc, provided)))
    return failure();
  std::vector<Row> rows;
  std::optional<std::map<std::string, Tensor>> reference, previous;
  int previousSnapshot = -1;
  firstOver = firstOverInput = -1;
  // The results that are updated parameters (named as their arguments).
  std::set<std::string> parameters;
  // Whether the step updates parameters with Adam (its first step is what
  // magnifies rounding noise; see the header).
  bool adam = false;
  bool noted = false;
  // A large model takes minutes: on a terminal, a line as each copy runs.
  bool progress = llvm::errs().is_displayed();
  for (auto [index, s] : llvm::enumerate(snapshots)) {
    std::optional<Runnable> runnable = runnableOf(*s.module, function);
    if (!runnable && !reference)
      continue; // before the function exists
    if (progress && runnable)
      llvm::errs() << "[" << index + 1 << "/" << snapshots.size()
                   << "] running @" << function << " after " << s.pass << "\n";
    Row row{static_cast<int>(index), previousSnapshot, s.pass, s.phase,
            s.unchanged};
    if (!runnable) {
      row.problem = "the IR has no @" + function.str() + " any more";
      rows.push_back(std::move(row));
      continue;
    }
    uint64_t seed = modelSeed(*s.module);
    int initialized = 0;
    FailureOr<std::vector<Tensor>> args =
        assembleArguments(*runnable, function, provided, seed, initialized);
    if (failed(args))
      return failure(); // the inputs are wrong, not the pass
    if (initialized && !noted) {
      llvm::errs() << "note: " << initialized
                   << " parameter(s) not given were initialized from their "
                      "initializers (seed "
                   << seed << ")\n";
      noted = true;
    }
    FailureOr<std::vector<Tensor>> results = runnable->run(std::move(*args));
    if (failed(results)) {
      row.problem = "the interpreter cannot run it (the error above)";
      rows.push_back(std::move(row));
      continue;
    }
    std::map<std::string, Tensor> named;
    for (auto [name, t] : llvm::zip(runnable->resultNames, *results))
      named.emplace(name, std::move(t));
    if (!reference) {
      row.reference = true;
      rows.push_back(std::move(row));
      for (const ArgumentSpec &a : runnable->arguments)
        if (a.kind == abi::Argument::param)
          parameters.insert(a.name);
      s.module->walk([&](sgraph::AdamUpdateOp) { adam = true; });
      reference = named;
      previous = std::move(named);
      previousSnapshot = static_cast<int>(index);
      continue;
    }
    std::vector<std::pair<std::string, Difference>> againstReference;
    for (const auto &[name, t] : named) {
      auto was = previous->find(name);
      auto first = reference->find(name);
      if (was == previous->end() || first == reference->end() ||
          was->second.kind != t.kind || was->second.shape != t.shape) {
        row.problem = "its result '" + name +
                      "' is not one of the IR before's, or has another type";
        break;
      }
      row.before.push_back({name, compareTensors(was->second, t, rtol)});
      againstReference.push_back(
          {name, compareTensors(first->second, t, rtol)});
    }
    if (row.problem.empty() && named.size() != previous->size())
      row.problem = "it has " + std::to_string(named.size()) +
                    " results, the IR before " +
                    std::to_string(previous->size());
    if (row.problem.empty()) {
      auto [name, worst] = worstOf(row.before);
      row.worstBeforeName = name;
      row.worstBefore = worst;
      row.worstReference = worstOf(againstReference).second;
      // Kept as before a pass that was over: each pass is held against its
      // own input.
      previous = std::move(named);
      previousSnapshot = static_cast<int>(index);
    }
    rows.push_back(std::move(row));
  }
  warnUnused(provided, loc, function);
  if (rows.empty())
    return emitError(loc) << "no pass's IR has a function @" << function
                          << " to run; name it with --entry";
  const Row &ref = rows.front();
  if (rows.size() == 1)
    return emitError(loc) << "no pass after " << ref.pass << " changed @"
                          << function
                          << ": there is nothing to hold against it (is the "
                             "input compiled to the scheduled phase already?)";
  os << "bisect-passes: @" << function << " after each pass that changed "
     << "it, from " << ref.pass << " on (" << rows.size()
     << "), run by the reference interpreter on the same arguments; each "
        "pass's results held against its input's, normwise, tolerance ";
  if (rtol == 0)
    os << "0 (bit for bit)\n";
  else
    os << llvm::format("%.0e", rtol) << " for f32 and f64, "
       << llvm::format("%.0e", 10 * rtol) << " for bf16 and f16\n";
  std::vector<std::array<std::string, 3>> table;
  table.push_back(
      {"pass (phase)", "against its input", "against the reference"});
  for (const Row &r : rows) {
    std::array<std::string, 3> line{r.pass + " (" + r.phase + ")", "", ""};
    if (r.reference)
      line[1] = "the reference";
    else if (!r.problem.empty())
      line[1] = r.problem;
    else {
      line[1] = ratioText(r.worstBefore, r.worstBeforeName);
      if (r.worstReference.error == 0 && !r.worstReference.nonFinite)
        line[2] = "bit for bit";
      else if (r.worstReference.nonFinite)
        line[2] = "NaN or infinity";
      else
        llvm::raw_string_ostream(line[2])
            << llvm::format("%.2g", r.worstReference.error);
    }
    table.push_back(std::move(line));
    if (!r.unchanged.empty()) {
      std::string then = "  then, leaving the IR as it was:";
      for (const std::string &p : r.unchanged)
        then += " " + p;
      table.push_back({then, "", ""});
    }
  }
  size_t widths[2] = {0, 0};
  for (const auto &line : table)
    if (!line[1].empty())
      for (int c = 0; c < 2; ++c)
        widths[c] = std::max(widths[c], line[c].size());
  for (const auto &line : table) {
    std::string text = "  " + line[0];
    if (!line[1].empty())
      text += std::string(widths[0] - line[0].size() + 2, ' ') + line[1];
    if (!line[2].empty())
      text += std::string(widths[1] - line[1].size() + 2, ' ') + line[2];
    os << text << "\n";
  }
  std::vector<const Row *> over;
  for (const Row &r : rows)
    if (r.over())
      over.push_back(&r);
  if (over.empty()) {
    os << "every pass within its tolerance\n";
    return success();
  }
  const Row &first = *over.front();
  firstOver = first.snapshot;
  firstOverInput = first.input;
  os << "first pass over its tolerance: " << first.pass << " (" << first.phase
     << " phase)\n";
  if (!first.problem.empty())
    os << "  " << first.problem << "\n";
  // Its results over, the farthest first.
  std::vector<const std::pair<std::string, Difference> *> results;
  for (const auto &entry : first.before)
    if (entry.second.over())
      results.push_back(&entry);
  llvm::stable_sort(results, [](auto *a, auto *b) {
    return std::make_pair(a->second.ratio(), a->second.error) >
           std::make_pair(b->second.ratio(), b->second.error);
  });
  for (size_t k = 0; k < results.size() && k < 8; ++k)
    os << "  result '" << results[k]->first << "': "
       << describeDifference(results[k]->second, "this pass", "its input")
       << "\n";
  if (results.size() > 8)
    os << "  and " << results.size() - 8 << " more result(s) over\n";
  // Parameters over while every other result, the optimizer state among
  // them, is within: what Adam's first step makes of gradients that are
  // exactly 0 (PassBisect.h).
  if (adam && !results.empty() && llvm::all_of(results, [&](auto *r) {
        return parameters.count(r->first) > 0;
      }))
    os << "  only updated parameters are over: from zero optimizer state an "
          "Adam step divides the rounding noise of a gradient that is "
          "exactly 0 (an attention's key bias) by epsilon, which magnifies "
          "it; --entry=forward_grad holds the gradients themselves, and "
          "optimizer state given with --input keeps the noise small\n";
  os << over.size() << " pass(es) over their tolerance:";
  for (const Row *r : over)
    os << " " << r->pass;
  os << "\n";
  return failure();
}
