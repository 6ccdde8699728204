//===- GraphGradients.cpp - reverse-mode gradient rules of sgraph ops ----===//
//
// Every differentiable op's gradient rule, one section per op, in the order
// of GraphOps.td. A rule receives the gradient of the loss with respect to
// each result (`g` below) and builds, with ordinary sgraph ops, the gradient
// with respect to each operand the caller marked as needed. The autodiff
// pass (passes/Autodiff.cpp) only walks the graph and sums contributions; all
// op math is here.
//
// Conventions: `x` is the operand, `y` the result. Binary ops broadcast, so
// their rules reduce the broadcast result-shaped gradient back to each
// operand's shape (`sumToType`). Each rule is checked against central finite
// differences in f64 by test/unit/compiler/GradientCheckTest.cpp and has a
// case in test/passes/autodiff.mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"

#include "dialects/Graph/GraphBuilder.h"

#include "llvm/ADT/SmallSet.h"

#include <cmath>

using namespace mlir;
using namespace sinter::sgraph;

namespace {

/// The shared builder (GraphBuilder.h) plus what only gradient rules need.
class GradBuilder : public GraphBuilder {
public:
  using GraphBuilder::GraphBuilder;

  /// Casts an i1 mask (or anything) to `like`'s element type.
  Value castLike(Value x, Value like) {
    auto type = RankedTensorType::get(tensorType(x).getShape(),
                                      tensorType(like).getElementType());
    if (type == x.getType())
      return x;
    return b.create<CastOp>(loc, type, x);
  }

  Value broadcastTo(Value x, RankedTensorType type) {
    if (x.getType() == type)
      return x;
    return b.create<BroadcastOp>(loc, type, x);
  }

  Value reduceMean(Value x, ArrayRef<int64_t> axes, bool keepdims) {
    return b.create<ReduceMeanOp>(loc, x, b.getDenseI64ArrayAttr(axes),
                                  b.getBoolAttr(keepdims));
  }

  /// Sums a broadcast gradient back to `type`'s shape: the leading axes the
  /// broadcast added and the axes where `type` has size 1.
  Value sumToType(Value grad, Type type) {
    auto target = cast<RankedTensorType>(type);
    RankedTensorType from = tensorType(grad);
    if (from.getShape() == target.getShape())
      return grad;
    int64_t offset = from.getRank() - target.getRank();
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i < from.getRank(); ++i)
      if (i < offset || (target.getDimSize(i - offset) == 1 &&
                         from.getDimSize(i) != 1))
        axes.push_back(i);
    Value summed = axes.empty() ? grad : reduceSum(grad, axes, true);
    return reshape(summed, target.getShape());
  }

  /// Expands a reduced gradient back over the reduced axes of `operandType`.
  Value unreduce(Value grad, ArrayRef<int64_t> axes, RankedTensorType operand) {
    SmallVector<int64_t> kept(operand.getShape());
    for (int64_t axis : axes)
      kept[axis] = 1;
    Value g = reshape(grad, kept);
    return broadcastTo(g, RankedTensorType::get(operand.getShape(),
                                                tensorType(grad).getElementType()));
  }
};

/// Initializes `grads` with one null entry per operand.
void resetGrads(Operation *op, SmallVectorImpl<Value> &grads) {
  grads.assign(op->getNumOperands(), Value());
}

} // namespace

//===----------------------------------------------------------------------===//
// add, sub, mul, div, pow, maximum, minimum
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb(b, getLoc());
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] = gb.sumToType(gs[0], getLhs().getType());
  if (needed[1])
    grads[1] = gb.sumToType(gs[0], getRhs().getType());
  return success();
}

LogicalResult SubOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb(b, getLoc());
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] = gb.sumToType(gs[0], getLhs().getType());
  if (needed[1])
    grads[1] = gb.sumToType(gb.neg(gs[0]), getRhs().getType());
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb(b, getLoc());
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] = gb.sumToType(gb.mul(gs[0], getRhs()), getLhs().getType());
  if (needed[1])
    grads[1] = gb.sumToType(gb.mul(gs[0], getLhs()), getRhs().getType());
  return success();
}

