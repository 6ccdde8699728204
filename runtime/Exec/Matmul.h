//===- Matmul.h - batched matmul steps through oneDNN ---------------------===//
//
// The `matmul` step of a step program (docs/StepProgram.md):
//
//   out = activation(alpha * op(lhs) @ op(rhs) + bias)
//
//   lhs  [lb..., M, K]  (stored [lb..., K, M] when transposeLhs)
//   rhs  [rb..., K, N]  (stored [rb..., N, K] when transposeRhs)
//   bias [N]            optional, added to every row
//   out  [ob..., M, N]  ob = numpy broadcast of lb and rb (ranks aligned by
//                       leading 1s), with out's rank = max(lhs, rhs rank)
//
// lhs and rhs have one element type: f32, or bf16 / f16 for mixed
// precision (docs/MixedPrecision.md), where the products are accumulated in
// f32 and the epilogue runs in f32 before out is rounded once. out and bias
// have the operands' type, or f32 from half operands (a weight gradient:
// the f32 sum written as it is).
//
// Three layers:
//
//   - analyzeMatmul checks a shape description and derives M, K, N and the
//     aligned batch shapes. The step-program parser uses it, so every matmul
//     that reaches the backend is already known to be consistent.
//   - MatmulBackend turns a description plus four fixed pointers into a
//     BoundMatmul: oneDNN primitive(s) and memory objects created once, at
//     program load, so the step loop only calls run(). Primitives are cached
//     by a key of dims, strides and flags (creating one costs ~1 ms; a
//     transformer repeats the same few shapes per layer).
//   - referenceMatmul: naive loops in double, the twin the tests compare
//     the backend against (STYLE.md rule 10).
//
// No oneDNN type appears here: callers (and tests compiled with LLVM's
// flags, e.g. -fno-exceptions) never see dnnl.hpp.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_EXEC_MATMUL_H
#define SINTER_RUNTIME_EXEC_MATMUL_H

#include "abi/Abi.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sinter::exec {

/// The epilogue after the product (the ABI's, abi::MatmulStep).
using Activation = abi::MatmulStep::Activation;

/// One matmul as the step program states it: shapes as stored.
struct MatmulDesc {
  std::vector<int64_t> lhsShape, rhsShape, outShape;
  bool transposeLhs = false;
  bool transposeRhs = false;
  float alpha = 1.0f;
  bool hasBias = false;
  std::vector<int64_t> biasShape; // meaningful only with hasBias
  Activation activation = abi::MatmulStep::none;
  /// A triangle of the product that need not be computed: out's strict
  /// upper one is never read (out_lower), or op(lhs) / op(rhs) is 0 on one
  /// side of its diagonal (abi::MatmulStep::Triangle). The backend splits
  /// such a matmul into blocks along the diagonal and skips the ones that
  /// add only zeros or write only what is never read.
  abi::MatmulStep::Triangle triangle = abi::MatmulStep::full;
  /// The activation's input, shaped as out (abi::MatmulStep.aux): written
  /// with gelu_tanh, read with dgelu_tanh. And dgelu_tanh's bias gradient,
  /// [N]. cuBLASLt's training epilogues: the CUDA executor has them, the
  /// oneDNN backend refuses them.
  bool hasAux = false;
  bool hasBiasGrad = false;
  /// The element type of lhs and rhs: f32, bf16 or f16.
  abi::DType dtype = abi::ElementType::f32;
  /// The element type of out and bias: dtype, or f32 when dtype is half.
  abi::DType outType = abi::ElementType::f32;
};

/// What analyzeMatmul derives. The batch vectors all have the out's batch
/// rank; lhsBatch/rhsBatch are padded with leading 1s.
struct MatmulGeometry {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> outBatch, lhsBatch, rhsBatch;
  int64_t batchCount = 1; // product of outBatch

  /// Offsets (in matrices) of lhs and rhs for out batch index `b`,
  /// honouring broadcast axes.
  std::pair<int64_t, int64_t> batchOffsets(int64_t b) const;
};

/// "[2,3,4]": a shape as messages and plans print it.
std::string shapeText(const std::vector<int64_t> &shape);

/// Checks the element type, ranks (>= 2), K, batch broadcasting, out's
/// shape and bias [N], and that aux and the bias gradient go with the
/// activations that take them.
/// Messages name the operand ("rhs K=12 does not match lhs K=13") and leave
/// the step index to the caller.
absl::StatusOr<MatmulGeometry> analyzeMatmul(const MatmulDesc &desc);

