//===- KernelEmitter.cpp - one fused region to one CPU kernel ------------===//
//
// How a loop or reduction region becomes one linalg.generic:
//
//  1. Every member op's result has the region's iteration shape (fusion
//     guarantees it), so inside the body each member is one scalar.
//  2. A value read from outside (a block argument, possibly through cloned
//     views) is a buffer plus, per buffer dimension, an affine expression
//     `scale * d_p + offset` of one iteration dimension p, or a constant:
//     numpy broadcasting gives constant 0 for size-1 dimensions, transpose
//     permutes, slice scales and shifts. Each distinct read becomes a
//     strided `memref.subview` whose indexing map is a plain projection, so
//     linalg infers the loop bounds.
//  3. The split dimension (the first parallel one with more than one
//     element) is sliced to [begin, end) in every subview that uses it.
//  4. Reductions initialize their outputs with linalg.fill and combine in
//     the body; sums are marked reassociable so LLVM vectorizes them.
//
// A region whose every read is either the whole iteration space in order or
// a scalar is flattened to one dimension (optimizer updates, most
// elementwise chains), which gives the runtime a long range to split.
//
// A row-phased region (a member reads a reduction result of the region:
// FuseKernels' row phases) becomes one linalg.generic per phase instead,
// inside loops over chunks of rows (KernelPhases.cpp).
//
// A concat reads its operands through transposes and merging reshapes
// (SpecialKernels.cpp, with the other special kernels).
//
// Element types: f32, f64, i64, i32 and i1 (stored as one byte). Each op's
// scalar comes from ScalarOps.cpp; pads and embeddings, which read their
// operand by computed index, are emitted here.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/KernelEmitter.h"
#include "compiler/CodeGen/Cpu/KernelBuilder.h"

#include "compiler/CodeGen/Cpu/ScalarOps.h"
#include "dialects/Schedule/ScheduleOps.h"
#include "passes/Analysis/KernelChunks.h"
#include "passes/StepPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>

using namespace mlir;
using namespace sinter;
using namespace sinter::sgraph;
using namespace sinter::codegen;

namespace sinter::codegen::detail {

FailureOr<Read> KernelBuilder::readOf(Value v, SmallVector<Dim> dims) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return Read{arg.getArgNumber(), std::move(dims)};
  Operation *def = v.getDefiningOp();
  if (auto t = dyn_cast_or_null<TransposeOp>(def)) {
    SmallVector<Dim> in(dims.size());
    for (auto [i, p] : llvm::enumerate(t.getPermutation()))
      in[p] = dims[i];
    return readOf(t.getOperand(), std::move(in));
  }
  if (auto bc = dyn_cast_or_null<BroadcastOp>(def))
    return readOf(bc.getOperand(),
                  broadcastDims(shapeOf(bc.getOperand()), shapeOf(v), dims));
  if (auto s = dyn_cast_or_null<SliceOp>(def)) {
    SmallVector<Dim> in;
    for (auto [k, d] : llvm::enumerate(dims)) {
      int64_t stride = s.getStride() ? (*s.getStride())[k] : 1;
      int64_t start = s.getStart()[k];
      if (d.iter < 0)
        in.push_back(Dim{-1, 0, d.offset * stride + start});
      else
        in.push_back(Dim{d.iter, d.scale * stride, d.offset * stride + start});
    }
    return readOf(s.getOperand(), std::move(in));
  }
  return src.op->emitOpError("kernel cannot read ")
         << (def ? def->getName().getStringRef() : StringRef("a value"))
         << " through its indexing";
}

SmallVector<Dim> KernelBuilder::resultDims(Value v) {
  // The space itself, or a row op's per-row shape (1 on reduced axes).
  SmallVector<Dim> dims;
  for (auto [p, size] : llvm::enumerate(shapeOf(v)))
    dims.push_back(size == space[p] ? Dim{(int)p, 1, 0} : Dim{-1, 0, 0});
  return dims;
}

SmallVector<Dim> KernelBuilder::operandDims(Operation *op, unsigned i) {
  Value operand = op->getOperand(i);
  ArrayRef<int64_t> opShape = shapeOf(operand);
  SmallVector<Dim> identity;
  for (int64_t p = 0; p < (int64_t)space.size(); ++p)
    identity.push_back(Dim{(int)p, 1, 0});
  if (isa<ReduceSumOp, ReduceMaxOp>(op))
    return identity;
  if (phaseOf.lookup(op) > 0 &&
      shapeOf(op->getResult(0)).size() == space.size())
    return broadcastDims(opShape, shapeOf(op->getResult(0)),
                         resultDims(op->getResult(0)));
  if (isa<OneHotOp>(op) || (isa<EmbeddingOp>(op) && i == 1)) {
    // Labels / indices index the leading dims of the result.
    return SmallVector<Dim>(identity.begin(),
                            identity.begin() + opShape.size());
  }
  return broadcastDims(opShape, shapeOf(op->getResult(0)), identity);
}

