// cublaslt_gelu_forms: what cuBLASLt's tanh-GELU training epilogues round
// where, measured on a GPU (scripts/gpu-check.sh, step 5).
//
// The CUDA target fuses GELU_AUX_BIAS and DGELU_BGRAD for f32 programs only
// (docs/Cuda.md): under bf16 the IR rounds a linear layer's sum before the
// GELU and keeps bias gradients in f32, and cublasLt.h does not say where
// the library rounds. This program answers that for a later change. It runs
// both forms in f32 and in bf16 (f32 compute) on operands whose products
// and sums are exact in f32 (multiples of 1/8 and 1/64), so the f32 sum q
// is known exactly and every hypothesis below is a definite value; for each
// output it counts the elements each hypothesis matches exactly and the
// largest difference from it:
//
//   GELU_AUX_BIAS  aux: q | rn(q)            D: rn(gelu(q)) | rn(gelu(rn(q)))
//   DGELU_BGRAD    D:   rn(P g'(aux)) | rn(rn(P) g'(aux))
//                  bias gradient: rn(sum of P g'(aux)) | rn(sum of D) |
//                                 rn(sum of P)
//
// where P is the product, rn rounds to the output type (nearest even), and
// gelu, g' are the tanh form in double. Host code only (cuBLASLt and the
// runtime API): built by `gpu-check.sh prepare` with the toolkit here,
// -I the source root for abi/Gelu.h, the definitions the executor uses.
//
// Usage: cublaslt_gelu_forms   (prints a table; exits 1 on a CUDA error)

#include "abi/Gelu.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

constexpr int kM = 64, kK = 16, kN = 64; // out[M,N] = lhs[M,K] @ rhs[K,N]

#define CHECK_CUDA(call)                                                       \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      std::printf("error: %s: %s\n", #call, cudaGetErrorString(e_));           \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)
#define CHECK_LT(call)                                                         \
  do {                                                                         \
    cublasStatus_t s_ = (call);                                                \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                         \
      std::printf("error: %s: %s\n", #call, cublasLtGetStatusString(s_));      \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

double gelu(double x) { return sinter::gelu::value(x, /*tanhForm=*/true); }
double geluGrad(double x) {
  return sinter::gelu::derivative(x, /*tanhForm=*/true);
}

/// bf16 round to nearest even, and back.
uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
float fromBf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Type {
  const char *name;
  cudaDataType_t cuda;
  size_t bytes;
  /// rn: the value rounded to this type (as a double).
  std::function<double(double)> rn;
};

/// Device array of `n` values of `t`, uploaded from doubles.
void *upload(const Type &t, const std::vector<double> &v) {
  std::vector<char> host(v.size() * t.bytes);
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.bytes == 4) {
      float f = static_cast<float>(v[i]);
      std::memcpy(&host[i * 4], &f, 4);
    } else {
      uint16_t h = toBf16(static_cast<float>(v[i]));
      std::memcpy(&host[i * 2], &h, 2);
    }
  }
  void *d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, host.size()));
  CHECK_CUDA(cudaMemcpy(d, host.data(), host.size(), cudaMemcpyHostToDevice));
  return d;
}
std::vector<double> download(const Type &t, const void *d, size_t n) {
  std::vector<char> host(n * t.bytes);
  CHECK_CUDA(cudaMemcpy(host.data(), d, host.size(), cudaMemcpyDeviceToHost));
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (t.bytes == 4) {
      float f;
      std::memcpy(&f, &host[i * 4], 4);
      v[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, &host[i * 2], 2);
      v[i] = fromBf16(h);
    }
  }
  return v;
}

