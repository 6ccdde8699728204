//===- CudaExecutorImpl.h - the CUDA executor's class, for its sources ---===//
//
// Private to runtime/Exec: the class behind createCudaExecutor
// (CudaExecutor.h), shared by its sources. CudaExecutor.cpp holds the
// device, the module, the matmuls, the queue plan's compute side, graphs,
// transfers and profiles; CudaCollectives.cpp the job's NCCL communicator:
// its creation, the all-reduces (and the half-precision wire around
// them), the polling and the watchdog that turn a stuck or failed
// collective into an error; CudaGeluForms.cpp the one-time check of
// cuBLASLt's GELU training epilogues.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_EXEC_CUDAEXECUTORIMPL_H
#define SINTER_RUNTIME_EXEC_CUDAEXECUTORIMPL_H

#include "runtime/Exec/CudaExecutor.h"

#include "runtime/Exec/CudaLibraries.h"
#include "runtime/Exec/DeviceQueue.h"

#include "runtime/Support/Status.h"

#include "absl/strings/str_format.h"

#include <cublasLt.h>
#include <cuda.h>
#include <nccl.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace sinter::exec::cuda {

namespace sabi = sinter::abi;

/// The function a call's text calls ("lt->matmul" of "lt->matmul(h, ...)"):
/// messages name it without its arguments.
inline std::string_view callee(std::string_view call) {
  return call.substr(0, call.find('('));
}

