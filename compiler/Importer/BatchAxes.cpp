//===- BatchAxes.cpp - which axis of each forward value holds the batch ---===//
//
// A forward dataflow over the ops of one block, in order (BatchAxes.h). Each
// op maps its operands' batch axes to its result's: elementwise ops and
// broadcasts align axes from the right as numpy does, transposes permute,
// reshapes keep the batch where the model file puts it (its -1) or where
// they leave it untouched, reductions and matmuls remove or move it. Whatever
// an op does to the batch axis that the rules cannot follow (slicing or
// concatenating along it, merging it behind another axis, an op with no rule)
// makes the result Unknown, never a guess.
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer/BatchAxes.h"

#include "dialects/Graph/GraphOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace sinter;
using namespace sinter::sgraph;
using namespace sinter::importer;

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

BatchAxis at(int64_t axis) { return {BatchAxis::Axis, axis, nullptr}; }

class Analysis {
public:
  explicit Analysis(const llvm::DenseMap<Operation *, int64_t> &reshapeAxes)
      : reshapeAxes(reshapeAxes) {}

  llvm::DenseMap<Value, BatchAxis> axes;

  BatchAxis of(Value v) const { return axes.lookup(v); }

  /// The result's batch axis of one op.
  BatchAxis transfer(Operation *op);

private:
  const llvm::DenseMap<Operation *, int64_t> &reshapeAxes;

  BatchAxis unknown(Operation *op) const { return {BatchAxis::Unknown, 0, op}; }

  /// The operand's batch axis in a result of shape `result`, the operand
  /// aligned to it from the right (numpy broadcasting). The batch axis must
  /// keep its size: broadcasting it from 1 is not following it.
  BatchAxis aligned(Operation *op, Value operand, ArrayRef<int64_t> result) {
    BatchAxis b = of(operand);
    if (b.kind != BatchAxis::Axis)
      return b;
    ArrayRef<int64_t> shape = shapeOf(operand);
    int64_t j = b.axis + static_cast<int64_t>(result.size()) -
                static_cast<int64_t>(shape.size());
    if (j < 0 || result[j] != shape[b.axis])
      return unknown(op);
    return at(j);
  }

  /// The operand's batch: kept where `keeps(axis)` says the op leaves its
  /// axis whole (at the axis `moved(axis)` gives), Unknown where not.
  BatchAxis along(Operation *op, Value operand,
                  llvm::function_ref<bool(int64_t)> keeps,
                  llvm::function_ref<int64_t(int64_t)> moved = nullptr) {
    BatchAxis b = of(operand);
    if (b.kind != BatchAxis::Axis)
      return b;
    if (!keeps(b.axis))
      return unknown(op);
    return moved ? at(moved(b.axis)) : b;
  }

  /// All of `parts` together: None where none holds the batch, Unknown
  /// where one is or they disagree, else their common axis.
  BatchAxis join(Operation *op, ArrayRef<BatchAxis> parts) const {
    BatchAxis joined;
    for (const BatchAxis &p : parts) {
      if (p.kind == BatchAxis::Unknown)
        return p;
      if (p.kind == BatchAxis::None)
        continue;
      if (joined.kind == BatchAxis::Axis && joined.axis != p.axis)
        return unknown(op);
      joined = p;
    }
    return joined;
  }

  BatchAxis elementwise(Operation *op) {
    ArrayRef<int64_t> result = shapeOf(op->getResult(0));
    SmallVector<BatchAxis> parts;
    for (Value v : op->getOperands())
      parts.push_back(aligned(op, v, result));
    return join(op, parts);
  }

  /// Axes `reduced` removed (or kept as 1 with `keepdims`).
  BatchAxis reduce(Operation *op, ArrayRef<int64_t> reduced, bool keepdims) {
    BatchAxis b = of(op->getOperand(0));
    if (b.kind != BatchAxis::Axis)
      return b;
    if (llvm::is_contained(reduced, b.axis))
      return {}; // summed over the batch: no rows left
    if (keepdims)
      return b;
    return at(b.axis -
              llvm::count_if(reduced, [&](int64_t r) { return r < b.axis; }));
  }

