//===- FakeCuda.cpp - a CUDA driver, cuBLASLt and NCCL that need no GPU -===//
//
// For tests only: a shared library that stands in for libcuda.so.1
// (through cuGetProcAddress_v2, as runtime/Exec/CudaLibraries.cpp looks the
// driver up), libcublasLt.so.13 and libnccl.so.2 (by symbol), so that a
// binary built
// with --target=cuda runs its whole host side on a machine with no GPU:
// slabs, uploads, downloads, fills, the queue plan on two streams with
// events, the CUDA graph's capture and replays, cuBLASLt's descriptors,
// heuristic and calls. Nothing computes: "device" memory is host memory
// (transfers and fills are real, so what the trainer reads back is what it
// wrote), kernels and matmuls are only recorded.
//
// Every call is written, one line each, to $SINTER_FAKE_CUDA_LOG (when
// set; with ".<RANK>" appended in a job that sets RANK), with the stream it
// went on (S1, S2, ...; S0 the legacy stream), so a test can check the
// order the executor asked for. NCCL's all-reduces are recorded, not run
// (ranks exchange nothing), and fail on demand: $SINTER_FAKE_NCCL=hang
// leaves each one unfinished (its stream busy) until the communicator is
// aborted, =hang-launch also blocks the next kernel launch until then (a
// launch queued behind the stuck collective: the executor must not wait in
// the driver forever), =error makes it report a remote error, as a peer
// that died would; an all-reduce captured in a graph does so at each
// replay. Rules of the real libraries that cost a GPU session to find are
// enforced:
//   - cuBLASLt's algorithm assumes the operands' alignment the preference
//     stated (256 bytes unless told): cublasLtMatmul on a pointer aligned
//     less fails with CUBLAS_STATUS_INVALID_VALUE, as the real one may;
//   - cuBLASLt's workspace must be 256-byte aligned, and it is scribbled
//     over (all-ones bytes) at every matmul where kernels compute too, as
//     the real library leaves it in no particular state;
//   - a CUDA graph's capture may only hold stream work: a transfer, a fill
//     or a synchronization of the capturing stream while it captures fails
//     with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, as do an allocation and a
//     module load while any stream captures.
//
// With $SINTER_FAKE_CUDA_KERNELS naming a shared library of the kernels'
// host versions (`sinterc --target=cuda-host`), the stand-in computes: a
// launch runs the kernel's host version, a cublasLtMatmul computes by
// cuBLASLt's definition, an NCCL all-reduce sums the ranks' buckets
// through shared memory, the runtime's wire kernels convert on the host,
// and work captured in a graph runs at each replay
// (test/e2e/cuda-fake-numbers.test).
//
// Not a model of the GPU's timing or concurrency: work runs when enqueued.
//
// This file holds the driver and what the three share (FakeCuda.h);
// FakeCublasLt.cpp and FakeNccl.cpp the other two libraries.
//
//===----------------------------------------------------------------------===//

#include "test/unit/runtime/FakeCuda.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <unistd.h>
#include <vector>