#define SINTER_CU(call, what)                                                  \
  do {                                                                         \
    CUresult sinter_cu_ = (call);                                              \
    if (sinter_cu_ != CUDA_SUCCESS)                                            \
      return cudaError(SINTER_HERE, *drv, sinter_cu_, callee(#call), what);    \
  } while (0)

#define SINTER_LT(call, what)                                                  \
  do {                                                                         \
    cublasStatus_t sinter_lt_ = (call);                                        \
    if (sinter_lt_ != CUBLAS_STATUS_SUCCESS)                                   \
      return sinter::InternalError(                                            \
          SINTER_HERE,                                                         \
          absl::StrFormat("%s: %s failed: %s", what, callee(#call),            \
                          lt->statusString(sinter_lt_)));                      \
  } while (0)

/// One matmul step on cuBLASLt: descriptors and algorithm made once.
struct LtMatmul {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  float alpha = 1;
  /// Per call: the byte offsets of rhs (A), lhs (B) and out (D) from their
  /// buffers; one entry for a strided-batched call.
  struct Call {
    int64_t a = 0, b = 0, d = 0;
  };
  std::vector<Call> calls;
  CUdeviceptr rhs = 0, lhs = 0, out = 0;
  /// Its scratch: the program's workspace buffer, or the executor's
  /// fallback for a program without one.
  CUdeviceptr workspace = 0;
  size_t workspaceBytes = 0;
  /// A matmul that skips a triangle (MatmulStep::triangle): one LtMatmul a
  /// block along the diagonal, each with its own layouts and algorithm;
  /// this one then makes no call (and holds no descriptor) of its own.
  std::vector<std::unique_ptr<LtMatmul>> blocks;
};

/// The cuBLASLt workspace of a program that has none of its own.
inline constexpr size_t kWorkspaceBytes = size_t(32) << 20;
/// Pinned host memory that uploads to the io slab are staged through.
inline constexpr size_t kStagingBytes = size_t(8) << 20;

class CudaExecutor final : public Executor {
public:
  static absl::StatusOr<std::unique_ptr<CudaExecutor>>
  create(StepProgram program, std::string_view module,
         const ExecutorOptions &options);
  ~CudaExecutor() override;

  int threads() const override { return 1; }
  absl::Status run() override;
  absl::Status upload(int64_t bufferId, const void *host,
                      size_t bytes) override;
  absl::Status download(int64_t bufferId, void *host,
                        size_t bytes) const override;
  absl::Status downloadPart(int64_t bufferId, size_t offset, void *host,
                            size_t bytes) const override;
  absl::Status zeroBuffer(int64_t bufferId) override;
  /// Waits for the compute stream. Transfers and fills go on it (the
  /// streams do not synchronize with the legacy default stream) and are
  /// waited for, so a run, the other executor sharing the state, or the
  /// host never sees them half done; except a staged upload (stage()),
  /// which only work on the same stream reads.
  absl::Status syncCompute(std::string_view what) const;
  absl::Status setStep(int64_t step) override;
  absl::StatusOr<int64_t> step() const override;
  absl::Status setHyper(std::string_view name, double value) override;
  const Profile &profile() const override { return recorder.profile(); }
  std::string formatProfile(int topKernels) const override;

private:
  explicit CudaExecutor(StepProgram program) : Executor(std::move(program)) {}
  absl::Status open(std::string_view module);
  absl::Status prepareMatmul(size_t stepIndex, const MatmulStep &mm);
  /// Runs cuBLASLt's tanh-GELU training forms (GELU_AUX_BIAS, DGELU_BGRAD)
  /// once on a small product and holds them against their definitions;
  /// an error names the form and the element that differs
  /// (CudaGeluForms.cpp).
  struct GeluForms {
    bool auxBias = false, aux = false, dgelu = false, dgeluBiasGrad = false;
    bool any() const { return auxBias || aux || dgelu || dgeluBiasGrad; }
  };
  absl::Status checkGeluForms(const GeluForms &used);
  /// An upload to the io slab (the batch, the step, the rank,
  /// hyperparameters: this executor's alone) of at most kStagingBytes:
  /// copied into pinned memory and from there to the device by DMA on the
  /// compute stream, not waited for: the run that reads it is enqueued
  /// behind it on the same stream. False when the pinned memory could not
  /// be had (then upload() copies from pageable memory and waits).
  absl::StatusOr<bool> stage(int64_t bufferId, const void *host, size_t bytes,
                             const std::string &what);
  /// Puts one run of the queue plan on the streams; `inFlight` gets the
  /// program steps of the all-reduces started (describeCollectives names
  /// them). `timed`: an event before and after each operation on the
  /// compute stream (recordTimes).
  absl::Status enqueue(std::vector<int64_t> &inFlight, bool timed = false);
  /// Puts program step `s` (a kernel, matmul or copy) on `stream`.
  absl::Status enqueueComputeStep(int64_t s, CUstream stream);
  /// Puts the all-reduce that program step `s` starts on `stream` (nothing
  /// for one rank); `s` is appended to `inFlight`.
  absl::Status enqueueCollective(int64_t s, CUstream stream,
                                 std::vector<int64_t> &inFlight);
  /// What the all-reduce program step `s` starts is, for messages: its
  /// bucket, first parameter and the job's current step, and its wire type.
  std::string describeCollective(int64_t s) const;
  /// The same for each of `steps`, joined.
  std::string describeCollectives(const std::vector<int64_t> &steps) const;
  /// Everything a data-parallel run needs made before its first enqueue,
  /// which may be a graph's capture (no allocation, module load or NCCL
  /// set-up may happen inside one): the communicator, the wire kernels and
  /// each half bucket's wire buffer.
  absl::Status prepareCollectives();
  /// run() with --check-numerics: step by step, each step's buffers
  /// scanned on the host.
  absl::Status runChecked();
  /// A profiled run, after the streams are idle: the time between each two
  /// of enqueue()'s events into the recorder.
  absl::Status recordTimes();
  /// Records enqueue() as the CUDA graph every later run replays.
  absl::Status captureGraph();
  /// NCCL: the communicator of the job (created at the first collective),
  /// the status of an NCCL call that may still be in progress (polled up to
  /// the job's timeout, then the communicator is aborted), and the end of a
  /// run with collectives (the streams polled, not waited on).
  absl::Status openNccl();
  /// A bucket sent in bf16 or f16: rounded into its wire buffer, summed
  /// there by NCCL, widened back (times 1/world size for a mean), all on
  /// the communication `stream`.
  absl::Status allReduceHalf(const Collective &c, int64_t index,
                             CUstream stream, const std::string &what);
  /// Grid-stride launch of one of the wire kernels over `n` elements.
  absl::Status launchConversion(CUfunction f, std::vector<void *> args,
                                uint64_t n, CUstream stream,
                                const std::string &what);
  absl::Status settleNccl(ncclResult_t r, std::string_view what);
  absl::Status finishWithCollectives(const std::vector<int64_t> &inFlight);
  void abortNccl();
  /// Calls fn(comm) under ncclMu while the communicator lives; false once
  /// it was aborted, here or by the watchdog.
  template <typename Fn> bool withComm(Fn fn) {
    std::lock_guard<std::mutex> lock(ncclMu);
    if (!ncclComm)
      return false;
    fn(ncclComm);
    return true;
  }
  /// What a collective gets once the communicator was aborted.
  absl::Status abortedError(std::string_view what) const;
  /// Aborts the communicator; the error of `what` having failed with `r`
  /// (NCCL's `detail`), marked as a peer's failure for a remote error.
  absl::Status ncclFailed(std::string_view what, ncclResult_t r,
                          std::string_view detail);
  /// Aborts the communicator; the error of `what` not done in time.
  absl::Status ncclTimedOut(std::string_view what);
  /// The watchdog thread's loop (see `watchdog`).
  void watch();
  CUdeviceptr address(int64_t buffer) const {
    const Buffer &b = prog.buffers[buffer];
    return slabs[b.slab] + static_cast<CUdeviceptr>(b.offset);
  }

  const CudaDriver *drv = nullptr;
  const CublasLt *lt = nullptr;
  CUdevice device = 0;
  bool haveContext = false;
  /// The compute and communication streams (DeviceQueue.h), and the
  /// events of the plan that orders them.
  std::array<CUstream, 2> streams{};
  std::vector<CUevent> events;
  QueuePlan plan;
  CUmodule module = nullptr;
  /// The step as a CUDA graph, captured at the first run
  /// (SINTER_CUDA_GRAPHS=0 turns it off), and the program steps of the
  /// all-reduces it holds (named in its errors, for the step it replays).
  bool useGraph = true;
  CUgraph graph = nullptr;
  CUgraphExec graphExec = nullptr;
  std::vector<int64_t> graphCollectives;
  /// The staging memory (pinned, made at the first staged upload), how
  /// much of it holds copies the compute stream may still be reading (none
  /// once that stream was waited for), and whether pinning failed.
  void *staging = nullptr;
  mutable size_t stagingUsed = 0;
  bool stagingUnavailable = false;
  cublasLtHandle_t ltHandle = nullptr;
  CUdeviceptr workspace = 0;
  std::array<CUdeviceptr, sabi::kNumSlabs> slabs{};
  /// The slabs that are another executor's (shareStateWith), not freed.
  std::array<bool, sabi::kNumSlabs> borrowed{};
  /// Each slab's memref descriptor, as the kernels take it.
  std::array<std::array<int64_t, 5>, sabi::kNumSlabs> slabDescriptors{};
  std::vector<CUfunction> functions; // by kernel index
  std::vector<std::vector<int64_t>> words;
  std::vector<std::vector<void *>> params;
  std::vector<std::unique_ptr<LtMatmul>> matmuls; // by step index
  /// Rows per block of a matmul that skips a triangle; 0: the default
  /// (ExecutorOptions::matmul.triangleBlockRows).
  int64_t triangleBlockRows = 0;
  int64_t stepBuffer = -1;
  const Nccl *nccl = nullptr;
  /// The job's communicator: made at the first run, null again once
  /// aborted. Every call on it holds ncclMu, as does the watchdog's abort.
  ncclComm_t ncclComm = nullptr;
  bool ncclOpened = false;
  std::mutex ncclMu;
  CollectiveRunner::Job job;
  /// The watchdog of a data-parallel job: a thread that aborts the
  /// communicator when a run has gone on a second past the job's timeout.
  /// run()'s own polling reports a stuck all-reduce first; this catches a
  /// run blocked inside the driver (a launch queued behind the stuck
  /// collective can wait in cuLaunchKernel), which the abort unblocks.
  std::thread watchdog;
  std::mutex watchMu;
  std::condition_variable watchCv;
  bool watchStop = false;
  /// When the run in progress started (steady clock, ns); 0 between runs.
  std::atomic<int64_t> runSince{0};
  /// The wire kernels (commConversionPtx), loaded at the first half bucket:
  /// narrow and widen, for bf16 [0] and f16 [1]; each half bucket's wire
  /// buffer, by collective index.
  CUmodule wireModule = nullptr;
  std::array<CUfunction, 2> narrowFn{}, widenFn{};
  std::vector<CUdeviceptr> wire;
  /// --profile: an event recorded on the compute stream before the first
  /// operation there and after each (timing enabled, unlike the plan's),
  /// and the times they give, per step.
  bool profiling = false;
  std::vector<CUevent> timing;
  ProfileRecorder recorder{prog};
  std::string deviceName;
};

} // namespace sinter::exec::cuda

#endif // SINTER_RUNTIME_EXEC_CUDAEXECUTORIMPL_H