LogicalResult DivOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  // y = l / r: dl = g / r, dr = -g * y / r.
  GradBuilder gb(b, getLoc());
  resetGrads(*this, grads);
  Value g = gs[0];
  if (needed[0])
    grads[0] = gb.sumToType(gb.div(g, getRhs()), getLhs().getType());
  if (needed[1])
    grads[1] = gb.sumToType(gb.neg(gb.div(gb.mul(g, getResult()), getRhs())),
                            getRhs().getType());
  return success();
}

LogicalResult PowOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  // y = a^e: da = g * e * a^(e-1), zero where e == 0 (as PyTorch);
  // de = g * y * ln(a), zero where a == 0.
  GradBuilder gb(b, getLoc());
  resetGrads(*this, grads);
  Value a = getLhs(), e = getRhs(), g = gs[0];
  Value zero = gb.scalar(a, 0.0);
  if (needed[0]) {
    Value d = gb.mul(gb.mul(g, e), gb.pow(a, gb.sub(e, gb.scalar(e, 1.0))));
    d = gb.select(gb.compare(e, zero, "eq"), zero, d);
    grads[0] = gb.sumToType(d, a.getType());
  }
  if (needed[1]) {
    Value d = gb.mul(gb.mul(g, getResult()), gb.log(a));
    d = gb.select(gb.compare(a, zero, "eq"), zero, d);
    grads[1] = gb.sumToType(d, e.getType());
  }
  return success();
}

namespace {

/// maximum/minimum: the chosen side gets the gradient; ties split it evenly
/// (PyTorch's rule). `direction` is "gt" for maximum, "lt" for minimum.
LogicalResult extremumGradients(Operation *op, OpBuilder &b, Value l, Value r,
                                Value g, StringRef direction,
                                ArrayRef<bool> needed,
                                SmallVectorImpl<Value> &grads) {
  GradBuilder gb(b, op->getLoc());
  resetGrads(op, grads);
  Value one = gb.scalar(g, 1.0), half = gb.scalar(g, 0.5),
        zero = gb.scalar(g, 0.0);
  Value lhsWeight = gb.select(gb.compare(l, r, direction), one,
                              gb.select(gb.compare(l, r, "eq"), half, zero));
  if (needed[0])
    grads[0] = gb.sumToType(gb.mul(g, lhsWeight), l.getType());
  if (needed[1])
    grads[1] = gb.sumToType(gb.mul(g, gb.sub(one, lhsWeight)), r.getType());
  return success();
}

} // namespace

LogicalResult MaximumOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                        ArrayRef<bool> needed,
                                        SmallVectorImpl<Value> &grads) {
  return extremumGradients(*this, b, getLhs(), getRhs(), gs[0], "gt", needed,
                           grads);
}

LogicalResult MinimumOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                        ArrayRef<bool> needed,
                                        SmallVectorImpl<Value> &grads) {
  return extremumGradients(*this, b, getLhs(), getRhs(), gs[0], "lt", needed,
                           grads);
}

//===----------------------------------------------------------------------===//
// select
//===----------------------------------------------------------------------===//

LogicalResult SelectOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                       ArrayRef<bool> needed,
                                       SmallVectorImpl<Value> &grads) {
  // The condition gets no gradient; each branch gets g where it was chosen.
  GradBuilder gb(b, getLoc());
  resetGrads(*this, grads);
  Value g = gs[0], zero = gb.scalar(g, 0.0);
  if (needed[1])
    grads[1] = gb.sumToType(gb.select(getCond(), g, zero),
                            getOnTrue().getType());
  if (needed[2])
    grads[2] = gb.sumToType(gb.select(getCond(), zero, g),
                            getOnFalse().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

LogicalResult NegOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                    ArrayRef<bool>,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb(b, getLoc());
  grads.assign({gb.neg(gs[0])});
  return success();
}

LogicalResult AbsOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                    ArrayRef<bool>,
                                    SmallVectorImpl<Value> &grads) {
  // d|x| = sign(x), with sign(0) = 0.
  GradBuilder gb(b, getLoc());
  Value x = getOperand(), zero = gb.scalar(x, 0.0);
  Value sign = gb.select(gb.compare(x, zero, "gt"), gb.scalar(x, 1.0),
                         gb.select(gb.compare(x, zero, "lt"),
                                   gb.scalar(x, -1.0), zero));
  grads.assign({gb.mul(gs[0], sign)});
  return success();
}

LogicalResult ExpOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                    ArrayRef<bool>,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb(b, getLoc());
  grads.assign({gb.mul(gs[0], getResult())});
  return success();
}