LogicalResult KernelBuilder::analyze() {
  Block &body = *src.body;
  bool indexed = false; // needs multi-dimensional iteration indices
  for (Operation &op : body.without_terminator()) {
    if (isa<ConstantOp, TransposeOp, BroadcastOp, SliceOp>(op))
      continue;
    members.push_back(&op);
    if (isa<ReduceSumOp, ReduceMaxOp>(op)) {
      anyReduce = &op;
      space.assign(shapeOf(op.getOperand(0)).begin(),
                   shapeOf(op.getOperand(0)).end());
    }
    if (isa<OneHotOp, IotaOp, CausalMaskOp, EmbeddingOp, PadOp>(op))
      indexed = true;
  }
  // A causal mask computed here (OpClass::Generated) has the shape of the
  // trailing dimensions it is broadcast over, not the kernel's.
  auto spaceMember = llvm::find_if(
      members, [](Operation *m) { return !isa<CausalMaskOp>(m); });
  if (spaceMember == members.end() && !members.empty())
    spaceMember = members.begin();
  if (anyReduce)
    space.assign(shapeOf(anyReduce->getOperand(0)).begin(),
                 shapeOf(anyReduce->getOperand(0)).end());
  else if (!members.empty())
    space.assign(shapeOf((*spaceMember)->getResult(0)).begin(),
                 shapeOf((*spaceMember)->getResult(0)).end());
  else // a view materialized as a copy
    space.assign(shapeOf(src.results[0]).begin(),
                 shapeOf(src.results[0]).end());
  isReductionDim.assign(space.size(), false);
  if (auto r = dyn_cast_or_null<ReduceSumOp>(anyReduce))
    for (int64_t a : r.getAxes())
      isReductionDim[a] = true;
  if (auto r = dyn_cast_or_null<ReduceMaxOp>(anyReduce))
    for (int64_t a : r.getAxes())
      isReductionDim[a] = true;

  assignPhases();
  llvm::SmallPtrSet<Operation *, 16> memberSet(members.begin(), members.end());
  for (Operation *op : members) {
    // A row op (a later phase's per-row value) has the space's rank and
    // 1 on the reduced axes.
    auto rowShaped = [&](ArrayRef<int64_t> shape) {
      if (phaseOf.lookup(op) == 0 || shape.size() != space.size())
        return false;
      for (auto [p, size] : llvm::enumerate(shape))
        if (size != space[p] && !(isReductionDim[p] && size == 1))
          return false;
      return true;
    };
    // A causal mask is computed from the space's last two indices.
    auto trailing = [&](ArrayRef<int64_t> shape) {
      return isa<CausalMaskOp>(op) && shape.size() <= space.size() &&
             ArrayRef<int64_t>(space).take_back(shape.size()) == shape;
    };
    if (!isa<ReduceSumOp, ReduceMaxOp>(op) &&
        shapeOf(op->getResult(0)) != ArrayRef<int64_t>(space) &&
        !rowShaped(shapeOf(op->getResult(0))) &&
        !trailing(shapeOf(op->getResult(0))) && !paddedOutput(op))
      return op->emitOpError("does not iterate over its kernel's shape");
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      Value operand = op->getOperand(i);
      Operation *def = operand.getDefiningOp();
      if (def && (memberSet.count(def) || isa<ConstantOp>(def)))
        continue;
      if (isa<EmbeddingOp, PadOp>(op) && i == 0)
        continue; // the table / padded operand is read whole, by index
      auto read = readOf(operand, operandDims(op, i));
      if (failed(read))
        return failure();
      auto it = llvm::find(reads, *read);
      readOfOperand[{op, i}] = it - reads.begin();
      if (it == reads.end())
        reads.push_back(*read);
    }
  }

  // A yielded value no member computes (a view copied out) is a read too.
  Operation *yield = body.getTerminator();
  for (auto [j, v] : llvm::enumerate(yield->getOperands())) {
    Operation *def = v.getDefiningOp();
    if (def && (memberSet.count(def) || isa<ConstantOp>(def)))
      continue;
    if (shapeOf(v) != ArrayRef<int64_t>(space))
      return src.op->emitOpError("copies out a value of another shape");
    SmallVector<Dim> identity;
    for (int64_t p = 0; p < (int64_t)space.size(); ++p)
      identity.push_back(Dim{(int)p, 1, 0});
    auto read = readOf(v, identity);
    if (failed(read))
      return failure();
    auto it = llvm::find(reads, *read);
    readOfYield[j] = it - reads.begin();
    if (it == reads.end())
      reads.push_back(*read);
  }

  // Flatten when every read walks the whole space in order, or is a scalar.
  flattened = !anyReduce && !indexed && space.size() > 1;
  for (const Read &r : reads) {
    if (r.dims.empty())
      continue;
    // The buffer must be exactly the space too: a slice starting at 0
    // reads with identity indexing but skips the rest of each row.
    if (r.dims.size() != space.size() ||
        shapeOf(src.inputs[r.input]) != ArrayRef<int64_t>(space))
      flattened = false;
    for (auto [k, d] : llvm::enumerate(r.dims))
      if (d.iter != (int)k || d.scale != 1 || d.offset != 0)
        flattened = false;
  }
  int64_t numel = 1;
  for (int64_t d : space)
    numel *= d;
  if (flattened) {
    space = {numel};
    isReductionDim = {false};
    for (Read &r : reads)
      if (!r.dims.empty())
        r.dims = {Dim{0, 1, 0}};
  }
  // Split the first parallel dimension with more than one element, when
  // the kernel is big enough for threads to pay off.
  splitDim = analysis::splitDimension(
      std::vector<int64_t>(space.begin(), space.end()),
      std::vector<bool>(isReductionDim.begin(), isReductionDim.end()), limits);
  return success();
}

