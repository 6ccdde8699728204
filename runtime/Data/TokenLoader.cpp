//===- TokenLoader.cpp - batches of (input, target) token windows ---------===//
//
// The train stream (its files concatenated in sorted order) is cut into
// windows of T + 1 tokens at stride T: window k is tokens[kT, kT + T], so
// consecutive windows share one token and every token except the first is a
// target exactly once. A batch is B windows; row r of the first input is
// window[0, T) and of the second window[1, T], i.e. the targets are the
// inputs shifted by one. Each epoch visits the windows in shuffledOrder
// (seed, epoch) and drops the last windows that do not fill a batch. Eval
// windows are cut the same way and served in order.
//
// Windows cross file boundaries: llm.c and nanoGPT both start each document
// with (or end it by) an end-of-text token, so a window spanning two shards
// is no different from one spanning two documents inside a shard.
//
// The files are memory-mapped (MappedTokenFile), never read whole: opening
// checks each header and size, and a batch copies its B windows out of the
// mappings, checking each token against the vocabulary as it goes. With W
// ranks, each rank touches only its own windows' pages.
//
//===----------------------------------------------------------------------===//

#include "runtime/Data/Batching.h"

#include "runtime/Data/Loaders.h"
#include "runtime/Formats/AbslCompat.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace sinter::data {

namespace {

bool isTokenDType(formats::DType dtype) {
  return dtype == formats::DType::I64 || dtype == formats::DType::I32 ||
         dtype == formats::DType::U16;
}

/// The number of windows of T + 1 tokens at stride T in `count` tokens.
int64_t numWindows(int64_t count, int64_t T) {
  return count >= T + 1 ? (count - 1) / T : 0;
}

/// "1 file", "2 files"; "1 batch", "2 batches".
std::string plural(int64_t count, std::string_view noun) {
  bool es = !noun.empty() && noun.back() == 'h';
  return absl::StrCat(withCommas(count), " ", formats::toAbsl(noun),
                      count == 1 ? ""
                      : es       ? "es"
                                 : "s");
}

/// Writes `count` tokens from `src` into `dst` as `dtype`.
void storeTokens(const uint16_t *src, int64_t count, formats::DType dtype,
                 void *dst) {
  switch (dtype) {
  case formats::DType::I64: {
    auto *out = static_cast<int64_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      out[i] = src[i];
    return;
  }
  case formats::DType::I32: {
    auto *out = static_cast<int32_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      out[i] = src[i];
    return;
  }
  default: { // U16, the only other dtype open() lets through
    auto *out = static_cast<uint16_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      out[i] = src[i];
    return;
  }
  }
}

/// Token files in order, as one stream: file f holds stream positions
/// [starts[f], starts[f + 1]).
struct TokenFileList {
  std::vector<MappedTokenFile> files;
  std::vector<int64_t> starts = {0};
};

/// Tokens [begin, end) of a file list's stream (the train stream, the eval
/// stream, or a split of one stream into both).
struct TokenStream {
  std::shared_ptr<const TokenFileList> list;
  int64_t begin = 0, end = 0;

  int64_t size() const { return end - begin; }

  /// Copies tokens [at, at + count) of this stream to `dst`, failing on the
  /// first token not below `vocabSize` (when non-zero) with its file, byte
  /// offset and index in the file.
  absl::Status copy(int64_t at, int64_t count, int64_t vocabSize,
                    uint16_t *dst) const {
    int64_t pos = begin + at;
    const std::vector<int64_t> &starts = list->starts;
    // The last file starting at or before pos (skipping empty files).
    size_t f = static_cast<size_t>(
        std::upper_bound(starts.begin(), starts.end() - 1, pos) -
        starts.begin() - 1);
    while (count > 0) {
      const MappedTokenFile &file = list->files[f];
      int64_t within = pos - starts[f];
      int64_t n = std::min(count, file.numTokens() - within);
      if (n <= 0) {
        ++f;
        continue;
      }
      file.copyTokens(within, n, dst);
      if (vocabSize > 0)
        for (int64_t i = 0; i < n; ++i)
          if (dst[i] >= vocabSize) {
            int64_t index = within + i;
            return formats::formatError(
                SINTER_HERE, file.path(),
                static_cast<uint64_t>(file.layout().dataOffset + 2 * index),
                absl::StrCat("token ", index, " is ", dst[i],
                             ", not below the vocabulary size ", vocabSize));
          }
      dst += n;
      pos += n;
      count -= n;
      ++f;
    }
    return absl::OkStatus();
  }
};

class TokenLoader final : public ItemLoader {
public:
  /// T is inputs[0].shape[1], the window length.
  TokenLoader(std::vector<InputSpec> inputs, int64_t T, TokenStream train,
              TokenStream eval, const LoaderOptions &options)
      : ItemLoader(std::move(inputs), numWindows(train.size(), T), options),
        T(T), vocabSize(options.vocabSize), train(std::move(train)),
        eval(std::move(eval)) {}

  /// Inputs and targets are token ids: never negative.
  bool mayHold(size_t input, int64_t value) const override {
    return value >= 0;
  }

private:
  int64_t numEvalItems() const override { return numWindows(eval.size(), T); }

