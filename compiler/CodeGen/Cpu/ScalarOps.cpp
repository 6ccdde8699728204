//===- ScalarOps.cpp - one element of an sgraph op, in arith/math --------===//
//
// Float math is in the element type except where the interpreter's
// reference numbers need f64: the learning-rate schedule, SGD and momentum
// updates, and Adam's per-step scalars (bias corrections, the step size)
// compute in f64 and round once. Adam's per-element update is in the element
// type, as PyTorch's is. relu keeps NaN; dropout rebuilds the counter-based
// generator of abi/Random.h bit for bit.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/ScalarOps.h"

#include "dialects/Graph/GraphOps.h"
#include "abi/Random.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace sinter;
using namespace sinter::sgraph;
using namespace sinter::codegen;

namespace {
Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}
} // namespace

/// A float constant of `type`.
Value sinter::codegen::fconst(OpBuilder &bb, Location loc, Type type,
                              double v) {
  return bb.create<arith::ConstantOp>(loc, type, bb.getFloatAttr(type, v));
}

/// The splitmix64 finalizer in i64 arithmetic (abi/Random.h).
static Value mix(OpBuilder &bb, Location loc, Value z) {
  auto c = [&](uint64_t v) {
    return bb.create<arith::ConstantIntOp>(loc, static_cast<int64_t>(v), 64);
  };
  auto xorShift = [&](Value x, int s) {
    return bb.create<arith::XOrIOp>(loc, x,
                                    bb.create<arith::ShRUIOp>(loc, x, c(s)));
  };
  z = bb.create<arith::MulIOp>(loc, xorShift(z, 30), c(0xBF58476D1CE4E5B9ULL));
  z = bb.create<arith::MulIOp>(loc, xorShift(z, 27), c(0x94D049BB133111EBULL));
  return xorShift(z, 31);
}

/// Dropout's counter for the current element (random::batchMajorIndex):
/// the row-major index in the iteration space, which is the operand's
/// shape, with the batch axis taken first.
static Value batchMajorIndex(OpBuilder &bb, Location loc, DropoutOp d,
                             const ScalarContext &ctx) {
  auto axis = static_cast<int64_t>(d.getBatchAxis().value_or(0));
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(d.getOperand().getType()).getShape();
  if (axis == 0)
    return ctx.linearIndex(bb, loc);
  if (ctx.space != shape) {
    // Another view of the same elements: undo the row-major numbering.
    auto [outer, batch, inner] = d.getBatchView();
    auto c = [&](int64_t v) {
      return bb.create<arith::ConstantIndexOp>(loc, v);
    };
    Value k = ctx.linearIndex(bb, loc);
    Value rest = bb.create<arith::RemUIOp>(loc, k, c(inner));
    Value rows = bb.create<arith::DivUIOp>(loc, k, c(inner));
    Value row = bb.create<arith::RemUIOp>(loc, rows, c(batch));
    Value o = bb.create<arith::DivUIOp>(loc, rows, c(batch));
    Value major = bb.create<arith::AddIOp>(
        loc, bb.create<arith::MulIOp>(loc, row, c(outer)), o);
    return bb.create<arith::AddIOp>(
        loc, bb.create<arith::MulIOp>(loc, major, c(inner)), rest);
  }
  SmallVector<int64_t> order{axis};
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (i != axis)
      order.push_back(i);
  Value k = bb.create<arith::ConstantIndexOp>(loc, 0);
  for (int64_t i : order)
    k = bb.create<arith::AddIOp>(
        loc,
        bb.create<arith::MulIOp>(
            loc, k, bb.create<arith::ConstantIndexOp>(loc, shape[i])),
        ctx.index(bb, loc, static_cast<int>(i)));
  return k;
}

uint64_t sinter::codegen::dropoutKeyOf(Operation *op) {
  auto d = cast<DropoutOp>(op);
  return random::mix(static_cast<uint64_t>(d.getSeed()) ^ random::kGolden);
}

