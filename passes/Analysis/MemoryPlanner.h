//===- MemoryPlanner.h - Static offsets in one arena ------------*- C++ -*-===//
//
// The memory planner gives every buffer of a scheduled step program a static
// byte offset in one arena, so that the runtime allocates nothing in the step
// loop and buffers whose lifetimes do not overlap reuse the same bytes.
//
// Input. A list of buffers, each with a size and an inclusive live interval
// [firstUse, lastUse] in the total order of steps chosen by the scheduler: a
// buffer written at step i and last read at step j occupies its bytes during
// every step of [i, j] (a buffer written and read at the same step still needs
// them). The planner places every buffer it is given in ONE arena; which
// categories (activations, workspace, ...) go there is the caller's choice.
// A buffer may be a view of another (`aliasOf`, e.g. a reshape): it gets its
// owner's offset and stretches the owner's lifetime to cover its own uses;
// chains of views resolve to the first non-view owner (the "root"). A buffer
// may be pinned to a caller-chosen `fixedOffset`.
//
// Algorithm: greedy by size with best fit, the offline heuristic of TFLite's
// ArenaPlanner ("greedy by size") and XLA's GlobalDecreasingSizeBestFitHeap.
// Roots are placed largest first; each goes into the smallest gap, among the
// already placed buffers whose lifetimes overlap its own, that can hold it
// (lowest such gap on ties), or on top of them if no gap fits. Big buffers
// placed first carve the layout; small ones fill the holes they leave. When
// the arena comes out above the lower bound, a second pass places the
// buffers live at the peak step first (by size), then the others: the peak's
// buffers alone need exactly the lower bound, and packed first nothing that
// lives elsewhere can push them up. The smaller arena wins (the first on a
// tie). Recompute under a budget (sinter-recompute) leans on this: what it
// frees shows in the arena, not only in the lower bound.
//
// Cost. The placed buffers are kept in a segment tree over the steps, as
// merged byte ranges, so that a placement reads the buffers live with it as
// O(log n) sorted sets, each such buffer in one of them, and scans their
// ranges in offset order for the gaps: O(log n + r log log n) for r ranges
// read (n = number of buffers), where a scan of every buffer placed before
// took O(n). Buffers that live together are packed tightly, so r is small
// (33 on average, 148 at most, in a step of 1,000 transformer blocks:
// 76,000 buffers); it is at most the number of buffers live with the new
// one, which it nears only when little packs (random lifetimes and sizes,
// where a placement costs about 1.5x the old scan). The placed buffer then
// goes into O(log n) sets, each a sorted vector. O(n log n) memory.
//
// Guarantees, checked by the unit tests on random instances:
//   * the plan is valid (`verifyPlan` returns ""): buffers whose (alias-
//     extended) lifetimes overlap never share a byte, every offset is a
//     multiple of the alignment, everything ends within `arenaBytes`;
//   * lowerBoundBytes <= arenaBytes, where lowerBoundBytes is the largest
//     total of bytes live at one step: no plan can do better than that;
//   * without pinned buffers, arenaBytes <= bytesWithoutReuse (the arena of a
//     bump allocator that never reuses memory), so the plan never loses;
//   * the offsets are those of the O(n^2) scan the segment tree replaced
//     (kept in the tests as the oracle): the fingerprints pin them.
// Greedy is not optimal in general (dynamic storage allocation is NP-hard);
// on the tiny instances the tests solve exactly it stays well within 2x.
//
// The compiler's sinter-assign-buffers pass is a thin adapter: it builds the
// buffer list from the step's plan (passes/StepPlan.h), calls planMemory,
// writes the offsets into the sched.program, and prints formatPlanReport
// into its dumps; sinter-verify-schedule calls verifyPlan. Plain C++17 on
// purpose (no MLIR/LLVM; the buffer categories are the ABI's,
// abi/Abi.h), so it is unit-tested in isolation.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_PASSES_ANALYSIS_MEMORYPLANNER_H
#define SINTER_PASSES_ANALYSIS_MEMORYPLANNER_H

#include "abi/Abi.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sinter::analysis {

