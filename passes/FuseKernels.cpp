//===- FuseKernels.cpp - group the training step into kernel regions -----===//
//
// Code generation emits one loop nest per kernel, so every intermediate that
// stays inside a kernel never touches memory. This pass decides the kernels:
// it walks @train_step (every function, in fact) in program order and puts
// each op either into the kernel of one of its producers or into a new one,
// then wraps each kernel in an `sgraph.fusion` region.
//
// Op classes:
//   - elementwise (binary and unary math, compare, select, cast, dropout,
//     one_hot, iota, causal_mask, embedding's gather, pads without interior
//     padding, the optimizer updates, lr_schedule): one scalar per element
//     of the result;
//   - reductions (`reduce_sum`, `reduce_max`): iterate over their operand;
//   - views (`transpose`, `broadcast`, `slice`): re-index a value that is
//     already in memory; absorbed into every kernel that reads them and only
//     materialized (as a copy kernel of their own) when something outside a
//     kernel reads them;
//   - `reshape`: an alias of its operand's bytes, never a kernel;
//   - `matmul`: a library call (oneDNN), with the scale, bias and activation
//     that read only its result as the library's epilogue; where the target
//     asks (cuBLASLt), also a tanh GELU whose input the backward pass reads
//     (the library writes both), and a gelu_grad of its bare product with
//     the bias gradient summed from it (DGELU_BGRAD);
//   - `concat`, `embedding_grad`, `argmax`, interior pads: one special
//     kernel each.
//
// An op joins the kernel of a producer when (1) its result has the kernel's
// iteration shape (so the producer's scalar is exactly the one it needs),
// (2) it does not read the kernel's reduction result (only final after the
// loop) or any value derived from the kernel outside it, (3) joining
// creates no cycle between kernels, and (4) the kernel would read at most
// `max-kernel-inputs` values from outside (each is an argument of its code;
// the sum of a deep model's squared parameter norms goes on in a new
// kernel, the same additions in the same order). Cycles are checked against
// a topological order of the kernels kept as they grow (Pearce and Kelly),
// so a query walks only the kernels between the two. A reduction joins a
// loop kernel that iterates over its operand's shape, turning it into a
// reduction kernel; a second reduction over the same axes may join too.
// Values used outside their kernel are exported (multi-output kernels).
// Splat constants are cloned into every kernel that reads them, and so is a
// causal mask, computed from the indices where it is read (a kernel that
// sees it can skip the masked part of a row, KernelBuilder::causalRows).
//
// Row phases relax (2): when a kernel's reductions run over the trailing
// axes of its space, an op reading a per-row result (keepdims), or a row op
// over the per-row shape, joins as a later phase; code generation runs the
// phases one after another on each chunk of rows (KernelEmitter). The
// per-row results a later phase reads are exported.
//
// A sum of zero pads whose operands tile one axis is first rewritten to a
// concat, and a reduction over every axis of a tensor of 32K elements or
// more is split into a reduction of the rows and a sum of the row results,
// so that the big part has a dimension to run in parallel (one over the
// leading axes likewise, so that threads read whole rows). After an op is
// placed, a producer kernel of the same shape that feeds only its kernel is
// merged into it, and cheap elementwise chains whose only outside reader it
// is are recomputed in it rather than written and read back. Kernels are
// placed in a topological order that keeps program order where it can;
// sinter-schedule-kernels then chooses the order the step runs in.
//
// Every op inside a region carries `sinter.fusion`, the reason it is where
// it is; ops left outside carry the reason they are not fused. The dumps
// print them.
//
// This file decides the groups (KernelGrouper, passes/KernelGrouper.h);
// FuseKernelsEpilogues.cpp which ops a matmul library applies as its
// epilogue; FuseKernelsRegions.cpp orders the groups and builds the
// regions.
//
// Preconditions: sinter-decompose-ops has run (softmax, layer_norm, ... are
// gone). Runs at the end of the optimized phase.
//
//===----------------------------------------------------------------------===//

#include "abi/Abi.h"
#include "passes/KernelGrouper.h"

#include "passes/FusionRewrites.h"
#include "passes/Passes.h"
#include "passes/StepPlan.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace sinter {
#define GEN_PASS_DEF_FUSEKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter::sgraph;
namespace analysis = sinter::analysis;
using namespace sinter::fusion;

