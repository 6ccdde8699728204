//===- CausalProver.cpp - what is known about a causal matrix's triangle -===//
//
// See CausalProver.h. The rules are listed there and in
// passes/CausalMatmuls.cpp's header.
//
//===----------------------------------------------------------------------===//

#include "passes/CausalProver.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace sinter::sgraph;

namespace sinter::causal {

Side flip(Side s) {
  return s == Side::Lower   ? Side::Upper
         : s == Side::Upper ? Side::Lower
                            : Side::None;
}

namespace {
/// The size of v's two trailing axes when they are square, else 0.
int64_t squareSize(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() < 2 || !type.hasStaticShape())
    return 0;
  int64_t r = type.getRank();
  return type.getDimSize(r - 1) == type.getDimSize(r - 2)
             ? type.getDimSize(r - 1)
             : 0;
}

/// v's value when it is a float constant with one value everywhere.
std::optional<double> splatValue(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// `cond` is a causal mask over the trailing axes of a size x size matrix.
bool isCausalMask(Value cond, int64_t size) {
  auto mask = cond.getDefiningOp<CausalMaskOp>();
  if (!mask)
    return false;
  auto type = cast<RankedTensorType>(mask.getType());
  int64_t r = type.getRank();
  return r >= 2 && type.getDimSize(r - 1) == size &&
         type.getDimSize(r - 2) == size;
}

/// `operand` has the shape of `result` (no broadcast into its positions).
bool sameShape(Value operand, Value result) {
  return operand.getType() == result.getType() ||
         cast<ShapedType>(operand.getType()).getShape() ==
             cast<ShapedType>(result.getType()).getShape();
}

/// Whether `v` is one value per row (a last axis of 1, e.g. a row's max) or
/// a scalar: added to or subtracted from a matrix, it moves each row's
/// elements alike, so -inf stays -inf where v is finite.
bool alongRows(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type)
    return false;
  return type.getRank() == 0 ||
         (type.getRank() >= 1 && type.getDimSize(type.getRank() - 1) == 1);
}

} // namespace

/// Where v is exactly 0.
Side Prover::zeros(Value v) {
  return memoized(zeroMemo, v, &Prover::computeZeros);
}

/// Where v is -inf.
Side Prover::negInf(Value v) {
  return memoized(negInfMemo, v, &Prover::computeNegInf);
}

/// No reader of v looks above its diagonal (given finite values there).
bool Prover::unreadAbove(Value v) {
  if (auto it = unreadMemo.find(v); it != unreadMemo.end())
    return it->second;
  unreadMemo[v] = false; // a cycle cannot occur; be safe anyway
  bool unread = squareSize(v) && !v.use_empty() &&
                llvm::all_of(v.getUses(), [&](OpOperand &use) {
                  return readsOnlyLower(use);
                });
  unreadMemo[v] = unread;
  return unread;
}

/// compute(v) once; None for a value that is not a square matrix. A
/// fusion region's result is what its body yields, and an argument of its
/// body the region's operand.
Side Prover::memoized(DenseMap<Value, Side> &memo, Value v,
                      Side (Prover::*compute)(Value)) {
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  memo[v] = Side::None; // a cycle cannot occur; be safe anyway
  Value across;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto fusion = dyn_cast_or_null<FusionOp>(arg.getOwner()->getParentOp()))
      across = fusion.getInputs()[arg.getArgNumber()];
  } else if (auto fusion = v.getDefiningOp<FusionOp>()) {
    across = fusion.getBody().front().getTerminator()->getOperand(
        cast<OpResult>(v).getResultNumber());
  }
  Side s = !squareSize(v) ? Side::None
           : across       ? memoized(memo, across, compute)
                          : (this->*compute)(v);
  memo[v] = s;
  return s;
}

Side Prover::computeZeros(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op)
    return Side::None;
  int64_t size = squareSize(v);
  if (auto select = dyn_cast<SelectOp>(op)) {
    if (isCausalMask(select.getCond(), size) &&
        splatValue(select.getOnFalse()) == 0.0)
      return Side::Lower;
    Side t = sameShape(select.getOnTrue(), v) ? zeros(select.getOnTrue())
                                              : Side::None;
    Side f = sameShape(select.getOnFalse(), v) ? zeros(select.getOnFalse())
                                               : Side::None;
    return t == f ? t : Side::None;
  }
  if (auto exp = dyn_cast<ExpOp>(op))
    return negInf(exp.getOperand());
  if (auto mul = dyn_cast<MulOp>(op)) {
    for (Value x : {mul.getLhs(), mul.getRhs()})
      if (sameShape(x, v))
        if (Side s = zeros(x); s != Side::None)
          return s;
    return Side::None;
  }
  if (auto div = dyn_cast<DivOp>(op))
    return sameShape(div.getLhs(), v) ? zeros(div.getLhs()) : Side::None;
  if (auto add = dyn_cast<AddOp>(op))
    return bothZero(add.getLhs(), add.getRhs(), v);
  if (auto sub = dyn_cast<SubOp>(op))
    return bothZero(sub.getLhs(), sub.getRhs(), v);
  if (isa<NegOp, CastOp, DropoutOp>(op))
    return zeros(op->getOperand(0));
  if (auto transpose = dyn_cast<TransposeOp>(op))
    return throughTranspose(transpose, zeros(transpose.getOperand()));
  return Side::None;
}