LogicalResult LogOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                    ArrayRef<bool>,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb(b, getLoc());
  grads.assign({gb.div(gs[0], getOperand())});
  return success();
}

LogicalResult SqrtOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                     ArrayRef<bool>,
                                     SmallVectorImpl<Value> &grads) {
  // d sqrt(x) = 1 / (2 y).
  GradBuilder gb(b, getLoc());
  Value y = getResult();
  grads.assign({gb.div(gs[0], gb.mul(y, gb.scalar(y, 2.0)))});
  return success();
}

LogicalResult RsqrtOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                      ArrayRef<bool>,
                                      SmallVectorImpl<Value> &grads) {
  // d x^(-1/2) = -1/2 y^3.
  GradBuilder gb(b, getLoc());
  Value y = getResult();
  Value y3 = gb.mul(gb.mul(y, y), y);
  grads.assign({gb.mul(gs[0], gb.mul(y3, gb.scalar(y, -0.5)))});
  return success();
}

LogicalResult TanhOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                     ArrayRef<bool>,
                                     SmallVectorImpl<Value> &grads) {
  // d tanh = 1 - y^2.
  GradBuilder gb(b, getLoc());
  Value y = getResult();
  grads.assign({gb.mul(gs[0], gb.sub(gb.scalar(y, 1.0), gb.mul(y, y)))});
  return success();
}

LogicalResult SigmoidOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                        ArrayRef<bool>,
                                        SmallVectorImpl<Value> &grads) {
  // d sigmoid = y (1 - y).
  GradBuilder gb(b, getLoc());
  Value y = getResult();
  grads.assign({gb.mul(gs[0], gb.mul(y, gb.sub(gb.scalar(y, 1.0), y)))});
  return success();
}

LogicalResult ReluOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                     ArrayRef<bool>,
                                     SmallVectorImpl<Value> &grads) {
  // g where x > 0, else 0 (the derivative at 0 is taken as 0, as PyTorch).
  // x > 0 exactly where y = relu(x) > 0, so the mask is read from y: the
  // backward pass keeps y anyway (the next layer's weight gradient reads
  // it), x need not be kept, and a matmul library may apply the ReLU as
  // its epilogue in a training step too. Under mixed precision x is a half
  // value widened, half the bytes of the f32 y: the mask is read from y
  // rounded to that half type where a matmul reads it so (exactly y: the
  // ReLU of a half value), which the next layer's weight gradient keeps,
  // else from x.
  GradBuilder gb(b, getLoc());
  Value x = getOperand(), y = getResult(), at = y;
  if (auto widen = x.getDefiningOp<CastOp>()) {
    Type from = getElementTypeOrSelf(widen.getOperand().getType());
    if (from.isBF16() || from.isF16()) {
      at = x;
      for (Operation *user : y.getUsers())
        if (auto round = dyn_cast<CastOp>(user);
            round && getElementTypeOrSelf(round.getType()) == from) {
          at = b.create<CastOp>(getLoc(), y.getType(), round.getResult());
          break;
        }
    }
  }
  Value zero = gb.scalar(at, 0.0);
  grads.assign({gb.select(gb.compare(at, zero, "gt"), gs[0], zero)});
  return success();
}

LogicalResult ErfOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                    ArrayRef<bool>,
                                    SmallVectorImpl<Value> &grads) {
  // d erf = 2 / sqrt(pi) * exp(-x^2).
  GradBuilder gb(b, getLoc());
  Value x = getOperand();
  Value d = gb.mul(gb.scalar(x, 2.0 / std::sqrt(M_PI)),
                   gb.exp(gb.neg(gb.mul(x, x))));
  grads.assign({gb.mul(gs[0], d)});
  return success();
}

/// The half type of a linear layer's sum `x` left unrounded for a GELU
/// under mixed precision (MixedPrecision.cpp, gelu-epilogues): `x` adds a
/// widened half bias to the f32 sum of a matmul's half operands (widened
/// again in an f64 model). Null otherwise.
static Type halfLinearSumOf(Value x) {
  auto add = x.getDefiningOp<AddOp>();
  if (!add)
    return {};
  for (Value v : {add.getLhs(), add.getRhs()}) {
    if (auto widen = v.getDefiningOp<CastOp>())
      v = widen.getOperand();
    if (auto mm = v.getDefiningOp<MatmulOp>(); mm && mm.getF32Result())
      return getElementTypeOrSelf(mm.getLhs().getType());
  }
  return {};
}