namespace fake {

std::mutex mu;
std::FILE *logFile = nullptr;
bool logOpened = false;
int nextId = 1;
std::map<const void *, int> ids; // streams and events: their numbers
const void *capturing = nullptr; // the stream capturing a graph
const void *hung = nullptr;      // the stream an unfinished all-reduce holds
bool remoteError = false;        // a peer "died" during an all-reduce
// The streams of the all-reduces captured so far, and those of each graph
// and each instantiated graph.
std::vector<const void *> capturedAllReduces;
std::map<const void *, std::vector<const void *>> graphAllReduces;
// Work that computes (kernels from $SINTER_FAKE_CUDA_KERNELS, matmuls,
// copies between buffers): run when enqueued, or, inside a capture, kept
// for the graph and run at each of its replays.
using Work = std::function<void()>;
std::vector<Work> capturedWork;
std::map<const void *, std::vector<Work>> graphWork;

/// Runs `w` now, or keeps it for the graph being captured (mu held).
void enqueueWork(Work w) {
  if (capturing)
    capturedWork.push_back(std::move(w));
  else
    w();
}

void say(const char *format, ...) {
  if (!logOpened) {
    logOpened = true;
    if (const char *path = std::getenv("SINTER_FAKE_CUDA_LOG")) {
      std::string file = path;
      if (const char *rank = std::getenv("RANK"))
        file += std::string(".") + rank;
      logFile = std::fopen(file.c_str(), "a");
    }
  }
  if (!logFile)
    return;
  va_list args;
  va_start(args, format);
  std::vfprintf(logFile, format, args);
  va_end(args);
  std::fputc('\n', logFile);
  std::fflush(logFile);
}

int idOf(const void *handle) {
  if (!handle)
    return 0;
  auto it = ids.find(handle);
  return it == ids.end() ? -1 : it->second;
}

void *newHandle() {
  void *h = std::malloc(8);
  ids[h] = nextId++;
  return h;
}

/// Stream work other than kernels and copies between buffers may not be
/// captured.
CUresult notWhileCapturing(CUstream stream, const char *what) {
  if (capturing && (stream == capturing || !stream)) {
    say("%s S%d: refused, the stream is capturing a graph", what, idOf(stream));
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_SUCCESS;
}

/// An all-reduce "running" (mu held): $SINTER_FAKE_NCCL's fault, if any.
void runAllReduce(const void *stream) {
  const char *mode = std::getenv("SINTER_FAKE_NCCL");
  if (mode && std::strncmp(mode, "hang", 4) == 0)
    hung = stream;
  if (mode && std::strcmp(mode, "error") == 0)
    remoteError = true;
}

/// Set-up that the real driver refuses inside a capture (an allocation,
/// a module load): the executor must make everything before it.
CUresult notInCapture(const char *what) {
  if (capturing) {
    say("%s: refused, a stream is capturing a graph", what);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_SUCCESS;
}

/// The largest power of two up to 256 that divides `p`.
uint32_t alignmentOf(const void *p) {
  uint32_t a = 256;
  while (a > 1 && reinterpret_cast<uintptr_t>(p) % a)
    a /= 2;
  return a;
}

// Element i of a matrix of `type` at `p`, and a store rounded to nearest
// even, as cuBLASLt's output conversion.
float loadElement(cudaDataType type, const void *p, int64_t i) {
  switch (type) {
  case CUDA_R_16BF: {
    uint32_t bits = uint32_t(static_cast<const uint16_t *>(p)[i]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  case CUDA_R_16F:
    return static_cast<float>(static_cast<const _Float16 *>(p)[i]);
  default:
    return static_cast<const float *>(p)[i];
  }
}
void storeElement(cudaDataType type, void *p, int64_t i, float v) {
  switch (type) {
  case CUDA_R_16BF: {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    if (std::isnan(v))
      bits = 0x7fc00000u;
    else
      bits += 0x7fffu + ((bits >> 16) & 1u);
    static_cast<uint16_t *>(p)[i] = static_cast<uint16_t>(bits >> 16);
    break;
  }
  case CUDA_R_16F:
    static_cast<_Float16 *>(p)[i] = static_cast<_Float16>(v);
    break;
  default:
    static_cast<float *>(p)[i] = v;
  }
}

void *hostKernels() {
  static void *lib = [] {
    const char *path = std::getenv("SINTER_FAKE_CUDA_KERNELS");
    if (!path)
      return static_cast<void *>(nullptr);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::fprintf(stderr, "fake CUDA: cannot load %s: %s\n", path, dlerror());
      std::abort();
    }
    return h;
  }();
  return lib;
}

namespace {

// The driver.

CUresult getErrorString(CUresult error, const char **text) {
  *text = error == CUDA_SUCCESS ? "no error" : "fake driver error";
  return CUDA_SUCCESS;
}
CUresult getErrorName(CUresult error, const char **text) {
  *text = error == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult init(unsigned int) { return CUDA_SUCCESS; }
CUresult deviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult deviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult deviceGetName(char *name, int len, CUdevice) {
  std::snprintf(name, len, "fake GPU (host memory)");
  return CUDA_SUCCESS;
}
CUresult deviceGetAttribute(int *value, CUdevice_attribute attribute,
                            CUdevice) {
  *value = attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}
CUresult primaryCtxRetain(CUcontext *context, CUdevice) {
  static int context_;
  *context = reinterpret_cast<CUcontext>(&context_);
  return CUDA_SUCCESS;
}
CUresult primaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult ctxSetCurrent(CUcontext) { return CUDA_SUCCESS; }

CUresult memAlloc(CUdeviceptr *ptr, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = notInCapture("cuMemAlloc"))
      return r;
  }
  // cuMemAlloc's pointers are 256-byte aligned; the buffers in them lie
  // where the program places them.
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = reinterpret_cast<CUdeviceptr>(p);
  std::lock_guard<std::mutex> lock(mu);
  say("cuMemAlloc bytes=%zu", bytes);
  return CUDA_SUCCESS;
}
CUresult memFree(CUdeviceptr ptr) {
  std::free(reinterpret_cast<void *>(ptr));
  return CUDA_SUCCESS;
}
// Page-locked host memory: its ranges, so that a copy from it says so.
std::map<const unsigned char *, size_t> pinned;

CUresult memHostAlloc(void **ptr, size_t bytes, unsigned int) {
  std::lock_guard<std::mutex> lock(mu);
  if (CUresult r = notInCapture("cuMemHostAlloc"))
    return r;
  *ptr = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (!*ptr)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pinned[static_cast<const unsigned char *>(*ptr)] = bytes;
  say("cuMemHostAlloc bytes=%zu", bytes);
  return CUDA_SUCCESS;
}
CUresult memFreeHost(void *ptr) {
  std::lock_guard<std::mutex> lock(mu);
  pinned.erase(static_cast<const unsigned char *>(ptr));
  std::free(ptr);
  return CUDA_SUCCESS;
}
bool isPinned(const void *p, size_t bytes) {
  auto *q = static_cast<const unsigned char *>(p);
  auto it = pinned.upper_bound(q);
  if (it == pinned.begin())
    return false;
  --it;
  return q + bytes <= it->first + it->second;
}

CUresult memsetD8Async(CUdeviceptr dst, unsigned char value, size_t bytes,
                       CUstream stream) {
  std::lock_guard<std::mutex> lock(mu);
  if (CUresult r = notWhileCapturing(stream, "cuMemsetD8Async"))
    return r;
  std::memset(reinterpret_cast<void *>(dst), value, bytes);
  say("cuMemsetD8Async bytes=%zu S%d", bytes, idOf(stream));
  return CUDA_SUCCESS;
}
CUresult memcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes,
                         CUstream stream) {
  std::lock_guard<std::mutex> lock(mu);
  if (CUresult r = notWhileCapturing(stream, "cuMemcpyHtoDAsync"))
    return r;
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  say("cuMemcpyHtoDAsync bytes=%zu S%d%s", bytes, idOf(stream),
      isPinned(src, bytes) ? " pinned" : "");
  return CUDA_SUCCESS;
}
CUresult memcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes,
                         CUstream stream) {
  std::lock_guard<std::mutex> lock(mu);
  if (CUresult r = notWhileCapturing(stream, "cuMemcpyDtoHAsync"))
    return r;
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  say("cuMemcpyDtoHAsync bytes=%zu S%d", bytes, idOf(stream));
  return CUDA_SUCCESS;
}
CUresult memcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                         CUstream stream) {
  std::lock_guard<std::mutex> lock(mu);
  // A copy between buffers is a graph node: it runs at every replay, not
  // at capture.
  enqueueWork([dst, src, bytes] {
    std::memmove(reinterpret_cast<void *>(dst),
                 reinterpret_cast<const void *>(src), bytes);
  });
  say("cuMemcpyDtoDAsync bytes=%zu S%d", bytes, idOf(stream));
  return CUDA_SUCCESS;
}

CUresult moduleLoadData(CUmodule *module, const void *) {
  std::lock_guard<std::mutex> lock(mu);
  if (CUresult r = notInCapture("cuModuleLoadData"))
    return r;
  static int module_;
  *module = reinterpret_cast<CUmodule>(&module_);
  return CUDA_SUCCESS;
}
CUresult moduleUnload(CUmodule) { return CUDA_SUCCESS; }
// The kernels' host versions: `sinterc --target=cuda-host` compiles the
// same kernels as host functions (EmulateCudaKernels.cpp) with the CPU
// kernel signature under `_mlir_ciface_<name>`; a shared library of that
// object, named by $SINTER_FAKE_CUDA_KERNELS, makes launches compute.
struct SlabRef { // abi/KernelAbi.h
  int8_t *allocated, *aligned;
  int64_t offset, size, stride;
};
struct WordsRef {
  const int64_t *allocated, *aligned;
  int64_t offset, size, stride;
};
using HostKernel = void (*)(const SlabRef *, const SlabRef *, const SlabRef *,
                            const SlabRef *, const SlabRef *, const WordsRef *,
                            int64_t, int64_t);
struct Function {
  std::string name;
  HostKernel host = nullptr;
};

CUresult moduleGetFunction(CUfunction *function, CUmodule, const char *name) {
  auto *f = new Function{name};
  if (void *lib = hostKernels()) {
    f->host = reinterpret_cast<HostKernel>(
        dlsym(lib, (std::string("_mlir_ciface_") + name).c_str()));
    if (!f->host && std::strncmp(name, "sinter_narrow_", 14) != 0 &&
        std::strncmp(name, "sinter_widen_", 13) != 0) {
      delete f;
      return CUDA_ERROR_NOT_FOUND; // a kernel the host library lacks
    }
  }
  *function = reinterpret_cast<CUfunction>(f);
  return CUDA_SUCCESS;
}
/// With SINTER_FAKE_NCCL=hang-launch, waits while an all-reduce hangs.
void blockBehindHungAllReduce() {
  const char *mode = std::getenv("SINTER_FAKE_NCCL");
  if (!mode || std::strcmp(mode, "hang-launch") != 0)
    return;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!hung)
        return;
    }
    usleep(10000);
  }
}

