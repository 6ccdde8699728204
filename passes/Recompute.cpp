//===- Recompute.cpp - trade compute for memory in the backward pass -----===//
//
// Activations of the forward pass live until the backward pass reads them,
// so at the end of the forward pass almost all of them are in memory at
// once. This pass makes the backward pass recompute some of them, from
// values that are kept anyway, right before it first needs them: the
// original dies after its last forward use, and the copy lives only from
// that point on.
//
// Granularity: kernels. The pass runs on the fused step (after
// sinter-fuse-kernels, before sinter-plan-memory) and clones whole kernels
// (`sgraph.fusion` regions and matmul library calls; reshapes are free). A
// copy is the same region, so code generation emits the same loop nest and
// the library gets the same call: results are bitwise identical to the step
// without recompute. (Recomputing sgraph ops before fusion would not be:
// fusion would group the copies with other ops, and a reduction's summation
// order, or a matmul epilogue's GELU, depends on the kernel it lands in.)
// Dropout is a function of seed, step and element index, so a copy draws
// the same mask.
//
// Mechanics. The forward kernels are those the loss and the metrics depend
// on; a backward use is a use by any other op but the return. A
// recomputation ("region") names the forward values whose backward uses
// must read a copy (`redirect`) and which values it may not read from the
// forward pass (everything else is kept and read as is). At the region's
// point (the first backward op that reads a redirected value) it clones
// each kernel needed, in order, marks it `sinter.recomputed = "r<k>: <why>"`
// (a fusion region is renamed `<kernel>_r<k>`), and points the backward
// uses at the copies; forward kernels left without readers are erased.
//
// Regions come from:
//   * annotations: the importer lists the instances of layers with
//     `recompute: true` in the module's `sinter.recompute_layers`. A kernel
//     belongs to an instance when every op in it located in a layer is
//     located in that instance or its sub-layers (a kernel that fusion
//     built across two instances belongs to neither and is kept). One region
//     per instance: its values are recomputed from the instance's inputs,
//     except those a forward kernel outside the instance reads (its output,
//     the next block's input), which are kept.
//   * a budget (`budget=`, or the model's training.recompute budget): the
//     arena's peak must fit. Repeatedly: apply the regions so far to a copy
//     of the step and plan it with the real planner (passes/StepPlan.h);
//     if the arena fits, stop; otherwise describe each value kept in memory
//     from the forward to the backward pass as a candidate (its bytes, the
//     steps where recomputing frees them, the FLOPs and bytes of the kernels
//     that rebuild it from kept values, the intermediates they write) and let
//     passes/Analysis/RecomputeSelection.h choose more, cheapest FLOPs per
//     byte at the peak first. When the live bytes fit and the plan still
//     does not (placement left holes), the steps whose buffers the plan
//     placed above the budget count with that height, so that lowering them
//     leaves the planner room. Every round is measured by the planner the
//     binary uses, so "fits" is a fact about the final plan, not an
//     estimate. When nothing is left to choose and the arena still does not
//     fit, the pass fails with the smallest arena it reached and what
//     dominates its peak.
//
// With `report=<file>` it writes every recomputed value with its reason and
// cost and the memory plans before and after; the function gets
// `sinter.recompute_plan`, which `sinterc --memory-report` prints. Without
// annotations or a budget it does nothing.
//
//===----------------------------------------------------------------------===//

#include "passes/Recompute.h"

#include "passes/Analysis/RecomputeSelection.h"
#include "passes/Passes.h"
#include "passes/StepPlan.h"
#include "passes/RecomputeStep.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <functional>

namespace sinter {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter;
using namespace sinter::sgraph;
using namespace sinter::recompute;
namespace analysis = sinter::analysis;

namespace {

/// FLOP-equivalents per byte a recomputation moves through memory: about
/// what a CPU core computes in the time it streams one byte.
constexpr double kBytesWeight = 8.0;
/// A chain longer than this is not worth describing (nor recomputing).
constexpr size_t kMaxChainOps = 4000;
constexpr int kMaxRounds = 40;

//===----------------------------------------------------------------------===//
// Regions and applying them
//===----------------------------------------------------------------------===//

struct Region {
  std::string reason;
  /// Forward values whose backward uses read a copy.
  std::vector<ValueRef> redirect;
  /// Annotations: the values the region recomputes (all others are kept).
  /// Budget regions recompute every forward value that is not a kept
  /// residual instead.
  llvm::DenseSet<ValueRef> mustClone;
  bool byBudget = false;

