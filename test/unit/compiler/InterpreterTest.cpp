//===- InterpreterTest.cpp - the reference interpreter against hand math --===//
//
// Every expected value here is worked out by hand (shown in the comments),
// not produced by the interpreter, so these tests pin what each op means.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "compiler/Interpreter/Initializers.h"
#include "compiler/Interpreter/Interpreter.h"
#include "abi/Random.h"

#include "mlir/IR/Builders.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace sinter;
using namespace sinter::test;
using interp::ElementKind;
using interp::Tensor;

namespace {

/// Runs `@f` of a module given as text.
std::vector<Tensor> runText(TestContext &ctx, const std::string &text,
                            std::vector<Tensor> args) {
  auto module = ctx.parse(text);
  if (!module)
    return {};
  return ctx.run(*module, "f", std::move(args));
}

void expectValues(const Tensor &t, std::vector<int64_t> shape,
                  std::vector<double> values, double tol = 0) {
  ASSERT_EQ(t.shape, shape);
  ASSERT_EQ(static_cast<int64_t>(values.size()), t.numElements());
  for (size_t k = 0; k < values.size(); ++k) {
    if (std::isnan(values[k])) {
      EXPECT_TRUE(std::isnan(t.get(k))) << "element " << k;
      continue;
    }
    if (tol == 0 || std::isinf(values[k]))
      EXPECT_EQ(t.get(k), values[k]) << "element " << k;
    else
      EXPECT_NEAR(t.get(k), values[k], tol) << "element " << k;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

TEST(InterpreterRounding, Bf16RoundsToNearestEven) {
  // bf16 keeps 8 significant bits: around 1, steps of 2^-7.
  EXPECT_EQ(interp::roundTo(ElementKind::BF16, 1.0 + 0x1p-8), 1.0);   // tie, even
  EXPECT_EQ(interp::roundTo(ElementKind::BF16, 1.0 + 3 * 0x1p-8),
            1.0 + 0x1p-6);                                             // tie, even
  EXPECT_EQ(interp::roundTo(ElementKind::BF16, 1.0 + 0x1p-8 + 0x1p-12),
            1.0 + 0x1p-7);                                             // above tie
  // 3e38 = 1.7632 * 2^127; the nearest 8-bit significand is 226/128.
  EXPECT_EQ(interp::roundTo(ElementKind::BF16, 3.0e38), 226.0 * 0x1p120);
  EXPECT_TRUE(std::isnan(interp::roundTo(ElementKind::BF16, NAN)));
  EXPECT_EQ(interp::floatToBf16Bits(1.0f), 0x3F80);
  EXPECT_EQ(interp::floatToBf16Bits(-2.0f), 0xC000);
}

TEST(InterpreterRounding, F16MatchesIeeeHalf) {
  EXPECT_EQ(interp::roundTo(ElementKind::F16, 65504.0), 65504.0); // largest
  EXPECT_TRUE(std::isinf(interp::roundTo(ElementKind::F16, 65520.0))); // tie -> inf
  EXPECT_EQ(interp::roundTo(ElementKind::F16, 65519.0), 65504.0);
  EXPECT_EQ(interp::roundTo(ElementKind::F16, 0x1p-24), 0x1p-24); // smallest subnormal
  EXPECT_EQ(interp::roundTo(ElementKind::F16, 0x1p-25), 0.0);     // tie -> even 0
  EXPECT_EQ(interp::roundTo(ElementKind::F16, 3 * 0x1p-25), 0x1p-23); // tie -> even
  EXPECT_EQ(interp::roundTo(ElementKind::F16, 0.1), 0.0999755859375); // 0x2E66
  EXPECT_EQ(interp::floatToF16Bits(0.1f), 0x2E66);
  EXPECT_EQ(interp::floatToF16Bits(1.0f), 0x3C00);
  EXPECT_EQ(interp::floatToF16Bits(-0x1p-14f), 0x8400); // smallest normal
  EXPECT_EQ(interp::f16BitsToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(interp::f16BitsToFloat(0x0001), 0x1p-24f);
}

TEST(InterpreterRounding, F32IsCorrectlyRounded) {
  EXPECT_EQ(interp::roundTo(ElementKind::F32, 0.1), double(0.1f));
  EXPECT_EQ(interp::wrapTo(ElementKind::I32, int64_t(2147483648)),
            -2147483648LL);
  EXPECT_EQ(interp::wrapTo(ElementKind::I1, 5), 1);
}

TEST(Interpreter, ResultsAreRoundedToTheirType) {
  // 1/3 in bf16: 0.333984375 (0x3EAB); in f32: 0.3333333432674408.
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%a: tensor<bf16>, %b: tensor<bf16>, %c: tensor<f32>, %d: tensor<f32>) -> (tensor<bf16>, tensor<f32>) {
      %0 = sgraph.div %a, %b : (tensor<bf16>, tensor<bf16>) -> tensor<bf16>
      %1 = sgraph.div %c, %d : (tensor<f32>, tensor<f32>) -> tensor<f32>
      return %0, %1 : tensor<bf16>, tensor<f32>
    })",
                     {floats(ElementKind::BF16, {}, {1}),
                      floats(ElementKind::BF16, {}, {3}), f32({}, {1}),
                      f32({}, {3})});
  ASSERT_EQ(out.size(), 2u);
  expectValues(out[0], {}, {0.333984375});
  expectValues(out[1], {}, {double(1.0f / 3.0f)});
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

TEST(Interpreter, BroadcastingArithmetic) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%a: tensor<2x3xf64>, %b: tensor<3xf64>, %c: tensor<2x1xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>) {
      %0 = sgraph.add %a, %b : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
      %1 = sgraph.mul %c, %b : (tensor<2x1xf64>, tensor<3xf64>) -> tensor<2x3xf64>
      return %0, %1 : tensor<2x3xf64>, tensor<2x3xf64>
    })",
                     {f64({2, 3}, {1, 2, 3, 4, 5, 6}), f64({3}, {10, 20, 30}),
                      f64({2, 1}, {2, -1})});
  ASSERT_EQ(out.size(), 2u);
  expectValues(out[0], {2, 3}, {11, 22, 33, 14, 25, 36});
  expectValues(out[1], {2, 3}, {20, 40, 60, -10, -20, -30});
}

