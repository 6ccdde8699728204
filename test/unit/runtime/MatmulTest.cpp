//===- MatmulTest.cpp - the oneDNN matmul against its reference twin ------===//
//
// A grid over batch-broadcast patterns x transposes x bias x activation x
// alpha, on odd sizes (M=7, K=13, N=5) so no vector width divides them,
// plus one transformer-sized case (128 x 384 x 1152). Every pattern also
// runs with the batch loop forced, so the fallback path is tested on a
// oneDNN that never needs it.
//
// Tolerance. Both sides see the same f32 inputs; the reference accumulates
// in double and rounds once, oneDNN accumulates in f32 in a blocked order.
// The f32 sum of K products has error at most ~K u S with u = 2^-24 and
// S = sum_k |a_ik b_kj| (the standard forward bound), and ~sqrt(K) u S for
// rounding errors of random sign, which is what blocked sums show. We allow
//
//     |got - want| <= 1e-5 * sqrt(K) * scale + 1e-6
//
// where scale = |alpha| S + |bias_j|: 1e-5 is ~170 u, room for the f32
// epilogue (scale, bias add) and oneDNN's polynomial erf/tanh in the GELU
// post-ops (accurate to a few ulp, and GELU's slope is below 1.13). The
// 1e-6 floor covers results that cancel to ~0, where relative error means
// nothing. `scale` is computed with the reference itself on |lhs|, |rhs|,
// |alpha| and |bias|.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/Matmul.h"

#include "abi/HalfFloat.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cmath>
#include <iostream>
#include <random>

using namespace sinter::exec;
namespace sabi = sinter::abi;

