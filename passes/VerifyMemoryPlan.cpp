//===- VerifyMemoryPlan.cpp - no two live buffers share bytes ------------===//
//
// Closes the scheduled phase. Reads the places sinter-plan-memory wrote,
// recomputes each arena value's lifetime from the IR on its own (the step
// that writes it to the last step that reads it, through reshapes; function
// results to the end), and runs the planner's independent checker over
// them. Also checks that every value has a place inside its slab. A plan
// that fails here would make the compiled step silently compute garbage,
// so this runs in every compilation, not only in tests.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "passes/Analysis/MemoryPlanner.h"
#include "passes/PlanMemory.h"

namespace sinter {
#define GEN_PASS_DEF_VERIFYMEMORYPLANPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter::sgraph;
namespace analysis = sinter::analysis;

namespace {

class VerifyMemoryPlanPass
    : public sinter::impl::VerifyMemoryPlanPassBase<VerifyMemoryPlanPass> {
public:
  using VerifyMemoryPlanPassBase::VerifyMemoryPlanPassBase;

  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>(entry);
    if (!fn) {
      getOperation().emitError("no function @") << entry << " to check";
      return signalPassFailure();
    }
    if (failed(verify(fn)))
      signalPassFailure();
  }

private:
  LogicalResult verify(func::FuncOp fn);
};

LogicalResult VerifyMemoryPlanPass::verify(func::FuncOp fn) {
  auto memory = fn->getAttrOfType<DictionaryAttr>("sinter.memory");
  if (!memory)
    return fn.emitError("has no memory plan (sinter.memory)");
  auto slabSize = [&](StringRef slab) -> int64_t {
    auto a = memory.getAs<IntegerAttr>(slab);
    return a ? a.getInt() : -1;
  };
  auto checkPlace = [&](Operation *at, DictionaryAttr dict, Type type,
                        int64_t &offset) -> LogicalResult {
    auto slab = dict ? dict.getAs<StringAttr>("slab") : StringAttr();
    auto off = dict ? dict.getAs<IntegerAttr>("offset") : IntegerAttr();
    auto bytes = dict ? dict.getAs<IntegerAttr>("bytes") : IntegerAttr();
    if (!slab || !off || !bytes)
      return at->emitError("a value has no planned buffer");
    int64_t size = slabSize(slab.getValue());
    if (size < 0)
      return at->emitError("buffer in unknown slab '")
             << slab.getValue() << "'";
    if (bytes.getInt() != sinter::plan::tensorBytes(type))
      return at->emitError("buffer of ")
             << bytes.getInt() << " bytes for a value of "
             << sinter::plan::tensorBytes(type) << " bytes";
    if (off.getInt() < 0 || off.getInt() + bytes.getInt() > size)
      return at->emitError("buffer [")
             << off.getInt() << ", " << off.getInt() + bytes.getInt()
             << ") lies outside slab '" << slab.getValue() << "' of " << size
             << " bytes";
    offset = off.getInt();
    return success();
  };

  Block &body = fn.getBody().front();
  for (BlockArgument arg : fn.getArguments()) {
    int64_t offset;
    if (failed(checkPlace(fn,
                          fn.getArgAttrOfType<DictionaryAttr>(
                              arg.getArgNumber(), "sinter.buffer"),
                          arg.getType(), offset)))
      return failure();
  }

  DenseMap<Operation *, int64_t> stepOf;
  int64_t numSteps = 0;
  for (Operation &op : body)
    if (isa<FusionOp, MatmulOp>(op))
      stepOf[&op] = numSteps++;

  // Arena values by their root (reshape chains resolved) with intervals.
  std::vector<analysis::Buffer> buffers;
  analysis::MemoryPlan plan;
  plan.alignment = 64;
  plan.arenaBytes = slabSize("arena");
  DenseMap<Value, int64_t> index;
  std::function<int64_t(Operation *)> lastStep = [&](Operation *user) {
    if (auto reshape = dyn_cast<ReshapeOp>(user)) {
      int64_t last = -1;
      for (Operation *u : reshape.getResult().getUsers())
        last = std::max(last, lastStep(u));
      return last;
    }
    if (isa<func::ReturnOp>(user))
      return numSteps;
    return stepOf.lookup(user);
  };
  for (Operation &op : body) {
    if (isa<func::ReturnOp>(op))
      continue;
    auto list = op.getAttrOfType<ArrayAttr>("sinter.buffers");
    if (!list || list.size() != op.getNumResults())
      return op.emitError("has no planned buffers");
    for (auto [r, attr] : llvm::zip(op.getResults(), list)) {
      auto dict = dyn_cast<DictionaryAttr>(attr);
      int64_t offset;
      if (failed(checkPlace(&op, dict, r.getType(), offset)))
        return failure();
      if (dict.getAs<StringAttr>("slab").getValue() != "arena" ||
          isa<ReshapeOp>(op))
        continue;
      analysis::Buffer buf;
      buf.id = buffers.size();
      buf.bytes = dict.getAs<IntegerAttr>("bytes").getInt();
      buf.firstUse = stepOf.lookup(&op);
      buf.lastUse = buf.firstUse;
      for (Operation *user : r.getUsers())
        buf.lastUse = std::max(buf.lastUse, lastStep(user));
      index[r] = buf.id;
      buffers.push_back(buf);
      plan.offsets.push_back(offset);
    }
  }
  // A reshape of an arena value must sit at its owner's offset.
  for (auto reshape : body.getOps<ReshapeOp>()) {
    auto list = reshape->getAttrOfType<ArrayAttr>("sinter.buffers");
    Value owner = reshape.getOperand();
    while (auto r = owner.getDefiningOp<ReshapeOp>())
      owner = r.getOperand();
    auto it = index.find(owner);
    if (it == index.end())
      continue;
    int64_t offset =
        cast<DictionaryAttr>(list[0]).getAs<IntegerAttr>("offset").getInt();
    if (offset != plan.offsets[it->second])
      return reshape.emitError("reshape placed at offset ")
             << offset << ", not at its operand's " << plan.offsets[it->second];
  }
  std::string error = analysis::verifyPlan(buffers, plan);
  if (!error.empty())
    return fn.emitError("invalid memory plan: ") << error;
  return success();
}

} // namespace
