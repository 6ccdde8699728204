//===- Numerics.h - where a step's first non-finite value came from ------===//
//
// A checked run (Executor::setCheckNumerics) scans every float buffer each
// step reads, before the step, and writes, after it, and records the steps
// whose buffers were not all finite. From that record, findFault() walks
// back from the first NaN (or, without one, the first non-finite value
// written to a result: the loss, a metric, a parameter) through the
// non-finite inputs of each step to the step that wrote non-finite values
// from finite ones: the origin. An origin with no step before it is an
// argument that was already non-finite when the run began (a parameter,
// optimizer state, a model input).
//
// Only steps whose buffers are not all finite are recorded, so a healthy
// run records nothing; a masked attention's -inf alone records its steps
// but, giving no NaN and reaching no result, is no fault.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_EXEC_NUMERICS_H
#define SINTER_RUNTIME_EXEC_NUMERICS_H

#include "runtime/Exec/StepProgram.h"

#include "absl/types/span.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sinter::exec {

/// What a scan of one buffer found.
struct BufferScan {
  int64_t buffer = -1;
  int64_t nan = 0, posInf = 0, negInf = 0;
  int64_t firstBad = -1; // element index of the first non-finite value
  /// The range of the finite elements (min > max when there are none).
  double min = 0, max = 0;
  int64_t elements = 0;
  bool finite() const { return nan == 0 && posInf == 0 && negInf == 0; }
};

/// Scans buffer `buffer` of `program` at `data` (f32, f64, f16, bf16);
/// false, and nothing scanned, for other element types.
bool scanBuffer(const StepProgram &program, int64_t buffer, const void *data,
                BufferScan &out);

/// Whether buffer `buffer` at `data` holds only finite values (true for
/// non-float types): an exponent test the compiler vectorizes, the fast
/// path of a checked run; scanBuffer does the counting when it fails.
bool allFinite(const StepProgram &program, int64_t buffer, const void *data);

/// One step of a checked run whose reads or writes held a non-finite value.
struct StepScan {
  int64_t step = 0;
  std::vector<BufferScan> reads, writes; // the float buffers, in order
};

/// A checked run's record: its steps with a non-finite buffer, in order.
struct NumericsLog {
  std::vector<StepScan> steps;
};

/// A checked run's scans, step by step, as every executor does them: the
/// step's reads before it runs, its writes after, and the step recorded in
/// the log when any of them is not finite. A healthy step costs one
/// vectorized exponent test per buffer (allFinite); ranges and counts are
/// computed only for a step that is recorded. A read the step overwrites in
/// place is scanned in full before it runs, while its values are still
/// there.
///
/// `view` gives the bytes of a buffer as the step left them, on the host:
/// the CPU executor's own memory, or the CUDA executor's copy after its
/// streams are synchronized. It may return null (a failed copy); the scan
/// then stops, and the caller reports the error it kept.
class StepScanner {
public:
  using View = std::function<const void *(int64_t buffer)>;

  /// Before step `step` runs.
  void before(const StepProgram &program, int64_t step, const View &view);
  /// After it has run: appends the step to `log` when a buffer was not
  /// all finite.
  void after(const StepProgram &program, const View &view, NumericsLog &log);

private:
  std::vector<int64_t> reads, writes;
  StepScan scan;
  bool finite = true; // the step being scanned, so far
};

/// Where the first non-finite value of a run came from.
struct Fault {
  /// The step that wrote non-finite values from finite inputs; -1 when the
  /// values were already in an argument when the run began.
  int64_t step = -1;
  /// The non-finite buffer: the origin step's first non-finite write, or
  /// the argument's buffer.
  BufferScan value;
  /// The origin step's inputs (finite).
  std::vector<BufferScan> inputs;
  /// Of a merged launch (Step::members), the member that wrote `value`
  /// (`inputs` are then its own); -1 for any other step.
  int64_t member = -1;
};

/// The origins of `step` that belong to member `member` of its merged
/// launch, or all of them when `member` is -1.
absl::Span<const Origin> originsOf(const Step &step, int64_t member);

/// The origin of `log`'s first NaN (or non-finite result), or nullopt when
/// the run has neither.
std::optional<Fault> findFault(const StepProgram &program,
                               const NumericsLog &log);

/// The ops of the origin step that can have made its values from finite
/// inputs: a NaN first from a domain error (log or sqrt of a negative, 0/0,
/// pow), then, as an infinity, from an overflow (exp, a division by zero, a
/// narrowing cast), and only when the step has none of those, from its
/// arithmetic (any op). Empty for an argument, or a step without origins.
std::vector<const Origin *> suspects(const StepProgram &program,
                                     const Fault &fault);

/// What the user reads: the step, its kernel, the ops and layers it
/// computes (with the one op that can make the value, when one alone can),
/// how many values went bad, and the inputs' ranges; or the argument that
/// already held them. Several lines, each without a trailing newline
/// except between them.
std::string describeFault(const StepProgram &program, const Fault &fault);

/// When the origin step is the end of an all-reduce (data parallelism):
/// the values came from another rank, or overflowed a 16-bit transfer,
/// said in one phrase; nullopt for any other step.
std::optional<std::string> receivedFault(const StepProgram &program,
                                         const Fault &fault);

/// "log of layer \"fc1\" (model.pbtxt:8:1)": the op, its layer and place,
/// each when known ("of layer" only when there is an op).
std::string describeOrigin(const Origin &origin);

/// "kernel k3_exp_sum" for a kernel step, else the step's kind ("matmul").
std::string stepKindText(const StepProgram &program, const Step &step);

} // namespace sinter::exec

#endif // SINTER_RUNTIME_EXEC_NUMERICS_H