namespace {

std::vector<float> randomVector(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The stored shape of a logical [..., R, C] operand.
std::vector<int64_t> stored(std::vector<int64_t> logical, bool transposed) {
  if (transposed)
    std::swap(logical[logical.size() - 1], logical[logical.size() - 2]);
  return logical;
}

/// Runs `desc` through the backend and the reference and compares.
void checkAgainstReference(MatmulBackend &backend, const MatmulDesc &desc,
                           std::mt19937 &rng) {
  SCOPED_TRACE(testing::Message()
               << "tl=" << desc.transposeLhs << " tr=" << desc.transposeRhs
               << " bias=" << desc.hasBias
               << " act=" << sabi::activationName(desc.activation)
               << " alpha=" << desc.alpha);
  absl::StatusOr<MatmulGeometry> g = analyzeMatmul(desc);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<float> lhs = randomVector(product(desc.lhsShape), rng);
  std::vector<float> rhs = randomVector(product(desc.rhsShape), rng);
  std::vector<float> bias = randomVector(g->n, rng);
  size_t outSize = product(desc.outShape);
  std::vector<float> got(outSize, NAN), want(outSize), scale(outSize);

  absl::StatusOr<std::unique_ptr<BoundMatmul>> bound =
      backend.bind(desc, lhs.data(), rhs.data(), bias.data(), got.data());
  ASSERT_TRUE(bound.ok()) << bound.status();
  SCOPED_TRACE((*bound)->plan());
  ASSERT_TRUE((*bound)->run().ok());
  ASSERT_TRUE(
      referenceMatmul(desc, lhs.data(), rhs.data(), bias.data(), want.data())
          .ok());

  MatmulDesc absDesc = desc;
  absDesc.alpha = std::fabs(desc.alpha);
  absDesc.activation = sabi::MatmulStep::none;
  for (auto *v : {&lhs, &rhs, &bias})
    for (float &x : *v)
      x = std::fabs(x);
  ASSERT_TRUE(referenceMatmul(absDesc, lhs.data(), rhs.data(), bias.data(),
                              scale.data())
                  .ok());
  double factor = 1e-5 * std::sqrt(static_cast<double>(g->k));
  int bad = 0;
  for (size_t i = 0; i < outSize && bad < 5; ++i) {
    double tol = factor * scale[i] + 1e-6;
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want "
                    << want[i] << " (tolerance " << tol << ")";
      ++bad;
    }
  }
}

struct Pattern {
  const char *name;
  std::vector<int64_t> lhsBatch, rhsBatch; // logical batch axes
  int64_t m, k, n;
};

std::vector<int64_t> outBatchOf(const Pattern &p) {
  size_t r = std::max(p.lhsBatch.size(), p.rhsBatch.size());
  std::vector<int64_t> l(r, 1), rr(r, 1), out(r);
  std::copy(p.lhsBatch.begin(), p.lhsBatch.end(),
            l.begin() + (r - p.lhsBatch.size()));
  std::copy(p.rhsBatch.begin(), p.rhsBatch.end(),
            rr.begin() + (r - p.rhsBatch.size()));
  for (size_t i = 0; i < r; ++i)
    out[i] = std::max(l[i], rr[i]);
  return out;
}

MatmulDesc makeDesc(const Pattern &p, bool tl, bool tr, bool bias,
                    Activation act, float alpha) {
  MatmulDesc d;
  std::vector<int64_t> lhs = p.lhsBatch, rhs = p.rhsBatch, out = outBatchOf(p);
  lhs.insert(lhs.end(), {p.m, p.k});
  rhs.insert(rhs.end(), {p.k, p.n});
  out.insert(out.end(), {p.m, p.n});
  d.lhsShape = stored(lhs, tl);
  d.rhsShape = stored(rhs, tr);
  d.outShape = out;
  d.transposeLhs = tl;
  d.transposeRhs = tr;
  d.hasBias = bias;
  d.biasShape = {p.n};
  d.activation = act;
  d.alpha = alpha;
  return d;
}

const Pattern kPatterns[] = {
    {"plain", {}, {}, 7, 13, 5},
    {"batch_lhs_only", {2, 3}, {}, 7, 13, 5},      // [2,3,M,K] x [K,N]
    {"batch_both", {4}, {4}, 7, 13, 5},            // [4,M,K] x [4,K,N]
    {"cross_broadcast", {2, 1}, {1, 3}, 7, 13, 5}, // [2,1,..] x [1,3,..]
    {"batch_rhs_only", {}, {4}, 7, 13, 5},         // [M,K] x [4,K,N]
    {"mixed", {2, 3, 1}, {3, 4}, 3, 9, 6},         // rank 5 out
    {"size_one_axes", {1, 2}, {1, 1}, 7, 13, 5},   // axes of size 1
    {"same_rank_bcast", {1, 3}, {2, 3}, 5, 4, 11}, // lhs broadcast
};

class MatmulGridTest : public testing::TestWithParam<Pattern> {};

TEST_P(MatmulGridTest, MatchesReference) {
  std::mt19937 rng(1234);
  for (bool forceLoop : {false, true}) {
    SCOPED_TRACE(forceLoop ? "forced batch loop" : "default plan");
    MatmulBackendOptions options;
    options.forceBatchLoop = forceLoop;
    auto backend = MatmulBackend::create(options);
    ASSERT_TRUE(backend.ok()) << backend.status();
    for (bool tl : {false, true})
      for (bool tr : {false, true})
        for (bool bias : {false, true})
          for (Activation act :
               {sabi::MatmulStep::none, sabi::MatmulStep::relu,
                sabi::MatmulStep::gelu_erf, sabi::MatmulStep::gelu_tanh})
            for (float alpha : {1.0f, 0.125f, -1.5f})
              checkAgainstReference(
                  **backend, makeDesc(GetParam(), tl, tr, bias, act, alpha),
                  rng);
  }
}

INSTANTIATE_TEST_SUITE_P(Patterns, MatmulGridTest, testing::ValuesIn(kPatterns),
                         [](const testing::TestParamInfo<Pattern> &info) {
                           return std::string(info.param.name);
                         });

TEST(MatmulTest, TransformerSized) {
  std::mt19937 rng(99);
  auto backend = MatmulBackend::create();
  ASSERT_TRUE(backend.ok());
  Pattern p{"big", {}, {}, 128, 384, 1152};
  // The attention projection (bias, no activation) and the MLP's first
  // layer (bias + gelu_tanh) as the forward pass runs them, and a weight
  // gradient (transposed lhs, alpha) as the backward pass does.
  checkAgainstReference(
      **backend, makeDesc(p, false, true, true, sabi::MatmulStep::none, 1.0f),
      rng);
  checkAgainstReference(
      **backend,
      makeDesc(p, false, false, true, sabi::MatmulStep::gelu_tanh, 1.0f), rng);
  checkAgainstReference(
      **backend, makeDesc(p, true, false, false, sabi::MatmulStep::none, 0.5f),
      rng);
}

TEST(MatmulTest, CachesPrimitives) {
  auto backend = MatmulBackend::create();
  ASSERT_TRUE(backend.ok());
  MatmulDesc d =
      makeDesc(kPatterns[0], false, false, true, sabi::MatmulStep::relu, 1.0f);
  std::vector<float> a(7 * 13, 1), b(13 * 5, 1), bias(5, 0), c(7 * 5);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(
        (*backend)->bind(d, a.data(), b.data(), bias.data(), c.data()).ok());
  EXPECT_EQ((*backend)->numCachedPrimitives(), 1);
  d.activation = sabi::MatmulStep::gelu_erf;
  ASSERT_TRUE(
      (*backend)->bind(d, a.data(), b.data(), bias.data(), c.data()).ok());
  EXPECT_EQ((*backend)->numCachedPrimitives(), 2);
}

// How patterns become primitives (the plan strings name the oneDNN shapes).
TEST(MatmulTest, Plans) {
  auto planOf = [](const Pattern &p, bool tl, bool forceLoop) {
    MatmulBackendOptions options;
    options.forceBatchLoop = forceLoop;
    auto backend = MatmulBackend::create(options);
    EXPECT_TRUE(backend.ok());
    MatmulDesc d = makeDesc(p, tl, false, false, sabi::MatmulStep::none, 1.0f);
    std::vector<float> a(product(d.lhsShape)), b(product(d.rhsShape)),
        c(product(d.outShape));
    auto bound = (*backend)->bind(d, a.data(), b.data(), nullptr, c.data());
    EXPECT_TRUE(bound.ok());
    return std::string((*bound)->plan());
  };
  // [2,3,M,K] x [K,N]: the batch folds into M.
  EXPECT_EQ(planOf(kPatterns[1], false, false), "2d [42,13] x [13,5]");
  // ... but not when lhs is transposed: one 3-d primitive, rhs broadcast.
  EXPECT_EQ(planOf(kPatterns[1], true, false), "3d [6,7,13] x [1,13,5]");
  // [2,1,M,K] x [1,3,K,N]: a 4-d primitive with broadcast axes, or the loop.
  EXPECT_EQ(planOf(kPatterns[3], false, false), "4d [2,1,7,13] x [1,3,13,5]");
  EXPECT_EQ(planOf(kPatterns[3], false, true), "loop 6 x 2d M=7 K=13 N=5");
  // Size-1 axes vanish: [1,2,M,K] x [1,1,K,N] folds.
  EXPECT_EQ(planOf(kPatterns[6], false, false), "2d [14,13] x [13,5]");
}

// The reference itself, on numbers worked by hand:
//   [1 2] @ [5 6]  = [19 22]     alpha 2, bias [1, -100], relu:
//   [3 4]   [7 8]    [43 50]     [39 0; 87 0]
TEST(MatmulTest, ReferenceByHand) {
  MatmulDesc d;
  d.lhsShape = {2, 2};
  d.rhsShape = {2, 2};
  d.outShape = {2, 2};
  d.alpha = 2;
  d.hasBias = true;
  d.biasShape = {2};
  d.activation = sabi::MatmulStep::relu;
  float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8}, bias[] = {1, -100}, c[4];
  ASSERT_TRUE(referenceMatmul(d, a, b, bias, c).ok());
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{39, 0, 87, 0}));
  d.transposeLhs = true; // lhs^T = [1 3; 2 4]: [26 30; 38 44] -> [53 0; 77 0]
  ASSERT_TRUE(referenceMatmul(d, a, b, bias, c).ok());
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{53, 0, 77, 0}));
}