void KernelBuilder::collectPlaces() {
  // One buffer per distinct place the region touches, the bigger size
  // where two values share one; then one key per dropout op, so that
  // kernels that differ only in their keys (the same layer's kernel in
  // every layer) have one body.
  SmallVector<KernelOperand> outers(src.inputs.begin(), src.inputs.end());
  outers.append(src.results.begin(), src.results.end());
  for (const KernelOperand &v : outers) {
    Place place = v.place;
    auto key = std::make_pair(place.slab, place.offset);
    int64_t bytes = plan::tensorBytes(v.type);
    auto it = llvm::find_if(places, [&](const PlaceInfo &p) {
      return p.slab == key.first && p.offset == key.second;
    });
    if (it == places.end())
      places.push_back({key.first, key.second, bytes});
    else
      it->bytes = std::max(it->bytes, bytes);
  }
  for (Operation *op : members)
    if (isa<DropoutOp>(op))
      dropouts.push_back(op);
}

void KernelBuilder::beginFunction() {
  // The body takes one `noalias` byte buffer per distinct place the region
  // touches. Planned buffers never overlap unless they are the same place
  // (a value updated in place), so the promise holds; LLVM turns it into
  // alias scopes when it inlines the body into the entry, which is what
  // lets it keep reduction accumulators in registers and vectorize loops
  // that store to one buffer while loading from another of the same slab.
  Location loc = src.op->getLoc();
  collectPlaces();
  auto bufferType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
  SmallVector<Type> bodyArgs(places.size(), bufferType);
  bodyArgs.append(dropouts.size(), b.getI64Type());
  bodyArgs.push_back(b.getIndexType());
  bodyArgs.push_back(b.getIndexType());
  b.setInsertionPointToEnd(kernels.getBody());
  bodyFn = b.create<func::FuncOp>(loc, symbol + "_body",
                                  b.getFunctionType(bodyArgs, {}));
  bodyFn.setPrivate();
  SmallVector<DictionaryAttr> argAttrs(bodyArgs.size(),
                                       b.getDictionaryAttr({}));
  for (unsigned i = 0; i < places.size(); ++i)
    argAttrs[i] =
        b.getDictionaryAttr(b.getNamedAttr("llvm.noalias", b.getUnitAttr()));
  bodyFn.setAllArgAttrs(argAttrs);
  Block *entry = bodyFn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  for (unsigned i = 0; i < places.size(); ++i)
    places[i].arg = entry->getArgument(i);
  for (auto [i, op] : llvm::enumerate(dropouts))
    dropoutKeys[op] = entry->getArgument(places.size() + i);
  begin = entry->getArgument(places.size() + dropouts.size());
  end = entry->getArgument(places.size() + dropouts.size() + 1);
  count = b.create<arith::SubIOp>(loc, end, begin);
}