OpClass sinter::fusion::classify(Operation *op) {
  if (auto c = dyn_cast<ConstantOp>(op))
    return cast<DenseElementsAttr>(c.getValue()).isSplat()
               ? OpClass::SplatConstant
               : OpClass::Opaque;
  if (isa<CausalMaskOp>(op) && llvm::all_of(op->getUsers(), [](Operation *u) {
        return classify(u) == OpClass::Elementwise;
      }))
    return OpClass::Generated;
  if (isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, CompareOp,
          SelectOp, NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp,
          SigmoidOp, ReluOp, ErfOp, GeluOp, GeluGradOp, CastOp, DropoutOp,
          OneHotOp, IotaOp, CausalMaskOp, EmbeddingOp, SgdUpdateOp,
          MomentumUpdateOp, AdamUpdateOp, LrScheduleOp>(op))
    return OpClass::Elementwise;
  if (isa<ReduceSumOp, ReduceMaxOp>(op))
    return OpClass::Reduction;
  if (isa<TransposeOp, BroadcastOp, SliceOp>(op))
    return OpClass::View;
  // A pad without interior padding is elementwise over its result: each
  // element is a read of the operand or the padding value.
  if (auto pad = dyn_cast<PadOp>(op))
    if ((!pad.getInterior() ||
         llvm::all_of(*pad.getInterior(), [](int64_t i) { return i == 0; })) &&
        llvm::all_of(pad.getLow(), [](int64_t l) { return l >= 0; }) &&
        llvm::all_of(pad.getHigh(), [](int64_t h) { return h >= 0; }))
      return OpClass::Elementwise;
  if (isa<ReshapeOp>(op))
    return OpClass::Alias;
  if (isa<MatmulOp>(op))
    return OpClass::Library;
  if (isa<PadOp, ConcatOp, EmbeddingGradOp, ArgmaxOp>(op))
    return OpClass::Special;
  return OpClass::Opaque;
}

namespace {

/// The axes a reduce_sum or reduce_max reduces over; none for other ops.
SmallVector<int64_t> reduceAxesOf(Operation *op) {
  if (auto r = dyn_cast<ReduceSumOp>(op))
    return SmallVector<int64_t>(r.getAxes().begin(), r.getAxes().end());
  if (auto r = dyn_cast<ReduceMaxOp>(op))
    return SmallVector<int64_t>(r.getAxes().begin(), r.getAxes().end());
  return {};
}

std::string shapeText(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? "x" : "") + std::to_string(d);
  return s;
}

/// The per-row shape of a reduction kernel whose reductions all run over
/// the trailing axes of its space (keepdims: those axes are 1), or empty.
/// Only such a kernel can take later phases: an op reading its per-row
/// results iterates over the same rows right after each is final, while
/// they are still in cache (docs/CodeGen.md, "row phases").
SmallVector<int64_t> rowShape(const Group &g) {
  if (g.kind != Group::Reduction || g.reduceAxes.empty() ||
      g.reduceAxes.size() >= g.space.size())
    return {};
  SmallVector<int64_t> axes(g.reduceAxes);
  llvm::sort(axes);
  int64_t first = g.space.size() - axes.size();
  for (auto [k, a] : llvm::enumerate(axes))
    if (a != first + (int64_t)k)
      return {};
  SmallVector<int64_t> rows(g.space);
  for (int64_t a : axes)
    rows[a] = 1;
  return rows;
}

/// The elements in one chunk of rows of a row-phased kernel over `g`'s
/// space, as code generation cuts it.
int64_t chunkElements(const Group &g, const analysis::KernelLimits &limits) {
  std::vector<int64_t> space(g.space.begin(), g.space.end());
  std::vector<bool> reduced(space.size(), false);
  for (int64_t a : g.reduceAxes)
    reduced[a] = true;
  return analysis::chunkElements(
      space, analysis::chunkDimensions(
                 space, reduced,
                 analysis::splitDimension(space, reduced, limits), limits));
}

} // namespace

void KernelGrouper::sourcesOf(Value v, SmallVectorImpl<int> &out,
                              bool &isMember) {
  isMember = false;
  Operation *def = v.getDefiningOp();
  if (!def)
    return;
  OpClass c = classify(def);
  if (c == OpClass::View || c == OpClass::Alias) {
    // A view or alias reads its operand once that is in memory: it depends
    // on the operand's group, and is never a scalar inside it.
    bool ignored;
    sourcesOf(def->getOperand(0), out, ignored);
    return;
  }
  auto it = groupOf.find(def);
  if (it == groupOf.end())
    return;
  out.push_back(it->second);
  Group &g = groups[it->second];
  isMember = (g.kind == Group::Loop || g.kind == Group::Reduction) &&
             c != OpClass::Reduction;
}

Value KernelGrouper::inputOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    OpClass c = classify(def);
    if (c == OpClass::SplatConstant || c == OpClass::Generated)
      return {};
    if (c != OpClass::View && c != OpClass::Alias)
      break;
    v = def->getOperand(0);
  }
  return v;
}

