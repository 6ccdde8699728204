//===- Progress.cpp - what a training run shows and logs ------------------===//

#include "runtime/Train/Progress.h"

#include "runtime/Formats/FileIO.h"
#include "runtime/Formats/JsonDocument.h"
#include "runtime/Formats/Utf8.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sys/ioctl.h>
#include <unistd.h>

using namespace sinter::train;

std::string sinter::train::formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  if (seconds < 10)
    return absl::StrFormat("%.2fs", seconds);
  if (seconds < 60)
    return absl::StrFormat("%.1fs", seconds);
  auto total = static_cast<int64_t>(std::llround(seconds));
  if (total < 3600)
    return absl::StrFormat("%dm%02ds", total / 60, total % 60);
  return absl::StrFormat("%dh%02dm", total / 3600, (total % 3600) / 60);
}

std::string sinter::train::formatRate(double perSecond) {
  if (!std::isfinite(perSecond))
    return "?";
  if (perSecond >= 1e6)
    return absl::StrFormat("%.2fM", perSecond / 1e6);
  if (perSecond >= 1e4)
    return absl::StrFormat("%.1fk", perSecond / 1e3);
  if (perSecond >= 100)
    return absl::StrFormat("%.0f", perSecond);
  return absl::StrFormat("%.2f", perSecond);
}

//===----------------------------------------------------------------------===//
// ProgressReporter
//===----------------------------------------------------------------------===//

ProgressReporter::ProgressReporter(FILE *out, bool interactive, bool quiet,
                                   int64_t everySteps, int64_t startStep,
                                   int64_t totalSteps, std::string unit)
    : out(out), interactive(interactive), quiet(quiet),
      everySteps(everySteps < 1 ? 1 : everySteps), startStep(startStep),
      totalSteps(totalSteps), unit(std::move(unit)) {}

void ProgressReporter::clearLine() {
  if (lineOpen) {
    std::fputs("\r\033[K", out);
    lineOpen = false;
  }
}

void ProgressReporter::step(const StepReport &r, double secondsSoFar) {
  if (quiet)
    return;
  bool last = r.step == totalSteps;
  bool due = r.step == startStep + 1 || last || r.step % everySteps == 0;
  if (!interactive && !due)
    return;
  // A terminal is redrawn at most ten times a second: a small model runs
  // thousands of steps a second, and the terminal would become the cost.
  double t = std::chrono::duration<double>(
                 std::chrono::steady_clock::now().time_since_epoch())
                 .count();
  if (interactive && !last && r.step != startStep + 1 && t - lastDraw < 0.1)
    return;
  lastDraw = t;
  int width = static_cast<int>(absl::StrCat(totalSteps).size());
  std::string line = absl::StrFormat("step %*d/%d | loss %.4f", width, r.step,
                                     totalSteps, r.loss);
  if (r.lr)
    absl::StrAppend(&line, absl::StrFormat(" | lr %.3e", *r.lr));
  if (r.gradNorm)
    absl::StrAppend(&line, absl::StrFormat(" | grad norm %.3f", *r.gradNorm));
  // Whole numbers (a loss scale, a count of skipped steps) print as such.
  for (const auto &[name, value] : r.metrics)
    absl::StrAppend(&line,
                    value == std::floor(value) && std::fabs(value) < 1e15
                        ? absl::StrFormat(" | %s %d", name,
                                          static_cast<int64_t>(value))
                        : absl::StrFormat(" | %s %.4f", name, value));
  absl::StrAppend(&line, " | ", formatRate(r.itemsPerSecond), " ", unit, "/s",
                  " | ", formatDuration(r.stepSeconds), "/step");
  int64_t done = r.step - startStep;
  if (!last && done > 0) {
    double perStep = secondsSoFar / static_cast<double>(done);
    absl::StrAppend(&line, " | ETA ",
                    formatDuration(perStep * double(totalSteps - r.step)));
  }
  if (interactive) {
    // Wider than the terminal, the line would wrap and "\r" would redraw
    // only its last row.
    winsize size{};
    if (::ioctl(::fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 1 &&
        line.size() >= size.ws_col)
      line.resize(size.ws_col - 1);
    clearLine();
    std::fputs(line.c_str(), out);
    lineOpen = true;
  } else {
    std::fprintf(out, "%s\n", line.c_str());
  }
  std::fflush(out);
}

void ProgressReporter::note(const std::string &line, bool important) {
  if (quiet && !important)
    return;
  clearLine();
  std::fprintf(out, "%s\n", line.c_str());
  std::fflush(out);
}

void ProgressReporter::finish() {
  if (lineOpen) {
    std::fputc('\n', out);
    lineOpen = false;
  }
  std::fflush(out);
}

//===----------------------------------------------------------------------===//
// MetricsLog
//===----------------------------------------------------------------------===//

absl::StatusOr<std::unique_ptr<MetricsLog>>
MetricsLog::open(const std::string &path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty())
    std::filesystem::create_directories(parent, ec);
  if (ec)
    return sinter::PermissionDeniedError(
        SINTER_HERE, absl::StrCat(parent.string(),
                                  ": cannot create the --log-jsonl directory: ",
                                  ec.message()));
  FILE *file = std::fopen(path.c_str(), "a");
  if (!file)
    return sinter::PermissionDeniedError(
        SINTER_HERE,
        absl::StrCat(path, ": cannot open for writing: ", strerror(errno)));
  return std::unique_ptr<MetricsLog>(new MetricsLog(file, path));
}

MetricsLog::~MetricsLog() { std::fclose(file); }

absl::Status
MetricsLog::write(const std::vector<std::pair<std::string, double>> &fields) {
  std::string line = "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto &[key, value] = fields[i];
    absl::StrAppend(&line, i ? "," : "", "\"", key, "\":");
    if (!std::isfinite(value))
      absl::StrAppend(&line, "null");
    else if (value == std::floor(value) && std::fabs(value) < 1e15)
      absl::StrAppend(&line, static_cast<int64_t>(value));
    else
      absl::StrAppend(&line, absl::StrFormat("%.9g", value));
  }
  line += "}\n";
  return writeLine(line);
}

absl::Status MetricsLog::writeResume(int64_t step,
                                     const std::string &checkpoint) {
  formats::Json record = formats::Json::object();
  record["event"] = "resume";
  record["step"] = step;
  // JSON text holds only UTF-8; another path is written as the messages
  // quote it.
  record["checkpoint"] = formats::isValidUtf8(checkpoint)
                             ? checkpoint
                             : formats::quoteForMessage(checkpoint);
  return writeLine(formats::writeJson(record) + "\n");
}

absl::Status MetricsLog::writeLine(const std::string &line) {
  if (std::fputs(line.c_str(), file) < 0 || std::fflush(file) != 0)
    return sinter::DataLossError(
        SINTER_HERE, absl::StrCat(path, ": write failed: ", strerror(errno)));
  return absl::OkStatus();
}