TEST(Interpreter, IntegerArithmeticWrapsAndTruncates) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%a: tensor<3xi32>, %b: tensor<3xi32>, %c: tensor<i32>) -> (tensor<3xi32>, tensor<i32>) {
      %0 = sgraph.div %a, %b : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
      %1 = sgraph.add %c, %c : (tensor<i32>, tensor<i32>) -> tensor<i32>
      return %0, %1 : tensor<3xi32>, tensor<i32>
    })",
                     {ints(ElementKind::I32, {3}, {7, -7, 9}),
                      ints(ElementKind::I32, {3}, {2, 2, -4}),
                      ints(ElementKind::I32, {}, {2147483647})});
  ASSERT_EQ(out.size(), 2u);
  expectValues(out[0], {3}, {3, -3, -2}); // toward zero
  expectValues(out[1], {}, {-2});         // 2^32 - 2 wraps to -2
}

TEST(Interpreter, IntegerDivisionByZeroIsAnError) {
  TestContext ctx;
  auto module = ctx.parse(R"(
    func.func @f(%a: tensor<2xi64>, %b: tensor<2xi64>) -> tensor<2xi64> {
      %0 = sgraph.div %a, %b : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
      return %0 : tensor<2xi64>
    })");
  auto fn = module->lookupSymbol<mlir::func::FuncOp>("f");
  auto result = interp::runFunction(fn, {i64({2}, {1, 2}), i64({2}, {1, 0})});
  EXPECT_TRUE(mlir::failed(result));
  EXPECT_NE(ctx.diagnostics.find("divides an integer by zero"),
            std::string::npos);
}

TEST(Interpreter, UnaryFunctions) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%x: tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>) {
      %0 = sgraph.relu %x : tensor<3xf64>
      %1 = sgraph.sigmoid %x : tensor<3xf64>
      %2 = sgraph.gelu %x : tensor<3xf64>
      %3 = sgraph.gelu %x {approximate = "tanh"} : tensor<3xf64>
      %4 = sgraph.abs %x : tensor<3xf64>
      %5 = sgraph.neg %x : tensor<3xf64>
      return %0, %1, %2, %3, %4, %5 : tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>
    })",
                     {f64({3}, {-1, 0, 2})});
  ASSERT_EQ(out.size(), 6u);
  expectValues(out[0], {3}, {0, 0, 2});
  // 1 / (1 + e^1), 1/2, 1 / (1 + e^-2)
  expectValues(out[1], {3}, {0.2689414213699951, 0.5, 0.8807970779778823},
               1e-15);
  // x * Phi(x): Phi(-1) = 0.15865525393145707, Phi(2) = 0.9772498680518208
  expectValues(out[2], {3}, {-0.15865525393145707, 0, 1.9544997361036416},
               1e-15);
  // GPT-2's tanh form at 2: 0.5*2*(1+tanh(0.7978845608*(2+0.044715*8)))
  expectValues(out[3], {3}, {-0.15880800939172324, 0, 1.954597694087775},
               1e-14);
  expectValues(out[4], {3}, {1, 0, 2});
  expectValues(out[5], {3}, {1, 0, -2}); // -0 == 0
}

TEST(Interpreter, CompareAndSelect) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%a: tensor<3xf64>, %b: tensor<f64>) -> (tensor<3xi1>, tensor<3xi1>, tensor<3xf64>) {
      %0 = sgraph.compare %a, %b {direction = "lt"} : (tensor<3xf64>, tensor<f64>) -> tensor<3xi1>
      %1 = sgraph.compare %a, %a {direction = "ne"} : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xi1>
      %2 = sgraph.select %0, %a, %b : (tensor<3xi1>, tensor<3xf64>, tensor<f64>) -> tensor<3xf64>
      return %0, %1, %2 : tensor<3xi1>, tensor<3xi1>, tensor<3xf64>
    })",
                     {f64({3}, {1, NAN, 3}), f64({}, {2})});
  ASSERT_EQ(out.size(), 3u);
  expectValues(out[0], {3}, {1, 0, 0}); // NaN < 2 is false
  expectValues(out[1], {3}, {0, 1, 0}); // only NaN != NaN
  expectValues(out[2], {3}, {1, 2, 2});
}

TEST(Interpreter, MaximumPropagatesNan) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%a: tensor<2xf64>, %b: tensor<2xf64>) -> tensor<2xf64> {
      %0 = sgraph.maximum %a, %b : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
      return %0 : tensor<2xf64>
    })",
                     {f64({2}, {1, NAN}), f64({2}, {3, 0})});
  ASSERT_EQ(out.size(), 1u);
  expectValues(out[0], {2}, {3, NAN});
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

