//===- PlanMemory.cpp - static buffer offsets from liveness --------------===//
//
// Gives every tensor of the entry function a place: a slab (runtime/Abi/
// KernelAbi.h) and a byte offset. Arguments get the parameter, optimizer-
// state and io slabs in argument order; constants read outside kernels get
// the constants slab; every other value (kernel and matmul results) goes in
// the arena, where the memory planner (passes/Analysis/MemoryPlanner.h)
// lets values whose lifetimes do not overlap share bytes. A reshape is a
// view of its operand's bytes.
//
// Schedule: the function's op order (fusion already sorted the kernels
// topologically); step i is the i-th op that runs (a kernel or a matmul).
// A value lives from the step that writes it to the last step that reads it;
// results of the function live to the end.
//
// State results are written in place when that is safe: a new parameter or
// optimizer-state value produced by a loop kernel that reads the old value
// only at the same element, with no later reader of the old value, gets the
// argument's own buffer (an optimizer update reads and writes each element
// once). Otherwise it gets an arena buffer and the step program copies it
// back at the end (the state contract of docs/StepProgram.md).
//
// Results: `sinter.buffers` (one dictionary per result: slab, offset, bytes,
// category) on each op, `sinter.buffer` on each argument, `sinter.step` on
// each op that runs, and `sinter.memory` on the function (slab sizes, peak
// bytes by category, bytes without reuse, the step where the live bytes
// peak and their split there). With `report=<file>` the pass
// also writes the planner's human-readable report there. Runs in the
// scheduled phase, after sinter-fuse-kernels.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "passes/Analysis/MemoryPlanner.h"
#include "passes/PlanMemory.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace sinter {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter;
using namespace sinter::sgraph;
namespace analysis = sinter::analysis;

int64_t sinter::plan::elementBytes(Type type) {
  if (type.isInteger(1))
    return 1;
  return (type.getIntOrFloatBitWidth() + 7) / 8;
}

int64_t sinter::plan::tensorBytes(Type type) {
  auto t = cast<RankedTensorType>(type);
  return t.getNumElements() * elementBytes(t.getElementType());
}

static int64_t alignUp(int64_t n, int64_t a) { return (n + a - 1) / a * a; }

DictionaryAttr sinter::plan::bufferAttr(MLIRContext *ctx, StringRef slab,
                                        int64_t offset, int64_t bytes,
                                        StringRef category) {
  Builder b(ctx);
  return b.getDictionaryAttr({
      b.getNamedAttr("slab", b.getStringAttr(slab)),
      b.getNamedAttr("offset", b.getI64IntegerAttr(offset)),
      b.getNamedAttr("bytes", b.getI64IntegerAttr(bytes)),
      b.getNamedAttr("category", b.getStringAttr(category)),
  });
}

namespace {

bool isStep(Operation *op) { return isa<FusionOp, MatmulOp>(op); }

/// The gradient values of the step: the `grad` operands of the optimizer
/// updates, traced back through elementwise ops inside their kernels to the
/// kernel inputs that carry them. Used only to label the report.
llvm::DenseSet<Value> findGradients(func::FuncOp fn) {
  llvm::DenseSet<Value> grads;
  fn.walk([&](FusionOp fusion) {
    SmallVector<Value> work;
    fusion.getBody().walk([&](Operation *op) {
      if (auto u = dyn_cast<AdamUpdateOp>(op))
        work.push_back(u.getGrad());
      if (auto u = dyn_cast<MomentumUpdateOp>(op))
        work.push_back(u.getGrad());
      if (auto u = dyn_cast<SgdUpdateOp>(op))
        work.push_back(u.getGrad());
    });
    llvm::DenseSet<Value> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        Value outer = fusion.getInputs()[arg.getArgNumber()];
        while (auto reshape = outer.getDefiningOp<ReshapeOp>())
          outer = reshape.getOperand();
        grads.insert(outer);
        continue;
      }
      if (Operation *def = v.getDefiningOp())
        if (!isa<ConstantOp>(def))
          for (Value operand : def->getOperands())
            if (cast<RankedTensorType>(operand.getType()).getShape() ==
                cast<RankedTensorType>(v.getType()).getShape())
              work.push_back(operand);
    }
  });
  return grads;
}