SmallVector<Value> KernelGrouper::newInputs(Operation *op, const Group &g) {
  SmallVector<Value> added;
  for (Value operand : op->getOperands()) {
    Value in = inputOf(operand);
    if (!in || g.inputs.contains(in) || llvm::is_contained(added, in))
      continue;
    if (Operation *def = in.getDefiningOp()) {
      auto it = groupOf.find(def);
      if (it != groupOf.end() && it->second == g.id)
        continue;
    }
    added.push_back(in);
  }
  return added;
}

bool KernelGrouper::dependsOn(int from, int target) {
  if (from == target)
    return true;
  // Dependencies come earlier in the topological order: nothing before
  // `target` leads to it. Without this bound every query walks most of the
  // groups built so far, quadratic in the step.
  int floor = groups[target].order;
  if (groups[from].order < floor)
    return false;
  SmallVector<int> stack{from};
  llvm::DenseSet<int> seen{from};
  while (!stack.empty()) {
    int g = stack.pop_back_val();
    for (int d : groups[g].deps) {
      if (d == target)
        return true;
      if (groups[d].order > floor && seen.insert(d).second)
        stack.push_back(d);
    }
  }
  return false;
}

void KernelGrouper::addDep(Group &g, int s) {
  if (s == g.id || !g.deps.insert(s).second)
    return;
  groups[s].users.insert(g.id);
  int lower = g.order, upper = groups[s].order;
  if (upper < lower)
    return;
  // s is after g in the order: move what must come before g (s and its
  // dependencies from g's place on) ahead of what must come after it (g
  // and its readers up to s's place), on the same positions (Pearce and
  // Kelly's dynamic topological order). The caller made sure s does not
  // depend on g, so the two sets are disjoint.
  auto collect = [&](int start, bool down) {
    SmallVector<int> found{start}, stack{start};
    llvm::DenseSet<int> seen{start};
    while (!stack.empty()) {
      int n = stack.pop_back_val();
      for (int m : down ? groups[n].deps : groups[n].users) {
        int o = groups[m].order;
        if ((down ? o > lower : o < upper) && seen.insert(m).second) {
          found.push_back(m);
          stack.push_back(m);
        }
      }
    }
    llvm::sort(found,
               [&](int a, int b) { return groups[a].order < groups[b].order; });
    return found;
  };
  SmallVector<int> before = collect(s, /*down=*/true);
  SmallVector<int> after = collect(g.id, /*down=*/false);
  SmallVector<int> positions;
  for (int n : llvm::concat<int>(before, after))
    positions.push_back(groups[n].order);
  llvm::sort(positions);
  for (auto [n, position] :
       llvm::zip(llvm::concat<int>(before, after), positions))
    groups[n].order = position;
}

int KernelGrouper::newGroup(Operation *op, Group::Kind kind,
                            ArrayRef<int64_t> space) {
  Group g;
  g.id = groups.size();
  g.kind = kind;
  g.space.assign(space.begin(), space.end());
  g.firstPosition = position[op];
  g.order = nextOrder++; // read by no group yet
  groups.push_back(std::move(g));
  addMember(groups.back(), op);
  return groups.back().id;
}

void KernelGrouper::addMember(Group &g, Operation *op) {
  phase[op] = phaseIn(op, g);
  for (Value in : newInputs(op, g))
    g.inputs.insert(in);
  g.members.push_back(op);
  groupOf[op] = g.id;
  for (Value operand : op->getOperands()) {
    SmallVector<int> sources;
    bool isMember;
    sourcesOf(operand, sources, isMember);
    for (int s : sources)
      addDep(g, s);
  }
  if (isa<ReduceSumOp, ReduceMaxOp>(op))
    g.reduceAxes = reduceAxesOf(op);
}

bool KernelGrouper::paddedRowOutput(Operation *op, const Group &g) {
  auto pad = dyn_cast<PadOp>(op);
  if (!pad || !target.limits.memoryBound ||
      (g.kind != Group::Reduction && g.kind != Group::Loop))
    return false;
  Operation *def = pad.getOperand().getDefiningOp();
  auto own = def ? groupOf.find(def) : groupOf.end();
  int64_t rank = g.space.size();
  if (own == groupOf.end() || own->second != g.id ||
      classify(def) == OpClass::Reduction ||
      shapeOf(pad.getOperand()) != ArrayRef<int64_t>(g.space) ||
      (g.kind == Group::Reduction &&
       g.reduceAxes != SmallVector<int64_t>{rank - 1}))
    return false;
  if (pad.getInterior() &&
      llvm::any_of(*pad.getInterior(), [](int64_t i) { return i != 0; }))
    return false;
  for (int64_t k = 0; k < rank; ++k)
    if (pad.getLow()[k] != 0 || (k < rank - 1 && pad.getHigh()[k] != 0))
      return false;
  return true;
}

