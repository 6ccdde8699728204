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
//     "epoch=E batch=B" state string and the strict parser for it.
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
/// epoch's items.
class EpochCursor {
public:
  /// `numItems` items in batches of `batchSize`; the caller has checked that
  /// at least one batch fits.
  EpochCursor(int64_t numItems, int64_t batchSize, uint64_t seed)
      : numItems(numItems), batchSize(batchSize), seed(seed) {}

  int64_t batchesPerEpoch() const { return numItems / batchSize; }
  int64_t epoch() const { return currentEpoch; }

  /// Sets `items` to the batchSize item indices of the next batch and moves
  /// past it (to batch 0 of the next epoch after the last full batch).
  void next(std::vector<int64_t> &items);

  /// "epoch=E batch=B".
  std::string state() const;
  /// Accepts exactly what state() prints, with 0 <= B < batchesPerEpoch().
  absl::Status restore(std::string_view state);

private:
  int64_t numItems, batchSize;
  uint64_t seed;
  int64_t currentEpoch = 0, batch = 0;
  // The item order of `orderEpoch`; rebuilt when the epoch changes.
  std::vector<int64_t> order;
  int64_t orderEpoch = -1;
};

/// What the token and .npy loaders share: a train split of items (token
/// windows or examples) served in EpochCursor order, an eval split served
/// in order, the checkpoint state and the description. A loader says how
/// many eval items it has and how to copy items into a batch.
class ItemLoader : public DataLoader {
public:
  /// inputs[0].shape[0] is the batch size.
  ItemLoader(std::vector<InputSpec> inputs, int64_t numTrainItems,
             uint64_t seed);

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

  std::string description;

protected:
  enum class Split { Train, Eval };
  virtual int64_t numEvalItems() const = 0;
  /// Row r of every destination is item items[r] of `split`.
  virtual void fill(Split split, const std::vector<int64_t> &items,
                    const std::vector<void *> &dst) const = 0;

  std::vector<InputSpec> inputs;
  int64_t B;

private:
  EpochCursor cursor;
  std::vector<int64_t> items; // the batch being filled
};

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