void KernelBuilder::finishFunction() {
  // The entry with the uniform ABI: cut each place out of its slab and
  // call the body. The places' offsets and the dropout keys are the
  // launch's words (`args`), read at run time, so every launch of the same
  // body on the same slabs shares this entry (LowerCpuKernels.cpp).
  Location loc = src.op->getLoc();
  b.setInsertionPointToEnd(&bodyFn.getBody().back());
  b.create<func::ReturnOp>(loc);
  auto slabType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
  SmallVector<Type> args(abi::kNumSlabs, slabType);
  args.push_back(MemRefType::get({ShapedType::kDynamic}, b.getI64Type()));
  args.push_back(b.getIndexType());
  args.push_back(b.getIndexType());
  b.setInsertionPointToEnd(kernels.getBody());
  fn = b.create<func::FuncOp>(loc, symbol, b.getFunctionType(args, {}));
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value words = entry->getArgument(abi::kNumSlabs);
  auto word = [&](int64_t i) {
    Value at = b.create<arith::ConstantIndexOp>(loc, i);
    return b.create<memref::LoadOp>(loc, words, ValueRange{at}).getResult();
  };
  SmallVector<Value> callArgs;
  for (const PlaceInfo &p : places) {
    Value shift = b.create<arith::IndexCastOp>(loc, b.getIndexType(),
                                               word(launchArgs.size()));
    launchArgs.push_back(p.offset);
    Value size = b.create<arith::ConstantIndexOp>(loc, p.bytes);
    callArgs.push_back(b.create<memref::ViewOp>(
        loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type()),
        entry->getArgument(p.slab), shift, ValueRange{size}));
  }
  for (Operation *op : dropouts) {
    callArgs.push_back(word(launchArgs.size()));
    launchArgs.push_back(static_cast<int64_t>(dropoutKeyOf(op)));
  }
  fn->setAttr(sched::kKernelArgsAttr, b.getI64IntegerAttr(launchArgs.size()));
  callArgs.push_back(entry->getArgument(abi::kNumSlabs + 1));
  callArgs.push_back(entry->getArgument(abi::kNumSlabs + 2));
  b.create<func::CallOp>(loc, bodyFn, callArgs);
  b.create<func::ReturnOp>(loc);
}

Value KernelBuilder::slabView(const KernelOperand &outer, int64_t rank,
                              ArrayRef<int64_t> shape, Type elementType) {
  Place place = outer.place;
  Location loc = src.op->getLoc();
  auto type = MemRefType::get(shape, storageType(elementType));
  auto it = llvm::find_if(places, [&](const PlaceInfo &p) {
    return p.slab == place.slab && p.offset == place.offset;
  });
  assert(it != places.end() && "a value of the region has no place");
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  return b.create<memref::ViewOp>(loc, type, it->arg, zero, ValueRange{});
}

std::pair<Value, AffineMap> KernelBuilder::subviewFor(Value base,
                                                      ArrayRef<Dim> dims) {
  Location loc = src.op->getLoc();
  SmallVector<OpFoldResult> offsets, sizes, strides;
  SmallVector<AffineExpr> exprs;
  bool trivial = true;
  auto baseShape = cast<MemRefType>(base.getType()).getShape();
  for (auto [k, d] : llvm::enumerate(dims)) {
    if (d.iter < 0) {
      offsets.push_back(b.getIndexAttr(d.offset));
      sizes.push_back(b.getIndexAttr(1));
      strides.push_back(b.getIndexAttr(1));
      exprs.push_back(b.getAffineConstantExpr(0));
      trivial &= baseShape[k] == 1 && d.offset == 0;
      continue;
    }
    exprs.push_back(b.getAffineDimExpr(d.iter));
    strides.push_back(b.getIndexAttr(d.scale));
    // The split dimension starts at `begin`, a chunk dimension at its
    // chunk's index, the columns of causal rows at `columnFrom`:
    // `scale * start + offset` of the buffer.
    auto chunk = chunkIndex.find(d.iter);
    bool columns = columnCount && d.iter == (int)space.size() - 1;
    if (d.iter == splitDim || chunk != chunkIndex.end() || columns) {
      Value start = d.iter == splitDim ? begin
                    : columns          ? columnFrom
                                       : chunk->second;
      if (d.scale != 1)
        start = b.create<arith::MulIOp>(
            loc, start, b.create<arith::ConstantIndexOp>(loc, d.scale));
      if (d.offset)
        start = b.create<arith::AddIOp>(
            loc, start, b.create<arith::ConstantIndexOp>(loc, d.offset));
      offsets.push_back(start);
      sizes.push_back(d.iter == splitDim ? OpFoldResult(count)
                      : columns          ? OpFoldResult(columnCount)
                                         : b.getIndexAttr(1));
      trivial = false;
    } else {
      offsets.push_back(b.getIndexAttr(d.offset));
      sizes.push_back(b.getIndexAttr(space[d.iter]));
      trivial &= d.scale == 1 && d.offset == 0 && baseShape[k] == space[d.iter];
    }
  }
  AffineMap map = AffineMap::get(space.size(), 0, exprs, ctx);
  if (trivial)
    return {base, map};
  Value view = b.create<memref::SubViewOp>(loc, base, offsets, sizes, strides);
  return {view, map};
}