std::string KernelGrouper::whyNotJoin(Operation *op, Group &g) {
  if (g.kind != Group::Loop && g.kind != Group::Reduction)
    return "k" + std::to_string(g.id) + " is not a loop kernel";
  bool isReduce = classify(op) == OpClass::Reduction;
  ArrayRef<int64_t> iterShape =
      isReduce ? shapeOf(op->getOperand(0)) : shapeOf(op->getResult(0));
  // A row op: elementwise over the per-row results (a layer norm's mean
  // and 1/sqrt(var + eps)), evaluated in a later phase.
  SmallVector<int64_t> rows = rowShape(g);
  bool rowOp = !isReduce && !rows.empty() &&
               iterShape == ArrayRef<int64_t>(rows) &&
               iterShape != ArrayRef<int64_t>(g.space);
  if (iterShape != ArrayRef<int64_t>(g.space) && !rowOp &&
      !paddedRowOutput(op, g))
    return llvm::formatv("k{0} iterates over {1}, this op over {2}", g.id,
                         shapeText(g.space), shapeText(iterShape))
        .str();
  SmallVector<int64_t> axes = reduceAxesOf(op);
  // A kernel writing a padded output (paddedRowOutput) runs along its
  // last axis: a reduction may join it only over that axis.
  if (isReduce && axes != SmallVector<int64_t>{(int64_t)g.space.size() - 1} &&
      llvm::any_of(g.members, [&](Operation *m) {
        return isa<PadOp>(m) &&
               shapeOf(m->getResult(0)) != ArrayRef<int64_t>(g.space);
      }))
    return llvm::formatv("k{0} writes a padded output along its last axis, "
                         "and this reduces over others",
                         g.id)
        .str();
  if (isReduce && g.kind == Group::Reduction && axes != g.reduceAxes)
    return llvm::formatv("k{0} already reduces over other axes", g.id).str();
  bool readsRows = false;
  for (Value operand : op->getOperands()) {
    SmallVector<int> sources;
    bool isMember;
    sourcesOf(operand, sources, isMember);
    for (int s : sources) {
      if (s == g.id) {
        Operation *def = operand.getDefiningOp();
        bool reduction = def && classify(def) == OpClass::Reduction;
        if (!isMember && !reduction)
          return llvm::formatv("reads a re-indexed value of k{0}, which "
                               "must be in memory first",
                               g.id)
              .str();
        if (reduction || shapeOf(operand) != ArrayRef<int64_t>(g.space))
          readsRows = true;
        if (reduction && shapeOf(operand) != ArrayRef<int64_t>(rows))
          return llvm::formatv("reads the reduction result of k{0}, final "
                               "only after its loop{1}",
                               g.id,
                               rows.empty() ? " (not a reduction of the "
                                              "trailing axes: no row phases)"
                                            : "")
              .str();
        continue;
      }
      if (dependsOn(s, g.id))
        return llvm::formatv("reads k{0}, which depends on k{1}: joining "
                             "would make a cycle",
                             s, g.id)
            .str();
    }
  }
  if (rowOp && !readsRows)
    return llvm::formatv("k{0} iterates over {1}, this op over {2}", g.id,
                         shapeText(g.space), shapeText(iterShape))
        .str();
  // Each value a kernel reads is an argument of its code
  // (FusionTarget::maxInputs).
  if (size_t added = newInputs(op, g).size())
    if ((int64_t)(g.inputs.size() + added) > target.maxInputs)
      return llvm::formatv("k{0} reads {1} values already, and a kernel "
                           "reads at most {2}",
                           g.id, g.inputs.size(), target.maxInputs)
          .str();
  // Code generation keeps such values for a chunk of rows in a stack
  // buffer (compiler/CodeGen/KernelPhases.cpp) when a chunk is small enough.
  // The largest chunk whose costly values code generation keeps on the
  // stack: two f32 values fit its buffers.
  if (readsRows &&
      chunkElements(g, target.limits) > target.limits.maxScratchBytes / 8)
    if (Operation *costly = costlyRecompute(op, g))
      return llvm::formatv("a later phase of k{0} would recompute its {1}, "
                           "which costs more than reading it back",
                           g.id, costly->getName().stripDialect())
          .str();
  return "";
}

int KernelGrouper::phaseIn(Operation *op, const Group &g) {
  int p = 0;
  for (Value v : op->getOperands()) {
    Operation *def = v.getDefiningOp();
    auto it = def ? groupOf.find(def) : groupOf.end();
    if (it == groupOf.end() || it->second != g.id)
      continue;
    p = std::max(p, phase.lookup(def) +
                        (classify(def) == OpClass::Reduction ? 1 : 0));
  }
  return p;
}