namespace {

struct NormalCdf {
  Value cdf; // Phi(x)
  Value exp; // exp(-x^2 / 2), which the density is a multiple of
};

/// Phi(x), the standard normal CDF, for f32 kernels whose math functions
/// are polynomials: Phi(-|x|) = erfc(z) / 2 with z = |x| / sqrt 2, and
/// erfc(z) ~ t P(t) exp(-z^2), t = 1 / (1 + z / 2), P of degree 8 fitted
/// for relative error (scripts/fit_normal_cdf.py: within 4.3e-8 of erfc
/// for z in [0, 10]; past ~9.4 exp gives 0). exp(-z^2) is exp(-x^2 / 2),
/// which GELU's gradient needs for the density, so the gradient computes
/// one exp and no erf: MLIR's erf approximation selects among three
/// intervals' rational functions, and the density needs an exp of its own.
/// Evaluated in f32 it is also the more accurate form (the script: the
/// gradient within 75 ulp where |it| >= 0.01, 0.72 on average, against 75
/// and 1.7 with erf). GELU itself keeps 0.5 x (1 + erf(x / sqrt 2)): there
/// the erf replaces no exp, and the fitted form (9 coefficients and an exp
/// against erf's 5) was slower (char-GPT's GELU kernels 5.2 -> 6.1 ms a
/// step), though more accurate in the negative tail, where 1 + erf
/// cancels (10.7 ulp against 419).
NormalCdf normalCdf(OpBuilder &bb, Location loc, Value x) {
  static constexpr double kP[] = {
      2.8208641336e-01,  2.8237539515e-01,  2.4310307985e-01,
      2.0268976506e-01,  -2.6632928667e-02, 2.7807825098e-01,
      -4.8721002194e-01, 2.8458003717e-01,  -5.9070033841e-02};
  Type et = x.getType();
  auto c = [&](double v) { return fconst(bb, loc, et, v); };
  auto mul = [&](Value a, Value b) -> Value {
    return bb.create<arith::MulFOp>(loc, a, b);
  };
  auto fma = [&](Value a, Value b, Value acc) -> Value {
    return bb.create<math::FmaOp>(loc, a, b, acc);
  };
  Value z = mul(bb.create<math::AbsFOp>(loc, x), c(M_SQRT1_2));
  Value t = bb.create<arith::DivFOp>(loc, c(1.0), fma(c(0.5), z, c(1.0)));
  Value poly = c(kP[8]);
  for (int k = 7; k >= 0; --k)
    poly = fma(poly, t, c(kP[k]));
  Value e =
      bb.create<math::ExpOp>(loc, bb.create<arith::NegFOp>(loc, mul(z, z)));
  Value tail = mul(mul(c(0.5), mul(t, poly)), e); // Phi(-|x|)
  Value negative =
      bb.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, x, c(0.0));
  Value cdf = bb.create<arith::SelectOp>(
      loc, negative, tail, bb.create<arith::SubFOp>(loc, c(1.0), tail));
  return {cdf, e};
}

