//===- CudaLibraries.h - the CUDA driver, cuBLASLt and NCCL, dlopen'd -----===//
//
// The GPU libraries a CUDA binary calls, loaded when its executor is
// created rather than at link time, so the binary starts on any machine and
// a machine without them gets one line saying which is missing and where it
// was looked for. Each table is loaded once per process; a function a
// library lacks (an older driver, an older NCCL) fails the load, naming it.
//
// Where they are looked for: the folders of $SINTER_CUDA_LIBS (colon-
// separated), the loader's own search, then /usr/local/cuda/lib64. The
// driver can be pinned with $SINTER_LIBCUDA (a path). The driver's functions
// are resolved by base name through cuGetProcAddress, which hands out the
// ABI version of each that this toolkit's headers declare; the headers give
// the types only.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_EXEC_CUDALIBRARIES_H
#define SINTER_RUNTIME_EXEC_CUDALIBRARIES_H

#include "runtime/Support/Status.h"

#include <cublasLt.h>
#include <cuda.h>
#include <nccl.h>

#include <string_view>

namespace sinter::exec {

/// The driver API functions the CUDA executor calls (libcuda.so.1).
struct CudaDriver {
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetName) deviceGetName = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primaryCtxRelease = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuMemAlloc) memAlloc = nullptr;
  decltype(&::cuMemFree) memFree = nullptr;
  decltype(&::cuMemHostAlloc) memHostAlloc = nullptr;
  decltype(&::cuMemFreeHost) memFreeHost = nullptr;
  decltype(&::cuMemsetD8Async) memsetD8Async = nullptr;
  decltype(&::cuMemcpyHtoDAsync) memcpyHtoDAsync = nullptr;
  decltype(&::cuMemcpyDtoHAsync) memcpyDtoHAsync = nullptr;
  decltype(&::cuMemcpyDtoDAsync) memcpyDtoDAsync = nullptr;
  decltype(&::cuModuleLoadData) moduleLoadData = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuStreamCreate) streamCreate = nullptr;
  decltype(&::cuStreamDestroy) streamDestroy = nullptr;
  decltype(&::cuStreamSynchronize) streamSynchronize = nullptr;
  decltype(&::cuStreamWaitEvent) streamWaitEvent = nullptr;
  decltype(&::cuStreamQuery) streamQuery = nullptr;
  decltype(&::cuEventCreate) eventCreate = nullptr;
  decltype(&::cuEventDestroy) eventDestroy = nullptr;
  decltype(&::cuEventRecord) eventRecord = nullptr;
  decltype(&::cuEventElapsedTime) eventElapsedTime = nullptr;
  decltype(&::cuStreamBeginCapture) streamBeginCapture = nullptr;
  decltype(&::cuStreamEndCapture) streamEndCapture = nullptr;
  decltype(&::cuGraphInstantiateWithFlags) graphInstantiateWithFlags = nullptr;
  decltype(&::cuGraphLaunch) graphLaunch = nullptr;
  decltype(&::cuGraphExecDestroy) graphExecDestroy = nullptr;
  decltype(&::cuGraphDestroy) graphDestroy = nullptr;
};

/// cuBLASLt's functions (libcublasLt.so.13).
struct CublasLt {
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtDestroy) destroy = nullptr;
  decltype(&::cublasLtGetStatusString) statusString = nullptr;
  decltype(&::cublasLtMatmulDescCreate) descCreate = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) descDestroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) descSet = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) layoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) layoutDestroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) layoutSet = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) prefCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) prefDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) prefSet = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
};

/// NCCL's functions (libnccl.so.2), for the gradient all-reduces of a
/// data-parallel job.
struct Nccl {
  decltype(&::ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&::ncclCommInitRankConfig) commInitRankConfig = nullptr;
  decltype(&::ncclCommGetAsyncError) commGetAsyncError = nullptr;
  decltype(&::ncclCommAbort) commAbort = nullptr;
  decltype(&::ncclCommFinalize) commFinalize = nullptr;
  decltype(&::ncclCommDestroy) commDestroy = nullptr;
  decltype(&::ncclAllReduce) allReduce = nullptr;
  decltype(&::ncclGetErrorString) errorString = nullptr;
  decltype(&::ncclGetLastError) lastError = nullptr;
};

/// Each library's table, loaded at the first call; the error says what is
/// missing and how to point the binary at it.
absl::StatusOr<const CudaDriver *> loadCudaDriver();
absl::StatusOr<const CublasLt *> loadCublasLt();
absl::StatusOr<const Nccl *> loadNccl();

/// A CUDA driver error as a status: what it was for, the call, and the
/// driver's name and message for the code.
absl::Status cudaError(sinter::SourceLocation where, const CudaDriver &d,
                       CUresult r, std::string_view call,
                       std::string_view what);

} // namespace sinter::exec

#endif // SINTER_RUNTIME_EXEC_CUDALIBRARIES_H
