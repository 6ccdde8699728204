//===- Run.h - the trainer's state while it runs (internal) ---------------===//
//
// The class behind train() (Trainer.h), shared by the files that implement
// it: Trainer.cpp (the loop, data, parameters, evaluation, checkpoints) and
// Diverged.cpp (checked runs: where a non-finite value began). Not an API.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_TRAIN_RUN_H
#define SINTER_RUNTIME_TRAIN_RUN_H

#include "runtime/Data/DataLoader.h"
#include "runtime/Exec/Executor.h"
#include "runtime/Formats/SafeTensors.h"
#include "runtime/Train/Checkpoint.h"
#include "runtime/Train/DataParallel.h"
#include "runtime/Train/LossScaler.h"
#include "runtime/Train/Progress.h"
#include "runtime/Train/TensorBoard.h"
#include "runtime/Train/Trainer.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sinter::train::detail {

using exec::Argument;
using exec::Executor;

/// Seconds on a steady clock.
double now();
/// The metric results of a program, by name, downloaded after a run.
absl::StatusOr<std::vector<std::pair<std::string, double>>>
readMetrics(const Executor &ex);
std::optional<double> find(const std::vector<std::pair<std::string, double>> &m,
                           std::string_view name);
std::vector<const Argument *> argumentsOf(const Executor &ex,
                                          abi::ArgumentKind kind);
/// Element `i` of integer labels in host bytes: i64 when `wide`, else i32.
inline int64_t labelAt(const std::vector<unsigned char> &bytes, bool wide,
                       size_t i) {
  if (wide) {
    int64_t value;
    std::memcpy(&value, &bytes[i * 8], 8);
    return value;
  }
  int32_t narrow;
  std::memcpy(&narrow, &bytes[i * 4], 4);
  return narrow;
}
/// Params or optimizer state as a safetensors file, in argument order.
absl::StatusOr<formats::SafeTensorsFile> collect(const Executor &ex,
                                                 abi::ArgumentKind kind);
/// Sets every `kind` argument from `file`; a tensor may use the argument's
/// name or an alias (a tied parameter's other name). With `requireAll`, an
/// argument missing from the file is an error; a tensor that names no such
/// argument always is (the file belongs to another model), and so are two
/// tensors for one argument. Returns how many were set.
absl::StatusOr<int64_t> restore(Executor &ex, abi::ArgumentKind kind,
                                const formats::SafeTensorsFile &file,
                                std::string_view fileName, bool requireAll,
                                std::vector<std::string> *missing = nullptr);

class Run {
public:
  Run(Executor &trainer, Executor *eval, Executor *accumulate,
      const TrainOptions &options)
      : ex(trainer), eval(eval), acc(accumulate), opt(options) {}
  absl::Status run();

private:
  absl::Status prepareAccumulation();
  absl::Status prepareData();
  /// Parameters from --resume, --init or their initializers; `notes` says
  /// what was loaded.
  absl::Status prepareParameters(bool notes = true);
  /// One optimizer step: K - 1 accumulate runs and the training run, each
  /// on its micro-batch; `m` gets the training run's metrics, the loss and
  /// the model's metrics averaged over the K.
  absl::Status runStep(int64_t step,
                       std::vector<std::pair<std::string, double>> &m);
  absl::Status evaluate(int64_t step);
  absl::Status save(int64_t step);
  /// Sets the parameters and optimizer state from `c` (read from
  /// `source`), dropping or creating its optimizer.step as the program
  /// wants (with a note when `notes`).
  absl::Status restoreState(Checkpoint &c, const std::string &source,
                            bool notes);
  /// Step `step` ended with a non-finite loss or global norm `what`
  /// ("the loss is nan"): re-runs the steps from the last good state (the
  /// last checkpoint, or where this run began) to it in checked mode, and
  /// returns the DataLoss error that names where the values went bad.
  absl::Status diverged(int64_t step, const std::string &what);
  /// In checked mode, after a run of `runner` for micro-batch `k` of step
  /// `step`: keeps the first fault of the step in stepFault.
  void checkRun(const Executor &runner, int64_t step, int64_t k);
  /// Why the step's loss is NaN when a micro-batch's labels are all the
  /// ignore index (a mean over no positions); nullopt otherwise.
  std::optional<std::string> onlyIgnoredLabels() const;
  /// When the row of the batch where `fault` (of micro-batch `k`) first
  /// went bad holds an f32 input far beyond the batch's other rows: that
  /// example, named in the data files, and the magnitudes; else "".
  std::string dataOutlier(const exec::StepProgram &program,
                          const exec::Fault &fault, int64_t k) const;
  std::string dataDescription() const;
  /// Uploads part `part` of `parts` equal row blocks of hostBatch[k] to
  /// buffer id for each (id, k) of `targets`.
  absl::Status
  uploadBatch(Executor &to,
              const std::vector<std::pair<int64_t, size_t>> &targets,
              int64_t part = 0, int64_t parts = 1);

