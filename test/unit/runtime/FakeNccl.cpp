//===- FakeNccl.cpp - the stand-in NCCL ----------------------------------===//
//
// For tests only (FakeCuda.cpp says what the stand-in is): a communicator
// whose all-reduces are recorded and fail on demand ($SINTER_FAKE_NCCL),
// and, where kernels compute, sum the ranks' buckets through shared memory;
// and the runtime's wire kernels run on the host.
//
//===----------------------------------------------------------------------===//

#include "test/unit/runtime/FakeCuda.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

namespace fake {
namespace {

// NCCL's all-reduce across the ranks' processes, where kernels compute
// ($SINTER_FAKE_CUDA_KERNELS): a POSIX shared-memory segment named after
// the communicator's id holds a slot per rank and a barrier counter. Each
// all-reduce copies this rank's bytes into its slot, waits for every rank,
// sums the slots in rank order (so every rank gets the same bits) in
// float (double for f64), divides by the rank count for ncclAvg, rounds
// to the type, and waits again before any slot is reused.
constexpr size_t kSlotBytes = size_t(16) << 20;
struct Shared {
  std::atomic<int64_t> arrived;
};
struct Ring {
  Shared *shared = nullptr;
  unsigned char *slots = nullptr;
  int nranks = 0, rank = 0;
  int64_t generation = 0;
  std::string name;
} ring;

void barrier() {
  int64_t target = ++ring.generation * ring.nranks;
  ring.shared->arrived.fetch_add(1);
  auto t0 = std::chrono::steady_clock::now();
  while (ring.shared->arrived.load() < target) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(120)) {
      std::fprintf(stderr, "fake NCCL: rank %d waited 120 s for its peers\n",
                   ring.rank);
      std::abort();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void openRing(const char *id, int nranks, int rank) {
  ring.name = std::string("/sinter-") + id;
  int fd = shm_open(ring.name.c_str(), O_CREAT | O_RDWR, 0600);
  size_t bytes = 4096 + kSlotBytes * static_cast<size_t>(nranks);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    std::fprintf(stderr, "fake NCCL: cannot make %s\n", ring.name.c_str());
    std::abort();
  }
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  ring.shared = static_cast<Shared *>(p);
  ring.slots = static_cast<unsigned char *>(p) + 4096;
  ring.nranks = nranks;
  ring.rank = rank;
  barrier(); // every rank has the segment: its name can go
  shm_unlink(ring.name.c_str());
}

cudaDataType_t asCudaType(ncclDataType_t t) {
  return t == ncclBfloat16  ? CUDA_R_16BF
         : t == ncclFloat16 ? CUDA_R_16F
                            : CUDA_R_32F;
}

void reduceAcrossRanks(void *data, size_t count, ncclDataType_t type,
                       ncclRedOp_t op) {
  const size_t elt = type == ncclFloat64 ? 8 : type == ncclFloat32 ? 4 : 2;
  if (count * elt > kSlotBytes) {
    std::fprintf(stderr, "fake NCCL: %zu bytes exceed a slot\n", count * elt);
    std::abort();
  }
  std::memcpy(ring.slots + kSlotBytes * static_cast<size_t>(ring.rank), data,
              count * elt);
  barrier();
  for (size_t i = 0; i < count; ++i) {
    if (type == ncclFloat64) {
      double sum = 0;
      for (int r = 0; r < ring.nranks; ++r)
        sum += reinterpret_cast<const double *>(
            ring.slots + kSlotBytes * static_cast<size_t>(r))[i];
      static_cast<double *>(data)[i] = op == ncclAvg ? sum / ring.nranks : sum;
      continue;
    }
    float sum = 0;
    for (int r = 0; r < ring.nranks; ++r)
      sum += loadElement(asCudaType(type),
                         ring.slots + kSlotBytes * static_cast<size_t>(r),
                         static_cast<int64_t>(i));
    storeElement(asCudaType(type), data, static_cast<int64_t>(i),
                 op == ncclAvg ? sum / static_cast<float>(ring.nranks) : sum);
  }
  barrier();
}

} // namespace

/// The runtime's wire kernels (runtime/Exec/CudaCommKernels.cpp) on the
/// host: an f32 bucket rounded into its bf16/f16 wire buffer, and widened
/// back times a scale.
bool runWireKernel(const std::string &name, void **params) {
  bool narrow = name.rfind("sinter_narrow_", 0) == 0,
       widen = name.rfind("sinter_widen_", 0) == 0;
  if (!narrow && !widen)
    return false;
  cudaDataType_t half =
      name.find("bf16") != std::string::npos ? CUDA_R_16BF : CUDA_R_16F;
  auto *in = reinterpret_cast<void *>(*static_cast<CUdeviceptr *>(params[0]));
  auto *out = reinterpret_cast<void *>(*static_cast<CUdeviceptr *>(params[1]));
  uint64_t n = *static_cast<uint64_t *>(params[2]);
  float scale = widen ? *static_cast<float *>(params[3]) : 1.0f;
  enqueueWork([=] {
    for (uint64_t i = 0; i < n; ++i) {
      auto k = static_cast<int64_t>(i);
      if (narrow)
        storeElement(half, out, k, static_cast<const float *>(in)[i]);
      else
        static_cast<float *>(out)[i] = loadElement(half, in, k) * scale;
    }
  });
  return true;
}

} // namespace fake

