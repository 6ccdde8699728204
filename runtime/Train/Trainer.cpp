//===- Trainer.cpp - the training loop of the binary ----------------------===//

#include "runtime/Train/Trainer.h"

#include "runtime/Train/DataParallel.h"
#include "runtime/Train/Run.h"

#include "absl/strings/numbers.h"

#include "runtime/Data/DataLoader.h"
#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Formats/SafeTensors.h"
#include "runtime/Support/Status.h"
#include "runtime/Train/Checkpoint.h"
#include "runtime/Train/Interrupts.h"
#include "runtime/Train/Progress.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <unistd.h>

using namespace sinter;
using namespace sinter::train;
namespace sabi = sinter::abi;
using exec::Argument;
using exec::Executor;
using exec::Result;
using sabi::ArgumentKind;
using sabi::DType;
using sabi::ResultKind;

namespace sinter::train::detail {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<std::vector<std::pair<std::string, double>>>
readMetrics(const Executor &ex) {
  std::vector<std::pair<std::string, double>> out;
  for (const Result &r : ex.program().results)
    if (r.kind == sabi::Result::metric) {
      SINTER_ASSIGN_OR_RETURN(double value, ex.scalarValue(r.buffer));
      out.push_back({r.name, value});
    }
  return out;
}

std::optional<double> find(const std::vector<std::pair<std::string, double>> &m,
                           std::string_view name) {
  for (const auto &[n, v] : m)
    if (n == name)
      return v;
  return std::nullopt;
}

std::vector<const Argument *> argumentsOf(const Executor &ex,
                                          sabi::ArgumentKind kind) {
  std::vector<const Argument *> out;
  for (const Argument &a : ex.program().arguments)
    if (a.kind == kind)
      out.push_back(&a);
  return out;
}

/// The arguments of `kind` as tensors to save, read out of their buffers
/// a piece at a time.
absl::StatusOr<formats::SafeTensorsSources> sources(const Executor &ex,
                                                   sabi::ArgumentKind kind) {
  formats::SafeTensorsSources file;
  for (const Argument *a : argumentsOf(ex, kind)) {
    SINTER_ASSIGN_OR_RETURN(formats::TensorSource tensor,
                            ex.bufferSource(a->buffer, a->name));
    file.tensors.push_back(std::move(tensor));
  }
  return file;
}

/// PyTorch's `<layer>.num_batches_tracked` of a batch_norm layer (one with
/// a `<layer>.running_mean` buffer): a batch counter that batch_norm with a
/// momentum does not read, so a state_dict saved from torch.nn loads.
bool isBatchCounter(const Executor &ex, sabi::ArgumentKind kind,
                    std::string_view name) {
  constexpr std::string_view suffix = ".num_batches_tracked";
  if (kind != sabi::Argument::param || name.size() <= suffix.size() ||
      name.substr(name.size() - suffix.size()) != suffix)
    return false;
  std::string layer(name.substr(0, name.size() - suffix.size()));
  const Argument *mean = ex.program().findArgument(layer + ".running_mean");
  return mean && mean->kind == sabi::Argument::param;
}

absl::StatusOr<int64_t> restore(Executor &ex, sabi::ArgumentKind kind,
                                const formats::SafeTensorsFile &file,
                                std::string_view fileName, bool requireAll,
                                std::vector<std::string> *missing) {
  std::vector<std::string> unknown;
  std::map<const Argument *,
           const std::pair<std::string, formats::HostTensor> *>
      given;
  for (const auto &entry : file.tensors) {
    const Argument *a = ex.program().findArgument(entry.first);
    if ((!a || a->kind != kind) && isBatchCounter(ex, kind, entry.first))
      continue;
    if (!a || a->kind != kind) {
      unknown.push_back(formats::quoteForMessage(entry.first));
      continue;
    }
    auto [it, inserted] = given.try_emplace(a, &entry);
    if (!inserted)
      return formats::formatError(
          SINTER_HERE, fileName,
          absl::StrCat("tensors ", formats::quoteForMessage(it->second->first),
                       " and ", formats::quoteForMessage(entry.first),
                       " are the same tied parameter; keep one"));
  }
  if (!unknown.empty())
    return formats::formatError(
        SINTER_HERE, fileName,
        absl::StrFormat(
            "%d tensor(s) match no %s of this model: %s", unknown.size(),
            sabi::argumentKindName(kind),
            absl::StrJoin(unknown.begin(),
                          unknown.begin() + std::min<size_t>(unknown.size(), 8),
                          ", ")));
  int64_t set = 0;
  for (const Argument *a : argumentsOf(ex, kind)) {
    auto it = given.find(a);
    if (it == given.end()) {
      if (requireAll)
        return formats::formatError(
            SINTER_HERE, fileName,
            absl::StrCat("has no tensor for ",
                         formats::toAbsl(sabi::argumentKindName(kind)), " ",
                         formats::quoteForMessage(a->name)));
      if (missing)
        missing->push_back(a->name);
      continue;
    }
    SINTER_RETURN_IF_ERROR(ex.writeBuffer(
        a->buffer, it->second->second,
        absl::StrCat(formats::toAbsl(fileName), ": tensor ",
                     formats::quoteForMessage(it->second->first))));
    ++set;
  }
  return set;
}

/// --debug-fault=drift@N: flips the lowest bit of the first parameter's
/// first element, as a memory error or a skipped collective would make one
/// rank's model differ.
absl::Status perturbFirstParameter(Executor &ex) {
  std::vector<const Argument *> params = argumentsOf(ex, sabi::Argument::param);
  if (params.empty())
    return absl::OkStatus();
  const exec::Buffer &b = ex.program().buffers[params.front()->buffer];
  std::vector<unsigned char> bytes(static_cast<size_t>(b.bytes));
  SINTER_RETURN_IF_ERROR(
      ex.download(params.front()->buffer, bytes.data(), bytes.size()));
  if (!bytes.empty())
    bytes[0] ^= 1;
  return ex.upload(params.front()->buffer, bytes.data(), bytes.size());
}


absl::Status Run::setLossScale() {
  for (Executor *e : {&ex, acc})
    if (e && e->program().findArgument(sabi::kLossScaleHyper))
      SINTER_RETURN_IF_ERROR(
          e->setHyper(sabi::kLossScaleHyper, scaler->state.scale));
  return absl::OkStatus();
}

bool Run::recordLossScale(int64_t step,
                          std::vector<std::pair<std::string, double>> &m,
                          absl::Status &stop) {
  // The program skipped the update where its global norm (of the
  // all-reduced gradients: every rank's alike) is not finite.
  std::optional<double> norm = find(m, "grad_norm");
  std::optional<double> loss = find(m, "loss");
  bool skipped = !norm || !std::isfinite(*norm) || !loss ||
                 !std::isfinite(*loss);
  double used = scaler->state.scale;
  bool tooMany = scaler->record(skipped);
  m.push_back({"loss_scale", used});
  m.push_back({"skipped", skipped ? 1.0 : 0.0});
  if (tooMany)
    stop = sinter::DataLossError(
        SINTER_HERE,
        absl::StrFormat(
            "steps %d to %d all overflowed (%d in a row, "
            "loss_scale.max_consecutive_overflows), the loss scale is now %g: "
            "the model's values overflow whatever the scale (check the data "
            "and lower --lr); the last checkpoint is %s",
            step + 2 - scaler->state.consecutiveOverflows, step + 1,
            scaler->state.consecutiveOverflows, scaler->state.scale,
            lastCheckpoint.empty() ? "none" : opt.save + "/" + lastCheckpoint));
  return skipped;
}

absl::Status Run::prepareData() {
  std::vector<data::InputSpec> specs;
  for (const Argument *a : argumentsOf(ex, sabi::Argument::input)) {
    const exec::Buffer &b = ex.program().buffers[a->buffer];
    if (b.shape.empty())
      return sinter::InvalidArgumentError(
          SINTER_HERE, absl::StrCat("input ", formats::quoteForMessage(a->name),
                                    " has no batch dimension; this binary "
                                    "cannot be fed from --data"));
    // The loader reads this rank's K micro-batches as one batch of K x B.
    std::vector<int64_t> shape = b.shape;
    shape.front() *= micro;
    specs.push_back({a->name, exec::toDType(b.type), shape, a->bound,
                     a->ignore});
    trainUploads.push_back({a->buffer, hostBatch.size()});
    hostBatch.emplace_back(static_cast<size_t>(b.bytes * micro));
  }
  for (std::vector<unsigned char> &input : hostBatch)
    hostBatchPointers.push_back(input.data());
  if (specs.empty())
    return sinter::InvalidArgumentError(
        SINTER_HERE, "the step program has no model inputs to feed");
  int64_t batch = microRows = specs.front().shape.front() / micro;
  if (opt.batchSize && *opt.batchSize != batch)
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrFormat("--batch-size=%d: this binary was "
                                     "compiled for batch size %d (shapes "
                                     "are static); recompile with `sinterc "
                                     "MODEL --batch-size=%d -o ...`",
                                     *opt.batchSize, batch, *opt.batchSize));
  const auto &first = specs.front();
  bool tokens = specs.size() == 2 && first.shape.size() == 2 &&
                (first.dtype == formats::DType::I64 ||
                 first.dtype == formats::DType::I32);
  // Throughput counts the global batch (every micro-batch of every rank).
  itemsPerStep =
      (tokens ? first.shape[0] * first.shape[1] : batch * micro) *
      dp->worldSize();
  unit = tokens ? "tok" : "samples";

