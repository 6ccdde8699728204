//===- Batching.h - epoch order, loader state and shared checks -----------===//
//
// What the token and .npy loaders share:
//
//   - shuffledOrder: the item order of one epoch. Fisher-Yates driven by
//     abi/Random.h's counter-based generator, so the order is a pure
//     function of (seed, epoch, count): the same on every standard library
//     (std::uniform_int_distribution is not), and an epoch's order can be
//     rebuilt from scratch when a run is restored.
//   - EpochCursor: which batch of which epoch comes next, its
//     "epoch=E batch=N items=K" state string and the strict parser for it.
//   - ItemLoader: the loaders' common frame, including the data-parallel
//     shard (which rows of each global batch this rank writes).
//   - checks on the model's inputs and on the caller's destination buffers,
//     and thousands separators for describe().
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_DATA_BATCHING_H
#define SINTER_RUNTIME_DATA_BATCHING_H

#include "runtime/Data/DataLoader.h"

#include "absl/status/status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sinter::data {

/// Mixed into the seed so that data order and the model's dropout masks
/// (which use the same generator with the training seed) never share keys.
inline constexpr uint64_t kShuffleSalt = 0x53485546464C4531ULL; // "SHUFFLE1"

/// A permutation of [0, count) for `epoch`: Fisher-Yates from the last
/// element down, where step s (s = 0, 1, ...) swaps position i = count-1-s
/// with j = bits(key, s) mod (i + 1), key = random::key(seed ^ kShuffleSalt,
/// epoch). The modulo bias is below count / 2^64.
std::vector<int64_t> shuffledOrder(uint64_t seed, int64_t epoch, int64_t count);

/// The position of the next training batch, and the order of the current
/// epoch's items. The position is (epoch, items of its order consumed); a
/// batch is the next batchSize items, and an epoch ends when the rest of its
/// order cannot fill one (those items are dropped).
class EpochCursor {
public:
  /// `numItems` items in batches of `batchSize` (the global batch); the
  /// caller has checked that at least one batch fits. `legacyBatchSize` is
  /// what the batch index of an old "epoch=E batch=N" state counts in: the
  /// per-rank batch (such states come from single-process loaders).
  EpochCursor(int64_t numItems, int64_t batchSize, uint64_t seed,
              int64_t legacyBatchSize = 0)
      : numItems(numItems), batchSize(batchSize),
        legacyBatchSize(legacyBatchSize ? legacyBatchSize : batchSize),
        seed(seed) {}

  int64_t batchesPerEpoch() const { return numItems / batchSize; }
  int64_t epoch() const { return currentEpoch; }

  /// Sets `items` to the batchSize item indices of the next batch, without
  /// moving past it.
  void current(std::vector<int64_t> &items);
  /// Moves past the next batch (to the start of the next epoch after the
  /// last full batch).
  void advance();

  /// "epoch=E batch=N items=K": K items of epoch E's order consumed, N =
  /// K / batchSize (rounded down when a restore at another batch size left
  /// K off the batch grid).
  std::string state() const;
  /// Accepts what state() prints, with K < numItems (and N <= K), and the
  /// old "epoch=E batch=N" with N < numItems / legacyBatchSize (K = N *
  /// legacyBatchSize). A K whose rest of the epoch cannot fill a batch of
  /// this cursor's size (saved with a smaller batch) continues at the next
  /// epoch. Nothing changes on an error.
  absl::Status restore(std::string_view state);

private:
  void ensureOrder();

  int64_t numItems, batchSize, legacyBatchSize;
  uint64_t seed;
  int64_t currentEpoch = 0, offset = 0;
  // The item order of `orderEpoch`; rebuilt when the epoch changes.
  std::vector<int64_t> order;
  int64_t orderEpoch = -1;
};

/// What the token and .npy loaders share: a train split of items (token
/// windows or examples) served in EpochCursor order, an eval split served
/// in order, the data-parallel shard, the checkpoint state and the
/// description. A loader says how many eval items it has and how to copy
/// items into a batch.
///
/// With W = worldSize ranks and per-rank batch B, the cursor walks global
/// batches of G = W * B items; rank r's rows are items [r * B, (r + 1) * B)
/// of each global batch, train and eval alike.
class ItemLoader : public DataLoader {
public:
  /// inputs[0].shape[0] is the per-rank batch size; `options` gives the
  /// seed, rank and world size (checked by DataLoader::open).
  ItemLoader(std::vector<InputSpec> inputs, int64_t numTrainItems,
             const LoaderOptions &options);

  absl::Status nextTrain(const std::vector<void *> &dst) final;
  int64_t numEvalBatches() const final;
  absl::Status evalBatch(int64_t i, const std::vector<void *> &dst) final;
  std::string state() const final { return cursor.state(); }
  absl::Status restore(std::string_view state) final {
    return cursor.restore(state);
  }
  int64_t epoch() const final { return cursor.epoch(); }
  int64_t trainBatchesPerEpoch() const final {
    return cursor.batchesPerEpoch();
  }
  std::string describe() const final { return description; }
  std::string describeTrainRow(std::string_view state,
                               int64_t row) const final;

  /// "" for one rank, else "; rank 1 of 2: rows 8..15 of each global batch
  /// of 16", for the end of describe().
  std::string shardText() const;

  std::string description;

protected:
  enum class Split { Train, Eval };
  virtual int64_t numEvalItems() const = 0;
  /// Row r of every destination is item items[r] of `split` (B rows). May
  /// fail on bad contents found only now (a token above the vocabulary).
  virtual absl::Status fill(Split split, const std::vector<int64_t> &items,
                            const std::vector<void *> &dst) const = 0;
  /// Train item `item`'s place in the files ("example 200 of x.npy").
  virtual std::string describeTrainItem(int64_t item) const = 0;

  std::vector<InputSpec> inputs;
  /// The per-rank batch, this rank, the world size and the global batch.
  int64_t B, rank, worldSize, G;

private:
  /// What the cursor was made with (describeTrainRow makes another).
  int64_t numTrainItems;
  uint64_t seed;
  EpochCursor cursor;
  std::vector<int64_t> global, items; // the batch being filled
};

/// "batch of 8" for one rank, "global batch of 2 x 8 <unit>" for several:
/// the smallest amount of data a loader needs, for errors.
std::string globalBatchText(int64_t B, int64_t worldSize,
                            std::string_view unit);

/// "1,003,854".
std::string withCommas(int64_t value);

/// "idx I64 [8, 256]".
std::string describeInput(const InputSpec &input);

/// Checks what every loader needs of the model's inputs: at least one,
/// distinct non-empty names, rank >= 1, every dimension >= 1 and one batch
/// size (shape[0]) shared by all. Errors start with `label`.
absl::Status checkInputs(std::string_view label,
                         const std::vector<InputSpec> &inputs);

/// Checks that `dst` has one non-null buffer per input.
absl::Status checkDestinations(const std::vector<void *> &dst,
                               const std::vector<InputSpec> &inputs);

} // namespace sinter::data

#endif // SINTER_RUNTIME_DATA_BATCHING_H
