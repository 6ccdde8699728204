//===- StepPlan.cpp - static buffer offsets from liveness ----------------===//
//
// Gives every tensor of a fused function a place: a slab (abi) and a
// byte offset. Arguments get the parameter, optimizer-state and io slabs in
// argument order; constants read outside kernels get the constants slab;
// every other value (kernel and matmul results) goes in the arena, where the
// memory planner (passes/Analysis/MemoryPlanner.h) lets values whose
// lifetimes do not overlap share bytes. A reshape is a view of its operand's
// bytes.
//
// Gradient buckets: an `sgraph.all_reduce` (sinter-bucket-gradients) gets
// one arena buffer holding its operands side by side, each slot padded to
// the alignment, so that one collective covers them all. An operand that a
// kernel or matmul writes and nothing else reads is written straight into
// its slot (through the reshapes that view it as the gradient's shape); any
// other (an argument, a value with other readers, an operand of an earlier
// bucket) is copied in before the collective starts. The
// results are the slots themselves (the reduction is in place). The bucket
// lives from its first slot's write to the last read of any result.
//
// Schedule: the function's op order (sinter-schedule-kernels chose it);
// step i is the i-th op that runs (a kernel or a matmul). A value lives from
// the step that writes it to the last step that reads it; results of the
// function live to the end.
//
// State results are written in place when that is safe: a new parameter or
// optimizer-state value produced by a loop kernel that reads the old value
// only at the same element, with no later reader of the old value, gets the
// argument's own buffer (an optimizer update reads and writes each element
// once). Otherwise it gets an arena buffer and the scheduled program copies
// it back at the end (the state contract of docs/StepProgram.md).
//
// Matmul workspaces: with planFunction's matmulWorkspaceBytes (the CUDA
// target's cuBLASLt workspace), each matmul gets that many arena bytes
// live at its own step only, so the library's scratch shares bytes with
// values that are dead while it runs instead of being memory of its own.
//
// The plan is returned as data (StepPlan.h); nothing is written to the IR.
//
//===----------------------------------------------------------------------===//

#include "passes/StepPlan.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Schedule/ScheduleOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>

using namespace mlir;
using namespace sinter;
using namespace sinter::sgraph;
namespace analysis = sinter::analysis;

int64_t sinter::plan::tensorBytes(Type type) { return sched::typeBytes(type); }

static int64_t alignUp(int64_t n, int64_t a) { return (n + a - 1) / a * a; }

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

