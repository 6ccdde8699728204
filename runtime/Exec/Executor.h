//===- Executor.h - what runs a step program, whatever the device ---------===//
//
// An Executor owns the memory a parsed StepProgram runs in (its five slabs,
// on the device) and runs the program's steps there. This is the interface
// the trainer and the binary's main() drive; they never see device memory:
//
//   - What differs by device is virtual: run(), upload() and download() (the
//     only ways bytes move between the host and a buffer: exactly the
//     buffer's byte size, checked, a Status either way), the step counter,
//     hyper arguments, the profile and its report, and the thread count.
//   - Everything else is built here on upload/download, once for every
//     device: buffers as HostTensors (readBuffer, writeBuffer), a metric's
//     value (scalarValue), parameter initialization computed on the host
//     and uploaded, bit-identical to the reference interpreter
//     (compiler/Interpreter/Initializers.cpp), arguments from and results to
//     safetensors files by name.
//
// create() makes the CPU executor (CpuExecutor.h): slabs in host memory,
// kernels split over OpenMP threads, matmuls by oneDNN; or, for a binary
// compiled with --target=cuda, the CUDA executor (CudaExecutor.h), another
// implementation of the same interface.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_EXEC_EXECUTOR_H
#define SINTER_RUNTIME_EXEC_EXECUTOR_H

#include "abi/KernelAbi.h"
#include "runtime/Exec/Matmul.h"
#include "runtime/Exec/Numerics.h"
#include "runtime/Exec/StepProgram.h"
#include "runtime/Formats/HostTensor.h"
#include "runtime/Formats/SafeTensors.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sinter::exec {

struct ExecutorOptions {
  /// Threads for kernels and oneDNN; 0 means every core the process may use
  /// (omp_get_num_procs()).
  int threads = 0;
  /// Accumulate per-step time (see Profile); off costs nothing in run().
  bool profile = false;
  MatmulBackendOptions matmul;
  /// Gradient accumulation: run in the params and opt_state slabs of this
  /// executor (which must outlive the new one) instead of new ones, so that
  /// the accumulate program updates the training program's accumulators
  /// and reads its parameters with no copy. Every param and accumulator
  /// argument must lie where the other program has the argument of the
  /// same name (checkSharedState), and those two slabs must be no larger.
  const class Executor *shareStateWith = nullptr;
  /// A CUDA binary's kernels (the object's sinter_cuda_module, a serialized
  /// abi::CudaModule): set, create() makes the CUDA executor
  /// (CudaExecutor.h), which only CUDA binaries link.
  std::string_view cudaModule;
};

/// Whether `program` may run in `state`'s params and opt_state slabs:
/// every param and accumulator argument of `program` is one of `state`'s
/// with the same kind, slab, offset, dtype and shape, and no slab of the
/// two is larger than `state`'s. The error names the first that is not.
absl::Status checkSharedState(const StepProgram &program,
                              const StepProgram &state);

/// Time spent in run(), by step kind and per kernel.
struct Profile {
  int64_t runs = 0;
  /// The first run's total: it first touches the arena's pages and oneDNN's
  /// scratch, so it is reported apart and the other fields leave it out
  /// once a second run exists. Negative before any run.
  double firstRunSeconds = -1;
  double totalSeconds = 0;
  double kernelSeconds = 0, matmulSeconds = 0, copySeconds = 0;
  /// Time spent handing collectives over and waiting for them: the
  /// communication the step could not hide.
  double collectiveSeconds = 0;
  std::vector<double> perKernelSeconds; // by kernel index
  std::vector<int64_t> perKernelCalls;
  /// By step index: matmuls, and collectives' starts and dones (the time
  /// the step waited there); kernels' and copies' entries stay 0.
  std::vector<double> perStepSeconds;
};

/// A profiled run's times, step by step, into Profile: what every device
/// records (host clocks around each step on the CPU; events on a GPU).
class ProfileRecorder {
public:
  /// Empty, with the per-kernel and per-step vectors sized for `program`.
  explicit ProfileRecorder(const StepProgram &program);
  /// Step `step` of the run in progress took `seconds`: counted as its
  /// kind (kernel, matmul, copy, or a collective's start or done).
  void addStep(const StepProgram &program, int64_t step, double seconds);
  /// The run in progress waited `seconds` for a collective at `step` (its
  /// start or done).
  void addCommWait(int64_t step, double seconds) {
    current.collectiveSeconds += seconds;
    current.perStepSeconds[static_cast<size_t>(step)] += seconds;
  }
  /// The run in progress took `seconds` in all: it joins the first run or
  /// the later ones.
  void finishRun(double seconds);
  /// Every run after the first; the first run alone while it is the only
  /// one.
  const Profile &profile() const { return prof.runs > 0 ? prof : firstRun; }
  /// Whether profile() is the first run alone.
  bool firstOnly() const { return prof.runs == 0; }

private:
  Profile prof;     // runs after the first
  Profile firstRun; // the first run (warm-up)
  Profile current;  // the run in progress
};