/// erf(u) inside GELU, for f32 kernels whose math functions are
/// polynomials (the CPU): u P(u^2) / Q(u^2) with u clamped to +-3.92, past
/// which f32's erf is 1; P of degree 6, Q of degree 4, fitted for relative
/// error (scripts/fit_normal_cdf.py: within 5.2e-8 in exact arithmetic).
/// One rational function and a clamp, where MLIR's approximation selects
/// each of its ten coefficients among three intervals: char-GPT bf16's
/// GELU kernels 6.1 -> 4.3 ms a step. In f32 GELU is as accurate as with
/// MLIR's erf (376 ulp at worst, where 1 + erf cancels, against 419; 3.08
/// on average against 3.14); erf alone is not (6.3 ulp at worst, 1.02 on
/// average, against 4.7 and 0.27), so the erf op keeps MLIR's. A NaN stays
/// NaN (the clamp's compare is false for it).
Value rationalErf(OpBuilder &bb, Location loc, Value u) {
  static constexpr double kP[] = {
      1.1283791090e+00, 1.9993839855e-01,  5.0575162659e-02, 3.7021260163e-03,
      1.4185712193e-04, -1.9577387050e-06, 1.9921880395e-08};
  static constexpr double kQ[] = {1.0, 5.1052244816e-01, 1.1500413485e-01,
                                  1.4354341979e-02, 9.5614432029e-04};
  static constexpr double kMax = 3.92;
  Type et = u.getType();
  auto c = [&](double v) { return fconst(bb, loc, et, v); };
  auto horner = [&](ArrayRef<double> coefficients, Value s) {
    Value acc = c(coefficients.back());
    for (size_t k = coefficients.size() - 1; k-- > 0;)
      acc = bb.create<math::FmaOp>(loc, acc, s, c(coefficients[k]));
    return acc;
  };
  Value big = bb.create<arith::CmpFOp>(
      loc, arith::CmpFPredicate::OGT, bb.create<math::AbsFOp>(loc, u), c(kMax));
  Value clamped = bb.create<arith::SelectOp>(
      loc, big, bb.create<math::CopySignOp>(loc, c(kMax), u), u);
  Value s = bb.create<arith::MulFOp>(loc, clamped, clamped);
  return bb.create<arith::DivFOp>(
      loc, bb.create<arith::MulFOp>(loc, clamped, horner(kP, s)),
      horner(kQ, s));
}

} // namespace