int64_t KernelBuilder::bytesMoved() {
  int64_t total = 0;
  auto bytesOf = [](Value v) { return plan::tensorBytes(v.getType()); };
  for (const KernelOperand &r : src.results)
    total += plan::tensorBytes(r.type);
  if (src.kind == "special" || space.empty()) {
    for (const KernelOperand &in : src.inputs)
      total += plan::tensorBytes(in.type);
    return total;
  }
  for (const Read &r : reads) {
    const KernelOperand &in = src.inputs[r.input];
    int64_t width = sched::elementBytes(elementOf(in));
    int64_t n = 1;
    bool rows = false, columns = false;
    for (const Dim &d : r.dims) {
      if (d.iter >= 0)
        n *= space[d.iter];
      if (causal && d.iter == causal->rowDim)
        rows = true;
      if (causal && d.iter == (int)space.size() - 1)
        columns = true;
    }
    // Read up to each row's diagonal: N (N + 1) / 2 of each N x N (on the
    // CPU, each row's count rounded up to causalColumns).
    if (rows && columns) {
      int64_t side = space.back(), covered = 0;
      for (int64_t row = 0; row < side; ++row)
        covered +=
            std::min<int64_t>(side, llvm::alignTo(row + 1, causalColumns));
      n = n / (side * side) * covered;
    }
    total += n * width;
  }
  for (Operation *op : members) {
    if (auto e = dyn_cast<EmbeddingOp>(op))
      total += bytesOf(e.getResult());
    if (auto p = dyn_cast<PadOp>(op); p && !paddedOutput(p))
      total += bytesOf(p.getOperand());
  }
  return total;
}

bool KernelBuilder::paddedOutput(Operation *op) const {
  auto pad = dyn_cast<PadOp>(op);
  if (!pad)
    return false;
  Operation *def = pad.getOperand().getDefiningOp();
  return def && def->getBlock() == src.body && llvm::is_contained(members, def);
}

Value KernelBuilder::iterIndex(OpBuilder &bb, Location loc, int dim) {
  if (!cudaIndex.empty())
    return cudaIndex[dim];
  Value i = bb.create<linalg::IndexOp>(loc, dim);
  if (dim == splitDim)
    i = bb.create<arith::AddIOp>(loc, i, begin);
  else if (auto it = chunkIndex.find(dim); it != chunkIndex.end())
    i = bb.create<arith::AddIOp>(loc, i, it->second);
  return i;
}

Value KernelBuilder::linearIndex(OpBuilder &bb, Location loc) {
  Value k = bb.create<arith::ConstantIndexOp>(loc, 0);
  for (size_t p = 0; p < space.size(); ++p) {
    Value size = bb.create<arith::ConstantIndexOp>(loc, space[p]);
    k = bb.create<arith::AddIOp>(loc, bb.create<arith::MulIOp>(loc, k, size),
                                 iterIndex(bb, loc, p));
  }
  return k;
}

FailureOr<SmallVector<Value>>
KernelBuilder::computeMember(OpBuilder &bb, Location l, Operation *op,
                             ArrayRef<Value> in,
                             const DenseMap<Operation *, Value> &tables) {
  if (auto e = dyn_cast<EmbeddingOp>(op)) {
    // Clamp the row so a bad index cannot read outside the table
    // (the interpreter reports it; a kernel cannot).
    int64_t rows = shapeOf(e.getTable())[0];
    Value idx = bb.create<arith::IndexCastOp>(l, bb.getIndexType(), in[1]);
    idx = bb.create<arith::MaxSIOp>(l, idx,
                                    bb.create<arith::ConstantIndexOp>(l, 0));
    idx = bb.create<arith::MinSIOp>(
        l, idx, bb.create<arith::ConstantIndexOp>(l, rows - 1));
    Value col = iterIndex(bb, l, space.size() - 1);
    return SmallVector<Value>{
        bb.create<memref::LoadOp>(l, tables.lookup(op), ValueRange{idx, col})};
  }
  if (paddedOutput(op))
    return SmallVector<Value>{in[0]}; // the space is the operand's
  if (auto pad = dyn_cast<PadOp>(op)) {
    // In range on every axis: the operand's element; else the
    // padding value. The index is clamped so the load stays inside
    // the operand even where the select discards it.
    ArrayRef<int64_t> inShape = shapeOf(pad.getOperand());
    Value inside;
    SmallVector<Value> at;
    for (size_t k = 0; k < inShape.size(); ++k) {
      Value i = bb.create<arith::SubIOp>(
          l, iterIndex(bb, l, k),
          bb.create<arith::ConstantIndexOp>(l, pad.getLow()[k]));
      Value lo = bb.create<arith::ConstantIndexOp>(l, 0);
      Value hi = bb.create<arith::ConstantIndexOp>(l, inShape[k]);
      Value ok = bb.create<arith::AndIOp>(
          l, bb.create<arith::CmpIOp>(l, arith::CmpIPredicate::sge, i, lo),
          bb.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, i, hi));
      inside =
          inside ? bb.create<arith::AndIOp>(l, inside, ok).getResult() : ok;
      Value last = bb.create<arith::ConstantIndexOp>(l, inShape[k] - 1);
      at.push_back(bb.create<arith::MinSIOp>(
          l, bb.create<arith::MaxSIOp>(l, i, lo), last));
    }
    Type et = elementOf(pad.getResult());
    Value v = bb.create<memref::LoadOp>(l, tables.lookup(op), at);
    if (et.isInteger(1))
      v = bb.create<arith::TruncIOp>(l, et, v);
    return SmallVector<Value>{
        inside ? bb.create<arith::SelectOp>(l, inside, v, paddingOf(bb, l, pad))
                     .getResult()
               : v};
  }
  if (isa<ReduceSumOp, ReduceMaxOp>(op))
    return SmallVector<Value>{in[0]};
  ScalarContext ctx;
  ctx.rank = space.size();
  ctx.space = space;
  ctx.polynomialMath = !cuda;
  ctx.index = [&](OpBuilder &ib, Location il, int dim) {
    return iterIndex(ib, il, dim);
  };
  ctx.linearIndex = [&](OpBuilder &ib, Location il) {
    return linearIndex(ib, il);
  };
  ctx.dropoutKey = [&](Operation *dropout) {
    return dropoutKeys.lookup(dropout);
  };
  return emitScalar(bb, l, op, in, ctx);
}

