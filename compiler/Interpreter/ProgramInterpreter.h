//===- ProgramInterpreter.h - the reference interpreter of sched ---*- C++
//-*-===//
//
// Runs a sched.program (the scheduled phase) the way the training binary
// does, on bytes: each slab is a zero-filled byte array of its size, every
// buffer is its view's bytes, and the steps run in program order. So the
// buffer assignment is exercised for real: two values the memory plan
// wrongly gives overlapping bytes corrupt each other here, as they would in
// the binary, and the results differ from the optimized phase's.
//
//   - sched.argument: the argument's tensor is written into its buffer;
//   - sched.fill: the constant is written into its buffer;
//   - sched.launch: the kernel's inputs are read from their buffers, its
//     body (sgraph ops) runs op by op in the sgraph interpreter, its results
//     are written into the output buffers;
//   - sched.matmul: op(lhs) @ op(rhs), then alpha, bias and activation,
//     each rounded to the element type as the epilogue ops of the matmul
//     kernel computed them in the optimized phase;
//   - sched.copy: the bytes move (src and dst may overlap);
//   - collectives run as on a single rank: an all-reduce or a broadcast
//     leaves its buffer as it is, an all-gather or a reduce-scatter copies
//     its input into its output;
//   - sched.result: once every step has run, its buffer is read.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_INTERPRETER_PROGRAMINTERPRETER_H
#define SINTER_COMPILER_INTERPRETER_PROGRAMINTERPRETER_H

#include "compiler/Interpreter/Tensor.h"
#include "dialects/Schedule/ScheduleOps.h"

#include <functional>
#include <vector>

namespace sinter::interp {

/// One step of the binary's step program (a sched.launch, sched.matmul,
/// sched.copy, or an all-reduce's start or done: one step each, as the step
/// program builder encodes them) just after the interpreter ran it: its
/// index among those steps, and the buffers it wrote with their bytes, in
/// the order the runtime lists a step's writes (StepProgram::stepBuffers).
struct StepWrites {
  mlir::Operation *op = nullptr;
  int64_t index = 0;
  llvm::SmallVector<std::pair<mlir::Value, llvm::MutableArrayRef<uint8_t>>>
      buffers;
};
/// Sees each step's writes and may change their bytes (a bisection puts the
/// binary's values there, so that the next step starts from them); failure
/// stops the run.
using StepHook = std::function<mlir::LogicalResult(const StepWrites &)>;

/// Runs `program` on `args`, one per sched.argument in program order, of
/// the argument's buffer type; returns one tensor per sched.result in
/// program order. Errors are diagnostics at the op. `hook`, when given,
/// runs after each step.
mlir::FailureOr<std::vector<Tensor>> runProgram(sched::ProgramOp program,
                                                std::vector<Tensor> args,
                                                const StepHook &hook = nullptr);

} // namespace sinter::interp

#endif // SINTER_COMPILER_INTERPRETER_PROGRAMINTERPRETER_H