TEST(Interpreter, Reductions) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%x: tensor<2x3xf64>) -> (tensor<2xf64>, tensor<1x3xf64>, tensor<2x1xf64>, tensor<f64>, tensor<2xi64>) {
      %0 = sgraph.reduce_sum %x axes = [1] : (tensor<2x3xf64>) -> tensor<2xf64>
      %1 = sgraph.reduce_mean %x axes = [0] {keepdims = true} : (tensor<2x3xf64>) -> tensor<1x3xf64>
      %2 = sgraph.reduce_max %x axes = [1] {keepdims = true} : (tensor<2x3xf64>) -> tensor<2x1xf64>
      %3 = sgraph.reduce_sum %x axes = [0, 1] : (tensor<2x3xf64>) -> tensor<f64>
      %4 = sgraph.argmax %x axis = 1 : (tensor<2x3xf64>) -> tensor<2xi64>
      return %0, %1, %2, %3, %4 : tensor<2xf64>, tensor<1x3xf64>, tensor<2x1xf64>, tensor<f64>, tensor<2xi64>
    })",
                     {f64({2, 3}, {1, 5, 3, 4, 4, -6})});
  ASSERT_EQ(out.size(), 5u);
  expectValues(out[0], {2}, {9, 2});
  expectValues(out[1], {1, 3}, {2.5, 4.5, -1.5});
  expectValues(out[2], {2, 1}, {5, 4});
  expectValues(out[3], {}, {11});
  expectValues(out[4], {2}, {1, 0}); // first of the tied maxima
}

TEST(Interpreter, SoftmaxAndLogSoftmax) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%x: tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>) {
      %0 = sgraph.softmax %x axis = 1 : tensor<2x3xf64>
      %1 = sgraph.log_softmax %x axis = 1 : tensor<2x3xf64>
      return %0, %1 : tensor<2x3xf64>, tensor<2x3xf64>
    })",
                     {f64({2, 3}, {1, 2, 3, 1000, -INFINITY, 1000})});
  ASSERT_EQ(out.size(), 2u);
  // e^k / (e + e^2 + e^3); a huge row does not overflow; -inf gets 0.
  expectValues(out[0], {2, 3},
               {0.09003057317038046, 0.24472847105479764, 0.6652409557748219,
                0.5, 0, 0.5},
               1e-15);
  double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  expectValues(out[1], {2, 3},
               {1 - lse, 2 - lse, 3 - lse, -std::log(2.0), -INFINITY,
                -std::log(2.0)},
               1e-15);
}

TEST(Interpreter, LayerNorm) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%x: tensor<1x4xf64>, %w: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<1x4xf64> {
      %0 = sgraph.layer_norm %x, %w, %b axis = 1 {epsilon = 1.0e-5 : f64} : (tensor<1x4xf64>, tensor<4xf64>, tensor<4xf64>) -> tensor<1x4xf64>
      return %0 : tensor<1x4xf64>
    })",
                     {f64({1, 4}, {1, 2, 3, 4}), f64({4}, {1, 1, 2, 2}),
                      f64({4}, {0, 0, 0, 1})});
  ASSERT_EQ(out.size(), 1u);
  // mean 2.5, biased variance 1.25.
  double r = 1 / std::sqrt(1.25 + 1e-5);
  expectValues(out[0], {1, 4}, {-1.5 * r, -0.5 * r, 2 * 0.5 * r, 2 * 1.5 * r + 1},
               1e-15);
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

TEST(Interpreter, MatmulTransposesAndBatches) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%a: tensor<2x2xf64>, %b: tensor<2x2xf64>, %c: tensor<2x1x2xf64>) -> (tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x1x2xf64>) {
      %0 = sgraph.matmul %a, %b : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
      %1 = sgraph.matmul %a, %b {transpose_rhs = true} : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
      %2 = sgraph.matmul %a, %b {transpose_lhs = true} : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
      %3 = sgraph.matmul %c, %b : (tensor<2x1x2xf64>, tensor<2x2xf64>) -> tensor<2x1x2xf64>
      return %0, %1, %2, %3 : tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x1x2xf64>
    })",
                     {f64({2, 2}, {1, 2, 3, 4}), f64({2, 2}, {5, 6, 7, 8}),
                      f64({2, 1, 2}, {1, 0, 0, 1})});
  ASSERT_EQ(out.size(), 4u);
  expectValues(out[0], {2, 2}, {19, 22, 43, 50});
  expectValues(out[1], {2, 2}, {17, 23, 39, 53}); // a b^T
  expectValues(out[2], {2, 2}, {26, 30, 38, 44}); // a^T b
  expectValues(out[3], {2, 1, 2}, {5, 6, 7, 8});  // rows of b
}