TEST(MatmulTest, EmptyAxes) {
  auto backend = MatmulBackend::create();
  ASSERT_TRUE(backend.ok());
  // K = 0: out is just the bias.
  MatmulDesc d;
  d.lhsShape = {3, 0};
  d.rhsShape = {0, 2};
  d.outShape = {3, 2};
  d.hasBias = true;
  d.biasShape = {2};
  float bias[] = {1.5f, -2}, out[6];
  auto bound = (*backend)->bind(d, nullptr, nullptr, bias, out);
  ASSERT_TRUE(bound.ok());
  ASSERT_TRUE((*bound)->run().ok());
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[5], -2.0f);
}

// Half precision (bf16, f16). Both sides read the same half operands and
// round out to the half type once; oneDNN accumulates in f32, the reference
// in double, so the two roundings can land one half ulp apart (2^-8 |want|
// for bf16's 8-bit significand, 2^-11 for f16's 11: half an ulp each side)
// on top of the f32 bound above. Where oneDNN has no kernel for the type
// the plan says "widened" and the same bound holds. With `wideOut` out and
// bias are f32 (a weight gradient's f32 sum): nothing is rounded to half,
// so only the f32 bound applies.
void checkHalf(MatmulBackend &backend, MatmulDesc desc, sabi::DType type,
               std::mt19937 &rng, bool wideOut = false) {
  desc.dtype = type;
  desc.outType = wideOut ? sabi::ElementType::f32 : type;
  SCOPED_TRACE(testing::Message()
               << sabi::dtypeName(type) << (wideOut ? " to f32" : "")
               << " tl=" << desc.transposeLhs
               << " tr=" << desc.transposeRhs << " bias=" << desc.hasBias
               << " act=" << sabi::activationName(desc.activation)
               << " alpha=" << desc.alpha);
  absl::StatusOr<MatmulGeometry> g = analyzeMatmul(desc);
  ASSERT_TRUE(g.ok()) << g.status();
  auto toHalf = [&](const std::vector<float> &v) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      h[i] = type == sabi::ElementType::bf16
                 ? sinter::half::floatToBf16Bits(v[i])
                 : sinter::half::floatToF16Bits(v[i]);
    return h;
  };
  auto widen = [&](uint16_t h) {
    return type == sabi::ElementType::bf16 ? sinter::half::bf16BitsToFloat(h)
                                           : sinter::half::f16BitsToFloat(h);
  };
  std::vector<uint16_t> lhs = toHalf(randomVector(product(desc.lhsShape), rng));
  std::vector<uint16_t> rhs = toHalf(randomVector(product(desc.rhsShape), rng));
  std::vector<float> biasWide = randomVector(g->n, rng);
  std::vector<uint16_t> biasHalf = toHalf(biasWide);
  const void *bias = wideOut ? static_cast<const void *>(biasWide.data())
                             : biasHalf.data();
  // Out as stored (f32 or half bits), NaN-filled, and read back widened.
  size_t outSize = product(desc.outShape);
  std::vector<float> gotWide(outSize, NAN), wantWide(outSize);
  std::vector<uint16_t> gotHalf(outSize, 0x7fc0), wantHalf(outSize);
  void *got = wideOut ? static_cast<void *>(gotWide.data()) : gotHalf.data();
  void *want = wideOut ? static_cast<void *>(wantWide.data()) : wantHalf.data();
  auto outAt = [&](void *out, size_t i) -> double {
    return wideOut ? static_cast<float *>(out)[i]
                   : widen(static_cast<uint16_t *>(out)[i]);
  };
  absl::StatusOr<std::unique_ptr<BoundMatmul>> bound =
      backend.bind(desc, lhs.data(), rhs.data(), bias, got);
  ASSERT_TRUE(bound.ok()) << bound.status();
  SCOPED_TRACE((*bound)->plan());
  EXPECT_NE((*bound)->plan().find(sabi::dtypeName(type)), std::string::npos);
  EXPECT_EQ((*bound)->plan().find("f32") != std::string::npos, wideOut);
  if (g->m * g->k * g->n > 1000000) // which kernel the library has, for logs
    std::cout << "plan: " << (*bound)->plan() << " (" << MatmulBackend::isa()
              << ")\n";
  ASSERT_TRUE((*bound)->run().ok());
  ASSERT_TRUE(referenceMatmul(desc, lhs.data(), rhs.data(), bias, want).ok());
  // The f32 bound's scale, from the widened operands' magnitudes.
  MatmulDesc absDesc = desc;
  absDesc.dtype = absDesc.outType = sabi::ElementType::f32;
  absDesc.alpha = std::fabs(desc.alpha);
  absDesc.activation = sabi::MatmulStep::none;
  auto absWide = [&](const std::vector<uint16_t> &h) {
    std::vector<float> v(h.size());
    for (size_t i = 0; i < h.size(); ++i)
      v[i] = std::fabs(widen(h[i]));
    return v;
  };
  std::vector<float> la = absWide(lhs), ra = absWide(rhs), ba(g->n),
                     scale(outSize);
  for (int64_t j = 0; j < g->n; ++j)
    ba[j] = std::fabs(wideOut ? biasWide[j] : widen(biasHalf[j]));
  ASSERT_TRUE(
      referenceMatmul(absDesc, la.data(), ra.data(), ba.data(), scale.data())
          .ok());
  double halfUlp = wideOut                       ? 0.0
                   : type == sabi::ElementType::bf16 ? 0x1p-8
                                                     : 0x1p-11;
  double factor = 1e-5 * std::sqrt(static_cast<double>(g->k));
  int bad = 0;
  for (size_t i = 0; i < outSize && bad < 5; ++i) {
    double w = outAt(want, i), r = outAt(got, i);
    double tol = 2 * halfUlp * std::fabs(w) + factor * scale[i] + 1e-6;
    if (!(std::fabs(r - w) <= tol)) {
      ADD_FAILURE() << "element " << i << ": got " << r << ", want " << w
                    << " (tolerance " << tol << ")";
      ++bad;
    }
  }
}

