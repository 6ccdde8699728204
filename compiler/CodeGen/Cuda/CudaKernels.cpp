//===- CudaKernels.cpp - one fused region to one CUDA kernel -------------===//
//
// The CUDA form of a kernel, from the same analysis as the CPU's
// (KernelBuilder: the iteration space, how each input is read through its
// views, the row phases) and the same scalar code (ScalarOps.h), so both
// targets compute every element with the same operations. What differs is
// who runs which element:
//
//   - elementwise (loop) kernels: a grid-stride loop over the elements in
//     row-major order, 256 threads a block, so neighbouring threads touch
//     neighbouring elements of every buffer read with identity indexing;
//   - reduction and row-phased kernels (a softmax, a layer norm, a
//     cross-entropy and their gradients): one block per row (the parallel
//     dimensions), its threads strided over the row's elements. Each phase
//     accumulates a partial per thread, then a `gpu.all_reduce` (warp
//     shuffles, then one shared-memory step across the warps) gives every
//     thread the row's result, which later phases read as a scalar. A
//     thread keeps the values of its first few elements of the row (its
//     slots, --cuda-row-slots) in registers from phase to phase; a strided
//     loop over the rest of the row (empty on the GPU unless the row is
//     longer than the slots cover) recomputes the earlier phases'
//     elementwise values from the inputs; thread 0 writes the per-row
//     results;
//   - special kernels (argmax, pads, embedding_grad, concats):
//     CudaSpecialKernels.cpp.
//
// The function has the CUDA kernel signature: one memref<?xi8> per slab
// (device pointers; MLIR's descriptor is five kernel parameters), then the
// launch's words as i64 values (each place's byte offset, then each
// dropout key), which the runtime passes to cuLaunchKernel as they are.
// `sched.cuda_grid` and `sched.cuda_block` give the launch's shape.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/KernelBuilder.h"
#include "compiler/CodeGen/Cpu/ScalarOps.h"
#include "compiler/CodeGen/Cuda/CudaIndexing.h"
#include "compiler/CodeGen/Cuda/Passes.h"
#include "dialects/Schedule/ScheduleOps.h"
#include "passes/StepPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <limits>

namespace sinter::codegen::detail {

namespace {

/// A row kernel's iteration space split: the kept dimensions (the rows)
/// and the reduced ones (a row's elements), their sizes and counts.
struct RowSplit {
  SmallVector<int64_t> rowDims, elemDims, rowSizes, elemSizes;
  int64_t rows = 1, elems = 1;
  /// The index of the space from a row's and an element's.
  SmallVector<Value> index(ArrayRef<Value> rowIndex, ArrayRef<Value> elemIndex,
                           size_t rank) const {
    SmallVector<Value> out(rank);
    for (auto [k, p] : llvm::enumerate(rowDims))
      out[p] = rowIndex[k];
    for (auto [k, p] : llvm::enumerate(elemDims))
      out[p] = elemIndex[k];
    return out;
  }
};

RowSplit splitRows(ArrayRef<int64_t> space, ArrayRef<bool> reduced) {
  RowSplit split;
  for (auto [p, size] : llvm::enumerate(space)) {
    if (reduced[p]) {
      split.elemDims.push_back(p);
      split.elemSizes.push_back(size);
      split.elems *= size;
    } else {
      split.rowDims.push_back(p);
      split.rowSizes.push_back(size);
      split.rows *= size;
    }
  }
  return split;
}

bool isReduce(Operation *op) { return isa<ReduceSumOp, ReduceMaxOp>(op); }

} // namespace

std::pair<Value, Value> KernelBuilder::globalThread() {
  // Strides from the launch (not constants), so the kernel is right for any
  // grid and block, one thread of one block included (the emulation on the
  // host, EmulateCudaKernels.cpp).
  Location loc = src.op->getLoc();
  Value tid = b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x);
  Value bid = b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x);
  Value threads = b.create<gpu::BlockDimOp>(loc, gpu::Dimension::x);
  Value blocks = b.create<gpu::GridDimOp>(loc, gpu::Dimension::x);
  Value first = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, bid, threads), tid);
  return {first, b.create<arith::MulIOp>(loc, blocks, threads)};
}

