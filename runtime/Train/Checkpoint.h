//===- Checkpoint.h - checkpoints that are complete or absent -------------===//
//
// A checkpoint is a directory, `<root>/step-00000100/`, holding
//
//   model.safetensors      the parameters by their state_dict names, loadable
//                          as is by safetensors.torch.load_file
//   optimizer.safetensors  the optimizer state (`optimizer.<param>.<slot>`)
//   trainer.json           step, seed, data position, peak lr, the step
//                          program's fingerprint, the last loss
//   COMPLETE               the marker: each file above with its byte size and
//                          64-bit hash, written last
//
// and `<root>/latest` names the newest one ("step-00000100\n").
//
// Saving never leaves a state that loads wrongly, wherever a process is
// killed: the files go into a hidden temp directory (each written and
// fsync'ed), COMPLETE is written last, the directory is fsync'ed and renamed
// into place (exchanged atomically with an older copy of the same step), the
// root is fsync'ed, and only then is `latest` replaced (temp file + rename).
// So `latest` names a complete checkpoint or the previous one. Loading
// checks COMPLETE's sizes and hashes, so truncation or corruption of any file
// is one error line, not a silently different model; and that the step of
// trainer.json, COMPLETE, the directory's name and the model's metadata
// agree (files mixed from two checkpoints are an error too).
//
// A checkpoint is a recovery point, so neither saving nor loading accepts
// one whose parameters or optimizer state hold a NaN or an infinity.
//
// Saving streams the tensors from their sources (the executor's buffers)
// a piece at a time, hashing and checking each piece as it goes: a save
// holds no copy of the state.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_TRAIN_CHECKPOINT_H
#define SINTER_RUNTIME_TRAIN_CHECKPOINT_H

#include "runtime/Formats/SafeTensors.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/Train/LossScaler.h"

namespace sinter::train {

/// What a checkpoint holds besides tensors (trainer.json).
struct TrainerState {
  int64_t step = 0;          // steps completed; training resumes at this step
  uint64_t seed = 0;         // parameter-initialization and shuffling seed
  std::string data;          // the --data the run used
  std::string dataState;     // DataLoader::state() after `step` steps
  std::optional<double> lr;  // the peak learning rate, if the program has one
  std::string program;       // fingerprint of the step program
  std::optional<double> loss; // the last training loss, for display
  /// The ranks that trained it (data parallelism; 1 alone). Older
  /// checkpoints have none: 1.
  int64_t worldSize = 1;
  /// Micro-batches per step (gradient accumulation; 1 without). Older
  /// checkpoints have none: 1.
  int64_t gradAccumulationSteps = 1;
  /// Loss scaling (LossScaler.h), when the program has it.
  std::optional<LossScaleState> lossScale;
};

struct Checkpoint {
  formats::SafeTensorsFile model;     // params
  formats::SafeTensorsFile optimizer; // optimizer state
  TrainerState state;
};

/// What a save writes, the tensors by source: a save reads them a piece at
/// a time, so it holds one piece beside the training state, not a copy of
/// it.
struct CheckpointSources {
  formats::SafeTensorsSources model;     // params
  formats::SafeTensorsSources optimizer; // optimizer state
  TrainerState state;
};

/// "step-00000100".
std::string checkpointName(int64_t step);

/// Writes `checkpoint` as `<root>/<checkpointName(step)>` and points
/// `<root>/latest` at it; creates `root` if needed. Returns the directory.
/// A non-finite value found while writing stops the save (DataLoss, naming
/// the file, tensor and element) and leaves no trace of it.
absl::StatusOr<std::string> saveCheckpoint(const std::string &root,
                                           const CheckpointSources &checkpoint);
/// The same, from tensors in memory.
absl::StatusOr<std::string> saveCheckpoint(const std::string &root,
                                           const Checkpoint &checkpoint);

/// Loads a checkpoint directory, or the one `<path>/latest` names when
/// `path` is a root. Errors name the file and what is wrong.
absl::StatusOr<Checkpoint> loadCheckpoint(const std::string &path,
                                          std::string *loadedFrom = nullptr);

/// Creates `root` if needed and proves a file can be written there (a probe
/// created and removed), so that an unwritable --save fails at the start
/// rather than at the first checkpoint, after the work.
absl::Status checkWritable(const std::string &root);

/// Removes temp directories that killed saves left in `root` (names
/// starting with ".step-"). Missing `root` is fine.
void removeStaleTemporaries(const std::string &root);

/// --keep-last: removes the checkpoints of `root` but the newest
/// `keepLast`, those whose step is a multiple of `keepEvery` (when > 0) and
/// the one `latest` names. keepLast <= 0 keeps every one.
absl::Status pruneCheckpoints(const std::string &root, int64_t keepLast,
                              int64_t keepEvery);

/// trainer.json's contents, checked (every field's kind and range); errors
/// name `path`. loadCheckpoint's reader, here for the formats fuzzer.
absl::StatusOr<TrainerState> parseTrainerState(std::string_view text,
                                               const std::string &path);

/// A fast 64-bit hash of `bytes` (for the COMPLETE marker and program
/// fingerprints; not cryptographic).
uint64_t hashBytes(std::string_view bytes);

/// hashBytes of the concatenation of what update() was given, for bytes
/// that are never in memory at once.
class StreamHash {
public:
  void update(std::string_view bytes);
  uint64_t digest() const;
  uint64_t size() const { return total; }

private:
  /// The multiplier of each word's mix, and the state a hash starts in.
  static constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;

  uint64_t h = kMul;
  uint64_t total = 0;
  // The bytes of a word not yet complete (fewer than eight).
  char partial[8] = {};
  size_t partialSize = 0;
};

} // namespace sinter::train

#endif // SINTER_RUNTIME_TRAIN_CHECKPOINT_H