FailureOr<DenseMap<Operation *, Value>> KernelBuilder::indexTables() {
  DenseMap<Operation *, Value> tables;
  for (Operation *op : members)
    if (isa<EmbeddingOp, PadOp>(op) && !paddedOutput(op)) {
      auto arg = dyn_cast<BlockArgument>(op->getOperand(0));
      if (!arg)
        return op->emitOpError("operand read by index must be a kernel input");
      const KernelOperand &outer = src.inputs[arg.getArgNumber()];
      tables[op] = slabView(outer, shapeOf(outer).size(), shapeOf(outer),
                            elementOf(outer));
    }
  return tables;
}

Value paddingOf(OpBuilder &bb, Location l, PadOp pad) {
  Type et = elementOf(pad.getResult());
  double value = pad.getValue().convertToDouble();
  if (isa<FloatType>(et))
    return fconst(bb, l, et, value);
  return bb.create<arith::ConstantIntOp>(l, (int64_t)value, et);
}

/// A memory element (i1 is stored as i8) as the scalar of type `et`.
Value fromStorage(OpBuilder &bb, Location l, Value v, Type et) {
  return et.isInteger(1) ? bb.create<arith::TruncIOp>(l, et, v).getResult() : v;
}

/// A scalar as the element stored for it.
Value toStorage(OpBuilder &bb, Location l, Value v) {
  return v.getType().isInteger(1)
             ? bb.create<arith::ExtUIOp>(l, bb.getI8Type(), v).getResult()
             : v;
}

/// `acc` combined with `s` as the reduction `reduce` combines (sums
/// reassociable, so LLVM vectorizes them); `s` itself for any other op.
Value combine(OpBuilder &bb, Location l, Operation *reduce, Value acc,
              Value s) {
  bool isFloat = isa<FloatType>(s.getType());
  if (isa_and_nonnull<ReduceSumOp>(reduce)) {
    if (!isFloat)
      return bb.create<arith::AddIOp>(l, acc, s);
    auto add = bb.create<arith::AddFOp>(l, acc, s);
    add.setFastmathAttr(arith::FastMathFlagsAttr::get(
        bb.getContext(),
        arith::FastMathFlags::reassoc | arith::FastMathFlags::contract));
    return add;
  }
  if (isa_and_nonnull<ReduceMaxOp>(reduce))
    return isFloat ? bb.create<arith::MaximumFOp>(l, acc, s).getResult()
                   : bb.create<arith::MaxSIOp>(l, acc, s).getResult();
  return s;
}
LogicalResult KernelBuilder::computeMembers(
    OpBuilder &bb, Location l, llvm::function_ref<bool(Operation *)> wanted,
    llvm::function_ref<Value(Operation *, unsigned)> read,
    const DenseMap<Operation *, Value> &tables,
    DenseMap<Value, Value> &scalar) {
  for (Operation *op : members) {
    if (!wanted(op))
      continue;
    SmallVector<Value> in;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      Value operand = op->getOperand(i);
      if (auto it = scalar.find(operand); it != scalar.end()) {
        in.push_back(it->second);
      } else if (auto c = operand.getDefiningOp<ConstantOp>()) {
        auto dense = cast<DenseElementsAttr>(c.getValue());
        Type et = dense.getElementType();
        in.push_back(
            isa<FloatType>(et)
                ? fconst(bb, l, et,
                         dense.getSplatValue<APFloat>().convertToDouble())
                : bb.create<arith::ConstantOp>(
                        l, et,
                        bb.getIntegerAttr(et, dense.getSplatValue<APInt>()))
                      .getResult());
      } else if (isa<EmbeddingOp, PadOp>(op) && i == 0) {
        in.push_back(Value()); // read whole, through `tables`
      } else {
        in.push_back(read(op, i));
      }
    }
    auto results = computeMember(bb, l, op, in, tables);
    if (failed(results))
      return failure();
    for (auto [r, v] : llvm::zip(op->getResults(), *results))
      scalar[r] = v;
  }
  return success();
}