Side Prover::computeNegInf(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op)
    return Side::None;
  int64_t size = squareSize(v);
  if (auto select = dyn_cast<SelectOp>(op)) {
    std::optional<double> f = splatValue(select.getOnFalse());
    if (isCausalMask(select.getCond(), size) && f && std::isinf(*f) && *f < 0)
      return Side::Lower;
    return Side::None;
  }
  // -inf minus (or plus) a finite value per row stays -inf.
  if (auto sub = dyn_cast<SubOp>(op))
    return sameShape(sub.getLhs(), v) && alongRows(sub.getRhs())
               ? negInf(sub.getLhs())
               : Side::None;
  if (auto add = dyn_cast<AddOp>(op)) {
    if (sameShape(add.getLhs(), v) && alongRows(add.getRhs()))
      return negInf(add.getLhs());
    if (sameShape(add.getRhs(), v) && alongRows(add.getLhs()))
      return negInf(add.getRhs());
    return Side::None;
  }
  // Times a positive constant (a scale).
  if (auto mul = dyn_cast<MulOp>(op)) {
    for (auto [x, c] : {std::pair{mul.getLhs(), mul.getRhs()},
                        std::pair{mul.getRhs(), mul.getLhs()}}) {
      std::optional<double> k = splatValue(c);
      if (sameShape(x, v) && k && *k > 0 && std::isfinite(*k))
        return negInf(x);
    }
    return Side::None;
  }
  if (isa<CastOp>(op))
    return negInf(op->getOperand(0));
  if (auto transpose = dyn_cast<TransposeOp>(op))
    return throughTranspose(transpose, negInf(transpose.getOperand()));
  return Side::None;
}

Side Prover::bothZero(Value a, Value b, Value v) {
  if (!sameShape(a, v) || !sameShape(b, v))
    return Side::None;
  Side s = zeros(a);
  return s == zeros(b) ? s : Side::None;
}

/// A transpose keeps the side when it keeps the two trailing axes, and
/// swaps it when it swaps them.
Side Prover::throughTranspose(TransposeOp op, Side s) {
  ArrayRef<int64_t> p = op.getPermutation();
  size_t r = p.size();
  if (s == Side::None || r < 2)
    return Side::None;
  for (size_t i = 0; i + 2 < r; ++i)
    if (p[i] == int64_t(r) - 1 || p[i] == int64_t(r) - 2)
      return Side::None;
  return p[r - 1] == int64_t(r) - 1 ? s : flip(s);
}

/// The reader of `use` looks at the used value only on and below the
/// diagonal.
bool Prover::readsOnlyLower(OpOperand &use) {
  Operation *user = use.getOwner();
  Value v = use.get();
  if (user->getNumResults() != 1)
    return false;
  Value result = user->getResult(0);
  if (!sameShape(v, result))
    return false;
  if (auto select = dyn_cast<SelectOp>(user)) {
    if (use.getOperandNumber() == 1 &&
        isCausalMask(select.getCond(), squareSize(v)))
      return true;
    if (use.getOperandNumber() == 0)
      return false;
    return unreadAbove(result);
  }
  if (auto mul = dyn_cast<MulOp>(user)) {
    Value other = use.getOperandNumber() == 0 ? mul.getRhs() : mul.getLhs();
    if (sameShape(other, result) && zeros(other) == Side::Lower)
      return true;
    return unreadAbove(result);
  }
  if (auto div = dyn_cast<DivOp>(user))
    return use.getOperandNumber() == 0 && unreadAbove(result);
  if (auto dropout = dyn_cast<DropoutOp>(user))
    return use.getOperandNumber() == 0 && unreadAbove(result);
  if (isa<AddOp, SubOp, NegOp, CastOp, ExpOp>(user))
    return unreadAbove(result);
  return false;
}

} // namespace sinter::causal