  // The same host batch feeds the input of the same name of the eval and
  // accumulate programs.
  for (auto [other, uploads, what] :
       {std::tuple{eval, &evalUploads, "eval"},
        std::tuple{micro > 1 ? acc : nullptr, &accUploads, "accumulate"}}) {
    if (!other)
      continue;
    for (const Argument *a : argumentsOf(*other, sabi::Argument::input)) {
      const Argument *t = ex.program().findArgument(a->name);
      if (!t || t->kind != sabi::Argument::input ||
          ex.program().buffers[t->buffer].shape !=
              other->program().buffers[a->buffer].shape)
        return sinter::InternalError(
            SINTER_HERE,
            absl::StrCat("the ", what, " program's input ",
                         formats::quoteForMessage(a->name),
                         " does not match the training program's"));
      for (auto [buffer, index] : trainUploads)
        if (buffer == t->buffer)
          uploads->push_back({a->buffer, index});
    }
    if (uploads->size() != trainUploads.size())
      return sinter::InternalError(
          SINTER_HERE, absl::StrCat("the ", what,
                                    " program's inputs differ from the "
                                    "training program's"));
  }

  dataSpec = opt.data;
  if (dataSpec.empty() && resumed)
    dataSpec = resumed->state.data;
  if (dataSpec.empty())
    dataSpec = opt.defaultData;
  if (dataSpec.empty())
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        "no --data given and this binary has no bundled dataset; pass "
        "--data=FILE|DIR (docs/Data.md)");
  data::LoaderOptions lo;
  lo.seed = seed;
  // Rank r reads rows [r·B, (r+1)·B) of the global batch of W·B.
  lo.rank = opt.debugFault == "same-data" ? 0 : dp->rank();
  lo.worldSize = dp->worldSize();
  lo.prefetch = true;
  // Token ids index embedding tables; the compiler records their rows.
  for (const Argument *a : argumentsOf(ex, sabi::Argument::input))
    if (a->bound && (lo.vocabSize == 0 || *a->bound < lo.vocabSize))
      lo.vocabSize = *a->bound;
  SINTER_ASSIGN_OR_RETURN(loader, data::DataLoader::open(dataSpec, specs, lo));
  if (resumed) {
    if (dataSpec == resumed->state.data) {
      if (absl::Status s = loader->restore(resumed->state.dataState); !s.ok())
        return sinter::withMessage(
            SINTER_HERE, s,
            absl::StrCat("cannot continue the data where the checkpoint "
                         "left it: ",
                         s.message()));
    } else {
      progress->note(absl::StrFormat(
          "warning: resuming on different data (%s, the checkpoint used %s); "
          "starting it from the beginning, so the run is not bit-exact",
          dataSpec, resumed->state.data));
    }
  }
  return absl::OkStatus();
}