/// `g` as the f32 sum it rounds, when `g` widens a half matmul product that
/// nothing else reads and nothing reads `g` yet: the matmul is made to
/// write its f32 sum (`f32_result`) and `g` becomes an identity cast (or a
/// widening to f64) that canonicalization folds. Null otherwise.
/// Makes a matmul of half operands write its f32 sum (`f32_result`).
static void writeF32Sum(MatmulOp mm) {
  mm.setF32Result(true);
  Value product = mm.getResult();
  product.setType(cast<RankedTensorType>(product.getType())
                      .clone(Float32Type::get(mm.getContext())));
}

static Value unroundProduct(Value g) {
  auto widen = g.getDefiningOp<CastOp>();
  if (!widen || !g.use_empty())
    return {};
  Value product = widen.getOperand();
  auto mm = product.getDefiningOp<MatmulOp>();
  if (!mm || mm.getF32Result() || !product.hasOneUse())
    return {};
  writeF32Sum(mm);
  return g;
}

LogicalResult GeluOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                     ArrayRef<bool>,
                                     SmallVectorImpl<Value> &grads) {
  // One op, g * gelu'(x), so that a matmul library may apply it as the
  // epilogue of the matmul that produces g (cuBLASLt's DGELU); its scalar
  // form is in ScalarOps.cpp and the interpreter's OpKernels.cpp.
  Value x = getOperand(), g = gs[0];
  Type half = halfLinearSumOf(x);
  if (!half) {
    grads.assign(
        {b.create<GeluGradOp>(getLoc(), g, x, getApproximateAttr())});
    return success();
  }
  // A linear layer's unrounded sum under mixed precision, as cuBLASLt's
  // GELU_AUX_BIAS and DGELU compute under bf16 (measured, docs/Cuda.md):
  // the forward pass also writes the sum rounded to half (the aux matrix,
  // right after the sum), and the derivative is taken there. When g is
  // a half product, the derivative multiplies its f32 sum and the result
  // is rounded to half once, as the library writes it; the f32 kernels
  // after it (the bias gradient) read it widened.
  auto wideType = cast<RankedTensorType>(x.getType());
  Value aux;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(x);
    aux = b.create<CastOp>(getLoc(), wideType.clone(half), x);
  }
  Value at = b.create<CastOp>(getLoc(), wideType, aux);
  Value product = unroundProduct(g);
  Value d = b.create<GeluGradOp>(getLoc(), product ? product : g, at,
                                 getApproximateAttr());
  if (product)
    d = b.create<CastOp>(getLoc(), wideType,
                         b.create<CastOp>(getLoc(), wideType.clone(half), d));
  grads.assign({d});
  return success();
}

//===----------------------------------------------------------------------===//
// reduce_sum, reduce_mean, reduce_max
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                          ArrayRef<bool>,
                                          SmallVectorImpl<Value> &grads) {
  GradBuilder gb(b, getLoc());
  grads.assign({gb.unreduce(gs[0], getAxes(),
                            GradBuilder::tensorType(getOperand()))});
  return success();
}

LogicalResult ReduceMeanOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                           ArrayRef<bool>,
                                           SmallVectorImpl<Value> &grads) {
  GradBuilder gb(b, getLoc());
  RankedTensorType type = GradBuilder::tensorType(getOperand());
  int64_t count = 1;
  for (int64_t axis : getAxes())
    count *= type.getDimSize(axis);
  Value g = gb.div(gs[0], gb.scalar(gs[0], static_cast<double>(count)));
  grads.assign({gb.unreduce(g, getAxes(), type)});
  return success();
}

LogicalResult ReduceMaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                          ArrayRef<bool>,
                                          SmallVectorImpl<Value> &grads) {
  // The gradient goes to the maximal elements, split evenly among ties (as
  // PyTorch's amax).
  GradBuilder gb(b, getLoc());
  Value x = getOperand();
  RankedTensorType type = GradBuilder::tensorType(x);
  Value y = gb.unreduce(getResult(), getAxes(), type);
  Value isMax = gb.castLike(gb.compare(x, y, "eq"), x);
  Value count = gb.reduceSum(isMax, getAxes(), /*keepdims=*/true);
  Value g = gb.unreduce(gs[0], getAxes(), type);
  grads.assign({gb.div(gb.mul(g, isMax), count)});
  return success();
}

