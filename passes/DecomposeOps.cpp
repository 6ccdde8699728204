//===- DecomposeOps.cpp - composite ops become fusible primitives --------===//
//
// Code generation fuses three kinds of ops into loop kernels: elementwise
// ops (numpy broadcasting), single reductions (reduce_sum, reduce_max, with
// elementwise producers fused in) and data movement. This pass rewrites
// every composite sgraph op into those primitives, with ordinary sgraph ops:
//
//   reduce_mean            reduce_sum, then mul by 1/N
//   softmax(a)             m = reduce_max_a(x); e = exp(x - m); e / sum_a(e)
//   log_softmax(a)         (x - m) - log(sum_a(exp(x - m)))
//   layer_norm(a, eps)     mean and biased variance over [a, rank) as two
//                          reduce_sum * 1/N; (x - mean) * rsqrt(var + eps)
//                          * scale + bias, PyTorch's formula
//   softmax_cross_entropy  per position log(sum(exp(x - m))) - (x - m)[label]
//                          with the picked logit selected by
//                          compare(iota(C), label) and summed, ignored
//                          positions set to 0 by a select, then the reduction
//   global_norm            sqrt of the sum over operands of sum(x * x)
//
// Every other op (gelu included: it is elementwise) is left alone. Each new
// op carries the location of the op it replaces, so dumps and diagnostics
// still point at the user's layer, and every result type is the one the
// dialect's own type inference gives.
//
// Precision. The composite ops are defined (and interpreted) as computed
// exactly and rounded once; a chain of primitives rounds at every step. For
// f32 and f64 the chain stays within a few ulps. For f16 and bf16 it would
// not (the shifted logits of a softmax lose 2^-9 of relative precision before
// exp), so the expansion of a half-precision op computes in f32: its operands
// are cast up, its result cast back, as PyTorch's kernels accumulate.
// global_norm accumulates in f64, as specified: every operand is cast to
// f64 before squaring and the norm is cast back at the end.
//
// One behaviour is not representable: the op fails at run time for a label
// outside [0, C) that is not ignore_index, but the decomposed graph has no
// way to fail (such a position would pick no logit and contribute
// logsumexp(x) - max(x), finite and meaningless). So before expanding, the
// pass records C and ignore_index on the function argument the labels come
// from (through reshapes and casts): sgraph.index_bound and
// sgraph.index_ignore, which become the step program's bound and ignore,
// and the trainer checks every batch against them before it runs. Labels
// computed in the graph are not checked; the reference interpreter
// (sinterc --run) runs the undecomposed op and reports them.
//
// Preconditions: verified sgraph IR (static shapes). Place: after
// sinter-autodiff and sinter-erase-stop-gradient (the gradient rules are
// written against the composite ops, so decomposing earlier would give worse
// backward graphs), before fusion; this is the first pass of the optimized
// phase.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Graph/GraphBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"

namespace sinter {
#define GEN_PASS_DEF_DECOMPOSEOPSPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter::sgraph;

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The element type the expansion of an op on `type` computes in: f32 for
/// f16 and bf16, the type itself otherwise.
Type computeElementType(Type type) {
  if (type.isF16() || type.isBF16())
    return Float32Type::get(type.getContext());
  return type;
}

/// [0, rank): every axis of a tensor.
SmallVector<int64_t> allAxes(int64_t rank) {
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < rank; ++i)
    axes.push_back(i);
  return axes;
}

/// The builder at one op (the insertion point and location of its
/// expansion), owned before the GraphBuilder that refers to it.
struct BuilderAtOp {
  explicit BuilderAtOp(Operation *op) : builder(op) {}
  OpBuilder builder;
};

/// Builds the expansion of one op, at that op and with its location, so that
/// each rule below reads like its formula (GraphBuilder.h).
class Expander : private BuilderAtOp, public GraphBuilder {
public:
  explicit Expander(Operation *op)
      : BuilderAtOp(op), GraphBuilder(builder, op->getLoc()) {}

  /// The mean as a sum times a splat 1/N (N = 0 gives inf, so an empty
  /// reduction is 0 * inf = NaN, as reduce_mean's 0 / 0).
  Value reduceMean(Value x, ArrayRef<int64_t> axes, bool keepdims) {
    int64_t count = 1;
    for (int64_t axis : axes)
      count *= tensorType(x).getDimSize(axis);
    // Sequenced: argument evaluation order would make the IR
    // compiler-dependent.
    Value sum = reduceSum(x, axes, keepdims);
    return mul(sum, scalar(x, 1.0 / double(count)));
  }

