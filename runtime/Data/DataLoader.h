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
#include <string>
#include <string_view>
#include <vector>

namespace sinter::data {

/// One model input, batch dimension included.
struct InputSpec {
  std::string name;
  formats::DType dtype;       // F32, F64, I64, I32 ...
  std::vector<int64_t> shape; // shape[0] = batch size
};

struct LoaderOptions {
  /// Shuffling seed.
  uint64_t seed = 0;
  /// Held-out share when no separate eval file exists, in [0, 1).
  double evalFraction = 0.1;
  /// Token data only: every token must be below this (0 = unchecked).
  int64_t vocabSize = 0;
};

class DataLoader {
public:
  virtual ~DataLoader();

  /// `spec` is the --data value: a token file, a directory, a glob pattern
  /// of token files, or "name=path.npy,..." (docs/Data.md).
  static absl::StatusOr<std::unique_ptr<DataLoader>>
  open(const std::string &spec, const std::vector<InputSpec> &inputs,
       const LoaderOptions &options);

  /// Writes the next training batch: dst[i] points to a buffer of
  /// inputs[i]'s byte size (row-major), filled in the input's dtype.
  virtual absl::Status nextTrain(const std::vector<void *> &dst) = 0;

  /// Held-out batches: numEvalBatches() of them (0 = no eval split), batch
  /// i deterministic (no shuffling).
  virtual int64_t numEvalBatches() const = 0;
  virtual absl::Status evalBatch(int64_t i, const std::vector<void *> &dst) = 0;

  /// Progress through the data, for checkpoints: "epoch=E batch=B", the
  /// position of the next training batch. restore(state()) on a fresh loader
  /// opened with the same spec and options continues with exactly the same
  /// batches. Malformed or out-of-range states are an error.
  virtual std::string state() const = 0;
  virtual absl::Status restore(std::string_view state) = 0;

  /// The epoch the next training batch comes from (epochs completed).
  virtual int64_t epoch() const = 0;
  virtual int64_t trainBatchesPerEpoch() const = 0;

  /// One line for the user: what was loaded, e.g. "data/shakespeare:
  /// 1,003,854 train tokens in 1 file, 111,540 eval tokens in 1 file; 490
  /// batches of 8x256 per epoch, 54 eval batches".
  virtual std::string describe() const = 0;
};

} // namespace sinter::data

#endif // SINTER_RUNTIME_DATA_DATALOADER_H
