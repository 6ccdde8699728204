//===- MatmulShapes.cpp - matmul shapes, triangles and the reference -----===//
//
// The backend-independent half of runtime/Exec/Matmul.h: analyzeMatmul
// (the checks every matmul step passes at parse time), the triangle blocks
// both executors split a causal product by, and referenceMatmul, the
// double-precision twin the backends are tested against. Matmul.cpp is
// the oneDNN backend; CudaExecutor.cpp uses this half too.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/Matmul.h"

#include "runtime/Support/Status.h"

#include "abi/HalfFloat.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <cmath>
#include <string>
#include <tuple>

using namespace sinter::exec;
namespace sabi = sinter::abi;

std::string sinter::exec::shapeText(const std::vector<int64_t> &shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

/// Element `i` of a buffer of `type` (f32, bf16 or f16), widened.
static double loadElement(sabi::DType type, const void *data, int64_t i) {
  switch (type) {
  case sabi::ElementType::bf16:
    return sinter::half::bf16BitsToFloat(static_cast<const uint16_t *>(data)[i]);
  case sabi::ElementType::f16:
    return sinter::half::f16BitsToFloat(static_cast<const uint16_t *>(data)[i]);
  default:
    return static_cast<const float *>(data)[i];
  }
}

/// Rounds `value` to `type` into element `i`. Half types round from f32:
/// the f32 rounding of a double is exact for the f32 ops this models.
static void storeElement(sabi::DType type, void *data, int64_t i,
                         double value) {
  float f = static_cast<float>(value);
  switch (type) {
  case sabi::ElementType::bf16:
    static_cast<uint16_t *>(data)[i] = sinter::half::floatToBf16Bits(f);
    return;
  case sabi::ElementType::f16:
    static_cast<uint16_t *>(data)[i] = sinter::half::floatToF16Bits(f);
    return;
  default:
    static_cast<float *>(data)[i] = f;
  }
}

absl::StatusOr<MatmulGeometry>
sinter::exec::analyzeMatmul(const MatmulDesc &desc) {
  const auto &lhs = desc.lhsShape, &rhs = desc.rhsShape, &out = desc.outShape;
  if (desc.dtype != sabi::ElementType::f32 &&
      desc.dtype != sabi::ElementType::bf16 &&
      desc.dtype != sabi::ElementType::f16)
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrFormat("matmul of %s; needs f32, bf16 or f16",
                                     sabi::dtypeName(desc.dtype)));
  if (desc.outType != desc.dtype && (desc.outType != sabi::ElementType::f32 ||
                                     desc.dtype == sabi::ElementType::f32))
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrFormat("matmul of %s into %s; out has the operands' type, or "
                        "f32 from bf16 or f16",
                        sabi::dtypeName(desc.dtype),
                        sabi::dtypeName(desc.outType)));
  for (auto [what, shape] :
       {std::pair{"lhs", &lhs}, {"rhs", &rhs}, {"out", &out}})
    if (shape->size() < 2)
      return sinter::InvalidArgumentError(
          SINTER_HERE, absl::StrFormat("%s has rank %d; matmul needs rank >= 2",
                                       what, shape->size()));
  size_t lr = lhs.size(), rr = rhs.size();
  MatmulGeometry g;
  g.m = desc.transposeLhs ? lhs[lr - 1] : lhs[lr - 2];
  g.k = desc.transposeLhs ? lhs[lr - 2] : lhs[lr - 1];
  int64_t rhsK = desc.transposeRhs ? rhs[rr - 1] : rhs[rr - 2];
  g.n = desc.transposeRhs ? rhs[rr - 2] : rhs[rr - 1];
  if (rhsK != g.k)
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrFormat("rhs %s gives K=%d but lhs %s gives K=%d",
                        shapeText(rhs), rhsK, shapeText(lhs), g.k));
  size_t batchRank = std::max(lr, rr) - 2;
  g.lhsBatch.assign(batchRank, 1);
  g.rhsBatch.assign(batchRank, 1);
  std::copy(lhs.begin(), lhs.end() - 2,
            g.lhsBatch.begin() + (batchRank - (lr - 2)));
  std::copy(rhs.begin(), rhs.end() - 2,
            g.rhsBatch.begin() + (batchRank - (rr - 2)));
  std::vector<int64_t> expected;
  for (size_t i = 0; i < batchRank; ++i) {
    int64_t l = g.lhsBatch[i], r = g.rhsBatch[i];
    if (l != r && l != 1 && r != 1)
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrFormat(
              "batch axis %d: lhs %s and rhs %s do not broadcast (%d vs %d)", i,
              shapeText(lhs), shapeText(rhs), l, r));
    expected.push_back(l == 1 ? r : l);
  }
  g.outBatch = expected;
  if (out.size() != batchRank + 2)
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrFormat("out %s has rank %d; expected rank %d", shapeText(out),
                        out.size(), batchRank + 2));
  expected.push_back(g.m);
  expected.push_back(g.n);
  if (expected != out)
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrFormat("out has shape %s; expected %s",
                                     shapeText(out), shapeText(expected)));
  if (desc.hasBias && desc.biasShape != std::vector<int64_t>{g.n})
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrFormat("bias has shape %s; expected [%d]",
                                     shapeText(desc.biasShape), g.n));
  const bool dgelu = desc.activation == sabi::MatmulStep::dgelu_tanh;
  if (desc.hasAux && desc.activation != sabi::MatmulStep::gelu_tanh && !dgelu)
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrFormat("aux goes with gelu_tanh or dgelu_tanh, not %s",
                        sabi::activationName(desc.activation)));
  if (dgelu && (!desc.hasAux || desc.hasBias))
    return sinter::InvalidArgumentError(
        SINTER_HERE, "dgelu_tanh needs aux (the activation's input) and no "
                     "bias");
  if (desc.hasBiasGrad && !dgelu)
    return sinter::InvalidArgumentError(
        SINTER_HERE, "bias_grad goes with dgelu_tanh only");
  if (desc.triangle != sabi::MatmulStep::full) {
    // The triangle lies over two axes of one square matrix.
    const auto t = desc.triangle;
    const bool onLhs = t == sabi::MatmulStep::lhs_lower ||
                       t == sabi::MatmulStep::lhs_upper,
               onRhs = t == sabi::MatmulStep::rhs_lower ||
                       t == sabi::MatmulStep::rhs_upper;
    const auto [what, rows, cols] = onLhs   ? std::tuple{"op(lhs)", g.m, g.k}
                                    : onRhs ? std::tuple{"op(rhs)", g.k, g.n}
                                            : std::tuple{"out", g.m, g.n};
    if (rows != cols)
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrFormat("triangle %s needs a square %s; it is %dx%d",
                          sabi::triangleName(t), what, rows, cols));
    if (desc.hasBias || desc.hasAux ||
        desc.activation != sabi::MatmulStep::none)
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrFormat("triangle %s goes with no bias, aux or activation",
                          sabi::triangleName(t)));
  }
  for (int64_t d : g.outBatch)
    g.batchCount *= d;
  return g;
}

