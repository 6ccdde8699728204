//===- GraphTypeInference.cpp - result types of sgraph ops ---------------===//
//
// inferReturnTypes for every op whose result type follows from its operands
// and attributes. The checks here are the op constraints the result type
// depends on; each carries the label of its constraint in
// docs/dialects/sgraph.md. When the op already exists, the InferTypeOpInterface
// verifier compares the inferred types with the ones written in the IR, which
// is the "result type" constraint of each op.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace sinter::sgraph;

bool sinter::sgraph::broadcastShapes(ArrayRef<int64_t> lhs,
                                     ArrayRef<int64_t> rhs,
                                     SmallVectorImpl<int64_t> &result) {
  size_t rank = std::max(lhs.size(), rhs.size());
  result.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t r = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    if (l != r && l != 1 && r != 1)
      return false;
    result[rank - 1 - i] = l == 1 ? r : l;
  }
  return true;
}

bool sinter::sgraph::isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

namespace {

/// The ranked tensor type of `value`, or an error naming the operand.
/// Re-checks the static-shape part of each op's C1 (`<op>_c1`, the ODS type
/// constraint): inference also runs while parsing and from builders, before
/// the ODS verifier has seen the operands.
FailureOr<RankedTensorType> rankedOperand(std::optional<Location> loc,
                                          Value value, StringRef name) {
  if (!value)
    return emitOptionalError(loc, "missing operand '", name, "'");
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return emitOptionalError(loc, "operand '", name,
                             "' must be a statically shaped tensor, got ",
                             value.getType());
  return type;
}

LogicalResult checkAxis(std::optional<Location> loc, int64_t axis,
                        int64_t rank, StringRef what) {
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, what, " ", axis, " is out of range [0, ",
                             rank, ")");
  return success();
}

/// Constraints shared by the elementwise binary ops (`<op>_c2`, `<op>_c3`,
/// `<op>_c4`); compare uses the first two as compare_c2 and compare_c3.
LogicalResult inferBinary(std::optional<Location> loc, Value lhsValue,
                          Value rhsValue, SmallVectorImpl<Type> &types) {
  auto lhs = rankedOperand(loc, lhsValue, "lhs");
  auto rhs = rankedOperand(loc, rhsValue, "rhs");
  if (failed(lhs) || failed(rhs))
    return failure();
  // add_c2 (and the other binary ops): one element type.
  if (lhs->getElementType() != rhs->getElementType())
    return emitOptionalError(loc, "operands have different element types: ",
                             lhs->getElementType(), " and ",
                             rhs->getElementType());
  // add_c3: broadcastable shapes.
  SmallVector<int64_t> shape;
  if (!broadcastShapes(lhs->getShape(), rhs->getShape(), shape))
    return emitOptionalError(loc, "operand shapes do not broadcast: ", *lhs,
                             " and ", *rhs);
  // add_c4: the result has the broadcast shape and the operands' element type.
  types.push_back(RankedTensorType::get(shape, lhs->getElementType()));
  return success();
}

LogicalResult inferSameAsOperand(std::optional<Location> loc, Value operand,
                                 SmallVectorImpl<Type> &types) {
  auto type = rankedOperand(loc, operand, "operand");
  if (failed(type))
    return failure();
  types.push_back(*type);
  return success();
}

/// Reduction result shape (`<op>_c2`, `<op>_c3`, `<op>_c4`).
LogicalResult inferReduce(std::optional<Location> loc, Value operand,
                          ArrayRef<int64_t> axes, bool keepdims,
                          SmallVectorImpl<Type> &types) {
  auto type = rankedOperand(loc, operand, "operand");
  if (failed(type))
    return failure();
  int64_t rank = type->getRank();
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t axis : axes) {
    // reduce_sum_c2
    if (failed(checkAxis(loc, axis, rank, "reduction axis")))
      return failure();
    // reduce_sum_c3
    if (!seen.insert(axis).second)
      return emitOptionalError(loc, "reduction axis ", axis,
                               " appears more than once");
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (!seen.contains(i))
      shape.push_back(type->getDimSize(i));
    else if (keepdims)
      shape.push_back(1);
  }
  // reduce_sum_c4: the reduced axes are removed, or kept as 1 with keepdims.
  types.push_back(RankedTensorType::get(shape, type->getElementType()));
  return success();
}