  BatchAxis matmul(MatmulOp op);
  BatchAxis reshape(ReshapeOp op);
};

BatchAxis Analysis::matmul(MatmulOp op) {
  int64_t resultRank = shapeOf(op.getResult()).size();
  // Where each operand's batch goes: a result axis, or contracted (K).
  bool contracted = false;
  SmallVector<BatchAxis> parts;
  auto place = [&](Value v, bool transposed, bool isLhs) {
    BatchAxis b = of(v);
    if (b.kind != BatchAxis::Axis) {
      parts.push_back(b);
      return;
    }
    int64_t rank = shapeOf(v).size();
    // lhs is [..., M, K], rhs [..., K, N]; transposed, the two swap.
    int64_t kAxis = isLhs != transposed ? rank - 1 : rank - 2;
    if (b.axis == kAxis) {
      contracted = true;
      return;
    }
    if (b.axis >= rank - 2) { // M of lhs, N of rhs
      parts.push_back(at(isLhs ? resultRank - 2 : resultRank - 1));
      return;
    }
    // A batch axis of the product: aligned from the right, as numpy does.
    int64_t j = b.axis + resultRank - rank;
    if (shapeOf(op.getResult())[j] != shapeOf(v)[b.axis])
      parts.push_back(unknown(op));
    else
      parts.push_back(at(j));
  };
  place(op.getLhs(), op.getTransposeLhs(), true);
  place(op.getRhs(), op.getTransposeRhs(), false);
  BatchAxis joined = join(op, parts);
  // A batch summed over by the product leaves no rows, unless another
  // operand's batch reaches the result.
  if (contracted && joined.kind == BatchAxis::Axis)
    return unknown(op);
  return joined;
}

BatchAxis Analysis::reshape(ReshapeOp op) {
  BatchAxis b = of(op.getOperand());
  if (b.kind != BatchAxis::Axis)
    return b;
  ArrayRef<int64_t> in = shapeOf(op.getOperand());
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  // Each index before the batch axis starts a block of the batch's
  // elements; an output axis that starts there (the same elements before
  // it) can hold the batch.
  int64_t before = ShapedType::getNumElements(in.take_front(b.axis));
  int64_t after = ShapedType::getNumElements(in.drop_front(b.axis + 1));
  auto startsBlock = [&](size_t j) {
    return ShapedType::getNumElements(out.take_front(j)) == before;
  };
  // The file says where the batch goes: it does if the elements before it
  // are the input's.
  if (auto it = reshapeAxes.find(op); it != reshapeAxes.end())
    return startsBlock(it->second) ? at(it->second) : unknown(op);
  // An output axis with the input's elements before and after it is the
  // batch axis untouched, the other axes reshaped around it (as layers
  // reshape): that holds at any batch size.
  SmallVector<int64_t> untouched, starts;
  for (size_t j = 0; j < out.size(); ++j)
    if (startsBlock(j)) {
      starts.push_back(j);
      if (ShapedType::getNumElements(out.drop_front(j + 1)) == after)
        untouched.push_back(j);
    }
  if (before > 1)
    return untouched.size() == 1 ? at(untouched.front()) : unknown(op);
  // With nothing before it, a rank's elements are one contiguous block of
  // the global tensor, which any reshape keeps, and every axis starting at
  // element 0 numbers them alike (BatchAxes.h): the batch merged with the
  // axes after it, or split, is still the batch.
  if (!untouched.empty())
    return at(untouched.front());
  for (int64_t j : starts)
    if (out[j] > 1)
      return at(j);
  return starts.empty() ? unknown(op) : at(starts.front());
}

