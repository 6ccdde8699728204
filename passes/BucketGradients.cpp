//===- BucketGradients.cpp - gradient all-reduces in a few large buckets --===//
//
// The training phase gives every gradient its own `sgraph.all_reduce`. This
// pass merges them, per fused function, into buckets in the order the
// backward pass finishes the gradients, the way PyTorch DDP's reducer fills
// its buckets (a small first bucket, then `bucket-bytes` each):
//
//   1. Each gradient is ready at the op that writes it (its position in the
//      block, which sinter-fuse-kernels left in a topological order that
//      keeps program order, so the backward pass's order); one that no op
//      of the block writes (an argument, say) is ready at the start.
//   2. Walking the gradients in that order, a bucket takes gradients of its
//      element type and reduction until it holds the cap (the first bucket's
//      cap is `first-bucket-bytes`); then the next bucket opens.
//   3. With `last-bucket-bytes`, the gradients written last (of the last
//      one's kind, up to that many bytes) are set aside first as the last
//      bucket: a collective can only start once its last gradient is
//      written, so whatever the final bucket holds is communication that
//      nothing overlaps. Without it the final bucket is whatever remains
//      (char-GPT: 12 MB); with it, that remainder starts before the
//      backward pass's last matmuls and only the small tail is exposed.
//   4. Each bucket becomes one variadic all_reduce right after the op that
//      writes its last gradient; its results replace the old ones.
//
// The buckets' order is the block's, fixed at compile time, so every rank
// runs the same collectives in the same order (a mismatch would be a
// deadlock or an abort in Gloo). Bucket sizes are for the bytes the
// collective moves; the arena pads each gradient to the ABI's alignment
// (sinter-assign-buffers, StepPlan.cpp).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Graph/GraphOps.h"
#include "passes/StepPlan.h"

#include "llvm/Support/FormatVariadic.h"

namespace sinter {
#define GEN_PASS_DEF_BUCKETGRADIENTSPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter;
using namespace sinter::sgraph;

namespace {

/// 1234567 as "1,234,567".
std::string withCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

struct Gradient {
  Value value;  // the all-reduce's operand
  Value result; // its old result
  StringRef reduction;
  StringAttr commDtype; // null: as the values are
  Type element;
  int64_t bytes = 0;
  int64_t ready = -1; // position of the op that writes it
  Operation *writer = nullptr;
};

void bucketFunction(func::FuncOp fn, int64_t bucketBytes,
                    int64_t firstBucketBytes, int64_t lastBucketBytes) {
  Block &body = fn.getBody().front();
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : body)
    position[&op] = index++;

  SmallVector<AllReduceOp> old;
  SmallVector<Gradient> grads;
  for (auto ar : body.getOps<AllReduceOp>()) {
    old.push_back(ar);
    for (auto [v, r] : llvm::zip(ar.getOperands(), ar.getResults())) {
      Gradient g;
      g.value = v;
      g.result = r;
      g.reduction = ar.getReduction();
      g.commDtype = ar.getCommDtypeAttr();
      g.element = getElementTypeOrSelf(v.getType());
      g.bytes = plan::tensorBytes(v.getType());
      if (Operation *def = v.getDefiningOp(); def && def->getBlock() == &body) {
        g.ready = position[def];
        g.writer = def;
      }
      grads.push_back(g);
    }
  }
  if (grads.empty())
    return;
  // bucket-bytes=0: every gradient is a bucket of its own.
  if (bucketBytes <= 0)
    bucketBytes = firstBucketBytes = 0;
  std::stable_sort(
      grads.begin(), grads.end(),
      [](const Gradient &a, const Gradient &b) { return a.ready < b.ready; });

