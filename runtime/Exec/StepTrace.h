//===- StepTrace.h - every step's results of one run, for bisection -------===//
//
// `train --inputs=F --trace=T.safetensors` records one run of the step
// program: each argument's buffer as the run begins, under the argument's
// name (so the file is also the interpreter's input), and every buffer each
// step writes, as it leaves the step, under "@step/K/J" (step K's J-th
// write, in the order StepProgram::stepBuffers lists them), and the
// program itself as the binary holds it, serialized. The metadata name the
// function, the number of steps and what each step computes.
// `sinterc MODEL --bisect=T.safetensors` then runs the scheduled phase in
// the reference interpreter on those arguments and holds every step's
// writes against the interpreter's, each step computed from the binary's
// own inputs to it, and names the first step over the tolerance
// (docs/Testing.md, "Bisecting a wrong number").
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_EXEC_STEPTRACE_H
#define SINTER_RUNTIME_EXEC_STEPTRACE_H

#include "runtime/Exec/Executor.h"
#include "runtime/Formats/SafeTensors.h"

#include "absl/status/status.h"

#include <string>
#include <string_view>

namespace sinter::exec {

class StepTrace {
public:
  /// Records `serialized`, the program `ex` runs as the binary holds it
  /// (so that a bisection can refuse a trace of another program), the
  /// arguments as they are now, and installs the observer that records each
  /// step's writes (the run goes step by step); `ex` must outlive the trace.
  absl::Status begin(Executor &ex, std::string_view serialized);
  /// Stops recording (the observer removed) and writes the file.
  absl::Status finish(const std::string &path);

private:
  Executor *ex = nullptr;
  formats::SafeTensorsFile file;
  std::vector<int64_t> reads, writes;
};

} // namespace sinter::exec

#endif // SINTER_RUNTIME_EXEC_STEPTRACE_H