  /// `x` in the type its expansion computes in (f32 for half precision).
  Value up(Value x) {
    return castTo(x, computeElementType(tensorType(x).getElementType()));
  }
};

//===----------------------------------------------------------------------===//
// The expansions. Each returns the value that replaces the op's result.
//===----------------------------------------------------------------------===//

Value expand(ReduceMeanOp op) {
  Expander e(op);
  // An empty axis list copies the operand (and the result has its type).
  if (op.getAxes().empty())
    return op.getOperand();
  Value mean =
      e.reduceMean(e.up(op.getOperand()), op.getAxes(), op.getKeepdims());
  return e.castTo(mean, op.getType().getElementType());
}

/// softmax and log_softmax: both start from x - max, the maximum kept as a
/// size-1 axis so that it broadcasts back along `axis`.
Value expandSoftmax(Operation *op, Value operand, int64_t axis, bool isLog) {
  Expander e(op);
  Value x = e.up(operand);
  Value shifted = e.sub(x, e.reduceMax(x, {axis}, /*keepdims=*/true));
  Value exps = e.exp(shifted);
  Value sum = e.reduceSum(exps, {axis}, /*keepdims=*/true);
  Value result = isLog ? e.sub(shifted, e.log(sum)) : e.div(exps, sum);
  return e.castTo(result, tensorType(operand).getElementType());
}

Value expand(SoftmaxOp op) {
  return expandSoftmax(op, op.getOperand(), op.getAxis(), /*isLog=*/false);
}

Value expand(LogSoftmaxOp op) {
  return expandSoftmax(op, op.getOperand(), op.getAxis(), /*isLog=*/true);
}

Value expand(LayerNormOp op) {
  Expander e(op);
  Value x = e.up(op.getOperand());
  int64_t rank = tensorType(x).getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = op.getAxis(); i < rank; ++i)
    axes.push_back(i);
  // (..., 1, ..., 1): mean and variance broadcast back over [axis, rank).
  Value centered = e.sub(x, e.reduceMean(x, axes, /*keepdims=*/true));
  Value var = e.reduceMean(e.mul(centered, centered), axes, /*keepdims=*/true);
  double eps = op.getEpsilon().convertToDouble();
  Value rstd = e.rsqrt(e.add(var, e.scalar(var, eps)));
  // scale and bias are shape(x)[axis:], which broadcasting aligns at the
  // trailing axes. Left to right, as the op's definition.
  Value normalized = e.mul(centered, rstd);
  Value scaled = e.mul(normalized, e.up(op.getScale()));
  Value y = e.add(scaled, e.up(op.getBias()));
  return e.castTo(y, op.getType().getElementType());
}

Value expand(SoftmaxCrossEntropyOp op) {
  Expander e(op);
  Value logits = e.up(op.getLogits()); // (..., C)
  Value labels = op.getLabels();       // (...)
  RankedTensorType logitsType = tensorType(logits);
  RankedTensorType labelsType = tensorType(labels);
  int64_t last = logitsType.getRank() - 1;
  int64_t classes = logitsType.getDimSize(last);
  Type labelElement = labelsType.getElementType();

  // shifted = x - max(x), (..., C); lse - max = log(sum(exp(shifted))), (...).
  Value shifted = e.sub(logits, e.reduceMax(logits, {last}, /*keepdims=*/true));
  Value lseMinusMax = e.log(e.reduceSum(e.exp(shifted), {last}, false));

  // The picked logit (minus the max), (...): the one column whose index
  // equals the label. A select rather than one_hot * x: a masked -inf logit
  // elsewhere in the row would make 0 * -inf = NaN. A label outside [0, C)
  // selects nothing and picks 0 (see the file comment).
  auto classType = RankedTensorType::get({classes}, labelElement);
  Value classIds =
      e.b.create<IotaOp>(e.loc, classType, e.b.getI64IntegerAttr(0));
  SmallVector<int64_t> columnShape(labelsType.getShape());
  columnShape.push_back(1);
  Value labelColumn = e.b.create<ReshapeOp>(
      e.loc, labelsType.clone(columnShape), labels);      // (..., 1)
  Value isLabel = e.compare(labelColumn, classIds, "eq"); // (..., C) i1
  Value zero = e.scalar(logits, 0.0);
  Value picked = e.reduceSum(e.select(isLabel, shifted, zero), {last}, false);

  // Ignored positions are 0 (select, not * valid: their logits may be
  // anything, and inf * 0 = NaN). ignore_index is read signed (the I64Attr
  // getter is unsigned) and wrapped to the labels' width, not sent through
  // buildScalarConstant's double.
  unsigned labelBits = labelElement.getIntOrFloatBitWidth();
  APInt ignoreIndex = op.getIgnoreIndexAttr().getValue().sextOrTrunc(labelBits);
  Value ignore = e.b.create<ConstantOp>(
      e.loc, DenseElementsAttr::get(RankedTensorType::get({}, labelElement),
                                    ignoreIndex));
  Value valid = e.compare(labels, ignore, "ne"); // (...) i1
  Value losses = e.select(valid, e.sub(lseMinusMax, picked), zero);

  Type resultElement = op.getType().getElementType();
  StringRef reduction = op.getReduction();
  if (reduction == "none")
    return e.castTo(losses, resultElement);
  SmallVector<int64_t> axes = allAxes(labelsType.getRank());
  Value total = e.reduceSum(losses, axes, false);
  if (reduction == "sum")
    return e.castTo(total, resultElement);
  // mean: total / count(valid); 0 / 0 = NaN when everything is ignored, as
  // the op. The count is exact in f32 up to 2^24 positions.
  Value count = e.reduceSum(
      e.castTo(valid, tensorType(logits).getElementType()), axes, false);
  return e.castTo(e.div(total, e.countOrShare(count, op.getCount())),
                  resultElement);
}