CUresult launchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned shared,
                      CUstream stream, void **params, void **extra) {
  blockBehindHungAllReduce();
  std::lock_guard<std::mutex> lock(mu);
  if (!params || extra || gx * gy * gz == 0 || bx * by * bz == 0 ||
      bx * by * bz > 1024 || shared != 0)
    return CUDA_ERROR_INVALID_VALUE;
  const Function *fn = reinterpret_cast<const Function *>(f);
  say("cuLaunchKernel %s grid=%u block=%u S%d%s", fn->name.c_str(), gx, bx,
      idOf(stream), capturing ? " (captured)" : "");
  if (hostKernels() && runWireKernel(fn->name, params))
    return CUDA_SUCCESS;
  if (fn->host) {
    // The parameters as the executor passes them: five slab descriptors of
    // five fields, then the launch's words, then a null pointer. Copied
    // now, as the driver copies them at launch (and at capture).
    std::array<SlabRef, 5> slabs;
    for (int i = 0; i < 5; ++i) {
      int64_t field[5];
      for (int j = 0; j < 5; ++j)
        field[j] = *static_cast<const int64_t *>(params[i * 5 + j]);
      slabs[i] = {reinterpret_cast<int8_t *>(field[0]),
                  reinterpret_cast<int8_t *>(field[1]), field[2], field[3],
                  field[4]};
    }
    auto words = std::make_shared<std::vector<int64_t>>();
    for (int i = 25; params[i]; ++i)
      words->push_back(*static_cast<const int64_t *>(params[i]));
    HostKernel host = fn->host;
    enqueueWork([host, slabs, words] {
      WordsRef w{words->data(), words->data(), 0,
                 static_cast<int64_t>(words->size()), 1};
      host(&slabs[0], &slabs[1], &slabs[2], &slabs[3], &slabs[4], &w, 0, 1);
    });
  }
  return CUDA_SUCCESS;
}

