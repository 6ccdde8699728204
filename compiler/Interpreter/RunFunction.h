//===- RunFunction.h - run a function on tensors from files -----*- C++ -*-===//
//
// `sinterc MODEL --run=FUNCTION --input=... --output=...`: arguments are
// matched by name (parameter state_dict names, input names, optimizer-state
// names, "step") with tensors from .safetensors files and .npy files
// (`name=path.npy`, or the file's stem as the name). Parameters not given
// start from their initializers, optimizer state from zeros and the step
// from 0; model inputs must be given. Results are written by name.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_INTERPRETER_RUNFUNCTION_H
#define SINTER_COMPILER_INTERPRETER_RUNFUNCTION_H

#include "abi/Abi.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace sinter {

struct RunOptions {
  std::string function;
  std::vector<std::string> inputs;
  /// A .safetensors file, or a directory for one .npy file per result.
  std::string output;
  /// A binary's step trace to hold the scheduled program against, step by
  /// step, starting from the trace's arguments (compiler/Interpreter/
  /// Bisect.h); the run fails when a step is over its tolerance.
  std::string bisect;
  double bisectRtol = 1e-4;
  /// The step program this compilation lowers the function to: the trace
  /// must hold the same (Bisection::matches).
  const abi::StepProgram *bisectProgram = nullptr;
};

/// Runs the function with the reference interpreter; prints each 0-d result
/// as `name = value` on stdout.
mlir::LogicalResult runFunction(mlir::ModuleOp module,
                                const RunOptions &options);

} // namespace sinter

#endif // SINTER_COMPILER_INTERPRETER_RUNFUNCTION_H