/// One call: D (N x M column-major, our out[M,N]) = epilogue(rhs^T-less
/// product), as the executor lays a step out.
void matmul(cublasLtHandle_t lt, const Type &t, cublasLtEpilogue_t epilogue,
            const void *lhs, const void *rhs, void *out, const void *bias,
            void *aux) {
  cublasLtMatmulDesc_t desc;
  CHECK_LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                          &epilogue, sizeof(epilogue)));
  CHECK_LT(cublasLtMatmulDescSetAttribute(
      desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  int32_t biasType = t.cuda;
  CHECK_LT(cublasLtMatmulDescSetAttribute(
      desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType, sizeof(biasType)));
  int64_t ld = kN;
  CHECK_LT(cublasLtMatmulDescSetAttribute(
      desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
  CHECK_LT(cublasLtMatmulDescSetAttribute(
      desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)));
  cublasLtMatrixLayout_t a, b, d;
  CHECK_LT(cublasLtMatrixLayoutCreate(&a, t.cuda, kN, kK, kN));
  CHECK_LT(cublasLtMatrixLayoutCreate(&b, t.cuda, kK, kM, kK));
  CHECK_LT(cublasLtMatrixLayoutCreate(&d, t.cuda, kN, kM, kN));
  cublasLtMatmulPreference_t pref;
  CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = 0;
  CHECK_LT(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  CHECK_LT(cublasLtMatmulAlgoGetHeuristic(lt, desc, a, b, d, d, pref, 1,
                                          &result, &found));
  if (!found) {
    std::printf("error: no algorithm for %s epilogue %d\n", t.name,
                static_cast<int>(epilogue));
    std::exit(1);
  }
  float alpha = 1, beta = 0;
  CHECK_LT(cublasLtMatmul(lt, desc, &alpha, rhs, a, lhs, b, &beta, out, d,
                          out, d, &result.algo, nullptr, 0, nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(d);
  cublasLtMatmulDescDestroy(desc);
}

/// "hypothesis: exact k/n, max |diff| x".
void report(const char *what, const std::vector<double> &got,
            const std::vector<std::pair<const char *, std::vector<double>>>
                &hypotheses) {
  std::printf("  %s\n", what);
  for (const auto &[name, want] : hypotheses) {
    size_t exact = 0;
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      exact += got[i] == want[i];
      worst = std::fmax(worst, std::fabs(got[i] - want[i]));
    }
    std::printf("    %-28s exact %4zu/%zu  max |diff| %.3g\n", name, exact,
                got.size(), worst);
  }
}

} // namespace

int main() {
  int devices = 0;
  CHECK_CUDA(cudaGetDeviceCount(&devices));
  cublasLtHandle_t lt;
  CHECK_LT(cublasLtCreate(&lt));
  std::printf("cuBLASLt %zu\n", cublasLtGetVersion());
  // Multiples of 1/8 in [-1/2, 1/2] (exact in bf16): products are multiples
  // of 1/64, sums of 16 exact in f32 but not always in bf16.
  std::vector<double> lhs(kM * kK), rhs(kK * kN), bias(kN);
  for (int i = 0; i < kM * kK; ++i)
    lhs[i] = ((i * 7 + 3) % 9 - 4) / 8.0;
  for (int i = 0; i < kK * kN; ++i)
    rhs[i] = ((i * 5 + 1) % 9 - 4) / 8.0;
  for (int n = 0; n < kN; ++n)
    bias[n] = ((n * 3) % 9 - 4) / 16.0;
  std::vector<double> p(kM * kN), q(kM * kN);
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < kN; ++n) {
      double s = 0;
      for (int k = 0; k < kK; ++k)
        s += lhs[m * kK + k] * rhs[k * kN + n];
      p[m * kN + n] = s;
      q[m * kN + n] = s + bias[n];
    }

  const Type types[] = {
      {"f32", CUDA_R_32F, 4, [](double v) { return double(float(v)); }},
      {"bf16", CUDA_R_16BF, 2,
       [](double v) { return double(fromBf16(toBf16(float(v)))); }}};
  for (const Type &t : types) {
    std::printf("%s operands, out, bias and aux; f32 compute\n", t.name);
    void *dl = upload(t, lhs), *dr = upload(t, rhs), *db = upload(t, bias);
    std::vector<double> zeros(kM * kN, 0.0), zn(kN, 0.0);
    void *out = upload(t, zeros), *aux = upload(t, zeros),
         *dout = upload(t, zeros), *dbias = upload(t, zn);
    matmul(lt, t, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, dl, dr, out, db, aux);
    std::vector<double> gotOut = download(t, out, kM * kN),
                        gotAux = download(t, aux, kM * kN);
    std::vector<double> auxQ(q), auxRn(q.size()), outQ(q.size()),
        outRnQ(q.size());
    for (size_t i = 0; i < q.size(); ++i) {
      auxRn[i] = t.rn(q[i]);
      outQ[i] = t.rn(gelu(q[i]));
      outRnQ[i] = t.rn(gelu(t.rn(q[i])));
    }
    std::printf(" GELU_AUX_BIAS\n");
    report("aux", gotAux, {{"q (unrounded)", auxQ}, {"rn(q)", auxRn}});
    report("D", gotOut,
           {{"rn(gelu(q))", outQ}, {"rn(gelu(rn(q)))", outRnQ}});

    // DGELU_BGRAD on the same product, reading the aux it wrote.
    matmul(lt, t, CUBLASLT_EPILOGUE_DGELU_BGRAD, dl, dr, dout, dbias, aux);
    std::vector<double> gotD = download(t, dout, kM * kN),
                        gotBias = download(t, dbias, kN);
    std::vector<double> dExact(q.size()), dRnP(q.size());
    std::vector<double> sumExact(kN, 0.0), sumD(kN, 0.0), sumP(kN, 0.0);
    for (size_t i = 0; i < q.size(); ++i) {
      double g = geluGrad(gotAux[i]);
      double exact = p[i] * g;
      dExact[i] = t.rn(exact);
      dRnP[i] = t.rn(t.rn(p[i]) * g);
      sumExact[i % kN] += exact;
      sumD[i % kN] += gotD[i];
      sumP[i % kN] += p[i];
    }
    for (int n = 0; n < kN; ++n) {
      sumExact[n] = t.rn(sumExact[n]);
      sumD[n] = t.rn(sumD[n]);
      sumP[n] = t.rn(sumP[n]);
    }
    std::printf(" DGELU_BGRAD\n");
    report("D", gotD,
           {{"rn(P g'(aux))", dExact}, {"rn(rn(P) g'(aux))", dRnP}});
    report("bias gradient", gotBias,
           {{"rn(sum P g'(aux))", sumExact},
            {"rn(sum D)", sumD},
            {"rn(sum P)", sumP}});
    for (void *ptr : {dl, dr, db, out, aux, dout, dbias})
      cudaFree(ptr);
  }
  cublasLtDestroy(lt);
  return 0;
}
