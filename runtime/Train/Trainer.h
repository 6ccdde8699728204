//===- Trainer.h - the training loop of the binary ------------------------===//
//
// train() is what `./train` does when it is not asked to run raw steps:
//
//   1. parameters: from a checkpoint (--resume), a safetensors file (--init,
//      e.g. weights saved from PyTorch) or their initializers (--seed);
//   2. data: a DataLoader over --data, or the dataset compiled in as the
//      default, restored to the checkpoint's position on resume;
//   3. the loop: the next batch into host buffers the trainer owns, uploaded
//      to the program's inputs, one compiled step (with gradient
//      accumulation, K micro-batches of one K x B batch: the accumulate
//      program on the first K - 1, the training program on the last, the
//      accumulators zeroed after it), metrics (downloaded) to
//      the progress line and the JSONL log, evaluation on the held-out
//      batches every --eval-every steps (through the eval program, without
//      dropout, its parameters copied over by download and upload), a
//      checkpoint every --save-every steps;
//   4. at the end (or on Ctrl-C, after the step in flight): a last
//      checkpoint if --save is given, an evaluation, and one summary line.
//
// The step counter is the number of steps done, so a run resumed from the
// checkpoint of step K feeds the step program exactly the arguments,
// batches and counter values an uninterrupted run would: resume is
// bit-exact on CPU (dropout masks and the lr schedule are functions of the
// counter). The trainer drives the executors only through the Executor
// interface, so it runs the same on any device.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_TRAIN_TRAINER_H
#define SINTER_RUNTIME_TRAIN_TRAINER_H

#include "runtime/Exec/Executor.h"

#include "absl/status/status.h"

#include <cstdint>
#include <optional>
#include <string>

namespace sinter::train {

class DataParallel;

struct TrainOptions {
  std::string data;        // --data ("" = defaultData)
  std::string defaultData; // compiled in by sinterc ("" = none)
  int64_t steps = 1000;    // total steps, counted from step 0
  std::optional<int64_t> batchSize;
  /// --grad-accum: micro-batches per step instead of the compiled
  /// training.grad_accumulation_steps.
  std::optional<int64_t> gradAccum;
  std::optional<double> lr;
  uint64_t seed = 0;      // the seed in effect (--seed or the compiled one)
  bool seedGiven = false; // --seed was passed
  std::string init, save, resume, logJsonl;
  /// --tensorboard: the folder of the run's TensorBoard event file ("":
  /// none).
  std::string tensorboard;
  int64_t saveEvery = 0; // 0: only at the end
  int64_t evalEvery = 0; // 0: never
  int64_t evalBatches = 20;
  int64_t logEvery = 10; // plain-line interval when not on a terminal
  bool quiet = false;
  bool profile = false;
  /// --check-numerics: every run checked (Executor::setCheckNumerics); the
  /// first step that makes a non-finite value stops the run, naming it.
  bool checkNumerics = false;
  /// --keep-last=N: after each save, remove all but the newest N
  /// checkpoints (0: keep every one), except those --keep-every=M keeps
  /// (steps that are multiples of M).
  int64_t keepLast = 0, keepEvery = 0;
  /// Fingerprint of the step program, stored in checkpoints.
  std::string program;
  /// The job this rank belongs to (null: one process). Its collectives are
  /// the executor's; the trainer adds the checks, the averaged metrics and
  /// the rank-0-only output (DataParallel.h).
  DataParallel *dataParallel = nullptr;
  /// Parameters compared across ranks every this many steps (0: only at
  /// the start).
  int64_t checkEvery = 100;
  /// Tests only: "same-data" or "drift@N" (StepMain's --debug-fault).
  std::string debugFault;
};

/// Runs training; returns Cancelled after a Ctrl-C (the checkpoint, if any,
/// is written first). Every other error is one line naming its place.
/// `accumulate` is the accumulate program's executor, sharing `trainer`'s
/// params and opt_state slabs (null without gradient accumulation).
absl::Status train(exec::Executor &trainer, exec::Executor *eval,
                   exec::Executor *accumulate, const TrainOptions &options);

} // namespace sinter::train

#endif // SINTER_RUNTIME_TRAIN_TRAINER_H