BatchAxis Analysis::transfer(Operation *op) {
  if (llvm::all_of(op->getOperands(),
                   [&](Value v) { return of(v).kind == BatchAxis::None; }))
    return {};
  if (op->getNumResults() != 1 ||
      !isa<RankedTensorType>(op->getResult(0).getType()))
    return unknown(op);
  return TypeSwitch<Operation *, BatchAxis>(op)
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, CompareOp,
            SelectOp, NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp,
            SigmoidOp, ReluOp, ErfOp, GeluOp, GeluGradOp, CastOp, DropoutOp,
            StopGradientOp, TrainEvalOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp,
            BroadcastOp>([&](Operation *) { return elementwise(op); })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(
          [&](auto r) { return reduce(op, r.getAxes(), r.getKeepdims()); })
      .Case([&](ArgmaxOp a) {
        int64_t axis = static_cast<int64_t>(a.getAxis());
        return reduce(op, axis, /*keepdims=*/false);
      })
      .Case([&](MatmulOp m) { return matmul(m); })
      .Case([&](ReshapeOp r) { return reshape(r); })
      .Case([&](TransposeOp t) {
        ArrayRef<int64_t> perm = t.getPermutation();
        return along(
            op, t.getOperand(), [](int64_t) { return true; },
            [&](int64_t a) { return llvm::find(perm, a) - perm.begin(); });
      })
      .Case([&](EmbeddingOp e) {
        // [indices..., dim]: rows of the table for each index.
        if (of(e.getTable()).kind != BatchAxis::None)
          return unknown(op);
        return of(e.getIndices());
      })
      .Case([&](OneHotOp o) { return of(o.getLabels()); })
      .Case([&](SoftmaxCrossEntropyOp c) {
        if (shapeOf(c.getResult()).empty())
          return BatchAxis{}; // a sum or mean over the rows
        return aligned(op, c.getLabels(), shapeOf(c.getResult()));
      })
      .Case([&](SliceOp s) {
        std::optional<ArrayRef<int64_t>> stride = s.getStride();
        return along(op, s.getOperand(), [&](int64_t a) {
          return s.getStart()[a] == 0 &&
                 s.getLimit()[a] == shapeOf(s.getOperand())[a] &&
                 (!stride || (*stride)[a] == 1);
        });
      })
      .Case([&](PadOp p) {
        std::optional<ArrayRef<int64_t>> interior = p.getInterior();
        return along(op, p.getOperand(), [&](int64_t a) {
          return p.getLow()[a] == 0 && p.getHigh()[a] == 0 &&
                 (!interior || (*interior)[a] == 0);
        });
      })
      .Case([&](ConcatOp c) {
        BatchAxis joined = elementwise(op);
        if (joined.kind == BatchAxis::Axis &&
            joined.axis == static_cast<int64_t>(c.getAxis()))
          return unknown(op);
        return joined;
      })
      .Default([&](Operation *) { return unknown(op); });
}

} // namespace

llvm::DenseMap<Value, BatchAxis> sinter::importer::findBatchAxes(
    Block &body, ArrayRef<std::pair<Value, int64_t>> batchInputs,
    const llvm::DenseMap<Operation *, int64_t> &reshapeAxes) {
  Analysis analysis(reshapeAxes);
  for (auto [value, axis] : batchInputs)
    analysis.axes[value] = at(axis);
  for (Operation &op : body) {
    BatchAxis result = analysis.transfer(&op);
    if (result.kind == BatchAxis::None)
      continue;
    for (Value r : op.getResults())
      analysis.axes[r] = result;
  }
  return std::move(analysis.axes);
}

