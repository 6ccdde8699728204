//===- Batching.cpp - epoch order, loader state and shared checks ---------===//

#include "runtime/Data/Batching.h"

#include "abi/Random.h"
#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <limits>
#include <numeric>
#include <set>
#include <utility>

namespace sinter::data {

std::vector<int64_t> shuffledOrder(uint64_t seed, int64_t epoch,
                                   int64_t count) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), int64_t{0});
  uint64_t key = random::key(seed ^ kShuffleSalt, static_cast<uint64_t>(epoch));
  uint64_t step = 0;
  for (int64_t i = count - 1; i > 0; --i, ++step) {
    uint64_t j = random::bits(key, step) % static_cast<uint64_t>(i + 1);
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

//===----------------------------------------------------------------------===//
// EpochCursor
//===----------------------------------------------------------------------===//

void EpochCursor::ensureOrder() {
  if (orderEpoch != currentEpoch) {
    order = shuffledOrder(seed, currentEpoch, numItems);
    orderEpoch = currentEpoch;
  }
}

void EpochCursor::current(std::vector<int64_t> &items) {
  ensureOrder();
  auto begin = order.begin() + offset;
  items.assign(begin, begin + batchSize);
}

void EpochCursor::advance() {
  offset += batchSize;
  if (offset + batchSize > numItems) {
    offset = 0;
    ++currentEpoch;
  }
}

std::string EpochCursor::state() const {
  return absl::StrCat("epoch=", currentEpoch, " batch=", offset / batchSize,
                      " items=", offset);
}

namespace {

/// Parses "<key>=<decimal digits>" at the front of `text`, consuming it.
/// No sign, no spaces, at most 18 digits (so no overflow).
bool parseField(std::string_view &text, std::string_view key, int64_t &value) {
  if (text.substr(0, key.size()) != key || text.size() == key.size() ||
      text[key.size()] != '=')
    return false;
  text.remove_prefix(key.size() + 1);
  size_t digits = 0;
  value = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    if (digits == 18)
      return false;
    value = value * 10 + (text[digits] - '0');
    ++digits;
  }
  text.remove_prefix(digits);
  return digits > 0;
}

/// Consumes the single space between the fields.
bool parseSpace(std::string_view &text) {
  if (text.empty() || text[0] != ' ')
    return false;
  text.remove_prefix(1);
  return true;
}

} // namespace

absl::Status EpochCursor::restore(std::string_view state) {
  std::string_view rest = state;
  int64_t newEpoch = 0, newBatch = 0, newItems = 0;
  bool wellFormed = parseField(rest, "epoch", newEpoch) && parseSpace(rest) &&
                    parseField(rest, "batch", newBatch);
  // "epoch=E batch=N" is the form before items=K; N counted batches of the
  // per-rank batch, as such states come from single-process loaders.
  bool legacy = wellFormed && rest.empty();
  if (!legacy)
    wellFormed = wellFormed && parseSpace(rest) &&
                 parseField(rest, "items", newItems) && rest.empty();
  if (!wellFormed)
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrCat("data state ", formats::quoteForMessage(state),
                     ": expected 'epoch=E batch=N items=K' (or the older "
                     "'epoch=E batch=N') with decimal E, N and K"));
  if (legacy) {
    int64_t legacyBatches = numItems / legacyBatchSize;
    if (newBatch >= legacyBatches)
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrCat("data state ", formats::quoteForMessage(state),
                       ": batch ", newBatch, " is out of range: an epoch has ",
                       legacyBatches,
                       " batches (was the data or the batch size changed?)"));
    newItems = newBatch * legacyBatchSize;
  } else if (newItems >= numItems) {
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrCat("data state ", formats::quoteForMessage(state),
                     ": item offset ", newItems,
                     " is out of range: an epoch has ", numItems,
                     " items (was the data changed?)"));
  } else if (newBatch > newItems) {
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrCat("data state ", formats::quoteForMessage(state), ": batch ",
                     newBatch, " cannot start after ", newItems, " items"));
  }
  currentEpoch = newEpoch;
  offset = newItems;
  // Saved with a smaller global batch: what is left of the epoch may not
  // fill one of ours, and is dropped like any epoch's remainder.
  if (offset + batchSize > numItems) {
    offset = 0;
    ++currentEpoch;
  }
  return absl::OkStatus();
}

//===----------------------------------------------------------------------===//
// Shared checks and formatting
//===----------------------------------------------------------------------===//