  // Buckets of consecutive ready gradients with one element type and
  // reduction; a gradient of another kind goes to the open bucket of its
  // kind.
  struct Bucket {
    SmallVector<Gradient *> grads;
    int64_t bytes = 0;
    int64_t cap = 0;
  };
  SmallVector<Bucket> closed;
  auto keyOf = [](const Gradient &g) {
    return std::make_tuple(g.element, g.reduction, g.commDtype);
  };
  // The last bucket, taken from the end: consecutive gradients of the last
  // one's kind until it holds lastBucketBytes; none when that would be
  // every gradient (one bucket is all there is to send).
  Bucket tail;
  size_t tailStart = grads.size();
  if (bucketBytes > 0 && lastBucketBytes > 0) {
    for (size_t i = grads.size(); i-- > 0 && tail.bytes < lastBucketBytes;) {
      if (keyOf(grads[i]) != keyOf(grads.back()))
        break;
      tail.bytes += grads[i].bytes;
      tailStart = i;
    }
    if (tailStart == 0)
      tailStart = grads.size();
    for (size_t i = tailStart; i < grads.size(); ++i)
      tail.grads.push_back(&grads[i]);
  }
  llvm::MapVector<std::tuple<Type, StringRef, StringAttr>, Bucket> open;
  for (Gradient &g : MutableArrayRef<Gradient>(grads).take_front(tailStart)) {
    auto key = keyOf(g);
    auto [it, inserted] = open.try_emplace(key);
    Bucket &bucket = it->second;
    if (inserted)
      bucket.cap =
          closed.empty() && open.size() == 1 ? firstBucketBytes : bucketBytes;
    bucket.grads.push_back(&g);
    bucket.bytes += g.bytes;
    if (bucket.bytes >= bucket.cap) {
      closed.push_back(std::move(bucket));
      open.erase(it);
    }
  }
  for (auto &entry : open)
    closed.push_back(std::move(entry.second));
  if (!tail.grads.empty())
    closed.push_back(std::move(tail));
  // In the order their last gradient is ready: the order they run in.
  auto lastReady = [](const Bucket &b) { return b.grads.back()->ready; };
  std::stable_sort(closed.begin(), closed.end(),
                   [&](const Bucket &a, const Bucket &b) {
                     return lastReady(a) < lastReady(b);
                   });

  OpBuilder b(fn.getContext());
  for (auto [i, bucket] : llvm::enumerate(closed)) {
    Gradient &last = *bucket.grads.back();
    if (last.writer)
      b.setInsertionPointAfter(last.writer);
    else
      b.setInsertionPointToStart(&body);
    SmallVector<Value> operands;
    for (Gradient *g : bucket.grads)
      operands.push_back(g->value);
    Location loc = last.value.getLoc();
    auto ar = b.create<AllReduceOp>(
        loc, operands, b.getStringAttr(last.reduction), last.commDtype);
    // Named by the kernel that writes it (a reshape only views it).
    Operation *writer = last.writer;
    while (auto reshape = dyn_cast_or_null<ReshapeOp>(writer))
      writer = reshape.getOperand().getDefiningOp();
    std::string ready = "the start";
    if (auto fusion = dyn_cast_or_null<FusionOp>(writer))
      ready = fusion.getSymName().str();
    else if (auto why = writer
                            ? writer->getAttrOfType<StringAttr>("sinter.fusion")
                            : StringAttr())
      ready = why.getValue().split(':').first.str(); // "k81: matmul ..."
    else if (writer)
      ready = writer->getName().stripDialect().str();
    ar->setAttr("sinter.bucket",
                b.getStringAttr(llvm::formatv(
                    "bucket {0}: {1} gradient{2}, {3} bytes, ready after {4}",
                    i, bucket.grads.size(), bucket.grads.size() == 1 ? "" : "s",
                    withCommas(bucket.bytes), ready)));
    for (auto [g, r] : llvm::zip(bucket.grads, ar.getResults()))
      g->result.replaceAllUsesWith(r);
  }
  for (AllReduceOp ar : old)
    ar.erase();
}

class BucketGradientsPass
    : public sinter::impl::BucketGradientsPassBase<BucketGradientsPass> {
public:
  using BucketGradientsPassBase::BucketGradientsPassBase;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.getBody().hasOneBlock())
        bucketFunction(fn, bucketBytes, firstBucketBytes, lastBucketBytes);
  }
};

} // namespace