TEST_P(MatmulGridTest, HalfMatchesReference) {
  std::mt19937 rng(4321);
  auto backend = MatmulBackend::create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  for (sabi::DType type : {sabi::ElementType::bf16, sabi::ElementType::f16})
    for (bool tl : {false, true})
      for (bool tr : {false, true})
        for (bool bias : {false, true})
          for (Activation act :
               {sabi::MatmulStep::none, sabi::MatmulStep::gelu_tanh})
            for (float alpha : {1.0f, 0.125f})
              for (bool wideOut : {false, true})
                checkHalf(**backend,
                          makeDesc(GetParam(), tl, tr, bias, act, alpha), type,
                          rng, wideOut);
}

TEST(MatmulTest, HalfTransformerSized) {
  std::mt19937 rng(7);
  auto backend = MatmulBackend::create();
  ASSERT_TRUE(backend.ok());
  Pattern p{"big", {}, {}, 128, 384, 1152};
  for (sabi::DType type : {sabi::ElementType::bf16, sabi::ElementType::f16}) {
    checkHalf(**backend,
              makeDesc(p, false, true, false, sabi::MatmulStep::none, 1.0f),
              type, rng);
    checkHalf(**backend,
              makeDesc(p, true, false, false, sabi::MatmulStep::none, 1.0f),
              type, rng);
    // A weight gradient: Xᵀ·dY over the rows, written as its f32 sum.
    checkHalf(**backend,
              makeDesc(p, true, false, false, sabi::MatmulStep::none, 1.0f),
              type, rng, /*wideOut=*/true);
  }
}

