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
  /// Whether the target's kernels are bound by memory, not by arithmetic
  /// (a GPU), so that fusion trades arithmetic for bytes: a kernel that
  /// reads another kernel's softmax-like chain (an exp, a division)
  /// recomputes it where that reads fewer bytes than its result (under
  /// bf16, a softmax's f32 probabilities from the bf16 scores), and an op
  /// that could join several kernels tries one that reads nothing of its
  /// size last (a mask of labels against an iota joins the softmax's
  /// kernel, which recomputes it, instead of making a pass of its own over
  /// the logits). On the CPU both were measured slower or left alone
  /// (char-GPT bf16: the attention softmax kernels 16 -> 20 ms a step; the
  /// second changes every CPU program's cross-entropy), so the CPU reads.
  bool memoryBound = false;
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
