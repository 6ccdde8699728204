//===- CudaSpecialKernels.cpp - CUDA forms of the special kernels ---------===//
//
// The kernels that are not one fused region of elementwise ops and row
// reductions (CudaKernels.cpp), as KernelBuilder emits them for CUDA:
//
//   - special kernels (argmax, interior pads): the CPU's loops over one
//     index of their split dimension, one thread each;
//   - embedding_grad: a thread per column of each of R ranges of the
//     table's rows, which reads every index in order and adds the rows of
//     those in its range: deterministic, D x R threads;
//   - concats: the CPU's copies (each operand into its slice of the result,
//     read through its transpose), spread over every thread: one element
//     per thread of a grid-stride loop over all the copies' elements, the
//     innermost dimension fastest. One thread per index of the split
//     dimension would copy a GPT-2 attention gradient (16 x 1024 x 2304)
//     with 16 threads: 186 ms on an H200, measured, where this takes a
//     copy's time.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/KernelBuilder.h"
#include "compiler/CodeGen/Cpu/ScalarOps.h"
#include "compiler/CodeGen/Cuda/CudaIndexing.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace sinter::codegen::detail {

namespace {

/// The copies of `loop`'s body, if the body is nothing but views of the
/// slabs and copies between them (a concat); none otherwise.
SmallVector<linalg::CopyOp> copiesOnly(scf::ForOp loop) {
  SmallVector<linalg::CopyOp> copies;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto copy = dyn_cast<linalg::CopyOp>(op)) {
      copies.push_back(copy);
      continue;
    }
    if (!isa<memref::ViewOp, memref::SubViewOp, memref::ExpandShapeOp,
             memref::CollapseShapeOp, memref::TransposeOp, arith::ConstantOp,
             arith::AddIOp>(op))
      return {};
  }
  return copies;
}

} // namespace

LogicalResult KernelBuilder::emitCudaEmbeddingGrad(EmbeddingGradOp eg) {
  // The (V, D) table from the (N, D) gradient and the N indices. A thread
  // owns column d of the rows [lo, hi) of one of R ranges of the table: it
  // zeroes them, then reads every index in order and adds the gradient's
  // row of each one in its range. Each element is one thread's, summed in
  // index order: the same sums, deterministic, as the CPU's thread per
  // column, with D x R threads instead of D. Neighbouring threads take
  // neighbouring columns (coalesced), and a warp's lanes read the same
  // index (one load for all).
  Location loc = src.op->getLoc();
  const KernelOperand &outer = src.results[0];
  auto tableShape = shapeOf(outer);
  int64_t rows = tableShape[0], width = tableShape[1];
  int64_t n = 1;
  for (int64_t d : shapeOf(eg.getIndices()))
    n *= d;
  auto inputOf = [&](Value v) -> const KernelOperand * {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg ? &src.inputs[arg.getArgNumber()] : nullptr;
  };
  const KernelOperand *gradIn = inputOf(eg.getGrad()),
                      *indexIn = inputOf(eg.getIndices());
  if (!gradIn || !indexIn)
    return eg.emitOpError("special kernel operands must be its inputs");
  Type et = elementOf(outer);
  Value table = slabView(outer, 2, {rows, width}, et);
  Value g = slabView(*gradIn, 2, {n, width}, elementOf(eg.getGrad()));
  Value ids = slabView(*indexIn, 1, {n}, elementOf(eg.getIndices()));
  int64_t ranges =
      std::clamp<int64_t>(kMaxBlocks / std::max<int64_t>(width, 1), 1, rows);
  int64_t total = width * ranges;
  cudaBlock = kThreads;
  cudaGrid = std::clamp<int64_t>((total + kThreads - 1) / kThreads, 1,
                                 kMaxBlocks);
  auto [first, stride] = globalThread();
  auto loop = b.create<scf::ForOp>(loc, first, constIndex(b, loc, total),
                                   stride);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value t = loop.getInductionVar();
  Value widthValue = constIndex(b, loc, width);
  Value d = b.create<arith::RemUIOp>(loc, t, widthValue);
  Value r = b.create<arith::DivUIOp>(loc, t, widthValue);
  auto bound = [&](Value range) {
    return b.create<arith::DivUIOp>(
        loc, b.create<arith::MulIOp>(loc, range, constIndex(b, loc, rows)),
        constIndex(b, loc, ranges));
  };
  Value lo = bound(r);
  Value hi = bound(b.create<arith::AddIOp>(loc, r, constIndex(b, loc, 1)));
  Value one = constIndex(b, loc, 1);
  {
    auto zero = b.create<scf::ForOp>(loc, lo, hi, one);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(zero.getBody());
    b.create<memref::StoreOp>(loc, fconst(b, loc, et, 0.0), table,
                              ValueRange{zero.getInductionVar(), d});
  }
  auto scan = b.create<scf::ForOp>(loc, constIndex(b, loc, 0),
                                   constIndex(b, loc, n), one);
  b.setInsertionPointToStart(scan.getBody());
  Value i = scan.getInductionVar();
  Value row = b.create<arith::IndexCastOp>(
      loc, b.getIndexType(),
      b.create<memref::LoadOp>(loc, ids, ValueRange{i}));
  // (A negative index casts to a huge one: outside every range.)
  Value mine = b.create<arith::AndIOp>(
      loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::uge, row, lo),
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, row, hi));
  auto ifMine = b.create<scf::IfOp>(loc, mine, /*withElse=*/false);
  b.setInsertionPointToStart(&ifMine.getThenRegion().front());
  Value acc = b.create<memref::LoadOp>(loc, table, ValueRange{row, d});
  Value add = b.create<arith::AddFOp>(
      loc, acc, b.create<memref::LoadOp>(loc, g, ValueRange{i, d}));
  b.create<memref::StoreOp>(loc, add, table, ValueRange{row, d});
  return success();
}