  // Filled in when applied. A region can clone nothing (ops == 0) when an
  // earlier one already made the copies it needs.
  bool applied = false;
  std::string tag;
  std::string pointText;
  int64_t ops = 0;
  double flops = 0.0;
};

/// Applies `regions` to `fn` (a function whose ops carry ids, analysed as
/// `g`); copies get tags "r<index>: <reason>". Regions with nothing to
/// redirect are left out (ops = 0).
void applyRegions(func::FuncOp fn, const StepGraph &g,
                  std::vector<Region> &regions) {
  llvm::DenseSet<Value> dropped;
  for (const Region &r : regions)
    for (ValueRef ref : r.redirect)
      dropped.insert(g.resolve(ref));

  // Each region's point: the first backward use of what it redirects.
  struct Work {
    size_t index;
    Operation *point;
  };
  std::vector<Work> order;
  for (auto [i, r] : llvm::enumerate(regions)) {
    r.ops = 0;
    r.flops = 0.0;
    r.applied = false;
    r.tag = llvm::formatv("r{0}: {1}", i, r.reason).str();
    Operation *point = nullptr;
    for (ValueRef ref : r.redirect)
      for (Operation *user : g.resolve(ref).getUsers())
        if (g.isBackwardUser(user) &&
            (!point || g.position.lookup(user) < g.position.lookup(point)))
          point = user;
    if (point)
      order.push_back({i, point});
  }
  std::stable_sort(
      order.begin(), order.end(), [&](const Work &a, const Work &b) {
        return g.position.lookup(a.point) < g.position.lookup(b.point);
      });

  Block &body = fn.getBody().front();
  OpBuilder b(fn.getContext());
  DenseMap<Value, Value> copies;
  for (const Work &w : order) {
    Region &r = regions[w.index];
    r.pointText = describe(w.point);
    b.setInsertionPoint(w.point);
    auto kept = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || isa<ConstantOp>(def) || !g.forward.contains(def) ||
          !isRecomputable(def) || !g.hasId(v))
        return true;
      if (!r.byBudget)
        return !r.mustClone.contains(g.ref(v));
      return g.residual.contains(v) && !dropped.contains(v);
    };
    std::function<Value(Value)> copyOf = [&](Value v) -> Value {
      if (auto it = copies.find(v); it != copies.end())
        return it->second;
      if (kept(v))
        return v;
      Operation *def = v.getDefiningOp();
      IRMapping map;
      for (Value operand : def->getOperands())
        map.map(operand, copyOf(operand));
      Operation *copy = b.clone(*def, map);
      copy->setAttr(kRecomputedAttr, b.getStringAttr(r.tag));
      if (auto fusion = dyn_cast<FusionOp>(copy))
        fusion.setSymName(
            (fusion.getSymName() + "_r" + std::to_string(w.index)).str());
      for (auto [orig, c] : llvm::zip(def->getResults(), copy->getResults()))
        copies[orig] = c;
      r.ops += 1;
      r.flops += opFlops(def);
      return copies.lookup(v);
    };
    for (ValueRef ref : r.redirect) {
      Value v = g.resolve(ref);
      if (llvm::none_of(v.getUsers(),
                        [&](Operation *u) { return g.isBackwardUser(u); }))
        continue;
      Value copy = copyOf(v);
      r.applied = true;
      v.replaceUsesWithIf(copy, [&](OpOperand &use) {
        Operation *owner = use.getOwner();
        return g.isBackwardUser(owner) && !isCopy(owner);
      });
    }
  }

  // Forward ops whose only readers were backward ops are dead now.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
}

/// The listed instance `layer` belongs to: itself or its longest listed
/// prefix ending at a '.'; "" if none.
StringRef instanceOf(StringRef layer, ArrayRef<StringRef> instances) {
  StringRef best;
  for (StringRef name : instances)
    if ((layer == name ||
         (layer.starts_with(name) && layer.size() > name.size() &&
          layer[name.size()] == '.')) &&
        name.size() > best.size())
      best = name;
  return best;
}