LogicalResult checkReduction(std::optional<Location> loc, StringRef kind) {
  if (kind != "sum" && kind != "mean" && kind != "max" && kind != "min")
    return emitOptionalError(loc, "reduction '", kind,
                             "' is not one of sum, mean, max, min");
  return success();
}

/// The operand must have exactly the type of `param` (optimizer updates).
LogicalResult checkSameAsParam(std::optional<Location> loc, Value value,
                               StringRef name, Type param) {
  if (value.getType() != param)
    return emitOptionalError(loc, name, " has type ", value.getType(),
                             ", expected the parameter's type ", param);
  return success();
}

} // namespace

/// Ops built generically (raw ops in a model file) reach inference before the
/// ODS verifier has checked that required attributes are present.
#define SINTER_REQUIRE_ATTR(NAME)                                              \
  if (!adaptor.getProperties().NAME)                                           \
    return emitOptionalError(loc, "requires attribute '" #NAME "'");

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  SINTER_REQUIRE_ATTR(value)
  // constant_c2: the result has the value's type.
  types.push_back(cast<TypedAttr>(adaptor.getValue()).getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define SINTER_BINARY_INFER(OP)                                                \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferBinary(loc, adaptor.getLhs(), adaptor.getRhs(), types);        \
  }
SINTER_BINARY_INFER(AddOp)
SINTER_BINARY_INFER(SubOp)
SINTER_BINARY_INFER(MulOp)
SINTER_BINARY_INFER(DivOp)
SINTER_BINARY_INFER(PowOp)
SINTER_BINARY_INFER(MaximumOp)
SINTER_BINARY_INFER(MinimumOp)
#undef SINTER_BINARY_INFER

#define SINTER_SAME_TYPE_INFER(OP)                                             \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferSameAsOperand(loc, adaptor.getOperand(), types);               \
  }
// The result has the operand's type: the label of that constraint follows
// each op.
SINTER_SAME_TYPE_INFER(NegOp)                 // neg_c2
SINTER_SAME_TYPE_INFER(AbsOp)                 // abs_c2
SINTER_SAME_TYPE_INFER(ExpOp)                 // exp_c2
SINTER_SAME_TYPE_INFER(LogOp)                 // log_c2
SINTER_SAME_TYPE_INFER(SqrtOp)                // sqrt_c2
SINTER_SAME_TYPE_INFER(RsqrtOp)               // rsqrt_c2
SINTER_SAME_TYPE_INFER(TanhOp)                // tanh_c2
SINTER_SAME_TYPE_INFER(SigmoidOp)             // sigmoid_c2
SINTER_SAME_TYPE_INFER(ReluOp)                // relu_c2
SINTER_SAME_TYPE_INFER(ErfOp)                 // erf_c2
SINTER_SAME_TYPE_INFER(GeluOp)                // gelu_c3
SINTER_SAME_TYPE_INFER(GeluGradOp)            // gelu_grad_c4
SINTER_SAME_TYPE_INFER(StopGradientOp)        // stop_gradient_c2
SINTER_SAME_TYPE_INFER(CollectiveBroadcastOp) // collective_broadcast_c3
SINTER_SAME_TYPE_INFER(DropoutOp)             // dropout_c3
#undef SINTER_SAME_TYPE_INFER

