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
//===----------------------------------------------------------------------===//

#include "runtime/Data/Batching.h"

#include "runtime/Data/Loaders.h"
#include "runtime/Formats/AbslCompat.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <cmath>

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

class TokenLoader final : public ItemLoader {
public:
  /// T is inputs[0].shape[1], the window length.
  TokenLoader(std::vector<InputSpec> inputs, int64_t T,
              std::vector<uint16_t> train, std::vector<uint16_t> eval,
              uint64_t seed)
      : ItemLoader(std::move(inputs),
                   numWindows(static_cast<int64_t>(train.size()), T), seed),
        T(T), train(std::move(train)), eval(std::move(eval)) {}

private:
  int64_t numEvalItems() const override {
    return numWindows(static_cast<int64_t>(eval.size()), T);
  }

  /// Row r of the batch is window windows[r]: (B, T) inputs and the (B, T)
  /// targets one token later.
  void fill(Split split, const std::vector<int64_t> &windows,
            const std::vector<void *> &dst) const override {
    const std::vector<uint16_t> &tokens = split == Split::Train ? train : eval;
    int64_t rowBytes[2] = {T * formats::dtypeByteSize(inputs[0].dtype),
                           T * formats::dtypeByteSize(inputs[1].dtype)};
    for (int64_t r = 0; r < B; ++r) {
      const uint16_t *window =
          tokens.data() + windows[static_cast<size_t>(r)] * T;
      for (int k = 0; k < 2; ++k)
        storeTokens(window + k, T, inputs[k].dtype,
                    static_cast<char *>(dst[k]) + r * rowBytes[k]);
    }
  }

  int64_t T;
  std::vector<uint16_t> train, eval;
};

/// Reads `paths` in order into one stream, checking every token against
/// `vocabSize` (when non-zero).
absl::Status readStream(const std::vector<std::string> &paths,
                        int64_t vocabSize, std::vector<uint16_t> &stream) {
  for (const std::string &path : paths) {
    SINTER_ASSIGN_OR_RETURN(TokenFile file, readTokenFile(path));
    if (vocabSize > 0)
      for (size_t i = 0; i < file.tokens.size(); ++i)
        if (file.tokens[i] >= vocabSize)
          return formats::formatError(
              SINTER_HERE, path, static_cast<uint64_t>(file.dataOffset) + 2 * i,
              absl::StrCat("token ", i, " is ", file.tokens[i],
                           ", not below the vocabulary size ", vocabSize));
    stream.insert(stream.end(), file.tokens.begin(), file.tokens.end());
  }
  return absl::OkStatus();
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

  std::vector<uint16_t> train, eval;
  SINTER_RETURN_IF_ERROR(readStream(files.train, options.vocabSize, train));
  SINTER_RETURN_IF_ERROR(readStream(files.val, options.vocabSize, eval));

  std::string evalText;
  if (!files.val.empty()) {
    evalText = absl::StrCat(
        withCommas(static_cast<int64_t>(eval.size())), " eval tokens in ",
        plural(static_cast<int64_t>(files.val.size()), "file"));
  } else if (options.evalFraction > 0) {
    auto held = static_cast<int64_t>(
        std::floor(static_cast<double>(train.size()) * options.evalFraction));
    eval.assign(train.end() - held, train.end());
    train.resize(train.size() - static_cast<size_t>(held));
    evalText = absl::StrFormat("%s eval tokens held out (the last %g%%)",
                               withCommas(held), options.evalFraction * 100);
  } else {
    evalText = "no eval split";
  }

  int64_t trainWindows = numWindows(static_cast<int64_t>(train.size()), T);
  if (trainWindows < B)
    return formats::formatError(
        SINTER_HERE, label,
        absl::StrCat(
            withCommas(static_cast<int64_t>(train.size())), " train tokens",
            files.val.empty() && !eval.empty() ? " (after the eval hold-out)"
                                               : "",
            " make ", plural(trainWindows, "window"), " of ", T + 1,
            " tokens, fewer than one batch of ", B, "; a batch needs at least ",
            withCommas(B * T + 1), " train tokens"));

  int64_t trainCount = static_cast<int64_t>(train.size());
  bool hasEvalTokens = !eval.empty();
  auto loader = std::make_unique<TokenLoader>(inputs, T, std::move(train),
                                              std::move(eval), options.seed);
  int64_t evalBatches = loader->numEvalBatches();
  loader->description = absl::StrCat(
      label, ": ", withCommas(trainCount), " train tokens in ",
      plural(static_cast<int64_t>(files.train.size()), "file"), ", ", evalText,
      "; ", plural(loader->trainBatchesPerEpoch(), "batch"), " of ", B, "x", T,
      " per epoch, ", plural(evalBatches, "eval batch"),
      evalBatches == 0 && hasEvalTokens ? " (too few eval tokens for one)"
                                        : "");
  return std::unique_ptr<DataLoader>(std::move(loader));
}

} // namespace sinter::data