// The matmul is written for speed (OpKernels.cpp: a row of sums at a time
// over op(B)'s rows, a transposed B copied row-major first, A's zeros
// skipped); each element must still be what the plain definition gives: the
// sum over k in order, in doubles, of the products whose A factor is not a
// float 0, rounded once. Written out here as that triple loop and held to it
// bit for bit: several row, inner and column counts, zeros in A (a whole
// row, a run of rows at one k, scattered ones) with an inf of B behind a
// zero row (0 * inf left out, not NaN), transposes, a broadcast batch, f32
// and f64 results, and integers (which leave nothing out).
TEST(Interpreter, MatmulIsTheTripleLoopBitForBit) {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  auto fill = [&](Tensor &t, bool zeros) {
    for (int64_t k = 0; k < t.numElements(); ++k) {
      uint64_t r = next();
      if (!t.isFloat())
        t.i[k] = static_cast<int64_t>(r % 19) - 9;
      else if (zeros && r % 3 == 0)
        t.f[k] = 0.0;
      else // 53 random bits in [-1, 1), rounded to the tensor's kind
        t.f[k] = interp::roundTo(t.kind,
                                 static_cast<double>(r >> 11) * 0x1p-52 - 1.0);
    }
  };
  int cases = 0;
  for (ElementKind kind :
       {ElementKind::F64, ElementKind::F32, ElementKind::I64})
    for (int64_t m : {1, 3, 4, 9})
      for (int64_t kDim : {1, 6, 33})
        for (int64_t n : {1, 7, 20})
          for (int ta = 0; ta < 2; ++ta)
            for (int tb = 0; tb < 2; ++tb) {
              // a: [2, 1, op(A)], b: [3, op(B)], out: [2, 3, m, n].
              Tensor a(kind, {2, 1, ta ? kDim : m, ta ? m : kDim});
              Tensor b(kind, {3, tb ? n : kDim, tb ? kDim : n});
              Tensor out(kind, {2, 3, m, n});
              fill(a, true);
              fill(b, false);
              auto aAt = [&](int64_t p, int64_t i, int64_t k) {
                return a.get(p * m * kDim + (ta ? k * m + i : i * kDim + k));
              };
              auto bAt = [&](int64_t p, int64_t k, int64_t j) {
                return p * kDim * n + (tb ? j * kDim + k : k * n + j);
              };
              if (a.isFloat()) {
                // Row 0 of the first matrix all 0, and an inf of B at
                // k = 0 under it; rows 4..7 (one block) 0 at k = 1.
                for (int64_t k = 0; k < kDim; ++k)
                  a.f[ta ? k * m : k] = 0.0;
                for (int64_t i = 4; i < std::min<int64_t>(m, 8); ++i)
                  if (kDim > 1)
                    a.f[ta ? m + i : i * kDim + 1] = 0.0;
                b.f[bAt(0, 0, n - 1)] = std::numeric_limits<double>::infinity();
              }
              interp::matmulInto(a, b, ta, tb, out);
              for (int64_t p = 0; p < 2; ++p)
                for (int64_t q = 0; q < 3; ++q)
                  for (int64_t i = 0; i < m; ++i)
                    for (int64_t j = 0; j < n; ++j) {
                      double sum = 0.0;
                      for (int64_t k = 0; k < kDim; ++k) {
                        double av = aAt(p, i, k);
                        if (a.isFloat() && av == 0.0)
                          continue;
                        sum += av * b.get(bAt(q, k, j));
                      }
                      int64_t o = ((p * 3 + q) * m + i) * n + j;
                      SCOPED_TRACE(testing::Message()
                                   << interp::kindName(kind) << " m=" << m
                                   << " k=" << kDim << " n=" << n << " ta="
                                   << ta << " tb=" << tb << " element " << o);
                      if (!out.isFloat()) {
                        ASSERT_EQ(out.i[o], static_cast<int64_t>(sum));
                        continue;
                      }
                      double want = interp::roundTo(kind, sum);
                      if (std::isnan(want))
                        ASSERT_TRUE(std::isnan(out.f[o]));
                      else
                        ASSERT_EQ(out.f[o], want);
                    }
              ++cases;
            }
  EXPECT_EQ(cases, 3 * 4 * 3 * 3 * 4);
}

//===----------------------------------------------------------------------===//
// Embeddings and losses
//===----------------------------------------------------------------------===//

TEST(Interpreter, EmbeddingAndItsGradient) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%t: tensor<3x2xf64>, %i: tensor<2x2xi64>, %g: tensor<2x2x2xf64>) -> (tensor<2x2x2xf64>, tensor<3x2xf64>) {
      %0 = sgraph.embedding %t, %i : (tensor<3x2xf64>, tensor<2x2xi64>) -> tensor<2x2x2xf64>
      %1 = sgraph.embedding_grad %g, %i : (tensor<2x2x2xf64>, tensor<2x2xi64>) -> tensor<3x2xf64>
      return %0, %1 : tensor<2x2x2xf64>, tensor<3x2xf64>
    })",
                     {f64({3, 2}, {1, 2, 3, 4, 5, 6}), i64({2, 2}, {2, 0, 2, 1}),
                      f64({2, 2, 2}, {1, 1, 2, 2, 3, 3, 4, 4})});
  ASSERT_EQ(out.size(), 2u);
  expectValues(out[0], {2, 2, 2}, {5, 6, 1, 2, 5, 6, 3, 4});
  // Row 2 is read twice: its gradient is 1 + 3.
  expectValues(out[1], {3, 2}, {2, 2, 4, 4, 4, 4});
}

TEST(Interpreter, EmbeddingIndexOutOfRangeIsAnError) {
  TestContext ctx;
  auto module = ctx.parse(R"(
    func.func @f(%t: tensor<3x2xf64>, %i: tensor<2xi64>) -> tensor<2x2xf64> {
      %0 = sgraph.embedding %t, %i : (tensor<3x2xf64>, tensor<2xi64>) -> tensor<2x2xf64>
      return %0 : tensor<2x2xf64>
    })");
  auto fn = module->lookupSymbol<mlir::func::FuncOp>("f");
  auto result =
      interp::runFunction(fn, {f64({3, 2}, {1, 2, 3, 4, 5, 6}), i64({2}, {0, 3})});
  EXPECT_TRUE(mlir::failed(result));
  EXPECT_NE(ctx.diagnostics.find("index 3 at [1] is out of range [0, 3)"),
            std::string::npos)
      << ctx.diagnostics;
}