LogicalResult TrainEvalOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferSameAsOperand(loc, adaptor.getTrain(), types); // train_eval_c3
}

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  SINTER_REQUIRE_ATTR(direction)
  // compare_c4
  StringRef dir = adaptor.getDirection();
  if (!llvm::is_contained({"eq", "ne", "lt", "le", "gt", "ge"}, dir))
    return emitOptionalError(loc, "direction '", dir,
                             "' is not one of eq, ne, lt, le, gt, ge");
  // compare_c2, compare_c3 (add_c2, add_c3)
  if (failed(inferBinary(loc, adaptor.getLhs(), adaptor.getRhs(), types)))
    return failure();
  // compare_c5: an i1 tensor of the broadcast shape.
  auto shape = cast<RankedTensorType>(types.back()).getShape();
  types.back() = RankedTensorType::get(shape, IntegerType::get(ctx, 1));
  return success();
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto cond = rankedOperand(loc, adaptor.getCond(), "cond");
  auto onTrue = rankedOperand(loc, adaptor.getOnTrue(), "on_true");
  auto onFalse = rankedOperand(loc, adaptor.getOnFalse(), "on_false");
  if (failed(cond) || failed(onTrue) || failed(onFalse))
    return failure();
  // select_c2
  if (onTrue->getElementType() != onFalse->getElementType())
    return emitOptionalError(loc, "on_true and on_false have different "
                                  "element types: ",
                             onTrue->getElementType(), " and ",
                             onFalse->getElementType());
  // select_c3
  SmallVector<int64_t> valueShape, shape;
  if (!broadcastShapes(onTrue->getShape(), onFalse->getShape(), valueShape) ||
      !broadcastShapes(cond->getShape(), valueShape, shape))
    return emitOptionalError(loc, "operand shapes do not broadcast: ", *cond,
                             ", ", *onTrue, " and ", *onFalse);
  // select_c4
  types.push_back(RankedTensorType::get(shape, onTrue->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

#define SINTER_REDUCE_INFER(OP)                                                \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    SINTER_REQUIRE_ATTR(axes)                                                  \
    return inferReduce(loc, adaptor.getOperand(), adaptor.getAxes(),           \
                       adaptor.getKeepdims(), types);                          \
  }
SINTER_REDUCE_INFER(ReduceSumOp)
SINTER_REDUCE_INFER(ReduceMeanOp)
SINTER_REDUCE_INFER(ReduceMaxOp)
#undef SINTER_REDUCE_INFER

LogicalResult ArgmaxOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  SINTER_REQUIRE_ATTR(axis)
  auto type = rankedOperand(loc, adaptor.getOperand(), "operand");
  if (failed(type))
    return failure();
  // argmax_c2
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, type->getRank(), "axis")))
    return failure();
  // argmax_c3
  SmallVector<int64_t> shape(type->getShape());
  shape.erase(shape.begin() + axis);
  types.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}

#define SINTER_SOFTMAX_INFER(OP)                                               \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    SINTER_REQUIRE_ATTR(axis)                                                  \
    auto type = rankedOperand(loc, adaptor.getOperand(), "operand");           \
    if (failed(type))                                                          \
      return failure();                                                        \
    /* softmax_c2 */                                                           \
    if (failed(checkAxis(loc, adaptor.getAxis(), type->getRank(), "axis")))    \
      return failure();                                                        \
    /* softmax_c3: the result has the operand's type */                        \
    types.push_back(*type);                                                    \
    return success();                                                          \
  }