/// One region per recomputed layer instance (see the file comment).
std::vector<Region> annotationRegions(const StepGraph &g,
                                      ArrayRef<StringRef> instances) {
  func::FuncOp fn = g.fn;
  Block &body = fn.getBody().front();
  DenseMap<Operation *, StringRef> groupOf;
  llvm::MapVector<StringRef, SmallVector<Operation *>> members;
  // The instance a kernel belongs to: the one all its located ops are in.
  auto kernelInstance = [&](Operation *op) -> StringRef {
    SmallVector<Operation *> ops;
    if (auto fusion = dyn_cast<FusionOp>(op)) {
      for (Operation &inner : fusion.getBody().front())
        if (!isa<ConstantOp, YieldOp>(inner))
          ops.push_back(&inner);
    } else {
      ops.push_back(op);
    }
    StringRef group;
    for (Operation *inner : ops) {
      std::string layer = layerOf(inner);
      if (layer.empty())
        continue;
      StringRef in = instanceOf(layer, instances);
      if (in.empty() || (!group.empty() && in != group))
        return "";
      group = in;
    }
    return group;
  };
  for (Operation &opRef : body) {
    Operation *op = &opRef;
    if (!g.forward.contains(op) || !isRecomputable(op) || idOf(op) < 0)
      continue;
    StringRef group = kernelInstance(op);
    // A reshape is a view of its operand: in its operand's instance.
    if (isa<ReshapeOp>(op))
      if (Operation *def = op->getOperand(0).getDefiningOp())
        group = groupOf.lookup(def);
    if (group.empty())
      continue;
    groupOf[op] = group;
    members[group].push_back(op);
  }

  std::vector<Region> regions;
  for (auto &[name, ops] : members) {
    Region r;
    r.reason = ("annotated layer '" + name + "'").str();
    for (Operation *op : ops)
      for (Value v : op->getResults()) {
        // Kept: what a forward op outside the instance (or the return)
        // reads: the instance's output, the next one's input.
        bool boundary = llvm::any_of(v.getUsers(), [&](Operation *u) {
          if (isa<func::ReturnOp>(u))
            return true;
          auto it = groupOf.find(u);
          return g.forward.contains(u) &&
                 (it == groupOf.end() || it->second != name);
        });
        if (boundary)
          continue;
        r.mustClone.insert(g.ref(v));
        if (g.residual.contains(v))
          r.redirect.push_back(g.ref(v));
      }
    if (!r.redirect.empty())
      regions.push_back(std::move(r));
  }
  return regions;
}

//===----------------------------------------------------------------------===//
// Candidates for the budget
//===----------------------------------------------------------------------===//

struct CandidateInfo {
  ValueRef ref;
  double flops = 0.0;
  int64_t moved = 0;
  int64_t chainOps = 0;
};