TEST(Interpreter, CrossEntropyWithIgnoreIndex) {
  TestContext ctx;
  const char *text = R"(
    func.func @f(%l: tensor<3x2xf64>, %y: tensor<3xi64>) -> (tensor<f64>, tensor<f64>, tensor<3xf64>) {
      %0 = sgraph.softmax_cross_entropy %l, %y {ignore_index = -1 : i64} : (tensor<3x2xf64>, tensor<3xi64>) -> tensor<f64>
      %1 = sgraph.softmax_cross_entropy %l, %y {ignore_index = -1 : i64, reduction = "sum"} : (tensor<3x2xf64>, tensor<3xi64>) -> tensor<f64>
      %2 = sgraph.softmax_cross_entropy %l, %y {ignore_index = -1 : i64, reduction = "none"} : (tensor<3x2xf64>, tensor<3xi64>) -> tensor<3xf64>
      return %0, %1, %2 : tensor<f64>, tensor<f64>, tensor<3xf64>
    })";
  double ln2 = std::log(2.0), ln3 = std::log(3.0);
  // Row 0: logsumexp(0, 0) - 0 = ln 2. Row 1: logsumexp(ln 3, 0) - 0 = ln 4.
  // Row 2 is ignored.
  auto out = runText(ctx, text,
                     {f64({3, 2}, {0, 0, ln3, 0, 7, 7}), i64({3}, {0, 1, -1})});
  ASSERT_EQ(out.size(), 3u);
  expectValues(out[0], {}, {1.5 * ln2}, 1e-15);
  expectValues(out[1], {}, {3 * ln2}, 1e-15);
  expectValues(out[2], {3}, {ln2, 2 * ln2, 0}, 1e-15);
  // Every position ignored: the mean is 0/0, as in PyTorch.
  auto all = runText(ctx, text,
                     {f64({3, 2}, {0, 0, 0, 0, 0, 0}), i64({3}, {-1, -1, -1})});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_TRUE(std::isnan(all[0].f[0]));
}

TEST(Interpreter, CrossEntropyDividesByAPositiveCount) {
  TestContext ctx;
  const char *text = R"(
    func.func @f(%l: tensor<3x2xf64>, %y: tensor<3xi64>, %n: tensor<f64>) -> tensor<f64> {
      %0 = sgraph.softmax_cross_entropy %l, %y count %n {ignore_index = -1 : i64} : (tensor<3x2xf64>, tensor<3xi64>, tensor<f64>) -> tensor<f64>
      return %0 : tensor<f64>
    })";
  double ln2 = std::log(2.0), ln3 = std::log(3.0);
  Tensor logits = f64({3, 2}, {0, 0, ln3, 0, 7, 7});
  Tensor labels = i64({3}, {0, 1, -1});
  // The sum (3 ln 2) over the count given, not over the 2 positions kept.
  auto out = runText(ctx, text, {logits, labels, f64({}, {4.0})});
  ASSERT_EQ(out.size(), 1u);
  expectValues(out[0], {}, {0.75 * ln2}, 1e-15);
  // 0: the positions kept, as without a count.
  auto own = runText(ctx, text, {logits, labels, f64({}, {0.0})});
  ASSERT_EQ(own.size(), 1u);
  expectValues(own[0], {}, {1.5 * ln2}, 1e-15);
  // A batch with no position kept is 0 of a positive count, not NaN: a
  // rank's share of a step whose other ranks have labels.
  auto none =
      runText(ctx, text, {logits, i64({3}, {-1, -1, -1}), f64({}, {2.0})});
  ASSERT_EQ(none.size(), 1u);
  expectValues(none[0], {}, {0.0}, 0.0);
}

TEST(Interpreter, OneHot) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%y: tensor<3xi64>) -> tensor<3x2xf32> {
      %0 = sgraph.one_hot %y : (tensor<3xi64>) -> tensor<3x2xf32>
      return %0 : tensor<3x2xf32>
    })",
                     {i64({3}, {1, -1, 0})});
  ASSERT_EQ(out.size(), 1u);
  expectValues(out[0], {3, 2}, {0, 1, 0, 0, 1, 0});
}

//===----------------------------------------------------------------------===//
// Shape ops and generators
//===----------------------------------------------------------------------===//

TEST(Interpreter, ShapeOps) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%x: tensor<2x3xf64>, %v: tensor<3xf64>) -> (tensor<3x2xf64>, tensor<1x2xf64>, tensor<2x3xf64>, tensor<6xf64>) {
      %0 = sgraph.transpose %x permutation = [1, 0] : (tensor<2x3xf64>) -> tensor<3x2xf64>
      %1 = sgraph.slice %x {start = array<i64: 1, 0>, limit = array<i64: 2, 3>, stride = array<i64: 1, 2>} : (tensor<2x3xf64>) -> tensor<1x2xf64>
      %2 = sgraph.broadcast %v : tensor<3xf64> to tensor<2x3xf64>
      %3 = sgraph.reshape %x : tensor<2x3xf64> to tensor<6xf64>
      return %0, %1, %2, %3 : tensor<3x2xf64>, tensor<1x2xf64>, tensor<2x3xf64>, tensor<6xf64>
    })",
                     {f64({2, 3}, {1, 2, 3, 4, 5, 6}), f64({3}, {7, 8, 9})});
  ASSERT_EQ(out.size(), 4u);
  expectValues(out[0], {3, 2}, {1, 4, 2, 5, 3, 6});
  expectValues(out[1], {1, 2}, {4, 6}); // row 1, columns 0 and 2
  expectValues(out[2], {2, 3}, {7, 8, 9, 7, 8, 9});
  expectValues(out[3], {6}, {1, 2, 3, 4, 5, 6});
}

