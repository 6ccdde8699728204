//===- PassBisect.h - the passes held against one another ------*- C++ -*-===//
//
// `sinterc MODEL --bisect-passes --input=...`: the compiler keeps a copy of
// the module after every pass of the pipeline up to the scheduled phase that
// changed it (an instrumentation of each phase's pass manager), then runs
// the entry function of every copy that has it in the reference interpreter
// on the same arguments, and holds each copy's results against those of the
// copy before it. The first pass whose results differ from its input's by
// more than the tolerance is the pass that broke the numbers (DESIGN.md: "a
// pass must not change results beyond a stated tolerance"); the report also
// gives each pass's difference from the first copy, where a drift of many
// small changes would show.
//
// The first copy that has the function is the reference: for
// @train_step and @forward_grad, sinter-autodiff's output. The pass before
// it, sinter-mixed-precision, works on @forward alone and changes numbers
// by design (its band against fp32: mixed-precision.test). What comes after the scheduled phase is code
// generation: `--bisect=TRACE` (Bisect.h) holds the binary against the
// scheduled phase step by step.
//
// Tolerances as Compare.h has them (rtol for f32, 10 x rtol or one unit in
// the last place for halves, integers equal); rtol = 0 asks for bit for bit,
// which recompute, scheduling and the memory plan promise on a CPU. One
// kind of result sits close to the tolerance on correct passes: the
// parameters an Adam step updates from zero optimizer state (the default
// when none is given). A gradient that is exactly 0 (the key third of an
// attention's bias: a shift of every score of a row) comes out as rounding
// noise, ~1e-12, and the step divides it by epsilon (1e-8) where it divides
// the others by their own size, so the noise weighs 10^4 times more in the
// updated parameter than in the gradient (char-GPT at batch 1: 9.3e-5 in
// c_attn.bias after sinter-decompose-ops). compare_compiled.py bounds such
// parameters by the learning rate instead; here the report says when only
// parameters are over, and --entry=forward_grad or optimizer state given as
// input (random state: the worst of 24 random models 1.3e-6) avoid it.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_INTERPRETER_PASSBISECT_H
#define SINTER_COMPILER_INTERPRETER_PASSBISECT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

namespace sinter::interp {

class PassBisection {
public:
  explicit PassBisection(double rtol) : rtol(rtol) {}

  /// Keeps a copy of `module` as `pass` (of `phase`) left it, unless it is
  /// the same IR as the last copy kept.
  void record(llvm::StringRef pass, llvm::StringRef phase,
              mlir::ModuleOp module);
  /// An instrumentation of a pass manager for `phase`: record() after every
  /// pass run on the top-level module.
  std::unique_ptr<mlir::PassInstrumentation>
  instrumentation(llvm::StringRef phase);

  /// The passes recorded so far, in order, with the phase of each.
  std::vector<std::pair<std::string, std::string>> passes() const;

  /// Runs @function of every copy that has it on the arguments from
  /// `inputs` (as --run reads them, parameters not given from their
  /// initializers), compares each copy's results with the copy's before,
  /// prints the report to `os`. Failure when a pass is over its tolerance,
  /// a copy cannot be run, or no copy has the function (errors as
  /// diagnostics at `loc` or the files).
  mlir::LogicalResult run(llvm::StringRef function,
                          llvm::ArrayRef<std::string> inputs,
                          mlir::Location loc, llvm::raw_ostream &os);

  /// After a run() that found a pass over its tolerance: the IR that pass
  /// was given (the last copy held before it) and the IR it made, to read
  /// side by side; nulls otherwise.
  std::pair<mlir::ModuleOp, mlir::ModuleOp> firstOverIR() const;

private:
  struct Snapshot {
    std::string pass, phase;
    mlir::OwningOpRef<mlir::ModuleOp> module;
    /// The passes after this one that left the IR as it was.
    std::vector<std::string> unchanged;
  };
  double rtol;
  std::vector<Snapshot> snapshots;
  /// The last copy's IR as text, to see whether a pass changed it.
  std::string lastText;
  /// The first pass over: its copy and the copy it was held against.
  int firstOver = -1, firstOverInput = -1;
};

} // namespace sinter::interp

#endif // SINTER_COMPILER_INTERPRETER_PASSBISECT_H