namespace {

/// How a value that holds no batch rows came from them (batchSumOf).
enum class RowsUse {
  Free,  // from no batch row: parameters, constants, the step
  Rows,  // holds batch rows itself
  Mean,  // an average over the batch's rows, maybe scaled
  Sum,   // a sum over the batch's rows, maybe scaled
  Other, // any other function of them
};

/// The one number every element of `v` holds, where `v` is a constant
/// (maybe cast): the batch size a sum is divided by, in batchSumOf.
std::optional<double> constantValue(Value v) {
  while (auto cast = v.getDefiningOp<CastOp>())
    v = cast->getOperand(0);
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  Type type = dense.getElementType();
  if (isa<FloatType>(type))
    return dense.getSplatValue<APFloat>().convertToDouble();
  if (type.isSignlessInteger() && type.getIntOrFloatBitWidth() > 1)
    return static_cast<double>(dense.getSplatValue<APInt>().getSExtValue());
  return std::nullopt;
}

/// Whether dividing the reduction `sum` (a reduce_sum over the batch axis,
/// or a sum-reduced cross-entropy) by `divisor` makes it a mean: the
/// divisor is the batch size the step is compiled at times the extents of
/// some of the other axes the reduction adds up (none: each row's sum,
/// averaged over the rows; all: the mean of every element), where rows
/// merged into the batch's axis ([B * T]) count as one more such axis. Any
/// other multiple of the batch may be the global batch that a loss
/// averaged over W ranks' rows (TensorFlow's compute_average_loss) divides
/// by, which the ranks' averaging then divides by W once more.
bool meanOfSum(Operation *sum, double divisor, int64_t batch,
               const llvm::DenseMap<Value, BatchAxis> &axes) {
  if (!sum)
    return false;
  double whole = std::round(divisor);
  if (!(whole >= 1.0) || whole > 1e15 ||
      std::abs(divisor - whole) > 1e-6 * whole)
    return false;
  auto count = static_cast<int64_t>(whole);
  if (count % batch != 0)
    return false;
  Value operand = sum->getOperand(0);
  ArrayRef<int64_t> shape = shapeOf(operand);
  BatchAxis b = axes.lookup(operand);
  if (b.kind != BatchAxis::Axis)
    return false;
  SmallVector<int64_t> reduced;
  if (auto r = dyn_cast<ReduceSumOp>(sum))
    reduced.append(r.getAxes().begin(), r.getAxes().end());
  else // a cross-entropy adds up every position: all but the class axis
    for (int64_t a = 0; a + 1 < static_cast<int64_t>(shape.size()); ++a)
      reduced.push_back(a);
  SmallVector<int64_t> extents;
  for (int64_t a : reduced) {
    if (a < 0 || a >= static_cast<int64_t>(shape.size()))
      return false;
    int64_t extent = shape[a];
    if (a == b.axis)
      extent = extent % batch == 0 ? extent / batch : 1;
    if (extent > 1)
      extents.push_back(extent);
  }
  int64_t rest = count / batch;
  if (extents.size() > 16)
    return rest == 1;
  for (uint32_t subset = 0; subset < (1u << extents.size()); ++subset) {
    int64_t product = 1;
    for (size_t i = 0; i < extents.size(); ++i)
      if (subset & (1u << i))
        product *= extents[i];
    if (product == rest)
      return true;
  }
  return false;
}

/// Sums and differences: an average plus an average stays one (scaled
/// alike or not, it moves with the batch as one does), and a sum plus a
/// sum; anything plus what holds no row is what it was.
RowsUse addUses(RowsUse a, RowsUse b) {
  if (a == RowsUse::Free)
    return b;
  if (b == RowsUse::Free || a == b)
    return a;
  return RowsUse::Other;
}

} // namespace

