//===- RecomputeSelection.h - What to recompute under a budget --*- C++ -*-===//
//
// The choice behind `sinterc --memory-budget`: which activations the training
// step recomputes in the backward pass instead of keeping them from the
// forward pass, so that the arena's peak fits a budget at the least extra
// work.
//
// Model. The step is a total order of steps 0..n-1 (kernels and library
// calls). `liveBytes[t]` is what the arena holds at step t without any
// recomputation (the planner's lower bound is its maximum). A candidate is
// one activation kept for the backward pass: written at some forward step,
// read last by the forward at step f and first by the backward at step b.
// Recomputing it frees its `bytes` over the steps [f + 1, b - 1] (the
// `saved` interval) and costs `cost` (FLOP-equivalents: the FLOPs of the ops
// that rebuild it plus a weight times the bytes they move). It may also add
// `extras`: bytes over some steps that exist only because of the
// recomputation (intermediates of the rebuilt chain at step b, an input kept
// alive until b). Chosen candidates act independently:
//
//     peak(S) = max_t  liveBytes[t] - sum_{c in S, t in saved(c)} bytes(c)
//                                    + sum_{c in S} extras_c(t)
//
// Selection (selectRecompute), for a target T:
//   1. Greedy at the peak. While peak(S) > T: at the first step t* where the
//      peak is reached, among the unchosen candidates whose saved interval
//      covers t* and whose extras do not reach the current peak anywhere,
//      pick the one with the lowest cost per byte (ties: more bytes, then
//      the lower id). Elementwise ops and normalizations cost a few
//      FLOP-equivalents per byte, matmul outputs hundreds, so the cheap ones
//      go first. Stop when nothing can lower t*.
//   2. Exact search, only when the greedy failed and there are at most
//      `exactLimit` candidates: the cheapest subset that fits, by
//      enumeration.
//   3. Pruning: chosen candidates, most expensive first, are dropped again
//      when the peak stays within T without them (repeated until none can
//      go, so every chosen candidate is needed).
// Without extras the greedy is complete: if any subset fits, it finds one
// (a step no unchosen candidate covers cannot get lower, and every other
// step only gets lower as candidates are added, so stopping means that even
// choosing every candidate leaves that step above T). Extras can defeat it,
// which is what step 2 covers on small instances. The unit tests check both
// against brute force on random instances.
//
// The pass (passes/Recompute.cpp) builds the problem from a real memory
// plan of the step, applies the choice, plans again, and repeats with what
// is left over until the real plan fits: the model is a guide, the final
// check is the planner's arena.
//
// Also here: parsing a budget as users write it (bytes with units, or a
// fraction of the arena without recompute) and printing byte counts.
// Plain C++17 on purpose (no MLIR/LLVM), so it is unit-tested in isolation.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_PASSES_ANALYSIS_RECOMPUTESELECTION_H
#define SINTER_PASSES_ANALYSIS_RECOMPUTESELECTION_H

#include "passes/Analysis/MemoryPlanner.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sinter::analysis {

//===----------------------------------------------------------------------===//
// Budgets
//===----------------------------------------------------------------------===//

/// A memory budget for the arena: bytes, or a fraction of the arena the step
/// needs without any recomputation.
struct MemoryBudget {
  enum class Kind { Bytes, Fraction };
  Kind kind = Kind::Bytes;
  int64_t bytes = 0;
  /// In (0, 1].
  double fraction = 1.0;

  /// The budget in bytes, given the arena without recomputation.
  int64_t resolve(int64_t unrecomputedBytes) const;
  /// As users read it: "1.50 GiB" or "50% of the arena without recompute".
  std::string describe() const;
};

/// Parses a budget: bytes as an integer with an optional unit (B, KB, MB,
/// GB, TB = powers of 1000; KiB, MiB, GiB, TiB = powers of 1024; the unit's
/// letters in any case, a space allowed before it; "1.5GiB" is fine), or a
/// fraction as a decimal number in (0, 1] ("0.5") or a percentage in
/// (0, 100] ("50%"). On bad input returns nullopt and sets `error` to a
/// sentence saying what is wrong.
std::optional<MemoryBudget> parseMemoryBudget(std::string_view text,
                                              std::string &error);

/// "0 B", "512 B", "12.00 KiB", "1.52 GiB": binary units, two decimals.
std::string formatBytes(int64_t bytes);

//===----------------------------------------------------------------------===//
// Selection
//===----------------------------------------------------------------------===//

/// Bytes over an inclusive interval of steps.
struct StepBytes {
  int64_t bytes = 0;
  int64_t first = 0;
  int64_t last = -1;
};

struct RecomputeCandidate {
  /// Unique among the problem's candidates; what the selection reports.
  int64_t id = 0;
  /// Bytes freed over `saved` when the candidate is recomputed (>= 0).
  int64_t bytes = 0;
  /// The steps at which the value is not live when recomputed; may be
  /// empty (last < first), then the candidate never helps.
  int64_t savedFirst = 0;
  int64_t savedLast = -1;
  /// Bytes the recomputation adds (each >= 0).
  std::vector<StepBytes> extras;
  /// What recomputing costs, in FLOP-equivalents (>= 0).
  double cost = 0.0;
};

struct RecomputeProblem {
  /// Bytes live at each step without any recomputation; the number of
  /// steps is its size.
  std::vector<int64_t> liveBytes;
  std::vector<RecomputeCandidate> candidates;
};

struct RecomputeOptions {
  /// The peak to reach.
  int64_t targetBytes = 0;
  /// Step 2 runs on at most this many candidates (2^n subsets).
  int exactLimit = 16;
};

/// Why one candidate was chosen: the state when it was picked.
struct RecomputePick {
  int64_t id = 0;
  /// "greedy" or "exact".
  std::string how;
  /// Greedy: the step it lowered and the bytes live there, and how many
  /// unchosen candidates covered that step.
  int64_t peakStep = 0;
  int64_t peakBytes = 0;
  int64_t alternatives = 0;
  /// cost / bytes.
  double costPerByte = 0.0;
};

struct RecomputeSelection {
  /// Why the problem is malformed (then nothing else is set); empty if fine.
  std::string error;
  /// Chosen candidates in the order picked.
  std::vector<RecomputePick> chosen;
  /// peak(chosen) and the first step where it is reached.
  int64_t peakBytes = 0;
  int64_t peakStep = 0;
  /// peak with nothing chosen.
  int64_t initialPeakBytes = 0;
  double cost = 0.0;
  /// peakBytes <= targetBytes.
  bool fits = false;
};

/// Checks the problem (unique ids, sizes >= 0, intervals within the steps,
/// costs >= 0); returns "" or what is wrong.
std::string validateProblem(const RecomputeProblem &problem);

/// peak(S) for the candidates whose index (not id) is in `chosen`, and the
/// first step where it is reached (0 for a problem without steps).
int64_t peakOf(const RecomputeProblem &problem, const std::vector<bool> &chosen,
               int64_t *peakStep = nullptr);

/// Chooses what to recompute (see the file comment).
RecomputeSelection selectRecompute(const RecomputeProblem &problem,
                                   const RecomputeOptions &options);

/// Bytes live at each of `numSteps` steps for planner buffers: a root
/// buffer counts over its interval widened to its views' uses, as
/// planMemory sees it; views add no bytes. Buffers must be valid input for
/// planMemory.
std::vector<int64_t> liveBytesByStep(const std::vector<Buffer> &buffers,
                                     int64_t numSteps);

} // namespace sinter::analysis

#endif // SINTER_PASSES_ANALYSIS_RECOMPUTESELECTION_H