/// The selection problem for the step as `t` measured it (see
/// RecomputeSelection.h); `g` is the original step, `dropped` what regions
/// recompute already, `excluded` what must not be chosen.
analysis::RecomputeProblem
buildProblem(const StepGraph &g, const Trial &t,
             const llvm::DenseSet<ValueRef> &dropped,
             const llvm::DenseSet<ValueRef> &excluded,
             std::vector<CandidateInfo> &infos) {
  analysis::RecomputeProblem problem;
  problem.liveBytes = analysis::liveBytesByStep(t.buffers, t.numSteps);
  for (size_t i = 0; i < t.buffers.size(); ++i) {
    const BufferInfo &info = t.info[i];
    if (info.origin < 0 || info.isView || info.returned ||
        info.firstBackward < 0 || dropped.contains(info.ref) ||
        excluded.contains(info.ref))
      continue;
    int64_t savedFirst = info.lastForward + 1,
            savedLast = info.firstBackward - 1;
    if (savedFirst > savedLast)
      continue;
    Value m = g.resolve(info.ref);
    // The chain that rebuilds m from kept values.
    auto kept = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || isa<ConstantOp>(def) || !g.forward.contains(def) ||
          !isRecomputable(def))
        return true;
      return v != m && g.residual.contains(v) && !dropped.contains(g.ref(v));
    };
    llvm::SetVector<Operation *> chain;
    llvm::SetVector<Value> inputs;
    SmallVector<Value> work{m};
    bool tooLong = false;
    while (!work.empty() && !tooLong) {
      Value v = work.pop_back_val();
      if (kept(v)) {
        inputs.insert(v);
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (!chain.insert(def))
        continue;
      tooLong = chain.size() > kMaxChainOps;
      for (Value operand : def->getOperands())
        work.push_back(operand);
    }
    if (tooLong)
      continue;
    analysis::RecomputeCandidate c;
    c.id = infos.size();
    c.bytes = t.buffers[i].bytes;
    c.savedFirst = savedFirst;
    c.savedLast = savedLast;
    CandidateInfo ci;
    ci.ref = info.ref;
    ci.chainOps = chain.size();
    ci.moved = c.bytes;
    for (Operation *op : chain) {
      ci.flops += opFlops(op);
      for (Value r : op->getResults()) {
        if (r == m || !g.hasId(r))
          continue;
        auto it = t.bufferOf.find(g.ref(r));
        if (it == t.bufferOf.end())
          continue;
        // An intermediate the chain writes to memory: there at the point.
        int64_t bytes = t.buffers[it->second].bytes;
        c.extras.push_back({bytes, info.firstBackward, info.firstBackward});
        ci.moved += 2 * bytes;
      }
    }
    for (Value in : inputs) {
      if (isa<BlockArgument>(in)) {
        ci.moved += bytesOf(in);
        continue;
      }
      // The buffer behind a kept value (through views).
      Value base = in;
      while (base.getDefiningOp() && isView(base.getDefiningOp()) &&
             !(g.hasId(base) && t.bufferOf.count(g.ref(base))))
        base = base.getDefiningOp()->getOperand(0);
      if (!g.hasId(base))
        continue;
      auto it = t.bufferOf.find(g.ref(base));
      if (it == t.bufferOf.end())
        continue;
      const BufferInfo &bi = t.info[it->second];
      int64_t bytes = t.buffers[it->second].bytes;
      ci.moved += bytes;
      // Kept alive until the point if it would have died earlier.
      if (bi.last < info.firstBackward)
        c.extras.push_back({bytes, bi.last + 1, info.firstBackward});
    }
    c.cost = ci.flops + kBytesWeight * static_cast<double>(ci.moved);
    problem.candidates.push_back(c);
    infos.push_back(ci);
  }
  return problem;
}

/// m and the forward views of it (whose backward uses read m's bytes too).
std::vector<ValueRef> withViews(const StepGraph &g, ValueRef ref) {
  std::vector<ValueRef> out{ref};
  for (size_t i = 0; i < out.size(); ++i)
    for (Operation *user : g.resolve(out[i]).getUsers())
      if (isView(user) && g.forward.contains(user) && idOf(user) >= 0)
        out.push_back(g.ref(user->getResult(0)));
  return out;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

class RecomputePass : public sinter::impl::RecomputePassBase<RecomputePass> {
public:
  using RecomputePassBase::RecomputePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(entry);
    if (!fn || fn.isExternal() || !fn.getBody().hasOneBlock())
      return;

    std::optional<analysis::MemoryBudget> memoryBudget;
    std::string budgetText = budget;
    if (budgetText.empty())
      budgetText = modelBudget(module);
    if (!budgetText.empty() && budgetText != "none") {
      std::string error;
      memoryBudget = analysis::parseMemoryBudget(budgetText, error);
      if (!memoryBudget) {
        fn.emitError("--memory-budget=") << budgetText << ": " << error;
        return signalPassFailure();
      }
    }
    SmallVector<StringRef> instances;
    if (auto layers = module->getAttrOfType<ArrayAttr>(kRecomputeLayersAttr))
      for (auto name : layers.getAsRange<StringAttr>())
        instances.push_back(name.getValue());
    if (!memoryBudget && instances.empty())
      return;
    bool fused = false, recomputed = false;
    fn.walk([&](Operation *op) {
      fused |= isa<FusionOp>(op);
      recomputed |= op->hasAttr(kRecomputedAttr);
    });
    if (recomputed)
      return;
    if (!fused) {
      fn.emitError("sinter-recompute works on kernels: run "
                   "sinter-fuse-kernels first");
      return signalPassFailure();
    }
    if (failed(run(fn, instances, memoryBudget)))
      signalPassFailure();
  }

private:
  static std::string modelBudget(ModuleOp module) {
    auto training = module->getAttrOfType<DictionaryAttr>(attr::kTraining);
    auto recompute =
        training ? training.getAs<DictionaryAttr>("recompute") : nullptr;
    if (!recompute)
      return "";
    auto policy = recompute.getAs<StringAttr>("policy");
    auto bytes = recompute.getAs<IntegerAttr>("budget_bytes");
    if (policy && policy.getValue() == "budget" && bytes && bytes.getInt() > 0)
      return std::to_string(bytes.getInt());
    return "";
  }

  LogicalResult run(func::FuncOp fn, ArrayRef<StringRef> instances,
                    std::optional<analysis::MemoryBudget> memoryBudget);
  LogicalResult writeReport(func::FuncOp fn, const std::vector<Region> &regions,
                            const StepGraph &g, const Trial &before,
                            const Trial &after,
                            std::optional<analysis::MemoryBudget> budget,
                            int64_t budgetBytes, int rounds, double stepFlops);
};

