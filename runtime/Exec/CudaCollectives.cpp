//===- CudaCollectives.cpp - the CUDA executor's NCCL communicator -------===//
//
// The data-parallel half of the CUDA executor (CudaExecutorImpl.h). The
// communicator, the wire kernels and the wire buffers are made at the
// start of the first run, before anything is captured in a graph
// (prepareCollectives): rank 0's id reaches the others through the job's
// rendezvous, and the communicator is non-blocking, so every call is
// polled (settleNccl) and a peer that never arrives is a timeout, not a
// hang. Each bucket's all-reduce goes on the communication stream, inside
// the step's graph when there is one; one sent in bf16 or f16 is rounded
// into a wire buffer and widened back around it by the runtime's own
// kernels (CudaCommKernels.cpp). The end of
// a run polls the streams and NCCL's async error (finishWithCollectives),
// and a watchdog thread aborts the communicator when the run's own thread
// is stuck inside the driver. Every call on the communicator holds ncclMu,
// as the abort does, so no call can see it freed.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/CudaExecutorImpl.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <chrono>

namespace sinter::exec::cuda {

void CudaExecutor::abortNccl() {
  std::lock_guard<std::mutex> lock(ncclMu);
  if (ncclComm)
    nccl->commAbort(ncclComm);
  ncclComm = nullptr;
}

absl::Status CudaExecutor::abortedError(std::string_view what) const {
  return sinter::DeadlineExceededError(
      SINTER_HERE,
      absl::StrFormat("%s did not finish: the step ran past the %d s of "
                      "--collective-timeout with an all-reduce in flight, "
                      "a peer died or hangs (the NCCL communicator is "
                      "aborted)",
                      what, job.timeout.count() / 1000));
}

void CudaExecutor::watch() {
  std::unique_lock<std::mutex> lock(watchMu);
  const auto limit = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         job.timeout + std::chrono::seconds(1))
                         .count();
  while (!watchStop) {
    watchCv.wait_for(lock, std::chrono::milliseconds(100));
    int64_t since = runSince.load();
    int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count();
    if (since && now - since > limit)
      abortNccl();
  }
}

absl::Status CudaExecutor::settleNccl(ncclResult_t r, std::string_view what) {
  auto t0 = std::chrono::steady_clock::now();
  while (r == ncclInProgress) {
    if (std::chrono::steady_clock::now() - t0 > job.timeout)
      return ncclTimedOut(what);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!withComm([&](ncclComm_t c) { nccl->commGetAsyncError(c, &r); }))
      return abortedError(what);
  }
  if (r != ncclSuccess) {
    std::string detail;
    withComm([&](ncclComm_t c) { detail = nccl->lastError(c); });
    return ncclFailed(what, r, detail);
  }
  return absl::OkStatus();
}

absl::Status CudaExecutor::ncclFailed(std::string_view what, ncclResult_t r,
                                      std::string_view detail) {
  abortNccl();
  absl::Status failed = sinter::InternalError(
      SINTER_HERE, absl::StrFormat("%s failed: %s%s%s", what,
                                   nccl->errorString(r),
                                   detail.empty() ? "" : ": ", detail));
  // NCCL's remote error: another rank died or its link went down.
  return r == ncclRemoteError ? markPeerFailure(failed, "a peer rank")
                              : failed;
}

absl::Status CudaExecutor::ncclTimedOut(std::string_view what) {
  abortNccl();
  return sinter::DeadlineExceededError(
      SINTER_HERE,
      absl::StrFormat("%s did not finish within %d s: a peer died or hangs "
                      "(the NCCL communicator is aborted)",
                      what, job.timeout.count() / 1000));
}