FailureOr<SmallVector<Value>>
sinter::codegen::emitScalar(OpBuilder &bb, Location loc, Operation *op,
                            ArrayRef<Value> in, const ScalarContext &ctx) {
  Type et = op->getNumResults() ? elementOf(op->getResult(0)) : Type();
  bool isFloat = et && isa<FloatType>(et);
  auto one = [&](Value v) { return SmallVector<Value>{v}; };
  using R = FailureOr<SmallVector<Value>>;
  auto f64 = bb.getF64Type();
  auto toF64 = [&](Value v) -> Value {
    if (v.getType() == f64)
      return v;
    return bb.create<arith::ExtFOp>(loc, f64, v);
  };
  auto fromF64 = [&](Value v, Type t) -> Value {
    if (t == f64)
      return v;
    return bb.create<arith::TruncFOp>(loc, t, v);
  };
  auto binary = [&](auto fop, auto iop) -> R {
    using F = decltype(fop);
    using I = decltype(iop);
    if (isFloat)
      return one(bb.create<F>(loc, in[0], in[1]));
    return one(bb.create<I>(loc, in[0], in[1]));
  };
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case([&](AddOp) { return binary(arith::AddFOp(), arith::AddIOp()); })
      .Case([&](SubOp) { return binary(arith::SubFOp(), arith::SubIOp()); })
      .Case([&](MulOp) { return binary(arith::MulFOp(), arith::MulIOp()); })
      .Case([&](DivOp) { return binary(arith::DivFOp(), arith::DivSIOp()); })
      .Case([&](MaximumOp) {
        return binary(arith::MaximumFOp(), arith::MaxSIOp());
      })
      .Case([&](MinimumOp) {
        return binary(arith::MinimumFOp(), arith::MinSIOp());
      })
      .Case([&](PowOp) -> R {
        return one(bb.create<math::PowFOp>(loc, in[0], in[1]));
      })
      .Case([&](CompareOp c) -> R {
        StringRef d = c.getDirection();
        if (isa<FloatType>(in[0].getType())) {
          auto p = llvm::StringSwitch<arith::CmpFPredicate>(d)
                       .Case("eq", arith::CmpFPredicate::OEQ)
                       .Case("ne", arith::CmpFPredicate::UNE)
                       .Case("lt", arith::CmpFPredicate::OLT)
                       .Case("le", arith::CmpFPredicate::OLE)
                       .Case("gt", arith::CmpFPredicate::OGT)
                       .Default(arith::CmpFPredicate::OGE);
          return one(bb.create<arith::CmpFOp>(loc, p, in[0], in[1]));
        }
        auto p = llvm::StringSwitch<arith::CmpIPredicate>(d)
                     .Case("eq", arith::CmpIPredicate::eq)
                     .Case("ne", arith::CmpIPredicate::ne)
                     .Case("lt", arith::CmpIPredicate::slt)
                     .Case("le", arith::CmpIPredicate::sle)
                     .Case("gt", arith::CmpIPredicate::sgt)
                     .Default(arith::CmpIPredicate::sge);
        return one(bb.create<arith::CmpIOp>(loc, p, in[0], in[1]));
      })
      .Case([&](SelectOp) -> R {
        return one(bb.create<arith::SelectOp>(loc, in[0], in[1], in[2]));
      })
      .Case([&](NegOp) -> R {
        if (isFloat)
          return one(bb.create<arith::NegFOp>(loc, in[0]));
        return one(bb.create<arith::SubIOp>(
            loc, bb.create<arith::ConstantIntOp>(loc, 0, et), in[0]));
      })
      .Case([&](AbsOp) -> R {
        if (isFloat)
          return one(bb.create<math::AbsFOp>(loc, in[0]));
        return one(bb.create<math::AbsIOp>(loc, in[0]));
      })
      .Case([&](ExpOp) -> R { return one(bb.create<math::ExpOp>(loc, in[0])); })
      .Case([&](LogOp) -> R { return one(bb.create<math::LogOp>(loc, in[0])); })
      .Case(
          [&](SqrtOp) -> R { return one(bb.create<math::SqrtOp>(loc, in[0])); })
      .Case([&](RsqrtOp) -> R {
        // 1/sqrt rather than an approximate rsqrt: matches the interpreter
        // to the last bit or two.
        return one(
            bb.create<arith::DivFOp>(loc, fconst(bb, loc, et, 1.0),
                                     bb.create<math::SqrtOp>(loc, in[0])));
      })
      .Case(
          [&](TanhOp) -> R { return one(bb.create<math::TanhOp>(loc, in[0])); })
      .Case([&](ErfOp) -> R { return one(bb.create<math::ErfOp>(loc, in[0])); })
      .Case([&](SigmoidOp) -> R {
        Value e =
            bb.create<math::ExpOp>(loc, bb.create<arith::NegFOp>(loc, in[0]));
        Value d = bb.create<arith::AddFOp>(loc, fconst(bb, loc, et, 1.0), e);
        return one(bb.create<arith::DivFOp>(loc, fconst(bb, loc, et, 1.0), d));
      })
      .Case([&](ReluOp) -> R {
        // NaN stays NaN (ugt is true for unordered), as torch.relu.
        Value zero = fconst(bb, loc, et, 0.0);
        Value keep = bb.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UGT,
                                              in[0], zero);
        return one(bb.create<arith::SelectOp>(loc, keep, in[0], zero));
      })
      .Case([&](GeluOp g) -> R {
        Value x = in[0];
        Value half = bb.create<arith::MulFOp>(loc, fconst(bb, loc, et, 0.5), x);
        Value inner;
        if (g.getApproximate() == "tanh") {
          Value x3 = bb.create<arith::MulFOp>(
              loc, x, bb.create<arith::MulFOp>(loc, x, x));
          Value s = bb.create<arith::AddFOp>(
              loc, x,
              bb.create<arith::MulFOp>(loc, fconst(bb, loc, et, 0.044715), x3));
          inner = bb.create<math::TanhOp>(
              loc, bb.create<arith::MulFOp>(
                       loc, fconst(bb, loc, et, std::sqrt(2.0 / M_PI)), s));
        } else {
          Value u =
              bb.create<arith::MulFOp>(loc, x, fconst(bb, loc, et, M_SQRT1_2));
          inner = ctx.polynomialMath && et.isF32()
                      ? rationalErf(bb, loc, u)
                      : bb.create<math::ErfOp>(loc, u).getResult();
        }
        return one(bb.create<arith::MulFOp>(
            loc, half,
            bb.create<arith::AddFOp>(loc, fconst(bb, loc, et, 1.0), inner)));
      })
      .Case([&](GeluGradOp g) -> R {
        // The operations (and their order) of the chain autodiff used to
        // emit, so the numbers are the same; except that where math is
        // polynomial (the CPU) the erf form's CDF and density come from
        // normalCdf, one exp and no erf.
        Value grad = in[0], x = in[1];
        auto c = [&](double v) { return fconst(bb, loc, et, v); };
        auto mul = [&](Value a, Value b) -> Value {
          return bb.create<arith::MulFOp>(loc, a, b);
        };
        auto add = [&](Value a, Value b) -> Value {
          return bb.create<arith::AddFOp>(loc, a, b);
        };
        Value d;
        if (g.getApproximate() == "tanh") {
          // (1 + t)/2 + x/2 (1 - t^2) k (1 + 3 a x^2), t = tanh(k (x + a x^3)).
          const double k = std::sqrt(2.0 / M_PI), a = 0.044715;
          Value x2 = mul(x, x);
          Value t = bb.create<math::TanhOp>(
              loc, mul(c(k), add(x, mul(c(a), mul(x2, x)))));
          Value du = mul(c(k), add(c(1.0), mul(c(3.0 * a), x2)));
          Value left = mul(c(0.5), add(c(1.0), t));
          Value right =
              mul(mul(c(0.5), x),
                  mul(bb.create<arith::SubFOp>(loc, c(1.0), mul(t, t)), du));
          d = add(left, right);
        } else if (ctx.polynomialMath && et.isF32()) {
          NormalCdf n = normalCdf(bb, loc, x);
          d = add(n.cdf, mul(x, mul(c(1.0 / std::sqrt(2.0 * M_PI)), n.exp)));
        } else {
          // Phi(x) + x phi(x).
          Value cdf = mul(c(0.5), add(c(1.0), bb.create<math::ErfOp>(
                                                  loc, mul(x, c(M_SQRT1_2)))));
          Value pdf = mul(c(1.0 / std::sqrt(2.0 * M_PI)),
                          bb.create<math::ExpOp>(
                              loc, mul(c(-0.5), mul(x, x))));
          d = add(cdf, mul(x, pdf));
        }
        return one(mul(grad, d));
      })
      .Case([&](CastOp) -> R {
        Value x = in[0];
        Type from = x.getType();
        if (from == et)
          return one(x);
        bool fromFloat = isa<FloatType>(from);
        if (et.isInteger(1)) {
          if (fromFloat)
            return one(bb.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNE,
                                                x, fconst(bb, loc, from, 0)));
          return one(bb.create<arith::CmpIOp>(
              loc, arith::CmpIPredicate::ne, x,
              bb.create<arith::ConstantIntOp>(loc, 0, from)));
        }
        if (isFloat && fromFloat)
          return one(from.getIntOrFloatBitWidth() < et.getIntOrFloatBitWidth()
                         ? bb.create<arith::ExtFOp>(loc, et, x).getResult()
                         : bb.create<arith::TruncFOp>(loc, et, x).getResult());
        if (isFloat)
          return one(from.isInteger(1)
                         ? bb.create<arith::UIToFPOp>(loc, et, x).getResult()
                         : bb.create<arith::SIToFPOp>(loc, et, x).getResult());
        if (fromFloat)
          return one(bb.create<arith::FPToSIOp>(loc, et, x));
        if (from.isInteger(1))
          return one(bb.create<arith::ExtUIOp>(loc, et, x));
        if (from.getIntOrFloatBitWidth() < et.getIntOrFloatBitWidth())
          return one(bb.create<arith::ExtSIOp>(loc, et, x));
        return one(bb.create<arith::TruncIOp>(loc, et, x));
      })
      .Case([&](DropoutOp d) -> R {
        double rate = d.getRate().convertToDouble();
        // Keep element k iff (bits(key, k) >> 40) * 2^-24 >= rate, i.e. iff
        // the 24-bit integer is >= ceil(rate * 2^24): exact, no float.
        auto c64 = [&](uint64_t v) {
          return bb.create<arith::ConstantIntOp>(loc, static_cast<int64_t>(v),
                                                 64);
        };
        Value step = in[1];
        if (!step.getType().isInteger(64))
          step = bb.create<arith::ExtSIOp>(loc, bb.getI64Type(), step);
        Value seedKey =
            ctx.dropoutKey ? ctx.dropoutKey(d) : c64(dropoutKeyOf(d));
        Value key = mix(bb, loc, bb.create<arith::XOrIOp>(loc, seedKey, step));
        Value k = bb.create<arith::IndexCastOp>(
            loc, bb.getI64Type(), batchMajorIndex(bb, loc, d, ctx));
        if (in.size() > 2) {
          // This rank's rows of the global batch: elements shard * N on.
          Value shard = in[2];
          if (!shard.getType().isInteger(64))
            shard = bb.create<arith::ExtSIOp>(loc, bb.getI64Type(), shard);
          int64_t n = cast<RankedTensorType>(d.getOperand().getType())
                          .getNumElements();
          k = bb.create<arith::AddIOp>(
              loc, k, bb.create<arith::MulIOp>(loc, shard, c64(n)));
        }
        Value bits =
            mix(bb, loc,
                bb.create<arith::AddIOp>(
                    loc, key,
                    bb.create<arith::MulIOp>(loc, k, c64(random::kGolden))));
        Value top = bb.create<arith::ShRUIOp>(loc, bits, c64(40));
        auto threshold =
            static_cast<uint64_t>(std::ceil(rate * double(1 << 24)));
        Value keep = bb.create<arith::CmpIOp>(loc, arith::CmpIPredicate::uge,
                                              top, c64(threshold));
        Value scaled = bb.create<arith::DivFOp>(
            loc, in[0], fconst(bb, loc, et, 1.0 - rate));
        return one(bb.create<arith::SelectOp>(loc, keep, scaled,
                                              fconst(bb, loc, et, 0.0)));
      })
      .Case([&](OneHotOp) -> R {
        Value label = in[0];
        Value c = bb.create<arith::IndexCastOp>(
            loc, label.getType(), ctx.index(bb, loc, ctx.rank - 1));
        Value hit =
            bb.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, label, c);
        return one(bb.create<arith::SelectOp>(
            loc, hit, fconst(bb, loc, et, 1.0), fconst(bb, loc, et, 0.0)));
      })
      .Case([&](IotaOp iota) -> R {
        Value i = ctx.index(bb, loc, iota.getAxis());
        if (isFloat)
          return one(bb.create<arith::SIToFPOp>(
              loc, et, bb.create<arith::IndexCastOp>(loc, bb.getI64Type(), i)));
        return one(bb.create<arith::IndexCastOp>(loc, et, i));
      })
      .Case([&](CausalMaskOp) -> R {
        size_t r = ctx.rank;
        return one(bb.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ule,
                                            ctx.index(bb, loc, r - 1),
                                            ctx.index(bb, loc, r - 2)));
      })
      .Case([&](LrScheduleOp s) -> R {
        double lr = s.getLr().convertToDouble();
        double minLr = s.getMinLr().convertToDouble();
        int64_t warmup = s.getWarmupSteps(), decay = s.getDecaySteps();
        Value step = in[0];
        if (!step.getType().isInteger(64))
          step = bb.create<arith::ExtSIOp>(loc, bb.getI64Type(), step);
        Value stepF = bb.create<arith::SIToFPOp>(loc, f64, step);
        auto c = [&](double v) { return fconst(bb, loc, f64, v); };
        auto ci = [&](int64_t v) {
          return bb.create<arith::ConstantIntOp>(loc, v, 64);
        };
        // The peak and the floor: the attributes, or the peak_lr operand
        // and min_lr * (peak_lr / lr) (exactly min_lr when peak_lr == lr;
        // 0 when min_lr is, as in the interpreter).
        Value peak = c(lr), floor = c(minLr);
        if (s.getPeakLr()) {
          peak = toF64(in[1]);
          if (minLr != 0)
            floor = bb.create<arith::MulFOp>(
                loc, c(minLr), bb.create<arith::DivFOp>(loc, peak, c(lr)));
        }
        Value warm = bb.create<arith::DivFOp>(
            loc,
            bb.create<arith::MulFOp>(
                loc, peak, bb.create<arith::AddFOp>(loc, stepF, c(1.0))),
            c(double(warmup + 1)));
        Value after = peak;
        if (s.getSchedule() != "constant") {
          Value ratio = bb.create<arith::DivFOp>(
              loc, bb.create<arith::SubFOp>(loc, stepF, c(double(warmup))),
              c(double(decay - warmup)));
          Value cosv = bb.create<math::CosOp>(
              loc, bb.create<arith::MulFOp>(loc, c(M_PI), ratio));
          Value span = s.getPeakLr()
                           ? Value(bb.create<arith::SubFOp>(loc, peak, floor))
                           : c(lr - minLr);
          Value cosine = bb.create<arith::AddFOp>(
              loc, floor,
              bb.create<arith::MulFOp>(
                  loc,
                  bb.create<arith::MulFOp>(
                      loc, c(0.5), bb.create<arith::AddFOp>(loc, c(1.0), cosv)),
                  span));
          Value past = bb.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt,
                                                step, ci(decay));
          after = bb.create<arith::SelectOp>(loc, past, floor, cosine);
        }
        Value inWarmup = bb.create<arith::CmpIOp>(
            loc, arith::CmpIPredicate::slt, step, ci(warmup));
        return one(fromF64(
            bb.create<arith::SelectOp>(loc, inWarmup, warm, after), et));
      })
      .Case([&](SgdUpdateOp u) -> R {
        Value p = toF64(in[0]), g = toF64(in[1]), lr = toF64(in[2]);
        auto c = [&](double v) { return fconst(bb, loc, f64, v); };
        Value grad = bb.create<arith::AddFOp>(
            loc, g,
            bb.create<arith::MulFOp>(
                loc, c(u.getWeightDecay().convertToDouble()), p));
        return one(fromF64(bb.create<arith::SubFOp>(
                               loc, p, bb.create<arith::MulFOp>(loc, lr, grad)),
                           et));
      })
      .Case([&](MomentumUpdateOp u) -> R {
        Value p = toF64(in[0]), g = toF64(in[1]), buf = toF64(in[2]),
              lr = toF64(in[3]);
        Value step = in[4];
        auto c = [&](double v) { return fconst(bb, loc, f64, v); };
        double mu = u.getMomentum().convertToDouble();
        double damp = u.getDampening().convertToDouble();
        Value grad = bb.create<arith::AddFOp>(
            loc, g,
            bb.create<arith::MulFOp>(
                loc, c(u.getWeightDecay().convertToDouble()), p));
        Value first = bb.create<arith::CmpIOp>(
            loc, arith::CmpIPredicate::eq, step,
            bb.create<arith::ConstantIntOp>(loc, 0, step.getType()));
        Value later = bb.create<arith::AddFOp>(
            loc, bb.create<arith::MulFOp>(loc, c(mu), buf),
            bb.create<arith::MulFOp>(loc, c(1.0 - damp), grad));
        Value nb = bb.create<arith::SelectOp>(loc, first, grad, later);
        Type bt = elementOf(op->getResult(1));
        Value nbRounded = fromF64(nb, bt);
        Value nbBack = toF64(nbRounded);
        Value dir =
            u.getNesterov()
                ? bb.create<arith::AddFOp>(
                        loc, grad, bb.create<arith::MulFOp>(loc, c(mu), nbBack))
                      .getResult()
                : nbBack;
        Value np = bb.create<arith::SubFOp>(
            loc, p, bb.create<arith::MulFOp>(loc, lr, dir));
        return SmallVector<Value>{fromF64(np, et), nbRounded};
      })
      .Case([&](AdamUpdateOp u) -> R {
        // The step's scalars (bias corrections, the step size) in f64, as
        // the interpreter computes them; LLVM hoists them out of the loop.
        // The per-element update runs in the element type, as PyTorch's
        // does: with f64 sqrt and divides per element the kernel was
        // compute-bound at half the memory bandwidth.
        Value p = in[0], g = in[1], m = in[2], v = in[3];
        Value step = in[5];
        if (!step.getType().isInteger(64))
          step = bb.create<arith::ExtSIOp>(loc, bb.getI64Type(), step);
        auto c = [&](double x) { return fconst(bb, loc, f64, x); };
        auto e = [&](double x) { return fconst(bb, loc, et, x); };
        double b1 = u.getBeta1().convertToDouble();
        double b2 = u.getBeta2().convertToDouble();
        double eps = u.getEpsilon().convertToDouble();
        double wd = u.getWeightDecay().convertToDouble();
        Value lr = toF64(in[4]);
        Value t = bb.create<arith::AddFOp>(
            loc, bb.create<arith::SIToFPOp>(loc, f64, step), c(1.0));
        Value bc1 = bb.create<arith::SubFOp>(
            loc, c(1.0), bb.create<math::PowFOp>(loc, c(b1), t));
        Value bc2 = bb.create<arith::SubFOp>(
            loc, c(1.0), bb.create<math::PowFOp>(loc, c(b2), t));
        Value stepSize = fromF64(bb.create<arith::DivFOp>(loc, lr, bc1), et);
        Value bc2Sqrt = fromF64(bb.create<math::SqrtOp>(loc, bc2), et);
        Value param = p, grad = g;
        if (u.getDecoupledWeightDecay())
          param = bb.create<arith::MulFOp>(
              loc, p,
              fromF64(
                  bb.create<arith::SubFOp>(
                      loc, c(1.0), bb.create<arith::MulFOp>(loc, lr, c(wd))),
                  et));
        else
          grad = bb.create<arith::AddFOp>(
              loc, g, bb.create<arith::MulFOp>(loc, e(wd), p));
        Value nm = bb.create<arith::AddFOp>(
            loc, bb.create<arith::MulFOp>(loc, e(b1), m),
            bb.create<arith::MulFOp>(loc, e(1.0 - b1), grad));
        Value nv = bb.create<arith::AddFOp>(
            loc, bb.create<arith::MulFOp>(loc, e(b2), v),
            bb.create<arith::MulFOp>(
                loc, e(1.0 - b2), bb.create<arith::MulFOp>(loc, grad, grad)));
        Value denom = bb.create<arith::AddFOp>(
            loc,
            bb.create<arith::DivFOp>(loc, bb.create<math::SqrtOp>(loc, nv),
                                     bc2Sqrt),
            e(eps));
        Value np = bb.create<arith::SubFOp>(
            loc, param,
            bb.create<arith::DivFOp>(
                loc, bb.create<arith::MulFOp>(loc, stepSize, nm), denom));
        return SmallVector<Value>{np, nm, nv};
      })
      .Default([&](Operation *other) -> R {
        return other->emitOpError("has no CPU kernel form");
      });
}
