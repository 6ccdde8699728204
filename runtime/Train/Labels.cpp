//===- Labels.cpp - labels that do not count, across ranks and parts -----===//
//
// Where labels may be the ignore index, ranks and micro-batches hold
// different numbers of labels that count, and the mean of their means is
// not the whole batch's. The trainer counts them: the loss_count hyper
// argument each step (the step's count shared out over its parts), and the
// weights of fractions of labels (accuracy) where it combines parts and
// ranks (docs/Distributed.md, "Labels that do not count").
//
//===----------------------------------------------------------------------===//

#include "runtime/Train/Run.h"

#include "runtime/Formats/FileIO.h"
#include "runtime/Support/Status.h"
#include "runtime/Train/Interrupts.h"

#include "absl/strings/str_cat.h"

namespace sinter::train::detail {

namespace sabi = sinter::abi;
using exec::Argument;
using exec::Result;

absl::Status Run::prepareLossCount() {
  const Argument *hyper = ex.program().findArgument(sabi::kLossCountHyper);
  if (!hyper || hyper->kind != sabi::Argument::hyper ||
      (micro == 1 && !dp->distributed()))
    return absl::OkStatus();
  // The labels: the input with an ignore index (the cross-entropy's). With
  // none, or data that cannot hold the ignore index (token ids are never
  // negative), every position counts, each micro-batch's own count is its
  // share already, and the default (0: its own count) is exact, with no
  // collective. Every rank opened the same data, so all decide alike.
  for (auto [buffer, i] : trainUploads)
    for (const Argument &a : ex.program().arguments)
      if (a.buffer == buffer && a.kind == sabi::Argument::input && a.ignore) {
        if (lossLabels)
          return sinter::InternalError(
              SINTER_HERE,
              absl::StrCat("inputs ",
                           formats::quoteForMessage(lossLabels->name), " and ",
                           formats::quoteForMessage(a.name),
                           " both have an ignore index: which one holds the "
                           "loss's labels is unknown"));
        lossLabels = &a;
        lossLabelsIndex = i;
      }
  if (lossLabels && !loader->mayHold(lossLabelsIndex, *lossLabels->ignore))
    lossLabels = nullptr;
  if (!lossLabels)
    return absl::OkStatus();
  abi::DType type = ex.program().buffers[lossLabels->buffer].type;
  if (type != sabi::ElementType::i64 && type != sabi::ElementType::i32)
    return sinter::InternalError(
        SINTER_HERE,
        absl::StrCat("labels ", formats::quoteForMessage(lossLabels->name),
                     " are neither i64 nor i32"));
  return absl::OkStatus();
}

double Run::countLabels(size_t input, bool wide, int64_t ignore, int64_t part,
                        int64_t parts) const {
  const std::vector<unsigned char> &bytes = hostBatch[input];
  size_t n = bytes.size() / (wide ? 8 : 4) / static_cast<size_t>(parts);
  size_t first = n * static_cast<size_t>(part);
  double kept = 0;
  for (size_t i = first; i < first + n; ++i)
    kept += labelAt(bytes, wide, i) != ignore;
  return kept;
}

double Run::keptLabels(int64_t part, int64_t parts) const {
  return countLabels(lossLabelsIndex,
                     ex.program().buffers[lossLabels->buffer].type ==
                         sabi::ElementType::i64,
                     *lossLabels->ignore, part, parts);
}

void Run::prepareLabelMetrics() {
  // One part alone is its own fraction; so are equal parts whose labels all
  // count (token ids are never negative): their mean is exact already.
  if (micro == 1 && !dp->distributed())
    return;
  for (const Result &r : ex.program().results) {
    if (r.labels.empty())
      continue;
    // The step program's reader checked: an i64 or i32 input.
    const Argument *a = ex.program().findArgument(r.labels);
    for (auto [buffer, i] : trainUploads)
      if (a && a->buffer == buffer && loader->mayHold(i, r.ignore))
        labelMetrics.push_back(
            {r.name, i,
             ex.program().buffers[a->buffer].type == sabi::ElementType::i64,
             r.ignore});
  }
}

absl::Status Run::setLossCount() {
  if (!lossLabels)
    return absl::OkStatus();
  // Whole numbers below 2^53: the sum over ranks is exact in any order.
  std::vector<double> total = {keptLabels(0, 1)};
  SINTER_RETURN_IF_ERROR(
      dp->sumOverRanks(total, "the count of the step's labels"));
  // 0 when every label of the step is ignored: each micro-batch then
  // divides by its own count, 0, and the step's NaN is reported as such.
  double share = total[0] / (static_cast<double>(micro) * dp->worldSize());
  for (Executor *e : {&ex, acc})
    if (e && e->program().findArgument(sabi::kLossCountHyper))
      SINTER_RETURN_IF_ERROR(e->setHyper(sabi::kLossCountHyper, share));
  return absl::OkStatus();
}

absl::Status Run::averageMetrics(std::vector<std::pair<std::string, double>> &m,
                                 bool *stop, std::string_view what,
                                 const std::map<std::string, double> &kept) {
  if (!dp->distributed()) {
    if (stop)
      *stop = interrupts::requested();
    return absl::OkStatus();
  }
  // A fraction of labels travels as its hits and its count: the ranks'
  // sums of both give the fraction over every label that counts (a rank
  // with none adds nothing; with none anywhere it is 0/0, as one process).
  std::vector<double> values;
  for (const auto &[name, value] : m) {
    auto it = kept.find(name);
    if (it == kept.end()) {
      values.push_back(value);
      continue;
    }
    values.push_back(it->second > 0 ? value * it->second : 0.0);
    values.push_back(it->second);
  }
  if (stop)
    values.push_back(interrupts::requested() ? 1.0 : 0.0);
  SINTER_RETURN_IF_ERROR(dp->averageOverRanks(values, what));
  size_t j = 0;
  for (auto &[name, value] : m) {
    if (kept.count(name)) {
      value = values[j] / values[j + 1];
      j += 2;
    } else {
      value = values[j++];
    }
  }
  if (stop)
    *stop = values.back() > 0;
  return absl::OkStatus();
}

} // namespace sinter::train::detail
