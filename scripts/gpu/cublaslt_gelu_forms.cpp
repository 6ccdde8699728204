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

/// cuBLASLt's scratch for every call: 32 MiB, what the executor gives each
/// matmul on Hopper. (Reductions across tiles, a bias gradient's, may need
/// it: without one a form can be "not supported".)
constexpr size_t kWorkspace = size_t(32) << 20;
void *workspace = nullptr;

struct Call {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Call() {
    if (pref)
      cublasLtMatmulPreferenceDestroy(pref);
    for (cublasLtMatrixLayout_t l : {a, b, d})
      if (l)
        cublasLtMatrixLayoutDestroy(l);
    if (desc)
      cublasLtMatmulDescDestroy(desc);
  }
};

/// The descriptors of D (N x M column-major, our out[M,N]) = epilogue(A B),
/// A the rhs (N x K, or K x N read transposed), B the lhs (K x M, or M x K
/// read transposed), as the executor lays a step out; the heuristic's
/// status and first algorithm.
cublasStatus_t describe(cublasLtHandle_t lt, const Type &t,
                        cublasLtEpilogue_t epilogue, bool transA, bool transB,
                        size_t workspaceBytes, const void *bias, void *aux,
                        Call &c, cublasLtMatmulHeuristicResult_t &result,
                        int &found) {
  CHECK_LT(cublasLtMatmulDescCreate(&c.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                    opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  CHECK_LT(cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                          &opA, sizeof(opA)));
  CHECK_LT(cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                          &opB, sizeof(opB)));
  CHECK_LT(cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                          &epilogue, sizeof(epilogue)));
  CHECK_LT(cublasLtMatmulDescSetAttribute(
      c.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  int32_t biasType = t.cuda;
  CHECK_LT(cublasLtMatmulDescSetAttribute(
      c.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType, sizeof(biasType)));
  int64_t ld = kN;
  CHECK_LT(cublasLtMatmulDescSetAttribute(
      c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
  CHECK_LT(cublasLtMatmulDescSetAttribute(
      c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)));
  CHECK_LT(transA ? cublasLtMatrixLayoutCreate(&c.a, t.cuda, kK, kN, kK)
                  : cublasLtMatrixLayoutCreate(&c.a, t.cuda, kN, kK, kN));
  CHECK_LT(transB ? cublasLtMatrixLayoutCreate(&c.b, t.cuda, kM, kK, kM)
                  : cublasLtMatrixLayoutCreate(&c.b, t.cuda, kK, kM, kK));
  CHECK_LT(cublasLtMatrixLayoutCreate(&c.d, t.cuda, kN, kM, kN));
  CHECK_LT(cublasLtMatmulPreferenceCreate(&c.pref));
  CHECK_LT(cublasLtMatmulPreferenceSetAttribute(
      c.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes,
      sizeof(workspaceBytes)));
  found = 0;
  return cublasLtMatmulAlgoGetHeuristic(lt, c.desc, c.a, c.b, c.d, c.d, c.pref,
                                        1, &result, &found);
}

/// One call, not transposed, with the workspace; false (and a line) if the
/// library has no algorithm for it.
bool matmul(cublasLtHandle_t lt, const Type &t, cublasLtEpilogue_t epilogue,
            const void *lhs, const void *rhs, void *out, const void *bias,
            void *aux) {
  Call c;
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t s = describe(lt, t, epilogue, false, false, kWorkspace, bias,
                              aux, c, result, found);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    std::printf("  epilogue %d in %s: no algorithm (%s)\n",
                static_cast<int>(epilogue), t.name,
                cublasLtGetStatusString(s));
    return false;
  }
  float alpha = 1, beta = 0;
  CHECK_LT(cublasLtMatmul(lt, c.desc, &alpha, rhs, c.a, lhs, c.b, &beta, out,
                          c.d, out, c.d, &result.algo, workspace, kWorkspace,
                          nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  return true;
}

/// Which forms the heuristic offers an algorithm for, by type, transposes
/// and workspace: what the CUDA target may fuse.
void supportTable(cublasLtHandle_t lt, const Type *types, int numTypes) {
  const struct {
    const char *name;
    cublasLtEpilogue_t e;
  } forms[] = {{"GELU_BIAS", CUBLASLT_EPILOGUE_GELU_BIAS},
               {"GELU_AUX", CUBLASLT_EPILOGUE_GELU_AUX},
               {"GELU_AUX_BIAS", CUBLASLT_EPILOGUE_GELU_AUX_BIAS},
               {"DGELU", CUBLASLT_EPILOGUE_DGELU},
               {"DGELU_BGRAD", CUBLASLT_EPILOGUE_DGELU_BGRAD},
               {"BGRADA", CUBLASLT_EPILOGUE_BGRADA},
               {"BGRADB", CUBLASLT_EPILOGUE_BGRADB}};
  std::printf("supported (heuristic found an algorithm): type form "
              "[opA opB, workspace: yes/no]\n");
  void *bias = nullptr, *aux = nullptr;
  CHECK_CUDA(cudaMalloc(&bias, kM * kN * 4));
  CHECK_CUDA(cudaMalloc(&aux, kM * kN * 4));
  for (int ti = 0; ti < numTypes; ++ti)
    for (const auto &f : forms) {
      std::string line;
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (size_t ws : {size_t(0), kWorkspace}) {
            Call c;
            cublasLtMatmulHeuristicResult_t result{};
            int found = 0;
            cublasStatus_t s = describe(lt, types[ti], f.e, ta, tb, ws, bias,
                                        aux, c, result, found);
            char cell[64];
            std::snprintf(cell, sizeof(cell), " %c%c,%s:%s", ta ? 'T' : 'N',
                          tb ? 'T' : 'N', ws ? "32M" : "0",
                          s == CUBLAS_STATUS_SUCCESS && found ? "yes" : "no");
            line += cell;
          }
      std::printf("  %-5s %-14s%s\n", types[ti].name, f.name, line.c_str());
    }
  cudaFree(bias);
  cudaFree(aux);
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
  CHECK_CUDA(cudaMalloc(&workspace, kWorkspace));
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
  supportTable(lt, types, 2);
  for (const Type &t : types) {
    std::printf("%s operands, out, bias and aux; f32 compute\n", t.name);
    void *dl = upload(t, lhs), *dr = upload(t, rhs), *db = upload(t, bias);
    std::vector<double> zeros(kM * kN, 0.0), zn(kN, 0.0);
    void *out = upload(t, zeros), *aux = upload(t, zeros),
         *dout = upload(t, zeros), *dbias = upload(t, zn);
    if (!matmul(lt, t, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, dl, dr, out, db, aux))
      continue;
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
    if (!matmul(lt, t, CUBLASLT_EPILOGUE_DGELU_BGRAD, dl, dr, dout, dbias,
                aux))
      continue;
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
  cudaFree(workspace);
  cublasLtDestroy(lt);
  return 0;
}