// The reference rounds to the half type once: 1.00390625 (1 + 2^-8) is
// exact in f32 and f16 but a tie in bf16, rounded to even (1.0).
TEST(MatmulTest, HalfReferenceRoundsOnce) {
  MatmulDesc d;
  d.lhsShape = {1, 2};
  d.rhsShape = {2, 1};
  d.outShape = {1, 1};
  d.dtype = d.outType = sabi::ElementType::bf16;
  uint16_t one = sinter::half::floatToBf16Bits(1.0f);
  uint16_t small = sinter::half::floatToBf16Bits(0x1p-8f);
  uint16_t a[] = {one, small}, b[] = {one, one}, c[1];
  ASSERT_TRUE(referenceMatmul(d, a, b, nullptr, c).ok());
  EXPECT_EQ(sinter::half::bf16BitsToFloat(c[0]), 1.0f);
  // An f32 out keeps the sum the bf16 one rounded away.
  d.outType = sabi::ElementType::f32;
  float wide[1];
  ASSERT_TRUE(referenceMatmul(d, a, b, nullptr, wide).ok());
  EXPECT_EQ(wide[0], 1.00390625f);
  d.dtype = d.outType = sabi::ElementType::f16;
  a[0] = b[0] = b[1] = sinter::half::floatToF16Bits(1.0f);
  a[1] = sinter::half::floatToF16Bits(0x1p-8f);
  ASSERT_TRUE(referenceMatmul(d, a, b, nullptr, c).ok());
  EXPECT_EQ(sinter::half::f16BitsToFloat(c[0]), 1.00390625f);
  // f32 out only from half operands; never half out from other operands.
  d.dtype = sabi::ElementType::f32;
  d.outType = sabi::ElementType::bf16;
  EXPECT_FALSE(analyzeMatmul(d).ok());
  d.dtype = sabi::ElementType::f16;
  EXPECT_FALSE(analyzeMatmul(d).ok());
  d.dtype = d.outType = sabi::ElementType::i32;
  EXPECT_FALSE(analyzeMatmul(d).ok());
}

