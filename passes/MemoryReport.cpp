//===- MemoryReport.cpp - what a scheduled program keeps in memory -------===//
//
// The figures come from the program alone: its slabs, and its arena's
// buffers (root views) with the lives of the dialect's liveness rule
// (dialects/Schedule/ProgramLiveness.h), measured by the planner's own
// statistics (analysis::measurePlan), so they are the plan's figures
// whoever made the plan.
//
//===----------------------------------------------------------------------===//

#include "passes/MemoryReport.h"

#include "dialects/Schedule/ProgramLiveness.h"
#include "passes/Analysis/RecomputeSelection.h"
#include "passes/Recompute.h"
#include "passes/RecomputeStep.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace sinter;
using namespace sinter::recompute;
namespace analysis = sinter::analysis;

sinter::ArenaBuffers sinter::arenaBuffers(sched::ProgramOp program) {
  ArenaBuffers out;
  sched::SlabOp arena = program.lookupSlab(abi::Slab::arena);
  if (!arena)
    return out;
  sched::ProgramLiveness liveness(program);
  for (const sched::RootLife &life : liveness.roots()) {
    sched::ViewOp root = life.root;
    if (root.getSlab() != arena.getSlab() || !life.isLive())
      continue;
    analysis::Buffer buffer;
    buffer.id = out.buffers.size();
    buffer.bytes = life.end - life.begin;
    buffer.firstUse = std::max<int64_t>(life.first, 0);
    buffer.lastUse = life.last;
    buffer.category = abi::Category::activations;
    if (auto category = root.getCategory())
      if (auto kind = abi::parseCategory(category->str()))
        buffer.category = *kind;
    out.buffers.push_back(buffer);
    out.offsets.push_back(life.begin);
  }
  return out;
}

sinter::ProgramMemory sinter::measureProgram(sched::ProgramOp program) {
  ProgramMemory memory;
  for (auto slab : program.getBlock().getOps<sched::SlabOp>())
    if (auto kind = abi::parseSlab(slab.getKind().str()))
      memory.slabBytes[*kind] = slab.getSizeAttr().getInt();
  ArenaBuffers arena = arenaBuffers(program);
  memory.arena = analysis::measurePlan(arena.buffers, arena.offsets,
                                       abi::kBufferAlignment);
  return memory;
}

std::string sinter::formatMemoryReport(sched::ProgramOp program) {
  std::string text;
  llvm::raw_string_ostream os(text);
  ProgramMemory memory = measureProgram(program);
  auto get = [&](DictionaryAttr dict, StringRef key) -> int64_t {
    if (auto a = dict ? dict.getAs<IntegerAttr>(key) : nullptr)
      return a.getInt();
    return 0;
  };
  auto line = [&](StringRef what, int64_t bytes, StringRef note = "") {
    os << "  " << llvm::left_justify(what, 22)
       << llvm::right_justify(analysis::formatBytes(bytes), 12);
    if (!note.empty())
      os << "  " << note;
    os << "\n";
  };
  auto slab = [&](abi::SlabKind kind) { return memory.slabBytes[kind]; };
  int64_t arena = slab(abi::Slab::arena);
  os << "memory of @" << program.getSymName() << "\n";
  line("parameters", slab(abi::Slab::params), "(slab)");
  // Gradient accumulators lie at the start of the opt_state slab.
  int64_t accumulators = 0;
  for (auto arg : program.getBlock().getOps<sched::ArgumentOp>())
    if (arg.getKind() == StringRef(abi::argumentKindName(abi::Argument::accumulator)))
      accumulators += cast<sched::BufferType>(arg.getBuffer().getType())
                          .getBytes();
  if (accumulators) {
    line("optimizer state", slab(abi::Slab::opt_state) - accumulators,
         "(slab)");
    line("accumulators", accumulators, "(opt_state slab)");
  } else {
    line("optimizer state", slab(abi::Slab::opt_state), "(slab)");
  }
  line("inputs", slab(abi::Slab::io), "(slab)");
  line("constants", slab(abi::Slab::constants), "(slab)");
  line("arena", arena,
       llvm::formatv("(peak of live bytes {0}, at step {1})",
                     analysis::formatBytes(memory.arena.lowerBoundBytes),
                     memory.arena.peakStep)
           .str());
  for (int c = 0; c < abi::kNumCategories; ++c) {
    auto cat = static_cast<abi::CategoryKind>(c);
    std::string name(abi::categoryName(cat));
    int64_t own = memory.arena.maxLiveBytesByCategory[c];
    int64_t at = memory.arena.peakBytesByCategory[c];
    if (!own && !at)
      continue;
    std::string label = "  " + name;
    std::replace(label.begin(), label.end(), '_', ' ');
    line(label, at,
         llvm::formatv("at the arena's peak (its own peak: {0})",
                       analysis::formatBytes(own))
             .str());
  }
  line("total", arena + slab(abi::Slab::params) + slab(abi::Slab::opt_state) +
                    slab(abi::Slab::io) + slab(abi::Slab::constants));
  os << "  " << llvm::left_justify("arena without reuse", 22)
     << llvm::right_justify(
            analysis::formatBytes(memory.arena.bytesWithoutReuse), 12)
     << "\n";
  auto plan = program->getAttrOfType<DictionaryAttr>(kRecomputePlanAttr);
  if (plan) {
    double flops = static_cast<double>(get(plan, "flops"));
    double stepFlops = static_cast<double>(get(plan, "step_flops"));
    os << llvm::formatv(
        "recompute: {0} values in {1} regions ({2} kernels, {3}, "
        "{4:f1}% of the step); arena without recompute {5}\n",
        get(plan, "values"), get(plan, "regions"), get(plan, "kernels"),
        flopsText(flops), stepFlops > 0 ? 100.0 * flops / stepFlops : 0.0,
        analysis::formatBytes(get(plan, "arena_without_recompute")));
  } else {
    os << "recompute: none\n";
  }
  if (plan && plan.get("budget")) {
    int64_t budget = get(plan, "budget");
    auto what = plan.getAs<StringAttr>("budget_text");
    os << "budget: arena <= " << analysis::formatBytes(budget);
    if (what && what.getValue() != analysis::formatBytes(budget))
      os << " (" << what.getValue() << ")";
    os << ": " << (arena <= budget ? "fits" : "does NOT fit") << "\n";
  } else {
    os << "budget: none\n";
  }
  return text;
}