Operation *
sinter::importer::batchSumOf(Block &body, Value loss,
                             const llvm::DenseMap<Value, BatchAxis> &axes,
                             int64_t batch) {
  llvm::DenseMap<Value, RowsUse> uses;
  // The reduce_sum each Sum value goes back to (the first, for a sum of
  // several).
  llvm::DenseMap<Value, Operation *> sums;
  auto holdsRows = [&](Value v) {
    return axes.lookup(v).kind != BatchAxis::None;
  };
  auto use = [&](Value v) {
    auto it = uses.find(v);
    if (it != uses.end())
      return it->second;
    // A block argument: an input, or a parameter without rows.
    return holdsRows(v) ? RowsUse::Rows : RowsUse::Free;
  };
  for (Operation &op : body) {
    bool free = llvm::all_of(op.getOperands(),
                             [&](Value v) { return use(v) == RowsUse::Free; });
    for (Value r : op.getResults())
      uses[r] = holdsRows(r) ? RowsUse::Rows
                : free       ? RowsUse::Free
                             : RowsUse::Other;
    // A single result that holds no rows but comes from them: how, below.
    // Several results (batch statistics and their like) are not followed.
    if (op.getNumResults() != 1 || uses[op.getResult(0)] != RowsUse::Other)
      continue;
    Value result = op.getResult(0);
    auto from = [&](Value v) {
      if (Operation *sum = sums.lookup(v))
        sums.try_emplace(result, sum);
      return use(v);
    };
    // A reduction of rows over their batch axis, or of a value that holds
    // none (which keeps what it was).
    auto reduction = [&](Value operand, ArrayRef<int64_t> reduced,
                         RowsUse kind) {
      if (use(operand) != RowsUse::Rows)
        return from(operand);
      BatchAxis b = axes.lookup(operand);
      if (b.kind != BatchAxis::Axis || !llvm::is_contained(reduced, b.axis))
        return RowsUse::Other;
      if (kind == RowsUse::Sum)
        sums.try_emplace(result, &op);
      return kind;
    };
    uses[result] =
        TypeSwitch<Operation *, RowsUse>(&op)
            .Case([&](ReduceSumOp r) {
              return reduction(r->getOperand(0), r.getAxes(), RowsUse::Sum);
            })
            .Case([&](ReduceMeanOp r) {
              return reduction(r->getOperand(0), r.getAxes(), RowsUse::Mean);
            })
            .Case([&](SoftmaxCrossEntropyOp ce) {
              if (ce.getReduction() == "mean")
                return RowsUse::Mean;
              if (ce.getReduction() != "sum")
                return RowsUse::Other;
              sums.try_emplace(result, &op);
              return RowsUse::Sum;
            })
            .Case<AddOp, SubOp>([&](Operation *o) {
              RowsUse a = from(o->getOperand(0)), b = from(o->getOperand(1));
              return addUses(a, b);
            })
            .Case<NegOp, CastOp>(
                [&](Operation *o) { return from(o->getOperand(0)); })
            .Case([&](MulOp m) {
              // A sum times the reciprocal of its count (meanOfSum) is a
              // mean.
              auto scaled = [&](Value v, Value factor) {
                RowsUse u = from(v);
                std::optional<double> f = constantValue(factor);
                if (u == RowsUse::Sum && f && *f > 0 &&
                    meanOfSum(sums.lookup(v), 1.0 / *f, batch, axes))
                  return RowsUse::Mean;
                return u;
              };
              if (use(m.getLhs()) == RowsUse::Free)
                return scaled(m.getRhs(), m.getLhs());
              if (use(m.getRhs()) == RowsUse::Free)
                return scaled(m.getLhs(), m.getRhs());
              return RowsUse::Other;
            })
            .Case([&](DivOp d) {
              if (use(d.getRhs()) != RowsUse::Free)
                return RowsUse::Other;
              RowsUse u = from(d.getLhs());
              std::optional<double> divisor = constantValue(d.getRhs());
              if (u == RowsUse::Sum && divisor &&
                  meanOfSum(sums.lookup(d.getLhs()), *divisor, batch, axes))
                return RowsUse::Mean;
              return u;
            })
            .Default([](Operation *) { return RowsUse::Other; });
  }
  return use(loss) == RowsUse::Sum ? sums.lookup(loss) : nullptr;
}
