//===- AlignMatmuls.cpp - matmul dimensions padded to aligned sizes ------===//
//
// A GPU matmul library's fast kernels read and write rows whose byte
// strides are multiples of 16; a dimension of 50257 (GPT-2's vocabulary)
// leaves every row of the logits, their gradient and the products that
// read them misaligned, and cuBLASLt falls back to kernels 4-6x slower
// (95-150 TFLOP/s on an H200 where the aligned layers run at 600-750).
// This pass pads such a dimension of a matmul's operands with zeros up to
// the next aligned size and slices the result back, as Inductor's pad_mm
// does: M and N padded are sliced off the result, K padded adds products
// of zeros (exactly 0: the sums are the same numbers). The pads are
// elementwise over their results and fuse into the kernels that produce
// the operands, the slices are views read by the kernels that consume the
// result, so what it costs is the padding's own bytes.
//
// A dimension is padded when it is at least `min-size` (small ones cost
// more than they gain) and its bytes are not a multiple of `align-bytes`.
// Only the CUDA target asks for it (Target::matmulAlignBytes).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace sinter {
#define GEN_PASS_DEF_ALIGNMATMULSPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter;
using namespace sinter::sgraph;

namespace {

class AlignMatmulsPass
    : public sinter::impl::AlignMatmulsPassBase<AlignMatmulsPass> {
public:
  using AlignMatmulsPassBase::AlignMatmulsPassBase;

  void runOnOperation() override {
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp op) { matmuls.push_back(op); });
    for (MatmulOp op : matmuls)
      align(op);
    made.clear();
  }

private:
  /// `size` rounded up to whole multiples of `multiple`, if it needs it.
  int64_t aligned(int64_t size, int64_t multiple) const {
    if (size < minSize || multiple <= 1 || size % multiple == 0)
      return size;
    return (size + multiple - 1) / multiple * multiple;
  }

  /// `v` with `axis` padded at the end with zeros up to `size`, made once
  /// (the logits' gradient feeds two matmuls, one through a reshape) and
  /// placed right after `v`, so it serves every matmul that reads `v`.
  Value padAxis(Value v, int64_t axis, int64_t size) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getDimSize(axis) == size)
      return v;
    int64_t last = type.getRank() - 1;
    // The last axis through a reshape that keeps it: pad before the
    // reshape, so that both readers share the pad.
    if (axis == last)
      if (auto reshape = v.getDefiningOp<ReshapeOp>()) {
        auto from = cast<RankedTensorType>(reshape.getOperand().getType());
        if (from.getRank() > 0 &&
            from.getDimSize(from.getRank() - 1) == type.getDimSize(last)) {
          Value padded =
              padAxis(reshape.getOperand(), from.getRank() - 1, size);
          SmallVector<int64_t> shape(type.getShape());
          shape[last] = size;
          auto key = std::make_tuple(padded, (int64_t)-1, size);
          if (Value done = made.lookup(key))
            return done;
          OpBuilder b(padded.getContext());
          b.setInsertionPointAfterValue(padded);
          Value out = b.create<ReshapeOp>(
              reshape.getLoc(),
              RankedTensorType::get(shape, type.getElementType()), padded);
          made[key] = out;
          return out;
        }
      }
    auto key = std::make_tuple(v, axis, size);
    if (Value done = made.lookup(key))
      return done;
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    SmallVector<int64_t> low(type.getRank(), 0), high(type.getRank(), 0);
    high[axis] = size - type.getDimSize(axis);
    Location loc = v.getDefiningOp() ? v.getDefiningOp()->getLoc()
                                     : v.getParentRegion()->getLoc();
    Value out = b.create<PadOp>(loc, v, b.getDenseI64ArrayAttr(low),
                                b.getDenseI64ArrayAttr(high),
                                DenseI64ArrayAttr(), b.getF64FloatAttr(0.0));
    made[key] = out;
    return out;
  }
  /// The pads (and reshapes of pads) made: (value, axis, size) -> result.
  DenseMap<std::tuple<Value, int64_t, int64_t>, Value> made;

  void align(MatmulOp op) {
    auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
    auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    int64_t lr = lhsType.getRank(), rr = rhsType.getRank(),
            or_ = resultType.getRank();
    if (lr < 2 || rr < 2 || or_ < 2 || !lhsType.hasStaticShape() ||
        !rhsType.hasStaticShape())
      return;
    // The axes of M, K in the lhs and of K, N in the rhs.
    int64_t lhsM = op.getTransposeLhs() ? lr - 1 : lr - 2;
    int64_t lhsK = op.getTransposeLhs() ? lr - 2 : lr - 1;
    int64_t rhsK = op.getTransposeRhs() ? rr - 1 : rr - 2;
    int64_t rhsN = op.getTransposeRhs() ? rr - 2 : rr - 1;
    auto multipleOf = [&](Type t) {
      int64_t bytes = (t.getIntOrFloatBitWidth() + 7) / 8;
      return alignBytes % bytes == 0 ? alignBytes / bytes : 1;
    };
    int64_t in = std::max(multipleOf(lhsType.getElementType()),
                          multipleOf(rhsType.getElementType()));
    int64_t out = multipleOf(resultType.getElementType());
    int64_t m = lhsType.getDimSize(lhsM), k = lhsType.getDimSize(lhsK),
            n = rhsType.getDimSize(rhsN);
    // The strides (row-major): an lhs read as is strides by K, read
    // transposed by M; an rhs read as is by N, transposed by K; the result
    // by N. Only a dimension some operand strides by is padded.
    int64_t mp = op.getTransposeLhs() ? aligned(m, in) : m;
    int64_t kp = !op.getTransposeLhs() || op.getTransposeRhs() ? aligned(k, in)
                                                                : k;
    int64_t np = aligned(n, std::max(in, out));
    if (mp == m && kp == k && np == n)
      return;
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value lhs = padAxis(padAxis(op.getLhs(), lhsM, mp), lhsK, kp);
    Value rhs = padAxis(padAxis(op.getRhs(), rhsK, kp), rhsN, np);
    SmallVector<int64_t> paddedShape(resultType.getShape());
    paddedShape[or_ - 2] = mp;
    paddedShape[or_ - 1] = np;
    Operation *padded = b.clone(*op);
    padded->setOperands({lhs, rhs});
    padded->getResult(0).setType(
        RankedTensorType::get(paddedShape, resultType.getElementType()));
    Value result = padded->getResult(0);
    if (mp != m || np != n) {
      SmallVector<int64_t> start(or_, 0);
      result = b.create<SliceOp>(loc, result, b.getDenseI64ArrayAttr(start),
                                 b.getDenseI64ArrayAttr(resultType.getShape()),
                                 DenseI64ArrayAttr());
    }
    Value oldLhs = op.getLhs(), oldRhs = op.getRhs();
    op.replaceAllUsesWith(result);
    op.erase();
    // A reshape that only fed the matmul is dead now: left, it would be a
    // reader of the unpadded value, which a kernel then writes for nothing.
    for (Value v : {oldLhs, oldRhs}) {
      Operation *def = v.getDefiningOp();
      while (def && def->use_empty() &&
             isa<ReshapeOp, TransposeOp, SliceOp, BroadcastOp>(def)) {
        Operation *next = def->getOperand(0).getDefiningOp();
        def->erase();
        def = next;
      }
    }
  }
};

} // namespace