CUresult streamCreate(CUstream *stream, unsigned int flags) {
  std::lock_guard<std::mutex> lock(mu);
  *stream = static_cast<CUstream>(newHandle());
  say("cuStreamCreate S%d%s", idOf(*stream),
      flags == CU_STREAM_NON_BLOCKING ? " non-blocking" : "");
  return CUDA_SUCCESS;
}
CUresult streamDestroy(CUstream stream) {
  std::lock_guard<std::mutex> lock(mu);
  say("cuStreamDestroy S%d", idOf(stream));
  return CUDA_SUCCESS;
}
CUresult streamSynchronize(CUstream stream) {
  std::lock_guard<std::mutex> lock(mu);
  if (CUresult r = notWhileCapturing(stream, "cuStreamSynchronize"))
    return r;
  say("cuStreamSynchronize S%d", idOf(stream));
  return CUDA_SUCCESS;
}
CUresult streamWaitEvent(CUstream stream, CUevent event, unsigned int) {
  std::lock_guard<std::mutex> lock(mu);
  say("cuStreamWaitEvent S%d E%d", idOf(stream), idOf(event));
  return CUDA_SUCCESS;
}
CUresult streamQuery(CUstream stream) {
  std::lock_guard<std::mutex> lock(mu);
  return stream && stream == hung ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
CUresult eventCreate(CUevent *event, unsigned int) {
  std::lock_guard<std::mutex> lock(mu);
  *event = static_cast<CUevent>(newHandle());
  return CUDA_SUCCESS;
}
CUresult eventDestroy(CUevent) { return CUDA_SUCCESS; }
CUresult eventRecord(CUevent event, CUstream stream) {
  std::lock_guard<std::mutex> lock(mu);
  say("cuEventRecord E%d S%d", idOf(event), idOf(stream));
  return CUDA_SUCCESS;
}
CUresult eventElapsedTime(float *ms, CUevent, CUevent) {
  *ms = 0.001f;
  return CUDA_SUCCESS;
}
CUresult streamBeginCapture(CUstream stream, CUstreamCaptureMode) {
  std::lock_guard<std::mutex> lock(mu);
  capturing = stream;
  say("cuStreamBeginCapture S%d", idOf(stream));
  return CUDA_SUCCESS;
}
CUresult streamEndCapture(CUstream stream, CUgraph *graph) {
  std::lock_guard<std::mutex> lock(mu);
  if (stream != capturing)
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  capturing = nullptr;
  *graph = static_cast<CUgraph>(newHandle());
  graphAllReduces[*graph] = std::move(capturedAllReduces);
  capturedAllReduces.clear();
  graphWork[*graph] = std::move(capturedWork);
  capturedWork.clear();
  say("cuStreamEndCapture S%d", idOf(stream));
  return CUDA_SUCCESS;
}
CUresult graphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph,
                                   unsigned long long) {
  std::lock_guard<std::mutex> lock(mu);
  *exec = static_cast<CUgraphExec>(newHandle());
  graphAllReduces[*exec] = graphAllReduces[graph];
  graphWork[*exec] = graphWork[graph];
  say("cuGraphInstantiateWithFlags");
  return CUDA_SUCCESS;
}
CUresult graphLaunch(CUgraphExec exec, CUstream stream) {
  std::lock_guard<std::mutex> lock(mu);
  say("cuGraphLaunch S%d", idOf(stream));
  for (const Work &w : graphWork[exec])
    w();
  for (const void *s : graphAllReduces[exec])
    runAllReduce(s);
  return CUDA_SUCCESS;
}
CUresult graphExecDestroy(CUgraphExec) { return CUDA_SUCCESS; }
CUresult graphDestroy(CUgraph) { return CUDA_SUCCESS; }

