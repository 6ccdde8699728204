//===- SpecialKernels.cpp - kernels that are not one loop nest -----------===//
//
// Pads with interior padding, concats (read through transposes and merging
// reshapes), embedding gradients and argmax: each gets loops of its own.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/KernelBuilder.h"
#include "compiler/CodeGen/Cpu/ScalarOps.h"
#include "passes/Analysis/KernelChunks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

namespace sinter::codegen::detail {

// A concat copies each operand into its slice of the result. An operand may
// be a transpose of an input (read strided) or a reshape of such a
// transpose that merges dimensions (the slice of the result is viewed
// split instead), so the gradients of attention heads go straight from the
// head layout into the fused QKV gradient, with no copy in between; or a
// slice (strided or not) of an input, so a convolution's windows are copied
// from the padded image once. Threads split dimension 0 when every operand
// keeps it whole.
LogicalResult KernelBuilder::emitConcat(ConcatOp concat, Value out) {
  Location loc = src.op->getLoc();
  int64_t axis = concat.getAxis();
  struct Piece {
    Value from, dst;
    bool splittable;
  };
  SmallVector<Piece> pieces;
  int64_t at = 0;
  for (Value operand : concat.getOperands()) {
    auto inShape = shapeOf(operand);
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (size_t k = 0; k < inShape.size(); ++k) {
      offsets.push_back(b.getIndexAttr(k == (size_t)axis ? at : 0));
      sizes.push_back(b.getIndexAttr(inShape[k]));
      strides.push_back(b.getIndexAttr(1));
    }
    at += inShape[axis];
    Value dst = b.create<memref::SubViewOp>(loc, out, offsets, sizes, strides);
    bool splittable = axis != 0;
    Value v = operand;
    if (auto reshape = v.getDefiningOp<ReshapeOp>()) {
      // Merged dims: view the destination split like the operand.
      ArrayRef<int64_t> from = shapeOf(reshape.getOperand());
      std::optional<SmallVector<ReassociationIndices>> groups =
          getReassociationIndicesForReshape(
              cast<ShapedType>(reshape.getOperand().getType()),
              cast<ShapedType>(reshape.getType()));
      if (!groups || from.size() < inShape.size())
        return reshape.emitOpError("is not a merge of dimensions");
      splittable &= (*groups)[0].size() == 1;
      dst = b.create<memref::ExpandShapeOp>(loc, from, dst, *groups);
      v = reshape.getOperand();
    }
    Value from;
    if (auto t = v.getDefiningOp<TransposeOp>()) {
      auto arg = dyn_cast<BlockArgument>(t.getOperand());
      if (!arg)
        return t.emitOpError("concat operand must be a transpose of an input");
      const KernelOperand &in = src.inputs[arg.getArgNumber()];
      Value view = slabView(in, shapeOf(in).size(), shapeOf(in), elementOf(in));
      SmallVector<unsigned> perm;
      for (int64_t p : t.getPermutation())
        perm.push_back(p);
      from = b.create<memref::TransposeOp>(
          loc, view,
          AffineMapAttr::get(AffineMap::getPermutationMap(perm, ctx)));
    } else if (auto slice = v.getDefiningOp<SliceOp>()) {
      auto arg = dyn_cast<BlockArgument>(slice.getOperand());
      if (!arg)
        return slice.emitOpError("concat operand must be a slice of an input");
      const KernelOperand &in = src.inputs[arg.getArgNumber()];
      Value view = slabView(in, shapeOf(in).size(), shapeOf(in), elementOf(in));
      SmallVector<OpFoldResult> offsets, sizes, strides;
      for (auto [k, start] : llvm::enumerate(slice.getStart())) {
        int64_t stride = slice.getStride() ? (*slice.getStride())[k] : 1;
        offsets.push_back(b.getIndexAttr(start));
        sizes.push_back(b.getIndexAttr(inShape[k]));
        strides.push_back(b.getIndexAttr(stride));
        splittable &= k != 0 || (start == 0 && stride == 1 &&
                                 inShape[0] == shapeOf(in)[0]);
      }
      from = b.create<memref::SubViewOp>(loc, view, offsets, sizes, strides);
    } else if (auto arg = dyn_cast<BlockArgument>(v)) {
      const KernelOperand &in = src.inputs[arg.getArgNumber()];
      from = slabView(in, shapeOf(in).size(), shapeOf(in), elementOf(in));
    } else {
      return concat.emitOpError("operand must be an input or a view of one");
    }
    pieces.push_back({from, dst, splittable});
  }
  auto outShape = shapeOf(concat.getResult());
  int64_t numel = 1;
  for (int64_t d : outShape)
    numel *= d;
  if (numel >= limits.minElementsToSplit && outShape[0] > 1 &&
      llvm::all_of(pieces, [](const Piece &p) { return p.splittable; }))
    splitDim = 0;
  for (Piece &p : pieces) {
    Value from = p.from, dst = p.dst;
    if (splitDim == 0) {
      auto slice = [&](Value v) -> Value {
        auto type = cast<MemRefType>(v.getType());
        SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)),
            sizes, strides(type.getRank(), b.getIndexAttr(1));
        offsets[0] = begin;
        sizes.push_back(count);
        for (int64_t d : type.getShape().drop_front())
          sizes.push_back(b.getIndexAttr(d));
        return b.create<memref::SubViewOp>(loc, v, offsets, sizes, strides);
      };
      from = slice(from);
      dst = slice(dst);
    }
    b.create<linalg::CopyOp>(loc, from, dst);
  }
  return success();
}