LogicalResult KernelBuilder::emitCudaSpecial() {
  // One thread per index of the split dimension, [begin, begin + 1), in a
  // grid-stride loop.
  Location loc = src.op->getLoc();
  auto [first, stride] = globalThread();
  // The extent is known once the loops are emitted (emitSpecial picks the
  // split dimension); the bound is patched then.
  auto bound = b.create<arith::ConstantIndexOp>(loc, 1);
  auto loop = b.create<scf::ForOp>(loc, first, bound, stride);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value gid = loop.getInductionVar();
  begin = gid;
  end = b.create<arith::AddIOp>(loc, gid, constIndex(b, loc, 1));
  count = constIndex(b, loc, 1);
  if (failed(emitSpecial()))
    return failure();
  int64_t extent =
      splitDim < 0 ? 1 : shapeOf(src.results[0])[splitDim];
  b.setInsertionPoint(bound);
  bound.replaceAllUsesWith(constIndex(b, loc, extent));
  bound.erase();
  cudaGrid = std::clamp<int64_t>((extent + cudaBlock - 1) / cudaBlock, 1,
                                 std::numeric_limits<int32_t>::max());
  spreadCopies(loop, extent);
  return success();
}

void KernelBuilder::spreadCopies(scf::ForOp loop, int64_t extent) {
  SmallVector<linalg::CopyOp> copies = copiesOnly(loop);
  if (copies.empty())
    return;
  // Each index of the split dimension copies the same pieces: S elements,
  // piece c at [first[c], first[c] + numel(c)) of them. A dynamic size is
  // the split's count, 1 here.
  struct Piece {
    linalg::CopyOp copy;
    SmallVector<int64_t> shape;
    int64_t first, numel;
  };
  SmallVector<Piece> pieces;
  int64_t perIndex = 0;
  for (linalg::CopyOp copy : copies) {
    auto type = cast<MemRefType>(copy.getInputs()[0].getType());
    Piece piece{copy, {}, perIndex, 1};
    for (int64_t d : type.getShape()) {
      piece.shape.push_back(ShapedType::isDynamic(d) ? 1 : d);
      piece.numel *= piece.shape.back();
    }
    perIndex += piece.numel;
    pieces.push_back(std::move(piece));
  }
  int64_t total = extent * perIndex;
  if (total <= 0)
    return;
  Location loc = loop.getLoc();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop);
  auto [first, stride] = globalThread();
  auto flat = b.create<scf::ForOp>(loc, first, constIndex(b, loc, total),
                                   stride);
  b.setInsertionPointToStart(flat.getBody());
  Value e = flat.getInductionVar();
  Value perIndexValue = constIndex(b, loc, perIndex);
  IRMapping map;
  map.map(loop.getInductionVar(),
          b.create<arith::DivUIOp>(loc, e, perIndexValue).getResult());
  Value r = b.create<arith::RemUIOp>(loc, e, perIndexValue);
  for (Operation &op : loop.getBody()->without_terminator())
    if (!isa<linalg::CopyOp>(op))
      b.clone(op, map);
  for (Piece &piece : pieces) {
    Value lo = constIndex(b, loc, piece.first);
    Value inside = b.create<arith::AndIOp>(
        loc,
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::uge, r, lo),
        b.create<arith::CmpIOp>(
            loc, arith::CmpIPredicate::ult, r,
            constIndex(b, loc, piece.first + piece.numel)));
    auto ifInside = b.create<scf::IfOp>(loc, inside, /*withElse=*/false);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(&ifInside.getThenRegion().front());
    SmallVector<Value> at = delinearize(
        b, loc, b.create<arith::SubIOp>(loc, r, lo), piece.shape);
    Value v = b.create<memref::LoadOp>(
        loc, map.lookupOrDefault(piece.copy.getInputs()[0]), at);
    b.create<memref::StoreOp>(loc, v, map.lookupOrDefault(piece.copy.getOutputs()[0]),
                              at);
  }
  loop.erase();
  cudaBlock = kThreads;
  cudaGrid = std::clamp<int64_t>((total + cudaBlock - 1) / cudaBlock, 1,
                                 kMaxBlocks);
}

} // namespace sinter::codegen::detail
