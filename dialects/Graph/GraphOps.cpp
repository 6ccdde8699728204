//===- GraphOps.cpp - sgraph op verifiers and folders --------------------===//
//
// Verifiers for the constraints that do not determine a result type (those
// live in GraphTypeInference.cpp). Labels match docs/dialects/sgraph.md.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"

#include "llvm/ADT/StringSet.h"

#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace sinter::sgraph;

#include "dialects/Graph/GraphInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/Graph/GraphOps.cpp.inc"

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

} // namespace

//===----------------------------------------------------------------------===//
// Function argument and result names
//===----------------------------------------------------------------------===//

std::string sinter::sgraph::argumentName(FunctionOpInterface fn,
                                         unsigned index) {
  for (StringRef key : {attr::kParam, attr::kInput, attr::kOptState,
                        attr::kAccumulator, attr::kHyper})
    if (auto name = fn.getArgAttrOfType<StringAttr>(index, key))
      return name.str();
  if (fn.getArgAttr(index, attr::kStep))
    return "step";
  if (fn.getArgAttr(index, attr::kRank))
    return "rank";
  return "";
}

std::string sinter::sgraph::resultName(FunctionOpInterface fn, unsigned index) {
  if (auto name = fn.getResultAttrOfType<StringAttr>(index, attr::kName))
    return name.str();
  return "";
}

SmallVector<unsigned>
sinter::sgraph::bufferUpdateResults(FunctionOpInterface fn) {
  llvm::StringSet<> buffers;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (fn.getArgAttr(i, attr::kBuffer))
      buffers.insert(argumentName(fn, i));
  SmallVector<unsigned> results;
  if (buffers.empty())
    return results;
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (buffers.contains(resultName(fn, i)))
      results.push_back(i);
  return results;
}

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

bool sinter::sgraph::isCostlyElementwise(Operation *op) {
  return isa<ExpOp, LogOp, ErfOp, GeluOp, GeluGradOp, TanhOp, SigmoidOp, PowOp,
             DropoutOp>(op);
}

Value sinter::sgraph::buildScalarConstant(OpBuilder &builder, Location loc,
                                          Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute element = isa<FloatType>(elementType)
                          ? Attribute(builder.getFloatAttr(elementType, value))
                          : Attribute(builder.getIntegerAttr(
                                elementType, static_cast<int64_t>(value)));
  return builder.create<ConstantOp>(loc, DenseElementsAttr::get(type, element));
}

LogicalResult IotaOp::verify() {
  RankedTensorType type = getType();
  // iota_c2
  if (type.getRank() < 1)
    return emitOpError("result must have rank >= 1, got ") << type;
  // iota_c3 (I64Attr getters return uint64_t: read the axis as signed so a
  // negative one is reported as itself)
  int64_t axis = getAxis();
  if (axis < 0 || axis >= type.getRank())
    return emitOpError("axis ")
           << axis << " is out of range [0, " << type.getRank() << ")";
  return success();
}