void KernelBuilder::beginCudaFunction(int64_t block) {
  Location loc = src.op->getLoc();
  collectPlaces();
  auto slabType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
  SmallVector<Type> args(abi::kNumSlabs, slabType);
  args.append(places.size() + dropouts.size(), b.getI64Type());
  b.setInsertionPointToEnd(kernels.getBody());
  fn = b.create<func::FuncOp>(loc, symbol, b.getFunctionType(args, {}));
  bodyFn = fn;
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  for (auto [i, p] : llvm::enumerate(places)) {
    Value shift = b.create<arith::IndexCastOp>(
        loc, b.getIndexType(), entry->getArgument(abi::kNumSlabs + i));
    launchArgs.push_back(p.offset);
    p.arg = b.create<memref::ViewOp>(
        loc, slabType, entry->getArgument(p.slab), shift,
        ValueRange{constIndex(b, loc, p.bytes)});
  }
  for (auto [i, op] : llvm::enumerate(dropouts)) {
    dropoutKeys[op] = entry->getArgument(abi::kNumSlabs + places.size() + i);
    launchArgs.push_back(static_cast<int64_t>(dropoutKeyOf(op)));
  }
  fn->setAttr(sched::kKernelArgsAttr, b.getI64IntegerAttr(launchArgs.size()));
  cudaBlock = block;
}

Value KernelBuilder::typedView(OpBuilder &bb, Location l,
                               const KernelOperand &outer,
                               ArrayRef<int64_t> shape) {
  auto it = llvm::find_if(places, [&](const PlaceInfo &p) {
    return p.slab == outer.place.slab && p.offset == outer.place.offset;
  });
  assert(it != places.end() && "a value of the region has no place");
  auto type = MemRefType::get(shape, storageType(elementOf(outer)));
  return bb.create<memref::ViewOp>(l, type, it->arg, constIndex(bb, l, 0),
                                   ValueRange{});
}

Value KernelBuilder::cudaLoad(OpBuilder &bb, Location l, const Read &r,
                              Type et) {
  const KernelOperand &outer = src.inputs[r.input];
  SmallVector<int64_t> shape(shapeOf(outer));
  if (flattened && !r.dims.empty())
    shape = {space[0]};
  Value view = typedView(bb, l, outer, shape);
  SmallVector<Value> at;
  for (const Dim &d : r.dims) {
    if (d.iter < 0) {
      at.push_back(constIndex(bb, l, d.offset));
      continue;
    }
    Value i = cudaIndex[d.iter];
    if (d.scale != 1)
      i = bb.create<arith::MulIOp>(l, i, constIndex(bb, l, d.scale));
    if (d.offset)
      i = bb.create<arith::AddIOp>(l, i, constIndex(bb, l, d.offset));
    at.push_back(i);
  }
  return fromStorage(bb, l, bb.create<memref::LoadOp>(l, view, at), et);
}

Value KernelBuilder::cudaRead(Operation *op, unsigned i) {
  return cudaLoad(b, src.op->getLoc(), reads[readOfOperand[{op, i}]],
                  elementOf(op->getOperand(i)));
}

void KernelBuilder::cudaStore(OpBuilder &bb, Location l,
                              const KernelOperand &outer, ArrayRef<Dim> dims,
                              Value scalar) {
  SmallVector<int64_t> shape(shapeOf(outer));
  if (flattened)
    shape = {space[0]};
  Value view = typedView(bb, l, outer, shape);
  SmallVector<Value> at;
  for (const Dim &d : dims)
    at.push_back(d.iter < 0 ? constIndex(bb, l, d.offset) : cudaIndex[d.iter]);
  bb.create<memref::StoreOp>(l, toStorage(bb, l, scalar), view, at);
}

