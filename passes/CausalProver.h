//===- CausalProver.h - what is known about a causal matrix's triangle --*- C++
//-*-===//
//
// Facts about the two trailing axes of square matrices under a causal
// mask, proved from `sgraph.causal_mask` selects through elementwise ops
// (the rules: passes/CausalMatmuls.cpp's header). Used to mark the
// triangles matmuls may skip (sinter-causal-matmuls) and the kernel inputs
// that are 0 above the diagonal (sinter-causal-kernel-inputs). The proof
// sees through `sgraph.fusion` regions: a region's result is its yielded
// value, and a block argument the region's operand.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_PASSES_CAUSALPROVER_H
#define SINTER_PASSES_CAUSALPROVER_H

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"

namespace sinter::causal {

/// The attribute of an `sgraph.fusion` (and its `sched.kernel`) listing the
/// operands that are 0 strictly above the diagonal of their two trailing
/// axes (sinter-causal-kernel-inputs; read by KernelBuilder::causalRows).
inline constexpr llvm::StringLiteral kZerosAttr = "sinter.causal_zeros";

/// Which side of the diagonal a value is 0 (or -inf) on, strictly.
enum class Side { None, Lower, Upper };

/// The other side (a transpose of the two axes).
Side flip(Side s);

class Prover {
public:
  /// Where v is exactly 0.
  Side zeros(mlir::Value v);
  /// Where v is -inf.
  Side negInf(mlir::Value v);
  /// No reader of v looks above its diagonal (given finite values there).
  bool unreadAbove(mlir::Value v);

private:
  Side memoized(llvm::DenseMap<mlir::Value, Side> &memo, mlir::Value v,
                Side (Prover::*compute)(mlir::Value));
  Side computeZeros(mlir::Value v);
  Side computeNegInf(mlir::Value v);
  Side bothZero(mlir::Value a, mlir::Value b, mlir::Value v);
  static Side throughTranspose(sgraph::TransposeOp op, Side s);
  bool readsOnlyLower(mlir::OpOperand &use);

  llvm::DenseMap<mlir::Value, Side> zeroMemo, negInfMemo;
  llvm::DenseMap<mlir::Value, bool> unreadMemo;
};

} // namespace sinter::causal

#endif // SINTER_PASSES_CAUSALPROVER_H