absl::Status Run::restoreState(Checkpoint &c, const std::string &source,
                              bool notes) {
  // The optimizer's own step count exists only with loss scaling. A run
  // that starts scaling from a checkpoint without it took every earlier
  // step, so the count is the step; one that stops scaling drops it (the
  // global step then counts, skipped steps included).
  constexpr std::string_view kCount = sabi::kOptimizerStepState;
  bool wants = ex.program().findArgument(kCount) != nullptr;
  auto &tensors = c.optimizer.tensors;
  auto has = std::find_if(tensors.begin(), tensors.end(),
                          [&](const auto &t) { return t.first == kCount; });
  if (wants && has == tensors.end()) {
    formats::HostTensor count;
    float value = static_cast<float>(c.state.step);
    count.data.resize(sizeof value);
    std::memcpy(count.data.data(), &value, sizeof value);
    tensors.push_back({std::string(kCount), std::move(count)});
    if (notes)
      progress->note(absl::StrFormat(
        "note: the checkpoint has no optimizer.step (it was trained without "
        "loss scaling); counting its %d steps as the optimizer's",
        c.state.step));
  } else if (!wants && has != tensors.end()) {
    tensors.erase(has);
    if (notes)
      progress->note("note: the checkpoint's optimizer.step (loss scaling) "
                   "is dropped; the optimizer counts the training step");
  }
  for (auto [file, kind, name] :
       {std::tuple{&c.model, sabi::Argument::param, "model.safetensors"},
        std::tuple{&c.optimizer, sabi::Argument::opt_state,
                   "optimizer.safetensors"}}) {
    SINTER_ASSIGN_OR_RETURN(int64_t set,
                            restore(ex, kind, *file,
                                    absl::StrCat(source, ": ", name),
                                    /*requireAll=*/true));
  }
  return absl::OkStatus();
}