/// The reference: every output element accumulated in double from the
/// operands as stored, then alpha, bias and the activation in double,
/// rounded to desc.outType once. `bias` may be null when !desc.hasBias.
absl::Status referenceMatmul(const MatmulDesc &desc, const void *lhs,
                             const void *rhs, const void *bias, void *out);

/// Rows (or columns) per block of a matmul that skips a triangle, for a
/// size x size matrix: about an eighth of it, a multiple of 16 and at least
/// 64, so each block stays a matmul a library runs near its peak. The
/// blocks on the diagonal compute their half-triangle whole; the share of
/// products done is (blocks + 1) / (2 blocks): 5/8 at 256 rows, 9/16 at
/// 1024.
int64_t defaultTriangleBlockRows(int64_t size);

/// One block of a matmul that skips a triangle: out's rows [r0, r1) and
/// columns [c0, c1), from the stretch [k0, k1) of K whose products are not
/// all zero; with out_lower, its rows are written as 0 from column
/// `zeroFrom` on (n: nowhere).
struct TriangleBlock {
  int64_t r0, r1, k0, k1, c0, c1, zeroFrom;
};

/// The length of the axis desc's triangle is split along: out's rows
/// (out_lower, lhs_lower, lhs_upper) or columns (rhs_lower, rhs_upper).
int64_t triangleSize(const MatmulDesc &desc, const MatmulGeometry &g);

/// desc's triangle as blocks of `rows` rows (or columns: rhs_lower and
/// rhs_upper) along the diagonal, the last one short; the whole product as
/// one block when desc has none. Both executors split by it.
std::vector<TriangleBlock> triangleBlocks(const MatmulDesc &desc,
                                          const MatmulGeometry &g,
                                          int64_t rows);

/// A matmul bound to its buffers: run() computes it (on the OpenMP threads
/// oneDNN sees, omp_get_max_threads()).
class BoundMatmul {
public:
  virtual ~BoundMatmul() = default;
  virtual absl::Status run() = 0;
  /// How the backend split the matmul, for tests and profiles, e.g.
  /// "2d M=7 K=13 N=5" or "loop 6 x 2d".
  virtual std::string_view plan() const = 0;
};

struct MatmulBackendOptions {
  /// Never hand oneDNN a batch of rank > 1 with broadcasting; loop over the
  /// batch with one 2-d primitive instead. The backend falls back to this
  /// by itself when oneDNN rejects a batched primitive; tests force it so
  /// the fallback is exercised on a library that never rejects.
  bool forceBatchLoop = false;
  /// Rows (or columns) per block of a matmul that skips a triangle
  /// (MatmulDesc::triangle); 0: about an eighth of the matrix, at least 64.
  /// Tests set a few rows so that small models split too (the binary's
  /// SINTER_TRIANGLE_BLOCK_ROWS).
  int64_t triangleBlockRows = 0;
};

/// Owns the oneDNN CPU engine and stream and the primitive cache. Not
/// thread-safe: one executor, one backend.
class MatmulBackend {
public:
  static absl::StatusOr<std::unique_ptr<MatmulBackend>>
  create(const MatmulBackendOptions &options = {});
  ~MatmulBackend();

  /// Creates (or reuses) the primitive for `desc` and binds it to the
  /// pointers, which must stay valid for the BoundMatmul's lifetime.
  /// `bias` is ignored (may be null) when !desc.hasBias.
  absl::StatusOr<std::unique_ptr<BoundMatmul>>
  bind(const MatmulDesc &desc, const void *lhs, const void *rhs,
       const void *bias, void *out);

  /// The instruction set oneDNN dispatches to ("avx512_core_amx", ...).
  static std::string isa();

  /// Distinct primitives created so far.
  int64_t numCachedPrimitives() const;

  struct Impl;

private:
  explicit MatmulBackend(std::unique_ptr<Impl> impl);
  /// bind() with oneDNN's kernel for desc's types; fails if it has none.
  absl::StatusOr<std::unique_ptr<BoundMatmul>>
  bindNative(const MatmulDesc &desc, const MatmulGeometry &g, const void *lhs,
             const void *rhs, const void *bias, void *out);
  std::unique_ptr<Impl> impl;
};

} // namespace sinter::exec

#endif // SINTER_RUNTIME_EXEC_MATMUL_H