LogicalResult KernelBuilder::emitCudaElementwise() {
  Location loc = src.op->getLoc();
  Operation *yield = src.body->getTerminator();
  int64_t total = 1;
  for (int64_t d : space)
    total *= d;
  cudaGrid = std::clamp<int64_t>((total + cudaBlock - 1) / cudaBlock, 1,
                                 kMaxBlocks);
  FailureOr<DenseMap<Operation *, Value>> tables = indexTables();
  if (failed(tables))
    return failure();
  auto [first, stride] = globalThread();
  auto loop = b.create<scf::ForOp>(loc, first, constIndex(b, loc, total),
                                   stride);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  cudaIndex = delinearize(b, loc, loop.getInductionVar(), space);
  DenseMap<Value, Value> scalar;
  if (failed(computeMembers(
          b, loc, [](Operation *) { return true; },
          [&](Operation *op, unsigned i) {
            return cudaLoad(b, loc, reads[readOfOperand[{op, i}]],
                            elementOf(op->getOperand(i)));
          },
          *tables, scalar)))
    return failure();
  SmallVector<Dim> identity = identityDims(space.size());
  for (auto [j, v] : llvm::enumerate(yield->getOperands())) {
    if (v.getDefiningOp<ConstantOp>())
      return src.op->emitOpError("yields a constant");
    Value s = readOfYield.count(j)
                  ? cudaLoad(b, loc, reads[readOfYield[j]], elementOf(v))
                  : scalar[v];
    cudaStore(b, loc, src.results[j], identity, s);
  }
  cudaIndex.clear();
  b.setInsertionPointAfter(loop);
  fillPadding(first, stride);
  return success();
}

void KernelBuilder::fillPadding(Value first, Value stride) {
  Location loc = src.op->getLoc();
  for (auto [j, v] :
       llvm::enumerate(src.body->getTerminator()->getOperands())) {
    auto pad = v.getDefiningOp<PadOp>();
    if (!pad || !paddedOutput(pad))
      continue;
    // The padding's elements, row-major: each row of the space's leading
    // dimensions, then the padded tail of its last.
    int64_t extra = shapeOf(v).back() - space.back();
    int64_t rows = 1;
    for (int64_t d : ArrayRef<int64_t>(space).drop_back())
      rows *= d;
    auto loop = b.create<scf::ForOp>(loc, first,
                                     constIndex(b, loc, rows * extra), stride);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(loop.getBody());
    Value p = loop.getInductionVar();
    Value width = constIndex(b, loc, extra);
    cudaIndex = delinearize(b, loc, b.create<arith::DivUIOp>(loc, p, width),
                            ArrayRef<int64_t>(space).drop_back());
    cudaIndex.push_back(
        b.create<arith::AddIOp>(loc, constIndex(b, loc, space.back()),
                                b.create<arith::RemUIOp>(loc, p, width)));
    cudaStore(b, loc, src.results[j], identityDims(space.size()),
              paddingOf(b, loc, pad));
  }
  cudaIndex.clear();
}

LogicalResult KernelBuilder::storeRowResults(
    const DenseMap<Value, Value> &totals,
    function_ref<Value(Operation *, unsigned)> read,
    const DenseMap<Operation *, Value> &tables) {
  Location loc = src.op->getLoc();
  Operation *yield = src.body->getTerminator();
  auto fullSpace = [&](Value v) {
    return shapeOf(v) == ArrayRef<int64_t>(space);
  };
  DenseMap<Value, Value> scalar(totals);
  if (failed(computeMembers(
          b, loc,
          [&](Operation *op) {
            return !isReduce(op) && !fullSpace(op->getResult(0));
          },
          read, tables, scalar)))
    return failure();
  for (auto [j, v] : llvm::enumerate(yield->getOperands())) {
    Operation *def = v.getDefiningOp();
    // (A reduction's result is a row result whatever its shape: one over
    // dimensions of size 1, a batch of 1, keeps the space's shape.)
    if (readOfYield.count(j) || !def || (fullSpace(v) && !isReduce(def)) ||
        paddedOutput(def))
      continue;
    if (def->getBlock() != src.body || !phaseOf.count(def))
      return src.op->emitOpError("yields a value no member computes");
    SmallVector<Dim> dims;
    bool keep = !isReduce(def) ||
                (def->getAttrOfType<BoolAttr>("keepdims") &&
                 def->getAttrOfType<BoolAttr>("keepdims").getValue());
    for (size_t p = 0; p < space.size(); ++p) {
      if (!isReductionDim[p])
        dims.push_back(Dim{(int)p, 1, 0});
      else if (keep)
        dims.push_back(Dim{-1, 0, 0});
    }
    cudaStore(b, loc, src.results[j], dims, scalar[v]);
  }
  return success();
}

