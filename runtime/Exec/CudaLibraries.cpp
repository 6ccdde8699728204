//===- CudaLibraries.cpp - the CUDA driver, cuBLASLt and NCCL, dlopen'd ---===//
//
// See CudaLibraries.h. One resolver fills every table: it looks each
// function up (dlsym, or the driver's cuGetProcAddress) and keeps the first
// that is missing as the load's error.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/CudaLibraries.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace sinter::exec {

namespace {

/// Opens `soname` from $SINTER_CUDA_LIBS's folders, the loader's search or
/// the toolkit's default place; `tried` gets the first failure's reason.
void *openLibrary(const char *soname, std::string &tried) {
  std::vector<std::string> candidates;
  if (const char *dirs = std::getenv("SINTER_CUDA_LIBS")) {
    std::string_view rest(dirs);
    while (!rest.empty()) {
      size_t colon = rest.find(':');
      std::string dir(rest.substr(0, colon));
      if (!dir.empty())
        candidates.push_back(dir + "/" + soname);
      rest = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
    }
  }
  candidates.push_back(soname);
  candidates.push_back(absl::StrCat("/usr/local/cuda/lib64/", soname));
  for (const std::string &path : candidates) {
    if (void *h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))
      return h;
    if (tried.empty())
      tried = ::dlerror();
  }
  return nullptr;
}

/// Looks functions up by name into a table; the first one missing becomes
/// `status()`: "<library> does not provide <name><why>; <needs>".
class Resolver {
public:
  using Lookup = std::function<void *(const char *name, std::string &why)>;
  Resolver(Lookup lookup, std::string_view library, std::string_view needs)
      : lookup(std::move(lookup)), library(library), needs(needs) {}

  template <typename Fn> void operator()(Fn &fn, const char *name) {
    std::string why;
    void *p = lookup(name, why);
    if (!p && missing.ok())
      missing = sinter::FailedPreconditionError(
          SINTER_HERE,
          absl::StrCat(library, " does not provide ", name, why, "; ", needs));
    fn = reinterpret_cast<Fn>(p);
  }
  const absl::Status &status() const { return missing; }

private:
  Lookup lookup;
  std::string library, needs;
  absl::Status missing;
};

/// A dlopen'd library's functions by dlsym.
Resolver::Lookup bySymbol(void *handle) {
  return [handle](const char *name, std::string &) {
    return ::dlsym(handle, name);
  };
}

/// The table `load` makes, made once per process (the first caller's
/// result, a table or why there is none, is every caller's).
template <typename Table, typename Load>
absl::StatusOr<const Table *> loadOnce(Load load) {
  static const absl::StatusOr<Table> loaded = load();
  if (!loaded.ok())
    return loaded.status();
  return &*loaded;
}

} // namespace

