//===- VerifySchedule.cpp - the contract of the scheduled phase ----------===//
//
// Closes the scheduled phase. The entry is a `sched.program` (no function
// of that name is left) and every `sched.kernel` of the module is launched.
// Then a second, independent check of memory reuse: the arena's buffers
// (root views), with the lives the dialect's liveness rule gives them, go
// through the planner's own checker (passes/Analysis/MemoryPlanner.h,
// verifyPlan), which shares no code with the sched verifier's sweep
// (program_c2). A plan that failed either would make the compiled step
// silently compute garbage, so this runs in every compilation, not only in
// tests.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Schedule/ProgramLiveness.h"
#include "dialects/Schedule/ScheduleOps.h"
#include "passes/Analysis/MemoryPlanner.h"
#include "passes/MemoryReport.h"

#include "llvm/ADT/StringSet.h"

namespace sinter {
#define GEN_PASS_DEF_VERIFYSCHEDULEPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter;
namespace analysis = sinter::analysis;

namespace {

class VerifySchedulePass
    : public sinter::impl::VerifySchedulePassBase<VerifySchedulePass> {
public:
  using VerifySchedulePassBase::VerifySchedulePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Operation *symbol = module.lookupSymbol(entry);
    auto program = dyn_cast_or_null<sched::ProgramOp>(symbol);
    if (!program) {
      module.emitError("@")
          << entry
          << (symbol ? " is not a sched.program: the scheduled phase "
                       "replaces it by its program (sinter-assign-buffers)"
                     : " has no scheduled program");
      return signalPassFailure();
    }
    llvm::StringSet<> launched;
    module.walk(
        [&](sched::LaunchOp launch) { launched.insert(launch.getKernel()); });
    for (auto kernel : module.getOps<sched::KernelOp>())
      if (!launched.contains(kernel.getSymName())) {
        kernel.emitOpError("is never launched");
        return signalPassFailure();
      }
    for (auto p : module.getOps<sched::ProgramOp>())
      if (failed(checkArena(p)))
        return signalPassFailure();
  }

private:
  LogicalResult checkArena(sched::ProgramOp program);
};

LogicalResult VerifySchedulePass::checkArena(sched::ProgramOp program) {
  sched::SlabOp slab = program.lookupSlab(abi::Slab::arena);
  if (!slab)
    return program.emitOpError("has no arena slab");
  ArenaBuffers arena = arenaBuffers(program);
  analysis::MemoryPlan plan;
  plan.alignment = abi::kBufferAlignment;
  plan.arenaBytes = slab.getSizeAttr().getInt();
  plan.offsets = std::move(arena.offsets);
  std::string error = analysis::verifyPlan(arena.buffers, plan);
  if (!error.empty())
    return program.emitOpError("invalid memory plan: ") << error;
  return success();
}

} // namespace