absl::Status Run::prepareParameters(bool notes) {
  if (resumed)
    return restoreState(*resumed, opt.resume, notes);
  SINTER_RETURN_IF_ERROR(ex.initializeParameters());
  if (opt.init.empty())
    return absl::OkStatus();
  SINTER_ASSIGN_OR_RETURN(formats::SafeTensorsFile file,
                          formats::readSafeTensors(opt.init));
  std::vector<std::string> missing;
  SINTER_ASSIGN_OR_RETURN(int64_t set,
                          restore(ex, sabi::Argument::param, file, opt.init,
                                  /*requireAll=*/false, &missing));
  std::string note =
      absl::StrFormat("initialized %d parameter(s) from %s", set, opt.init);
  if (!missing.empty())
    absl::StrAppend(&note, absl::StrFormat("; %d from their initializers (%s)",
                                           missing.size(),
                                           absl::StrJoin(missing, ", ")));
  if (notes)
    progress->note(note, /*important=*/false);
  return absl::OkStatus();
}

absl::Status
Run::uploadBatch(Executor &to,
                 const std::vector<std::pair<int64_t, size_t>> &targets,
                 int64_t part, int64_t parts) {
  for (auto [buffer, index] : targets) {
    size_t bytes = hostBatch[index].size() / static_cast<size_t>(parts);
    SINTER_RETURN_IF_ERROR(to.upload(
        buffer, hostBatch[index].data() + bytes * static_cast<size_t>(part),
        bytes));
  }
  return absl::OkStatus();
}

absl::Status Run::prepareAccumulation() {
  const Argument *k = ex.program().findArgument(sabi::kGradAccumulationHyper);
  if (k && k->kind != sabi::Argument::hyper)
    k = nullptr;
  if (!k) {
    if (opt.gradAccum && *opt.gradAccum != 1)
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrFormat("--grad-accum=%d: this binary was compiled without "
                          "gradient accumulation; set "
                          "training.grad_accumulation_steps above 1 in the "
                          "model and recompile",
                          *opt.gradAccum));
    return absl::OkStatus();
  }
  micro = opt.gradAccum.value_or(std::llround(*k->defaultValue));
  if (micro < 1)
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrFormat("--grad-accum=%d: must be at least 1",
                                     micro));
  if (micro > 1 && !acc)
    return sinter::InternalError(
        SINTER_HERE, "the binary accumulates gradients but has no accumulate "
                     "program");
  return ex.setHyper(sabi::kGradAccumulationHyper, static_cast<double>(micro));
}

absl::Status Run::runStep(int64_t step,
                          std::vector<std::pair<std::string, double>> &m) {
  // Micro-batch k is rows [k·B, (k+1)·B) of this rank's K·B, so block
  // rank·K + k of the global batch: what dropout masks are keyed by.
  std::map<std::string, double> sums, hits;
  stepKept.clear();
  for (int64_t k = 0; k < micro; ++k) {
    bool last = k + 1 == micro;
    Executor &runner = last ? ex : *acc;
    SINTER_RETURN_IF_ERROR(
        uploadBatch(runner, last ? trainUploads : accUploads, k, micro));
    SINTER_RETURN_IF_ERROR(runner.setStep(step));
    SINTER_RETURN_IF_ERROR(runner.setRank(dp->rank() * micro + k));
    SINTER_RETURN_IF_ERROR(runner.run());
    if (checking)
      checkRun(runner, step, k);
    SINTER_ASSIGN_OR_RETURN(m, readMetrics(runner));
    for (const LabelMetric &l : labelMetrics) {
      double kept = countLabels(l.input, l.wide, l.ignore, k, micro);
      stepKept[l.name] += kept;
      if (std::optional<double> value = find(m, l.name); value && kept > 0)
        hits[l.name] += *value * kept;
    }
    if (!last)
      for (const auto &[name, value] : m)
        sums[name] += value;
  }
  if (micro == 1)
    return absl::OkStatus();
  // A fraction of labels is the micro-batches' hits over their labels that
  // count; the rest is the micro-batches' mean.
  for (auto &[name, value] : m)
    if (auto it = stepKept.find(name); it != stepKept.end())
      value = hits[name] / it->second;
    else if (auto it = sums.find(name); it != sums.end())
      value = (it->second + value) / static_cast<double>(micro);
  // Zero between steps: the next step's first micro-batch adds to nothing.
  for (const Argument *a : argumentsOf(ex, sabi::Argument::accumulator))
    SINTER_RETURN_IF_ERROR(ex.zeroBuffer(a->buffer));
  return absl::OkStatus();
}