LogicalResult KernelBuilder::emitSpecial() {
  Location loc = src.op->getLoc();
  Block &body = *src.body;
  // The special op is what the region yields; a concat may read its
  // operands through transposes and reshapes cloned before it.
  Operation *op = body.getTerminator()->getOperand(0).getDefiningOp();
  auto inputView = [&](unsigned i) {
    const KernelOperand &outer = src.inputs[i];
    return slabView(outer, shapeOf(outer).size(), shapeOf(outer),
                    elementOf(outer));
  };
  const KernelOperand &outer = src.results[0];
  Value out =
      slabView(outer, shapeOf(outer).size(), shapeOf(outer), elementOf(outer));
  auto index = [&](int64_t v) {
    return b.create<arith::ConstantIndexOp>(loc, v).getResult();
  };
  auto operandIndex = [&](Value v) -> int {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg ? (int)arg.getArgNumber() : -1;
  };
  for (Value operand : op->getOperands())
    if (operandIndex(operand) < 0 && !isa<ConcatOp>(op))
      return op->emitOpError("special kernel operands must be its inputs");
  Type et = elementOf(outer);

  if (auto pad = dyn_cast<PadOp>(op)) {
    Value value = isa<FloatType>(et)
                      ? fconst(b, loc, et, pad.getValue().convertToDouble())
                      : b.create<arith::ConstantIntOp>(
                             loc, (int64_t)pad.getValue().convertToDouble(),
                             storageType(et))
                            .getResult();
    b.create<linalg::FillOp>(loc, ValueRange{value}, ValueRange{out});
    SmallVector<OpFoldResult> offsets, sizes, strides;
    auto inShape = shapeOf(pad.getOperand());
    for (size_t k = 0; k < inShape.size(); ++k) {
      int64_t low = pad.getLow()[k];
      int64_t interior = pad.getInterior() ? (*pad.getInterior())[k] : 0;
      if (low < 0 || pad.getHigh()[k] < 0 || interior < 0)
        return pad.emitOpError("negative padding has no CPU kernel yet");
      offsets.push_back(b.getIndexAttr(low));
      sizes.push_back(b.getIndexAttr(inShape[k]));
      strides.push_back(b.getIndexAttr(interior + 1));
    }
    Value dst = b.create<memref::SubViewOp>(loc, out, offsets, sizes, strides);
    b.create<linalg::CopyOp>(loc, inputView(operandIndex(pad.getOperand())),
                             dst);
    return success();
  }
  if (auto concat = dyn_cast<ConcatOp>(op))
    return emitConcat(concat, out);
  if (auto eg = dyn_cast<EmbeddingGradOp>(op)) {
    // (V, D) table; grad viewed as (N, D), indices as (N). Threads split D,
    // so no two threads add into the same element.
    auto tableShape = shapeOf(outer);
    int64_t rows = tableShape[0], width = tableShape[1];
    int64_t n = 1;
    for (int64_t d : shapeOf(eg.getIndices()))
      n *= d;
    Value g = slabView(src.inputs[operandIndex(eg.getGrad())], 2,
                       {n, width}, elementOf(eg.getGrad()));
    Value ids = slabView(src.inputs[operandIndex(eg.getIndices())], 1,
                         {n}, elementOf(eg.getIndices()));
    splitDim = width * rows >= limits.minElementsToSplit ? 1 : -1;
    Value lo = splitDim >= 0 ? begin : index(0);
    Value hi = splitDim >= 0 ? end : index(width);
    Value cols = b.create<memref::SubViewOp>(
        loc, out, SmallVector<OpFoldResult>{b.getIndexAttr(0), lo},
        SmallVector<OpFoldResult>{b.getIndexAttr(rows),
                                  splitDim >= 0 ? OpFoldResult(count)
                                                : b.getIndexAttr(width)},
        SmallVector<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
    b.create<linalg::FillOp>(loc, ValueRange{fconst(b, loc, et, 0.0)},
                             ValueRange{cols});
    auto outerLoop = b.create<scf::ForOp>(loc, index(0), index(n), index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(outerLoop.getBody());
    Value i = outerLoop.getInductionVar();
    Value id = b.create<memref::LoadOp>(loc, ids, ValueRange{i});
    Value row = b.create<arith::IndexCastOp>(loc, b.getIndexType(), id);
    Value inRange = b.create<arith::AndIOp>(
        loc,
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, row, index(0)),
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, row,
                                index(rows)));
    auto ifOp = b.create<scf::IfOp>(loc, inRange, /*withElse=*/false);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    auto inner = b.create<scf::ForOp>(loc, lo, hi, index(1));
    b.setInsertionPointToStart(inner.getBody());
    Value d = inner.getInductionVar();
    Value acc = b.create<memref::LoadOp>(loc, out, ValueRange{row, d});
    Value add = b.create<arith::AddFOp>(
        loc, acc, b.create<memref::LoadOp>(loc, g, ValueRange{i, d}));
    b.create<memref::StoreOp>(loc, add, out, ValueRange{row, d});
    return success();
  }
  if (auto am = dyn_cast<ArgmaxOp>(op)) {
    // One loop nest over the result; an inner scan along the axis keeps
    // the first maximum (NaN counts as the maximum, as the interpreter).
    Value in = inputView(operandIndex(am.getOperand()));
    auto inShape = shapeOf(am.getOperand());
    int64_t axis = am.getAxis();
    auto outShape = shapeOf(outer);
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t d : outShape) {
      lbs.push_back(index(0));
      ubs.push_back(index(d));
      steps.push_back(index(1));
    }
    scf::buildLoopNest(
        b, loc, lbs, ubs, steps,
        [&](OpBuilder &nb, Location l, ValueRange ivs) {
          auto at = [&](Value a) {
            SmallVector<Value> idx(ivs.begin(), ivs.end());
            idx.insert(idx.begin() + axis, a);
            return nb.create<memref::LoadOp>(l, in, idx).getResult();
          };
          Value zero = nb.create<arith::ConstantIndexOp>(l, 0);
          auto scan = nb.create<scf::ForOp>(
              l, nb.create<arith::ConstantIndexOp>(l, 1),
              nb.create<arith::ConstantIndexOp>(l, inShape[axis]),
              nb.create<arith::ConstantIndexOp>(l, 1),
              ValueRange{at(zero), zero},
              [&](OpBuilder &sb, Location sl, Value j, ValueRange iter) {
                Value x = at(j);
                Value better = sb.create<arith::AndIOp>(
                    sl,
                    sb.create<arith::CmpFOp>(sl, arith::CmpFPredicate::UGT, x,
                                             iter[0]),
                    sb.create<arith::CmpFOp>(sl, arith::CmpFPredicate::ORD,
                                             iter[0], iter[0]));
                sb.create<scf::YieldOp>(
                    sl,
                    ValueRange{
                        sb.create<arith::SelectOp>(sl, better, x, iter[0]),
                        sb.create<arith::SelectOp>(sl, better, j, iter[1])});
              });
          Value best = nb.create<arith::IndexCastOp>(l, et, scan.getResult(1));
          nb.create<memref::StoreOp>(l, best, out, ivs);
        });
    return success();
  }
  return op->emitOpError("has no CPU kernel");
}

} // namespace sinter::codegen::detail