//===----------------------------------------------------------------------===//
// softmax, log_softmax, layer_norm
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                        ArrayRef<bool>,
                                        SmallVectorImpl<Value> &grads) {
  // dx = y * (g - sum(g * y)).
  GradBuilder gb(b, getLoc());
  Value y = getResult(), g = gs[0];
  Value dot = gb.reduceSum(gb.mul(g, y), {static_cast<int64_t>(getAxis())}, /*keepdims=*/true);
  grads.assign({gb.mul(y, gb.sub(g, dot))});
  return success();
}

LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                           ArrayRef<bool>,
                                           SmallVectorImpl<Value> &grads) {
  // dx = g - exp(y) * sum(g).
  GradBuilder gb(b, getLoc());
  Value g = gs[0];
  Value total = gb.reduceSum(g, {static_cast<int64_t>(getAxis())}, /*keepdims=*/true);
  grads.assign({gb.sub(g, gb.mul(gb.exp(getResult()), total))});
  return success();
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                          ArrayRef<bool> needed,
                                          SmallVectorImpl<Value> &grads) {
  // With xhat = (x - mean) * rstd over the normalized axes:
  //   dscale = sum over the leading axes of g * xhat, dbias = that of g,
  //   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),
  //   where dxhat = g * scale.
  GradBuilder gb(b, getLoc());
  resetGrads(*this, grads);
  Value x = getOperand(), g = gs[0];
  int64_t rank = GradBuilder::tensorType(x).getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = getAxis(); i < rank; ++i)
    axes.push_back(i);
  Value mean = gb.reduceMean(x, axes, true);
  Value centered = gb.sub(x, mean);
  Value var = gb.reduceMean(gb.mul(centered, centered), axes, true);
  Value eps = gb.scalar(x, getEpsilon().convertToDouble());
  Value rstd = gb.rsqrt(gb.add(var, eps));
  Value xhat = gb.mul(centered, rstd);
  if (needed[0]) {
    Value dxhat = gb.mul(g, getScale());
    Value inner = gb.sub(gb.sub(dxhat, gb.reduceMean(dxhat, axes, true)),
                         gb.mul(xhat, gb.reduceMean(gb.mul(dxhat, xhat), axes,
                                                    true)));
    grads[0] = gb.mul(rstd, inner);
  }
  if (needed[1])
    grads[1] = gb.sumToType(gb.mul(g, xhat), getScale().getType());
  if (needed[2])
    grads[2] = gb.sumToType(g, getBias().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                       ArrayRef<bool> needed,
                                       SmallVectorImpl<Value> &grads) {
  // For C = op(A) op(B) with op a possible transpose, each case below is
  // dA = g op(B)^T and dB = op(A)^T g rewritten so that the result comes out
  // in A's (B's) stored layout. Broadcast batch axes are then summed.
  GradBuilder gb(b, getLoc());
  resetGrads(*this, grads);
  Value a = getLhs(), bb = getRhs(), g = gs[0];
  // An f32 product of half operands: its gradient is rounded to their type
  // first, as the widening cast it stands for would do.
  if (getF32Result())
    g = gb.castLike(g, a);
  bool tl = getTransposeLhs(), tr = getTransposeRhs();
  auto mm = [&](Value l, Value r, bool t0, bool t1) -> Value {
    return b.create<MatmulOp>(getLoc(), l, r, b.getBoolAttr(t0),
                              b.getBoolAttr(t1));
  };
  // The gradient of an operand the whole batch shares (a weight) is one
  // matmul that contracts over the batch and the rows together, not a
  // batched one summed afterwards: what the backend runs best, and in half
  // precision the sum's only rounding (docs/MixedPrecision.md), so that the
  // interpreter and the compiled step round at the same points.
  auto product = [&](Value l, Value r, bool t0, bool t1, Type target) {
    RankedTensorType lt = GradBuilder::tensorType(l),
                     rt = GradBuilder::tensorType(r);
    auto tt = cast<RankedTensorType>(target);
    int64_t rank = lt.getRank();
    ArrayRef<int64_t> out = tt.getShape();
    bool shared =
        t0 && !t1 && rank >= 3 && rt.getRank() == rank &&
        lt.getShape().drop_back() == rt.getShape().drop_back() &&
        tt.getRank() >= 2 &&
        out.take_back(2) ==
            ArrayRef<int64_t>{lt.getShape().back(), rt.getShape().back()} &&
        llvm::all_of(out.drop_back(2), [](int64_t d) { return d == 1; });
    if (!shared)
      return gb.sumToType(mm(l, r, t0, t1), target);
    int64_t rows = 1;
    for (int64_t d : lt.getShape().drop_back())
      rows *= d;
    Value l2 = gb.reshape(l, {rows, lt.getShape().back()});
    Value r2 = gb.reshape(r, {rows, rt.getShape().back()});
    return gb.reshape(mm(l2, r2, true, false), out);
  };
  if (needed[0])
    grads[0] = !tl ? (!tr ? product(g, bb, false, true, a.getType())
                          : product(g, bb, false, false, a.getType()))
                   : (!tr ? product(bb, g, false, true, a.getType())
                          : product(bb, g, true, true, a.getType()));
  if (needed[1])
    grads[1] = !tr ? (!tl ? product(a, g, true, false, bb.getType())
                          : product(a, g, false, false, bb.getType()))
                   : (!tl ? product(g, a, true, false, bb.getType())
                          : product(g, a, true, true, bb.getType()));
  return success();
}