void KernelBuilder::storeElementwise(int phase,
                                     DenseMap<Value, Value> &scalar) {
  Location loc = src.op->getLoc();
  Operation *yield = src.body->getTerminator();
  SmallVector<Dim> identity = identityDims(space.size());
  for (auto [j, v] : llvm::enumerate(yield->getOperands())) {
    Operation *def = v.getDefiningOp();
    if (readOfYield.count(j)) {
      if (phase == 0)
        cudaStore(b, loc, src.results[j], identity,
                  cudaLoad(b, loc, reads[readOfYield[j]], elementOf(v)));
      continue;
    }
    if (!def || isReduce(def) ||
        (shapeOf(v) != ArrayRef<int64_t>(space) && !paddedOutput(def)) ||
        phaseOf.lookup(def) != phase)
      continue;
    cudaStore(b, loc, src.results[j], identity, scalar[v]);
  }
}

void KernelBuilder::storeIf(Value valid, function_ref<void()> store) {
  Location loc = src.op->getLoc();
  if (!valid)
    return store();
  auto ifValid = b.create<scf::IfOp>(loc, valid, /*withElse=*/false);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(&ifValid.getThenRegion().front());
    store();
  }
  if (ifValid.getThenRegion().front().getOperations().size() == 1)
    ifValid.erase();
}

Value KernelBuilder::accumulateIf(Value valid, Operation *reduce, Value acc,
                                  Value v) {
  Location loc = src.op->getLoc();
  Value next = combine(b, loc, reduce, acc, v);
  return valid ? b.create<arith::SelectOp>(loc, valid, next, acc).getResult()
               : next;
}

LogicalResult KernelBuilder::emitLanes(
    Value first, Value stride, int64_t lanes, Value elems,
    ArrayRef<int64_t> elemSizes,
    function_ref<SmallVector<Value>(ArrayRef<Value>)> indexOf,
    function_ref<bool(Operation *)> wanted,
    const DenseMap<Value, Value> &totals,
    const DenseMap<Operation *, Value> &tables,
    function_ref<void(DenseMap<Value, Value> &)> store,
    ArrayRef<Operation *> reduces, MutableArrayRef<Value> acc) {
  Location loc = src.op->getLoc();
  auto read = [&](Operation *op, unsigned i) { return cudaRead(op, i); };
  for (int64_t j = 0; j < lanes; ++j) {
    // (The first lane is in the row: the loop's bound says so.)
    Value e = first, valid;
    if (j > 0) {
      e = b.create<arith::AddIOp>(
          loc, e, b.create<arith::MulIOp>(loc, stride, constIndex(b, loc, j)));
      valid = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, e, elems);
      e = b.create<arith::SelectOp>(loc, valid, e, constIndex(b, loc, 0));
    }
    cudaIndex = indexOf(delinearize(b, loc, e, elemSizes));
    DenseMap<Value, Value> scalar(totals);
    if (failed(computeMembers(b, loc, wanted, read, tables, scalar)))
      return failure();
    storeIf(valid, [&] { store(scalar); });
    for (auto [k, op] : llvm::enumerate(reduces))
      acc[k] = accumulateIf(valid, op, acc[k], scalar[op->getResult(0)]);
  }
  return success();
}