Operation *KernelGrouper::costlyRecompute(Operation *op, const Group &g) {
  int p = phaseIn(op, g);
  llvm::SmallPtrSet<Operation *, 16> members(g.members.begin(),
                                             g.members.end());
  // Exported values are in memory: a later phase loads them.
  auto exported = [&](Operation *m) {
    return llvm::any_of(m->getUsers(), [&](Operation *user) {
      return user != op && !members.count(user);
    });
  };
  llvm::SmallPtrSet<Operation *, 16> seen;
  std::function<Operation *(Operation *)> walk = [&](Operation *m) {
    if (!members.count(m) || !seen.insert(m).second ||
        classify(m) == OpClass::Reduction || phase.lookup(m) >= p ||
        exported(m))
      return (Operation *)nullptr;
    if (isCostlyElementwise(m))
      return m;
    for (Value v : m->getOperands())
      if (Operation *def = v.getDefiningOp())
        if (Operation *found = walk(def))
          return found;
    return (Operation *)nullptr;
  };
  for (Value v : op->getOperands())
    if (Operation *def = v.getDefiningOp())
      if (Operation *found = walk(def))
        return found;
  return nullptr;
}

bool KernelGrouper::readsRowsOf(Operation *op, int gId) {
  return llvm::any_of(op->getOperands(), [&](Value v) {
    Operation *def = v.getDefiningOp();
    auto it = def ? groupOf.find(def) : groupOf.end();
    return it != groupOf.end() && it->second == gId &&
           (classify(def) == OpClass::Reduction ||
            shapeOf(v) != ArrayRef<int64_t>(groups[gId].space));
  });
}

void KernelGrouper::absorbLoneProducers(Operation *op) {
  Group &g = groups[groupOf[op]];
  if (g.kind != Group::Loop && g.kind != Group::Reduction)
    return;
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    auto it = def ? groupOf.find(def) : groupOf.end();
    if (it == groupOf.end() || it->second == g.id)
      continue;
    Group &h = groups[it->second];
    if (h.kind != Group::Loop || h.members.empty() || h.space != g.space ||
        h.deps.count(g.id))
      continue;
    // Everything h computes is read only inside h or by g: merged, h's
    // values never reach memory.
    bool onlyForG = llvm::all_of(h.members, [&](Operation *m) {
      return llvm::all_of(m->getUsers(), [&](Operation *user) {
        auto u = groupOf.find(user);
        return u != groupOf.end() && (u->second == g.id || u->second == h.id);
      });
    });
    if (!onlyForG ||
        llvm::any_of(h.deps, [&](int d) { return dependsOn(d, g.id); }))
      continue;
    // The merged kernel reads what both read, but h's values: within the
    // bound too (FusionTarget::maxInputs).
    size_t merged = h.inputs.size();
    for (Value in : g.inputs) {
      Operation *d = in.getDefiningOp();
      auto from = d ? groupOf.find(d) : groupOf.end();
      if ((from == groupOf.end() || from->second != h.id) &&
          !h.inputs.contains(in))
        ++merged;
    }
    if ((int64_t)merged > target.maxInputs)
      continue;
    // Keep program order inside the kernel: h's ops go, in their order,
    // right before the first op of g that reads one of them.
    llvm::SmallPtrSet<Operation *, 8> moved(h.members.begin(), h.members.end());
    auto at = llvm::find_if(g.members, [&](Operation *m) {
      return llvm::any_of(m->getOperands(), [&](Value v) {
        return v.getDefiningOp() && moved.count(v.getDefiningOp());
      });
    });
    g.members.insert(at, h.members.begin(), h.members.end());
    for (Operation *m : h.members) {
      groupOf[m] = g.id;
      reason[m] = llvm::formatv("k{0}: its kernel k{1} fed only this one, "
                                "so the two became one loop",
                                g.id, h.id);
    }
    for (int d : h.deps) {
      groups[d].users.erase(h.id);
      addDep(g, d);
    }
    g.deps.erase(h.id);
    h.users.erase(g.id);
    // g reads what h read; what g read of h's is computed inside now.
    g.inputs.insert(h.inputs.begin(), h.inputs.end());
    for (Operation *m : h.members)
      for (Value r : m->getResults())
        g.inputs.erase(r);
    h.members.clear();
    h.deps.clear();
    h.inputs.clear();
    if (auto r = recompute.find(h.id); r != recompute.end()) {
      llvm::DenseSet<Value> moved = std::move(r->second);
      recompute.erase(h.id);
      recompute[g.id].insert(moved.begin(), moved.end());
    }
  }
}

