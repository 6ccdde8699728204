//===- RecomputeStep.cpp - the fused step as sinter-recompute sees it ----===//
//
// See RecomputeStep.h. Also the driver's helpers of Recompute.h, which read
// what the pass left on the function.
//
//===----------------------------------------------------------------------===//

#include "passes/RecomputeStep.h"

#include "passes/Analysis/RecomputeSelection.h"
#include "passes/Recompute.h"
#include "passes/StepPlan.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace sinter;
using namespace sinter::sgraph;
using namespace sinter::recompute;
namespace analysis = sinter::analysis;

namespace sinter::recompute {

//===----------------------------------------------------------------------===//
// Describing ops and costs
//===----------------------------------------------------------------------===//

std::string layerOf(Operation *op) {
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    if (!fused.getLocations().empty())
      loc = fused.getLocations().front();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}

/// `sgraph.gelu @ 'transformer.h.3.mlp'`.
std::string describe(Operation *op) {
  std::string s = op->getName().getStringRef().str();
  std::string layer = layerOf(op);
  if (!layer.empty())
    s += " @ '" + layer + "'";
  return s;
}

std::string typeText(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  auto t = cast<RankedTensorType>(type);
  for (int64_t d : t.getShape())
    os << d << "x";
  os << t.getElementType();
  return s;
}

std::string flopsText(double flops) {
  if (flops >= 1e9)
    return llvm::formatv("{0:f2} GFLOP", flops / 1e9).str();
  if (flops >= 1e6)
    return llvm::formatv("{0:f2} MFLOP", flops / 1e6).str();
  return llvm::formatv("{0:f0} FLOP", flops).str();
}

double elementsOf(Value v) {
  return static_cast<double>(
      cast<RankedTensorType>(v.getType()).getNumElements());
}

/// FLOPs of one op: 2MNK per matmul, one per element for arithmetic, more
/// for division, roots and transcendental functions (polynomial
/// approximations), nothing for views.
double opFlops(Operation *op) {
  if (auto fusion = dyn_cast<FusionOp>(op)) {
    double total = 0.0;
    for (Operation &inner : fusion.getBody().front())
      total += opFlops(&inner);
    return total;
  }
  if (op->getNumResults() == 0 ||
      isa<ConstantOp, ReshapeOp, TransposeOp, BroadcastOp, SliceOp>(op))
    return 0.0;
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
    int64_t k = mm.getTransposeLhs() ? lhs.getDimSize(lhs.getRank() - 2)
                                     : lhs.getDimSize(lhs.getRank() - 1);
    return 2.0 * elementsOf(mm.getResult()) * static_cast<double>(k);
  }
  if (isa<ReduceSumOp, ReduceMaxOp, ReduceMeanOp, ArgmaxOp>(op))
    return elementsOf(op->getOperand(0));
  if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, SoftmaxCrossEntropyOp>(op))
    return 20.0 * elementsOf(op->getOperand(0));
  double n = elementsOf(op->getResult(0));
  if (isa<GeluOp>(op))
    return 24.0 * n;
  if (isa<GeluGradOp>(op))
    return 32.0 * n;
  if (isa<ExpOp, LogOp, TanhOp, ErfOp, SigmoidOp, PowOp, DropoutOp>(op))
    return 16.0 * n;
  if (isa<DivOp, SqrtOp, RsqrtOp>(op))
    return 4.0 * n;
  return n;
}

int64_t bytesOf(Value v) { return plan::tensorBytes(v.getType()); }

bool isView(Operation *op) {
  return isa<ReshapeOp, TransposeOp, BroadcastOp, SliceOp>(op);
}

/// What can be cloned: kernels, matmul calls and reshapes of the fused step
/// (collectives and other ops with effects cannot).
bool isRecomputable(Operation *op) {
  return isa<FusionOp, MatmulOp, ReshapeOp>(op) && isMemoryEffectFree(op);
}

/// The op that defines what a kernel result holds: the yielded op inside a
/// region (or the region itself when it yields an argument), else the op.
Operation *innerDef(Value v) {
  Operation *def = v.getDefiningOp();
  if (auto fusion = dyn_cast_or_null<FusionOp>(def)) {
    auto yield = cast<YieldOp>(fusion.getBody().front().getTerminator());
    if (Operation *inner = yield.getOperand(cast<OpResult>(v).getResultNumber())
                               .getDefiningOp())
      return inner;
  }
  return def;
}