  /// Row r of the batch is window windows[r]: (B, T) inputs and the (B, T)
  /// targets one token later.
  absl::Status fill(Split split, const std::vector<int64_t> &windows,
                    const std::vector<void *> &dst) const override {
    const TokenStream &tokens = split == Split::Train ? train : eval;
    int64_t rowBytes[2] = {T * formats::dtypeByteSize(inputs[0].dtype),
                           T * formats::dtypeByteSize(inputs[1].dtype)};
    std::vector<uint16_t> window(static_cast<size_t>(T + 1));
    for (int64_t r = 0; r < B; ++r) {
      SINTER_RETURN_IF_ERROR(tokens.copy(windows[static_cast<size_t>(r)] * T,
                                         T + 1, vocabSize, window.data()));
      for (int k = 0; k < 2; ++k)
        storeTokens(window.data() + k, T, inputs[k].dtype,
                    static_cast<char *>(dst[k]) + r * rowBytes[k]);
    }
    return absl::OkStatus();
  }

  /// Window w is tokens [w T, w T + T] of the train stream (inputs and
  /// the shifted targets), named in the file it starts in.
  std::string describeTrainItem(int64_t item) const override {
    int64_t pos = train.begin + item * T;
    const std::vector<int64_t> &starts = train.list->starts;
    size_t f = static_cast<size_t>(
        std::upper_bound(starts.begin(), starts.end(), pos) - starts.begin() -
        1);
    f = std::min(f, train.list->files.size() - 1);
    int64_t within = pos - starts[f];
    return absl::StrCat("tokens ", withCommas(within), "..",
                        withCommas(within + T), " of ",
                        train.list->files[f].path());
  }

  int64_t T, vocabSize;
  TokenStream train, eval;
};

/// Maps `paths` in order into one stream. Only headers are read.
absl::StatusOr<TokenStream> mapStream(const std::vector<std::string> &paths) {
  auto list = std::make_shared<TokenFileList>();
  for (const std::string &path : paths) {
    SINTER_ASSIGN_OR_RETURN(MappedTokenFile file, MappedTokenFile::open(path));
    list->starts.push_back(list->starts.back() + file.numTokens());
    list->files.push_back(std::move(file));
  }
  TokenStream stream;
  stream.end = list->starts.back();
  stream.list = std::move(list);
  return stream;
}

} // namespace

absl::StatusOr<std::unique_ptr<DataLoader>>
openTokenLoader(const std::string &label, const TokenFileSets &files,
                const std::vector<InputSpec> &inputs,
                const LoaderOptions &options) {
  // The model must take a token window and its shifted twin.
  bool fits = inputs.size() == 2 && inputs[0].shape.size() == 2 &&
              inputs[0].shape == inputs[1].shape &&
              isTokenDType(inputs[0].dtype) && isTokenDType(inputs[1].dtype);
  if (!fits) {
    std::string have;
    for (const InputSpec &input : inputs)
      absl::StrAppend(&have, have.empty() ? "" : ", ", describeInput(input));
    return formats::formatError(
        SINTER_HERE, label,
        absl::StrCat("token data needs a model with exactly two "
                     "inputs (tokens, targets) of one shape [B, T] and "
                     "dtype I64, I32 or U16; this model has ",
                     inputs.size(), ": ", have));
  }
  int64_t B = inputs[0].shape[0], T = inputs[0].shape[1];

  SINTER_ASSIGN_OR_RETURN(TokenStream train, mapStream(files.train));
  SINTER_ASSIGN_OR_RETURN(TokenStream eval, mapStream(files.val));

  std::string evalText;
  if (!files.val.empty()) {
    evalText =
        absl::StrCat(withCommas(eval.size()), " eval tokens in ",
                     plural(static_cast<int64_t>(files.val.size()), "file"));
  } else if (options.evalFraction > 0) {
    auto held = static_cast<int64_t>(
        std::floor(static_cast<double>(train.size()) * options.evalFraction));
    eval = train;
    eval.begin = train.end - held;
    train.end = eval.begin;
    evalText = absl::StrFormat("%s eval tokens held out (the last %g%%)",
                               withCommas(held), options.evalFraction * 100);
  } else {
    evalText = "no eval split";
  }

  int64_t W = options.worldSize, G = W * B;
  int64_t trainWindows = numWindows(train.size(), T);
  if (trainWindows < G)
    return formats::formatError(
        SINTER_HERE, label,
        absl::StrCat(
            withCommas(train.size()), " train tokens",
            files.val.empty() && eval.size() > 0 ? " (after the eval hold-out)"
                                                 : "",
            " make ", plural(trainWindows, "window"), " of ", T + 1,
            " tokens, fewer than one ", globalBatchText(B, W, "windows"),
            "; a ", W > 1 ? "global batch" : "batch", " needs at least ",
            withCommas(G * T + 1), " train tokens"));

  int64_t trainCount = train.size();
  bool hasEvalTokens = eval.size() > 0;
  auto loader = std::make_unique<TokenLoader>(inputs, T, std::move(train),
                                              std::move(eval), options);
  int64_t evalBatches = loader->numEvalBatches();
  loader->description = absl::StrCat(
      label, ": ", withCommas(trainCount), " train tokens in ",
      plural(static_cast<int64_t>(files.train.size()), "file"), ", ", evalText,
      "; ",
      plural(loader->trainBatchesPerEpoch(), W > 1 ? "global batch" : "batch"),
      " of ", G, "x", T, " per epoch, ", plural(evalBatches, "eval batch"),
      evalBatches == 0 && hasEvalTokens ? " (too few eval tokens for one)" : "",
      loader->shardText());
  return std::unique_ptr<DataLoader>(std::move(loader));
}

} // namespace sinter::data