void KernelGrouper::planRecompute(Operation *op, bool groupsFinal) {
  int hId = groupOf[op];
  Group &h = groups[hId];
  if (h.kind != Group::Loop && h.kind != Group::Reduction)
    return;
  auto recomputable = [&](Operation *def) {
    auto it = def ? groupOf.find(def) : groupOf.end();
    if (it == groupOf.end() || it->second == hId)
      return false;
    Group &g = groups[it->second];
    // Cheap ops, and on a memory-bound target an exp or a division where
    // recomputing saves bytes (checked below, once the chain is known).
    // Recomputing exp, erf or dropout's hashing made CPU kernels
    // compute-bound and slower than reading the value (measured on the
    // char-GPT softmax, in f32 and in bf16).
    if ((g.kind != Group::Loop && g.kind != Group::Reduction) ||
        g.space != h.space)
      return false;
    return isa<AddOp, SubOp, MulOp, NegOp, MaximumOp, MinimumOp, SelectOp,
               CompareOp, CastOp, ReluOp, OneHotOp>(def) ||
           (target.limits.memoryBound && isa<ExpOp, DivOp>(def));
  };
  // Whether v is in memory whatever this kernel does: a matmul, a special
  // kernel or the function's return reads it (through views), or, once
  // every kernel is built and has planned what it recomputes, a kernel
  // other than its own and this one that does not recompute it (the
  // residual stream's sum, which the next layer norm reads).
  std::function<bool(Value)> readFromMemory = [&](Value v) {
    Operation *def = v.getDefiningOp();
    auto own = def ? groupOf.find(def) : groupOf.end();
    return llvm::any_of(v.getUsers(), [&](Operation *user) {
      switch (classify(user)) {
      case OpClass::Library:
      case OpClass::Special:
      case OpClass::Opaque:
        return true;
      case OpClass::View:
      case OpClass::Alias:
        return readFromMemory(user->getResult(0));
      default: {
        if (!groupsFinal || own == groupOf.end())
          return false;
        auto u = groupOf.find(user);
        if (u == groupOf.end() || u->second == own->second || u->second == hId)
          return false;
        auto again = recompute.find(u->second);
        return again == recompute.end() || !again->second.count(v);
      }
      }
    });
  };
  constexpr int kMaxChain = 8;
  for (Value v : op->getOperands()) {
    Operation *d = v.getDefiningOp();
    if (!recomputable(d) || shapeOf(v) != ArrayRef<int64_t>(h.space))
      continue;
    if (auto planned = recompute.find(hId);
        planned != recompute.end() && planned->second.count(v))
      continue; // recomputed already
    // Only when this kernel is the one reading v from outside v's kernel:
    // otherwise v is written anyway and reading it is the cheaper way.
    int gId = groupOf[d];
    if (!llvm::all_of(v.getUsers(), [&](Operation *user) {
          auto u = groupOf.find(user);
          return u != groupOf.end() && (u->second == gId || u->second == hId);
        }))
      continue;
    // The chain behind v, and what it reads.
    SmallVector<Operation *> chain;
    SmallVector<Value> rowLeaves, leafInputs;
    llvm::SmallPtrSet<Operation *, 8> seen;
    llvm::SmallSetVector<int, 4> sources;
    llvm::SmallPtrSet<void *, 4> fullReads; // distinct full-size values
    bool ok = true;
    std::function<void(Operation *)> walk = [&](Operation *e) {
      if (!ok || !seen.insert(e).second)
        return;
      if ((int)chain.size() >= kMaxChain) {
        ok = false;
        return;
      }
      chain.push_back(e);
      for (Value w : e->getOperands()) {
        Operation *f = w.getDefiningOp();
        if (f && (classify(f) == OpClass::SplatConstant ||
                  classify(f) == OpClass::Generated))
          continue;
        if (f && groupOf.count(f) && groupOf[f] == hId &&
            classify(f) != OpClass::Reduction)
          continue; // already a scalar of h
        // A value in memory anyway (readFromMemory) is read rather than
        // recomputed from what is behind it: a gradient rounded to bf16
        // for the next matmul, widened again for a bias gradient's column
        // sum, is summed from the bf16 values.
        bool writtenAnyway = f && groupOf.count(f) && readFromMemory(w);
        if (!writtenAnyway && recomputable(f) &&
            shapeOf(w) == ArrayRef<int64_t>(h.space)) {
          walk(f);
          continue;
        }
        // Read from memory: it must be in memory, i.e. not a value the
        // chain op's own kernel keeps in a register. A per-row value (a
        // reduction result or a row op) is exported at a few bytes per
        // row, and a value written anyway is kept exported.
        if (f && groupOf.count(f) && groupOf.count(e) &&
            groupOf[f] == groupOf[e]) {
          if (!writtenAnyway && classify(f) != OpClass::Reduction &&
              shapeOf(w) == ArrayRef<int64_t>(groups[groupOf[f]].space)) {
            ok = false;
            return;
          }
          rowLeaves.push_back(w);
        }
        if (shapeOf(w) == ArrayRef<int64_t>(h.space))
          fullReads.insert(w.getAsOpaquePointer());
        if (Value in = inputOf(w)) {
          Operation *leaf = in.getDefiningOp();
          auto it = leaf ? groupOf.find(leaf) : groupOf.end();
          if (it == groupOf.end() || it->second != hId)
            leafInputs.push_back(in);
        }
        SmallVector<int> from;
        bool isMember;
        sourcesOf(w, from, isMember);
        for (int s : from) {
          if (s == hId || dependsOn(s, hId))
            ok = false;
          sources.insert(s);
        }
      }
    };
    walk(d);
    if (!ok || fullReads.size() > 1)
      continue;
    // A chain with an exp or a division is recomputed only where it reads
    // fewer bytes than its result: a softmax under bf16, whose f32
    // probabilities only the backward pass reads, recomputed there from
    // the bf16 scores and the exported row max and sum (the forward pass
    // writes no f32 copy; the backward pass reads 2 bytes an element
    // instead of 4, and the scores stay alive instead of the probabilities,
    // half the bytes).
    if (llvm::any_of(chain,
                     [](Operation *e) { return isa<ExpOp, DivOp>(e); })) {
      int64_t read = 0;
      for (void *w : fullReads)
        read += plan::tensorBytes(Value::getFromOpaquePointer(w).getType());
      if (read >= plan::tensorBytes(v.getType()))
        continue;
    }
    // h reads the chain's leaves instead of its result.
    for (Operation *e : chain)
      for (Value r : e->getResults()) {
        recompute[hId].insert(r);
        h.inputs.erase(r);
      }
    h.inputs.insert(leafInputs.begin(), leafInputs.end());
    for (int s : sources)
      addDep(h, s);
    forceExport.insert(rowLeaves.begin(), rowLeaves.end());
  }
}