absl::StatusOr<const CudaDriver *> loadCudaDriver() {
  return loadOnce<CudaDriver>([]() -> absl::StatusOr<CudaDriver> {
    std::string why;
    void *h = nullptr;
    if (const char *path = std::getenv("SINTER_LIBCUDA"))
      h = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
    else
      h = openLibrary("libcuda.so.1", why);
    if (!h)
      return sinter::FailedPreconditionError(
          SINTER_HERE,
          absl::StrCat("this binary runs on an NVIDIA GPU, but the CUDA "
                       "driver cannot be loaded (",
                       why.empty() ? ::dlerror() : why,
                       "); it needs an NVIDIA GPU with a driver for CUDA 13 "
                       "(580 or newer)"));
    auto getProc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(
        ::dlsym(h, "cuGetProcAddress_v2"));
    if (!getProc)
      return sinter::FailedPreconditionError(
          SINTER_HERE, "the CUDA driver has no cuGetProcAddress_v2: it is "
                       "older than CUDA 12; this binary needs CUDA 13");
    auto lookup = [getProc](const char *name, std::string &why) -> void * {
      void *p = nullptr;
      CUdriverProcAddressQueryResult found;
      CUresult r =
          getProc(name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found);
      if (r == CUDA_SUCCESS && p)
        return p;
      why = absl::StrFormat(" (error %d%s)", static_cast<int>(r),
                            r == CUDA_ERROR_STUB_LIBRARY
                                ? ": the toolkit's stub libcuda, not a driver"
                                : "");
      return nullptr;
    };
    CudaDriver d;
    Resolver get(lookup, "the CUDA driver",
                 "this binary needs a driver for CUDA 13");
    get(d.getErrorString, "cuGetErrorString");
    get(d.getErrorName, "cuGetErrorName");
    get(d.init, "cuInit");
    get(d.deviceGetCount, "cuDeviceGetCount");
    get(d.deviceGet, "cuDeviceGet");
    get(d.deviceGetName, "cuDeviceGetName");
    get(d.deviceGetAttribute, "cuDeviceGetAttribute");
    get(d.primaryCtxRetain, "cuDevicePrimaryCtxRetain");
    get(d.primaryCtxRelease, "cuDevicePrimaryCtxRelease");
    get(d.ctxSetCurrent, "cuCtxSetCurrent");
    get(d.memAlloc, "cuMemAlloc");
    get(d.memFree, "cuMemFree");
    get(d.memHostAlloc, "cuMemHostAlloc");
    get(d.memFreeHost, "cuMemFreeHost");
    get(d.memsetD8Async, "cuMemsetD8Async");
    get(d.memcpyHtoDAsync, "cuMemcpyHtoDAsync");
    get(d.memcpyDtoHAsync, "cuMemcpyDtoHAsync");
    get(d.memcpyDtoDAsync, "cuMemcpyDtoDAsync");
    get(d.moduleLoadData, "cuModuleLoadData");
    get(d.moduleUnload, "cuModuleUnload");
    get(d.moduleGetFunction, "cuModuleGetFunction");
    get(d.launchKernel, "cuLaunchKernel");
    get(d.streamCreate, "cuStreamCreate");
    get(d.streamDestroy, "cuStreamDestroy");
    get(d.streamSynchronize, "cuStreamSynchronize");
    get(d.streamWaitEvent, "cuStreamWaitEvent");
    get(d.streamQuery, "cuStreamQuery");
    get(d.eventCreate, "cuEventCreate");
    get(d.eventDestroy, "cuEventDestroy");
    get(d.eventRecord, "cuEventRecord");
    get(d.eventElapsedTime, "cuEventElapsedTime");
    get(d.streamBeginCapture, "cuStreamBeginCapture");
    get(d.streamEndCapture, "cuStreamEndCapture");
    get(d.graphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    get(d.graphLaunch, "cuGraphLaunch");
    get(d.graphExecDestroy, "cuGraphExecDestroy");
    get(d.graphDestroy, "cuGraphDestroy");
    if (!get.status().ok())
      return get.status();
    return d;
  });
}

absl::StatusOr<const CublasLt *> loadCublasLt() {
  return loadOnce<CublasLt>([]() -> absl::StatusOr<CublasLt> {
    std::string why;
    void *h = openLibrary("libcublasLt.so.13", why);
    if (!h)
      return sinter::FailedPreconditionError(
          SINTER_HERE, absl::StrCat("cannot load cuBLASLt (", why,
                                    "); put the folder of libcublasLt.so.13 in "
                                    "SINTER_CUDA_LIBS"));
    CublasLt lt;
    Resolver get(bySymbol(h), "cuBLASLt", "this binary needs cuBLASLt 13");
    get(lt.create, "cublasLtCreate");
    get(lt.destroy, "cublasLtDestroy");
    get(lt.statusString, "cublasLtGetStatusString");
    get(lt.descCreate, "cublasLtMatmulDescCreate");
    get(lt.descDestroy, "cublasLtMatmulDescDestroy");
    get(lt.descSet, "cublasLtMatmulDescSetAttribute");
    get(lt.layoutCreate, "cublasLtMatrixLayoutCreate");
    get(lt.layoutDestroy, "cublasLtMatrixLayoutDestroy");
    get(lt.layoutSet, "cublasLtMatrixLayoutSetAttribute");
    get(lt.prefCreate, "cublasLtMatmulPreferenceCreate");
    get(lt.prefDestroy, "cublasLtMatmulPreferenceDestroy");
    get(lt.prefSet, "cublasLtMatmulPreferenceSetAttribute");
    get(lt.heuristic, "cublasLtMatmulAlgoGetHeuristic");
    get(lt.matmul, "cublasLtMatmul");
    if (!get.status().ok())
      return get.status();
    return lt;
  });
}

absl::StatusOr<const Nccl *> loadNccl() {
  return loadOnce<Nccl>([]() -> absl::StatusOr<Nccl> {
    std::string why;
    void *h = openLibrary("libnccl.so.2", why);
    if (!h)
      return sinter::FailedPreconditionError(
          SINTER_HERE, absl::StrCat("data parallelism on CUDA needs NCCL, "
                                    "which cannot be loaded (",
                                    why,
                                    "); put the folder of libnccl.so.2 in "
                                    "SINTER_CUDA_LIBS"));
    Nccl n;
    Resolver get(bySymbol(h), "NCCL", "this binary needs NCCL 2.18 or newer");
    get(n.getUniqueId, "ncclGetUniqueId");
    get(n.commInitRankConfig, "ncclCommInitRankConfig");
    get(n.commGetAsyncError, "ncclCommGetAsyncError");
    get(n.commAbort, "ncclCommAbort");
    get(n.commFinalize, "ncclCommFinalize");
    get(n.commDestroy, "ncclCommDestroy");
    get(n.allReduce, "ncclAllReduce");
    get(n.errorString, "ncclGetErrorString");
    get(n.lastError, "ncclGetLastError");
    if (!get.status().ok())
      return get.status();
    return n;
  });
}

absl::Status cudaError(sinter::SourceLocation where, const CudaDriver &d,
                       CUresult r, std::string_view call,
                       std::string_view what) {
  const char *name = nullptr, *text = nullptr;
  d.getErrorName(r, &name);
  d.getErrorString(r, &text);
  return sinter::InternalError(
      where, absl::StrFormat(
                 "%s%s%s failed: %s (%s)", what, what.empty() ? "" : ": ", call,
                 name ? name : "CUDA error", text ? text : std::to_string(r)));
}

} // namespace sinter::exec