LogicalResult KernelBuilder::emitCudaRows() {
  Location loc = src.op->getLoc();
  RowSplit split = splitRows(space, isReductionDim);
  const SmallVector<int64_t> &elemDims = split.elemDims,
                             &rowSizes = split.rowSizes,
                             &elemSizes = split.elemSizes;
  const int64_t rows = split.rows, elems = split.elems;
  // A warp's multiple up to kThreads: short rows leave no warp idle.
  cudaBlock = std::min<int64_t>(kThreads, (elems + 31) / 32 * 32);
  cudaGrid = std::clamp<int64_t>(rows, 1, kMaxBlocks);
  FailureOr<DenseMap<Operation *, Value>> tables = indexTables();
  if (failed(tables))
    return failure();

  Value tid = b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x);
  Value bid = b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x);
  Value threads = b.create<gpu::BlockDimOp>(loc, gpu::Dimension::x);
  auto rowLoop = b.create<scf::ForOp>(
      loc, bid, constIndex(b, loc, rows),
      b.create<gpu::GridDimOp>(loc, gpu::Dimension::x));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(rowLoop.getBody());
  SmallVector<Value> rowIndex =
      delinearize(b, loc, rowLoop.getInductionVar(), rowSizes);
  auto indexOf = [&](ArrayRef<Value> elemIndex) {
    return split.index(rowIndex, elemIndex, space.size());
  };
  auto read = [&](Operation *op, unsigned i) { return cudaRead(op, i); };

  // Under a causal mask whose masked part is known (causalRows), a row
  // is read and computed up to its diagonal only: `limit` elements, where
  // every bound below would otherwise be the row's length; the rest of the
  // row is filled after the phases.
  Value elemsValue = constIndex(b, loc, elems);
  Value limit = elemsValue;
  causal = causalRows();
  if (causal) {
    auto at = llvm::find(split.rowDims, causal->rowDim);
    Value query = rowIndex[at - split.rowDims.begin()];
    limit = b.create<arith::AddIOp>(loc, query, constIndex(b, loc, 1));
    fn->setAttr("sched.causal_rows", b.getUnitAttr());
  }

  // A row of at most cudaRowSlots x cudaBlock elements is kept: a thread's
  // elements tid + k * threads for k < slots (its slots) are each computed
  // once, in the phase that first needs them, and kept (registers:
  // straight-line SSA values) for the later phases, which then read no
  // memory for them. An index past the row loads element 0 instead, and
  // its value neither enters a reduction nor is stored. The elements past
  // the slots (none on the GPU; all but the first `slots` on the host's
  // one thread, which so runs both paths) go through a strided loop that
  // recomputes earlier phases from memory.
  //
  // A longer row (a cross-entropy over 50264 words) keeps nothing: the
  // few elements slots could hold would save little and their registers
  // would cost the loop's (GPT-2's: 40 -> 151 a thread). Its loop instead
  // takes cudaRowSlots elements an iteration, independent loads that are
  // in flight together, those past the row guarded as slots are.
  const int64_t perThread = (elems + cudaBlock - 1) / cudaBlock;
  const bool kept = perThread <= limits.cudaRowSlots;
  const int64_t slots = kept ? perThread : 0;
  const int64_t lanes = kept ? 1 : std::max<int64_t>(limits.cudaRowSlots, 1);
  struct Slot {
    Value valid;
    SmallVector<Value> index;
    DenseMap<Value, Value> scalar;
    DenseMap<std::pair<int, Type>, Value> loads;
  };
  SmallVector<Slot> slot(slots);
  for (int64_t k = 0; k < slots; ++k) {
    Value e = b.create<arith::AddIOp>(
        loc, tid, b.create<arith::MulIOp>(loc, threads, constIndex(b, loc, k)));
    slot[k].valid =
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, e, limit);
    Value at = b.create<arith::SelectOp>(loc, slot[k].valid, e,
                                         constIndex(b, loc, 0));
    slot[k].index = indexOf(delinearize(b, loc, at, elemSizes));
  }
  // Where the loop over the rest of the row starts, and its stride.
  auto times = [&](int64_t n) -> Value {
    return n == 1 ? threads
                  : b.create<arith::MulIOp>(loc, threads, constIndex(b, loc, n))
                        .getResult();
  };
  Value rest = slots == 0 ? tid
                          : b.create<arith::AddIOp>(loc, tid, times(slots))
                                .getResult();
  Value stride = times(lanes);

  // The row's result of each reduction, once its phase is done.
  DenseMap<Value, Value> totals;
  for (int phase = 0; phase < numPhases; ++phase) {
    SmallVector<Operation *> reduces;
    SmallVector<Value> inits;
    for (Operation *op : members) {
      if (!isReduce(op) || phaseOf.lookup(op) != phase)
        continue;
      reduces.push_back(op);
      Type et = elementOf(op->getResult(0));
      if (isa<ReduceSumOp>(op))
        inits.push_back(isa<FloatType>(et)
                            ? fconst(b, loc, et, 0.0)
                            : b.create<arith::ConstantIntOp>(loc, 0, et)
                                  .getResult());
      else
        inits.push_back(
            isa<FloatType>(et)
                ? fconst(b, loc, et, -INFINITY)
                : b.create<arith::ConstantIntOp>(
                       loc, std::numeric_limits<int64_t>::min(), et)
                      .getResult());
    }

    SmallVector<Value> partials(inits);
    for (Slot &own : slot) {
      cudaIndex = own.index;
      for (auto &[result, total] : totals)
        own.scalar[result] = total;
      auto slotRead = [&](Operation *op, unsigned i) {
        Type et = elementOf(op->getOperand(i));
        Value &load = own.loads[{readOfOperand[{op, i}], et}];
        if (!load)
          load = cudaRead(op, i);
        return load;
      };
      if (failed(computeMembers(
              b, loc,
              [&](Operation *op) { return phaseOf.lookup(op) == phase; },
              slotRead, *tables, own.scalar)))
        return failure();
      storeIf(own.valid, [&] { storeElementwise(phase, own.scalar); });
      for (auto [k, op] : llvm::enumerate(reduces))
        partials[k] = accumulateIf(own.valid, op, partials[k],
                                   own.scalar[op->getResult(0)]);
    }

    // The rest of the row, `lanes` elements an iteration. (Where the row
    // is kept the loop never runs on the GPU, and one an iteration: more
    // would hold registers beside the slots' values, GPT-2's softmax
    // 48 -> 123.)
    auto loop = b.create<scf::ForOp>(loc, rest, limit, stride, partials);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> acc(loop.getRegionIterArgs());
      if (failed(emitLanes(
              loop.getInductionVar(), threads, lanes, limit, elemSizes, indexOf,
              [&](Operation *op) {
                int p = phaseOf.lookup(op);
                return p <= phase && !(isReduce(op) && p < phase);
              },
              totals, *tables,
              // Elementwise results of this phase go out as computed.
              [&](DenseMap<Value, Value> &scalar) {
                storeElementwise(phase, scalar);
              },
              reduces, acc)))
        return failure();
      // (Without reductions the loop has its empty yield already.)
      if (!acc.empty())
        b.create<scf::YieldOp>(loc, acc);
    }
    for (auto [k, op] : llvm::enumerate(reduces)) {
      bool isFloat = isa<FloatType>(elementOf(op->getResult(0)));
      gpu::AllReduceOperation kind =
          isa<ReduceSumOp>(op) ? gpu::AllReduceOperation::ADD
          : isFloat            ? gpu::AllReduceOperation::MAXIMUMF
                               : gpu::AllReduceOperation::MAXSI;
      totals[op->getResult(0)] = b.create<gpu::AllReduceOp>(
          loc, loop.getResult(k),
          gpu::AllReduceOperationAttr::get(ctx, kind), /*uniform=*/true);
    }
  }

  // Stores the block's threads make side by side, as in the phases, to
  // elements [from, to) of the row (its only reduced dimension) that the
  // phases did not compute: `value` for output j.
  auto fillRow = [&](Value from, Value to, unsigned j, Value value) {
    auto fill = b.create<scf::ForOp>(
        loc, b.create<arith::AddIOp>(loc, from, tid), to, threads);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(fill.getBody());
    cudaIndex = indexOf({fill.getInductionVar()});
    cudaStore(b, loc, src.results[j], identityDims(space.size()), value);
  };
  Operation *yield = src.body->getTerminator();
  // Past the diagonal, the outputs' known values.
  if (causal)
    for (auto [j, value] : causal->fill)
      fillRow(limit, elemsValue, j,
              fconst(b, loc, elementOf(yield->getOperand(j)), value));
  // A padded output's padding: the row's elements past the space's.
  for (auto [j, v] : llvm::enumerate(yield->getOperands()))
    if (auto pad = v.getDefiningOp<PadOp>(); pad && paddedOutput(pad))
      fillRow(elemsValue, constIndex(b, loc, shapeOf(v).back()), j,
              paddingOf(b, loc, pad));

  // Thread 0 writes the per-row results: the reductions' and the row ops'
  // (a layer norm's 1/sqrt(var + eps)), computed from the totals.
  Value isFirst = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, tid,
                                          constIndex(b, loc, 0));
  auto ifFirst = b.create<scf::IfOp>(loc, isFirst, /*withElse=*/false);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    SmallVector<Value> zeros(elemDims.size(), constIndex(b, loc, 0));
    cudaIndex = indexOf(zeros);
    if (failed(storeRowResults(totals, read, *tables)))
      return failure();
  }
  // The next row's all-reduces reuse this row's shared memory.
  b.create<gpu::BarrierOp>(loc);
  cudaIndex.clear();
  return success();
}

