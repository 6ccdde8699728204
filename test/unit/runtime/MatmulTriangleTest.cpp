//===- MatmulTriangleTest.cpp - matmuls that skip a triangle --------------===//
//
// MatmulDesc::triangle against the whole product (referenceMatmul, in
// double). For an operand triangle the operand is made 0 on that side of
// its diagonal, so the whole product and the blocked one are the same
// numbers up to f32 summation order (the tolerance of MatmulTest.cpp). For
// out_lower, the lower triangle must match and every entry above the
// diagonal must be the product or exactly 0: never the NaN the buffer held
// before, since arena bytes are reused and the next reader may multiply
// them by 0.
//
// Sizes: 256 (4 blocks of 64), 200 (the last block short), 100 (2 blocks,
// the second of 36) and 64 (one block: the whole product), with each
// transpose and a batch; and bf16 operands with an f32 out.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/Matmul.h"

#include "abi/HalfFloat.h"

#include "absl/strings/str_format.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cmath>
#include <random>

using namespace sinter::exec;
namespace sabi = sinter::abi;
using T = sabi::MatmulStep;

namespace {

struct Case {
  T::Triangle triangle;
  int64_t size;  // the square axis
  int64_t other; // the third dimension
  bool transposeLhs, transposeRhs;
  int64_t batch;
};

/// The desc of a case: op(lhs) [batch, M, K], op(rhs) [batch, K, N], with
/// the triangle's matrix size x size.
MatmulDesc descOf(const Case &c) {
  int64_t m = c.size, k = c.other, n = c.size; // out_lower
  if (c.triangle == T::lhs_lower || c.triangle == T::lhs_upper)
    std::tie(m, k, n) = std::tuple{c.size, c.size, c.other};
  if (c.triangle == T::rhs_lower || c.triangle == T::rhs_upper)
    std::tie(m, k, n) = std::tuple{c.other, c.size, c.size};
  MatmulDesc d;
  d.lhsShape = c.transposeLhs ? std::vector<int64_t>{c.batch, k, m}
                              : std::vector<int64_t>{c.batch, m, k};
  d.rhsShape = c.transposeRhs ? std::vector<int64_t>{c.batch, n, k}
                              : std::vector<int64_t>{c.batch, k, n};
  d.outShape = {c.batch, m, n};
  d.transposeLhs = c.transposeLhs;
  d.transposeRhs = c.transposeRhs;
  d.alpha = 0.125f;
  d.triangle = c.triangle;
  return d;
}

/// Zeroes op(x)'s triangle: x is [batch, stored rows, stored cols], op(x)
/// its transpose when `transposed`; `lower` keeps op(x)[i, j] for j <= i.
void zeroTriangle(std::vector<float> &x, int64_t batch, int64_t size,
                  bool transposed, bool lower) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < size; ++i)
      for (int64_t j = 0; j < size; ++j)
        if (lower ? j > i : j < i)
          x[(b * size + (transposed ? j : i)) * size + (transposed ? i : j)] =
              0;
}

std::string nameOf(const Case &c) {
  return absl::StrFormat("%s size=%d other=%d tl=%d tr=%d batch=%d",
                         sabi::triangleName(c.triangle), c.size, c.other,
                         c.transposeLhs, c.transposeRhs, c.batch);
}

