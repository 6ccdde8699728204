//===- CausalMatmuls.cpp - matmuls that may skip a causal triangle --------===//
//
// Causal attention computes six batched T x T products a layer (the scores,
// the probabilities times V, and four in the backward pass), and in each
// of them a triangle is known before it runs: the probabilities and their
// gradient are exactly 0 above the diagonal (the mask's -inf, through exp),
// and the scores and the probabilities' gradient are read only on and
// below it. A library matmul does not know that and computes all of it.
// This pass proves it and marks the `sgraph.matmul`
// (`sinter.triangle`, lowered to `sched.matmul`'s `triangle`), and the
// executor splits the product into blocks along the diagonal and skips
// those that only add zeros or write what nobody reads: 5/8 of the
// products at T = 256, 9/16 at T = 1024 (runtime/Exec/Matmul.cpp).
//
// What is proved, over the two trailing axes of a square matrix:
//
//   zeros    a value is 0 strictly above (lower) or below (upper) its
//            diagonal: `select(causal_mask, x, 0)`; `exp` of a value that
//            is -inf there (`select(causal_mask, x, -inf)`, minus or plus
//            anything per row, times a positive constant); and products,
//            quotients, casts, negations and dropouts of such values (a
//            transpose of the two axes swaps lower and upper).
//   unread   a matmul's result is read only on and below its diagonal: each
//            of its readers is the kept branch of `select(causal_mask, ..)`,
//            or a product with a value that is 0 above the diagonal, or an
//            elementwise op (add, sub, mul, div as the dividend, neg, cast,
//            dropout, exp) whose own result is unread in the same sense.
//
// A matmul whose op(lhs) or op(rhs) has such zeros gets `lhs_lower`,
// `lhs_upper`, `rhs_lower` or `rhs_upper`; one whose result is unread above
// the diagonal gets `out_lower` (the executor writes 0 there: a reader that
// multiplies by 0 must not meet a stale NaN). The marks are exact for
// finite numbers: the skipped products are 0 * finite, and the skipped
// outputs are never seen. Where the whole product would have held an inf
// or NaN above the diagonal (a run that has already overflowed), the
// skipped form gives what a fused attention kernel gives there: the
// product of the finite part.
//
// Only matmuls with no epilogue yet are marked (fusion adds scale and
// bias later; the executor refuses a triangle with a bias or activation,
// and the fusion of a scale keeps the mark, a scale being elementwise).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <optional>

namespace sinter {
#define GEN_PASS_DEF_CAUSALMATMULSPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter;
using namespace sinter::sgraph;

namespace {

/// Which side of the diagonal a value is 0 (or -inf) on, strictly.
enum class Side { None, Lower, Upper };

Side flip(Side s) {
  return s == Side::Lower   ? Side::Upper
         : s == Side::Upper ? Side::Lower
                            : Side::None;
}

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

class Prover {
public:
  /// Where v is exactly 0.
  Side zeros(Value v) { return memoized(zeroMemo, v, &Prover::computeZeros); }

  /// Where v is -inf.
  Side negInf(Value v) {
    return memoized(negInfMemo, v, &Prover::computeNegInf);
  }

  /// No reader of v looks above its diagonal (given finite values there).
  bool unreadAbove(Value v) {
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

private:
  /// compute(v) once; None for a value that is not a square matrix.
  Side memoized(DenseMap<Value, Side> &memo, Value v,
                Side (Prover::*compute)(Value)) {
    if (auto it = memo.find(v); it != memo.end())
      return it->second;
    Side s = squareSize(v) ? (this->*compute)(v) : Side::None;
    memo[v] = s;
    return s;
  }

  Side computeZeros(Value v) {
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

  Side computeNegInf(Value v) {
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

  Side bothZero(Value a, Value b, Value v) {
    if (!sameShape(a, v) || !sameShape(b, v))
      return Side::None;
    Side s = zeros(a);
    return s == zeros(b) ? s : Side::None;
  }

  /// A transpose keeps the side when it keeps the two trailing axes, and
  /// swaps it when it swaps them.
  static Side throughTranspose(TransposeOp op, Side s) {
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
  bool readsOnlyLower(OpOperand &use) {
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

  DenseMap<Value, Side> zeroMemo, negInfMemo;
  DenseMap<Value, bool> unreadMemo;
};

class CausalMatmulsPass
    : public sinter::impl::CausalMatmulsPassBase<CausalMatmulsPass> {
public:
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      Prover prover;
      func.walk([&](MatmulOp mm) {
        if (StringRef t = triangleOf(prover, mm); !t.empty())
          mm->setAttr("sinter.triangle", StringAttr::get(mm.getContext(), t));
      });
    });
  }

private:
  static StringRef triangleOf(Prover &prover, MatmulOp mm) {
    auto side = [&](Value operand, bool transposed) {
      Side s = prover.zeros(operand);
      return transposed ? flip(s) : s;
    };
    Side lhs = side(mm.getLhs(), mm.getTransposeLhs());
    if (lhs != Side::None)
      return lhs == Side::Lower ? "lhs_lower" : "lhs_upper";
    Side rhs = side(mm.getRhs(), mm.getTransposeRhs());
    if (rhs != Side::None)
      return rhs == Side::Lower ? "rhs_lower" : "rhs_upper";
    if (prover.unreadAbove(mm.getResult()))
      return "out_lower";
    return "";
  }
};

} // namespace