bool KernelBuilder::columnsFit() {
  // One phase (no value of the row is needed before the row's totals), a
  // kept innermost dimension at least a warp wide, and f32 totals (the
  // block's partials sit in one f32 array).
  if (numPhases != 1 || space.empty() || isReductionDim.back() ||
      space.back() < 32)
    return false;
  for (Operation *op : members)
    if (isReduce(op) && !elementOf(op->getResult(0)).isF32())
      return false;
  return true;
}

LogicalResult KernelBuilder::emitCudaColumns() {
  Location loc = src.op->getLoc();
  RowSplit split = splitRows(space, isReductionDim);
  const SmallVector<int64_t> &elemDims = split.elemDims,
                             &rowSizes = split.rowSizes,
                             &elemSizes = split.elemSizes;
  const int64_t rows = split.rows, elems = split.elems;
  SmallVector<Operation *> reduces;
  for (Operation *op : members)
    if (isReduce(op))
      reduces.push_back(op);
  FailureOr<DenseMap<Operation *, Value>> tables = indexTables();
  if (failed(tables))
    return failure();

  // The block: L lanes (a warp; fewer only in a smaller block) side by
  // side over L neighbouring rows, W = threads / L of them down the
  // reduced elements. From the launch, like every stride here.
  cudaBlock = kThreads;
  int64_t groups = (rows + 31) / 32;
  cudaGrid = std::clamp<int64_t>(groups, 1, kMaxBlocks);
  Type f32 = b.getF32Type();
  auto shared = b.create<memref::AllocaOp>(
      loc, MemRefType::get({kThreads * (int64_t)reduces.size()}, f32,
                           MemRefLayoutAttrInterface(),
                           gpu::AddressSpaceAttr::get(
                               ctx, gpu::AddressSpace::Workgroup)));
  shared->setAttr(kWorkgroupAttr, b.getUnitAttr());
  Value tid = b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x);
  Value bid = b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x);
  Value threads = b.create<gpu::BlockDimOp>(loc, gpu::Dimension::x);
  Value lanes = b.create<arith::MinUIOp>(loc, threads, constIndex(b, loc, 32));
  Value down = b.create<arith::DivUIOp>(loc, threads, lanes);
  Value lane = b.create<arith::RemUIOp>(loc, tid, lanes);
  Value wave = b.create<arith::DivUIOp>(loc, tid, lanes);
  Value rowsValue = constIndex(b, loc, rows);
  Value numGroups = b.create<arith::DivUIOp>(
      loc,
      b.create<arith::SubIOp>(
          loc, b.create<arith::AddIOp>(loc, rowsValue, lanes),
          constIndex(b, loc, 1)),
      lanes);
  auto groupLoop = b.create<scf::ForOp>(
      loc, bid, numGroups, b.create<gpu::GridDimOp>(loc, gpu::Dimension::x));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(groupLoop.getBody());
  Value row = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, groupLoop.getInductionVar(), lanes),
      lane);
  Value active =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, row, rowsValue);
  SmallVector<Value> rowIndex = delinearize(b, loc, row, rowSizes);
  auto indexOf = [&](ArrayRef<Value> elemIndex) {
    return split.index(rowIndex, elemIndex, space.size());
  };
  auto read = [&](Operation *op, unsigned i) { return cudaRead(op, i); };
  SmallVector<Value> inits;
  for (Operation *op : reduces)
    inits.push_back(fconst(b, loc, f32, isa<ReduceSumOp>(op) ? 0.0 : -INFINITY));

  // This thread's partials: its row's elements wave, wave + W, ...; the
  // elementwise results go out as they are computed.
  auto ifActive = b.create<scf::IfOp>(loc, TypeRange(ValueRange(inits)),
                                      active, /*withElse=*/true);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(&ifActive.getElseRegion().front());
    b.create<scf::YieldOp>(loc, inits);
    b.setInsertionPointToStart(&ifActive.getThenRegion().front());
    // `lanes` rows an iteration, as a long row kernel's: independent
    // loads, the same order of the sums.
    const int64_t lanes = std::max<int64_t>(limits.cudaRowSlots, 1);
    Value stride =
        lanes == 1 ? down
                   : b.create<arith::MulIOp>(loc, down,
                                             constIndex(b, loc, lanes))
                         .getResult();
    auto loop = b.create<scf::ForOp>(loc, wave, constIndex(b, loc, elems),
                                     stride, inits);
    {
      OpBuilder::InsertionGuard body(b);
      b.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> acc(loop.getRegionIterArgs());
      // (One phase: every elementwise result is phase 0's.)
      auto store = [&](DenseMap<Value, Value> &scalar) {
        storeElementwise(0, scalar);
      };
      DenseMap<Value, Value> noTotals;
      if (failed(emitLanes(
              loop.getInductionVar(), down, lanes, constIndex(b, loc, elems),
              elemSizes, indexOf, [](Operation *) { return true; }, noTotals,
              *tables, store, reduces, acc)))
        return failure();
      b.create<scf::YieldOp>(loc, acc);
    }
    b.create<scf::YieldOp>(loc, loop.getResults());
  }
  // The partials to the block's array, [reduction][wave][lane].
  Value slot = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, wave, lanes), lane);
  for (auto [k, partial] : llvm::enumerate(ifActive.getResults()))
    b.create<memref::StoreOp>(
        loc, partial, shared,
        ValueRange{b.create<arith::AddIOp>(
            loc, slot, constIndex(b, loc, (int64_t)k * kThreads))});
  b.create<gpu::BarrierOp>(loc);

  // The first wave's threads total their row's partials in wave order
  // (the same order every run) and write the per-row results.
  Value first = b.create<arith::AndIOp>(
      loc, active,
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, wave,
                              constIndex(b, loc, 0)));
  auto ifFirst = b.create<scf::IfOp>(loc, first, /*withElse=*/false);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    DenseMap<Value, Value> totals;
    for (auto [k, op] : llvm::enumerate(reduces)) {
      Value base = b.create<arith::AddIOp>(
          loc, lane, constIndex(b, loc, (int64_t)k * kThreads));
      auto sum = b.create<scf::ForOp>(loc, constIndex(b, loc, 0), down,
                                      constIndex(b, loc, 1),
                                      ValueRange{inits[k]});
      {
        OpBuilder::InsertionGuard body(b);
        b.setInsertionPointToStart(sum.getBody());
        Value at = b.create<arith::AddIOp>(
            loc, base,
            b.create<arith::MulIOp>(loc, sum.getInductionVar(), lanes));
        Value partial = b.create<memref::LoadOp>(loc, shared, ValueRange{at});
        b.create<scf::YieldOp>(
            loc, combine(b, loc, op, sum.getRegionIterArg(0), partial));
      }
      totals[op->getResult(0)] = sum.getResult(0);
    }
    SmallVector<Value> zeros(elemDims.size(), constIndex(b, loc, 0));
    cudaIndex = indexOf(zeros);
    if (failed(storeRowResults(totals, read, *tables)))
      return failure();
  }
  // The next group's partials reuse the array.
  b.create<gpu::BarrierOp>(loc);
  cudaIndex.clear();
  return success();
}