/// Runs case `c` with `type` operands (out f32) and checks it; returns the
/// plan.
std::string check(MatmulBackend &backend, const Case &c,
                  sabi::DType type = sabi::ElementType::f32) {
  SCOPED_TRACE(nameOf(c));
  MatmulDesc d = descOf(c);
  d.dtype = type;
  absl::StatusOr<MatmulGeometry> g = analyzeMatmul(d);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok())
    return "";
  std::mt19937 rng(c.size * 31 + c.triangle);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto random = [&](const std::vector<int64_t> &shape) {
    std::vector<float> v(shape[0] * shape[1] * shape[2]);
    for (float &x : v)
      x = dist(rng);
    return v;
  };
  std::vector<float> lhs = random(d.lhsShape), rhs = random(d.rhsShape);
  if (c.triangle == T::lhs_lower || c.triangle == T::lhs_upper)
    zeroTriangle(lhs, c.batch, c.size, c.transposeLhs,
                 c.triangle == T::lhs_lower);
  if (c.triangle == T::rhs_lower || c.triangle == T::rhs_upper)
    zeroTriangle(rhs, c.batch, c.size, c.transposeRhs,
                 c.triangle == T::rhs_lower);
  // Half operands are the rounded values, for both sides.
  std::vector<uint16_t> lhsHalf, rhsHalf;
  auto toHalf = [](std::vector<float> &v, std::vector<uint16_t> &h) {
    for (float &x : v) {
      h.push_back(sinter::half::floatToBf16Bits(x));
      x = sinter::half::bf16BitsToFloat(h.back());
    }
  };
  const bool half = type != sabi::ElementType::f32;
  if (half) {
    toHalf(lhs, lhsHalf);
    toHalf(rhs, rhsHalf);
  }
  const size_t outSize = c.batch * g->m * g->n;
  std::vector<float> got(outSize, NAN), want(outSize);
  auto bound = backend.bind(
      d, half ? static_cast<const void *>(lhsHalf.data()) : lhs.data(),
      half ? static_cast<const void *>(rhsHalf.data()) : rhs.data(), nullptr,
      got.data());
  EXPECT_TRUE(bound.ok()) << bound.status();
  if (!bound.ok())
    return "";
  SCOPED_TRACE((*bound)->plan());
  EXPECT_TRUE((*bound)->run().ok());
  MatmulDesc whole = d;
  whole.dtype = sabi::ElementType::f32;
  whole.triangle = T::full;
  EXPECT_TRUE(
      referenceMatmul(whole, lhs.data(), rhs.data(), nullptr, want.data())
          .ok());
  // |alpha| sum_k |a||b| <= alpha K for operands in [-1, 1].
  const double tol = 1e-5 * std::sqrt(double(g->k)) * 0.125 * g->k + 1e-6;
  int bad = 0;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < g->m; ++i)
      for (int64_t j = 0; j < g->n; ++j) {
        const size_t at = (b * g->m + i) * g->n + j;
        const bool skippable = c.triangle == T::out_lower && j > i;
        const bool ok =
            skippable ? got[at] == 0 || std::fabs(got[at] - want[at]) <= tol
                      : std::fabs(got[at] - want[at]) <= tol;
        if (!ok && bad++ < 5)
          ADD_FAILURE() << "[" << b << ", " << i << ", " << j << "]: got "
                        << got[at] << ", want " << want[at]
                        << (skippable ? " or 0" : "");
      }
  return std::string((*bound)->plan());
}

TEST(MatmulTriangleTest, EveryTriangleMatchesTheWholeProduct) {
  auto backend = MatmulBackend::create();
  ASSERT_TRUE(backend.ok());
  for (T::Triangle t :
       {T::out_lower, T::lhs_lower, T::lhs_upper, T::rhs_lower, T::rhs_upper})
    for (int64_t size : {256, 200, 100, 64})
      for (bool tl : {false, true})
        for (bool tr : {false, true})
          check(**backend, {t, size, 48, tl, tr, 3});
}

TEST(MatmulTriangleTest, Bf16Operands) {
  auto backend = MatmulBackend::create();
  ASSERT_TRUE(backend.ok());
  for (T::Triangle t : {T::out_lower, T::lhs_lower, T::lhs_upper})
    check(**backend, {t, 256, 64, t == T::lhs_upper, t == T::out_lower, 2},
          sabi::ElementType::bf16);
}

// The plans say how many blocks ran and what share of the products.
TEST(MatmulTriangleTest, Plans) {
  auto backend = MatmulBackend::create();
  ASSERT_TRUE(backend.ok());
  EXPECT_EQ(check(**backend, {T::lhs_lower, 256, 64, false, false, 24}),
            "3d [24,256,256] x [24,256,64], lhs_lower in 4 blocks (62.5% of "
            "the products)");
  EXPECT_EQ(check(**backend, {T::out_lower, 1024, 64, false, true, 2}),
            "3d [2,1024,64] x [2,64,1024], out_lower in 8 blocks (56.2% of "
            "the products)");
  // One block would be the whole product: it is.
  EXPECT_EQ(check(**backend, {T::rhs_upper, 64, 32, false, false, 2}),
            "3d [2,32,64] x [2,64,64]");
}