void KernelBuilder::spanEveryDimension(SmallVectorImpl<Value> &inputs,
                                       SmallVectorImpl<AffineMap> &maps) {
  SmallVector<bool> spanned(space.size(), false);
  for (AffineMap map : maps)
    for (AffineExpr e : map.getResults())
      if (auto d = dyn_cast<AffineDimExpr>(e))
        spanned[d.getPosition()] = true;
  SmallVector<int64_t> sizes;
  SmallVector<AffineExpr> exprs;
  for (auto [p, s] : llvm::enumerate(spanned))
    if (!s) {
      sizes.push_back(space[p]);
      exprs.push_back(b.getAffineDimExpr(p));
    }
  if (sizes.empty())
    return;
  // At the top of the body, not in a chunk loop.
  OpBuilder::InsertionGuard guard(b);
  OpBuilder::InsertPoint here = b.saveInsertionPoint();
  b.setInsertionPointToStart(&bodyFn.getBody().front());
  Value span = b.create<memref::AllocaOp>(
      src.op->getLoc(), MemRefType::get(sizes, b.getI8Type()));
  maps.insert(maps.begin() + inputs.size(),
              AffineMap::get(space.size(), 0, exprs, ctx));
  inputs.push_back(span);
  if (columnCount && !spanned.back()) {
    // Causal rows: only the columns the phase covers.
    b.restoreInsertionPoint(here);
    SmallVector<OpFoldResult> offsets(sizes.size(), b.getIndexAttr(0)), counts,
        strides(sizes.size(), b.getIndexAttr(1));
    for (int64_t size : ArrayRef<int64_t>(sizes).drop_back())
      counts.push_back(b.getIndexAttr(size));
    counts.push_back(columnCount);
    inputs.back() = b.create<memref::SubViewOp>(src.op->getLoc(), span, offsets,
                                                counts, strides);
  }
}