absl::Status Run::evaluate(int64_t step) {
  int64_t batches = std::min(loader->numEvalBatches(), opt.evalBatches);
  if (!eval || batches == 0)
    return absl::OkStatus();
  // The eval program has its own slabs: copy the parameters over by name,
  // through one host buffer.
  for (const Argument *a : argumentsOf(*eval, sabi::Argument::param)) {
    const Argument *t = ex.program().findArgument(a->name);
    if (!t || ex.program().buffers[t->buffer].bytes !=
                  eval->program().buffers[a->buffer].bytes)
      return sinter::InternalError(
          SINTER_HERE, absl::StrCat("the eval program's parameter ",
                                    formats::quoteForMessage(a->name),
                                    " does not match the training program's"));
    auto bytes = static_cast<size_t>(ex.program().buffers[t->buffer].bytes);
    if (paramTransfer.size() < bytes)
      paramTransfer.resize(bytes);
    SINTER_RETURN_IF_ERROR(ex.download(t->buffer, paramTransfer.data(), bytes));
    SINTER_RETURN_IF_ERROR(
        eval->upload(a->buffer, paramTransfer.data(), bytes));
  }
  std::vector<std::pair<std::string, double>> sums;
  // With labels that may be ignored, each global batch's loss is its sum
  // over its kept labels, whatever ranks and parts hold them, as one
  // process at the global batch computes it: per batch, the parts' losses
  // times their kept labels, and the kept labels (docs/Distributed.md). So
  // is each fraction of labels (accuracy), over its own labels.
  std::vector<LabelMetric> weighted = labelMetrics;
  if (lossLabels)
    weighted.push_back({"loss", lossLabelsIndex,
                        ex.program().buffers[lossLabels->buffer].type ==
                            sabi::ElementType::i64,
                        *lossLabels->ignore});
  // Per weighted value q and batch i: [2q·batches + i] the parts' values
  // times their labels, [(2q + 1)·batches + i] the labels.
  std::vector<double> kept(2 * weighted.size() * static_cast<size_t>(batches),
                           0.0);
  auto slot = [&](size_t q, bool labels, int64_t i) -> double & {
    return kept[(2 * q + (labels ? 1 : 0)) * static_cast<size_t>(batches) +
                static_cast<size_t>(i)];
  };
  for (int64_t i = 0; i < batches; ++i) {
    SINTER_RETURN_IF_ERROR(loader->evalBatch(i, hostBatchPointers));
    // A held-out batch is K micro-batches, as a training one.
    for (int64_t part = 0; part < micro; ++part) {
      SINTER_RETURN_IF_ERROR(uploadBatch(*eval, evalUploads, part, micro));
      SINTER_RETURN_IF_ERROR(eval->run());
      SINTER_ASSIGN_OR_RETURN(auto m, readMetrics(*eval));
      for (size_t q = 0; q < weighted.size(); ++q) {
        const LabelMetric &w = weighted[q];
        double labels = countLabels(w.input, w.wide, w.ignore, part, micro);
        std::optional<double> value = find(m, w.name);
        if (value && labels > 0)
          slot(q, false, i) += *value * labels;
        slot(q, true, i) += labels;
      }
      if (sums.empty())
        sums = m;
      else
        for (size_t k = 0; k < m.size(); ++k)
          sums[k].second += m[k].second;
    }
  }
  // Every rank evaluated its rows of the same global batches.
  SINTER_RETURN_IF_ERROR(
      averageMetrics(sums, nullptr, "the mean of the eval metrics"));
  std::map<std::string, double> weightedMeans;
  if (!kept.empty()) {
    SINTER_RETURN_IF_ERROR(
        dp->sumOverRanks(kept, "the eval metrics' kept labels"));
    for (size_t q = 0; q < weighted.size(); ++q) {
      double total = 0;
      for (int64_t i = 0; i < batches; ++i)
        total += slot(q, false, i) / slot(q, true, i);
      weightedMeans[weighted[q].name] = total / static_cast<double>(batches);
    }
  }
  std::vector<std::pair<std::string, double>> fields = {
      {"step", static_cast<double>(step)}};
  std::string line = absl::StrFormat("eval at step %d:", step);
  std::vector<std::pair<std::string, double>> evalMeans;
  for (auto &[name, sum] : sums) {
    double mean = sum / static_cast<double>(batches * micro);
    if (auto it = weightedMeans.find(name); it != weightedMeans.end())
      mean = it->second;
    absl::StrAppend(&line, absl::StrFormat(" %s %.4f", name, mean));
    fields.push_back({"eval_" + name, mean});
    evalMeans.push_back({name, mean});
    if (name == "loss")
      lastEvalLoss = mean;
  }
  absl::StrAppend(&line, absl::StrFormat(" (%d held-out batches)", batches));
  progress->note(line, /*important=*/false);
  if (tensorboard)
    SINTER_RETURN_IF_ERROR(tensorboard->write(step, "eval", evalMeans));
  if (metrics)
    return metrics->write(fields);
  return absl::OkStatus();
}