std::string withCommas(int64_t value) {
  std::string digits = std::to_string(value);
  size_t first = digits[0] == '-' ? 1 : 0;
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > first && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

std::string describeInput(const InputSpec &input) {
  return absl::StrCat(input.name, " ",
                      formats::toAbsl(formats::dtypeName(input.dtype)), " [",
                      absl::StrJoin(input.shape, ", "), "]");
}

absl::Status checkInputs(std::string_view label,
                         const std::vector<InputSpec> &inputs) {
  auto fail = [&](std::string_view why) {
    return formats::formatError(SINTER_HERE, label, why);
  };
  if (inputs.empty())
    return fail("the model has no inputs to load data for");
  std::set<std::string> names;
  for (const InputSpec &input : inputs) {
    if (input.name.empty())
      return fail("a model input has an empty name");
    if (!names.insert(input.name).second)
      return fail(
          absl::StrCat("model input '", input.name, "' is listed twice"));
    if (input.shape.empty())
      return fail(absl::StrCat("model input ", describeInput(input),
                               " has no batch dimension"));
    for (int64_t dim : input.shape)
      if (dim < 1)
        return fail(absl::StrCat("model input ", describeInput(input),
                                 " needs every dimension >= 1"));
    if (!formats::numBytes(input.dtype, input.shape).ok())
      return fail(
          absl::StrCat("model input ", describeInput(input), " is too large"));
    if (input.shape[0] != inputs[0].shape[0])
      return fail(absl::StrCat("model inputs ", describeInput(inputs[0]),
                               " and ", describeInput(input),
                               " have different batch sizes"));
  }
  return absl::OkStatus();
}

absl::Status checkDestinations(const std::vector<void *> &dst,
                               const std::vector<InputSpec> &inputs) {
  if (dst.size() != inputs.size())
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrCat("data loader: got ", dst.size(),
                     " destination buffers for ", inputs.size(), " inputs"));
  for (size_t i = 0; i < dst.size(); ++i)
    if (!dst[i])
      return sinter::InvalidArgumentError(
          SINTER_HERE, absl::StrCat("data loader: the buffer for input '",
                                    inputs[i].name, "' is null"));
  return absl::OkStatus();
}

std::string globalBatchText(int64_t B, int64_t worldSize,
                            std::string_view unit) {
  if (worldSize == 1)
    return absl::StrCat("batch of ", B);
  return absl::StrCat("global batch of ", worldSize, " x ", B, " ",
                      formats::toAbsl(unit));
}

ItemLoader::ItemLoader(std::vector<InputSpec> inputs, int64_t numTrainItems,
                       const LoaderOptions &options)
    : inputs(std::move(inputs)), B(this->inputs[0].shape[0]),
      rank(options.rank), worldSize(options.worldSize), G(worldSize * B),
      numTrainItems(numTrainItems), seed(options.seed),
      cursor(numTrainItems, G, options.seed, B) {}

std::string ItemLoader::describeTrainRow(std::string_view state,
                                         int64_t row) const {
  // A cursor of its own: `cursor` may be moving on another thread.
  EpochCursor at(numTrainItems, G, seed, B);
  if (row < 0 || row >= B || !at.restore(state).ok())
    return "";
  std::vector<int64_t> batch;
  at.current(batch);
  return describeTrainItem(batch[static_cast<size_t>(rank * B + row)]);
}

std::string ItemLoader::shardText() const {
  if (worldSize == 1)
    return "";
  return absl::StrCat("; rank ", rank, " of ", worldSize, ": rows ", rank * B,
                      "..", (rank + 1) * B - 1, " of each global batch of ", G);
}

absl::Status ItemLoader::nextTrain(const std::vector<void *> &dst) {
  SINTER_RETURN_IF_ERROR(checkDestinations(dst, inputs));
  cursor.current(global);
  items.assign(global.begin() + rank * B, global.begin() + (rank + 1) * B);
  SINTER_RETURN_IF_ERROR(fill(Split::Train, items, dst));
  cursor.advance();
  return absl::OkStatus();
}

int64_t ItemLoader::numEvalBatches() const { return numEvalItems() / G; }

absl::Status ItemLoader::evalBatch(int64_t i, const std::vector<void *> &dst) {
  SINTER_RETURN_IF_ERROR(checkDestinations(dst, inputs));
  if (i < 0 || i >= numEvalBatches())
    return sinter::OutOfRangeError(SINTER_HERE,
                                   absl::StrCat("eval batch ", i,
                                                " is out of range: there are ",
                                                numEvalBatches()));
  std::vector<int64_t> rows(static_cast<size_t>(B));
  for (int64_t r = 0; r < B; ++r)
    rows[static_cast<size_t>(r)] = i * G + rank * B + r;
  return fill(Split::Eval, rows, dst);
}

} // namespace sinter::data