absl::Status CudaExecutor::openNccl() {
  SINTER_ASSIGN_OR_RETURN(nccl, loadNccl());
  ncclUniqueId id{};
  if (job.rank == 0)
    SINTER_RETURN_IF_ERROR(settleNccl(nccl->getUniqueId(&id),
                                      "making the NCCL communicator's id"));
  SINTER_RETURN_IF_ERROR(
      collectives->shareBytes(&id, sizeof(id), "the NCCL communicator's id"));
  // Non-blocking, so that a peer that never arrives is a timeout here, not
  // a hang; NCCL_* variables reach NCCL as they are.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r;
  {
    std::lock_guard<std::mutex> lock(ncclMu);
    r = nccl->commInitRankConfig(&ncclComm, job.worldSize, id, job.rank,
                                 &config);
  }
  ncclOpened = true;
  SINTER_RETURN_IF_ERROR(
      settleNccl(r, absl::StrFormat("creating the NCCL communicator of "
                                    "%d ranks",
                                    job.worldSize)));
  watchdog = std::thread([this] { watch(); });
  return absl::OkStatus();
}

std::string CudaExecutor::describeCollective(int64_t s) const {
  const Collective &c = prog.collectives[prog.steps[s].collective];
  std::string what = collectives->describe(c, prog.buffers[c.buffer].bytes);
  if (c.commType)
    what += *c.commType == sabi::ElementType::bf16 ? " in bf16" : " in f16";
  return what;
}

std::string
CudaExecutor::describeCollectives(const std::vector<int64_t> &steps) const {
  std::string text;
  for (int64_t s : steps)
    absl::StrAppend(&text, text.empty() ? "" : "; ", describeCollective(s));
  return text;
}

absl::Status CudaExecutor::prepareCollectives() {
  job = collectives->job();
  SINTER_RETURN_IF_ERROR(openNccl());
  wire.resize(prog.collectives.size());
  for (size_t i = 0; i < prog.collectives.size(); ++i) {
    const Collective &c = prog.collectives[i];
    if (!c.commType)
      continue;
    if (!wireModule) {
      std::string ptx = commConversionPtx();
      SINTER_CU(drv->moduleLoadData(&wireModule, ptx.c_str()),
                "loading the gradients' wire kernels (compiling their PTX)");
      for (int h = 0; h < 2; ++h) {
        const char *suffix = h == 0 ? "bf16" : "f16";
        SINTER_CU(drv->moduleGetFunction(
                      &narrowFn[h], wireModule,
                      absl::StrCat("sinter_narrow_", suffix).c_str()),
                  "loading the gradients' wire kernels");
        SINTER_CU(drv->moduleGetFunction(
                      &widenFn[h], wireModule,
                      absl::StrCat("sinter_widen_", suffix).c_str()),
                  "loading the gradients' wire kernels");
      }
    }
    const Buffer &b = prog.buffers[c.buffer];
    SINTER_CU(drv->memAlloc(&wire[i],
                            std::max<uint64_t>(b.numElements, 1) * 2),
              absl::StrFormat("allocating the wire buffer of all-reduce '%s'",
                              c.name));
  }
  return absl::OkStatus();
}

