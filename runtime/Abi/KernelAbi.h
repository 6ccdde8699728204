//===- KernelAbi.h - how compiled kernels and the runtime meet ------------===//
//
// The object file sinterc writes exports five symbols (extern "C"):
//
//   const char sinter_program_json[];   the step program (docs/StepProgram.md)
//   const SinterKernelFn sinter_kernels[];  kernel i of the program's "kernels"
//   const char sinter_eval_program_json[];  the evaluation step program
//                                       (@eval_step), "" when there is none
//   const SinterKernelFn sinter_eval_kernels[];  its kernels (maybe empty)
//   const char sinter_default_data[];   the data folder to read when the user
//                                       names none (absolute), or ""
//
// Every kernel has the same C signature: one descriptor per slab (in the
// order of SlabId) and a half-open range [begin, end) of its outermost
// parallel dimension. The runtime may split a kernel's extent [0, extent)
// into disjoint ranges and run them on different threads in any order; a
// kernel whose extent is 1 is called once with [0, 1).
//
// A slab descriptor is laid out as MLIR's StridedMemRefType<int8_t, 1>
// (kernels are lowered with llvm.emit_c_interface), so the compiler emits
// plain `memref<?xi8>` arguments and this header needs no MLIR.
//
// Header-only C++17; part of the ABI both compiler/ and runtime/ include.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_ABI_KERNELABI_H
#define SINTER_RUNTIME_ABI_KERNELABI_H

#include <cstdint>

namespace sinter::abi {

/// The memory regions of a step. Buffers name a slab and a byte offset.
enum class SlabId : int {
  Arena = 0,     // activations, gradients, workspace: reused by liveness
  Params = 1,    // trainable and frozen parameters, updated in place
  OptState = 2,  // optimizer state, updated in place
  Io = 3,        // model inputs, the step counter and the scalar results
  Constants = 4, // constant tensors, filled once from the program
};
inline constexpr int kNumSlabs = 5;

/// Every buffer's offset in its slab is a multiple of this.
inline constexpr int64_t kBufferAlignment = 64;

/// MLIR's StridedMemRefType<int8_t, 1>.
struct SlabRef {
  int8_t *allocated;
  int8_t *aligned;
  int64_t offset;
  int64_t size;
  int64_t stride;
};

} // namespace sinter::abi

extern "C" {
typedef void (*SinterKernelFn)(const sinter::abi::SlabRef *arena,
                               const sinter::abi::SlabRef *params,
                               const sinter::abi::SlabRef *optState,
                               const sinter::abi::SlabRef *io,
                               const sinter::abi::SlabRef *constants,
                               int64_t begin, int64_t end);
}

#endif // SINTER_RUNTIME_ABI_KERNELABI_H
