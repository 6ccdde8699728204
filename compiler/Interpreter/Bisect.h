//===- Bisect.h - a binary's step-by-step trace against the interpreter --===//
//
// `sinterc MODEL --bisect=TRACE.safetensors` (TRACE from the binary's
// `--inputs=F --trace=TRACE`, runtime/Exec/StepTrace.h): the scheduled
// phase runs in the reference interpreter on the arguments the trace
// recorded, and after each step the buffers it wrote are held against the
// binary's, then replaced by them. So every step is computed from the
// binary's own inputs to it, and what is measured is the step's own error,
// not the drift of the steps before: the first step over its tolerance is
// where the binary goes wrong (docs/Testing.md, "Bisecting a wrong
// number").
//
// Tolerances, normwise (||binary - interpreter|| / ||interpreter||) over
// each written buffer, as Compare.h has them: `rtol` (default 1e-4,
// compare_compiled.py's bound for state after one step) for f32 and f64;
// 10 x rtol for bf16 and f16, or no element more than one unit in the last
// place away; integers and booleans equal; a NaN or infinity where the
// interpreter has one. Above
// the diagonal of a matmul marked out_lower the binary writes 0s that nothing
// reads (docs/StepProgram.md, "Causal matmuls"): those elements are not
// compared.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_INTERPRETER_BISECT_H
#define SINTER_COMPILER_INTERPRETER_BISECT_H

#include "abi/Abi.h"
#include "compiler/Interpreter/Compare.h"
#include "compiler/Interpreter/ProgramInterpreter.h"
#include "runtime/Formats/SafeTensors.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

namespace sinter::interp {

class Bisection {
public:
  /// Reads the trace at `path`; a file that is no trace is an error at it.
  static mlir::FailureOr<std::unique_ptr<Bisection>>
  open(const std::string &path, double rtol, mlir::MLIRContext *context);

  /// The trace's tensors: its arguments by name, and the steps' writes.
  formats::SafeTensorsFile &file() { return trace; }
  /// The function the binary ran.
  std::string function() const;

  /// Whether the trace can be of `program`: the same number of steps, a
  /// tensor for each of its arguments (by name or alias), and, when given,
  /// `lowered` (the step program this compilation lowers `program` to) the
  /// one the binary ran, but for the seed its --seed may change (only the
  /// parameters' initial values depend on it, and the trace holds those).
  /// An error at the trace naming the first difference otherwise. A trace
  /// without its program (from a binary before they carried one) is
  /// warned about and held by the rest.
  mlir::LogicalResult matches(sched::ProgramOp program,
                              const abi::StepProgram *lowered = nullptr);

  /// runProgram's hook: compares step `w` with the trace and puts the
  /// binary's bytes in its buffers. A step the trace does not have, or
  /// whose buffers differ in type or size, is an error at the step: the
  /// trace is of another program.
  mlir::LogicalResult onStep(const StepWrites &w);

  /// Prints the report to `os`; failure when a step is over its tolerance
  /// or the program and the trace differ in length.
  mlir::LogicalResult finish(llvm::raw_ostream &os);

private:
  struct Write {
    int64_t index = 0;
    std::string type; // "f32 [64x256]"
    Difference difference;
  };
  struct StepResult {
    int64_t index = 0;
    std::vector<Write> writes;
    bool over() const;
    double error() const;
  };
  Bisection(formats::SafeTensorsFile trace, std::string path, double rtol)
      : trace(std::move(trace)), path(std::move(path)), rtol(rtol) {}
  std::string describe(int64_t step) const;

  formats::SafeTensorsFile trace;
  std::string path;
  double rtol;
  int64_t traceSteps = 0;
  std::vector<StepResult> steps;
};

} // namespace sinter::interp

#endif // SINTER_COMPILER_INTERPRETER_BISECT_H