TEST(Interpreter, PadAndConcat) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%x: tensor<2x3xf64>) -> (tensor<2x6xf64>, tensor<2x6xf64>) {
      %0 = sgraph.pad %x {low = array<i64: 0, 1>, high = array<i64: 0, 0>, interior = array<i64: 0, 1>, value = -1.0 : f64} : (tensor<2x3xf64>) -> tensor<2x6xf64>
      %1 = sgraph.concat %x, %x axis = 1 : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x6xf64>
      return %0, %1 : tensor<2x6xf64>, tensor<2x6xf64>
    })",
                     {f64({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(out.size(), 2u);
  expectValues(out[0], {2, 6}, {-1, 1, -1, 2, -1, 3, -1, 4, -1, 5, -1, 6});
  expectValues(out[1], {2, 6}, {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
}

TEST(Interpreter, IotaAndCausalMask) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f() -> (tensor<2x3xi64>, tensor<3x3xi1>) {
      %0 = sgraph.iota axis = 1 : tensor<2x3xi64>
      %1 = sgraph.causal_mask : tensor<3x3xi1>
      return %0, %1 : tensor<2x3xi64>, tensor<3x3xi1>
    })",
                     {});
  ASSERT_EQ(out.size(), 2u);
  expectValues(out[0], {2, 3}, {0, 1, 2, 0, 1, 2});
  expectValues(out[1], {3, 3}, {1, 0, 0, 1, 1, 0, 1, 1, 1});
}

TEST(Interpreter, Casts) {
  TestContext ctx;
  auto out = runText(ctx, R"(
    func.func @f(%x: tensor<5xf32>, %y: tensor<2xi64>) -> (tensor<5xi32>, tensor<2xi32>, tensor<5xi1>, tensor<5xbf16>) {
      %0 = sgraph.cast %x : tensor<5xf32> to tensor<5xi32>
      %1 = sgraph.cast %y : tensor<2xi64> to tensor<2xi32>
      %2 = sgraph.cast %x : tensor<5xf32> to tensor<5xi1>
      %3 = sgraph.cast %x : tensor<5xf32> to tensor<5xbf16>
      return %0, %1, %2, %3 : tensor<5xi32>, tensor<2xi32>, tensor<5xi1>, tensor<5xbf16>
    })",
                     {f32({5}, {2.7, -2.7, 1e20, NAN, 0}),
                      i64({2}, {4294967297, -1})});
  ASSERT_EQ(out.size(), 4u);
  expectValues(out[0], {5}, {2, -2, 2147483647, 0, 0}); // trunc, saturate, NaN
  expectValues(out[1], {2}, {1, -1});                   // wraps mod 2^32
  expectValues(out[2], {5}, {1, 1, 1, 1, 0});
  // 2.7f = 2.70000005 -> bf16 2.703125; 1e20 -> 1.00000002e20.
  EXPECT_EQ(out[3].f[0], 2.703125);
  EXPECT_TRUE(std::isnan(out[3].f[3]));
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

TEST(Interpreter, DropoutFollowsTheSharedGenerator) {
  TestContext ctx;
  const char *text = R"(
    func.func @f(%x: tensor<1000xf32>, %s: tensor<i64>) -> tensor<1000xf32> {
      %0 = sgraph.dropout %x, %s {rate = 0.25 : f64, seed = 42 : i64} : tensor<1000xf32>, tensor<i64>
      return %0 : tensor<1000xf32>
    })";
  Tensor ones(ElementKind::F32, {1000});
  std::fill(ones.f.begin(), ones.f.end(), 1.0);
  auto step3 = runText(ctx, text, {ones, i64({}, {3})});
  auto step4 = runText(ctx, text, {ones, i64({}, {4})});
  ASSERT_EQ(step3.size(), 1u);
  ASSERT_EQ(step4.size(), 1u);
  uint64_t key = random::key(42, 3);
  int kept = 0, differs = 0;
  for (int k = 0; k < 1000; ++k) {
    bool keep = random::dropoutKeeps(key, k, 0.25);
    // Kept elements are scaled by 1 / (1 - rate).
    EXPECT_EQ(step3[0].f[k],
              keep ? interp::roundTo(ElementKind::F32, 4.0 / 3.0) : 0.0)
        << k;
    kept += keep;
    differs += step3[0].f[k] != step4[0].f[k];
  }
  EXPECT_NEAR(kept, 750, 60);  // about 1 - rate of them
  EXPECT_GT(differs, 200);     // another step, another mask
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

TEST(Interpreter, SgdAndMomentum) {
  TestContext ctx;
  const char *text = R"(
    func.func @f(%p: tensor<1xf64>, %g: tensor<1xf64>, %b: tensor<1xf64>, %lr: tensor<f64>, %s: tensor<i64>) -> (tensor<1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<1xf64>) {
      %0 = sgraph.sgd_update %p, %g, %lr {weight_decay = 0.1 : f64} : tensor<1xf64>, tensor<f64>
      %1, %2 = sgraph.momentum_update %p, %g, %b, %lr, %s {momentum = 0.9 : f64, dampening = 0.5 : f64} : tensor<1xf64>, tensor<f64>, tensor<i64>
      %3, %4 = sgraph.momentum_update %p, %g, %b, %lr, %s {momentum = 0.9 : f64, nesterov = true} : tensor<1xf64>, tensor<f64>, tensor<i64>
      return %0, %1, %2, %3, %4 : tensor<1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<1xf64>
    })";
  // Step 0: the buffer starts as the gradient, whatever dampening says.
  auto first = runText(ctx, text,
                       {f64({1}, {1}), f64({1}, {0.5}), f64({1}, {7}),
                        f64({}, {0.1}), i64({}, {0})});
  ASSERT_EQ(first.size(), 5u);
  expectValues(first[0], {1}, {1 - 0.1 * (0.5 + 0.1 * 1)}, 1e-15); // 0.94
  expectValues(first[2], {1}, {0.5});
  expectValues(first[1], {1}, {0.95}, 1e-15);
  // Nesterov steps along g + momentum * buf = 0.5 + 0.45.
  expectValues(first[3], {1}, {1 - 0.1 * 0.95}, 1e-15);
  // Step 1 with buffer 7: buf = 0.9 * 7 + (1 - 0.5) * 0.5 = 6.55.
  auto later = runText(ctx, text,
                       {f64({1}, {1}), f64({1}, {0.5}), f64({1}, {7}),
                        f64({}, {0.1}), i64({}, {1})});
  ASSERT_EQ(later.size(), 5u);
  expectValues(later[2], {1}, {6.55}, 1e-15);
  expectValues(later[1], {1}, {1 - 0.655}, 1e-15);
}