int64_t sinter::exec::defaultTriangleBlockRows(int64_t size) {
  return std::max<int64_t>(64, (size / 8 + 15) / 16 * 16);
}

int64_t sinter::exec::triangleSize(const MatmulDesc &desc,
                                   const MatmulGeometry &g) {
  return desc.triangle == sabi::MatmulStep::rhs_lower ||
                 desc.triangle == sabi::MatmulStep::rhs_upper
             ? g.n
             : g.m;
}

std::vector<TriangleBlock>
sinter::exec::triangleBlocks(const MatmulDesc &desc, const MatmulGeometry &g,
                             int64_t rows) {
  using T = sabi::MatmulStep;
  const T::Triangle t = desc.triangle;
  const int64_t size = triangleSize(desc, g);
  if (t == T::full || rows < 1)
    return {{0, g.m, 0, g.k, 0, g.n, g.n}};
  std::vector<TriangleBlock> blocks;
  for (int64_t s = 0; s < size; s += rows) {
    const int64_t e = std::min(size, s + rows);
    TriangleBlock b{0, g.m, 0, g.k, 0, g.n, g.n};
    switch (t) {
    case T::out_lower: // only columns <= the block's last row are read
      std::tie(b.r0, b.r1, b.c1, b.zeroFrom) = std::tuple{s, e, e, e};
      break;
    case T::lhs_lower: // op(lhs)[i, k] = 0 for k > i
      std::tie(b.r0, b.r1, b.k1) = std::tuple{s, e, e};
      break;
    case T::lhs_upper: // op(lhs)[i, k] = 0 for k < i
      std::tie(b.r0, b.r1, b.k0) = std::tuple{s, e, s};
      break;
    case T::rhs_lower: // op(rhs)[k, j] = 0 for j > k
      std::tie(b.c0, b.c1, b.k0) = std::tuple{s, e, s};
      break;
    case T::rhs_upper: // op(rhs)[k, j] = 0 for j < k
      std::tie(b.c0, b.c1, b.k1) = std::tuple{s, e, e};
      break;
    default:
      break;
    }
    blocks.push_back(b);
  }
  return blocks;
}

std::pair<int64_t, int64_t> MatmulGeometry::batchOffsets(int64_t b) const {
  int64_t lhsOff = 0, rhsOff = 0, lhsStride = 1, rhsStride = 1;
  for (size_t i = outBatch.size(); i-- > 0;) {
    int64_t idx = b % outBatch[i];
    b /= outBatch[i];
    if (lhsBatch[i] != 1)
      lhsOff += idx * lhsStride;
    if (rhsBatch[i] != 1)
      rhsOff += idx * rhsStride;
    lhsStride *= lhsBatch[i];
    rhsStride *= rhsBatch[i];
  }
  return {lhsOff, rhsOff};
}

static double activate(Activation act, double x) {
  switch (act) {
  case sabi::MatmulStep::none:
    return x;
  case sabi::MatmulStep::relu:
    return x > 0 ? x : 0;
  case sabi::MatmulStep::gelu_erf:
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  case sabi::MatmulStep::gelu_tanh:
    return 0.5 * x *
           (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  return x;
}

absl::Status sinter::exec::referenceMatmul(const MatmulDesc &desc,
                                           const void *lhs, const void *rhs,
                                           const void *bias, void *out) {
  SINTER_ASSIGN_OR_RETURN(const MatmulGeometry g, analyzeMatmul(desc));
  const int64_t M = g.m, K = g.k, N = g.n;
  const sabi::DType t = desc.dtype;
  for (int64_t b = 0; b < g.batchCount; ++b) {
    auto [lhsOff, rhsOff] = g.batchOffsets(b);
    const int64_t a = lhsOff * M * K; // (M, K) or (K, M)
    const int64_t w = rhsOff * K * N; // (K, N) or (N, K)
    const int64_t o = b * M * N;      // (M, N)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < K; ++p) {
          double x = loadElement(
              t, lhs, a + (desc.transposeLhs ? p * M + i : i * K + p));
          double y = loadElement(
              t, rhs, w + (desc.transposeRhs ? j * K + p : p * N + j));
          acc += x * y;
        }
        double v = static_cast<double>(desc.alpha) * acc;
        if (desc.hasBias)
          v += loadElement(desc.outType, bias, j);
        storeElement(desc.outType, out, o + i * N + j,
                     activate(desc.activation, v));
      }
  }
  return absl::OkStatus();
}