struct Buffer {
  /// Unique among the buffers given to one planMemory call.
  int64_t id = 0;
  int64_t bytes = 0;
  /// Inclusive live interval in step order; firstUse <= lastUse.
  int64_t firstUse = 0;
  int64_t lastUse = 0;
  abi::CategoryKind category = abi::Category::activations;
  /// This buffer is a view of buffer `*aliasOf`: it shares the owner's bytes
  /// (same offset), must not be larger than the root owner, and keeps the
  /// owner alive over its own uses. Its bytes are not counted again in any
  /// total.
  std::optional<int64_t> aliasOf;
  /// Pin the buffer at this offset (a multiple of the alignment). Pinned
  /// buffers must not collide with each other; the others are placed around
  /// them. Not allowed on a view.
  std::optional<int64_t> fixedOffset;
};

struct PlanOptions {
  /// Every offset is a multiple of this (bytes, >= 1).
  int64_t alignment = abi::kBufferAlignment;
};

struct MemoryPlan {
  /// Why no plan could be made (invalid input); empty on success, in which
  /// case everything below is filled in.
  std::string error;
  int64_t alignment = 0;
  /// offsets[i] is the offset of the i-th input buffer.
  std::vector<int64_t> offsets;
  /// Size of the arena: the largest offset + bytes over all buffers.
  int64_t arenaBytes = 0;
  /// Largest total of bytes live at one step (views not counted twice): a
  /// lower bound on arenaBytes for any valid plan.
  int64_t lowerBoundBytes = 0;
  /// The first step at which lowerBoundBytes are live.
  int64_t peakStep = 0;
  /// Bytes live at peakStep, by category; sums to lowerBoundBytes.
  std::array<int64_t, abi::kNumCategories> peakBytesByCategory{};
  /// Each category's own maximum live bytes over all steps.
  std::array<int64_t, abi::kNumCategories> maxLiveBytesByCategory{};
  /// Arena size without any reuse: every root buffer in its own slot, each
  /// rounded up to the alignment.
  int64_t bytesWithoutReuse = 0;

  bool ok() const { return error.empty(); }
  /// Bytes saved by reuse (>= 0 when nothing is pinned).
  int64_t savedBytes() const { return bytesWithoutReuse - arenaBytes; }
  /// Saving as a percentage of bytesWithoutReuse (0 when that is 0).
  double savingPercent() const;
  /// arenaBytes / lowerBoundBytes: 1.0 is optimal; the excess is the
  /// fragmentation the heuristic (and the alignment) left (1.0 when empty).
  double fragmentationRatio() const;
};

/// Plans offsets for `buffers` (see the file comment). On invalid input
/// (duplicate ids, negative sizes, empty intervals, unknown or cyclic
/// aliases, views larger than their root or pinned, misaligned or colliding
/// pins, alignment < 1) returns a plan whose `error` says what is wrong.
MemoryPlan planMemory(const std::vector<Buffer> &buffers,
                      const PlanOptions &options = {});

/// The statistics of a plan made elsewhere (the scheduled IR's offsets):
/// the lower bound, the peak step and the category peaks, the arena the
/// offsets need and the bytes without reuse, as planMemory computes them.
/// `error` is set on invalid input, as for planMemory.
MemoryPlan measurePlan(const std::vector<Buffer> &buffers,
                       const std::vector<int64_t> &offsets, int64_t alignment);

/// Checks `plan` against `buffers` independently of how it was made. Returns
/// a message naming the first problem found, or "" if the plan is valid: one
/// offset per buffer, each >= 0 and a multiple of plan.alignment, pins kept,
/// views at their root's offset and within its bytes, everything within
/// plan.arenaBytes, and no two roots whose alias-extended lifetimes overlap
/// sharing a byte. O(n log n).
std::string verifyPlan(const std::vector<Buffer> &buffers,
                       const MemoryPlan &plan);

/// A human-readable report for dumps: arena bytes, lower bound,
/// fragmentation, bytes without reuse and the saving, bytes by category, and
/// a table of the `largestCount` largest buffers with their offsets and live
/// intervals.
std::string formatPlanReport(const std::vector<Buffer> &buffers,
                             const MemoryPlan &plan, int largestCount = 10);

} // namespace sinter::analysis

#endif // SINTER_PASSES_ANALYSIS_MEMORYPLANNER_H
