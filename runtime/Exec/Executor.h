//===- Executor.h - run a step program over its slabs ---------------------===//
//
// The executor owns what a parsed StepProgram needs to run:
//
//   - the five slabs, page-aligned and zero-filled (anonymous mappings, so
//     untouched pages cost nothing), allocated once, and
//     their SlabRef descriptors (allocated = aligned = base, offset 0,
//     size = bytes, stride 1) that every kernel receives;
//   - the constants, copied in at creation, and every hyper argument
//     (e.g. the peak learning rate) set to its default;
//   - one BoundMatmul per matmul step, created at creation (prepare), so
//     that run() allocates nothing and creates no oneDNN primitive.
//
// run() executes the steps in order. A kernel step whose extent is above 1
// is split into min(threads, extent) contiguous chunks on OpenMP threads;
// OpenMP because oneDNN's CPU runtime is libgomp too, and two thread pools
// on the same cores would fight. Kernels honour [begin, end), so results
// do not depend on the thread count.
//
// Also here: the state of a training run as the outside world sees it
// (arguments and results by name, HostTensor in and out, the step counter)
// and parameter initialization, bit-identical to the reference interpreter
// (compiler/Interpreter/Initializers.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_EXEC_EXECUTOR_H
#define SINTER_RUNTIME_EXEC_EXECUTOR_H

#include "runtime/Abi/KernelAbi.h"
#include "runtime/Exec/Matmul.h"
#include "runtime/Exec/StepProgram.h"
#include "runtime/Formats/HostTensor.h"
#include "runtime/Formats/SafeTensors.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace sinter::exec {

struct ExecutorOptions {
  /// Threads for kernels and oneDNN; 0 means every core the process may use
  /// (omp_get_num_procs()).
  int threads = 0;
  /// Accumulate per-step time (see Profile); off costs nothing in run().
  bool profile = false;
  MatmulBackendOptions matmul;
};

/// Time spent in run(), by step kind and per kernel.
struct Profile {
  int64_t runs = 0;
  /// The first run's total: it first touches the arena's pages and oneDNN's
  /// scratch, so it is reported apart and the other fields leave it out
  /// once a second run exists. Negative before any run.
  double firstRunSeconds = -1;
  double totalSeconds = 0;
  double kernelSeconds = 0, matmulSeconds = 0, copySeconds = 0;
  std::vector<double> perKernelSeconds; // by kernel index
  std::vector<int64_t> perKernelCalls;
};

class Executor {
public:
  /// Allocates the slabs, fills the constants and prepares the matmuls.
  /// `kernels` must hold program.kernels.size() non-null entries (it may be
  /// null when the program has no kernels).
  static absl::StatusOr<std::unique_ptr<Executor>>
  create(StepProgram program, const SinterKernelFn *kernels,
         const ExecutorOptions &options = {});
  ~Executor();

  const StepProgram &program() const { return prog; }
  int threads() const { return numThreads; }

  /// Runs every step once, in order.
  absl::Status run();
  /// Writes `step` into the step argument's buffer (if the program has one).
  void setStep(int64_t step);
  /// The step argument's current value (0 without one).
  int64_t step() const;
  /// Sets the hyper argument `name` (e.g. "lr", the peak learning rate) to
  /// `value`, rounded to its dtype. Every hyper argument holds its
  /// program default from creation on. NotFound for a name that is not a
  /// hyper argument; InvalidArgument for a non-finite value.
  absl::Status setHyper(std::string_view name, double value);

  /// The bytes of buffer `id` (which the caller has range-checked).
  void *bufferData(int64_t id);
  const void *bufferData(int64_t id) const;
  /// Element 0 of buffer `id` as a double (a metric's value): exact for
  /// every float type and for integers up to 2^53.
  double scalarValue(int64_t id) const;
  const abi::SlabRef &slabRef(abi::SlabId slab) const {
    return refs[static_cast<int>(slab)];
  }

  /// Buffer `id` as a HostTensor (a copy).
  formats::HostTensor readBuffer(int64_t id) const;
  /// Copies `tensor` into buffer `id`; its dtype and shape must match.
  /// Errors name `what` ("argument 'wte'").
  absl::Status writeBuffer(int64_t id, const formats::HostTensor &tensor,
                           std::string_view what);

  /// Fills one param argument from its `init`, exactly as the reference
  /// interpreter does; error if it has none.
  absl::Status initializeParameter(const Argument &argument);
  /// initializeParameter for every param argument.
  absl::Status initializeParameters();

  /// Sets every argument named in `file`; returns the names in `file` that
  /// match no argument (the caller decides whether that is an error).
  absl::StatusOr<std::vector<std::string>>
  setArguments(const formats::SafeTensorsFile &file);

  /// The value of a result after run(). For param/opt_state results this
  /// is the argument buffer of the same name (the state contract).
  formats::HostTensor readResult(const Result &result) const;
  /// Every result by name, in result order.
  formats::SafeTensorsFile readResults() const;

  /// Every run after the first; the first run alone while it is the only
  /// one (Profile::firstRunSeconds is set either way).
  const Profile &profile() const { return prof.runs > 0 ? prof : firstRun; }
  /// A multi-line report of profile(): total, matmul, kernels, copies, and
  /// the `topKernels` kernels that took longest.
  std::string formatProfile(int topKernels = 10) const;

private:
  Executor() = default;
  void runKernel(int64_t index);
  void finishProfiledRun(double seconds);

  StepProgram prog;
  const SinterKernelFn *kernels = nullptr;
  int numThreads = 1;
  bool profiling = false;
  std::array<int8_t *, abi::kNumSlabs> slabs{};
  std::array<size_t, abi::kNumSlabs> slabSizes{}; // mapped bytes
  std::array<abi::SlabRef, abi::kNumSlabs> refs{};
  std::unique_ptr<MatmulBackend> backend;
  std::vector<std::unique_ptr<BoundMatmul>> matmuls; // by step index
  int64_t stepBuffer = -1;
  Profile prof;     // runs after the first
  Profile firstRun; // the first run (warm-up)
  Profile current;  // the run in progress
};

} // namespace sinter::exec

#endif // SINTER_RUNTIME_EXEC_EXECUTOR_H