SINTER_SOFTMAX_INFER(SoftmaxOp)
SINTER_SOFTMAX_INFER(LogSoftmaxOp)
#undef SINTER_SOFTMAX_INFER

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  SINTER_REQUIRE_ATTR(axis)
  auto x = rankedOperand(loc, adaptor.getOperand(), "operand");
  auto scale = rankedOperand(loc, adaptor.getScale(), "scale");
  auto bias = rankedOperand(loc, adaptor.getBias(), "bias");
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  // layer_norm_c2
  if (scale->getElementType() != x->getElementType() ||
      bias->getElementType() != x->getElementType())
    return emitOptionalError(loc, "scale and bias must have the operand's "
                                  "element type ",
                             x->getElementType(), ", got ",
                             scale->getElementType(), " and ",
                             bias->getElementType());
  // layer_norm_c3
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, x->getRank(), "axis")))
    return failure();
  // layer_norm_c4
  ArrayRef<int64_t> normalized = x->getShape().drop_front(axis);
  if (scale->getShape() != normalized || bias->getShape() != normalized)
    return emitOptionalError(
        loc, "scale and bias must have the normalized shape [",
        llvm::make_range(normalized.begin(), normalized.end()), "], got ",
        *scale, " and ", *bias);
  // layer_norm_c6
  types.push_back(*x);
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto lhs = rankedOperand(loc, adaptor.getLhs(), "lhs");
  auto rhs = rankedOperand(loc, adaptor.getRhs(), "rhs");
  if (failed(lhs) || failed(rhs))
    return failure();
  // matmul_c2
  if (lhs->getElementType() != rhs->getElementType())
    return emitOptionalError(loc, "operands have different element types: ",
                             lhs->getElementType(), " and ",
                             rhs->getElementType());
  // matmul_c3
  if (lhs->getRank() < 2 || rhs->getRank() < 2)
    return emitOptionalError(loc, "operands must have rank >= 2, got ", *lhs,
                             " and ", *rhs);
  ArrayRef<int64_t> ls = lhs->getShape(), rs = rhs->getShape();
  int64_t lr = ls.size(), rr = rs.size();
  bool tl = adaptor.getTransposeLhs(), tr = adaptor.getTransposeRhs();
  int64_t m = tl ? ls[lr - 1] : ls[lr - 2];
  int64_t kl = tl ? ls[lr - 2] : ls[lr - 1];
  int64_t kr = tr ? rs[rr - 1] : rs[rr - 2];
  int64_t n = tr ? rs[rr - 2] : rs[rr - 1];
  // matmul_c4
  if (kl != kr)
    return emitOptionalError(loc, "contracting dimensions differ: lhs has ",
                             kl, ", rhs has ", kr);
  // matmul_c5
  SmallVector<int64_t> shape;
  if (!broadcastShapes(ls.drop_back(2), rs.drop_back(2), shape))
    return emitOptionalError(loc, "batch dimensions do not broadcast: ",
                             *lhs, " and ", *rhs);
  shape.push_back(m);
  shape.push_back(n);
  // matmul_c7
  Type et = lhs->getElementType();
  // (Read as an attribute: a builder may leave it unset before the op's
  // default is filled in.)
  if (BoolAttr wide = adaptor.getF32ResultAttr(); wide && wide.getValue()) {
    if (!et.isBF16() && !et.isF16())
      return emitOptionalError(loc, "f32_result needs bf16 or f16 operands, "
                                    "got ",
                               et);
    et = Float32Type::get(et.getContext());
  }
  // matmul_c6
  types.push_back(RankedTensorType::get(shape, et));
  return success();
}