/// The multi-line report of `p` (one of a ProfileRecorder's profiles)
/// that formatProfile prints: "profile: R runs, <device>, T ms/run", the
/// split into matmuls, kernels, copies, comm wait and overhead, then the
/// `topKernels` slowest kernels and matmuls. `firstOnly` says that `p`
/// is the first run alone.
std::string formatProfileReport(const StepProgram &program, const Profile &p,
                                bool firstOnly, std::string_view device,
                                int topKernels);

/// Runs a program's collectives (data parallelism): start() hands one over
/// (it may return before the bytes are reduced) and done() waits for it.
/// The trainer's runs them with Gloo on a communication thread
/// (runtime/Train/DataParallel.h). Both are called in program order, the
/// same on every rank; an error names the collective, and no later step of
/// the run executes.
class CollectiveRunner {
public:
  virtual ~CollectiveRunner();
  virtual absl::Status start(int64_t index, const Collective &collective,
                             void *data, int64_t count, abi::DType type) = 0;
  virtual absl::Status done(int64_t index, const Collective &collective) = 0;

  /// For an executor that runs the collectives on its device itself (CUDA,
  /// with NCCL): this rank, the job's size and how long a collective may
  /// take before the job is declared stuck; one rank by default.
  struct Job {
    int rank = 0;
    int worldSize = 1;
    std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  };
  virtual Job job() const { return {}; }
  /// Rank 0's `bytes` at `data`, on every rank (a device communicator's
  /// id, through the job's rendezvous). `what` names it in errors.
  virtual absl::Status shareBytes(void *data, size_t bytes,
                                  std::string_view what);
  /// Offers the page-aligned host memory [base, base + bytes), which holds
  /// collective buffers, to be shared with the other ranks so that their
  /// all-reduces need no copies (Communicator::shareMemory). Every rank
  /// offers the same sizes in the same order. Nothing by default.
  virtual absl::Status shareHostMemory(void *base, size_t bytes);
  /// How errors name `collective` over `bytes` (the runner knows the step):
  /// "all-reduce of bucket 2 (12327936 bytes: transformer.wte.weight and
  /// 23 more) at step 598". The collective's name by default.
  virtual std::string describe(const Collective &collective,
                               int64_t bytes) const;
};

class Executor {
public:
  /// The CPU executor: allocates the slabs, fills the constants, sets every
  /// hyper argument to its default and prepares the matmuls. `kernels` must
  /// hold program.kernels.size() non-null entries (it may be null when the
  /// program has no kernels).
  static absl::StatusOr<std::unique_ptr<Executor>>
  create(StepProgram program, const SinterKernelFn *kernels,
         const ExecutorOptions &options = {});

  virtual ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  const StepProgram &program() const { return prog; }

  //===--------------------------------------------------------------------===//
  // What differs by device
  //===--------------------------------------------------------------------===//

  /// Who runs the collectives; null (the default) is one rank, where every
  /// all-reduce leaves its buffer as it is (the sum or mean of one value).
  /// The runner must outlive every run().
  void setCollectives(CollectiveRunner *runner) { collectives = runner; }
  /// After setCollectives: offers the pages of the program's collective
  /// buffers to the runner (CollectiveRunner::shareHostMemory), once, before
  /// the first run. A device executor whose collectives run on the device
  /// has nothing to offer.
  virtual absl::Status shareCollectiveBuffers() { return absl::OkStatus(); }
  CollectiveRunner *collectiveRunner() const { return collectives; }

  /// Checked runs (--check-numerics): while on, run() scans every float
  /// buffer each step reads, before the step, and writes, after it, and
  /// numerics() holds the steps of the last run whose buffers were not all
  /// finite (Numerics.h says what findFault makes of them). A checked run
  /// reads each buffer it touches once or twice more.
  void setCheckNumerics(bool on) { checkNumerics = on; }
  const NumericsLog &numerics() const { return numericsLog; }

  /// Traced runs (the binary's --trace, StepTrace.h): while set, run() goes
  /// step by step as a checked run does and calls `observer` after each
  /// step with the step's index and its buffers readable on the host
  /// through `view` (StepScanner::View); an error stops the run.
  using StepObserver =
      std::function<absl::Status(int64_t step, const StepScanner::View &view)>;
  void setStepObserver(StepObserver o) { observer = std::move(o); }