absl::Status Run::save(int64_t step) {
  if (opt.save.empty() || lastCheckpoint == checkpointName(step))
    return absl::OkStatus();
  // Every rank has finished the step; only rank 0 writes (the others wait
  // for it in their next collective, at most --collective-timeout).
  SINTER_RETURN_IF_ERROR(
      dp->barrier(absl::StrFormat("barrier before the checkpoint of step %d",
                                  step)));
  if (!rankZero()) {
    lastCheckpoint = checkpointName(step);
    return absl::OkStatus();
  }
  CheckpointSources c;
  SINTER_ASSIGN_OR_RETURN(c.model, sources(ex, sabi::Argument::param));
  c.model.metadata["sinter.step"] = absl::StrCat(step);
  SINTER_ASSIGN_OR_RETURN(c.optimizer, sources(ex, sabi::Argument::opt_state));
  c.state.step = step;
  c.state.seed = seed;
  c.state.data = dataSpec;
  c.state.dataState = loader->state();
  c.state.lr = lr;
  c.state.program = opt.program;
  c.state.loss = lastLoss;
  c.state.worldSize = dp->worldSize();
  c.state.gradAccumulationSteps = micro;
  if (scaler)
    c.state.lossScale = scaler->state;
  absl::StatusOr<std::string> dir = saveCheckpoint(opt.save, c);
  if (!dir.ok() && dir.status().code() == absl::StatusCode::kDataLoss)
    return sinter::withMessage(
        SINTER_HERE, dir.status(),
        absl::StrCat(dir.status().message(), "; the last checkpoint is ",
                     lastCheckpoint.empty() ? "none"
                                            : opt.save + "/" + lastCheckpoint));
  if (!dir.ok())
    return dir.status();
  lastCheckpoint = checkpointName(step);
  progress->note(absl::StrCat("saved ", *dir), /*important=*/false);
  if (absl::Status s = pruneCheckpoints(opt.save, opt.keepLast, opt.keepEvery);
      !s.ok())
    progress->note(absl::StrCat("warning: ", s.message()));
  return absl::OkStatus();
}

