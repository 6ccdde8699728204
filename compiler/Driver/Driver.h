//===- Driver.h - sinterc as a library -------------------------*- C++ -*-===//
//
// What `sinterc` does, callable from tests: import a model description (or
// read .mlir), run the phases up to `--compile-to` for a target, write each
// phase's IR to `--dump-dir`, print or save the result, and optionally run a
// function of it with the reference interpreter on tensors from .npy /
// safetensors files.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_DRIVER_DRIVER_H
#define SINTER_COMPILER_DRIVER_DRIVER_H

#include "compiler/Pipelines/Pipelines.h"

#include "mlir/IR/MLIRContext.h"

#include <optional>
#include <string>
#include <vector>

namespace sinter {

struct DriverOptions {
  /// model.pbtxt, or a .mlir file already in some phase.
  std::string input;
  /// Where the IR (or, later, the binary) goes; "-" is stdout.
  std::string output = "-";
  /// Stop after this phase; unset means the last one (the binary).
  std::optional<Phase> compileTo;
  /// Write numbered per-phase IR here.
  std::string dumpDir;
  std::optional<int64_t> batchSize;
  /// Replaces training.precision (model files only).
  std::optional<std::string> precision;
  /// Print a table of the parameters instead of IR (--summary).
  bool summary = false;

  /// The function code generation compiles: train_step, or forward_grad
  /// (the gradients, built by autodiff in gradients mode; for checks).
  std::string entry = "train_step";
  /// Let arena values whose lifetimes do not overlap share bytes.
  bool memoryReuse = true;
  /// Give @train_step an `lr` argument (kind hyper) for the peak learning
  /// rate. Unset: only when building the binary (its trainer's --lr).
  std::optional<bool> runtimeLr;

  /// Which layers are recomputed: unset follows the model; "none" or
  /// "blocks" (ImportOptions::recompute). "none" also ignores the model's
  /// budget (not memoryBudget).
  std::optional<std::string> recompute;
  /// The arena budget sinter-recompute makes the step fit: bytes or a
  /// fraction (docs/Recompute.md); empty: the model's, if any.
  std::string memoryBudget;
  /// sinter-bucket-gradients' bucket size (0: one all-reduce per gradient).
  int64_t bucketBytes = 25 << 20;
  /// Compile up to the scheduled phase and print the memory report
  /// (formatMemoryReport) instead of IR.
  bool memoryReport = false;

  /// Run this function with the reference interpreter.
  std::string runFunction;
  /// Tensor files for its arguments: x.safetensors, x.npy or name=x.npy.
  std::vector<std::string> runInputs;
  /// Where its results go: a .safetensors file, or a directory of .npy files.
  std::string runOutput;
  /// A binary's step trace (--bisect): compile --entry's function to the
  /// scheduled phase as the binary's build does (the runtime lr included)
  /// and hold it against the trace step by step (compiler/Interpreter/
  /// Bisect.h), with this normwise tolerance for f32.
  std::string bisectTrace;
  /// Compile --entry's function to the scheduled phase keeping the IR
  /// after every pass, run each in the interpreter on runInputs and name
  /// the first pass that changes the results by more than bisectRtol
  /// (compiler/Interpreter/PassBisect.h).
  bool bisectPasses = false;
  /// --bisect's and --bisect-passes' normwise tolerance for f32 (halves:
  /// 10 x); --bisect-passes takes 0 for bit for bit.
  double bisectRtol = 1e-4;

  /// The machine the binary is for (codegen::lookupTarget).
  std::string target = "cpu";
  /// The matmul epilogues fusion may use, a subset of the target's; unset:
  /// all of them (--matmul-epilogues).
  std::optional<std::vector<std::string>> matmulEpilogues;
  /// Causal attention's matmuls skip the triangles that are 0 or unread
  /// (--causal-matmuls; sinter-causal-matmuls).
  bool causalMatmuls = true;
  /// Print where the time went, per phase and pass (MLIR's timing report).
  bool timings = false;
};

/// Runs the driver; diagnostics go through the context. Returns the process
/// exit code.
int runDriver(const DriverOptions &options, mlir::MLIRContext &context);

} // namespace sinter

#endif // SINTER_COMPILER_DRIVER_DRIVER_H
