//===- FakeCublasLt.cpp - the stand-in cuBLASLt --------------------------===//
//
// For tests only (FakeCuda.cpp says what the stand-in is): cuBLASLt's
// descriptors, layouts, preference and heuristic, and cublasLtMatmul,
// which checks the alignments the heuristic was told and, where kernels
// compute, computes the product by cuBLASLt's column-major definition and
// scribbles over the workspace.
//
//===----------------------------------------------------------------------===//

#include "test/unit/runtime/FakeCuda.h"

#include "abi/Gelu.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

namespace fake {
namespace {

// A matmul's descriptor and its operands' layouts, as the fake computes
// them (the opaque handles point at these).
struct Desc {
  cublasOperation_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
  int32_t biasType = -1;
  const void *aux = nullptr; // GELU_AUX writes it, DGELU reads it
  int64_t auxLd = 0;
};

bool hasBias(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}
bool hasAux(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_GELU_AUX ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
         e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
}

/// The tanh GELU and its derivative, in double.
double geluTanh(double v) { return sinter::gelu::value(v, /*tanhForm=*/true); }
double geluTanhGrad(double x) {
  return sinter::gelu::derivative(x, /*tanhForm=*/true);
}
struct Layout {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0; // elements between a batch's matrices
};

template <typename T> bool readAttribute(T &to, const void *buf, size_t size) {
  if (size != sizeof(T))
    return false;
  std::memcpy(&to, buf, size);
  return true;
}

int64_t elementSize(cudaDataType type) { return type == CUDA_R_32F ? 4 : 2; }

/// D = alpha op(A) op(B) + beta C (+ bias per row of D), column-major, for
/// every matrix of the batch: cuBLASLt's documented semantics, summed in
/// double. The GELU training forms (cublasLt.h): GELU_AUX also stores the
/// GELU's input in the aux matrix (D's type, leading dimension AUX_LD);
/// DGELU multiplies the product by the GELU's derivative at aux, and
/// DGELU_BGRAD stores the sum of each row of that result (one value per
/// row of D: a bias gradient) at the bias pointer.
void computeMatmul(const Desc &d, float alpha, const void *a, const Layout &la,
                   const void *b, const Layout &lb, float beta, const void *c,
                   const Layout &lc, void *out, const Layout &ld) {
  const int64_t m = static_cast<int64_t>(ld.rows),
                n = static_cast<int64_t>(ld.cols);
  const int64_t k =
      static_cast<int64_t>(d.transA == CUBLAS_OP_N ? la.cols : la.rows);
  const cublasLtEpilogue_t e = d.epilogue;
  const bool bias = hasBias(e);
  const bool relu =
      e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_RELU_BIAS;
  const bool gelu =
      e == CUBLASLT_EPILOGUE_GELU || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
      e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  const bool dgelu =
      e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
  const bool bgrad = e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
  std::vector<double> rowSums(bgrad ? static_cast<size_t>(m) : 0, 0.0);
  // SINTER_FAKE_CUBLASLT_BGRAD=product: a library that summed the product
  // before the derivative instead (the executor's check must refuse it).
  const char *reading = std::getenv("SINTER_FAKE_CUBLASLT_BGRAD");
  const bool productSums = reading && std::string(reading) == "product";
  const cudaDataType biasType =
      d.biasType >= 0 ? static_cast<cudaDataType>(d.biasType) : ld.type;
  for (int32_t item = 0; item < ld.batch; ++item) {
    auto at = [item](const void *base, const Layout &l) {
      return static_cast<const char *>(base) +
             item * l.stride * elementSize(l.type);
    };
    const char *pa = at(a, la), *pb = at(b, lb), *pc = at(c, lc);
    char *pd =
        static_cast<char *>(out) + item * ld.stride * elementSize(ld.type);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          double x = loadElement(la.type, pa,
                                 d.transA == CUBLAS_OP_N ? i + p * la.ld
                                                         : p + i * la.ld);
          double y = loadElement(lb.type, pb,
                                 d.transB == CUBLAS_OP_N ? p + j * lb.ld
                                                         : j + p * lb.ld);
          sum += x * y;
        }
        double v = alpha * sum;
        if (beta != 0)
          v += beta * loadElement(lc.type, pc, i + j * lc.ld);
        if (bias)
          v += loadElement(biasType, d.bias, i);
        if (gelu && d.aux) // GELU_AUX: the GELU's input, in D's type
          storeElement(ld.type, const_cast<void *>(d.aux), i + j * d.auxLd,
                       static_cast<float>(v));
        if (relu)
          v = v > 0 ? v : 0;
        if (gelu) // cuBLASLt's GELU: the tanh form
          v = geluTanh(v);
        const double product = v;
        if (dgelu)
          v *= geluTanhGrad(loadElement(ld.type, d.aux, i + j * d.auxLd));
        storeElement(ld.type, pd, i + j * ld.ld, static_cast<float>(v));
        // The bias gradient sums what D holds.
        if (bgrad)
          rowSums[static_cast<size_t>(i)] +=
              productSums ? product : loadElement(ld.type, pd, i + j * ld.ld);
      }
  }
  for (int64_t i = 0; i < static_cast<int64_t>(rowSums.size()); ++i)
    storeElement(biasType, const_cast<void *>(d.bias), i,
                 static_cast<float>(rowSums[static_cast<size_t>(i)]));
}

} // namespace
} // namespace fake

