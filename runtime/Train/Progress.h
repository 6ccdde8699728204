//===- Progress.h - what a training run shows and logs --------------------===//
//
// Two channels:
//
//   - ProgressReporter, for people: on a terminal one status line redrawn in
//     place (step, loss, lr, throughput, ETA) with notes (evaluations,
//     checkpoints) printed above it; otherwise plain lines every
//     `everySteps` steps, so a log file or CI output reads top to bottom.
//   - MetricsLog, for programs: JSONL, one object per step and per
//     evaluation, flushed line by line so that `tail -f` and a killed run
//     both see every finished step.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_TRAIN_PROGRESS_H
#define SINTER_RUNTIME_TRAIN_PROGRESS_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sinter::train {

/// "0.84s", "12.3s", "4m05s", "2h07m".
std::string formatDuration(double seconds);
/// A rate with an SI suffix: "812", "12.4k", "3.10M".
std::string formatRate(double perSecond);

/// One finished step, as the reporter shows it.
struct StepReport {
  int64_t step = 0; // 1-based count of steps done
  double loss = 0;
  std::optional<double> lr;
  std::optional<double> gradNorm;
  /// Other metrics of the step (name, value), e.g. accuracy.
  std::vector<std::pair<std::string, double>> metrics;
  double stepSeconds = 0;  // this step
  double itemsPerSecond = 0; // smoothed
};

class ProgressReporter {
public:
  /// `unit` is "tok" or "samples"; `startStep` is where a resumed run began.
  ProgressReporter(FILE *out, bool interactive, bool quiet, int64_t everySteps,
                   int64_t startStep, int64_t totalSteps, std::string unit);

  /// Updates the status line (terminal) or prints a line when due.
  void step(const StepReport &report, double secondsSoFar);
  /// A line of its own ("eval ...", "saved ..."), shown even with --quiet
  /// unless `important` is false.
  void note(const std::string &line, bool important = true);
  /// Ends the status line so that later output starts on a fresh line.
  void finish();

private:
  void clearLine();
  FILE *out;
  bool interactive, quiet;
  int64_t everySteps, startStep, totalSteps;
  std::string unit;
  bool lineOpen = false;
  double lastDraw = 0; // steady-clock seconds of the last redraw
};

/// Append-only JSONL metrics.
class MetricsLog {
public:
  /// Opens `path` for appending (a resumed run continues the same file),
  /// creating its directory if needed.
  static absl::StatusOr<std::unique_ptr<MetricsLog>>
  open(const std::string &path);
  ~MetricsLog();

  /// Writes {"key": value, ...} as one line; values are numbers. Non-finite
  /// values are written as null.
  absl::Status write(const std::vector<std::pair<std::string, double>> &fields);
  /// Writes {"event": "resume", "step": K, "checkpoint": DIR}: the run
  /// continues from step K, so a reader drops the earlier lines' records
  /// of steps after K (a run that was killed after its last checkpoint
  /// logged them once already).
  absl::Status writeResume(int64_t step, const std::string &checkpoint);

private:
  explicit MetricsLog(FILE *file, std::string path)
      : file(file), path(std::move(path)) {}
  absl::Status writeLine(const std::string &line);
  FILE *file;
  std::string path;
};

} // namespace sinter::train

#endif // SINTER_RUNTIME_TRAIN_PROGRESS_H
