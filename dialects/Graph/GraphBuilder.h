//===- GraphBuilder.h - sgraph ops that read like formulas ----*- C++ -*-===//
//
// Gradient rules (GraphGradients.cpp) and op expansions
// (passes/DecomposeOps.cpp) both write sgraph math as short formulas:
// `b.mul(b.sub(x, mean), rstd)`. This is the one builder they share: every
// op is created at the builder's insertion point with one location.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_DIALECTS_GRAPH_GRAPHBUILDER_H
#define SINTER_DIALECTS_GRAPH_GRAPHBUILDER_H

#include "dialects/Graph/GraphOps.h"

namespace sinter::sgraph {

class GraphBuilder {
public:
  GraphBuilder(mlir::OpBuilder &b, mlir::Location loc) : b(b), loc(loc) {}

  using Value = mlir::Value;

  Value add(Value l, Value r) { return b.create<AddOp>(loc, l, r); }
  Value sub(Value l, Value r) { return b.create<SubOp>(loc, l, r); }
  Value mul(Value l, Value r) { return b.create<MulOp>(loc, l, r); }
  Value div(Value l, Value r) { return b.create<DivOp>(loc, l, r); }
  Value pow(Value l, Value r) { return b.create<PowOp>(loc, l, r); }
  Value neg(Value x) { return b.create<NegOp>(loc, x); }
  Value exp(Value x) { return b.create<ExpOp>(loc, x); }
  Value log(Value x) { return b.create<LogOp>(loc, x); }
  Value sqrt(Value x) { return b.create<SqrtOp>(loc, x); }
  Value rsqrt(Value x) { return b.create<RsqrtOp>(loc, x); }
  Value tanh(Value x) { return b.create<TanhOp>(loc, x); }
  Value erf(Value x) { return b.create<ErfOp>(loc, x); }
  Value select(Value c, Value t, Value f) {
    return b.create<SelectOp>(loc, c, t, f);
  }
  Value compare(Value l, Value r, llvm::StringRef direction) {
    return b.create<CompareOp>(loc, l, r, b.getStringAttr(direction));
  }
  Value reduceSum(Value x, llvm::ArrayRef<int64_t> axes, bool keepdims) {
    return b.create<ReduceSumOp>(loc, x, b.getDenseI64ArrayAttr(axes),
                                 b.getBoolAttr(keepdims));
  }
  Value reduceMax(Value x, llvm::ArrayRef<int64_t> axes, bool keepdims) {
    return b.create<ReduceMaxOp>(loc, x, b.getDenseI64ArrayAttr(axes),
                                 b.getBoolAttr(keepdims));
  }

  /// A 0-d constant with `like`'s element type; broadcasting does the rest.
  Value scalar(Value like, double value) {
    return buildScalarConstant(b, loc, tensorType(like).getElementType(),
                               value);
  }

  /// `x` converted to `elementType` (no op when it already has it).
  Value castTo(Value x, mlir::Type elementType) {
    mlir::RankedTensorType type = tensorType(x);
    if (type.getElementType() == elementType)
      return x;
    return b.create<CastOp>(loc, type.clone(elementType), x);
  }

  /// What a mean cross-entropy divides by: `share` (softmax_cross_entropy's
  /// optional `count`, the step's count shared out) where it is positive,
  /// else `count`, the positions not ignored (0-d, float).
  Value countOrShare(Value count, Value share) {
    if (!share)
      return count;
    Value s = castTo(share, tensorType(count).getElementType());
    return select(compare(s, scalar(s, 0.0), "gt"), s, count);
  }

  /// `x` with `shape` (no op when it already has it).
  Value reshape(Value x, llvm::ArrayRef<int64_t> shape) {
    auto type =
        mlir::RankedTensorType::get(shape, tensorType(x).getElementType());
    if (type == x.getType())
      return x;
    return b.create<ReshapeOp>(loc, type, x);
  }

  static mlir::RankedTensorType tensorType(Value v) {
    return llvm::cast<mlir::RankedTensorType>(v.getType());
  }

  mlir::OpBuilder &b;
  mlir::Location loc;
};

} // namespace sinter::sgraph

#endif // SINTER_DIALECTS_GRAPH_GRAPHBUILDER_H
