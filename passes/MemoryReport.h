//===- MemoryReport.h - what a scheduled program keeps in memory -*- C++
//-*-===//
//
// `sinterc --memory-report` and the figures behind it, read off a scheduled
// program: the slabs, the arena's peak of live bytes and its split by
// category, the bytes the arena would take without reuse, and what
// sinter-recompute did (the program's `sinter.recompute_plan`).
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_PASSES_MEMORYREPORT_H
#define SINTER_PASSES_MEMORYREPORT_H

#include "dialects/Schedule/ScheduleOps.h"
#include "passes/Analysis/MemoryPlanner.h"

#include <array>
#include <string>
#include <vector>

namespace sinter {

struct ProgramMemory {
  /// Bytes of each slab, by abi::SlabKind.
  std::array<int64_t, abi::kNumSlabs> slabBytes{};
  /// The arena's figures: lower bound (the most bytes live at one step),
  /// peak step, peaks by category, bytes without reuse.
  analysis::MemoryPlan arena;
};

ProgramMemory measureProgram(sched::ProgramOp program);

/// The arena's buffers of a program as the memory planner sees them: one
/// per live root view (its bytes, its first and last step, its category),
/// with its offset. Rebuilt from the program alone (dialects/Schedule/
/// ProgramLiveness.h), so a plan can be checked independently of how it
/// was made.
struct ArenaBuffers {
  std::vector<analysis::Buffer> buffers;
  std::vector<int64_t> offsets;
};
ArenaBuffers arenaBuffers(sched::ProgramOp program);

/// The slabs, the arena's peak and its split by category, the total, the
/// arena without reuse, what was recomputed, and whether the arena fits the
/// budget.
std::string formatMemoryReport(sched::ProgramOp program);

} // namespace sinter

#endif // SINTER_PASSES_MEMORYREPORT_H
