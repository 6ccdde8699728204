//===- FakeCuda.h - what the stand-in CUDA libraries share ------*- C++ -*-===//
//
// For tests only: the stand-in driver, cuBLASLt and NCCL (FakeCuda.cpp
// says what they are and what they check) are one shared library in three
// sources; this is the state and the helpers they share. Every call into
// the stand-in holds `mu`.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_TEST_UNIT_RUNTIME_FAKECUDA_H
#define SINTER_TEST_UNIT_RUNTIME_FAKECUDA_H

#include <cublasLt.h>
#include <cuda.h>
#include <nccl.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace fake {

extern std::mutex mu;
/// One line to $SINTER_FAKE_CUDA_LOG (".<RANK>" appended in a job).
void say(const char *format, ...) __attribute__((format(printf, 1, 2)));
/// A stream's or event's number in the log (S1, E3; 0 for null).
int idOf(const void *handle);
/// The stream capturing a graph, if any.
extern const void *capturing;
/// The stream an unfinished all-reduce holds ($SINTER_FAKE_NCCL=hang), and
/// whether a peer "died" during one (=error).
extern const void *hung;
extern bool remoteError;
/// The streams of the all-reduces captured so far in the graph being
/// captured (their faults happen at each replay).
extern std::vector<const void *> capturedAllReduces;
/// An all-reduce "running" (mu held): $SINTER_FAKE_NCCL's fault, if any.
void runAllReduce(const void *stream);

/// Work that computes: run now, or, inside a capture, kept for the graph
/// and run at each of its replays (mu held).
using Work = std::function<void()>;
void enqueueWork(Work w);
/// The library of the kernels' host versions ($SINTER_FAKE_CUDA_KERNELS),
/// or null: whether the stand-in computes at all.
void *hostKernels();

/// The largest power of two up to 256 that divides `p`.
uint32_t alignmentOf(const void *p);
/// Element i of an f32, bf16 or f16 array, and a store rounded to nearest
/// even.
float loadElement(cudaDataType type, const void *p, int64_t i);
void storeElement(cudaDataType type, void *p, int64_t i, float v);

/// The runtime's wire kernels on the host (FakeNccl.cpp): false if `name`
/// is not one.
bool runWireKernel(const std::string &name, void **params);

} // namespace fake

#endif // SINTER_TEST_UNIT_RUNTIME_FAKECUDA_H