using namespace fake;

#pragma GCC visibility push(default)
extern "C" {

// NCCL.

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  *id = ncclUniqueId{};
  std::snprintf(id->internal, sizeof(id->internal), "fake-nccl-id-%d",
                static_cast<int>(getpid()));
  return ncclSuccess;
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
                                    ncclUniqueId id, int rank,
                                    ncclConfig_t *config) {
  static int comm_;
  *comm = reinterpret_cast<ncclComm_t>(&comm_);
  std::lock_guard<std::mutex> lock(mu);
  say("ncclCommInitRankConfig nranks=%d rank=%d id=%s blocking=%d", nranks,
      rank, id.internal, config ? config->blocking : -1);
  if (hostKernels() && nranks > 1)
    openRing(id.internal, nranks, rank);
  return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t *error) {
  std::lock_guard<std::mutex> lock(mu);
  *error = remoteError ? ncclRemoteError : ncclSuccess;
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t) {
  std::lock_guard<std::mutex> lock(mu);
  hung = nullptr;
  say("ncclCommAbort");
  return ncclSuccess;
}
ncclResult_t ncclCommFinalize(ncclComm_t) {
  std::lock_guard<std::mutex> lock(mu);
  say("ncclCommFinalize");
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t) {
  std::lock_guard<std::mutex> lock(mu);
  say("ncclCommDestroy");
  return ncclSuccess;
}
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op, ncclComm_t,
                           cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu);
  if (ring.shared) {
    if (send != recv || (op != ncclSum && op != ncclAvg))
      return ncclInvalidArgument; // the executor's all-reduces are in place
    enqueueWork([=] { reduceAcrossRanks(recv, count, type, op); });
  }
  // A captured all-reduce runs (hangs, fails) at each replay of the graph.
  if (capturing)
    capturedAllReduces.push_back(stream);
  else
    runAllReduce(stream);
  say("ncclAllReduce count=%zu type=%d op=%d S%d%s", count,
      static_cast<int>(type), static_cast<int>(op), idOf(stream),
      capturing ? " (captured)" : "");
  return ncclSuccess;
}
const char *ncclGetErrorString(ncclResult_t result) {
  return result == ncclRemoteError ? "remote process exited or there was a "
                                     "network error"
                                   : "fake NCCL error";
}
const char *ncclGetLastError(ncclComm_t) {
  return remoteError ? "fake: rank 1 is gone" : "";
}

} // extern "C"
#pragma GCC visibility pop