absl::Status
CudaExecutor::finishWithCollectives(const std::vector<int64_t> &inFlight) {
  // A watchdog instead of a wait: a collective a dead or stuck peer never
  // joins is an error naming it within the job's timeout.
  // Named only for an error: a healthy run formats nothing.
  auto named = [&] { return describeCollectives(inFlight); };
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    bool busy = false;
    for (CUstream stream : streams) {
      CUresult q = drv->streamQuery(stream);
      if (q == CUDA_ERROR_NOT_READY)
        busy = true;
      else if (q != CUDA_SUCCESS)
        return cudaError(SINTER_HERE, *drv, q, "cuStreamQuery",
                         "running the step");
    }
    // Checked also once the streams are idle: an error NCCL records as its
    // kernels exit is no success.
    ncclResult_t async = ncclSuccess;
    std::string detail;
    if (!withComm([&](ncclComm_t c) {
          nccl->commGetAsyncError(c, &async);
          if (async != ncclSuccess && async != ncclInProgress)
            detail = nccl->lastError(c);
        }))
      return abortedError(named());
    if (async != ncclSuccess && async != ncclInProgress)
      return ncclFailed(named(), async, detail);
    if (!busy)
      return absl::OkStatus();
    if (std::chrono::steady_clock::now() - t0 > job.timeout)
      return ncclTimedOut(named());
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

absl::Status CudaExecutor::enqueueCollective(int64_t s, CUstream stream,
                                             std::vector<int64_t> &inFlight) {
  const Step &step = prog.steps[s];
  // One rank: an all-reduce leaves its bucket as it is.
  if (!collectives || collectives->job().worldSize == 1)
    return absl::OkStatus();
  const Collective &c = prog.collectives[step.collective];
  if (!ncclOpened)
    return sinter::InternalError(
        SINTER_HERE, "an all-reduce enqueued before prepareCollectives()");
  const Buffer &b = prog.buffers[c.buffer];
  if (b.type != sabi::ElementType::f32 && b.type != sabi::ElementType::f64)
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrFormat("all-reduce '%s': its bucket is "
                                     "not f32 or f64",
                                     c.name));
  std::string what = describeCollective(s);
  if (c.commType) {
    SINTER_RETURN_IF_ERROR(allReduceHalf(c, step.collective, stream, what));
  } else {
    void *data = reinterpret_cast<void *>(address(c.buffer));
    ncclResult_t r = ncclSuccess;
    if (!withComm([&](ncclComm_t comm) {
          r = nccl->allReduce(
              data, data, static_cast<size_t>(b.numElements),
              b.type == sabi::ElementType::f32 ? ncclFloat32 : ncclFloat64,
              c.reduction == sabi::Collective::mean ? ncclAvg : ncclSum, comm,
              stream);
        }))
      return abortedError(what);
    SINTER_RETURN_IF_ERROR(settleNccl(r, what));
  }
  inFlight.push_back(s);
  return absl::OkStatus();
}

absl::Status CudaExecutor::launchConversion(CUfunction f,
                                            std::vector<void *> args,
                                            uint64_t n, CUstream stream,
                                            const std::string &what) {
  constexpr unsigned kBlock = 256;
  auto grid = static_cast<unsigned>(
      std::clamp<uint64_t>((n + kBlock - 1) / kBlock, 1, 4096));
  SINTER_CU(drv->launchKernel(f, grid, 1, 1, kBlock, 1, 1, 0, stream,
                              args.data(), nullptr),
            what);
  return absl::OkStatus();
}

absl::Status CudaExecutor::allReduceHalf(const Collective &c, int64_t index,
                                         CUstream stream,
                                         const std::string &what) {
  // The CPU's semantics (runtime/Train/DataParallel.cpp): every partial sum
  // rounded to the half type, the mean's division after widening.
  const Buffer &b = prog.buffers[c.buffer];
  if (b.type != sabi::ElementType::f32 ||
      (c.reduction != sabi::Collective::sum &&
       c.reduction != sabi::Collective::mean))
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrCat(what, ": only an f32 bucket summed or "
                                        "averaged travels in a half type"));
  const bool bf16 = *c.commType == sabi::ElementType::bf16;
  // Made by prepareCollectives, before any capture.
  CUdeviceptr w = index < static_cast<int64_t>(wire.size()) ? wire[index] : 0;
  if (!wireModule || !w)
    return sinter::InternalError(
        SINTER_HERE, absl::StrCat(what, ": its wire buffer was not made"));
  auto n = static_cast<uint64_t>(b.numElements);
  CUdeviceptr data = address(c.buffer);
  float scale = c.reduction == sabi::Collective::mean
                    ? 1.0f / static_cast<float>(job.worldSize)
                    : 1.0f;
  const int h = bf16 ? 0 : 1;
  SINTER_RETURN_IF_ERROR(launchConversion(narrowFn[h], {&data, &w, &n}, n,
                                          stream, what + ": rounding it"));
  ncclResult_t r = ncclSuccess;
  if (!withComm([&](ncclComm_t comm) {
        r = nccl->allReduce(reinterpret_cast<void *>(w),
                            reinterpret_cast<void *>(w),
                            static_cast<size_t>(n),
                            bf16 ? ncclBfloat16 : ncclFloat16, ncclSum, comm,
                            stream);
      }))
    return abortedError(what);
  SINTER_RETURN_IF_ERROR(settleNccl(r, what));
  return launchConversion(widenFn[h], {&w, &data, &n, &scale}, n, stream,
                          what + ": widening it");
}

} // namespace sinter::exec::cuda