  Executor &ex;
  Executor *eval;
  /// The accumulate program (null without gradient accumulation): it runs
  /// in ex's params and opt_state slabs (ExecutorOptions::shareStateWith).
  Executor *acc;
  /// Micro-batches per step: the compiled grad_accumulation_steps, or
  /// --grad-accum.
  int64_t micro = 1;
  int64_t microRows = 0; // the compiled batch size B
  const TrainOptions &opt;
  std::unique_ptr<data::DataLoader> loader;
  /// The batch the data loader writes: one host buffer per model input, in
  /// the training program's input order, allocated once and uploaded to
  /// the input buffers of the executor that runs it.
  std::vector<std::vector<unsigned char>> hostBatch;
  std::vector<void *> hostBatchPointers;
  /// The loader's position before it wrote hostBatch, in checked mode (to
  /// name its rows).
  std::string batchState;
  /// (input buffer, hostBatch index) of the training, eval and accumulate
  /// programs. The host batch holds K micro-batches.
  std::vector<std::pair<int64_t, size_t>> trainUploads, evalUploads, accUploads;
  /// Parameters on their way from the training to the eval executor, sized
  /// by the first evaluation and reused by every later one.
  std::vector<unsigned char> paramTransfer;
  std::unique_ptr<ProgressReporter> progress;
  std::unique_ptr<MetricsLog> metrics;
  std::unique_ptr<TensorBoardLog> tensorboard;
  std::string dataSpec;
  std::optional<Checkpoint> resumed;
  std::string resumedFrom; // the directory it was loaded from
  std::optional<double> lr;
  uint64_t seed = 0;
  int64_t startStep = 0;
  int64_t itemsPerStep = 0;
  std::string unit;
  std::optional<double> lastLoss, lastEvalLoss;
  std::string lastCheckpoint;
  /// Where this run began: the data position and the loss scale, for a
  /// re-run from the start (diverged).
  std::string initialDataState;
  std::optional<LossScaleState> initialScale;
  /// Checked mode (--check-numerics, or a re-run after a divergence): the
  /// first non-finite value of the step in flight, as the one-line
  /// headline and the report.
  struct StepFault {
    std::string headline, report;
  };
  std::optional<StepFault> stepFault;
  /// Whether runs are checked (checkRun after each).
  bool checking = false;
  /// The job (never null: one rank when the binary runs alone).
  DataParallel *dp = nullptr;
  std::unique_ptr<DataParallel> single;
  bool rankZero() const { return dp->rank() == 0; }
  /// Means over ranks of `m`'s values; with `stop`, whether any rank was
  /// interrupted (folded into the same collective, so that every rank stops
  /// after the same step).
  /// The mean over ranks of `m`; a metric of labelMetrics is the ranks'
  /// values weighted by their `kept` labels (by name).
  absl::Status averageMetrics(std::vector<std::pair<std::string, double>> &m,
                              bool *stop, std::string_view what,
                              const std::map<std::string, double> &kept = {});
  int64_t driftStep = -1;
  /// Loss scaling, when the program has a loss_scale argument.
  std::optional<LossScaler> scaler;
  /// Sets the loss scale of this step in the training and accumulate
  /// programs.
  absl::Status setLossScale();
  /// The loss_count hyper argument of this step in the training and
  /// accumulate programs (when they have one, with several micro-batches or
  /// ranks): the labels not ignored in the whole step, summed over the
  /// ranks, divided by ranks x micro-batches (docs/Distributed.md,
  /// "Semantics").
  absl::Status setLossCount();
  /// Finds the loss's labels when setLossCount has work to do (else leaves
  /// lossLabels null).
  absl::Status prepareLossCount();
  const Argument *lossLabels = nullptr;
  size_t lossLabelsIndex = 0;
  /// How many labels of part `part` of `parts` of the host batch's loss
  /// labels are not the ignore index (lossLabels must be set).
  double keptLabels(int64_t part, int64_t parts) const;
  /// A metric that is a fraction of labels (accuracy: a Result with
  /// `labels`) whose data may hold the label that does not count, with
  /// several micro-batches or ranks to combine: each part's value is
  /// weighted by the labels that count in it, so that the step's (and a
  /// held-out batch's) value is the fraction over all of them, as one
  /// process at the whole batch computes it (docs/Distributed.md).
  struct LabelMetric {
    std::string name;
    size_t input = 0; // into hostBatch
    bool wide = true; // i64 labels, else i32
    int64_t ignore = 0;
  };
  std::vector<LabelMetric> labelMetrics;
  /// Fills labelMetrics from the training program's results.
  void prepareLabelMetrics();
  /// Labels of part `part` of `parts` of input `input` of the host batch
  /// that are not `ignore`.
  double countLabels(size_t input, bool wide, int64_t ignore, int64_t part,
                     int64_t parts) const;
  /// This step's labels that count, per metric of labelMetrics (runStep).
  std::map<std::string, double> stepKept;
  /// Records the step in the scaler and adds loss_scale and skipped to
  /// `m`; true when the step was skipped. `stop` gets the error that ends
  /// the run when too many steps in a row have overflowed (returned once
  /// the step is logged).
  bool recordLossScale(int64_t step,
                       std::vector<std::pair<std::string, double>> &m,
                       absl::Status &stop);
};

} // namespace sinter::train::detail

#endif // SINTER_RUNTIME_TRAIN_RUN_H