  /// Threads the executor runs kernels and matmuls on.
  virtual int threads() const = 0;
  /// Runs every step once, in order.
  virtual absl::Status run() = 0;
  /// Copies `bytes` bytes at `host` into buffer `bufferId`. `bytes` must be
  /// the buffer's byte size: an unknown id or another size is
  /// InvalidArgument naming the buffer, and nothing is copied.
  virtual absl::Status upload(int64_t bufferId, const void *host,
                              size_t bytes) = 0;
  /// Copies buffer `bufferId` (all `bytes` of it, checked like upload) to
  /// `host`.
  virtual absl::Status download(int64_t bufferId, void *host,
                                size_t bytes) const = 0;
  /// Copies bytes [offset, offset + bytes) of buffer `bufferId` to `host`: a
  /// piece of it (a checkpoint streams the state out a piece at a time). A
  /// range outside the buffer is InvalidArgument naming it.
  virtual absl::Status downloadPart(int64_t bufferId, size_t offset, void *host,
                                    size_t bytes) const = 0;
  /// Sets every byte of buffer `bufferId` to zero (an accumulator, between
  /// steps).
  virtual absl::Status zeroBuffer(int64_t bufferId) = 0;
  /// Writes `step` into the step argument's buffer (if the program has one).
  virtual absl::Status setStep(int64_t step) = 0;
  /// Writes which B-row block of the global batch the next run computes
  /// (rank x K + micro-batch) into the rank argument, if the program has
  /// one: its dropout masks depend on it.
  absl::Status setRank(int64_t rank);
  /// The step argument's current value (0 without one).
  virtual absl::StatusOr<int64_t> step() const = 0;
  /// Sets the hyper argument `name` (e.g. "lr", the peak learning rate) to
  /// `value`, rounded to its dtype. Every hyper argument holds its
  /// program default from creation on. NotFound for a name that is not a
  /// hyper argument; InvalidArgument for a non-finite value.
  virtual absl::Status setHyper(std::string_view name, double value) = 0;
  /// Every run after the first; the first run alone while it is the only
  /// one (Profile::firstRunSeconds is set either way). Empty without
  /// ExecutorOptions::profile.
  virtual const Profile &profile() const = 0;
  /// A multi-line report of profile(): total, matmul, kernels, copies, and
  /// the `topKernels` kernels that took longest.
  virtual std::string formatProfile(int topKernels = 10) const = 0;

  //===--------------------------------------------------------------------===//
  // Built on upload and download
  //===--------------------------------------------------------------------===//

  /// Element 0 of buffer `id` as a double (a metric's value): exact for
  /// every float type and for integers up to 2^53.
  absl::StatusOr<double> scalarValue(int64_t id) const;

  /// Buffer `id` as a HostTensor (a copy).
  absl::StatusOr<formats::HostTensor> readBuffer(int64_t id) const;
  /// Buffer `id` as a tensor `name` to write streamed, read with
  /// downloadPart (no copy of the whole); the executor must outlive it.
  absl::StatusOr<formats::TensorSource> bufferSource(int64_t id,
                                                     std::string name) const;
  /// Copies `tensor` into buffer `id`; its dtype and shape must match.
  /// Errors name `what` ("argument 'wte'").
  absl::Status writeBuffer(int64_t id, const formats::HostTensor &tensor,
                           std::string_view what);

  /// Fills one param argument from its `init`, exactly as the reference
  /// interpreter does (computed on the host, then uploaded); error if it
  /// has none.
  absl::Status initializeParameter(const Argument &argument);
  /// initializeParameter for every param argument.
  absl::Status initializeParameters();

  /// Sets every argument named in `file`; returns the names in `file` that
  /// match no argument (the caller decides whether that is an error).
  absl::StatusOr<std::vector<std::string>>
  setArguments(const formats::SafeTensorsFile &file);

  /// The value of a result after run(). For param/opt_state results this
  /// is the argument buffer of the same name (the state contract).
  absl::StatusOr<formats::HostTensor> readResult(const Result &result) const;
  /// Every result by name, in result order.
  absl::StatusOr<formats::SafeTensorsFile> readResults() const;

protected:
  explicit Executor(StepProgram program);

  /// What every device's upload and download check first: `id` names a
  /// buffer and `bytes` is its byte size. `direction` is "upload to" or
  /// "download from", for the message.
  absl::Status checkTransfer(std::string_view direction, int64_t id,
                             size_t bytes) const;
  /// The same for a part of a buffer: [offset, offset + bytes) lies in it.
  absl::Status checkPart(std::string_view direction, int64_t id, size_t offset,
                         size_t bytes) const;

  /// The buffer of hyper argument `name` and `value` in its dtype (f32 or
  /// f64), after setHyper's checks; what a device's setHyper uploads.
  struct HyperValue {
    int64_t buffer = 0;
    unsigned char bytes[8] = {};
    size_t size = 0;
  };
  absl::StatusOr<HyperValue> hyperValue(std::string_view name,
                                        double value) const;

  StepProgram prog;
  CollectiveRunner *collectives = nullptr;
  bool checkNumerics = false;
  NumericsLog numericsLog;
  StepObserver observer;
};

} // namespace sinter::exec

#endif // SINTER_RUNTIME_EXEC_EXECUTOR_H