FailureOr<plan::FunctionPlan>
sinter::plan::planFunction(func::FuncOp fn, bool noReuse,
                           int64_t matmulWorkspaceBytes) {
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  const int64_t align = abi::kBufferAlignment;
  FunctionPlan result;
  auto &places = result.places;
  auto &slabBytes = result.slabBytes;

  // Steps.
  DenseMap<Operation *, int64_t> &stepOf = result.stepOf;
  int64_t numSteps = 0;
  for (Operation &op : body)
    if (isStep(&op))
      stepOf[&op] = numSteps++;
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
  DenseMap<StringRef, Value> stateArgByName;
  for (BlockArgument arg : fn.getArguments()) {
    unsigned i = arg.getArgNumber();
    Place place;
    place.slab = abi::Slab::io;
    place.category = abi::Category::inputs;
    if (fn.getArgAttr(i, attr::kParam)) {
      place.slab = abi::Slab::params;
      place.category = abi::Category::parameters;
    } else if (fn.getArgAttr(i, attr::kOptState)) {
      place.slab = abi::Slab::opt_state;
      place.category = abi::Category::optimizer_state;
    } else if (fn.getArgAttr(i, attr::kAccumulator)) {
      // Ahead of the optimizer state (the arguments come first), so the
      // accumulate program's opt_state slab is a prefix of the training
      // program's, which the runtime shares.
      place.slab = abi::Slab::opt_state;
      place.category = abi::Category::gradients;
    }
    int64_t bytes = plan::tensorBytes(arg.getType());
    int64_t &top = slabBytes[place.slab];
    place.offset = top;
    top = alignUp(top + bytes, align);
    places[arg] = place;
    for (StringRef key : {attr::kParam, attr::kOptState, attr::kAccumulator})
      if (auto name = fn.getArgAttrOfType<StringAttr>(i, key))
        stateArgByName[name.getValue()] = arg;
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

  // Buckets: which values live in which slot.
  llvm::DenseSet<Value> returned(ret.getOperands().begin(),
                                 ret.getOperands().end());
  struct BucketLife {
    int64_t firstUse = std::numeric_limits<int64_t>::max();
    int64_t lastUse = 0;
  };
  std::vector<BucketLife> bucketLives;
  llvm::DenseMap<Value, std::pair<int64_t, int64_t>> slotOf; // bucket, slot
  for (auto ar : body.getOps<AllReduceOp>()) {
    BucketPlace bucket;
    bucket.op = ar;
    int64_t k = result.buckets.size();
    for (auto [i, v] : llvm::enumerate(ar.getOperands())) {
      bucket.slotOffsets.push_back(bucket.bytes);
      bucket.bytes = alignUp(bucket.bytes + plan::tensorBytes(v.getType()),
                             align);
      // The value a kernel writes: through reshapes (a bias gradient is a
      // [1, 1, C] sum viewed as [C]), each read by nothing else.
      Value owner = v;
      bool direct = true;
      while (true) {
        direct &= owner.hasOneUse() && !returned.count(owner) &&
                  !slotOf.count(owner);
        auto reshape = owner.getDefiningOp<ReshapeOp>();
        if (!reshape)
          break;
        owner = reshape.getOperand();
      }
      Operation *def = owner.getDefiningOp();
      direct &= def && def->getBlock() == &body && isStep(def) &&
                !inPlace.count(owner);
      bucket.inPlace.push_back(direct);
      if (direct)
        slotOf[owner] = {k, static_cast<int64_t>(i)};
      slotOf[ar.getResult(i)] = {k, static_cast<int64_t>(i)};
    }
    result.buckets.push_back(std::move(bucket));
    bucketLives.emplace_back();
  }

  // Arena buffers.
  llvm::DenseSet<Value> grads = findGradients(fn);
  result.numSteps = numSteps;
  std::vector<analysis::Buffer> &buffers = result.buffers;
  std::vector<Value> &valueOf = result.values;
  DenseMap<Value, int64_t> bufferIndex;
  for (Operation &op : body) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (auto ar = dyn_cast<AllReduceOp>(op)) {
      // Live from the collective (copied-in slots) to the last reader of
      // any result or of a reshape of one.
      BucketLife &life = bucketLives[slotOf.lookup(ar.getResult(0)).first];
      int64_t at = positionOf(&op);
      life.firstUse = std::min(life.firstUse, at);
      life.lastUse = std::max(life.lastUse, at);
      SmallVector<Value> readers(ar.getResults().begin(),
                                 ar.getResults().end());
      while (!readers.empty()) {
        Value v = readers.pop_back_val();
        if (returned.count(v))
          life.lastUse = numSteps;
        for (Operation *user : v.getUsers()) {
          if (auto reshape = dyn_cast<ReshapeOp>(user))
            readers.push_back(reshape.getResult());
          life.lastUse = std::max(life.lastUse, positionOf(user));
        }
      }
      continue;
    }
    bool isConstant = isa<ConstantOp>(op);
    bool isAlias = isa<ReshapeOp>(op);
    if (!isStep(&op) && !isConstant && !isAlias) {
      op.emitError("cannot plan memory for '")
          << op.getName() << "' outside a kernel";
      return failure();
    }
    for (Value r : op.getResults()) {
      int64_t bytes = plan::tensorBytes(r.getType());
      if (isConstant) {
        int64_t &top = slabBytes[abi::Slab::constants];
        places[r] =
            Place{abi::Slab::constants, top, abi::Category::constants, Value()};
        top = alignUp(top + bytes, align);
        continue;
      }
      if (auto it = inPlace.find(r); it != inPlace.end()) {
        // Read first: places[r] may grow the map and move the entry.
        Place place = places.lookup(it->second);
        place.aliasOf = it->second;
        places[r] = place;
        continue;
      }
      if (auto it = slotOf.find(r); it != slotOf.end()) {
        // Written straight into its bucket's slot.
        BucketLife &life = bucketLives[it->second.first];
        life.firstUse = std::min(life.firstUse, stepOf[&op]);
        continue;
      }
      if (isAlias) {
        Value owner = op.getOperand(0);
        if (auto it = slotOf.find(owner); it != slotOf.end()) {
          // A view of a bucket's slot: placed with the bucket, below. (Read
          // the slot first: inserting may move the entry.)
          std::pair<int64_t, int64_t> slot = it->second;
          slotOf[r] = slot;
          continue;
        }
        if (!bufferIndex.count(owner)) {
          // A view of an argument or constant: same place, no arena bytes.
          Place place = places.lookup(owner);
          place.aliasOf = owner;
          places[r] = place;
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
      buf.category = grads.count(r)      ? abi::Category::gradients
                     : returned.count(r) ? abi::Category::outputs
                                         : abi::Category::activations;
      bufferIndex[r] = buf.id;
      buffers.push_back(buf);
      valueOf.push_back(r);
    }
  }

  // One buffer per bucket.
  std::vector<int64_t> bucketBuffer;
  for (auto [k, bucket] : llvm::enumerate(result.buckets)) {
    analysis::Buffer buf;
    buf.id = buffers.size();
    buf.bytes = bucket.bytes;
    buf.firstUse = std::min(bucketLives[k].firstUse, bucketLives[k].lastUse);
    buf.lastUse = bucketLives[k].lastUse;
    if (noReuse) {
      buf.firstUse = 0;
      buf.lastUse = numSteps;
    }
    buf.category = abi::Category::gradients;
    bucketBuffer.push_back(buf.id);
    buffers.push_back(buf);
    valueOf.push_back(Value());
  }

  // Each matmul's workspace: scratch for the library call, live at its
  // step only, so it lands in bytes no value holds then.
  std::vector<std::pair<Operation *, int64_t>> workspaceBuffer;
  result.workspaceBytes = matmulWorkspaceBytes;
  if (matmulWorkspaceBytes > 0)
    for (Operation &op : body) {
      auto fusion = dyn_cast<FusionOp>(op);
      if (!isa<MatmulOp>(op) && !(fusion && fusion.getKind() == "matmul"))
        continue;
      analysis::Buffer buf;
      buf.id = buffers.size();
      buf.bytes = matmulWorkspaceBytes;
      buf.firstUse = buf.lastUse = stepOf[&op];
      if (noReuse) {
        buf.firstUse = 0;
        buf.lastUse = numSteps;
      }
      buf.category = abi::Category::workspace;
      workspaceBuffer.push_back({&op, buf.id});
      buffers.push_back(buf);
      valueOf.push_back(Value());
    }

  result.memory = analysis::planMemory(buffers);
  analysis::MemoryPlan &memoryPlan = result.memory;
  if (!memoryPlan.ok()) {
    fn.emitError("memory planning failed: ") << memoryPlan.error;
    return failure();
  }
  for (auto [k, bucket] : llvm::enumerate(result.buckets))
    bucket.offset = memoryPlan.offsets[bucketBuffer[k]];
  for (auto [op, id] : workspaceBuffer)
    result.workspaceOffsets[op] = memoryPlan.offsets[id];
  for (auto [v, slot] : slotOf) {
    const BucketPlace &bucket = result.buckets[slot.first];
    Place place{abi::Slab::arena,
                bucket.offset + bucket.slotOffsets[slot.second],
                abi::Category::gradients, Value(), -1};
    if (auto reshape = v.getDefiningOp<ReshapeOp>())
      place.aliasOf = reshape.getOperand();
    else
      place.bucket = slot.first;
    places[v] = place;
  }
  for (auto [i, buf] : llvm::enumerate(buffers)) {
    Value v = valueOf[i];
    if (!v)
      continue;
    Value aliasOf;
    if (buf.aliasOf)
      aliasOf = v.getDefiningOp()->getOperand(0);
    places[v] =
        Place{abi::Slab::arena, memoryPlan.offsets[i], buf.category, aliasOf};
  }
  slabBytes[abi::Slab::arena] = alignUp(memoryPlan.arenaBytes, align);
  result.inPlaceUpdates = inPlace.size();
  return result;
}

std::string sinter::plan::formatFunctionPlan(func::FuncOp fn,
                                             const FunctionPlan &plan,
                                             int largestCount) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "Memory plan of @" << fn.getName() << "\n\n"
     << "slabs: params " << plan.slabBytes[abi::Slab::params]
     << " B, optimizer state " << plan.slabBytes[abi::Slab::opt_state]
     << " B, io " << plan.slabBytes[abi::Slab::io] << " B, constants "
     << plan.slabBytes[abi::Slab::constants] << " B\n\n"
     << analysis::formatPlanReport(plan.buffers, plan.memory, largestCount);
  os << "\nin-place state updates: " << plan.inPlaceUpdates << "\n";
  return text;
}