TEST(Interpreter, AdamAndAdamW) {
  TestContext ctx;
  const char *text = R"(
    func.func @f(%p: tensor<1xf64>, %g: tensor<1xf64>, %m: tensor<1xf64>, %v: tensor<1xf64>, %lr: tensor<f64>, %s: tensor<i64>) -> (tensor<1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<1xf64>) {
      %0, %1, %2 = sgraph.adam_update %p, %g, %m, %v, %lr, %s : tensor<1xf64>, tensor<f64>, tensor<i64>
      %3, %4, %5 = sgraph.adam_update %p, %g, %m, %v, %lr, %s {weight_decay = 0.5 : f64, decoupled_weight_decay = true} : tensor<1xf64>, tensor<f64>, tensor<i64>
      return %0, %1, %2, %3 : tensor<1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<1xf64>
    })";
  // Step 0 from zero state: m = 0.1 g, v = 0.001 g^2; bias correction
  // makes m_hat = g, v_hat = g^2, so the step is lr * g / (|g| + eps).
  auto out = runText(ctx, text,
                     {f64({1}, {2}), f64({1}, {0.5}), f64({1}, {0}),
                      f64({1}, {0}), f64({}, {0.01}), i64({}, {0})});
  ASSERT_EQ(out.size(), 4u);
  expectValues(out[1], {1}, {0.05}, 1e-16);
  expectValues(out[2], {1}, {0.001 * 0.25}, 1e-18);
  expectValues(out[0], {1}, {2 - 0.01 * 0.5 / (0.5 + 1e-8)}, 1e-15);
  // AdamW first shrinks the parameter by 1 - lr * wd = 0.995.
  expectValues(out[3], {1}, {2 * 0.995 - 0.01 * 0.5 / (0.5 + 1e-8)}, 1e-15);
}

TEST(Interpreter, GlobalNormAndLrSchedule) {
  TestContext ctx;
  const char *text = R"(
    func.func @f(%a: tensor<2xf32>, %b: tensor<1xf32>, %s: tensor<i64>) -> (tensor<f32>, tensor<f64>, tensor<f64>) {
      %0 = sgraph.global_norm %a, %b : (tensor<2xf32>, tensor<1xf32>) -> tensor<f32>
      %1 = sgraph.lr_schedule %s {schedule = "warmup_cosine", lr = 1.0e-3 : f64, min_lr = 1.0e-4 : f64, warmup_steps = 100 : i64, decay_steps = 5000 : i64} : (tensor<i64>) -> tensor<f64>
      %2 = sgraph.lr_schedule %s {lr = 1.0e-3 : f64, warmup_steps = 10 : i64} : (tensor<i64>) -> tensor<f64>
      return %0, %1, %2 : tensor<f32>, tensor<f64>, tensor<f64>
    })";
  auto lrAt = [&](int64_t step) {
    auto out = runText(ctx, text,
                       {f32({2}, {3, 4}), f32({1}, {12}), i64({}, {step})});
    EXPECT_EQ(out.size(), 3u);
    if (out.size() == 3u)
      EXPECT_EQ(out[0].f[0], 13.0); // sqrt(9 + 16 + 144)
    return out;
  };
  // nanoGPT's get_lr: the first steps warm up as lr * (it + 1) / (W + 1).
  EXPECT_DOUBLE_EQ(lrAt(0)[1].f[0], 1e-3 / 101);
  EXPECT_DOUBLE_EQ(lrAt(1)[1].f[0], 2e-3 / 101);
  EXPECT_DOUBLE_EQ(lrAt(2)[1].f[0], 3e-3 / 101);
  EXPECT_DOUBLE_EQ(lrAt(100)[1].f[0], 1e-3); // cosine starts at the peak
  EXPECT_DOUBLE_EQ(lrAt(2550)[1].f[0], 5.5e-4); // halfway: (lr + min) / 2
  EXPECT_DOUBLE_EQ(lrAt(4999)[1].f[0],
                   1e-4 + 0.5 * (1 + std::cos(M_PI * 4899.0 / 4900.0)) * 9e-4);
  EXPECT_DOUBLE_EQ(lrAt(5000)[1].f[0], 1e-4);
  EXPECT_DOUBLE_EQ(lrAt(5001)[1].f[0], 1e-4);
  // The constant schedule with a warmup.
  EXPECT_DOUBLE_EQ(lrAt(4)[2].f[0], 5e-3 / 11);
  EXPECT_DOUBLE_EQ(lrAt(10)[2].f[0], 1e-3);
}

