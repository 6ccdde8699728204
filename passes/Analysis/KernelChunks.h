//===- KernelChunks.h - how code generation cuts a kernel's space -*- C++
//-*-===//
//
// The split of a kernel's iteration space over threads, and the chunks of
// rows a row-phased kernel works on one at a time. Code generation
// (compiler/CodeGen) cuts kernels this way and kernel grouping
// (FuseKernels) predicts the chunk size with the same functions. Plain C++.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_PASSES_ANALYSIS_KERNELCHUNKS_H
#define SINTER_PASSES_ANALYSIS_KERNELCHUNKS_H

#include <cstdint>
#include <vector>

namespace sinter::analysis {

/// How a target cuts kernels: the sizes fusion and code generation agree
/// on. The defaults were measured on CPUs (docs/CodeGen.md); a target
/// states its own through compiler/CodeGen/Target.h, and the passes take
/// them as options.
struct KernelLimits {
  /// Kernels with fewer elements run on one thread: a thread each would
  /// cost more than it saves.
  int64_t minElementsToSplit = 1 << 15;
  /// A row-phased kernel's chunk holds at most this many elements where
  /// its outer dimensions allow (a softmax over 8x6x256x256: one head's
  /// rows).
  int64_t chunkElements = 1 << 17;
  /// The stack buffers of one row-phased kernel (the per-chunk values it
  /// keeps rather than recomputes) take at most this many bytes.
  int64_t maxScratchBytes = 2 << 20;
  /// CUDA row kernels: how many of a row's elements each thread keeps in
  /// registers from the phase that computes them to the last that reads
  /// them, or, where a row is too long to keep (and down a column kernel's
  /// rows), loads at once; 0 keeps none and loads one at a time. The CPU
  /// target keeps a chunk's values in stack buffers instead.
  int64_t cudaRowSlots = 0;
  /// Whether a kernel that reads another kernel's softmax-like chain (an
  /// exp, a division) recomputes it from fewer bytes than its result
  /// rather than reading the result: under bf16, a softmax's f32
  /// probabilities from the bf16 scores. Worth it where kernels are bound
  /// by memory, not by arithmetic (a GPU). On the CPU it was measured
  /// slower (char-GPT bf16: the attention softmax kernels 16 -> 20 ms a
  /// step), so the CPU reads the value.
  bool recomputeExpToSaveBytes = false;
};

/// The dimension threads split: the first one not `reduced` with more than
/// one element, when the space holds `minElementsToSplit` elements or more;
/// -1 otherwise.
int splitDimension(const std::vector<int64_t> &space,
                   const std::vector<bool> &reduced,
                   const KernelLimits &limits);

/// The dimensions one chunk of a row-phased kernel fixes to a single index:
/// the split one, then each next outer (not reduced) one while the chunk
/// holds more than `chunkElements`. Empty when `split` is -1 (the chunk is
/// the whole space).
std::vector<int> chunkDimensions(const std::vector<int64_t> &space,
                                 const std::vector<bool> &reduced, int split,
                                 const KernelLimits &limits);

/// The elements of one chunk: the space without the `fixed` dimensions.
int64_t chunkElements(const std::vector<int64_t> &space,
                      const std::vector<int> &fixed);

} // namespace sinter::analysis

#endif // SINTER_PASSES_ANALYSIS_KERNELCHUNKS_H