// Where oneDNN has AMX it gives it only to dense operands, never to a
// block's strided view, and the whole product on AMX is faster than the
// blocks' share of it: bf16 triangles are then computed whole. Forcing the
// block rows keeps the blocks (the tests' SINTER_TRIANGLE_BLOCK_ROWS), as
// does an operand stored transposed that is larger than 128 KiB a matrix,
// and f32 keeps them everywhere.
TEST(MatmulTriangleTest, Bf16OnAmxComputedWhole) {
  const bool amx = MatmulBackend::isa() == "avx512_core_amx";
  auto backend = MatmulBackend::create();
  ASSERT_TRUE(backend.ok());
  MatmulBackendOptions forced;
  forced.triangleBlockRows = 64;
  auto blocks = MatmulBackend::create(forced);
  ASSERT_TRUE(blocks.ok());
  for (T::Triangle t : {T::out_lower, T::lhs_lower, T::lhs_upper}) {
    const Case c{t, 256, 64, t == T::lhs_upper, t == T::out_lower, 4};
    const std::string whole =
        absl::StrFormat("%s computed whole (AMX takes no block) bf16 to f32",
                        sabi::triangleName(t));
    const std::string plan = check(**backend, c, sabi::ElementType::bf16);
    if (amx)
      EXPECT_THAT(plan, testing::EndsWith(whole));
    else
      EXPECT_THAT(plan, testing::HasSubstr("in 4 blocks"));
    EXPECT_THAT(check(**blocks, c, sabi::ElementType::bf16),
                testing::HasSubstr("in 4 blocks"));
    EXPECT_THAT(check(**backend, c), testing::HasSubstr("in 4 blocks"));
  }
  // An operand stored transposed over 128 KiB a matrix keeps the blocks
  // (AMX would copy all of it); K^T of 64 x 1024 (128 KiB) does not.
  const std::string bigUpper =
      check(**backend, {T::lhs_upper, 512, 64, true, false, 1},
            sabi::ElementType::bf16);
  EXPECT_THAT(bigUpper, testing::HasSubstr("in 8 blocks"));
  const std::string longScores =
      check(**backend, {T::out_lower, 1024, 64, false, true, 1},
            sabi::ElementType::bf16);
  if (amx)
    EXPECT_THAT(longScores, testing::HasSubstr("computed whole"));
  else
    EXPECT_THAT(longScores, testing::HasSubstr("in 8 blocks"));
}

// MatmulBackendOptions::triangleBlockRows splits small matrices too: odd
// sizes into blocks of 2 and 3 rows (the last one short), and of 1.
TEST(MatmulTriangleTest, BlockRowsFromTheOptions) {
  for (int64_t rows : {1, 2, 3}) {
    MatmulBackendOptions options;
    options.triangleBlockRows = rows;
    auto backend = MatmulBackend::create(options);
    ASSERT_TRUE(backend.ok());
    for (T::Triangle t :
         {T::out_lower, T::lhs_lower, T::lhs_upper, T::rhs_lower, T::rhs_upper})
      for (int64_t size : {7, 8})
        for (bool tl : {false, true})
          check(**backend, {t, size, 5, tl, !tl, 2});
  }
  MatmulBackendOptions options;
  options.triangleBlockRows = 3;
  auto backend = MatmulBackend::create(options);
  ASSERT_TRUE(backend.ok());
  EXPECT_EQ(check(**backend, {T::lhs_upper, 7, 5, false, false, 2}),
            "3d [2,7,7] x [2,7,5], lhs_upper in 3 blocks (69.4% of the "
            "products)");
}

TEST(MatmulTriangleTest, RefusedWhereItCannotHold) {
  MatmulDesc d = descOf({T::lhs_lower, 8, 8, false, false, 1});
  d.lhsShape = {1, 8, 6};
  d.rhsShape = {1, 6, 8};
  absl::StatusOr<MatmulGeometry> g = analyzeMatmul(d);
  EXPECT_THAT(std::string(g.status().message()),
              testing::HasSubstr(
                  "triangle lhs_lower needs a square op(lhs); it is 8x6"));
  d = descOf({T::out_lower, 8, 8, false, false, 1});
  d.hasBias = true;
  d.biasShape = {8};
  g = analyzeMatmul(d);
  EXPECT_THAT(std::string(g.status().message()),
              testing::HasSubstr("triangle out_lower goes with no bias"));
}

} // namespace