// With peak_lr the schedule's peak is the operand's value and min_lr keeps
// its ratio to it: peak_lr = 2 lr doubles every point of the schedule (lr
// and min_lr both double); peak_lr = lr is bit-identical to no peak_lr.
TEST(Interpreter, LrScheduleWithPeakLr) {
  TestContext ctx;
  const char *text = R"(
    func.func @f(%s: tensor<i64>, %peak: tensor<f64>) -> (tensor<f64>, tensor<f64>, tensor<f64>, tensor<f32>) {
      %0 = sgraph.lr_schedule %s {schedule = "warmup_cosine", lr = 1.0e-3 : f64, min_lr = 1.0e-4 : f64, warmup_steps = 100 : i64, decay_steps = 5000 : i64} : (tensor<i64>) -> tensor<f64>
      %1 = sgraph.lr_schedule %s, peak_lr %peak {schedule = "warmup_cosine", lr = 1.0e-3 : f64, min_lr = 1.0e-4 : f64, warmup_steps = 100 : i64, decay_steps = 5000 : i64} : (tensor<i64>, tensor<f64>) -> tensor<f64>
      %2 = sgraph.lr_schedule %s, peak_lr %peak {lr = 1.0e-3 : f64, warmup_steps = 10 : i64} : (tensor<i64>, tensor<f64>) -> tensor<f64>
      %3 = sgraph.lr_schedule %s, peak_lr %peak {lr = 0.0 : f64} : (tensor<i64>, tensor<f64>) -> tensor<f32>
      return %0, %1, %2, %3 : tensor<f64>, tensor<f64>, tensor<f64>, tensor<f32>
    })";
  auto run = [&](int64_t step, double peak) {
    auto out = runText(ctx, text, {i64({}, {step}), f64({}, {peak})});
    EXPECT_EQ(out.size(), 4u);
    return out;
  };
  for (int64_t step : {0, 5, 99, 100, 2550, 4999, 5000, 6000}) {
    SCOPED_TRACE(step);
    auto same = run(step, 1e-3);
    EXPECT_EQ(same[1].f[0], same[0].f[0]); // exactly, not just close
    auto doubled = run(step, 2e-3);
    EXPECT_DOUBLE_EQ(doubled[1].f[0], 2 * same[0].f[0]);
  }
  EXPECT_DOUBLE_EQ(run(100, 2e-3)[1].f[0], 2e-3);  // the peak
  EXPECT_DOUBLE_EQ(run(6000, 2e-3)[1].f[0], 2e-4); // the floor, doubled
  EXPECT_DOUBLE_EQ(run(2550, 2e-3)[1].f[0], 1.1e-3); // halfway
  EXPECT_DOUBLE_EQ(run(4, 3e-3)[2].f[0], 5 * 3e-3 / 11);
  EXPECT_DOUBLE_EQ(run(10, 3e-3)[2].f[0], 3e-3);
  // A compiled lr of 0 (min_lr 0): the peak is whatever is given.
  EXPECT_FLOAT_EQ(static_cast<float>(run(7, 0.5)[3].f[0]), 0.5f);
}

//===----------------------------------------------------------------------===//
// Initializers
//===----------------------------------------------------------------------===//

TEST(Initializers, NormalAndUniformAreDeterministicPerName) {
  TestContext ctx;
  mlir::Builder b(&ctx.get());
  auto type = mlir::RankedTensorType::get({100, 100}, b.getF32Type());
  auto normal = b.getDictionaryAttr(
      {b.getNamedAttr("dist", b.getStringAttr("normal")),
       b.getNamedAttr("std", b.getF64FloatAttr(0.02))});
  auto uniform = b.getDictionaryAttr(
      {b.getNamedAttr("dist", b.getStringAttr("uniform")),
       b.getNamedAttr("bound", b.getF64FloatAttr(0.5))});
  auto loc = b.getUnknownLoc();
  auto a = interp::initializeParameter("h.0.w", normal, type, 1337, loc);
  auto again = interp::initializeParameter("h.0.w", normal, type, 1337, loc);
  auto other = interp::initializeParameter("h.1.w", normal, type, 1337, loc);
  auto reseeded = interp::initializeParameter("h.0.w", normal, type, 7, loc);
  auto u = interp::initializeParameter("u", uniform, type, 1337, loc);
  ASSERT_TRUE(mlir::succeeded(a) && mlir::succeeded(again) &&
              mlir::succeeded(other) && mlir::succeeded(reseeded) &&
              mlir::succeeded(u));
  EXPECT_EQ(a->f, again->f);
  EXPECT_NE(a->f, other->f);
  EXPECT_NE(a->f, reseeded->f);
  double mean = 0, square = 0;
  for (double v : a->f) {
    mean += v;
    square += v * v;
  }
  mean /= 10000;
  double std = std::sqrt(square / 10000 - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.001);  // 5 standard errors: 5 * 0.02 / 100
  EXPECT_NEAR(std, 0.02, 0.0007); // about 5 standard errors of the std
  double lo = 1, hi = -1;
  for (double v : u->f) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GE(lo, -0.5);
  EXPECT_LE(hi, 0.5);
  EXPECT_LT(lo, -0.49);
  EXPECT_GT(hi, 0.49);
}