void KernelGrouper::run() {
  Block &body = fn.getBody().front();
  sinter::splitBigReductions(
      fn,
      [&](Operation *op) {
        return target.biasGradEpilogue && isBiasGradOfDgelu(op);
      },
      /*groupRows=*/!target.limits.memoryBound);
  sinter::padsToConcats(fn);
  int pos = 0;
  for (Operation &op : body)
    position[&op] = pos++;

  for (Operation &opRef : body) {
    Operation *op = &opRef;
    switch (classify(op)) {
    case OpClass::SplatConstant:
      reason[op] = "splat constant: cloned into every kernel that reads it";
      continue;
    case OpClass::Generated:
      reason[op] = "causal mask: computed from the indices in every kernel "
                   "that reads it";
      continue;
    case OpClass::View:
      reason[op] = "view: absorbed into the kernels that read it";
      continue;
    case OpClass::Alias:
      reason[op] = "reshape: shares its operand's bytes, no kernel";
      continue;
    case OpClass::Opaque:
      if (!isa<func::ReturnOp>(op))
        reason[op] = "not fused: no kernel form for this op";
      continue;
    case OpClass::Library: {
      int id = newGroup(op, Group::Library, {});
      groups[id].last = op;
      reason[op] = llvm::formatv("k{0}: matmul library call ({1})", id,
                                 target.matmulLibrary);
      continue;
    }
    case OpClass::Special: {
      int id = newGroup(op, Group::Special, shapeOf(op->getResult(0)));
      reason[op] =
          llvm::formatv("k{0}: special kernel, lowered on its own", id);
      continue;
    }
    case OpClass::Elementwise:
    case OpClass::Reduction:
      break;
    }

    std::string epilogue;
    if (int g = epilogueGroup(op, epilogue); g >= 0) {
      addMember(groups[g], op);
      reason[op] = llvm::formatv("k{0}: matmul epilogue ({1}) applied by the "
                                 "matmul library in the same call",
                                 g, epilogue);
      continue;
    }

    // Try the groups of the producers, in operand order.
    SmallVector<std::string> rejected;
    llvm::SmallSetVector<int, 4> candidates;
    for (Value operand : op->getOperands()) {
      SmallVector<int> sources;
      bool isMember;
      sourcesOf(operand, sources, isMember);
      for (int s : sources)
        if (groups[s].kind == Group::Loop || groups[s].kind == Group::Reduction)
          candidates.insert(s);
    }
    // On a memory-bound target a loop kernel that reads nothing of its own
    // size (a mask made by comparing labels with an iota) is tried last:
    // joining a kernel that reads the big values lets that kernel
    // recompute the cheap one, which then needs no kernel (the
    // cross-entropy's target logit, picked in the softmax's kernel rather
    // than in a pass of its own over the logits).
    SmallVector<int, 4> ordered(candidates.begin(), candidates.end());
    if (target.limits.memoryBound)
      std::stable_partition(ordered.begin(), ordered.end(), [&](int g) {
        const Group &k = groups[g];
        return k.kind != Group::Loop || llvm::any_of(k.inputs, [&](Value in) {
                 return shapeOf(in) == ArrayRef<int64_t>(k.space);
               });
      });
    int joined = -1;
    for (int g : ordered) {
      std::string why = whyNotJoin(op, groups[g]);
      if (why.empty()) {
        joined = g;
        break;
      }
      rejected.push_back("not k" + std::to_string(g) + ": " + why);
    }
    bool isReduce = classify(op) == OpClass::Reduction;
    std::string text;
    if (joined >= 0) {
      Group &g = groups[joined];
      bool phase = readsRowsOf(op, joined);
      bool padded = paddedRowOutput(op, g);
      addMember(g, op);
      if (padded) {
        text = llvm::formatv("k{0}: writes its rows into the padded buffer, "
                             "the padding included, instead of a pad kernel "
                             "copying them",
                             joined);
      } else if (phase) {
        text = llvm::formatv("k{0}: a later row phase: reads k{0}'s per-row "
                             "result once final, while the rows are still in "
                             "cache",
                             joined);
      } else if (isReduce && g.kind == Group::Loop) {
        g.kind = Group::Reduction;
        text = llvm::formatv("k{0}: reduction joins its producers' loop "
                             "over {1}",
                             joined, shapeText(g.space));
      } else {
        text = llvm::formatv("k{0}: fused with its producer, same iteration "
                             "shape {1}",
                             joined, shapeText(g.space));
      }
    } else {
      ArrayRef<int64_t> space =
          isReduce ? shapeOf(op->getOperand(0)) : shapeOf(op->getResult(0));
      int id = newGroup(op, isReduce ? Group::Reduction : Group::Loop, space);
      text = llvm::formatv("k{0}: starts a {1} kernel over {2}", id,
                           isReduce ? "reduction" : "loop", shapeText(space));
      if (candidates.empty())
        text += " (no fusible producer)";
    }
    for (const std::string &r : rejected)
      text += "; " + r;
    reason[op] = text;
    absorbLoneProducers(op);
    planRecompute(op, /*groupsFinal=*/false);
  }
  // Once every kernel is built: a chain that stopped short of the limits
  // may stop at a value another kernel reads from memory anyway.
  for (Operation &op : body)
    if (groupOf.count(&op))
      planRecompute(&op, /*groupsFinal=*/true);
  buildRegions();
}

