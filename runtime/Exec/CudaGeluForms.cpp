//===- CudaGeluForms.cpp - cuBLASLt's GELU training forms, checked once --===//
//
// A program compiled for the CUDA target may run its tanh GELU's training
// forms as cuBLASLt epilogues (docs/Cuda.md): GELU_AUX_BIAS forward (the
// GELU's input written too) and DGELU_BGRAD backward (the product times
// the GELU's derivative at that input, and the sum of the result's rows as
// the bias gradient of the layer before the GELU), or GELU_AUX and DGELU
// without the bias. cublasLt.h describes each in a sentence; the bias
// gradient in particular is read here as the sum of the DGELU result's
// rows. A library that computed something else would give silently wrong
// gradients, so before such a program trains, the executor runs each form
// the program uses once on a small f32 product (with the workspace its
// matmuls get: on an H200, cuBLASLt 13.1 has no DGELU_BGRAD algorithm
// without one) and holds the results against those definitions, computed
// on the host in double. A disagreement stops the job with the form, the element and both
// values. Written by hand: no library checks another library's epilogues.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/CudaExecutorImpl.h"

#include "abi/Gelu.h"

#include "absl/strings/str_cat.h"

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

absl::Status CudaExecutor::checkGeluForms(const GeluForms &used) {
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
  // The same operands stored for transposed reads: lhsT[k][m], rhsT[n][k].
  std::vector<float> lhsT(kM * kK), rhsT(kK * kN);
  for (int64_t m = 0; m < kM; ++m)
    for (int64_t k = 0; k < kK; ++k)
      lhsT[k * kM + m] = lhs[m * kK + k];
  for (int64_t k = 0; k < kK; ++k)
    for (int64_t n = 0; n < kN; ++n)
      rhsT[n * kK + k] = rhs[k * kN + n];
  // The definitions, in double from the same f32 operands. The backward
  // forms read aux = the forward's input rounded to f32 (uploaded, so each
  // form is checked on its own).
  std::vector<double> product(kM * kN), pre(kM * kN), act(kM * kN),
      actNoBias(kM * kN), dgelu(kM * kN), biasGrad(kN, 0.0);
  std::vector<float> auxIn(kM * kN);
  for (int64_t m = 0; m < kM; ++m)
    for (int64_t n = 0; n < kN; ++n) {
      double s = 0;
      for (int64_t k = 0; k < kK; ++k)
        s += double(lhs[m * kK + k]) * rhs[k * kN + n];
      int64_t i = m * kN + n;
      product[i] = s;
      pre[i] = s + bias[n];
      act[i] = geluTanh(pre[i]);
      actNoBias[i] = geluTanh(s);
      auxIn[i] = static_cast<float>(pre[i]);
    }
  for (int64_t i = 0; i < kM * kN; ++i) {
    dgelu[i] = product[i] * geluTanhGrad(auxIn[i]);
    biasGrad[i % kN] += dgelu[i];
  }

  // Device bytes, each array 256-byte aligned: lhs, rhs, lhsT, rhsT, bias,
  // out, aux, aux in, the bias gradient, then cuBLASLt's workspace (the
  // size each matmul of the program gets: a bias gradient's reduction
  // across tiles may need it).
  const std::vector<float> *uploads[] = {&lhs, &lhsT, &rhs, &rhsT, &bias,
                                         &auxIn};
  enum { kLhs, kLhsT, kRhs, kRhsT, kBias, kAuxIn, kOut, kAux, kBiasGrad, kWs };
  const size_t sizes[] = {lhs.size(), lhsT.size(), rhs.size(),
                          rhsT.size(), bias.size(), auxIn.size(),
                          size_t(kM * kN), size_t(kM * kN), size_t(kN)};
  size_t offsets[kWs + 1], total = 0;
  for (int i = 0; i < kWs; ++i) {
    offsets[i] = total;
    total += (sizes[i] * sizeof(float) + 255) / 256 * 256;
  }
  offsets[kWs] = total;
  const size_t workspaceBytes = kWorkspaceBytes;
  total += workspaceBytes;
  CUdeviceptr base = 0;
  SINTER_CU(drv->memAlloc(&base, total), what);
  struct Free {
    const CudaDriver *drv;
    CUdeviceptr p;
    ~Free() { drv->memFree(p); }
  } freeBase{drv, base};
  auto at = [&](int i) { return base + offsets[i]; };
  CUstream stream = streams[kComputeStream];
  for (int i = 0; i < 6; ++i)
    SINTER_CU(drv->memcpyHtoDAsync(at(i), uploads[i]->data(),
                                   uploads[i]->size() * sizeof(float), stream),
              what);

  // One call of a form, made as prepareMatmul makes them, with the first
  // transposes (none first) cuBLASLt has an algorithm for: the program's
  // own calls were found algorithms at load, in their own layouts.
  auto call = [&](cublasLtEpilogue_t epilogue, const char *name,
                  CUdeviceptr biasPointer, CUdeviceptr aux) -> absl::Status {
    cublasStatus_t last = CUBLAS_STATUS_SUCCESS;
    for (int layout = 0; layout < 4; ++layout) {
      const bool transA = layout & 1, transB = layout & 2;
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
      cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                        opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
      SINTER_LT(lt->descSet(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA,
                            sizeof(opA)),
                what);
      SINTER_LT(lt->descSet(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB,
                            sizeof(opB)),
                what);
      SINTER_LT(lt->descSet(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                            sizeof(epilogue)),
                what);
      if (biasPointer) {
        int32_t biasType = CUDA_R_32F;
        SINTER_LT(lt->descSet(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                              &biasPointer, sizeof(biasPointer)),
                  what);
        SINTER_LT(lt->descSet(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                              &biasType, sizeof(biasType)),
                  what);
      }
      int64_t auxLd = kN;
      SINTER_LT(lt->descSet(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                            &aux, sizeof(aux)),
                what);
      SINTER_LT(lt->descSet(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                            &auxLd, sizeof(auxLd)),
                what);
      // A = rhs (N x K, or K x N read transposed), B = lhs (K x M, or
      // M x K read transposed), D = N x M, all column-major.
      SINTER_LT(transA ? lt->layoutCreate(&a, CUDA_R_32F, kK, kN, kK)
                       : lt->layoutCreate(&a, CUDA_R_32F, kN, kK, kN),
                what);
      SINTER_LT(transB ? lt->layoutCreate(&b, CUDA_R_32F, kM, kK, kM)
                       : lt->layoutCreate(&b, CUDA_R_32F, kK, kM, kK),
                what);
      SINTER_LT(lt->layoutCreate(&d, CUDA_R_32F, kN, kM, kN), what);
      SINTER_LT(lt->prefCreate(&pref), what);
      SINTER_LT(lt->prefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                            &workspaceBytes, sizeof(workspaceBytes)),
                what);
      cublasLtMatmulHeuristicResult_t result{};
      int found = 0;
      last = lt->heuristic(ltHandle, desc, a, b, d, d, pref, 1, &result,
                           &found);
      if (last != CUBLAS_STATUS_SUCCESS || found == 0)
        continue;
      float alpha = 1, beta = 0;
      void *dPointer = reinterpret_cast<void *>(at(kOut));
      SINTER_LT(lt->matmul(ltHandle, desc, &alpha,
                           reinterpret_cast<void *>(at(transA ? kRhsT : kRhs)),
                           a,
                           reinterpret_cast<void *>(at(transB ? kLhsT : kLhs)),
                           b, &beta, dPointer, d, dPointer, d, &result.algo,
                           reinterpret_cast<void *>(at(kWs)), workspaceBytes,
                           reinterpret_cast<cudaStream_t>(stream)),
                what);
      return absl::OkStatus();
    }
    return sinter::InternalError(
        SINTER_HERE,
        absl::StrFormat("%s: cuBLASLt has no algorithm for %s in f32 on "
                        "this GPU in any layout (%s), though the program's "
                        "matmuls had; recompile with --matmul-epilogues "
                        "leaving out the GELU training forms",
                        what, name,
                        lt->statusString(last)));
  };
  auto download = [&](std::vector<float> &host, int i) -> absl::Status {
    SINTER_CU(drv->memcpyDtoHAsync(host.data(), at(i),
                                   host.size() * sizeof(float), stream),
              what);
    SINTER_CU(drv->streamSynchronize(stream), what);
    return absl::OkStatus();
  };
  auto hold = [&](const char *form, const std::vector<float> &got,
                  const std::vector<double> &want,
                  std::string hint = "") -> absl::Status {
    std::string diff = firstDifference(got, want);
    if (diff.empty())
      return absl::OkStatus();
    return sinter::InternalError(
        SINTER_HERE,
        absl::StrFormat(
            "this cuBLASLt computes %s otherwise than docs/Cuda.md reads "
            "cublasLt.h (%s%s); the program's GELU layers use it, so its "
            "gradients would be wrong: not training",
            form, diff, hint));
  };
  std::vector<float> out(kM * kN), aux(kM * kN), dBias(kN);
  // A forward form: the activation and the aux (the GELU's input).
  auto forward = [&](cublasLtEpilogue_t epilogue, const char *name,
                     CUdeviceptr biasPointer, const std::vector<double> &act,
                     const std::vector<double> &input) -> absl::Status {
    SINTER_RETURN_IF_ERROR(call(epilogue, name, biasPointer, at(kAux)));
    SINTER_RETURN_IF_ERROR(download(out, kOut));
    SINTER_RETURN_IF_ERROR(download(aux, kAux));
    SINTER_RETURN_IF_ERROR(
        hold(absl::StrCat(name, "'s activation").c_str(), out, act));
    return hold(absl::StrCat(name, "'s aux (the GELU's input)").c_str(), aux,
                input);
  };
  if (used.auxBias)
    SINTER_RETURN_IF_ERROR(forward(CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
                                   "GELU_AUX_BIAS", at(kBias), act, pre));
  if (used.aux)
    SINTER_RETURN_IF_ERROR(
        forward(CUBLASLT_EPILOGUE_GELU_AUX, "GELU_AUX", 0, actNoBias, product));
  if (used.dgelu) {
    SINTER_RETURN_IF_ERROR(
        call(CUBLASLT_EPILOGUE_DGELU, "DGELU", 0, at(kAuxIn)));
    SINTER_RETURN_IF_ERROR(download(out, kOut));
    SINTER_RETURN_IF_ERROR(
        hold("DGELU's product times gelu'(aux)", out, dgelu));
  }
  if (used.dgeluBiasGrad) {
    SINTER_RETURN_IF_ERROR(call(CUBLASLT_EPILOGUE_DGELU_BGRAD, "DGELU_BGRAD",
                                at(kBiasGrad), at(kAuxIn)));
    SINTER_RETURN_IF_ERROR(download(out, kOut));
    SINTER_RETURN_IF_ERROR(download(dBias, kBiasGrad));
    SINTER_RETURN_IF_ERROR(
        hold("DGELU_BGRAD's product times gelu'(aux)", out, dgelu));
    std::vector<double> productSums(kN, 0.0);
    for (int64_t i = 0; i < kM * kN; ++i)
      productSums[i % kN] += product[i];
    SINTER_RETURN_IF_ERROR(hold(
        "DGELU_BGRAD's bias gradient (the sum of the result's rows)", dBias,
        biasGrad,
        firstDifference(dBias, productSums).empty()
            ? "; it is the sum of the product's rows before the GELU's "
              "derivative"
            : ""));
  }
  return absl::OkStatus();
}