using namespace fake;

#pragma GCC visibility push(default)
extern "C" {

// cuBLASLt. A preference's four minimum alignments (A, B, C, D; 256 unless
// set) travel in its data and then in the algorithm the heuristic returns.

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  static int handle_;
  *handle = reinterpret_cast<cublasLtHandle_t>(&handle_);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t) {
  return CUBLAS_STATUS_SUCCESS;
}
const char *cublasLtGetStatusString(cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS"
         : status == CUBLAS_STATUS_INVALID_VALUE
             ? "CUBLAS_STATUS_INVALID_VALUE (fake: a pointer is aligned "
               "less than the algorithm assumes)"
             : "fake cuBLASLt error";
}
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                        cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if ((compute != CUBLAS_COMPUTE_32F &&
       compute != CUBLAS_COMPUTE_32F_FAST_TF32) ||
      scale != CUDA_R_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(new Desc);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete reinterpret_cast<Desc *>(desc);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t handle,
                               cublasLtMatmulDescAttributes_t attr,
                               const void *buf, size_t size) {
  Desc &d = *reinterpret_cast<Desc *>(handle);
  bool ok = true;
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
    ok = readAttribute(d.transA, buf, size);
    break;
  case CUBLASLT_MATMUL_DESC_TRANSB:
    ok = readAttribute(d.transB, buf, size);
    break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    ok = readAttribute(d.epilogue, buf, size);
    break;
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    ok = readAttribute(d.bias, buf, size);
    break;
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    ok = readAttribute(d.biasType, buf, size);
    break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
    ok = readAttribute(d.aux, buf, size);
    break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
    ok = readAttribute(d.auxLd, buf, size);
    break;
  default:
    return CUBLAS_STATUS_NOT_SUPPORTED; // not modelled: a test must say so
  }
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout,
                                          cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (type != CUDA_R_32F && type != CUDA_R_16BF && type != CUDA_R_16F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (ld < static_cast<int64_t>(rows))
    return CUBLAS_STATUS_INVALID_VALUE;
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(
      new Layout{type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete reinterpret_cast<Layout *>(layout);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t handle,
                                 cublasLtMatrixLayoutAttribute_t attr,
                                 const void *buf, size_t size) {
  Layout &l = *reinterpret_cast<Layout *>(handle);
  bool ok = true;
  switch (attr) {
  case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
    ok = readAttribute(l.batch, buf, size);
    break;
  case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
    ok = readAttribute(l.stride, buf, size);
    break;
  default:
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
  *p = new cublasLtMatmulPreferenceOpaque_t{};
  for (int i = 0; i < 4; ++i)
    (*p)->data[i] = 256;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                     cublasLtMatmulPreferenceAttributes_t attr,
                                     const void *buf, size_t size) {
  int slot = attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES   ? 0
             : attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES ? 1
             : attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES ? 2
             : attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES ? 3
                                                                  : -1;
  if (slot >= 0) {
    uint32_t value = 0;
    if (size != sizeof(value))
      return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&value, buf, size);
    p->data[slot] = value;
  }
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) {
    uint64_t value = 0;
    if (size != sizeof(value))
      return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&value, buf, size);
    p->data[4] = value + 1; // 0: never set
  }
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t,
    cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
    cublasLtMatmulPreference_t preference, int requested,
    cublasLtMatmulHeuristicResult_t results[], int *count) {
  if (requested < 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  // As cuBLASLt 13.1 on an H200 (scripts/gpu/cublaslt_gelu_forms.cpp):
  // no DGELU_BGRAD algorithm without a workspace, in any layout or type.
  if (reinterpret_cast<Desc *>(desc)->epilogue ==
          CUBLASLT_EPILOGUE_DGELU_BGRAD &&
      preference->data[4] == 1)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  results[0] = cublasLtMatmulHeuristicResult_t{};
  for (int i = 0; i < 4; ++i)
    results[0].algo.data[i] = preference->data[i];
  results[0].state = CUBLAS_STATUS_SUCCESS;
  *count = 1;
  std::lock_guard<std::mutex> lock(mu);
  say("cublasLtMatmulAlgoGetHeuristic alignment A=%d B=%d C=%d D=%d",
      static_cast<int>(preference->data[0]),
      static_cast<int>(preference->data[1]),
      static_cast<int>(preference->data[2]),
      static_cast<int>(preference->data[3]));
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc,
                              const void *alpha, const void *a,
                              cublasLtMatrixLayout_t aDesc, const void *b,
                              cublasLtMatrixLayout_t bDesc, const void *beta,
                              const void *c, cublasLtMatrixLayout_t cDesc,
                              void *d, cublasLtMatrixLayout_t dDesc,
                              const cublasLtMatmulAlgo_t *algo, void *workspace,
                              size_t workspaceBytes, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu);
  const void *pointers[] = {a, b, c, d};
  for (int i = 0; i < 4; ++i)
    if (alignmentOf(pointers[i]) < algo->data[i]) {
      say("cublasLtMatmul: operand %c is %u-byte aligned, the algorithm "
          "assumes %d",
          "ABCD"[i], alignmentOf(pointers[i]), static_cast<int>(algo->data[i]));
      return CUBLAS_STATUS_INVALID_VALUE;
    }
  if (workspace && alignmentOf(workspace) < 256) {
    say("cublasLtMatmul: the workspace is %u-byte aligned; cuBLASLt wants 256",
        alignmentOf(workspace));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const Desc &dd = *reinterpret_cast<const Desc *>(desc);
  const Layout &la = *reinterpret_cast<const Layout *>(aDesc),
               &lb = *reinterpret_cast<const Layout *>(bDesc),
               &lc = *reinterpret_cast<const Layout *>(cDesc),
               &ldd = *reinterpret_cast<const Layout *>(dDesc);
  // The shapes must agree, as cuBLASLt checks them.
  uint64_t k = dd.transA == CUBLAS_OP_N ? la.cols : la.rows;
  if ((dd.transA == CUBLAS_OP_N ? la.rows : la.cols) != ldd.rows ||
      (dd.transB == CUBLAS_OP_N ? lb.rows : lb.cols) != k ||
      (dd.transB == CUBLAS_OP_N ? lb.cols : lb.rows) != ldd.cols ||
      lc.rows != ldd.rows || lc.cols != ldd.cols || la.batch != ldd.batch ||
      lb.batch != ldd.batch) {
    say("cublasLtMatmul: the operands' shapes do not agree");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  static const cublasLtEpilogue_t kModelled[] = {
      CUBLASLT_EPILOGUE_DEFAULT,       CUBLASLT_EPILOGUE_BIAS,
      CUBLASLT_EPILOGUE_RELU,          CUBLASLT_EPILOGUE_RELU_BIAS,
      CUBLASLT_EPILOGUE_GELU,          CUBLASLT_EPILOGUE_GELU_BIAS,
      CUBLASLT_EPILOGUE_GELU_AUX,      CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
      CUBLASLT_EPILOGUE_DGELU,         CUBLASLT_EPILOGUE_DGELU_BGRAD};
  if (std::find(std::begin(kModelled), std::end(kModelled), dd.epilogue) ==
      std::end(kModelled)) {
    say("cublasLtMatmul: epilogue %d is not modelled",
        static_cast<int>(dd.epilogue));
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  // The aux matrix: set, a leading dimension of at least D's rows and a
  // multiple of 8 (cublasLt.h, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD); its
  // batch stride is not modelled, so a batch is refused.
  if (hasAux(dd.epilogue) &&
      (!dd.aux || dd.auxLd < static_cast<int64_t>(ldd.rows) ||
       dd.auxLd % 8 != 0 || ldd.batch != 1)) {
    say("cublasLtMatmul: epilogue %d with aux %p, AUX_LD %lld, batch %d",
        static_cast<int>(dd.epilogue), dd.aux,
        static_cast<long long>(dd.auxLd), static_cast<int>(ldd.batch));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (dd.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD && !dd.bias) {
    say("cublasLtMatmul: DGELU_BGRAD without a bias pointer");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  // The bias has D's type (cublasLt.h, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
  // the exceptions are integer and fp8 kernels, which this never runs).
  if (dd.bias && dd.biasType >= 0 && dd.biasType != ldd.type) {
    say("cublasLtMatmul: a bias of type %d with D of type %d",
        static_cast<int>(dd.biasType), static_cast<int>(ldd.type));
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  const char *epilogue =
      dd.epilogue == CUBLASLT_EPILOGUE_BIAS        ? " BIAS"
      : dd.epilogue == CUBLASLT_EPILOGUE_RELU      ? " RELU"
      : dd.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ? " RELU_BIAS"
      : dd.epilogue == CUBLASLT_EPILOGUE_GELU      ? " GELU"
      : dd.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS ? " GELU_BIAS"
      : dd.epilogue == CUBLASLT_EPILOGUE_GELU_AUX  ? " GELU_AUX"
      : dd.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ? " GELU_AUX_BIAS"
      : dd.epilogue == CUBLASLT_EPILOGUE_DGELU         ? " DGELU"
      : dd.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD   ? " DGELU_BGRAD"
                                                       : "";
  const char *outType = ldd.type == CUDA_R_16BF ? "bf16"
                        : ldd.type == CUDA_R_16F  ? "f16"
                                                  : "f32";
  say("cublasLtMatmul S%d%s%s, out %s", idOf(stream),
      capturing ? " (captured)" : "", epilogue, outType);
  // The scalars and descriptors as they are now, as a launch would take
  // them.
  float al = *static_cast<const float *>(alpha),
        be = *static_cast<const float *>(beta);
  Desc dc = dd;
  Layout a2 = la, b2 = lb, c2 = lc, d2 = ldd;
  // The workspace is scratch the library leaves as it likes: the fake
  // fills it with all-ones bytes (a NaN in every float type) around the
  // product, so a memory plan that let it share bytes with a live value
  // shows in the numbers.
  // (Only where kernels compute too: otherwise the values the kernels
  // should have written are whatever bytes lie there.)
  if (!hostKernels())
    workspace = nullptr;
  enqueueWork([=] {
    if (workspace)
      std::memset(workspace, 0xff, workspaceBytes);
    computeMatmul(dc, al, a, a2, b, b2, be, c, c2, d, d2);
    if (workspace)
      std::memset(workspace, 0xff, workspaceBytes);
  });
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
#pragma GCC visibility pop