LogicalResult
RecomputePass::run(func::FuncOp fn, ArrayRef<StringRef> instances,
                   std::optional<analysis::MemoryBudget> memoryBudget) {
  Block &body = fn.getBody().front();
  int64_t nextId = 0;
  for (Operation &op : body)
    op.setAttr(kIdAttr, IntegerAttr::get(IntegerType::get(fn.getContext(), 64),
                                         nextId++));
  auto cleanup = llvm::make_scope_exit(
      [&] { fn.walk([](Operation *op) { op->removeAttr(kIdAttr); }); });
  StepGraph g = analyzeStep(fn);
  std::vector<bool> forwardIds(nextId, false);
  double stepFlops = 0.0;
  for (Operation &op : body) {
    forwardIds[idOf(&op)] = g.forward.contains(&op);
    stepFlops += opFlops(&op);
  }

  // A copy of the step with `regions` applied, measured.
  auto trialWith = [&](std::vector<Region> &regions) {
    auto work = cast<func::FuncOp>(fn->clone());
    StepGraph gw = analyzeStep(work);
    applyRegions(work, gw, regions);
    Trial t = measure(work, forwardIds);
    work->erase();
    return t;
  };

  Trial before = measure(fn, forwardIds);
  if (!before.ok)
    return failure();
  std::vector<Region> regions = annotationRegions(g, instances);
  Trial current = regions.empty() ? before : trialWith(regions);
  if (!current.ok)
    return failure();

  int64_t budgetBytes = 0;
  int rounds = 0;
  if (memoryBudget) {
    budgetBytes = memoryBudget->resolve(before.arena());
    // The model's peak is the planner's lower bound; aim a little below
    // the budget, for the holes placement leaves.
    const int64_t slack = std::max<int64_t>(budgetBytes / 200, 4096);
    int64_t target = budgetBytes - slack;
    Trial best = current;
    llvm::DenseSet<ValueRef> excluded;
    while (current.arena() > budgetBytes && rounds < kMaxRounds) {
      ++rounds;
      llvm::DenseSet<ValueRef> dropped;
      for (const Region &r : regions)
        for (ValueRef ref : r.redirect)
          dropped.insert(ref);
      std::vector<CandidateInfo> infos;
      analysis::RecomputeProblem problem =
          buildProblem(g, current, dropped, excluded, infos);
      analysis::RecomputeOptions options;
      options.exactLimit = 12;
      options.targetBytes = target;
      analysis::RecomputeSelection selection =
          analysis::selectRecompute(problem, options);
      // Nothing more lowers the live bytes' peak: either they fit and the
      // plan does not (placement left holes), or the budget is below what
      // recompute can reach. Then the steps whose buffers the plan placed
      // above the goal (the budget, or the lowest peak reachable) need what
      // the plan gave them, their high water; lowering those leaves the
      // planner room.
      if (selection.error.empty() && selection.chosen.empty()) {
        int64_t goal = std::max(budgetBytes, selection.peakBytes);
        for (int64_t s = 0; s < current.numSteps; ++s)
          if (current.highWater[s] > goal)
            problem.liveBytes[s] =
                std::max(problem.liveBytes[s], current.highWater[s]);
        options.targetBytes = std::min(target, goal);
        selection = analysis::selectRecompute(problem, options);
      }
      // The model fits already but the plan does not: aim lower.
      for (int tries = 0; selection.error.empty() && selection.chosen.empty() &&
                          selection.fits && tries < 8;
           ++tries) {
        target -= std::max(slack, current.arena() - budgetBytes);
        options.targetBytes = target;
        selection = analysis::selectRecompute(problem, options);
      }
      if (!selection.error.empty())
        return fn.emitError("recompute selection: ") << selection.error;
      if (selection.chosen.empty())
        break;
      size_t firstNew = regions.size();
      for (const analysis::RecomputePick &pick : selection.chosen) {
        const CandidateInfo &ci = infos[pick.id];
        Region r;
        r.byBudget = true;
        r.redirect = withViews(g, ci.ref);
        if (pick.how == "exact") {
          r.reason = llvm::formatv("budget, round {0}: part of the cheapest "
                                   "choice that fits (exact search over {1} "
                                   "candidates)",
                                   rounds, problem.candidates.size());
        } else {
          std::string at = pick.peakStep < (int64_t)current.stepText.size()
                               ? current.stepText[pick.peakStep]
                               : "";
          r.reason = llvm::formatv(
              "budget, round {0}: the arena's peak ({1} live at step {2}, "
              "{3}) over the target {4}; of the {5} values kept there for "
              "the backward pass, the cheapest per byte saved: {6:f1} "
              "FLOP-equivalents/B ({7} and {8} moved to rebuild it)",
              rounds, analysis::formatBytes(pick.peakBytes), pick.peakStep, at,
              analysis::formatBytes(options.targetBytes), pick.alternatives,
              pick.costPerByte, flopsText(ci.flops),
              analysis::formatBytes(ci.moved));
        }
        regions.push_back(std::move(r));
      }
      Trial next = trialWith(regions);
      if (!next.ok)
        return failure();
      // A choice whose original something still reads in the backward pass
      // (a copy of another region that keeps it) freed nothing: drop it.
      bool removed = false;
      for (size_t k = firstNew; k < regions.size();) {
        ValueRef ref = regions[k].redirect.front();
        auto it = next.bufferOf.find(ref);
        if (it != next.bufferOf.end() &&
            next.info[it->second].firstBackward >= 0) {
          excluded.insert(ref);
          regions.erase(regions.begin() + k);
          removed = true;
          continue;
        }
        ++k;
      }
      if (removed) {
        next = trialWith(regions);
        if (!next.ok)
          return failure();
      }
      current = std::move(next);
      if (current.arena() < best.arena())
        best = current;
    }
    if (current.arena() > budgetBytes) {
      const Trial &low = best.arena() < current.arena() ? best : current;
      // The report shows where it got stuck (the function stays as it was).
      (void)writeReport(fn, regions, g, before, current, memoryBudget,
                        budgetBytes, rounds, stepFlops);
      return fn.emitError("memory budget ")
             << analysis::formatBytes(budgetBytes) << " ("
             << (memoryBudget->kind == analysis::MemoryBudget::Kind::Fraction
                     ? memoryBudget->describe() + ", " +
                           analysis::formatBytes(before.arena())
                     : std::string("the arena without recompute is ") +
                           analysis::formatBytes(before.arena()))
             << ") cannot be met: recomputing what helps brings the arena "
                "down to "
             << analysis::formatBytes(low.arena()) << " at best; its peak is "
             << describePeak(low, 3);
    }
  }

  // The real thing.
  applyRegions(fn, g, regions);
  int64_t values = 0, ops = 0;
  double flops = 0.0;
  for (const Region &r : regions) {
    if (!r.applied)
      continue;
    values += r.redirect.size();
    ops += r.ops;
    flops += r.flops;
  }
  Builder b(fn.getContext());
  SmallVector<NamedAttribute> summary = {
      b.getNamedAttr("arena_without_recompute",
                     b.getI64IntegerAttr(before.arena())),
      b.getNamedAttr("arena", b.getI64IntegerAttr(current.arena())),
      b.getNamedAttr("regions",
                     b.getI64IntegerAttr(llvm::count_if(
                         regions, [](const Region &r) { return r.applied; }))),
      b.getNamedAttr("values", b.getI64IntegerAttr(values)),
      b.getNamedAttr("kernels", b.getI64IntegerAttr(ops)),
      b.getNamedAttr("flops", b.getI64IntegerAttr(static_cast<int64_t>(flops))),
      b.getNamedAttr("step_flops",
                     b.getI64IntegerAttr(static_cast<int64_t>(stepFlops))),
  };
  if (memoryBudget) {
    summary.push_back(
        b.getNamedAttr("budget", b.getI64IntegerAttr(budgetBytes)));
    summary.push_back(b.getNamedAttr(
        "budget_text", b.getStringAttr(memoryBudget->describe())));
  }
  fn->setAttr(kRecomputePlanAttr, b.getDictionaryAttr(summary));
  return writeReport(fn, regions, g, before, current, memoryBudget, budgetBytes,
                     rounds, stepFlops);
}