//===----------------------------------------------------------------------===//
// embedding, softmax_cross_entropy
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                          ArrayRef<bool> needed,
                                          SmallVectorImpl<Value> &grads) {
  // Rows of g are added into the rows they were read from; the integer
  // indices get no gradient.
  resetGrads(*this, grads);
  if (needed[1])
    return emitOpError("has no gradient with respect to its indices");
  if (needed[0])
    grads[0] = b.create<EmbeddingGradOp>(getLoc(), getTable().getType(), gs[0],
                                         getIndices());
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::buildGradients(
    OpBuilder &b, ArrayRef<Value> gs, ArrayRef<bool> needed,
    SmallVectorImpl<Value> &grads) {
  // dlogits = (softmax(logits) - onehot(labels)) * valid * scale, where valid
  // masks ignored positions and scale is g / count(valid) for "mean", g for
  // "sum", and g per position for "none".
  GradBuilder gb(b, getLoc());
  resetGrads(*this, grads);
  if (needed[1])
    return emitOpError("has no gradient with respect to its labels");
  if (needed.size() > 2 && needed[2])
    return emitOpError("has no gradient with respect to its count");
  if (!needed[0])
    return success();
  Value logits = getLogits(), labels = getLabels(), g = gs[0];
  RankedTensorType logitsType = GradBuilder::tensorType(logits);
  int64_t classAxis = logitsType.getRank() - 1;
  Value probs = b.create<SoftmaxOp>(getLoc(), logits,
                                    b.getI64IntegerAttr(classAxis));
  Value oneHot = b.create<OneHotOp>(getLoc(), logitsType, labels);
  // getIgnoreIndex() is uint64_t (I64Attr): go through int64_t so that -100
  // stays -100 instead of becoming 2^64 - 100.
  int64_t ignoreIndex = getIgnoreIndex();
  Value ignore = gb.scalar(labels, static_cast<double>(ignoreIndex));
  Value valid = gb.castLike(gb.compare(labels, ignore, "ne"), logits);
  Value scale;
  if (getReduction() == "none") {
    scale = gb.mul(g, valid);
  } else {
    scale = gb.mul(valid, g);
    if (getReduction() == "mean") {
      SmallVector<int64_t> all;
      for (int64_t i = 0; i < classAxis; ++i)
        all.push_back(i);
      Value count = all.empty() ? valid : gb.reduceSum(valid, all, false);
      scale = gb.div(scale, gb.countOrShare(count, getCount()));
    }
  }
  SmallVector<int64_t> column(logitsType.getShape());
  column.back() = 1;
  grads[0] = gb.mul(gb.sub(probs, oneHot), gb.reshape(scale, column));
  return success();
}

//===----------------------------------------------------------------------===//
// reshape, transpose, broadcast, slice, pad, concat, cast
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                        ArrayRef<bool>,
                                        SmallVectorImpl<Value> &grads) {
  GradBuilder gb(b, getLoc());
  grads.assign(
      {gb.reshape(gs[0], GradBuilder::tensorType(getOperand()).getShape())});
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                          ArrayRef<bool>,
                                          SmallVectorImpl<Value> &grads) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  grads.assign({b.create<TransposeOp>(getLoc(), gs[0],
                                      b.getDenseI64ArrayAttr(inverse))});
  return success();
}

