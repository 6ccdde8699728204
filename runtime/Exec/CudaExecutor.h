//===- CudaExecutor.h - the executor whose device is an NVIDIA GPU --------===//
//
// The CUDA implementation of Executor (Executor.h), in the binaries
// `sinterc --target=cuda` links (library SinterCudaExec; a CPU binary has
// none of it). It loads the CUDA driver, cuBLASLt and (for a data-parallel
// job) NCCL with dlopen (CudaLibraries.h), so the binary starts on any
// machine and says in one line what is missing: no driver, no GPU, an
// architecture the kernels were not compiled for.
//
// What it owns on the device: the five slabs (zero-filled), the constants
// uploaded once, the CUDA module (the cubin of the device's architecture,
// or the newest older architecture's PTX for the driver to compile), a
// compute and a communication stream with the events of the step's queue
// plan (DeviceQueue.h), one cuBLASLt plan per matmul step (its algorithm
// from the heuristic, asked once at creation) with a workspace, and the
// job's NCCL communicator (created at the first collective). run() enqueues
// the plan (kernels with cuLaunchKernel, matmuls with cublasLtMatmul,
// copies with cuMemcpyDtoDAsync, all-reduces with ncclAllReduce on the
// communication stream; a bucket sent in bf16 or f16 rounded and widened
// around it by the runtime's own kernels, CudaCommKernels.cpp) and waits
// once at the end, polling NCCL so a stuck collective is aborted within the
// job's timeout. In a one-process job the first run() captures the plan as
// a CUDA graph and every run launches it (SINTER_CUDA_GRAPHS=0: enqueued
// each time). Uploads, downloads and fills go on the compute stream and
// are waited for.
//
// Every CUDA, cuBLASLt and NCCL error becomes a status naming the call,
// the step (kernel name, matmul shapes, collective) and the library's own
// message.
//
// A second executor made with shareStateWith (gradient accumulation) runs
// in the first one's params and opt_state slabs, which it never frees.
//
// Not yet here (docs/Cuda.md): CUDA graphs for a data-parallel job, pinned
// asynchronous staging of inputs, cuBLASLt's activation epilogues.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_EXEC_CUDAEXECUTOR_H
#define SINTER_RUNTIME_EXEC_CUDAEXECUTOR_H

#include "runtime/Exec/Executor.h"

#include <string_view>

namespace sinter::exec {

/// The CUDA executor for `program`, whose kernels are in `cudaModule` (a
/// serialized abi::CudaModule: the object's sinter_cuda_module).
absl::StatusOr<std::unique_ptr<Executor>>
createCudaExecutor(StepProgram program, std::string_view cudaModule,
                   const ExecutorOptions &options);

/// The image of `module` (a serialized abi::CudaModule) a device of
/// compute capability `major`.`minor` loads: the cubin of its own
/// architecture, else the PTX of the newest older one. `*isPtx` says
/// which. An error lists the architectures the module has. No GPU needed.
absl::StatusOr<std::string> pickCudaImage(std::string_view module, int major,
                                          int minor, bool *isPtx);

/// The PTX of the runtime's own kernels (CudaCommKernels.cpp): rounding a
/// bucket to bf16 or f16 for the wire and widening it back with a scale.
std::string commConversionPtx();

} // namespace sinter::exec

#endif // SINTER_RUNTIME_EXEC_CUDAEXECUTOR_H