/// `sgraph.gelu @ 'transformer.h.3.mlp'` for what a value holds, with the
/// kernel when it is a region's: `k42: sgraph.gelu @ '...'`.
std::string describeValue(Value v) {
  Operation *def = v.getDefiningOp();
  std::string inner = describe(innerDef(v));
  if (auto fusion = dyn_cast_or_null<FusionOp>(def))
    return fusion.getSymName().str() + ": " + inner;
  return inner;
}

//===----------------------------------------------------------------------===//
// The step: forward ops, backward uses, stable op ids
//===----------------------------------------------------------------------===//

ValueRef refOf(int64_t id, unsigned result) {
  return (static_cast<uint64_t>(id) << 16) | result;
}
int64_t idOf(Operation *op) {
  if (auto id = op->getAttrOfType<IntegerAttr>(kIdAttr))
    return id.getInt();
  return -1;
}
bool isCopy(Operation *op) { return op->hasAttr(kRecomputedAttr); }

Value StepGraph::resolve(ValueRef ref) const {
  return byId[ref >> 16]->getResult(ref & 0xffff);
}

ValueRef StepGraph::ref(Value v) const {
  return refOf(idOf(v.getDefiningOp()), cast<OpResult>(v).getResultNumber());
}

bool StepGraph::hasId(Value v) const {
  Operation *def = v.getDefiningOp();
  return def && idOf(def) >= 0 && !isCopy(def);
}

StepGraph analyzeStep(func::FuncOp fn) {
  StepGraph g;
  g.fn = fn;
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  llvm::StringSet<> stateNames;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (fn.getArgAttr(i, attr::kParam) || fn.getArgAttr(i, attr::kOptState) ||
        fn.getArgAttr(i, attr::kAccumulator))
      stateNames.insert(argumentName(fn, i));
  SmallVector<Value> work;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    std::string name = resultName(fn, i);
    if (name == "lr" || name == "grad_norm" ||
        StringRef(name).starts_with("grad.") || stateNames.contains(name))
      continue;
    work.push_back(v);
  }
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !g.forward.insert(def).second)
      continue;
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  int64_t pos = 0;
  for (Operation &op : body) {
    g.position[&op] = pos++;
    int64_t id = idOf(&op);
    if (id >= 0 && !isCopy(&op)) {
      if (static_cast<int64_t>(g.byId.size()) <= id)
        g.byId.resize(id + 1, nullptr);
      g.byId[id] = &op;
    }
  }
  for (Operation *op : g.forward)
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(),
                       [&](Operation *u) { return g.isBackwardUser(u); }))
        g.residual.insert(r);
  return g;
}

//===----------------------------------------------------------------------===//
// Measuring: fuse and plan a copy
//===----------------------------------------------------------------------===//

