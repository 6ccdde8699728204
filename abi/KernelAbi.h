//===- KernelAbi.h - how compiled kernels and the runtime meet ------------===//
//
// The object file sinterc writes exports, for each program it holds (the
// training step; the evaluation step when there is one), the serialized
// program, its size and its kernel table (the names are abi::kStepProgram and
// abi::kEvalProgram in Abi.h), and the default data folder:
//
//   const unsigned char sinter_program[];  the step program (StepProgram.proto)
//   const uint64_t sinter_program_size;    its bytes
//   const SinterKernelFn sinter_kernels[]; kernel i of the program's "kernels"
//   (sinter_eval_program, sinter_eval_program_size, sinter_eval_kernels: the
//    evaluation program's, absent without one)
//   const char sinter_default_data[];   the data folder to read when the user
//                                       names none (absolute), or ""
//
// Every kernel has the same C signature: one descriptor per slab (in the
// order of abi::Slab::Kind), one of the launch's words (the program's
// Kernel.args: where the kernel's buffers lie in their slabs, its dropout
// keys), and a half-open range [begin, end) of its outermost parallel
// dimension. Launches of the same code in different layers share one
// function and differ in their words. The runtime may split a kernel's extent [0, extent)
// into disjoint ranges and run them on different threads in any order; a
// kernel whose extent is 1 is called once with [0, 1).
//
// A slab descriptor is laid out as MLIR's StridedMemRefType<int8_t, 1>, the
// words' as StridedMemRefType<int64_t, 1> (kernels are lowered with
// llvm.emit_c_interface), so the compiler emits plain `memref<?xi8>` and
// `memref<?xi64>` arguments and this header needs no MLIR.
//
// Header-only C++17; part of the ABI both compiler/ and runtime/ include.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_ABI_KERNELABI_H
#define SINTER_ABI_KERNELABI_H

#include "abi/Abi.h"

#include <cstdint>

namespace sinter::abi {

/// MLIR's StridedMemRefType<int8_t, 1>.
struct SlabRef {
  int8_t *allocated;
  int8_t *aligned;
  int64_t offset;
  int64_t size;
  int64_t stride;
};

/// MLIR's StridedMemRefType<int64_t, 1>: a launch's words.
struct WordsRef {
  const int64_t *allocated;
  const int64_t *aligned;
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
                               const sinter::abi::WordsRef *args,
                               int64_t begin, int64_t end);
}

#endif // SINTER_ABI_KERNELABI_H
