//===- Runnable.h - a function or program and its arguments ----*- C++ -*-===//
//
// What `--run` (RunFunction.cpp) and `--bisect-passes` (PassBisect.cpp)
// share: tensors read from .safetensors and .npy files by name, a function
// (any phase up to optimized) or a sched.program (the scheduled phase) seen
// as arguments and results, and its arguments assembled from the files.
// Arguments are matched by name (parameter state_dict names, input names,
// optimizer-state names, "step") or alias; parameters not given start from
// their initializers (the model's seed), optimizer state, accumulators, the
// step and the rank from zeros, hyperparameters from their defaults; model
// inputs must be given.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_INTERPRETER_RUNNABLE_H
#define SINTER_COMPILER_INTERPRETER_RUNNABLE_H

#include "abi/Abi.h"
#include "compiler/Interpreter/ProgramInterpreter.h"
#include "compiler/Interpreter/Tensor.h"
#include "runtime/Formats/HostTensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sinter::interp {

/// A tensor from a file, with where it came from.
struct Provided {
  formats::HostTensor tensor;
  std::string file;
  bool used = false;
};
using ProvidedTensors = llvm::StringMap<Provided>;

/// Reads every --input (x.safetensors, x.npy, name=x.npy) into `provided`,
/// by name; a name given twice is an error at the second file.
mlir::LogicalResult readInputs(llvm::ArrayRef<std::string> inputs,
                               mlir::Location loc, ProvidedTensors &provided);

/// What a run needs to know of one argument, from a function's argument
/// attributes or a program's sched.argument.
struct ArgumentSpec {
  std::string name;
  llvm::SmallVector<std::string> aliases;
  mlir::RankedTensorType type;
  mlir::Location loc;
  std::optional<abi::ArgumentKind> kind; // none: an unmarked input
  mlir::DictionaryAttr init;             // params
  mlir::FloatAttr defaultValue;          // hyperparameters
};

/// A function or a sched.program, as arguments, result names and a way to
/// run it.
struct Runnable {
  std::vector<ArgumentSpec> arguments;
  std::vector<std::string> resultNames;
  std::function<mlir::FailureOr<std::vector<Tensor>>(std::vector<Tensor>)> run;
};

/// @function of `module`: a sched.program (run with `hook` after each
/// step) or a function with a body; nullopt when it has neither.
std::optional<Runnable> runnableOf(mlir::ModuleOp module,
                                   llvm::StringRef function,
                                   const StepHook &hook = nullptr);
/// The functions and programs of `module` that could run, for errors.
std::string runnableNames(mlir::ModuleOp module);

/// The model's training seed (1337 without one): parameters' initializers
/// draw from it.
uint64_t modelSeed(mlir::ModuleOp module);

/// `runnable`'s arguments from `provided` (marking what it used), else as
/// the header says; `initialized` counts the parameters initialized. An
/// error at the argument or the file when one cannot be had.
mlir::FailureOr<std::vector<Tensor>>
assembleArguments(const Runnable &runnable, llvm::StringRef function,
                  ProvidedTensors &provided, uint64_t seed, int &initialized);

/// Warns at `loc` about the tensors of `provided` no argument used.
void warnUnused(const ProvidedTensors &provided, mlir::Location loc,
                llvm::StringRef function);

} // namespace sinter::interp

#endif // SINTER_COMPILER_INTERPRETER_RUNNABLE_H
