//===- CudaGeluForms.cpp - cuBLASLt's GELU training forms, checked once --===//
//
// A program compiled for the CUDA target may run its tanh GELU's training
// forms as cuBLASLt epilogues (docs/Cuda.md): GELU_AUX_BIAS forward (the
// GELU's input written too) and DGELU_BGRAD backward (the product times
// the GELU's derivative at that input, and the sum of the result's rows as
// the bias gradient of the layer before the GELU). cublasLt.h describes
// both in a sentence each; the bias gradient in particular is read here as
// the sum of the DGELU result's rows. A library that computed something
// else would give silently wrong gradients, so before such a program
// trains, the executor runs both forms once on a small f32 product and
// holds the results against those definitions, computed on the host in
// double. A disagreement stops the job with the form, the element and both
// values. Written by hand: no library checks another library's epilogues.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/CudaExecutorImpl.h"

#include "abi/Gelu.h"

#include <cmath>
#include <cstring>

using namespace sinter::exec::cuda;

namespace {

// out[M,N] = lhs[M,K] @ rhs[K,N], row-major, as the executor lays a step out
// for cuBLASLt: A = rhs (N x K, column-major), B = lhs (K x M), D = N x M.
constexpr int64_t kM = 4, kK = 3, kN = 8; // N: a multiple of 8 (AUX_LD)

double geluTanh(double x) { return sinter::gelu::value(x, /*tanhForm=*/true); }
double geluTanhGrad(double x) {
  return sinter::gelu::derivative(x, /*tanhForm=*/true);
}

/// Where `got` and `want` first differ by more than 1% of the value (plus
/// 1e-3): the check is for another definition, which is off by tens of
/// percent here, not for rounding, which a fast tanh in the epilogue may
/// make a few 1e-4 of the value. As "element i: got g, want w"; "" when
/// they agree.
std::string firstDifference(const std::vector<float> &got,
                            const std::vector<double> &want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-2 * std::fabs(want[i]) + 1e-3))
      return absl::StrFormat("element %d: got %.6g, want %.6g", i, got[i],
                             want[i]);
  return "";
}

} // namespace

