//===- FuseKernelsRegions.cpp - kernel groups become fusion regions -------===//
//
// The second half of sinter-fuse-kernels (FuseKernels.cpp decides the
// groups): the step's ops and groups are put in a schedule, a topological
// order that stays close to program order, and each group becomes an
// sgraph.fusion region over the values it reads, holding clones of its
// members (and of the splat constants, views and recomputed chains it reads
// through), yielding what other kernels read. Every op in a region keeps
// the reason it is there in `sinter.fusion`.
//
//===----------------------------------------------------------------------===//

#include "passes/KernelGrouper.h"

#include "passes/FusionRewrites.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>
#include <queue>

using namespace mlir;
using namespace sinter::sgraph;
using namespace sinter::fusion;

namespace {

/// Whether a concat kernel reads through `def` rather than needing its
/// value in memory: a transpose (read strided), a reshape that merges
/// dimensions of a transpose (the concat views its destination split), or
/// a slice of a value in memory (read through a subview: a convolution's
/// windows).
bool concatReadsThrough(Operation *def) {
  if (isa<TransposeOp>(def))
    return true;
  if (isa<SliceOp>(def)) {
    // The slice's operand must be a value in memory (a reshape shares its
    // operand's bytes); a view or a value made in the kernel is not.
    Operation *from = def->getOperand(0).getDefiningOp();
    return !from || !llvm::is_contained({OpClass::View, OpClass::SplatConstant,
                                         OpClass::Generated},
                                        classify(from));
  }
  auto reshape = dyn_cast<ReshapeOp>(def);
  if (!reshape || !reshape.getOperand().getDefiningOp<TransposeOp>())
    return false;
  auto from = cast<ShapedType>(reshape.getOperand().getType());
  auto to = cast<ShapedType>(reshape.getType());
  return from.getRank() > to.getRank() &&
         getReassociationIndicesForReshape(from, to).has_value();
}

} // namespace