//===----------------------------------------------------------------------===//
// Embeddings and losses
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto table = rankedOperand(loc, adaptor.getTable(), "table");
  auto indices = rankedOperand(loc, adaptor.getIndices(), "indices");
  if (failed(table) || failed(indices))
    return failure();
  // embedding_c2
  if (table->getRank() != 2)
    return emitOptionalError(loc, "table must have rank 2, got ", *table);
  // embedding_c3
  SmallVector<int64_t> shape(indices->getShape());
  shape.push_back(table->getDimSize(1));
  types.push_back(RankedTensorType::get(shape, table->getElementType()));
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto logits = rankedOperand(loc, adaptor.getLogits(), "logits");
  auto labels = rankedOperand(loc, adaptor.getLabels(), "labels");
  if (failed(logits) || failed(labels))
    return failure();
  // softmax_cross_entropy_c2
  if (logits->getRank() < 1)
    return emitOptionalError(loc, "logits must have rank >= 1");
  // softmax_cross_entropy_c3
  if (labels->getShape() != logits->getShape().drop_back())
    return emitOptionalError(loc, "labels ", *labels,
                             " must have the shape of logits ", *logits,
                             " without its last dimension");
  // softmax_cross_entropy_c4
  StringRef reduction = adaptor.getReduction();
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return emitOptionalError(loc, "reduction '", reduction,
                             "' is not one of mean, sum, none");
  // softmax_cross_entropy_c6
  if (Value count = adaptor.getCount()) {
    auto countType = dyn_cast<RankedTensorType>(count.getType());
    if (!countType || countType.getRank() != 0)
      return emitOptionalError(loc, "count must be a 0-d float tensor, got ",
                               count.getType());
    if (reduction != "mean")
      return emitOptionalError(loc, "count divides a 'mean' reduction, not '",
                               reduction, "'");
  }
  // softmax_cross_entropy_c5
  ArrayRef<int64_t> shape;
  if (reduction == "none")
    shape = labels->getShape();
  types.push_back(RankedTensorType::get(shape, logits->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  SINTER_REQUIRE_ATTR(permutation)
  auto type = rankedOperand(loc, adaptor.getOperand(), "operand");
  if (failed(type))
    return failure();
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  // transpose_c2
  if (static_cast<int64_t>(perm.size()) != type->getRank())
    return emitOptionalError(loc, "permutation has ", perm.size(),
                             " entries, expected the operand rank ",
                             type->getRank());
  // transpose_c3
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= type->getRank() || seen[p])
      return emitOptionalError(loc, "[",
                               llvm::make_range(perm.begin(), perm.end()),
                               "] is not a permutation of [0, ",
                               type->getRank(), ")");
    seen[p] = true;
    shape.push_back(type->getDimSize(p));
  }
  // transpose_c4
  types.push_back(RankedTensorType::get(shape, type->getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  SINTER_REQUIRE_ATTR(start)
  SINTER_REQUIRE_ATTR(limit)
  auto type = rankedOperand(loc, adaptor.getOperand(), "operand");
  if (failed(type))
    return failure();
  int64_t rank = type->getRank();
  ArrayRef<int64_t> start = adaptor.getStart(), limit = adaptor.getLimit();
  SmallVector<int64_t> stride(rank, 1);
  if (auto s = adaptor.getStride())
    stride.assign(s->begin(), s->end());
  // slice_c2
  if (static_cast<int64_t>(start.size()) != rank ||
      static_cast<int64_t>(limit.size()) != rank ||
      static_cast<int64_t>(stride.size()) != rank)
    return emitOptionalError(loc, "start, limit and stride must have one "
                                  "entry per axis (",
                             rank, "), got ", start.size(), ", ",
                             limit.size(), " and ", stride.size());
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    // slice_c3
    if (start[i] < 0 || start[i] > limit[i] || limit[i] > type->getDimSize(i))
      return emitOptionalError(loc, "axis ", i, ": need 0 <= start (",
                               start[i], ") <= limit (", limit[i],
                               ") <= dimension (", type->getDimSize(i), ")");
    // slice_c4
    if (stride[i] < 1)
      return emitOptionalError(loc, "axis ", i, ": stride ", stride[i],
                               " must be >= 1");
    shape.push_back((limit[i] - start[i] + stride[i] - 1) / stride[i]);
  }
  // slice_c5
  types.push_back(RankedTensorType::get(shape, type->getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  SINTER_REQUIRE_ATTR(low)
  SINTER_REQUIRE_ATTR(high)
  auto type = rankedOperand(loc, adaptor.getOperand(), "operand");
  if (failed(type))
    return failure();
  int64_t rank = type->getRank();
  ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh();
  SmallVector<int64_t> interior(rank, 0);
  if (auto s = adaptor.getInterior())
    interior.assign(s->begin(), s->end());
  // pad_c2
  if (static_cast<int64_t>(low.size()) != rank ||
      static_cast<int64_t>(high.size()) != rank ||
      static_cast<int64_t>(interior.size()) != rank)
    return emitOptionalError(loc, "low, high and interior must have one "
                                  "entry per axis (",
                             rank, "), got ", low.size(), ", ", high.size(),
                             " and ", interior.size());
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    // pad_c3
    if (low[i] < 0 || high[i] < 0 || interior[i] < 0)
      return emitOptionalError(loc, "axis ", i,
                               ": padding amounts must be >= 0, got low ",
                               low[i], ", high ", high[i], ", interior ",
                               interior[i]);
    int64_t d = type->getDimSize(i);
    shape.push_back(low[i] + high[i] + d + (d > 0 ? (d - 1) * interior[i] : 0));
  }
  // pad_c4
  types.push_back(RankedTensorType::get(shape, type->getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  SINTER_REQUIRE_ATTR(axis)
  ValueRange operands = adaptor.getOperands();
  // concat_c2
  if (operands.empty())
    return emitOptionalError(loc, "needs at least one operand");
  auto first = rankedOperand(loc, operands.front(), "#0");
  if (failed(first))
    return failure();
  int64_t axis = adaptor.getAxis();
  // concat_c4
  if (failed(checkAxis(loc, axis, first->getRank(), "axis")))
    return failure();
  SmallVector<int64_t> shape(first->getShape());
  shape[axis] = 0;
  for (auto [i, value] : llvm::enumerate(operands)) {
    auto type = rankedOperand(loc, value, "#" + std::to_string(i));
    if (failed(type))
      return failure();
    // concat_c3
    if (type->getElementType() != first->getElementType() ||
        type->getRank() != first->getRank())
      return emitOptionalError(loc, "operand #", i, " ", *type,
                               " differs in element type or rank from "
                               "operand #0 ",
                               *first);
    // concat_c5
    for (int64_t d = 0; d < type->getRank(); ++d)
      if (d != axis && type->getDimSize(d) != first->getDimSize(d))
        return emitOptionalError(loc, "operand #", i, " ", *type,
                                 " differs from operand #0 ", *first,
                                 " in dimension ", d);
    shape[axis] += type->getDimSize(axis);
  }
  // concat_c6
  types.push_back(RankedTensorType::get(shape, first->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllGatherOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  SINTER_REQUIRE_ATTR(axis)
  SINTER_REQUIRE_ATTR(world_size)
  auto type = rankedOperand(loc, adaptor.getOperand(), "operand");
  if (failed(type))
    return failure();
  // all_gather_c2
  int64_t worldSize = adaptor.getWorldSize();
  if (worldSize < 1)
    return emitOptionalError(loc, "world_size ", worldSize, " must be >= 1");
  // all_gather_c3
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, type->getRank(), "axis")))
    return failure();
  // all_gather_c4
  SmallVector<int64_t> shape(type->getShape());
  shape[axis] *= worldSize;
  types.push_back(RankedTensorType::get(shape, type->getElementType()));
  return success();
}

LogicalResult ReduceScatterOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  SINTER_REQUIRE_ATTR(axis)
  SINTER_REQUIRE_ATTR(world_size)
  auto type = rankedOperand(loc, adaptor.getOperand(), "operand");
  if (failed(type))
    return failure();
  // reduce_scatter_c2
  int64_t worldSize = adaptor.getWorldSize();
  if (worldSize < 1)
    return emitOptionalError(loc, "world_size ", worldSize, " must be >= 1");
  // reduce_scatter_c3
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, type->getRank(), "axis")))
    return failure();
  // reduce_scatter_c4
  if (type->getDimSize(axis) % worldSize != 0)
    return emitOptionalError(loc, "dimension ", type->getDimSize(axis),
                             " of axis ", axis,
                             " is not divisible by world_size ", worldSize);
  // reduce_scatter_c5
  if (failed(checkReduction(loc, adaptor.getReduction())))
    return failure();
  // reduce_scatter_c6
  SmallVector<int64_t> shape(type->getShape());
  shape[axis] /= worldSize;
  types.push_back(RankedTensorType::get(shape, type->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

LogicalResult SgdUpdateOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Type param = adaptor.getParam().getType();
  // sgd_update_c1 (AllTypesMatch): checked again for builders, which infer
  // before the verifier runs.
  if (failed(checkSameAsParam(loc, adaptor.getGrad(), "grad", param)))
    return failure();
  // sgd_update_c2
  types.push_back(param);
  return success();
}

LogicalResult MomentumUpdateOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  Type param = adaptor.getParam().getType();
  // momentum_update_c1 (AllTypesMatch): checked again for builders.
  if (failed(checkSameAsParam(loc, adaptor.getGrad(), "grad", param)) ||
      failed(checkSameAsParam(loc, adaptor.getMomentumBuffer(),
                              "momentum_buffer", param)))
    return failure();
  // momentum_update_c2
  types.append({param, param});
  return success();
}

LogicalResult AdamUpdateOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  Type param = adaptor.getParam().getType();
  // adam_update_c1 (AllTypesMatch): checked again for builders.
  if (failed(checkSameAsParam(loc, adaptor.getGrad(), "grad", param)) ||
      failed(checkSameAsParam(loc, adaptor.getExpAvg(), "exp_avg", param)) ||
      failed(checkSameAsParam(loc, adaptor.getExpAvgSq(), "exp_avg_sq", param)))
    return failure();
  // adam_update_c2
  types.append({param, param, param});
  return success();
}

// all_reduce_c3: each result has its operand's type.
LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  for (Value v : adaptor.getOperands())
    types.push_back(v.getType());
  return success();
}