Value expand(GlobalNormOp op) {
  Expander e(op);
  Type resultElement = op.getType().getElementType();
  // Always f64, as the op's spec says: the norm sums millions of squares,
  // and an f32 sum over a 10M-parameter model drifts by ~1e-4 (measured),
  // which clipping then applies to every gradient. The cast fuses into the
  // reduction kernel, which stays memory-bound.
  Type accumulate = Float64Type::get(op.getContext());
  Value total;
  for (Value operand : op.getOperands()) {
    // Cast before squaring: x * x overflows f16 from |x| > 256.
    Value x = e.castTo(operand, accumulate);
    Value squares = e.mul(x, x);
    if (tensorType(x).getRank() > 0)
      squares = e.reduceSum(squares, allAxes(tensorType(x).getRank()), false);
    total = total ? e.add(total, squares) : squares;
  }
  return e.castTo(e.sqrt(total), resultElement);
}

/// Records the classes and ignore_index of `op` on the function argument
/// its labels are (see the file comment): the smallest class count of the
/// cross-entropies that read it, and their ignore_index while they agree.
void recordLabelBound(SoftmaxCrossEntropyOp op) {
  Value labels = op.getLabels();
  while (Operation *def = labels.getDefiningOp()) {
    if (!isa<ReshapeOp, CastOp>(def))
      return;
    labels = def->getOperand(0);
  }
  auto arg = dyn_cast<BlockArgument>(labels);
  auto fn = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                : func::FuncOp();
  if (!fn)
    return;
  unsigned i = arg.getArgNumber();
  int64_t classes = tensorType(op.getLogits()).getShape().back();
  int64_t ignore = op.getIgnoreIndex();
  Builder b(op.getContext());
  auto bound = fn.getArgAttrOfType<IntegerAttr>(i, attr::kIndexBound);
  auto ignored = fn.getArgAttrOfType<IntegerAttr>(i, attr::kIndexIgnore);
  bool first = !bound;
  if (first || classes < bound.getInt())
    fn.setArgAttr(i, attr::kIndexBound, b.getI64IntegerAttr(classes));
  if (first)
    fn.setArgAttr(i, attr::kIndexIgnore, b.getI64IntegerAttr(ignore));
  else if (ignored && ignored.getInt() != ignore)
    fn.removeArgAttr(i, attr::kIndexIgnore);
}

class DecomposeOpsPass
    : public sinter::impl::DecomposeOpsPassBase<DecomposeOpsPass> {
public:
  void runOnOperation() override {
    // Collected first: the expansions insert ops next to the ones visited.
    // They contain no composite op, so one sweep is enough.
    SmallVector<Operation *> composites;
    getOperation().walk([&](Operation *op) {
      if (isa<ReduceMeanOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp,
              SoftmaxCrossEntropyOp, GlobalNormOp>(op))
        composites.push_back(op);
    });
    for (Operation *op : composites)
      if (auto ce = dyn_cast<SoftmaxCrossEntropyOp>(op))
        recordLabelBound(ce);
    for (Operation *op : composites) {
      Value replacement =
          llvm::TypeSwitch<Operation *, Value>(op)
              .Case<ReduceMeanOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp,
                    SoftmaxCrossEntropyOp, GlobalNormOp>(
                  [](auto concrete) { return expand(concrete); });
      op->getResult(0).replaceAllUsesWith(replacement);
      op->erase();
    }
  }
};

} // namespace
