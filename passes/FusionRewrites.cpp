//===- FusionRewrites.cpp - rewrites around kernel grouping -------------===//
//
// The rewrites sinter-fuse-kernels makes before it groups ops into kernels
// (so that the groups come out better) and after it has built the regions
// (views that still need memory). See FusionRewrites.h.
//
//===----------------------------------------------------------------------===//

#include "passes/FusionRewrites.h"

#include "dialects/Graph/GraphOps.h"
#include "passes/StepPlan.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>

using namespace mlir;
using namespace sinter::sgraph;

static bool isView(Operation *op) {
  return isa<TransposeOp, BroadcastOp, SliceOp>(op);
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

static Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// The smallest tensor whose reduction is worth splitting in two.
constexpr int64_t kMinSplitElements = 1 << 15;

/// A reduction over every axis of a big tensor has no parallel dimension, so
/// its kernel would run on one core. Reduce the rows first (parallel over
/// the leading dimension), then the short vector of row sums.
template <typename ReduceOp> static void splitFullReduction(ReduceOp op) {
  auto type = cast<RankedTensorType>(op.getOperand().getType());
  if (type.getRank() < 2 || type.getNumElements() < kMinSplitElements ||
      type.getShape()[0] < 2 ||
      op.getAxes().size() != static_cast<size_t>(type.getRank()))
    return;
  OpBuilder b(op);
  SmallVector<int64_t> rest;
  for (int64_t a = 1; a < type.getRank(); ++a)
    rest.push_back(a);
  Value rows =
      b.create<ReduceOp>(op.getLoc(), op.getOperand(),
                         b.getDenseI64ArrayAttr(rest), b.getBoolAttr(false));
  Value total = b.create<ReduceOp>(
      op.getLoc(), rows, b.getDenseI64ArrayAttr({0}), b.getBoolAttr(false));
  if (total.getType() != op.getType())
    total = b.create<ReshapeOp>(op.getLoc(), op.getType(), total);
  op.getResult().replaceAllUsesWith(total);
  op.erase();
}

/// The one axis a zero pad (no interior padding) places its operand along,
/// or -1.
static int padAxis(PadOp pad) {
  if (pad.getValue().convertToDouble() != 0.0 ||
      (pad.getInterior() &&
       llvm::any_of(*pad.getInterior(), [](int64_t i) { return i != 0; })))
    return -1;
  int axis = -1;
  for (size_t k = 0; k < pad.getLow().size(); ++k) {
    if (pad.getLow()[k] < 0 || pad.getHigh()[k] < 0)
      return -1;
    if (pad.getLow()[k] == 0 && pad.getHigh()[k] == 0)
      continue;
    if (axis >= 0)
      return -1;
    axis = k;
  }
  return axis;
}

/// A sum of zero pads whose operands tile one axis (the gradients of the
/// slices that split a fused QKV projection) is a concat of the operands:
/// each element is copied from one of them instead of being summed with
/// zeros, and the copy can read its operands through views. Rewrites the
/// sum rooted at `root` when it is one, recording the erased ops.
static void padsToConcat(AddOp root, llvm::DenseSet<Operation *> &erased) {
  Type type = root.getType();
  SmallVector<Operation *> tree; // adds, root first
  SmallVector<PadOp> pads;
  bool ok = true;
  std::function<void(Value, bool)> collect = [&](Value v, bool top) {
    Operation *def = v.getDefiningOp();
    if (!ok || !def || v.getType() != type || (!top && !v.hasOneUse())) {
      ok = false;
      return;
    }
    if (auto add = dyn_cast<AddOp>(def)) {
      // Both operands first, so that a long chain of sums of other values
      // (the global norm's) fails here and is not walked from every add.
      for (Value operand : {add.getLhs(), add.getRhs()}) {
        Operation *d = operand.getDefiningOp();
        if (!d || !isa<AddOp, PadOp>(d)) {
          ok = false;
          return;
        }
      }
      tree.push_back(add);
      collect(add.getLhs(), false);
      collect(add.getRhs(), false);
      return;
    }
    if (auto pad = dyn_cast<PadOp>(def)) {
      pads.push_back(pad);
      return;
    }
    ok = false;
  };
  collect(root.getResult(), true);
  if (!ok || pads.size() < 2)
    return;
  int axis = padAxis(pads.front());
  if (axis < 0 ||
      llvm::any_of(pads, [&](PadOp p) { return padAxis(p) != axis; }))
    return;
  llvm::sort(pads, [&](PadOp a, PadOp b) {
    return a.getLow()[axis] < b.getLow()[axis];
  });
  for (size_t i = 0; i + 1 < pads.size(); ++i)
    if (pads[i].getLow()[axis] + shapeOf(pads[i].getOperand())[axis] !=
        pads[i + 1].getLow()[axis])
      return;
  OpBuilder b(root);
  SmallVector<Value> operands;
  for (PadOp p : pads)
    operands.push_back(p.getOperand());
  // Under mixed precision each operand is a bf16 (f16) gradient widened to
  // f32, and the sum is narrowed again for the projection's backward
  // matmuls: join (and pad) the narrow values, half the bytes and read
  // through their views, then widen the whole once for the f32 readers
  // (a bias gradient's sum), and give the narrowing readers the narrow
  // join itself.
  SmallVector<Value> narrow;
  SmallVector<CastOp> widenings;
  for (Value v : operands) {
    auto c = v.getDefiningOp<CastOp>();
    if (!c || !c->hasOneUse() || !isExactWidening(c) ||
        (!narrow.empty() && elementOf(c.getOperand()) != elementOf(narrow[0])))
      break;
    narrow.push_back(c.getOperand());
    widenings.push_back(c);
  }
  if (narrow.size() != operands.size())
    widenings.clear();
  else
    operands = narrow;
  Value joined =
      b.create<ConcatOp>(root.getLoc(), operands, b.getI64IntegerAttr(axis));
  int64_t low = pads.front().getLow()[axis], high = pads.back().getHigh()[axis];
  if (low || high) {
    SmallVector<int64_t> lows(pads.front().getLow().size(), 0),
        highs(lows.size(), 0);
    lows[axis] = low;
    highs[axis] = high;
    auto padded = cast<RankedTensorType>(type).clone(elementOf(joined));
    joined = b.create<PadOp>(
        root.getLoc(), padded, joined, b.getDenseI64ArrayAttr(lows),
        b.getDenseI64ArrayAttr(highs), nullptr, b.getF64FloatAttr(0.0));
  }
  if (!widenings.empty()) {
    for (Operation *user : llvm::make_early_inc_range(root->getUsers()))
      if (auto c = dyn_cast<CastOp>(user);
          c && c.getType() == joined.getType()) {
        c.getResult().replaceAllUsesWith(joined);
        erased.insert(c);
        c->erase();
      }
    joined = b.create<CastOp>(root.getLoc(), type, joined);
  }
  root.getResult().replaceAllUsesWith(joined);
  for (Operation *op : tree) {
    erased.insert(op);
    op->erase();
  }
  for (PadOp p : pads) {
    erased.insert(p);
    p->erase();
  }
  for (CastOp c : widenings)
    c->erase();
}

/// A reduction over the leading axes 0..k-1 (k >= 2) of a big tensor, the
/// trailing ones kept (a bias gradient: the sum over batch and positions),
/// splits the kept, contiguous axes between threads, so each walks a
/// strided slice of every row, which hardware prefetchers follow badly.
/// Reduce axes 1..k-1 first (parallel over axis 0: each thread walks whole
/// rows, in order), then the short axis 0.
template <typename ReduceOp> static void splitLeadingReduction(ReduceOp op) {
  auto type = cast<RankedTensorType>(op.getOperand().getType());
  ArrayRef<int64_t> axes = op.getAxes();
  int64_t k = axes.size();
  if (k < 2 || k >= type.getRank() ||
      type.getNumElements() < kMinSplitElements || type.getShape()[0] < 2)
    return;
  for (int64_t i = 0; i < k; ++i)
    if (axes[i] != i)
      return;
  OpBuilder b(op);
  SmallVector<int64_t> inner;
  for (int64_t a = 1; a < k; ++a)
    inner.push_back(a);
  Value rows =
      b.create<ReduceOp>(op.getLoc(), op.getOperand(),
                         b.getDenseI64ArrayAttr(inner), b.getBoolAttr(true));
  Value total = b.create<ReduceOp>(op.getLoc(), rows, op.getAxesAttr(),
                                   op.getKeepdimsAttr());
  op.getResult().replaceAllUsesWith(total);
  op.erase();
}

/// Whether v is in memory whatever the fusion does: an argument, a
/// matmul's result or a matmul's operand (a bias gradient's is the
/// gradient its weight's matmul reads).
static bool readOrWrittenByMatmul(Value v) {
  if (isa<BlockArgument>(v) || v.getDefiningOp<MatmulOp>())
    return true;
  return llvm::any_of(v.getUsers(),
                      [](Operation *user) { return isa<MatmulOp>(user); });
}

/// The groups a leading reduction of n rows is cut into by
/// splitRowGroups: the largest divisor of n up to 64 that leaves groups of
/// 2 rows or more; 0 when there is none worth it (fewer than 8).
static int64_t rowGroups(int64_t n) {
  for (int64_t g = std::min<int64_t>(64, n / 2); g >= 8; --g)
    if (n % g == 0)
      return g;
  return 0;
}

/// A reduction over the leading axes 0..k-1 that splitLeadingReduction
/// leaves (one leading axis, or a first axis of 1: a bias gradient at batch
/// 1), the trailing axes kept, would run in parallel over the kept columns,
/// each thread walking its columns down every row: strided, unvectorized
/// and 4-5 GB/s (GPT-2's at batch 1 on a Zen 4). Instead the n rows are
/// reshaped into G groups of n / G, the groups are summed in parallel, each
/// thread walking whole rows in order, then the G partial rows. The reshape
/// shares bytes, so it needs its operand in memory: only an operand a
/// matmul reads or writes anyway is reshaped (the gradient a bias gradient
/// sums; a widening cast of a narrower one, a bf16 gradient, is reshaped
/// below the cast), never a value that would be written only for this (a
/// layer norm's weight gradient sums a product nothing else reads: measured
/// on GPT-2, splitting it too gained nothing).
template <typename ReduceOp> static void splitRowGroups(ReduceOp op) {
  auto type = cast<RankedTensorType>(op.getOperand().getType());
  ArrayRef<int64_t> axes = op.getAxes();
  int64_t k = axes.size();
  if (k < 1 || k >= type.getRank() ||
      type.getNumElements() < kMinSplitElements ||
      (k >= 2 && type.getShape()[0] >= 2))
    return;
  for (int64_t i = 0; i < k; ++i)
    if (axes[i] != i)
      return;
  int64_t n = 1;
  for (int64_t i = 0; i < k; ++i)
    n *= type.getShape()[i];
  int64_t groups = rowGroups(n);
  if (!groups)
    return;
  SmallVector<int64_t> shape = {groups, n / groups};
  llvm::append_range(shape, type.getShape().drop_front(k));
  OpBuilder b(op);
  Value source = op.getOperand();
  auto widening = source.getDefiningOp<CastOp>();
  if (widening &&
      elementOf(widening.getOperand()).getIntOrFloatBitWidth() <
          elementOf(source).getIntOrFloatBitWidth() &&
      isa<FloatType>(elementOf(widening.getOperand())))
    source = widening.getOperand();
  else
    widening = nullptr;
  if (!readOrWrittenByMatmul(source))
    return;
  Value rows = b.create<ReshapeOp>(
      op.getLoc(), RankedTensorType::get(shape, elementOf(source)), source);
  if (widening)
    rows = b.create<CastOp>(op.getLoc(),
                            RankedTensorType::get(shape, type.getElementType()),
                            rows);
  Value partial = b.create<ReduceOp>(op.getLoc(), rows,
                                     b.getDenseI64ArrayAttr({1}),
                                     b.getBoolAttr(true));
  Value total = b.create<ReduceOp>(op.getLoc(), partial,
                                   b.getDenseI64ArrayAttr({0, 1}),
                                   b.getBoolAttr(false));
  if (total.getType() != op.getType())
    total = b.create<ReshapeOp>(op.getLoc(), op.getType(), total);
  op.getResult().replaceAllUsesWith(total);
  op.erase();
}

void sinter::splitBigReductions(func::FuncOp fn,
                                llvm::function_ref<bool(Operation *)> keep,
                                bool groupRows) {
  // One rule at a time over every reduction (a later rule sees what the
  // earlier ones left), for sums and maxima alike.
  auto each = [&](auto split) {
    for (Operation &op : llvm::make_early_inc_range(fn.getBody().front())) {
      if (keep && keep(&op))
        continue;
      if (auto r = dyn_cast<ReduceSumOp>(op))
        split(r);
      else if (auto r = dyn_cast<ReduceMaxOp>(op))
        split(r);
    }
  };
  each([](auto r) { splitFullReduction(r); });
  each([](auto r) { splitLeadingReduction(r); });
  if (groupRows)
    each([](auto r) { splitRowGroups(r); });
}

void sinter::padsToConcats(func::FuncOp fn) {
  SmallVector<AddOp> adds;
  for (Operation &op : fn.getBody().front())
    if (auto add = dyn_cast<AddOp>(op))
      adds.push_back(add);
  // Outermost sums first: they come last in program order.
  llvm::DenseSet<Operation *> erased;
  for (AddOp add : llvm::reverse(adds))
    if (!erased.count(add))
      padsToConcat(add, erased);
}

void sinter::materializeViews(func::FuncOp fn, int64_t firstKernel) {
  Block &body = fn.getBody().front();
  MLIRContext *ctx = fn.getContext();
  OpBuilder b(ctx);
  int64_t next = firstKernel;
  // A view still read outside any kernel (by a matmul, a reshape, the
  // return) must be materialized: it becomes a copy kernel of its own,
  // with the chain of views it reads through cloned in, so slice ->
  // transpose is one copy, not two. Walking backwards handles a chain's
  // last view first; the views before it are then dead.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body))) {
    if (!isView(&op))
      continue;
    if (op.use_empty()) {
      op.erase();
      continue;
    }
    if (llvm::all_of(op.getUsers(),
                     [](Operation *user) { return isView(user); }))
      continue;
    SmallVector<Operation *> chain{&op};
    Value source = op.getOperand(0);
    while (Operation *def = source.getDefiningOp()) {
      if (!isView(def))
        break;
      chain.push_back(def);
      source = def->getOperand(0);
    }
    b.setInsertionPoint(&op);
    std::string name = llvm::formatv("k{0}", next++);
    auto fusion = b.create<FusionOp>(op.getLoc(), op.getResultTypes(), source,
                                     name, "loop");
    Block *block = b.createBlock(&fusion.getBody());
    IRMapping map;
    map.map(source, block->addArgument(source.getType(), op.getLoc()));
    b.setInsertionPointToEnd(block);
    for (Operation *view : llvm::reverse(chain)) {
      Operation *copy = b.clone(*view, map);
      copy->setAttr("sinter.fusion",
                    StringAttr::get(ctx, name + ": view materialized as a "
                                                "copy because a non-kernel "
                                                "op reads it"));
    }
    b.create<YieldOp>(op.getLoc(), map.lookup(op.getResult(0)));
    op.replaceAllUsesWith(fusion->getResults());
    op.erase();
  }
  // The views of the chains just cloned are dead now.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isView(&op) && op.use_empty())
      op.erase();
}
