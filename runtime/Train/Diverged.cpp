//===- Diverged.cpp - where a run's first non-finite value began ----------===//
//
// When a step's loss or global norm is not finite (and loss scaling did not
// skip it), the trainer does not stop at "the loss is nan": it goes back to
// the last good state (the last checkpoint this run saved, else the state
// the run began from: its --resume checkpoint, --init file or
// initializers, with the data position and loss scale of then), runs the
// same steps again with every step's buffers checked (Executor's checked
// mode; exec::findFault walks back to the step that made the first
// non-finite value from finite ones), and names that op, its layer and
// place in the model file, and its inputs' ranges. Resume is bit-exact, so
// the re-run computes the same values. It costs the steps since that
// state, each about twice as slow as a plain one.
//
// --check-numerics checks every step as it runs instead, and stops at the
// first fault with the same report.
//
//===----------------------------------------------------------------------===//

#include "runtime/Train/Run.h"

#include "runtime/Exec/Numerics.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cstring>

namespace sinter::train::detail {

namespace sabi = sinter::abi;

namespace {

/// One line for the error: the op when one alone can have made the values,
/// else the step and its layers; or the argument that already held them.
std::string headline(const exec::StepProgram &p, const exec::Fault &f) {
  std::string report = exec::describeFault(p, f);
  if (f.step < 0)
    return report.substr(0, report.find('\n'));
  std::string made = f.value.nan ? "NaN" : "an infinity";
  std::string at = absl::StrFormat("program step %d of %s", f.step, p.function);
  if (std::optional<std::string> received = exec::receivedFault(p, f))
    return absl::StrFormat("%s (%s)", *received, at);
  std::vector<const exec::Origin *> ops = exec::suspects(p, f);
  if (ops.size() == 1)
    return absl::StrFormat("%s made %s from finite inputs (%s)",
                           exec::describeOrigin(*ops.front()), made, at);
  const exec::Step &s = p.steps[static_cast<size_t>(f.step)];
  std::vector<std::string> layers;
  for (const exec::Origin &o : s.origins) {
    std::string layer =
        exec::describeOrigin({"", o.layer, o.file, o.line, o.column});
    if (!o.layer.empty() &&
        std::find(layers.begin(), layers.end(), layer) == layers.end())
      layers.push_back(layer);
  }
  std::string kind(sabi::stepKindName(s.kind));
  if (s.kind == sabi::Step::kKernel)
    kind =
        absl::StrCat("kernel ", p.kernels[static_cast<size_t>(s.kernel)].name);
  return absl::StrFormat("%s (%s%s%s) made %s from finite inputs", at, kind,
                         layers.empty() ? "" : ": ",
                         absl::StrJoin(layers, ", "), made);
}

} // namespace

std::optional<std::string> Run::onlyIgnoredLabels() const {
  for (auto [buffer, index] : trainUploads) {
    const Argument *a = nullptr;
    for (const Argument &arg : ex.program().arguments)
      if (arg.buffer == buffer)
        a = &arg;
    if (!a || !a->ignore)
      continue;
    abi::DType type = ex.program().buffers[buffer].type;
    if (type != sabi::ElementType::i64 && type != sabi::ElementType::i32)
      continue;
    size_t width = type == sabi::ElementType::i64 ? 8 : 4;
    const std::vector<unsigned char> &bytes = hostBatch[index];
    size_t perPart = bytes.size() / width / static_cast<size_t>(micro);
    for (int64_t k = 0; k < micro; ++k) {
      bool all = perPart > 0;
      for (size_t i = 0; i < perPart && all; ++i)
        all = labelAt(bytes, width == 8, k * perPart + i) == *a->ignore;
      if (all)
        return absl::StrFormat(
            "every label of input %s in %s is the ignore index %d, so the "
            "mean cross-entropy averages over no positions (0/0 is NaN): "
            "drop the examples that have no labels from --data",
            formats::quoteForMessage(a->name),
            micro > 1 ? absl::StrFormat("micro-batch %d of the batch", k + 1)
                      : std::string("the batch"),
            *a->ignore);
    }
  }
  return std::nullopt;
}

void Run::checkRun(const Executor &runner, int64_t step, int64_t k) {
  if (stepFault)
    return;
  std::optional<exec::Fault> fault =
      exec::findFault(runner.program(), runner.numerics());
  if (!fault)
    return;
  std::string where = absl::StrFormat("training step %d", step + 1);
  if (micro > 1)
    absl::StrAppend(&where,
                    absl::StrFormat(" (micro-batch %d of %d)", k + 1, micro));
  if (dp->distributed())
    absl::StrAppend(&where, absl::StrFormat(" on rank %d", dp->rank()));
  std::string data = dataOutlier(runner.program(), *fault, k);
  stepFault = StepFault{
      absl::StrCat(where, ": ", headline(runner.program(), *fault),
                   data.empty() ? "" : "; the data: ", data),
      absl::StrCat("the first non-finite value of ", where, ": ",
                   exec::describeFault(runner.program(), *fault),
                   data.empty() ? "" : "\n  the data: ", data)};
}

std::string Run::dataOutlier(const exec::StepProgram &program,
                             const exec::Fault &fault, int64_t k) const {
  if (fault.step < 0 || fault.value.firstBad < 0 || microRows <= 0)
    return "";
  // The row of the micro-batch where the values went bad, when the bad
  // buffer is one row per example.
  const exec::Buffer &bad = program.buffers[fault.value.buffer];
  if (bad.shape.empty() || bad.shape[0] != microRows ||
      bad.numElements % microRows != 0)
    return "";
  int64_t perRow = bad.numElements / microRows;
  int64_t rows = micro * microRows; // the loader's batch
  int64_t row = k * microRows + fault.value.firstBad / perRow;
  for (auto [buffer, index] : trainUploads) {
    if (ex.program().buffers[buffer].type != sabi::ElementType::f32)
      continue;
    const std::vector<unsigned char> &bytes = hostBatch[index];
    size_t perInputRow = bytes.size() / 4 / static_cast<size_t>(rows);
    double mine = 0, others = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (size_t i = 0; i < perInputRow; ++i) {
        float v;
        std::memcpy(&v, &bytes[(r * perInputRow + i) * 4], 4);
        double &largest = r == row ? mine : others;
        largest = std::max(largest, std::fabs(static_cast<double>(v)));
      }
    // Ten times the rest of the batch: an outlier, not the data's spread.
    if (!(mine > 10 * others) || rows < 2)
      continue;
    std::string name;
    for (const Argument &a : ex.program().arguments)
      if (a.buffer == buffer)
        name = a.name;
    std::string source = loader->describeTrainRow(batchState, row);
    return absl::StrFormat(
        "%s (row %d of the batch) holds an outlier: its input %s reaches %g "
        "in magnitude, the batch's other rows at most %g",
        source.empty() ? "an example" : source, row,
        formats::quoteForMessage(name), mine, others);
  }
  return "";
}

absl::Status Run::diverged(int64_t step, const std::string &what) {
  std::string recovery =
      lastCheckpoint.empty() ? "none" : opt.save + "/" + lastCheckpoint;
  auto fail = [&](const std::string &found) {
    return sinter::DataLossError(
        SINTER_HERE,
        absl::StrFormat("%s%straining diverged at step %d; %s; the last "
                        "checkpoint is %s",
                        what, what.empty() ? "" : ": ", step + 1, found,
                        recovery));
  };
  // Not a divergence: a batch with nothing to learn from.
  std::optional<std::string> ignored = onlyIgnoredLabels();
  std::vector<double> any = {ignored ? 1.0 : 0.0};
  if (dp->distributed())
    SINTER_RETURN_IF_ERROR(
        dp->averageOverRanks(any, "whether a batch had only ignored labels"));
  if (any[0] > 0)
    return sinter::DataLossError(
        SINTER_HERE,
        absl::StrFormat(
            "%s at step %d: %s", what.empty() ? "non-finite values" : what,
            step + 1,
            ignored ? *ignored
                    : std::string("another rank's batch has only labels that "
                                  "are the ignore index (its error says "
                                  "which)")));
  if (stepFault) {
    // Checked already: --check-numerics.
    progress->finish();
    progress->note(stepFault->report);
    return fail(
        absl::StrCat("the first non-finite value: ", stepFault->headline));
  }

  // The last good state.
  std::optional<Checkpoint> from;
  std::string source;
  int64_t first = startStep;
  if (!lastCheckpoint.empty()) {
    source = opt.save + "/" + lastCheckpoint;
    SINTER_ASSIGN_OR_RETURN(Checkpoint c, loadCheckpoint(source));
    from = std::move(c);
    first = from->state.step;
  } else if (resumed) {
    source = opt.resume;
    from = *resumed;
  }
  progress->finish();
  progress->note(absl::StrFormat(
      "%s at step %d: re-running steps %d to %d from %s with every step's "
      "values checked, to find where the non-finite values began",
      what.empty() ? "non-finite values" : what, step + 1, first + 1, step + 1,
      from ? source : "the start of this run"));

  if (from) {
    SINTER_RETURN_IF_ERROR(restoreState(*from, source, /*notes=*/false));
  } else {
    for (sabi::ArgumentKind kind :
         {sabi::Argument::opt_state, sabi::Argument::accumulator})
      for (const Argument *a : argumentsOf(ex, kind))
        SINTER_RETURN_IF_ERROR(ex.zeroBuffer(a->buffer));
    SINTER_RETURN_IF_ERROR(prepareParameters(/*notes=*/false));
  }
  bool sameData = !from || from->state.data == dataSpec;
  SINTER_RETURN_IF_ERROR(loader->restore(
      from && sameData ? from->state.dataState : initialDataState));
  if (scaler)
    scaler->state =
        from && from->state.lossScale ? *from->state.lossScale : *initialScale;

  checking = true;
  for (Executor *e : {&ex, acc})
    if (e)
      e->setCheckNumerics(true);
  std::optional<StepFault> found;
  for (int64_t s = first; s <= step; ++s) {
    batchState = loader->state();
    SINTER_RETURN_IF_ERROR(loader->nextTrain(hostBatchPointers));
    dp->setStep(s);
    if (scaler)
      SINTER_RETURN_IF_ERROR(setLossScale());
    stepFault.reset();
    std::vector<std::pair<std::string, double>> m;
    SINTER_RETURN_IF_ERROR(runStep(s, m));
    SINTER_RETURN_IF_ERROR(
        averageMetrics(m, nullptr, "the mean of the step's metrics"));
    bool skipped = false;
    if (scaler) {
      absl::Status ignored;
      skipped = recordLossScale(s, m, ignored);
    }
    // A skipped step's overflow is loss scaling at work, not the fault.
    if (stepFault && !skipped && !found)
      found = stepFault;
    // Every rank re-runs every step: the collectives must match.
    if (found && !dp->distributed())
      break;
  }
  stepFault = std::move(found);
  if (!stepFault)
    return fail(absl::StrFormat(
        "re-running steps %d to %d found no non-finite value (the steps did "
        "not compute the same values again: a nondeterministic input, or a "
        "hardware fault)",
        first + 1, step + 1));
  progress->note(stepFault->report);
  return fail(
      absl::StrCat("the first non-finite value: ", stepFault->headline));
}

} // namespace sinter::train::detail