LogicalResult BroadcastOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                          ArrayRef<bool>,
                                          SmallVectorImpl<Value> &grads) {
  GradBuilder gb(b, getLoc());
  grads.assign({gb.sumToType(gs[0], getOperand().getType())});
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                      ArrayRef<bool>,
                                      SmallVectorImpl<Value> &grads) {
  // Scatter g back into a zero tensor of the operand's shape: a pad whose
  // interior padding restores the stride.
  RankedTensorType operand = GradBuilder::tensorType(getOperand());
  RankedTensorType result = getType();
  SmallVector<int64_t> low, high, interior;
  for (int64_t i = 0; i < operand.getRank(); ++i) {
    int64_t stride = getStride() ? (*getStride())[i] : 1;
    int64_t n = result.getDimSize(i), d = operand.getDimSize(i);
    if (n == 0) {
      low.push_back(0);
      high.push_back(d);
      interior.push_back(0);
      continue;
    }
    int64_t start = getStart()[i];
    int64_t span = (n - 1) * stride + 1;
    low.push_back(start);
    high.push_back(d - start - span);
    interior.push_back(stride - 1);
  }
  grads.assign({b.create<PadOp>(getLoc(), gs[0], b.getDenseI64ArrayAttr(low),
                                b.getDenseI64ArrayAttr(high),
                                b.getDenseI64ArrayAttr(interior),
                                b.getF64FloatAttr(0.0))});
  return success();
}

LogicalResult PadOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                    ArrayRef<bool>,
                                    SmallVectorImpl<Value> &grads) {
  // The operand's elements sit at low + k * (interior + 1).
  RankedTensorType operand = GradBuilder::tensorType(getOperand());
  SmallVector<int64_t> start, limit, stride;
  for (int64_t i = 0; i < operand.getRank(); ++i) {
    int64_t step = (getInterior() ? (*getInterior())[i] : 0) + 1;
    int64_t d = operand.getDimSize(i);
    start.push_back(getLow()[i]);
    limit.push_back(getLow()[i] + (d > 0 ? (d - 1) * step + 1 : 0));
    stride.push_back(step);
  }
  grads.assign({b.create<SliceOp>(getLoc(), gs[0],
                                  b.getDenseI64ArrayAttr(start),
                                  b.getDenseI64ArrayAttr(limit),
                                  b.getDenseI64ArrayAttr(stride))});
  return success();
}

LogicalResult ConcatOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                       ArrayRef<bool> needed,
                                       SmallVectorImpl<Value> &grads) {
  // Operand i gets its own slab of g along the axis.
  resetGrads(*this, grads);
  RankedTensorType result = getType();
  int64_t axis = getAxis(), offset = 0;
  for (auto [i, operand] : llvm::enumerate(getOperands())) {
    RankedTensorType type = GradBuilder::tensorType(operand);
    if (needed[i]) {
      SmallVector<int64_t> start(result.getRank(), 0);
      SmallVector<int64_t> limit(result.getShape());
      start[axis] = offset;
      limit[axis] = offset + type.getDimSize(axis);
      grads[i] = b.create<SliceOp>(getLoc(), gs[0],
                                   b.getDenseI64ArrayAttr(start),
                                   b.getDenseI64ArrayAttr(limit),
                                   DenseI64ArrayAttr());
    }
    offset += type.getDimSize(axis);
  }
  return success();
}

/// `g` as an f32 product, when it is a half matmul's result (through a
/// reshape) that nothing reads yet: the matmul and the reshape are retyped in
/// place to give the products' f32 sum (`f32_result`). Null otherwise.
static Value widenUnreadProduct(Value g) {
  auto reshape = g.getDefiningOp<ReshapeOp>();
  Value product = reshape ? reshape.getOperand() : g;
  auto mm = product.getDefiningOp<MatmulOp>();
  if (!mm || mm.getF32Result() || !g.use_empty() ||
      (reshape && !product.hasOneUse()))
    return {};
  writeF32Sum(mm);
  if (reshape)
    g.setType(cast<RankedTensorType>(g.getType())
                  .clone(Float32Type::get(g.getContext())));
  return g;
}