absl::Status Run::run() {
  dp = opt.dataParallel;
  if (!dp) {
    SINTER_ASSIGN_OR_RETURN(single,
                            DataParallel::create(comm::DistEnv(), {}));
    dp = single.get();
  }
  // Rank 0 speaks for the job; the others print only errors.
  bool quiet = opt.quiet || !rankZero();
  bool interactive = ::isatty(STDOUT_FILENO) && !std::getenv("SINTER_NO_TTY");
  seed = opt.seed;
  lr = opt.lr;
  if (auto at = opt.debugFault.find("drift@"); at == 0)
    if (!absl::SimpleAtoi(opt.debugFault.substr(6), &driftStep))
      return sinter::InvalidArgumentError(
          SINTER_HERE, absl::StrCat("--debug-fault=", opt.debugFault,
                                    ": use same-data or drift@STEP"));

  if (!opt.resume.empty()) {
    if (!opt.init.empty())
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          "--init and --resume exclude each other (a checkpoint already "
          "holds the parameters)");
    SINTER_ASSIGN_OR_RETURN(resumed, loadCheckpoint(opt.resume, &resumedFrom));
    startStep = resumed->state.step;
    if (!opt.seedGiven)
      seed = resumed->state.seed;
    if (!lr)
      lr = resumed->state.lr;
  }
  progress = std::make_unique<ProgressReporter>(
      stdout, interactive, quiet, opt.logEvery, startStep, opt.steps, "");
  // Where the run writes, proven before the work.
  if (!opt.save.empty() && rankZero())
    SINTER_RETURN_IF_ERROR(checkWritable(opt.save));
  if (!opt.logJsonl.empty() && rankZero()) {
    SINTER_ASSIGN_OR_RETURN(metrics, MetricsLog::open(opt.logJsonl));
  }
  if (!opt.tensorboard.empty() && rankZero()) {
    SINTER_ASSIGN_OR_RETURN(tensorboard, TensorBoardLog::open(opt.tensorboard));
  }
  SINTER_RETURN_IF_ERROR(prepareAccumulation());
  if (const std::optional<exec::LossScaling> &policy =
          ex.program().lossScaling) {
    scaler.emplace(*policy);
    if (resumed && resumed->state.lossScale)
      scaler->state = *resumed->state.lossScale;
  }
  if (resumed && resumed->state.gradAccumulationSteps != micro)
    progress->note(absl::StrFormat(
        "note: the checkpoint was trained with %d micro-batch(es) a step, "
        "this run has %d: the global batch changes; the data continues from "
        "the same position, so the run is not bit-exact with one that kept "
        "them",
        resumed->state.gradAccumulationSteps, micro));
  if (resumed && resumed->state.worldSize != dp->worldSize())
    progress->note(absl::StrFormat(
        "note: the checkpoint was trained on %d rank(s), this run has %d: the "
        "global batch changes from %d to %d times the compiled batch; the "
        "data continues from the same position, so the run is not bit-exact "
        "with one that kept its world size",
        resumed->state.worldSize, dp->worldSize(), resumed->state.worldSize,
        dp->worldSize()));
  if (resumed && resumed->state.program != opt.program)
    progress->note("warning: the checkpoint was written by a different "
                   "step program (the model or its training section "
                   "changed); continuing");
  SINTER_RETURN_IF_ERROR(prepareParameters());
  if (dp->distributed()) {
    // One model on every rank: rank 0's parameters and optimizer state
    // (initialized, --init or --resume), then proven equal.
    SINTER_RETURN_IF_ERROR(dp->broadcastState(ex));
    SINTER_RETURN_IF_ERROR(dp->checkStateEqual(
        ex, absl::StrFormat("at the start (step %d)", startStep)));
  }
  SINTER_RETURN_IF_ERROR(prepareData());
  SINTER_RETURN_IF_ERROR(prepareLossCount());
  prepareLabelMetrics();
  progress = std::make_unique<ProgressReporter>(
      stdout, interactive, quiet, opt.logEvery, startStep, opt.steps, unit);
  if (startStep > opt.steps)
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrFormat(
            "--steps=%d: the checkpoint is already at step %d (--steps counts "
            "from the start of training)",
            opt.steps, startStep));
  if (lr) {
    SINTER_RETURN_IF_ERROR(ex.setHyper("lr", *lr));
  }
  if (metrics && resumed)
    SINTER_RETURN_IF_ERROR(metrics->writeResume(startStep, resumedFrom));
  if (tensorboard && resumed)
    SINTER_RETURN_IF_ERROR(tensorboard->writeResume(startStep));
  if (!opt.save.empty() && rankZero())
    removeStaleTemporaries(opt.save);
  initialDataState = loader->state();
  if (scaler)
    initialScale = scaler->state;
  checking = opt.checkNumerics;
  for (Executor *e : {&ex, acc})
    if (e)
      e->setCheckNumerics(checking);

  progress->note(
      absl::StrFormat(
          "%s%s %s; %d thread%s%s; %s",
          dp->distributed()
              ? absl::StrFormat("%d ranks (%s; all-reduce over %s); ",
                                dp->worldSize(), dp->environment().source,
                                dp->transport())
              : "",
          resumed ? "resuming from" : "data:",
          resumed ? absl::StrFormat("step %d (%s)", startStep, opt.resume)
                  : loader->describe(),
          ex.threads(), ex.threads() == 1 ? "" : "s",
          dp->distributed() ? " a rank" : "",
          resumed ? loader->describe()
                  : absl::StrFormat("training steps %d to %d", startStep + 1,
                                    opt.steps)) +
          (micro > 1 ? absl::StrFormat("; each step %d micro-batches of %d "
                                       "rows (gradient accumulation)",
                                       micro, microRows)
                     : ""),
      /*important=*/false);

  interrupts::deferToStepBoundary();
  double began = now();
  double smoothedRate = 0;
  int64_t step = startStep;
  bool stop = false;
  for (; step < opt.steps && !stop; ++step) {
    if (checking) // to name a row of the batch (dataOutlier)
      batchState = loader->state();
    SINTER_RETURN_IF_ERROR(loader->nextTrain(hostBatchPointers));
    if (step == startStep)
      SINTER_RETURN_IF_ERROR(dp->checkDistinctData(hostBatch));
    double t0 = now();
    dp->setStep(step);
    std::vector<std::pair<std::string, double>> m;
    if (scaler)
      SINTER_RETURN_IF_ERROR(setLossScale());
    SINTER_RETURN_IF_ERROR(setLossCount());
    stepFault.reset();
    SINTER_RETURN_IF_ERROR(runStep(step, m));
    double seconds = now() - t0;
    // The job's loss and metrics: the mean over ranks (fractions of labels
    // weighted by the labels that count).
    SINTER_RETURN_IF_ERROR(
        averageMetrics(m, &stop, "the mean of the step's metrics", stepKept));
    bool skipped = false;
    absl::Status overflowStop;
    if (scaler)
      skipped = recordLossScale(step, m, overflowStop);
    if (step + 1 == driftStep && dp->rank() == dp->worldSize() - 1)
      SINTER_RETURN_IF_ERROR(perturbFirstParameter(ex));
    std::optional<double> loss = find(m, "loss");
    if (!loss)
      return sinter::InternalError(SINTER_HERE,
                                   "the step program has no 'loss' metric");
    if (stepFault && skipped)
      progress->note(absl::StrFormat(
          "step %d overflowed and was skipped; its first non-finite value: %s",
          step + 1, stepFault->headline));
    else if (stepFault)
      return diverged(step, "");
    std::optional<double> norm = find(m, "grad_norm");
    auto text = [](double v) {
      return std::isnan(v) ? std::string("NaN") : absl::StrFormat("%g", v);
    };
    if (!std::isfinite(*loss) && !skipped)
      return diverged(step, "the loss is " + text(*loss));
    if (norm && !std::isfinite(*norm) && !skipped)
      return diverged(step, "the gradients' global norm is " + text(*norm));
    if (!skipped)
      lastLoss = loss;
    double rate = seconds > 0 ? double(itemsPerStep) / seconds : 0;
    smoothedRate = step == startStep ? rate : 0.9 * smoothedRate + 0.1 * rate;

    StepReport report;
    report.step = step + 1;
    report.loss = *loss;
    report.lr = find(m, "lr");
    report.gradNorm = find(m, "grad_norm");
    for (const auto &[name, value] : m)
      if (name != "loss" && name != "lr" && name != "grad_norm" &&
          name != "skipped")
        report.metrics.push_back({name, value});
    if (scaler && scaler->state.skippedSteps > 0)
      report.metrics.push_back(
          {"skipped", static_cast<double>(scaler->state.skippedSteps)});
    report.stepSeconds = seconds;
    report.itemsPerSecond = smoothedRate;
    progress->step(report, now() - began);
    if (metrics) {
      std::vector<std::pair<std::string, double>> fields = {
          {"step", double(step + 1)}};
      fields.insert(fields.end(), m.begin(), m.end());
      fields.push_back({"step_seconds", seconds});
      // Wall time since the loop began: its differences are whole steps
      // (data, metrics, waiting for other ranks), not only run().
      fields.push_back({"elapsed_seconds", now() - began});
      fields.push_back(
          {unit == "tok" ? "tokens_per_second" : "samples_per_second", rate});
      SINTER_RETURN_IF_ERROR(metrics->write(fields));
    }
    if (tensorboard) {
      std::vector<std::pair<std::string, double>> scalars = m;
      scalars.push_back({"step_seconds", seconds});
      scalars.push_back(
          {unit == "tok" ? "tokens_per_second" : "samples_per_second", rate});
      SINTER_RETURN_IF_ERROR(tensorboard->write(step + 1, "train", scalars));
    }
    if (!overflowStop.ok()) {
      progress->finish();
      return overflowStop;
    }
    int64_t done = step + 1;
    // Skipped all-reduces (a benchmark's floor) make the ranks drift apart
    // on purpose.
    if (dp->distributed() && opt.checkEvery > 0 &&
        done % opt.checkEvery == 0 && !dp->skipsAllReduces())
      SINTER_RETURN_IF_ERROR(dp->checkStateEqual(
          ex, absl::StrFormat("after step %d", done)));
    if (opt.evalEvery > 0 && done % opt.evalEvery == 0)
      SINTER_RETURN_IF_ERROR(evaluate(done));
    if (opt.saveEvery > 0 && done % opt.saveEvery == 0)
      SINTER_RETURN_IF_ERROR(save(done));
  }
  double elapsed = now() - began;
  progress->finish();
  // The closing evaluation, unless Ctrl-C asked to stop quickly.
  if (opt.evalEvery > 0 && step % opt.evalEvery != 0 && step > startStep &&
      !stop)
    SINTER_RETURN_IF_ERROR(evaluate(step));
  SINTER_RETURN_IF_ERROR(save(step));

  int64_t ran = step - startStep;
  std::string summary = absl::StrFormat(
      "%s %d step(s) in %s (%s %s/s)",
      stop ? "interrupted after" : "done:", ran, formatDuration(elapsed),
      formatRate(elapsed > 0 ? double(ran * itemsPerStep) / elapsed : 0), unit);
  if (lastLoss)
    absl::StrAppend(&summary, absl::StrFormat("; loss %.4f", *lastLoss));
  if (lastEvalLoss)
    absl::StrAppend(&summary,
                    absl::StrFormat("; eval loss %.4f", *lastEvalLoss));
  if (scaler)
    absl::StrAppend(&summary,
                    absl::StrFormat("; loss scale %g, %d step(s) skipped on "
                                    "overflow",
                                    scaler->state.scale,
                                    scaler->state.skippedSteps));
  if (!lastCheckpoint.empty())
    absl::StrAppend(&summary, "; checkpoint ", opt.save, "/", lastCheckpoint);
  if (rankZero())
    progress->note(summary);
  if (opt.profile)
    std::printf(
        "%s", ex.formatProfile(std::getenv("SINTER_PROFILE_ALL") ? 1 << 30 : 10)
                  .c_str());
  std::fflush(stdout);
  if (stop)
    return sinter::CancelledError(
        SINTER_HERE,
        absl::StrFormat(
            "interrupted at step %d%s", step,
            lastCheckpoint.empty()
                ? ""
                : absl::StrCat("; resume with --resume=", opt.save)));
  return absl::OkStatus();
}

} // namespace sinter::train::detail

absl::Status sinter::train::train(Executor &trainer, Executor *eval,
                                  Executor *accumulate,
                                  const TrainOptions &options) {
  detail::Run run(trainer, eval, accumulate, options);
  return run.run();
}
