//===- Interpreter.h - the reference interpreter of sgraph ------*- C++ -*-===//
//
// The oracle every numerical test compares against (docs/Interpreter.md): a
// plain evaluator of sgraph functions over host tensors, slow and obviously
// correct. Each op computes in double precision from its (exactly
// representable) operands and rounds its results once to their element
// type; bf16 and f16 results are rounded through f32 like hardware that
// computes in f32. Collectives run as on a single rank.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_INTERPRETER_INTERPRETER_H
#define SINTER_COMPILER_INTERPRETER_INTERPRETER_H

#include "compiler/Interpreter/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace sinter::interp {

/// Runs `fn` on `args` (one per argument, of the argument's type). Errors
/// (a type mismatch, an index out of range, an unsupported op) are reported
/// as diagnostics at the op.
mlir::FailureOr<std::vector<Tensor>> runFunction(mlir::func::FuncOp fn,
                                                 std::vector<Tensor> args);

/// Runs one block (a function body, or a kernel's) on `args` up to its
/// terminator (func.return, sgraph.yield, sched.yield); its operands are
/// the results.
mlir::FailureOr<std::vector<Tensor>>
runBlock(mlir::Block &body, mlir::Location loc, std::vector<Tensor> args);

/// op(a) @ op(b) into `out`, as sgraph.matmul computes it: `op` transposes
/// the two trailing axes when asked, batch axes broadcast, each element is
/// summed in double and rounded once to out's kind.
void matmulInto(const Tensor &a, const Tensor &b, bool transposeA,
                bool transposeB, Tensor &out);

/// GELU as sgraph.gelu computes it: exact (erf) or the tanh form.
double geluOf(double x, bool tanhForm);
/// gelu's derivative, as sgraph.gelu_grad computes it (times its grad).
double geluGradOf(double x, bool tanhForm);

/// Evaluates one op on its operands. Exposed for unit tests.
mlir::LogicalResult evaluateOp(mlir::Operation *op,
                               llvm::ArrayRef<const Tensor *> operands,
                               std::vector<Tensor> &results);

/// The tensor a constant attribute holds.
mlir::FailureOr<Tensor> tensorFromAttr(mlir::ElementsAttr attr,
                                       mlir::Location loc);

/// A zero tensor of `type`.
Tensor zerosOf(mlir::RankedTensorType type);

} // namespace sinter::interp

#endif // SINTER_COMPILER_INTERPRETER_INTERPRETER_H