/// The f32 value `g` rounds, when `g` is a cast of it to half that nothing
/// reads yet (the gradient of a bias's widened half copy, MixedPrecision;
/// the cast is left to dead-code elimination). Null otherwise.
static Value unreadRoundingOf(Value g) {
  auto round = g.getDefiningOp<CastOp>();
  if (!round || !g.use_empty())
    return {};
  Value wide = round.getOperand();
  if (!getElementTypeOrSelf(wide.getType()).isF32())
    return {};
  return wide;
}

LogicalResult CastOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                     ArrayRef<bool>,
                                     SmallVectorImpl<Value> &grads) {
  // The gradient is cast back to the operand's element type.
  if (!isFloatTensor(getOperand().getType()))
    return emitOpError("has no gradient with respect to a non-float operand");
  Value g = gs[0];
  // A function argument's half copy is a master weight's, cast for a matmul
  // (docs/MixedPrecision.md). Its gradient, when a matmul makes it (the
  // weight gradient Xᵀ·dY over batch and rows), is that matmul's f32 sum
  // itself: rounding it to half only to widen it again would lose bits and
  // cost a kernel. A bias's gradient, likewise, is the f32 sum over the
  // rows before the rounding its half copy's widening would give it. An
  // activation's gradient keeps the half product: it flows on into kernels
  // that read half the bytes.
  Type from = getElementTypeOrSelf(getOperand().getType()),
       to = getElementTypeOrSelf(getType());
  if (isa<BlockArgument>(getOperand()) && (from.isF32() || from.isF64()) &&
      (to.isBF16() || to.isF16())) {
    if (Value wide = widenUnreadProduct(g))
      g = wide;
    else if (Value wide = unreadRoundingOf(g))
      g = wide; // a bias's gradient: the f32 sum over the rows as it is
  }
  if (g.getType() != getOperand().getType())
    g = b.create<CastOp>(getLoc(), getOperand().getType(), g);
  grads.assign({g});
  return success();
}

//===----------------------------------------------------------------------===//
// dropout
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                        ArrayRef<bool> needed,
                                        SmallVectorImpl<Value> &grads) {
  // The mask is a function of (seed, step, index), so the same op applied to
  // g keeps and scales exactly the elements the forward pass kept.
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] =
        b.create<DropoutOp>(getLoc(), gs[0], getStep(), getShard(),
                            getRateAttr(), getSeedAttr(), getBatchAxisAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                          ArrayRef<bool> needed,
                                          SmallVectorImpl<Value> &grads) {
  // Each rank's operand feeds every rank's result: the gradient is the same
  // reduction of the incoming gradients.
  StringRef reduction = getReduction();
  if (reduction != "sum" && reduction != "mean")
    return emitOpError("has no gradient for reduction '") << reduction << "'";
  // One bucket in, one bucket out: the incoming gradients that exist.
  resetGrads(*this, grads);
  SmallVector<Value> incoming;
  SmallVector<unsigned> which;
  for (auto [i, g] : llvm::enumerate(gs))
    if (g && needed[i]) {
      incoming.push_back(g);
      which.push_back(i);
    }
  if (incoming.empty())
    return success();
  auto reduced = b.create<AllReduceOp>(getLoc(), incoming, getReductionAttr(),
                                       getCommDtypeAttr());
  for (auto [i, r] : llvm::zip(which, reduced.getResults()))
    grads[i] = r;
  return success();
}

LogicalResult AllGatherOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                          ArrayRef<bool>,
                                          SmallVectorImpl<Value> &grads) {
  // Rank r's operand is slab r of every rank's result.
  grads.assign({b.create<ReduceScatterOp>(getLoc(), gs[0], getAxisAttr(),
                                          getWorldSizeAttr(),
                                          b.getStringAttr("sum"))});
  return success();
}

LogicalResult ReduceScatterOp::buildGradients(OpBuilder &b, ArrayRef<Value> gs,
                                              ArrayRef<bool>,
                                              SmallVectorImpl<Value> &grads) {
  StringRef reduction = getReduction();
  if (reduction != "sum" && reduction != "mean")
    return emitOpError("has no gradient for reduction '") << reduction << "'";
  GradBuilder gb(b, getLoc());
  Value gathered = b.create<AllGatherOp>(getLoc(), gs[0], getAxisAttr(),
                                         getWorldSizeAttr());
  if (reduction == "mean")
    gathered = gb.div(gathered,
                      gb.scalar(gathered, static_cast<double>(getWorldSize())));
  grads.assign({gathered});
  return success();
}