/// Whether `fusion` may write its result `resultIndex` over `stateArg`: a
/// loop kernel whose body reads the old value only elementwise.
bool canWriteInPlace(FusionOp fusion, unsigned resultIndex, Value stateArg) {
  if (fusion.getKind() != "loop")
    return false;
  if (fusion.getResult(resultIndex).getType() != stateArg.getType())
    return false;
  for (auto [i, input] : llvm::enumerate(fusion.getInputs())) {
    if (input != stateArg)
      continue;
    Value arg = fusion.getBody().getArgument(i);
    for (Operation *user : arg.getUsers())
      if (isa<TransposeOp, BroadcastOp, SliceOp, EmbeddingOp>(user))
        return false;
  }
  return true;
}

} // namespace

FailureOr<plan::FunctionPlan> sinter::plan::planFunction(func::FuncOp fn,
                                                         bool noReuse) {
  MLIRContext *ctx = fn.getContext();
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  const int64_t align = 64;

  // Steps.
  DenseMap<Operation *, int64_t> stepOf;
  int64_t numSteps = 0;
  for (Operation &op : body)
    if (isStep(&op)) {
      op.setAttr("sinter.step",
                 IntegerAttr::get(IntegerType::get(ctx, 64), numSteps));
      stepOf[&op] = numSteps++;
    }
  auto positionOf = [&](Operation *user) -> int64_t {
    // The step at or after `user` (a reshape reads nothing itself; its users
    // are counted through the planner's alias extension).
    while (user && !stepOf.count(user)) {
      if (isa<func::ReturnOp>(user))
        return numSteps;
      user = user->getNextNode();
    }
    return user ? stepOf[user] : numSteps;
  };

  // Arguments: fixed slabs in argument order.
  int64_t slabBytes[5] = {0, 0, 0, 0, 0};
  DenseMap<Value, DictionaryAttr> placed;
  DenseMap<StringRef, Value> stateArgByName;
  for (BlockArgument arg : fn.getArguments()) {
    unsigned i = arg.getArgNumber();
    StringRef slab = "io", category = "inputs";
    int slabIndex = 3;
    if (fn.getArgAttr(i, attr::kParam)) {
      slab = "params", category = "parameters", slabIndex = 1;
    } else if (fn.getArgAttr(i, attr::kOptState)) {
      slab = "opt_state", category = "optimizer_state", slabIndex = 2;
    }
    int64_t bytes = plan::tensorBytes(arg.getType());
    int64_t &top = slabBytes[slabIndex];
    auto dict = plan::bufferAttr(ctx, slab, top, bytes, category);
    top = alignUp(top + bytes, align);
    fn.setArgAttr(i, "sinter.buffer", dict);
    placed[arg] = dict;
    if (slabIndex == 1 || slabIndex == 2)
      stateArgByName[fn.getArgAttrOfType<StringAttr>(
                           i, slabIndex == 1 ? attr::kParam : attr::kOptState)
                         .getValue()] = arg;
  }

  // State results written in place.
  llvm::DenseMap<Value, Value> inPlace; // result value -> argument
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto name = fn.getResultAttrOfType<StringAttr>(i, attr::kName);
    if (!name)
      continue;
    auto it = stateArgByName.find(name.getValue());
    if (it == stateArgByName.end() || inPlace.count(value))
      continue;
    Value stateArg = it->second;
    auto fusion = value.getDefiningOp<FusionOp>();
    if (!fusion)
      continue;
    if (!canWriteInPlace(fusion, cast<OpResult>(value).getResultNumber(),
                         stateArg))
      continue;
    // No reader of the old value (or of a view of it) may run later.
    bool laterReader = false;
    SmallVector<Value> olds{stateArg};
    while (!olds.empty()) {
      Value old = olds.pop_back_val();
      for (Operation *user : old.getUsers()) {
        if (auto reshape = dyn_cast<ReshapeOp>(user)) {
          olds.push_back(reshape.getResult());
          continue;
        }
        if (user != fusion.getOperation() && positionOf(user) >= stepOf[fusion])
          laterReader = true;
      }
    }
    if (laterReader)
      continue;
    inPlace[value] = stateArg;
  }

  // Arena buffers.
  llvm::DenseSet<Value> grads = findGradients(fn);
  FunctionPlan result;
  result.numSteps = numSteps;
  std::vector<analysis::Buffer> &buffers = result.buffers;
  std::vector<Value> &valueOf = result.values;
  DenseMap<Value, int64_t> bufferIndex;
  llvm::DenseSet<Value> returned(ret.getOperands().begin(),
                                 ret.getOperands().end());
  for (Operation &op : body) {
    if (isa<func::ReturnOp>(op))
      continue;
    bool isConstant = isa<ConstantOp>(op);
    bool isAlias = isa<ReshapeOp>(op);
    if (!isStep(&op) && !isConstant && !isAlias) {
      op.emitError("cannot plan memory for '")
          << op.getName() << "' outside a kernel";
      return failure();
    }
    SmallVector<Attribute> dicts;
    for (Value r : op.getResults()) {
      int64_t bytes = plan::tensorBytes(r.getType());
      if (isConstant) {
        int64_t &top = slabBytes[4];
        auto dict = plan::bufferAttr(ctx, "constants", top, bytes, "constants");
        top = alignUp(top + bytes, align);
        placed[r] = dict;
        dicts.push_back(dict);
        continue;
      }
      if (auto it = inPlace.find(r); it != inPlace.end()) {
        // Read first: placed[r] may grow the map and move the entry.
        DictionaryAttr place = placed.lookup(it->second);
        placed[r] = place;
        dicts.push_back(placed[r]);
        continue;
      }
      if (isAlias) {
        Value owner = op.getOperand(0);
        if (!bufferIndex.count(owner)) {
          // A view of an argument or constant: same place, no arena bytes.
          DictionaryAttr place = placed.lookup(owner);
          placed[r] = place;
          dicts.push_back(placed[r]);
          continue;
        }
      }
      analysis::Buffer buf;
      buf.id = buffers.size();
      buf.bytes = bytes;
      buf.firstUse = isAlias ? buffers[bufferIndex[op.getOperand(0)]].firstUse
                             : stepOf[&op];
      buf.lastUse = buf.firstUse;
      for (Operation *user : r.getUsers())
        buf.lastUse = std::max(buf.lastUse, positionOf(user));
      if (returned.count(r))
        buf.lastUse = numSteps;
      if (noReuse) {
        buf.firstUse = 0;
        buf.lastUse = numSteps;
      }
      if (isAlias)
        buf.aliasOf = bufferIndex[op.getOperand(0)];
      buf.category = grads.count(r)      ? analysis::Category::Gradients
                     : returned.count(r) ? analysis::Category::Outputs
                                         : analysis::Category::Activations;
      bufferIndex[r] = buf.id;
      buffers.push_back(buf);
      valueOf.push_back(r);
      dicts.push_back(Attribute());
    }
    op.setAttr("sinter.buffers", ArrayAttr::get(ctx, dicts));
  }

  result.memory = analysis::planMemory(buffers);
  analysis::MemoryPlan &memoryPlan = result.memory;
  if (!memoryPlan.ok()) {
    fn.emitError("memory planning failed: ") << memoryPlan.error;
    return failure();
  }
  for (auto [i, buf] : llvm::enumerate(buffers)) {
    Value v = valueOf[i];
    placed[v] = plan::bufferAttr(ctx, "arena", memoryPlan.offsets[i], buf.bytes,
                                 analysis::getCategoryName(buf.category));
  }
  // Write the arena places back into each op's list.
  for (Operation &op : body) {
    auto list = op.getAttrOfType<ArrayAttr>("sinter.buffers");
    if (!list)
      continue;
    SmallVector<Attribute> dicts;
    for (Value r : op.getResults())
      dicts.push_back(placed[r]);
    op.setAttr("sinter.buffers", ArrayAttr::get(ctx, dicts));
  }

  slabBytes[0] = alignUp(memoryPlan.arenaBytes, align);
  Builder b(ctx);
  SmallVector<NamedAttribute> summary = {
      b.getNamedAttr("arena", b.getI64IntegerAttr(slabBytes[0])),
      b.getNamedAttr("params", b.getI64IntegerAttr(slabBytes[1])),
      b.getNamedAttr("opt_state", b.getI64IntegerAttr(slabBytes[2])),
      b.getNamedAttr("io", b.getI64IntegerAttr(slabBytes[3])),
      b.getNamedAttr("constants", b.getI64IntegerAttr(slabBytes[4])),
      b.getNamedAttr("arena_lower_bound",
                     b.getI64IntegerAttr(memoryPlan.lowerBoundBytes)),
      b.getNamedAttr("arena_without_reuse",
                     b.getI64IntegerAttr(memoryPlan.bytesWithoutReuse)),
  };
  for (int c = 0; c < analysis::kNumCategories; ++c) {
    auto cat = static_cast<analysis::Category>(c);
    int64_t peak = memoryPlan.maxLiveBytesByCategory[c];
    if (peak)
      summary.push_back(
          b.getNamedAttr(std::string("peak_") + analysis::getCategoryName(cat),
                         b.getI64IntegerAttr(peak)));
    // What is live where the live bytes peak (the memory report's split).
    if (int64_t at = memoryPlan.peakBytesByCategory[c])
      summary.push_back(b.getNamedAttr(std::string("peak_step_") +
                                           analysis::getCategoryName(cat),
                                       b.getI64IntegerAttr(at)));
  }
  summary.push_back(
      b.getNamedAttr("peak_step", b.getI64IntegerAttr(memoryPlan.peakStep)));
  fn->setAttr("sinter.memory", b.getDictionaryAttr(summary));
  for (int i = 0; i < 5; ++i)
    result.slabBytes[i] = slabBytes[i];
  result.inPlaceUpdates = inPlace.size();
  return result;
}

