//===- DataLoader.h - the training binary's batches from files ------------===//
//
// The training binary feeds a compiled model fixed-shape inputs, one batch
// per step. A DataLoader turns the --data argument into those batches:
//
//   - token data (llm.c shards or nanoGPT's raw uint16 .bin files) for a
//     model with exactly two integer inputs [B, T], input and target: the
//     first gets tokens[i, i+T), the second tokens[i+1, i+T+1);
//   - .npy arrays, one per model input (a directory of <input>.npy, a
//     train/ + val/ pair of such directories, or "name=path.npy,...").
//
// Both cut the training data into items (token windows or examples), shuffle
// the item order once per epoch with a generator that is a pure function of
// (seed, epoch), and drop the items that do not fill a last batch. The eval
// split (a separate val file or folder, or else the last evalFraction of the
// data) is served in file order. Determinism is the contract: the same spec,
// inputs and options give the same batches on any machine, and
// restore(state()) resumes a run mid-epoch exactly. docs/Data.md has the
// details.
//
// Data parallelism: W processes, each compiled for the per-rank batch B,
// open the same spec with the same options except `rank`. Together they read
// what one process with batch W*B would read: one item order, global batches
// of W*B items, and rank r gets rows [r*B, (r+1)*B) of each. Token files are
// memory-mapped, so W processes over the same shards share the page cache
// and opening costs no memory until a window is read. prefetching() (or
// LoaderOptions::prefetch) prepares the next batch on a background thread.
//
// Every error is one line naming the file (and the byte offset or field
// where there is one): InvalidArgument for bad contents or a model the data
// cannot feed, NotFound for a path that does not exist.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_DATA_DATALOADER_H
#define SINTER_RUNTIME_DATA_DATALOADER_H

#include "runtime/Formats/HostTensor.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sinter::data {

/// One model input, batch dimension included.
struct InputSpec {
  std::string name;
  formats::DType dtype;       // F32, F64, I64, I32 ...
  std::vector<int64_t> shape; // shape[0] = batch size
  /// Integer inputs the model indexes with (token ids, class labels):
  /// every value must lie in [0, bound), or equal `ignore` (a
  /// cross-entropy's ignore_index). Checked by the .npy loader at open;
  /// token data are checked against LoaderOptions::vocabSize.
  std::optional<int64_t> bound, ignore;
};

struct LoaderOptions {
  /// Shuffling seed.
  uint64_t seed = 0;
  /// Held-out share when no separate eval file exists, in [0, 1).
  double evalFraction = 0.1;
  /// Token data only: every token must be below this (0 = unchecked). A
  /// window is checked when it is copied into a batch, so a bad token is an
  /// error of the nextTrain/evalBatch call that reads it, not of open().
  int64_t vocabSize = 0;
  /// Data parallelism: this process is `rank` of `worldSize`. The loader
  /// serves global batches of worldSize * B items (B = inputs' shape[0], the
  /// per-rank batch) and writes rows [rank * B, (rank + 1) * B) of each into
  /// the caller's buffers; every rank must use the same spec, inputs, seed
  /// and evalFraction. 0 <= rank < worldSize.
  int rank = 0;
  int worldSize = 1;
  /// Wraps the loader in prefetching(): the next training batch is prepared
  /// on a background thread while the caller uses the current one.
  bool prefetch = false;
};

class DataLoader {
public:
  virtual ~DataLoader();

  /// `spec` is the --data value: a token file, a directory, a glob pattern
  /// of token files, or "name=path.npy,..." (docs/Data.md).
  static absl::StatusOr<std::unique_ptr<DataLoader>>
  open(const std::string &spec, const std::vector<InputSpec> &inputs,
       const LoaderOptions &options);

  /// Writes the next training batch (this rank's rows of the next global
  /// batch): dst[i] points to a buffer of inputs[i]'s byte size (row-major),
  /// filled in the input's dtype. On an error the position does not move.
  virtual absl::Status nextTrain(const std::vector<void *> &dst) = 0;

  /// Held-out batches: numEvalBatches() of them (0 = no eval split), batch
  /// i deterministic (no shuffling), this rank's rows of global eval batch i.
  virtual int64_t numEvalBatches() const = 0;
  virtual absl::Status evalBatch(int64_t i, const std::vector<void *> &dst) = 0;

  /// Progress through the data, for checkpoints: "epoch=E batch=N items=K",
  /// the position of the next training batch: global batch N of epoch E,
  /// after K items of that epoch's order (K = N * W * B). The same string on
  /// every rank. restore(state()) on a fresh loader opened with the same
  /// spec and options continues with exactly the same batches; a loader
  /// with another world size (or batch) continues at item K of epoch E. The
  /// older "epoch=E batch=N" (single-process loaders) means K = N * B.
  /// Malformed or out-of-range states are an error.
  virtual std::string state() const = 0;
  virtual absl::Status restore(std::string_view state) = 0;

  /// The epoch the next training batch comes from (epochs completed).
  virtual int64_t epoch() const = 0;
  /// Global batches (of W * B items) per epoch: the steps of an epoch.
  virtual int64_t trainBatchesPerEpoch() const = 0;

  /// One line for the user: what was loaded, e.g. "data/shakespeare:
  /// 1,003,854 train tokens in 1 file, 111,540 eval tokens in 1 file; 490
  /// batches of 8x256 per epoch, 54 eval batches", with the shard when
  /// worldSize > 1 ("...; rank 1 of 2: rows 8..15 of each global batch of
  /// 16").
  virtual std::string describe() const = 0;

  /// Where row `row` of this rank's training batch at position `state`
  /// (what state() said before the nextTrain that returned it) comes from,
  /// for messages: "example 200 of x.npy, y.npy", "tokens 12,800..13,056
  /// of data/shakespeare/train.bin"; "" when the loader cannot say. Reads
  /// only what open() fixed, so a batch may be in preparation meanwhile.
  virtual std::string describeTrainRow(std::string_view state,
                                       int64_t row) const {
    return "";
  }

  /// Whether inputs[input]'s training or held-out data may hold `value`
  /// anywhere: false only where the loader knows it cannot (token ids are
  /// never negative; .npy arrays are in memory and looked through). The
  /// trainer asks once whether a label can be the ignore index
  /// (Run::prepareLossCount, Run::prepareLabelMetrics); the same spec
  /// gives every rank the same answer.
  virtual bool mayHold(size_t input, int64_t value) const { return true; }
};

/// `loader` with its next training batch prepared on a background thread,
/// one batch ahead, into buffers of its own; nextTrain copies that batch out
/// and starts the next. Batches, state(), epoch() and restore() are exactly
/// the wrapped loader's: state() is the position of the batch the caller
/// gets next, not of the one being prepared. An error of the background
/// nextTrain is returned by the nextTrain call that would have produced it
/// (and the position stays there). evalBatch and restore wait for the batch
/// in flight. `inputs` are those the loader was opened with (for the buffer
/// sizes). The destructor waits for the batch in flight and stops the
/// thread.
absl::StatusOr<std::unique_ptr<DataLoader>>
prefetching(std::unique_ptr<DataLoader> loader,
            const std::vector<InputSpec> &inputs);

} // namespace sinter::data

#endif // SINTER_RUNTIME_DATA_DATALOADER_H
