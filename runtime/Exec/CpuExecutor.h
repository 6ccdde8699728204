//===- CpuExecutor.h - the executor whose device is the host --------------===//
//
// The CPU implementation of Executor (Executor.h). It owns
//
//   - the five slabs, page-aligned and zero-filled (anonymous mappings, so
//     untouched pages cost nothing), allocated once (except the params and
//     opt_state slabs of an executor created to share another's state:
//     those are the other's), and their SlabRef
//     descriptors (allocated = aligned = base, offset 0, size = bytes,
//     stride 1) that every kernel receives;
//   - the constants, copied in at creation, and every hyper argument
//     (e.g. the peak learning rate) set to its default;
//   - one BoundMatmul per matmul step, created at creation (prepare), so
//     that run() allocates nothing and creates no oneDNN primitive.
//
// run() executes the steps in order. A kernel step whose extent is above 1
// is split into min(threads, extent) contiguous chunks on OpenMP threads;
// OpenMP because oneDNN's CPU runtime is libgomp too, and two thread pools
// on the same cores would fight. Kernels honour [begin, end), so results
// do not depend on the thread count. upload() and download() are memcpy
// after the shared checks.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_EXEC_CPUEXECUTOR_H
#define SINTER_RUNTIME_EXEC_CPUEXECUTOR_H

#include "runtime/Exec/Executor.h"

#include <array>

namespace sinter::exec {

class CpuExecutor final : public Executor {
public:
  /// What Executor::create does, with the concrete type.
  static absl::StatusOr<std::unique_ptr<CpuExecutor>>
  create(StepProgram program, const SinterKernelFn *kernels,
         const ExecutorOptions &options = {});
  ~CpuExecutor() override;

  int threads() const override { return numThreads; }
  absl::Status run() override;
  absl::Status shareCollectiveBuffers() override;
  absl::Status upload(int64_t bufferId, const void *host,
                      size_t bytes) override;
  absl::Status download(int64_t bufferId, void *host,
                        size_t bytes) const override;
  absl::Status downloadPart(int64_t bufferId, size_t offset, void *host,
                            size_t bytes) const override;
  absl::Status zeroBuffer(int64_t bufferId) override;
  absl::Status setStep(int64_t step) override;
  absl::StatusOr<int64_t> step() const override;
  absl::Status setHyper(std::string_view name, double value) override;
  const Profile &profile() const override { return recorder.profile(); }
  std::string formatProfile(int topKernels = 10) const override;

  /// CPU only, for tests of the slab layout: the descriptor kernels receive
  /// for `slab`, pointing into host memory.
  const abi::SlabRef &hostSlab(abi::SlabKind slab) const {
    return refs[static_cast<int>(slab)];
  }

private:
  explicit CpuExecutor(StepProgram program) : Executor(std::move(program)) {}
  /// The bytes of buffer `id`, which the caller has range-checked.
  void *bufferData(int64_t id) const;
  void runKernel(int64_t index);

  const SinterKernelFn *kernels = nullptr;
  int numThreads = 1;
  bool profiling = false;
  std::array<int8_t *, abi::kNumSlabs> slabs{};
  std::array<size_t, abi::kNumSlabs> slabSizes{}; // mapped bytes; 0: shared
  std::array<abi::SlabRef, abi::kNumSlabs> refs{};
  std::unique_ptr<MatmulBackend> backend;
  std::vector<std::unique_ptr<BoundMatmul>> matmuls; // by step index
  int64_t stepBuffer = -1;
  ProfileRecorder recorder{prog};
};

} // namespace sinter::exec

#endif // SINTER_RUNTIME_EXEC_CPUEXECUTOR_H