void KernelGrouper::buildRegions() {
  Block &body = fn.getBody().front();
  Operation *ret = body.getTerminator();
  MLIRContext *ctx = fn.getContext();

  // Everything that is not a member of a group (views, reshapes, constants,
  // opaque ops) is placed by its own position; groups by their members'.
  // Order: a topological sort of groups and free ops, earliest original
  // position first, so the schedule stays close to program order.
  struct Node {
    int group = -1;
    Operation *op = nullptr;
    int key = 0;
  };
  std::vector<Node> nodes;
  DenseMap<Operation *, int> nodeOf;
  std::vector<int> groupNode(groups.size(), -1);
  for (Operation &op : body) {
    if (&op == ret)
      continue;
    auto it = groupOf.find(&op);
    if (it != groupOf.end()) {
      int &n = groupNode[it->second];
      if (n < 0) {
        n = nodes.size();
        nodes.push_back({it->second, nullptr, position[&op]});
      }
      nodeOf[&op] = n;
    } else {
      nodeOf[&op] = nodes.size();
      nodes.push_back({-1, &op, position[&op]});
    }
  }
  std::vector<llvm::SmallSetVector<int, 4>> succ(nodes.size());
  std::vector<int> indegree(nodes.size(), 0);
  for (Operation &op : body) {
    if (&op == ret)
      continue;
    int to = nodeOf[&op];
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def)
        continue;
      int from = nodeOf[def];
      if (from != to && succ[from].insert(to))
        ++indegree[to];
    }
  }
  using Entry = std::pair<int, int>; // (key, node)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (auto [i, n] : llvm::enumerate(nodes))
    if (indegree[i] == 0)
      ready.push({n.key, (int)i});
  std::vector<int> order;
  while (!ready.empty()) {
    int n = ready.top().second;
    ready.pop();
    order.push_back(n);
    for (int s : succ[n])
      if (--indegree[s] == 0)
        ready.push({nodes[s].key, s});
  }
  assert(order.size() == nodes.size() && "kernel grouping made a cycle");

  // Reasons on the ops that stay outside regions.
  for (auto &[op, text] : reason)
    if (!groupOf.count(op) || (groups[groupOf[op]].kind == Group::Library &&
                               groups[groupOf[op]].members.size() == 1))
      op->setAttr(kFusionAttr, StringAttr::get(ctx, text));

  OpBuilder b(ctx);
  SmallVector<Operation *> toErase;
  DenseMap<Value, Value> builtResult; // member result -> kernel result
  DenseMap<Value, Value> builtMember; // kernel result -> member result
  for (int n : order) {
    if (nodes[n].op) {
      nodes[n].op->moveBefore(ret);
      continue;
    }
    Group &g = groups[nodes[n].group];
    if (g.kind == Group::Library && g.members.size() == 1) {
      g.members.front()->moveBefore(ret);
      continue;
    }
    llvm::SmallPtrSet<Operation *, 16> memberSet(g.members.begin(),
                                                 g.members.end());
    // Inputs: values defined outside the group, except splat constants and
    // views over outside values, which are cloned into the region.
    llvm::SetVector<Value> inputs;
    llvm::SetVector<Operation *> clones; // constants and views, in order
    // A copy: `recompute` must not be grown while a reference into it lives.
    const llvm::DenseSet<Value> again = recompute.lookup(g.id);
    std::function<void(Value)> collect = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (def && memberSet.count(def))
        return;
      if (again.count(v)) {
        if (clones.contains(def))
          return;
        for (Value operand : def->getOperands())
          collect(operand);
        clones.insert(def);
        return;
      }
      if (def && (classify(def) == OpClass::SplatConstant ||
                  classify(def) == OpClass::Generated)) {
        clones.insert(def);
        return;
      }
      if (def && classify(def) == OpClass::View &&
          (g.kind == Group::Loop || g.kind == Group::Reduction)) {
        collect(def->getOperand(0));
        clones.insert(def);
        return;
      }
      if (def && g.kind == Group::Special && isa<ConcatOp>(g.members.front()) &&
          concatReadsThrough(def)) {
        collect(def->getOperand(0));
        clones.insert(def);
        return;
      }
      // A value of a kernel built before, read by a chain this kernel
      // recomputes: that kernel's result (the member itself goes away).
      if (auto it = builtResult.find(v); it != builtResult.end()) {
        inputs.insert(it->second);
        return;
      }
      inputs.insert(v);
    };
    for (Operation *m : g.members)
      for (Value operand : m->getOperands()) {
        // Ops that read their first operand by computed index (a pad, an
        // embedding's table) need it whole, in memory: an input.
        if (isa<PadOp, EmbeddingOp>(m) && operand == m->getOperand(0) &&
            !memberSet.count(operand.getDefiningOp())) {
          inputs.insert(operand);
          continue;
        }
        collect(operand);
      }
    // Outputs: member results used outside the group, and per-row
    // reduction results that a later phase reads back (in the arena, so the
    // phases of one chunk of rows pass them on through memory).
    SmallVector<Value> outputs;
    for (Operation *m : g.members)
      for (Value r : m->getResults())
        if (forceExport.count(r) ||
            llvm::any_of(r.getUsers(), [&](Operation *user) {
              if (memberSet.count(user))
                return classify(m) == OpClass::Reduction;
              // A kernel that recomputes r does not read it.
              auto u = groupOf.find(user);
              if (u == groupOf.end())
                return true;
              auto again = recompute.find(u->second);
              return again == recompute.end() || !again->second.count(r);
            }))
          outputs.push_back(r);
    // Every value the group computes is recomputed by the kernels that
    // read it (planRecompute): it writes nothing, so it is no kernel.
    if (outputs.empty() &&
        (g.kind == Group::Loop || g.kind == Group::Reduction)) {
      for (Operation *m : g.members)
        toErase.push_back(m);
      continue;
    }

    b.setInsertionPoint(ret);
    StringRef kind = g.kind == Group::Loop        ? "loop"
                     : g.kind == Group::Reduction ? "reduction"
                     : g.kind == Group::Library   ? "matmul"
                                                  : "special";
    std::string name = llvm::formatv("k{0}", g.id);
    SmallVector<Location> locs;
    for (Operation *m : g.members)
      locs.push_back(m->getLoc());
    auto fusion = b.create<FusionOp>(FusedLoc::get(ctx, locs),
                                     ValueRange(outputs).getTypes(),
                                     inputs.getArrayRef(), name, kind);
    Block *block = b.createBlock(&fusion.getBody());
    IRMapping map;
    for (Value in : inputs)
      map.map(in, block->addArgument(in.getType(), in.getLoc()));
    // A recomputed chain reads a built kernel's member as that kernel's
    // result, an input (looked up per input: walking every result built so
    // far would be quadratic in the step).
    for (Value in : inputs)
      if (Value member = builtMember.lookup(in))
        map.map(member, map.lookup(in));
    b.setInsertionPointToEnd(block);
    for (Operation *c : clones) {
      Operation *copy = b.clone(*c, map);
      if (g.kind == Group::Special && !isa<ConstantOp>(c))
        copy->setAttr(kFusionAttr,
                      StringAttr::get(ctx, name + ": the concat reads "
                                                  "through this view, no "
                                                  "copy"));
      if (again.count(c->getResult(0)))
        copy->setAttr(
            kFusionAttr,
            StringAttr::get(ctx, llvm::formatv("{0}: recomputed here from "
                                               "k{1}'s chain instead of read "
                                               "from memory",
                                               name, groupOf.lookup(c))
                                     .str()));
    }
    for (Operation *m : g.members) {
      Operation *copy = b.clone(*m, map);
      copy->setAttr(kFusionAttr, StringAttr::get(ctx, reason[m]));
    }
    SmallVector<Value> yielded;
    for (Value out : outputs)
      yielded.push_back(map.lookup(out));
    b.create<YieldOp>(fusion.getLoc(), yielded);
    for (auto [out, res] : llvm::zip(outputs, fusion.getResults())) {
      out.replaceUsesWithIf(res, [&](OpOperand &use) {
        return !memberSet.count(use.getOwner());
      });
      builtResult[out] = res;
      builtMember[res] = out;
    }
    for (Operation *m : g.members)
      toErase.push_back(m);
  }
  for (Operation *op : llvm::reverse(toErase))
    op->erase();
  // Views and constants now read only inside regions are dead.
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (&op != ret && op.use_empty() &&
          (classify(&op) == OpClass::SplatConstant ||
           classify(&op) == OpClass::Generated ||
           classify(&op) == OpClass::View || classify(&op) == OpClass::Alias)) {
        op.erase();
        changed = true;
      }
  }
  // Views still read outside any kernel become copy kernels, numbered
  // after the groups.
  sinter::materializeViews(fn, groups.size());
}