// cuBLASLt's training forms of the tanh GELU (an aux matrix, DGELU and
// its bias gradient) are the CUDA target's: oneDNN has none, and the CPU
// backend says so at bind instead of computing something else.
TEST(MatmulTest, GeluTrainingFormsRefused) {
  auto backend = MatmulBackend::create();
  ASSERT_TRUE(backend.ok());
  MatmulDesc d;
  d.lhsShape = {2, 2};
  d.rhsShape = {2, 2};
  d.outShape = {2, 2};
  d.activation = sabi::MatmulStep::gelu_tanh;
  d.hasAux = true;
  float a[4] = {}, c[4];
  auto bound = (*backend)->bind(d, a, a, nullptr, c);
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(bound.status().message()),
              testing::HasSubstr("gelu_tanh with aux is one of cuBLASLt's "
                                 "training epilogues"));
  d.activation = sabi::MatmulStep::dgelu_tanh;
  d.hasBiasGrad = true;
  EXPECT_FALSE((*backend)->bind(d, a, a, nullptr, c).ok());
  // The descriptions the step-program reader rejects.
  d.hasAux = false;
  EXPECT_FALSE(analyzeMatmul(d).ok()); // dgelu without aux
  d.hasAux = true;
  d.hasBias = true;
  d.biasShape = {2};
  EXPECT_FALSE(analyzeMatmul(d).ok()); // dgelu with a bias
  d.hasBias = false;
  EXPECT_TRUE(analyzeMatmul(d).ok());
  d.activation = sabi::MatmulStep::relu;
  EXPECT_FALSE(analyzeMatmul(d).ok()); // aux and bias_grad without a GELU
}

TEST(MatmulTest, ActivationNames) {
  for (Activation a : {sabi::MatmulStep::none, sabi::MatmulStep::relu,
                       sabi::MatmulStep::gelu_erf, sabi::MatmulStep::gelu_tanh,
                       sabi::MatmulStep::dgelu_tanh})
    EXPECT_EQ(sabi::parseActivation(sabi::activationName(a)), a);
  EXPECT_FALSE(sabi::parseActivation("gelu").has_value());
}

} // namespace