Trial measure(func::FuncOp fn, const std::vector<bool> &forwardIds) {
  Trial t;
  auto copy = cast<func::FuncOp>(fn->clone());
  auto erase = llvm::make_scope_exit([&] { copy->erase(); });
  FailureOr<plan::FunctionPlan> planned = plan::planFunction(copy);
  if (failed(planned))
    return t;
  t.ok = true;
  t.memory = planned->memory;
  t.buffers = planned->buffers;
  t.numSteps = planned->numSteps;
  t.report = plan::formatFunctionPlan(copy, *planned, 20);

  auto isBackward = [&](Operation *op) {
    if (isCopy(op))
      return true;
    int64_t id = idOf(op);
    return id >= 0 &&
           (id >= static_cast<int64_t>(forwardIds.size()) || !forwardIds[id]);
  };
  auto stepOf = [&](Operation *op) -> int64_t {
    auto it = planned->stepOf.find(op);
    return it == planned->stepOf.end() ? -1 : it->second;
  };
  Block &body = copy.getBody().front();
  t.stepText.resize(t.numSteps);
  for (Operation &op : body)
    if (int64_t s = stepOf(&op); s >= 0 && s < t.numSteps) {
      std::string text = describe(&op);
      if (auto fusion = dyn_cast<FusionOp>(op)) {
        text = fusion.getSymName().str();
        for (Operation &inner : fusion.getBody().front())
          if (!isa<ConstantOp, YieldOp>(inner)) {
            text += ": " + describe(&inner);
            break;
          }
      }
      t.stepText[s] = text;
    }

  const auto &buffers = t.buffers;
  t.info.resize(buffers.size());
  DenseMap<int64_t, size_t> indexOf;
  for (size_t i = 0; i < buffers.size(); ++i)
    indexOf[buffers[i].id] = i;
  for (size_t i = 0; i < buffers.size(); ++i) {
    BufferInfo &info = t.info[i];
    Value v = planned->values[i];
    info.first = buffers[i].firstUse;
    info.last = buffers[i].lastUse;
    info.isView = buffers[i].aliasOf.has_value();
    if (!v) {
      // A gradient bucket: backward bytes, never recomputed.
      info.what = "gradient bucket";
      info.lastForward = buffers[i].firstUse;
      continue;
    }
    Operation *def = v.getDefiningOp();
    info.what = describeValue(v);
    if (!info.isView && idOf(def) >= 0 && !isBackward(def)) {
      info.origin = idOf(def);
      info.ref = refOf(info.origin, cast<OpResult>(v).getResultNumber());
      t.bufferOf[info.ref] = i;
    }
    // Readers, through reshapes.
    SmallVector<Value> work{v};
    while (!work.empty()) {
      Value w = work.pop_back_val();
      for (Operation *user : w.getUsers()) {
        if (isa<func::ReturnOp>(user)) {
          info.returned = true;
          continue;
        }
        if (isa<ReshapeOp>(user)) {
          work.push_back(user->getResult(0));
          continue;
        }
        int64_t s = stepOf(user);
        if (s < 0)
          continue;
        if (isBackward(user)) {
          if (info.firstBackward < 0 || s < info.firstBackward)
            info.firstBackward = s;
        } else {
          info.lastForward = std::max(info.lastForward, s);
        }
      }
    }
    info.lastForward = std::max(info.lastForward, buffers[i].firstUse);
  }
  // Roots: widen over views (as the planner does).
  for (size_t i = 0; i < buffers.size(); ++i) {
    size_t r = i;
    while (buffers[r].aliasOf)
      r = indexOf[*buffers[r].aliasOf];
    t.info[r].first = std::min(t.info[r].first, buffers[i].firstUse);
    t.info[r].last = std::max(t.info[r].last, buffers[i].lastUse);
  }
  t.highWater.assign(t.numSteps, 0);
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (t.info[i].isView || !buffers[i].bytes)
      continue;
    int64_t top = t.memory.offsets[i] + buffers[i].bytes;
    for (int64_t s = std::max<int64_t>(0, t.info[i].first);
         s <= std::min(t.numSteps - 1, t.info[i].last); ++s)
      t.highWater[s] = std::max(t.highWater[s], top);
  }
  return t;
}

std::string describePeak(const Trial &t, int largest) {
  std::string s;
  llvm::raw_string_ostream os(s);
  int64_t step = t.memory.peakStep;
  os << "at step " << step;
  if (step < static_cast<int64_t>(t.stepText.size()))
    os << " (" << t.stepText[step] << ")";
  os << ":";
  std::vector<std::pair<int64_t, int>> cats;
  for (int c = 0; c < abi::kNumCategories; ++c)
    if (t.memory.peakBytesByCategory[c])
      cats.push_back({t.memory.peakBytesByCategory[c], c});
  llvm::sort(cats, std::greater<>());
  for (auto [i, cat] : llvm::enumerate(cats))
    os << (i ? ", " : " ")
       << abi::categoryName(static_cast<abi::CategoryKind>(cat.second)) << " "
       << analysis::formatBytes(cat.first);
  std::vector<std::pair<int64_t, size_t>> live;
  for (size_t i = 0; i < t.buffers.size(); ++i)
    if (!t.info[i].isView && t.info[i].first <= step && step <= t.info[i].last)
      live.push_back({t.buffers[i].bytes, i});
  llvm::sort(live, std::greater<>());
  if (!live.empty())
    os << "; largest live:";
  for (int k = 0; k < largest && k < static_cast<int>(live.size()); ++k) {
    const BufferInfo &info = t.info[live[k].second];
    os << (k ? ", " : " ") << analysis::formatBytes(live[k].first) << " "
       << info.what << " [" << info.first << ", " << info.last << "]";
  }
  return s;
}

} // namespace sinter::recompute

//===----------------------------------------------------------------------===//
// Helpers for the driver
//===----------------------------------------------------------------------===//

bool sinter::recomputeRequested(ModuleOp module, StringRef entry,
                                StringRef budget) {
  auto fn = module.lookupSymbol<func::FuncOp>(entry);
  if (!fn)
    return false;
  if (!budget.empty())
    return budget != "none";
  auto training = module->getAttrOfType<DictionaryAttr>(attr::kTraining);
  if (auto recompute =
          training ? training.getAs<DictionaryAttr>("recompute") : nullptr)
    if (auto policy = recompute.getAs<StringAttr>("policy"))
      if (policy.getValue() == "budget")
        return true;
  auto layers = module->getAttrOfType<ArrayAttr>(kRecomputeLayersAttr);
  return layers && !layers.empty();
}