LogicalResult CausalMaskOp::verify() {
  RankedTensorType type = getType();
  // causal_mask_c2
  if (type.getRank() != 2)
    return emitOpError("result must have rank 2, got ") << type;
  // causal_mask_c3
  if (type.getDimSize(0) != type.getDimSize(1))
    return emitOpError("result must be square, got ") << type;
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::verify() {
  // gelu_c2
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate '")
           << getApproximate() << "' is not one of none, tanh";
  return success();
}

LogicalResult GeluGradOp::verify() {
  // gelu_grad_c2
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate '")
           << getApproximate() << "' is not one of none, tanh";
  // gelu_grad_c3 is ODS's AllTypesMatch.
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::verify() {
  // layer_norm_c5
  if (!(getEpsilon().convertToDouble() > 0.0))
    return emitOpError("epsilon must be > 0, got ")
           << getEpsilon().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// Embeddings and losses
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType grad = tensorType(getGrad());
  RankedTensorType indices = tensorType(getIndices());
  RankedTensorType result = getType();
  // embedding_grad_c2
  if (result.getRank() != 2 || result.getElementType() != grad.getElementType())
    return emitOpError("result must be a rank-2 table of ")
           << grad.getElementType() << ", got " << result;
  // embedding_grad_c3
  SmallVector<int64_t> expected(indices.getShape());
  expected.push_back(result.getDimSize(1));
  if (grad.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("grad ")
           << grad << " must have shape indices.shape + ["
           << result.getDimSize(1) << "] = ["
           << llvm::make_range(expected.begin(), expected.end()) << "]";
  return success();
}

LogicalResult OneHotOp::verify() {
  RankedTensorType labels = tensorType(getLabels());
  RankedTensorType result = getType();
  // one_hot_c2
  if (result.getRank() != labels.getRank() + 1 ||
      result.getShape().drop_back() != labels.getShape() ||
      result.getShape().back() < 1)
    return emitOpError("result ")
           << result << " must have shape labels.shape + [C] with C >= 1 "
           << "for labels " << labels;
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType from = tensorType(getOperand()), to = getType();
  // reshape_c2
  if (from.getElementType() != to.getElementType())
    return emitOpError("element type changes from ")
           << from.getElementType() << " to " << to.getElementType();
  // reshape_c3
  if (from.getNumElements() != to.getNumElements())
    return emitOpError("operand ") << from << " has " << from.getNumElements()
                                   << " elements but the result " << to
                                   << " has " << to.getNumElements();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return {};
}

bool sinter::sgraph::isExactWidening(CastOp cast) {
  auto from =
      dyn_cast<FloatType>(tensorType(cast.getOperand()).getElementType());
  auto to = dyn_cast<FloatType>(cast.getType().getElementType());
  if (!from || !to || from.getWidth() >= to.getWidth())
    return false;
  return from.isBF16() || from.isF16() || from.isF32();
}

namespace {

/// reshape(slice(x)) -> slice(reshape(x)) when the reshape only splits
/// dimensions and every sliced dimension splits at a multiple of its inner
/// factors. The attention heads are the case that matters:
///
///   %q = slice %qkv [.., 0:C] : (B, T, 3C) -> (B, T, C)
///   %h = reshape %q : (B, T, C) -> (B, T, H, D)
///
/// becomes a reshape of %qkv to (B, T, 3H, D), which aliases its bytes,
/// and a slice [.., 0:H, :], a view the kernels that read it absorb.
/// Before, the slice had to be copied out just so the reshape had
/// contiguous bytes to alias.
struct SwapReshapeAndSlice : public OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp reshape,
                                PatternRewriter &rewriter) const override {
    auto slice = reshape.getOperand().getDefiningOp<SliceOp>();
    if (!slice)
      return failure();
    if (auto strides = slice.getStride())
      if (llvm::any_of(*strides, [](int64_t s) { return s != 1; }))
        return failure();
    ArrayRef<int64_t> from = tensorType(slice.getOperand()).getShape();
    ArrayRef<int64_t> sliced = tensorType(slice.getResult()).getShape();
    ArrayRef<int64_t> to = reshape.getType().getShape();
    // Group the result dims by the sliced dim they split.
    SmallVector<int64_t> newShape, start, limit;
    size_t r = 0;
    for (size_t d = 0; d < sliced.size(); ++d) {
      SmallVector<int64_t> group;
      int64_t product = 1;
      while (r < to.size() && product < sliced[d]) {
        product *= to[r];
        group.push_back(to[r++]);
      }
      if (product != sliced[d] || group.empty())
        return failure();
      int64_t inner = 1;
      for (int64_t g : ArrayRef<int64_t>(group).drop_front())
        inner *= g;
      int64_t s0 = slice.getStart()[d], l0 = slice.getLimit()[d];
      if (from[d] % inner || s0 % inner || l0 % inner)
        return failure();
      newShape.push_back(from[d] / inner);
      start.push_back(s0 / inner);
      limit.push_back(l0 / inner);
      for (int64_t g : ArrayRef<int64_t>(group).drop_front()) {
        newShape.push_back(g);
        start.push_back(0);
        limit.push_back(g);
      }
    }
    if (r != to.size() || newShape.size() != to.size())
      return failure();
    auto type =
        RankedTensorType::get(newShape, reshape.getType().getElementType());
    Value whole =
        rewriter.create<ReshapeOp>(reshape.getLoc(), type, slice.getOperand());
    rewriter.replaceOpWithNewOp<SliceOp>(
        reshape, reshape.getType(), whole, rewriter.getDenseI64ArrayAttr(start),
        rewriter.getDenseI64ArrayAttr(limit), DenseI64ArrayAttr());
    return success();
  }
};

/// layout(cast(x)) -> cast(layout(x)) for an exact widening that only
/// layout ops (slices, reshapes, transposes) read: each then moves the
/// narrow elements, and a cast back to x's type meets the widening
/// (FoldWidenAndNarrow). Mixed precision's attention
/// (docs/MixedPrecision.md): a bf16 matmul result widened, transposed to
/// heads and narrowed again for the next matmul becomes a bf16 transpose;
/// the fused QKV projection's result, widened and sliced into q, k and v,
/// becomes three bf16 slices (no f32 copy of it is written). A widening
/// something else reads stays where it is: sinking it would cast twice.
template <typename LayoutOp>
struct SinkWideningCast : public OpRewritePattern<LayoutOp> {
  using OpRewritePattern<LayoutOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(LayoutOp op,
                                PatternRewriter &rewriter) const override {
    auto cast = op.getOperand().template getDefiningOp<CastOp>();
    if (!cast || !isExactWidening(cast) ||
        !llvm::all_of(cast->getUsers(), [](Operation *user) {
          return isa<SliceOp, ReshapeOp, TransposeOp>(user);
        }))
      return failure();
    Value x = cast.getOperand();
    auto narrowType = op.getType().clone(tensorType(x).getElementType());
    Operation *moved = rewriter.clone(*op);
    moved->setOperand(0, x);
    moved->getResult(0).setType(narrowType);
    rewriter.replaceOpWithNewOp<CastOp>(op, op.getType(), moved->getResult(0));
    return success();
  }
};

} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<SwapReshapeAndSlice, SinkWideningCast<ReshapeOp>>(context);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<SinkWideningCast<TransposeOp>>(context);
}

void SliceOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<SinkWideningCast<SliceOp>>(context);
}

namespace {

/// cast(cast(x)) -> x when the inner cast widens exactly and the outer one
/// narrows back to x's type.
struct FoldWidenAndNarrow : public OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getOperand().getDefiningOp<CastOp>();
    if (!inner || !isExactWidening(inner) ||
        inner.getOperand().getType() != op.getType())
      return failure();
    rewriter.replaceOp(op, inner.getOperand());
    return success();
  }
};

} // namespace

void CastOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<FoldWidenAndNarrow>(context);
}

namespace {

/// reduce_sum over the batch axes of a batched matmul that contracts over
/// rows (transpose_lhs) -> one matmul that contracts over batch and rows.
/// This is the weight gradient of a linear layer applied to a batch:
///
///   %g = matmul %dy, %x {transpose_lhs} : (B, T, N), (B, T, K) -> (B, N, K)
///   %dw = reduce_sum %g axes = [0] : (B, N, K) -> (N, K)
///
/// becomes matmul(reshape(%dy) : (B*T, N), reshape(%x) : (B*T, K)), with
/// no (B, N, K) tensor written and summed afterwards.
struct MergeBatchIntoContraction : public OpRewritePattern<ReduceSumOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceSumOp reduce,
                                PatternRewriter &rewriter) const override {
    auto mm = reduce.getOperand().getDefiningOp<MatmulOp>();
    if (!mm || !mm->hasOneUse() || !mm.getTransposeLhs() ||
        mm.getTransposeRhs())
      return failure();
    ArrayRef<int64_t> lhs = tensorType(mm.getLhs()).getShape();
    ArrayRef<int64_t> rhs = tensorType(mm.getRhs()).getShape();
    int64_t rank = lhs.size();
    if (rank < 3 || static_cast<int64_t>(rhs.size()) != rank ||
        lhs.drop_back() != rhs.drop_back())
      return failure();
    ArrayRef<int64_t> axes = reduce.getAxes();
    if (static_cast<int64_t>(axes.size()) != rank - 2)
      return failure();
    for (int64_t i = 0; i < rank - 2; ++i)
      if (axes[i] != i)
        return failure();
    int64_t rows = 1;
    for (int64_t d : lhs.drop_back())
      rows *= d;
    Type et = tensorType(mm.getLhs()).getElementType();
    Location loc = reduce.getLoc();
    Value l = rewriter.create<ReshapeOp>(
        loc, RankedTensorType::get({rows, lhs.back()}, et), mm.getLhs());
    Value r = rewriter.create<ReshapeOp>(
        loc, RankedTensorType::get({rows, rhs.back()}, et), mm.getRhs());
    auto type = RankedTensorType::get({lhs.back(), rhs.back()},
                                      mm.getType().getElementType());
    Value product = rewriter.create<MatmulOp>(
        loc, type, l, r, /*transpose_lhs=*/true,
        /*transpose_rhs=*/false, mm.getF32Result());
    if (type != reduce.getType()) // keepdims: leading 1s
      product = rewriter.create<ReshapeOp>(loc, reduce.getType(), product);
    rewriter.replaceOp(reduce, product);
    rewriter.eraseOp(mm);
    return success();
  }
};

} // namespace

void ReduceSumOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<MergeBatchIntoContraction>(context);
}

LogicalResult BroadcastOp::verify() {
  RankedTensorType from = tensorType(getOperand()), to = getType();
  // broadcast_c2
  if (from.getElementType() != to.getElementType())
    return emitOpError("element type changes from ")
           << from.getElementType() << " to " << to.getElementType();
  // broadcast_c3
  if (from.getRank() > to.getRank())
    return emitOpError("operand ")
           << from << " has a higher rank than the result " << to;
  // broadcast_c4
  int64_t offset = to.getRank() - from.getRank();
  for (int64_t i = 0; i < from.getRank(); ++i) {
    int64_t d = from.getDimSize(i);
    if (d != 1 && d != to.getDimSize(i + offset))
      return emitOpError("operand ")
             << from << " does not broadcast to " << to << " (axis " << i
             << " has size " << d << ")";
  }
  return success();
}

LogicalResult CastOp::verify() {
  // cast_c2
  if (tensorType(getOperand()).getShape() != getType().getShape())
    return emitOpError("shape changes from ")
           << getOperand().getType() << " to " << getType();
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return {};
}

//===----------------------------------------------------------------------===//
// Randomness
//===----------------------------------------------------------------------===//

std::array<int64_t, 3> DropoutOp::getBatchView() {
  ArrayRef<int64_t> shape = tensorType(getOperand()).getShape();
  auto axis = static_cast<size_t>(getBatchAxis().value_or(0));
  // (the verifier has checked that it is an axis)
  std::array<int64_t, 3> view{1, 1, 1};
  for (auto [i, d] : llvm::enumerate(shape))
    view[i < axis ? 0 : i == axis ? 1 : 2] *= d;
  return view;
}

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  // dropout_c2
  if (!(rate >= 0.0 && rate < 1.0))
    return emitOpError("rate ") << rate << " is not in [0, 1)";
  // dropout_c4
  if (std::optional<uint64_t> axis = getBatchAxis()) {
    int64_t rank = tensorType(getOperand()).getRank();
    if (static_cast<int64_t>(*axis) < 0 || static_cast<int64_t>(*axis) >= rank)
      return emitOpError("batch_axis ")
             << static_cast<int64_t>(*axis) << " is not an axis of the rank-"
             << rank << " operand";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Modes
//===----------------------------------------------------------------------===//

void sinter::sgraph::resolveTrainEval(Operation *root, bool training) {
  root->walk([&](TrainEvalOp op) {
    op.getResult().replaceAllUsesWith(training ? op.getTrain() : op.getEval());
    op.erase();
  });
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  // all_reduce_c4
  if (getOperands().empty())
    return emitOpError("needs at least one operand");
  // all_reduce_c2
  StringRef r = getReduction();
  if (r != "sum" && r != "mean" && r != "max" && r != "min")
    return emitOpError("reduction '")
           << r << "' is not one of sum, mean, max, min";
  // all_reduce_c5
  if (auto wire = getCommDtype()) {
    if (*wire != "bf16" && *wire != "f16")
      return emitOpError("comm_dtype '") << *wire << "' is not bf16 or f16";
    if (r != "sum" && r != "mean")
      return emitOpError("comm_dtype needs reduction sum or mean, not '")
             << r << "'";
    for (Value v : getOperands())
      if (!getElementTypeOrSelf(v.getType()).isF32())
        return emitOpError("comm_dtype needs f32 operands, not ")
               << v.getType();
  }
  return success();
}

LogicalResult CollectiveBroadcastOp::verify() {
  // collective_broadcast_c2 (getRoot() is uint64_t; compare it signed)
  int64_t root = getRoot();
  if (root < 0)
    return emitOpError("root ") << root << " must be >= 0";
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

namespace {

LogicalResult checkNonNegative(Operation *op, StringRef name, double value) {
  if (!(value >= 0.0))
    return op->emitOpError() << name << " must be >= 0, got " << value;
  return success();
}

} // namespace

LogicalResult SgdUpdateOp::verify() {
  // sgd_update_c3
  return checkNonNegative(*this, "weight_decay",
                          getWeightDecay().convertToDouble());
}

LogicalResult MomentumUpdateOp::verify() {
  double momentum = getMomentum().convertToDouble();
  double dampening = getDampening().convertToDouble();
  // momentum_update_c3
  if (failed(checkNonNegative(*this, "momentum", momentum)) ||
      failed(checkNonNegative(*this, "weight_decay",
                              getWeightDecay().convertToDouble())))
    return failure();
  // momentum_update_c4
  if (getNesterov() && (momentum <= 0.0 || dampening != 0.0))
    return emitOpError("nesterov needs momentum > 0 and dampening = 0, got "
                       "momentum ")
           << momentum << " and dampening " << dampening;
  return success();
}

LogicalResult AdamUpdateOp::verify() {
  double beta1 = getBeta1().convertToDouble();
  double beta2 = getBeta2().convertToDouble();
  // adam_update_c3
  if (!(beta1 >= 0.0 && beta1 < 1.0) || !(beta2 >= 0.0 && beta2 < 1.0))
    return emitOpError("betas must be in [0, 1), got (")
           << beta1 << ", " << beta2 << ")";
  // adam_update_c4
  if (failed(
          checkNonNegative(*this, "epsilon", getEpsilon().convertToDouble())) ||
      failed(checkNonNegative(*this, "weight_decay",
                              getWeightDecay().convertToDouble())))
    return failure();
  return success();
}

LogicalResult GlobalNormOp::verify() {
  // global_norm_c2
  if (getOperands().empty())
    return emitOpError("needs at least one operand");
  return success();
}

LogicalResult LrScheduleOp::verify() {
  StringRef schedule = getSchedule();
  double lr = getLr().convertToDouble(), minLr = getMinLr().convertToDouble();
  // The step attributes are I64Attr, whose getters return uint64_t.
  int64_t warmupSteps = getWarmupSteps(), decaySteps = getDecaySteps();
  // lr_schedule_c2
  if (schedule != "constant" && schedule != "warmup_cosine")
    return emitOpError("schedule '")
           << schedule << "' is not one of constant, warmup_cosine";
  // lr_schedule_c3
  if (failed(checkNonNegative(*this, "lr", lr)) ||
      failed(checkNonNegative(*this, "min_lr", minLr)) ||
      failed(checkNonNegative(*this, "warmup_steps", warmupSteps)))
    return failure();
  // lr_schedule_c4
  if (schedule == "warmup_cosine" && (decaySteps <= warmupSteps || minLr > lr))
    return emitOpError("warmup_cosine needs decay_steps > warmup_steps and "
                       "min_lr <= lr, got decay_steps ")
           << decaySteps << ", warmup_steps " << warmupSteps << ", min_lr "
           << minLr << ", lr " << lr;
  return success();
}

//===----------------------------------------------------------------------===//
// FusionOp
//===----------------------------------------------------------------------===//

LogicalResult FusionOp::verify() {
  Block &body = getBody().front();
  // fusion_c1: one block argument per input, of the input's type.
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("has ")
           << getInputs().size() << " inputs but its body "
           << "has " << body.getNumArguments() << " arguments";
  for (auto [i, input, arg] : llvm::enumerate(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError("input #")
             << i << " has type " << input.getType()
             << " but its block argument has type " << arg.getType();
  // fusion_c2: the yield matches the results.
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end in sgraph.yield");
  if (yield.getOperands().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getOperands().size()
           << " values whose types differ from the op's results";
  // fusion_c3: a known kind.
  StringRef kind = getKind();
  if (kind != "loop" && kind != "reduction" && kind != "special" &&
      kind != "matmul")
    return emitOpError("kind must be loop, reduction, matmul or special, "
                       "got '")
           << kind << "'";
  return success();
}