std::string sinter::plan::formatFunctionPlan(func::FuncOp fn,
                                             const FunctionPlan &plan,
                                             int largestCount) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "Memory plan of @" << fn.getName() << "\n\n"
     << "slabs: params " << plan.slabBytes[1] << " B, optimizer state "
     << plan.slabBytes[2] << " B, io " << plan.slabBytes[3] << " B, constants "
     << plan.slabBytes[4] << " B\n\n"
     << analysis::formatPlanReport(plan.buffers, plan.memory, largestCount);
  os << "\nin-place state updates: " << plan.inPlaceUpdates << "\n";
  return text;
}

namespace {

class PlanMemoryPass : public sinter::impl::PlanMemoryPassBase<PlanMemoryPass> {
public:
  using PlanMemoryPassBase::PlanMemoryPassBase;

  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>(entry);
    if (!fn) {
      getOperation().emitError("no function @") << entry << " to plan";
      return signalPassFailure();
    }
    FailureOr<plan::FunctionPlan> result = plan::planFunction(fn, noReuse);
    if (failed(result))
      return signalPassFailure();
    if (report.empty())
      return;
    std::error_code ec;
    llvm::raw_fd_ostream os(report, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      fn.emitError("cannot write the memory report '")
          << report << "': " << ec.message();
      return signalPassFailure();
    }
    os << plan::formatFunctionPlan(fn, *result, 20);
  }
};

} // namespace