FailureOr<EmittedKernel> KernelBuilder::emitCuda() {
  cuda = true;
  EmittedKernel k;
  k.name = label();
  if (src.kind == "special") {
    beginCudaFunction(kThreads / 2);
    auto eg = dyn_cast_or_null<EmbeddingGradOp>(
        src.body->getTerminator()->getOperand(0).getDefiningOp());
    if (failed(eg ? emitCudaEmbeddingGrad(eg) : emitCudaSpecial()))
      return failure();
  } else {
    if (failed(analyze()))
      return failure();
    beginCudaFunction(kThreads);
    if (failed(!anyReduce       ? emitCudaElementwise()
               : columnsFit()   ? emitCudaColumns()
                                : emitCudaRows()))
      return failure();
  }
  b.setInsertionPointToEnd(&fn.getBody().front());
  b.create<func::ReturnOp>(src.op->getLoc());
  fn->setAttr("sched.cuda_grid", b.getI64IntegerAttr(cudaGrid));
  fn->setAttr("sched.cuda_block", b.getI64IntegerAttr(cudaBlock));
  k.symbol = fn.getName().str();
  k.entry = fn;
  k.body = fn;
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
  k.extent = cudaGrid;
  k.block = cudaBlock;
  return k;
}

} // namespace sinter::codegen::detail

mlir::FailureOr<sinter::codegen::EmittedKernel>
sinter::codegen::emitCudaKernel(const KernelSource &source,
                                mlir::ModuleOp kernels, llvm::StringRef symbol,
                                const analysis::KernelLimits &limits) {
  return detail::KernelBuilder(source, kernels, symbol, limits).emitCuda();
}