LogicalResult KernelBuilder::emitGeneric() {
  Location loc = src.op->getLoc();
  Block &body = *src.body;
  Operation *yield = body.getTerminator();

  // Inputs: one subview per distinct read.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (const Read &r : reads) {
    const KernelOperand &outer = src.inputs[r.input];
    ArrayRef<int64_t> shape = shapeOf(outer);
    SmallVector<int64_t> viewShape(shape.begin(), shape.end());
    if (flattened && !r.dims.empty())
      viewShape = {space[0]};
    Value base = slabView(outer, viewShape.size(), viewShape, elementOf(outer));
    auto [view, map] = subviewFor(base, r.dims);
    inputs.push_back(view);
    maps.push_back(map);
  }
  FailureOr<DenseMap<Operation *, Value>> tables = indexTables();
  if (failed(tables))
    return failure();

  // Outputs.
  SmallVector<Value> outputs;
  SmallVector<Operation *> reduceOfOutput;
  SmallVector<Dim> identity;
  for (int64_t p = 0; p < (int64_t)space.size(); ++p)
    identity.push_back(Dim{(int)p, 1, 0});
  for (auto [j, v] : llvm::enumerate(yield->getOperands())) {
    const KernelOperand &outer = src.results[j];
    Operation *def = v.getDefiningOp();
    bool isReduce = def && isa<ReduceSumOp, ReduceMaxOp>(def);
    SmallVector<Dim> dims;
    if (isReduce) {
      bool keep = def->getAttrOfType<BoolAttr>("keepdims") &&
                  def->getAttrOfType<BoolAttr>("keepdims").getValue();
      for (size_t p = 0; p < space.size(); ++p) {
        if (!isReductionDim[p])
          dims.push_back(identity[p]);
        else if (keep)
          dims.push_back(Dim{-1, 0, 0});
      }
    } else {
      if (def && isa<ConstantOp>(def))
        return src.op->emitOpError("yields a constant");
      dims = flattened ? SmallVector<Dim>{Dim{0, 1, 0}} : identity;
    }
    SmallVector<int64_t> viewShape(shapeOf(outer).begin(),
                                   shapeOf(outer).end());
    if (flattened)
      viewShape = {space[0]};
    Value base = slabView(outer, viewShape.size(), viewShape, elementOf(outer));
    auto [view, map] = subviewFor(base, dims);
    if (isReduce) {
      Type et = elementOf(outer);
      Value init;
      if (isa<ReduceSumOp>(def))
        init = isa<FloatType>(et)
                   ? fconst(b, loc, et, 0.0)
                   : b.create<arith::ConstantIntOp>(loc, 0, et).getResult();
      else
        init = isa<FloatType>(et)
                   ? fconst(b, loc, et, -INFINITY)
                   : b.create<arith::ConstantIntOp>(
                          loc, std::numeric_limits<int64_t>::min(), et)
                         .getResult();
      b.create<linalg::FillOp>(loc, ValueRange{init}, ValueRange{view});
    }
    outputs.push_back(view);
    maps.push_back(map);
    reduceOfOutput.push_back(isReduce ? def : nullptr);
  }

  SmallVector<utils::IteratorType> iterators;
  for (bool r : isReductionDim)
    iterators.push_back(r ? utils::IteratorType::reduction
                          : utils::IteratorType::parallel);
  // An output that keeps reduction dims (an exported elementwise value of
  // a reduction kernel) makes every dimension "parallel" to linalg; the
  // loops are the same either way.
  for (auto [j, red] : llvm::enumerate(reduceOfOutput))
    if (!red && anyReduce)
      for (auto &it : iterators)
        it = utils::IteratorType::parallel;

  spanEveryDimension(inputs, maps);
  size_t numInputs = inputs.size();
  LogicalResult status = success();
  b.create<linalg::GenericOp>(
      loc, TypeRange{}, inputs, outputs, maps, iterators,
      [&](OpBuilder &bb, Location l, ValueRange args) {
        auto load = [&](unsigned readIndex, Type et) {
          return fromStorage(bb, l, args[readIndex], et);
        };
        DenseMap<Value, Value> scalar;
        status = computeMembers(
            bb, l, [](Operation *) { return true; },
            [&](Operation *op, unsigned i) {
              return load(readOfOperand[{op, i}], elementOf(op->getOperand(i)));
            },
            *tables, scalar);
        if (failed(status)) {
          bb.create<linalg::YieldOp>(l, ValueRange{});
          return;
        }
        SmallVector<Value> yielded;
        for (auto [j, v] : llvm::enumerate(yield->getOperands())) {
          Value s = readOfYield.count(j) ? load(readOfYield[j], elementOf(v))
                                         : scalar[v];
          s = combine(bb, l, reduceOfOutput[j], args[numInputs + j], s);
          yielded.push_back(toStorage(bb, l, s));
        }
        bb.create<linalg::YieldOp>(l, yielded);
      });
  return status;
}

std::string KernelBuilder::label() const {
  // The region's name and the kinds of op it holds, for profiles.
  std::string name = src.name;
  // (A causal mask computed beside a softmax is left out: the softmax's
  // ops name it.)
  llvm::SmallSetVector<StringRef, 4> kinds;
  for (Operation &op : src.body->without_terminator())
    if (!isa<ConstantOp, CausalMaskOp>(op))
      kinds.insert(op.getName().stripDialect());
  if (kinds.empty())
    for (Operation &op : src.body->without_terminator())
      if (!isa<ConstantOp>(op))
        kinds.insert(op.getName().stripDialect());
  for (StringRef kind : kinds) {
    if (name.size() > 48)
      return name + "_etc";
    name += "_" + kind.str();
  }
  return name;
}

FailureOr<EmittedKernel> KernelBuilder::emit() {
  EmittedKernel k;
  k.name = label();
  if (src.kind == "special") {
    beginFunction();
    if (failed(emitSpecial()))
      return failure();
  } else {
    if (failed(analyze()))
      return failure();
    beginFunction();
    if (failed(numPhases > 1 ? emitPhased() : emitGeneric()))
      return failure();
  }
  finishFunction();
  k.symbol = ("_mlir_ciface_" + fn.getName()).str();
  k.entry = fn;
  k.body = bodyFn;
  k.args = launchArgs;
  k.bytes = bytesMoved();
  if (src.kind == "special") {
    for (const KernelOperand &o :
         llvm::concat<const KernelOperand>(src.inputs, src.results))
      k.elements = std::max(k.elements, o.type.getNumElements());
  } else {
    for (int64_t d : space)
      k.elements *= d;
  }
  // The range split over threads: embedding_grad's columns, or the split
  // dimension of the iteration space; 1 when the kernel is not split.
  if (splitDim < 0)
    k.extent = 1;
  else if (src.kind == "special")
    k.extent = shapeOf(src.results[0])[splitDim];
  else
    k.extent = space[splitDim];
  return k;
}

} // namespace sinter::codegen::detail

FailureOr<EmittedKernel>
sinter::codegen::emitKernel(const KernelSource &source, ModuleOp kernels,
                            StringRef symbol,
                            const analysis::KernelLimits &limits) {
  return detail::KernelBuilder(source, kernels, symbol, limits).emit();
}