absl::Status CudaExecutor::checkGeluForms() {
  const std::string what = "checking cuBLASLt's GELU training epilogues";
  // The operands: small values, so that gelu' ranges over [-0.1, 1.1] and
  // the bias gradient of the DGELU result differs from that of the product.
  std::vector<float> lhs(kM * kK), rhs(kK * kN), bias(kN);
  for (int64_t i = 0; i < kM * kK; ++i)
    lhs[i] = static_cast<float>((i * 5 % 7) - 3) * 0.375f;
  for (int64_t i = 0; i < kK * kN; ++i)
    rhs[i] = static_cast<float>((i * 3 % 11) - 5) * 0.125f;
  for (int64_t n = 0; n < kN; ++n)
    bias[n] = static_cast<float>((n % 5) - 2) * 0.25f;
  // The definitions, in double from the same f32 operands.
  std::vector<double> product(kM * kN), pre(kM * kN), act(kM * kN),
      dgelu(kM * kN), biasGrad(kN, 0.0);
  for (int64_t m = 0; m < kM; ++m)
    for (int64_t n = 0; n < kN; ++n) {
      double s = 0;
      for (int64_t k = 0; k < kK; ++k)
        s += double(lhs[m * kK + k]) * rhs[k * kN + n];
      int64_t i = m * kN + n;
      product[i] = s;
      pre[i] = s + bias[n];
      act[i] = geluTanh(pre[i]);
    }
  // DGELU reads the aux the forward form wrote (f32).
  for (int64_t i = 0; i < kM * kN; ++i) {
    dgelu[i] = product[i] * geluTanhGrad(static_cast<float>(pre[i]));
    biasGrad[i % kN] += dgelu[i];
  }

  // Device bytes, each array 256-byte aligned: lhs, rhs, bias, out, aux,
  // dgelu's out, the bias gradient.
  const size_t sizes[] = {lhs.size(), rhs.size(), bias.size(),
                          size_t(kM * kN), size_t(kM * kN), size_t(kM * kN),
                          size_t(kN)};
  size_t offsets[7], total = 0;
  for (int i = 0; i < 7; ++i) {
    offsets[i] = total;
    total += (sizes[i] * sizeof(float) + 255) / 256 * 256;
  }
  CUdeviceptr base = 0;
  SINTER_CU(drv->memAlloc(&base, total), what);
  struct Free {
    const CudaDriver *drv;
    CUdeviceptr p;
    ~Free() { drv->memFree(p); }
  } freeBase{drv, base};
  auto at = [&](int i) { return base + offsets[i]; };
  CUstream stream = streams[kComputeStream];
  const std::vector<float> *inputs[] = {&lhs, &rhs, &bias};
  for (int i = 0; i < 3; ++i)
    SINTER_CU(drv->memcpyHtoDAsync(at(i), inputs[i]->data(),
                                   inputs[i]->size() * sizeof(float), stream),
              what);

  // One call of each form, made as prepareMatmul makes them.
  auto call = [&](cublasLtEpilogue_t epilogue, CUdeviceptr biasPointer,
                  CUdeviceptr out) -> absl::Status {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    struct Owner {
      const CublasLt *lt;
      cublasLtMatmulDesc_t &desc;
      cublasLtMatrixLayout_t &a, &b, &d;
      cublasLtMatmulPreference_t &pref;
      ~Owner() {
        for (cublasLtMatrixLayout_t l : {a, b, d})
          if (l)
            lt->layoutDestroy(l);
        if (desc)
          lt->descDestroy(desc);
        if (pref)
          lt->prefDestroy(pref);
      }
    } owner{lt, desc, a, b, d, pref};
    SINTER_LT(lt->descCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), what);
    SINTER_LT(lt->descSet(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                          sizeof(epilogue)),
              what);
    int32_t biasType = CUDA_R_32F;
    SINTER_LT(lt->descSet(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                          &biasPointer, sizeof(biasPointer)),
              what);
    SINTER_LT(lt->descSet(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
                          sizeof(biasType)),
              what);
    CUdeviceptr aux = at(4);
    int64_t auxLd = kN;
    SINTER_LT(lt->descSet(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                          &aux, sizeof(aux)),
              what);
    SINTER_LT(lt->descSet(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd,
                          sizeof(auxLd)),
              what);
    SINTER_LT(lt->layoutCreate(&a, CUDA_R_32F, kN, kK, kN), what);
    SINTER_LT(lt->layoutCreate(&b, CUDA_R_32F, kK, kM, kK), what);
    SINTER_LT(lt->layoutCreate(&d, CUDA_R_32F, kN, kM, kN), what);
    SINTER_LT(lt->prefCreate(&pref), what);
    size_t noWorkspace = 0;
    SINTER_LT(lt->prefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                          &noWorkspace, sizeof(noWorkspace)),
              what);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    SINTER_LT(lt->heuristic(ltHandle, desc, a, b, d, d, pref, 1, &result,
                            &found),
              what);
    if (found == 0)
      return sinter::InternalError(
          SINTER_HERE, what + ": cuBLASLt has no algorithm for the probe");
    float alpha = 1, beta = 0;
    void *dPointer = reinterpret_cast<void *>(out);
    SINTER_LT(lt->matmul(ltHandle, desc, &alpha,
                         reinterpret_cast<void *>(at(1)), a,
                         reinterpret_cast<void *>(at(0)), b, &beta, dPointer,
                         d, dPointer, d, &result.algo, nullptr, 0,
                         reinterpret_cast<cudaStream_t>(stream)),
              what);
    return absl::OkStatus();
  };
  SINTER_RETURN_IF_ERROR(call(CUBLASLT_EPILOGUE_GELU_AUX_BIAS, at(2), at(3)));
  SINTER_RETURN_IF_ERROR(call(CUBLASLT_EPILOGUE_DGELU_BGRAD, at(6), at(5)));

  std::vector<float> out(kM * kN), aux(kM * kN), dOut(kM * kN), dBias(kN);
  std::pair<std::vector<float> *, int> outputs[] = {
      {&out, 3}, {&aux, 4}, {&dOut, 5}, {&dBias, 6}};
  for (auto [host, i] : outputs)
    SINTER_CU(drv->memcpyDtoHAsync(host->data(), at(i),
                                   host->size() * sizeof(float), stream),
              what);
  SINTER_CU(drv->streamSynchronize(stream), what);

  std::vector<double> productSums(kN, 0.0);
  for (int64_t i = 0; i < kM * kN; ++i)
    productSums[i % kN] += product[i];
  struct Check {
    const char *form;
    const std::vector<float> &got;
    const std::vector<double> &want;
  } checks[] = {{"GELU_AUX_BIAS's activation", out, act},
                {"GELU_AUX_BIAS's aux (the GELU's input)", aux, pre},
                {"DGELU_BGRAD's product times gelu'(aux)", dOut, dgelu},
                {"DGELU_BGRAD's bias gradient (the sum of the result's rows)",
                 dBias, biasGrad}};
  for (const Check &c : checks)
    if (std::string diff = firstDifference(c.got, c.want); !diff.empty()) {
      std::string hint;
      if (&c.got == &dBias && firstDifference(dBias, productSums).empty())
        hint = "; it is the sum of the product's rows before the GELU's "
               "derivative";
      return sinter::InternalError(
          SINTER_HERE,
          absl::StrFormat(
              "this cuBLASLt computes %s otherwise than docs/Cuda.md reads "
              "cublasLt.h (%s%s); the program's GELU layers use it, so its "
              "gradients would be wrong: not training",
              c.form, diff, hint));
    }
  return absl::OkStatus();
}