struct Entry {
  const char *name;
  void *fn;
};

// Each entry's type is checked against the toolkit's declaration.
#define FAKE(name, fn)                                                         \
  static_assert(std::is_same_v<decltype(&fn), decltype(&::name)>, #name);      \
  const Entry name##Entry{#name, reinterpret_cast<void *>(&fn)};

FAKE(cuGetErrorString, getErrorString)
FAKE(cuGetErrorName, getErrorName)
FAKE(cuInit, init)
FAKE(cuDeviceGetCount, deviceGetCount)
FAKE(cuDeviceGet, deviceGet)
FAKE(cuDeviceGetName, deviceGetName)
FAKE(cuDeviceGetAttribute, deviceGetAttribute)
FAKE(cuDevicePrimaryCtxRetain, primaryCtxRetain)
FAKE(cuDevicePrimaryCtxRelease, primaryCtxRelease)
FAKE(cuCtxSetCurrent, ctxSetCurrent)
FAKE(cuMemAlloc, memAlloc)
FAKE(cuMemFree, memFree)
FAKE(cuMemHostAlloc, memHostAlloc)
FAKE(cuMemFreeHost, memFreeHost)
FAKE(cuMemsetD8Async, memsetD8Async)
FAKE(cuMemcpyHtoDAsync, memcpyHtoDAsync)
FAKE(cuMemcpyDtoHAsync, memcpyDtoHAsync)
FAKE(cuMemcpyDtoDAsync, memcpyDtoDAsync)
FAKE(cuModuleLoadData, moduleLoadData)
FAKE(cuModuleUnload, moduleUnload)
FAKE(cuModuleGetFunction, moduleGetFunction)
FAKE(cuLaunchKernel, launchKernel)
FAKE(cuStreamCreate, streamCreate)
FAKE(cuStreamDestroy, streamDestroy)
FAKE(cuStreamSynchronize, streamSynchronize)
FAKE(cuStreamWaitEvent, streamWaitEvent)
FAKE(cuStreamQuery, streamQuery)
FAKE(cuEventCreate, eventCreate)
FAKE(cuEventDestroy, eventDestroy)
FAKE(cuEventRecord, eventRecord)
FAKE(cuEventElapsedTime, eventElapsedTime)
FAKE(cuStreamBeginCapture, streamBeginCapture)
FAKE(cuStreamEndCapture, streamEndCapture)
FAKE(cuGraphInstantiateWithFlags, graphInstantiateWithFlags)
FAKE(cuGraphLaunch, graphLaunch)
FAKE(cuGraphExecDestroy, graphExecDestroy)
FAKE(cuGraphDestroy, graphDestroy)

#undef FAKE

// The base names, as CudaLibraries.cpp asks for them (the macros of
// cuda.h would turn `cuMemAlloc` into `cuMemAlloc_v2` above, in the
// checked types, but the names looked up are the strings).
const Entry *const kEntries[] = {
    &cuGetErrorStringEntry,
    &cuGetErrorNameEntry,
    &cuInitEntry,
    &cuDeviceGetCountEntry,
    &cuDeviceGetEntry,
    &cuDeviceGetNameEntry,
    &cuDeviceGetAttributeEntry,
    &cuDevicePrimaryCtxRetainEntry,
    &cuDevicePrimaryCtxReleaseEntry,
    &cuCtxSetCurrentEntry,
    &cuMemAllocEntry,
    &cuMemFreeEntry,
    &cuMemHostAllocEntry,
    &cuMemFreeHostEntry,
    &cuMemsetD8AsyncEntry,
    &cuMemcpyHtoDAsyncEntry,
    &cuMemcpyDtoHAsyncEntry,
    &cuMemcpyDtoDAsyncEntry,
    &cuModuleLoadDataEntry,
    &cuModuleUnloadEntry,
    &cuModuleGetFunctionEntry,
    &cuLaunchKernelEntry,
    &cuStreamCreateEntry,
    &cuStreamDestroyEntry,
    &cuStreamSynchronizeEntry,
    &cuStreamWaitEventEntry,
    &cuStreamQueryEntry,
    &cuEventCreateEntry,
    &cuEventDestroyEntry,
    &cuEventRecordEntry,
    &cuEventElapsedTimeEntry,
    &cuStreamBeginCaptureEntry,
    &cuStreamEndCaptureEntry,
    &cuGraphInstantiateWithFlagsEntry,
    &cuGraphLaunchEntry,
    &cuGraphExecDestroyEntry,
    &cuGraphDestroyEntry,
};

} // namespace
} // namespace fake

using namespace fake;

#pragma GCC visibility push(default)
extern "C" {

// The driver's one exported entry point the executor needs.
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int, cuuint64_t,
                             CUdriverProcAddressQueryResult *status) {
  for (const Entry *e : kEntries)
    if (std::strcmp(e->name, symbol) == 0) {
      *pfn = e->fn;
      if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  *pfn = nullptr;
  if (status)
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}
} // extern "C"
#pragma GCC visibility pop