LogicalResult
RecomputePass::writeReport(func::FuncOp fn, const std::vector<Region> &regions,
                           const StepGraph &g, const Trial &before,
                           const Trial &after,
                           std::optional<analysis::MemoryBudget> budget,
                           int64_t budgetBytes, int rounds, double stepFlops) {
  if (report.empty())
    return success();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "Recompute of @" << fn.getName() << "\n\n";
  os << "arena without recompute: " << analysis::formatBytes(before.arena())
     << "; peak " << describePeak(before, 3) << "\n";
  if (budget)
    os << "budget: " << analysis::formatBytes(budgetBytes) << " ("
       << budget->describe() << "), " << rounds << " round"
       << (rounds == 1 ? "" : "s") << " of selection\n";
  os << "arena with recompute:    " << analysis::formatBytes(after.arena())
     << "; peak " << describePeak(after, 10) << "\n";
  if (budget)
    os << (after.arena() <= budgetBytes ? "fits the budget\n"
                                        : "does NOT fit the budget\n");
  int64_t values = 0, ops = 0;
  double flops = 0.0;
  for (const Region &r : regions)
    if (r.applied) {
      values += r.redirect.size();
      ops += r.ops;
      flops += r.flops;
    }
  os << llvm::formatv(
      "recomputed: {0} values in {1} regions, {2} kernels cloned, "
      "{3} ({4:f1}% of the step's {5})\n",
      values,
      llvm::count_if(regions, [](const Region &r) { return r.applied; }), ops,
      flopsText(flops), stepFlops > 0 ? 100.0 * flops / stepFlops : 0.0,
      flopsText(stepFlops));
  os << "\nEach region: why, where its copies run (before the first backward "
        "op that reads them), what it costs; then each value whose backward "
        "uses now read a copy: its op, shape, bytes and, if it was in memory "
        "without recompute, the steps over which recomputing frees it.\n";
  for (const Region &r : regions) {
    if (!r.applied)
      continue;
    os << "\n" << r.tag << "\n";
    os << "  before " << r.pointText << ": " << r.ops << " kernels cloned, "
       << flopsText(r.flops)
       << (r.ops ? "" : " (the copies of an earlier region serve)") << "\n";
    for (ValueRef ref : r.redirect) {
      Value v = g.resolve(ref);
      os << "  " << describeValue(v) << " " << typeText(v.getType()) << " "
         << analysis::formatBytes(bytesOf(v)) << " (its kernel "
         << flopsText(opFlops(v.getDefiningOp())) << ")";
      auto it = before.bufferOf.find(ref);
      if (it != before.bufferOf.end()) {
        const BufferInfo &bi = before.info[it->second];
        if (bi.firstBackward > bi.lastForward + 1)
          os << ": frees steps " << bi.lastForward + 1 << "-"
             << bi.firstBackward - 1;
        else
          os << ": was in memory, freed nowhere";
      } else {
        os << ": was not in memory (fused or a view)";
      }
      os << "\n";
    }
  }
  os << "\n=== memory plan without recompute ===\n" << before.report;
  os << "\n=== memory plan with recompute ===\n" << after.report;
  std::error_code ec;
  llvm::raw_fd_ostream file(report, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return fn.emitError("cannot write the recompute report '")
           << report << "': " << ec.message();
  file << text;
  return success();
}

} // namespace