namespace {

class FuseKernelsPass
    : public sinter::impl::FuseKernelsPassBase<FuseKernelsPass> {
public:
  using FuseKernelsPassBase::FuseKernelsPassBase;

  void runOnOperation() override {
    FusionTarget target;
    target.maxInputs = maxKernelInputs;
    target.limits.minElementsToSplit = minElementsToSplit;
    target.limits.chunkElements = chunkElements;
    target.limits.maxScratchBytes = maxScratchBytes;
    target.limits.memoryBound = memoryBound;
    target.matmulLibrary = matmulLibrary;
    if (!matmulEpilogues.empty())
      target.scaleEpilogue = target.biasEpilogue = target.reluEpilogue =
          target.geluTanhEpilogue = target.geluErfEpilogue = false;
    for (const std::string &e : matmulEpilogues) {
      if (e == "none")
        continue; // (a list of none alone: plain matmuls)
      if (e == "scale")
        target.scaleEpilogue = true;
      else if (e == "bias")
        target.biasEpilogue = true;
      else if (e == "activation")
        target.reluEpilogue = target.geluTanhEpilogue =
            target.geluErfEpilogue = true;
      else if (e == sinter::abi::activationName(sinter::abi::MatmulStep::relu))
        target.reluEpilogue = true;
      else if (e == sinter::abi::activationName(sinter::abi::MatmulStep::gelu_tanh))
        target.geluTanhEpilogue = true;
      else if (e == sinter::abi::activationName(sinter::abi::MatmulStep::gelu_erf))
        target.geluErfEpilogue = true;
      else if (e == "gelu_aux")
        target.geluAuxEpilogue = true;
      else if (e == "dgelu")
        target.dgeluEpilogue = true;
      else if (e == "dgelu_bgrad")
        target.biasGradEpilogue = true;
      else {
        getOperation().emitError("matmul-epilogues: '")
            << e
            << "' is not none, scale, bias, activation, relu, gelu_tanh, "
               "gelu_erf, gelu_aux, dgelu or dgelu_bgrad";
        return signalPassFailure();
      }
    }
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal() || !fn.getBody().hasOneBlock())
        continue;
      bool already = false;
      fn.walk([&](FusionOp) { already = true; });
      if (already)
        continue;
      KernelGrouper(fn, target).run();
    }
  }
};

} // namespace
