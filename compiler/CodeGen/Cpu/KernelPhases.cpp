//===- KernelPhases.cpp - row-phased kernel bodies -----------------------===//
//
// A region whose members read a reduction result of the region (the row
// phases of FuseKernels: a softmax, a layer norm) becomes one linalg.generic
// per phase inside loops over chunks of rows; see emitPhased.
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
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <functional>

namespace sinter::codegen::detail {

void KernelBuilder::assignPhases() {
  for (Operation *op : members) {
    int phase = 0;
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      auto it = def ? phaseOf.find(def) : phaseOf.end();
      if (it == phaseOf.end())
        continue;
      phase = std::max(phase, it->second +
                                  (isa<ReduceSumOp, ReduceMaxOp>(def) ? 1 : 0));
    }
    phaseOf[op] = phase;
    numPhases = std::max(numPhases, phase + 1);
  }
}

/// Causal rows compute a row's columns in multiples of this many.
constexpr int64_t kCausalColumns = 64;

// A row-phased kernel (a softmax: max, then the sum of exponentials, then
// the normalized values; a layer norm: mean, variance, normalized rows)
// runs its phases one after another over one chunk of rows at a time
// (analysis::chunkDimensions: the split dimension one index per step, and
// further outer dimensions while a chunk is big). Later phases re-read the
// chunk's inputs from cache, read earlier phases' per-row results (and any
// value an earlier phase already wrote) from their buffers, and recompute
// the rest.
LogicalResult KernelBuilder::emitPhased() {
  Location loc = src.op->getLoc();
  FailureOr<DenseMap<Operation *, Value>> tables = indexTables();
  if (failed(tables))
    return failure();
  // The dims one chunk fixes to a single index.
  std::vector<int> fixedDims = analysis::chunkDimensions(
      std::vector<int64_t>(space.begin(), space.end()),
      std::vector<bool>(isReductionDim.begin(), isReductionDim.end()),
      splitDim, limits);
  // Causal rows (docs/CodeGen.md): a chunk is one row, each phase covers
  // its columns up to the diagonal, and the values known past it are
  // filled in.
  if (splitDim >= 0)
    causal = causalRows();
  if (causal) {
    causalColumns = kCausalColumns;
    fixedDims.assign(1, splitDim);
    for (int p = 0; p + 1 < (int)space.size(); ++p)
      if (p != splitDim)
        fixedDims.push_back(p);
  }
  // Values a later phase needs that cost more to recompute than to keep
  // (exp, erf, dropout, ...) and that no output holds: one chunk of
  // each is kept in a scratch buffer on the stack, which stays in cache
  // and never reaches memory.
  SmallVector<int64_t> chunkShape(space);
  for (int p : fixedDims)
    chunkShape[p] = 1;
  int64_t chunkElements = analysis::chunkElements(
      std::vector<int64_t>(space.begin(), space.end()), fixedDims);
  Block &body = *src.body;
  llvm::SmallPtrSet<Operation *, 8> yieldedDefs;
  for (Value v : body.getTerminator()->getOperands())
    if (Operation *def = v.getDefiningOp())
      yieldedDefs.insert(def);
  auto costly = [&](Operation *m) {
    llvm::SmallPtrSet<Operation *, 16> seen;
    std::function<bool(Operation *)> walk = [&](Operation *op) {
      if (!op || !phaseOf.count(op) || !seen.insert(op).second ||
          isa<ReduceSumOp, ReduceMaxOp>(op) ||
          (op != m && yieldedDefs.count(op)))
        return false;
      if (isCostlyElementwise(op))
        return true;
      return llvm::any_of(op->getOperands(),
                          [&](Value v) { return walk(v.getDefiningOp()); });
    };
    return walk(m);
  };
  int64_t scratchBytes = 0;
  for (Operation *m : members) {
    if (isa<ReduceSumOp, ReduceMaxOp>(m) || m->getNumResults() != 1 ||
        yieldedDefs.count(m) ||
        shapeOf(m->getResult(0)) != ArrayRef<int64_t>(space))
      continue;
    bool laterPhase = llvm::any_of(m->getUsers(), [&](Operation *user) {
      return phaseOf.lookup(user) > phaseOf.lookup(m);
    });
    Type et = storageType(elementOf(m->getResult(0)));
    int64_t bytes = chunkElements * et.getIntOrFloatBitWidth() / 8;
    if (!laterPhase || !costly(m) ||
        scratchBytes + bytes > limits.maxScratchBytes)
      continue;
    scratchBytes += bytes;
    scratch[m->getResult(0)] = b.create<memref::AllocaOp>(
        loc, MemRefType::get(chunkShape, et), b.getI64IntegerAttr(64));
  }

  OpBuilder::InsertionGuard guard(b);
  Value savedBegin = begin, savedCount = count;
  if (splitDim >= 0) {
    Value one = b.create<arith::ConstantIndexOp>(loc, 1);
    auto loop = b.create<scf::ForOp>(loc, begin, end, one);
    b.setInsertionPointToStart(loop.getBody());
    begin = loop.getInductionVar();
    count = one;
    for (int p : ArrayRef<int>(fixedDims).drop_front()) {
      auto inner = b.create<scf::ForOp>(
          loc, b.create<arith::ConstantIndexOp>(loc, 0),
          b.create<arith::ConstantIndexOp>(loc, space[p]), one);
      b.setInsertionPointToStart(inner.getBody());
      chunkIndex[p] = inner.getInductionVar();
    }
    if (causal) {
      // Columns 0..row, rounded up to a multiple of kCausalColumns (the
      // mask, still computed, gives the known values in between): LLVM
      // vectorizes a loop by 16 lanes, 4 vectors an iteration, and a
      // count that is not a multiple of 64 runs narrower remainder loops,
      // which on rows of ~100 columns cost more than they save.
      Value row =
          causal->rowDim == splitDim ? begin : chunkIndex[causal->rowDim];
      auto index = [&](int64_t v) {
        return b.create<arith::ConstantIndexOp>(loc, v);
      };
      Value rounded = b.create<arith::AndIOp>(
          loc, b.create<arith::AddIOp>(loc, row, index(kCausalColumns)),
          index(~(kCausalColumns - 1)));
      columnFrom = index(0);
      columnCount = b.create<arith::MinUIOp>(loc, rounded, index(space.back()));
    }
  }
  LogicalResult status = success();
  for (int phase = 0; phase < numPhases && succeeded(status); ++phase)
    status = emitPhase(phase, *tables);
  begin = savedBegin;
  count = savedCount;
  columnFrom = columnCount = nullptr;
  chunkIndex.clear();
  scratch.clear();
  return status;
}

LogicalResult
KernelBuilder::emitPhase(int phase,
                         const DenseMap<Operation *, Value> &tables) {
  Location loc = src.op->getLoc();
  Block &body = *src.body;
  Operation *yield = body.getTerminator();
  DenseMap<Value, unsigned> yieldIndex;
  for (auto [j, v] : llvm::enumerate(yield->getOperands()))
    yieldIndex.try_emplace(v, j);
  auto isReduce = [](Operation *op) {
    return op && isa<ReduceSumOp, ReduceMaxOp>(op);
  };

  // This phase writes the yielded values it computes, and the chunk of
  // each scratch value it computes.
  SmallVector<unsigned> outs;
  for (auto [j, v] : llvm::enumerate(yield->getOperands())) {
    Operation *def = v.getDefiningOp();
    if (readOfYield.count(j) ? phase == 0 : phaseOf.lookup(def) == phase)
      outs.push_back(j);
  }
  SmallVector<Value> spills;
  for (Operation *m : members)
    if (m->getNumResults() == 1 && scratch.count(m->getResult(0)) &&
        phaseOf.lookup(m) == phase)
      spills.push_back(m->getResult(0));
  // The members they need: values of earlier phases that are in a buffer
  // are loaded, the others recomputed.
  llvm::SetVector<Operation *> needed;
  llvm::MapVector<Value, unsigned> loaded; // value -> yield index
  llvm::SetVector<Value> reloaded;         // scratch values read back
  LogicalResult status = success();
  std::function<void(Operation *)> need = [&](Operation *op) {
    if (!needed.insert(op))
      return;
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def || !phaseOf.count(def))
        continue;
      if (phaseOf[def] < phase && yieldIndex.count(v)) {
        loaded.insert({v, yieldIndex[v]});
        continue;
      }
      if (phaseOf[def] < phase && scratch.count(v)) {
        reloaded.insert(v);
        continue;
      }
      if (isReduce(def) && phaseOf[def] < phase) {
        status = def->emitOpError("is read by a later phase but not exported");
        continue;
      }
      need(def);
    }
  };
  for (unsigned j : outs)
    if (Operation *def = yield->getOperand(j).getDefiningOp())
      if (phaseOf.count(def))
        need(def);
  for (Value v : spills)
    need(v.getDefiningOp());
  if (failed(status))
    return status;
  AffineMap chunkMap = b.getMultiDimIdentityMap(space.size());

  // Inputs: the reads the needed members make, then the loaded values.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  DenseMap<int, unsigned> argOfRead;
  auto addRead = [&](int r) {
    if (argOfRead.count(r))
      return;
    const Read &read = reads[r];
    const KernelOperand &outer = src.inputs[read.input];
    Value base = slabView(outer, shapeOf(outer).size(), shapeOf(outer),
                          elementOf(outer));
    auto [view, map] = subviewFor(base, read.dims);
    argOfRead[r] = inputs.size();
    inputs.push_back(view);
    maps.push_back(map);
  };
  for (Operation *op : members)
    if (needed.count(op))
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        if (auto it = readOfOperand.find({op, i}); it != readOfOperand.end())
          addRead(it->second);
  for (unsigned j : outs)
    if (readOfYield.count(j))
      addRead(readOfYield[j]);
  // A yielded value's dims: the space, or a per-row value's (reduction
  // results and row ops; reduction results without keepdims drop the
  // reduced dims).
  auto yieldDims = [&](unsigned j) {
    Value v = yield->getOperand(j);
    Operation *def = v.getDefiningOp();
    if (!isReduce(def))
      return resultDims(v);
    bool keep = def->getAttrOfType<BoolAttr>("keepdims") &&
                def->getAttrOfType<BoolAttr>("keepdims").getValue();
    SmallVector<Dim> dims;
    for (size_t p = 0; p < space.size(); ++p) {
      if (!isReductionDim[p])
        dims.push_back(Dim{(int)p, 1, 0});
      else if (keep)
        dims.push_back(Dim{-1, 0, 0});
    }
    return dims;
  };
  auto resultView = [&](unsigned j) {
    const KernelOperand &outer = src.results[j];
    Value base = slabView(outer, shapeOf(outer).size(), shapeOf(outer),
                          elementOf(outer));
    return subviewFor(base, yieldDims(j));
  };
  DenseMap<Value, unsigned> argOfLoaded;
  for (auto [v, j] : loaded) {
    auto [view, map] = resultView(j);
    argOfLoaded[v] = inputs.size();
    inputs.push_back(view);
    maps.push_back(map);
  }
  // A scratch buffer holds a chunk; under causal rows, the columns the
  // phase covers of it.
  auto chunkOf = [&](Value v) -> Value {
    Value buffer = scratch.lookup(v);
    if (!columnCount)
      return buffer;
    auto shape = cast<MemRefType>(buffer.getType()).getShape();
    SmallVector<OpFoldResult> offsets(shape.size(), b.getIndexAttr(0)), sizes,
        strides(shape.size(), b.getIndexAttr(1));
    for (int64_t size : shape.drop_back())
      sizes.push_back(b.getIndexAttr(size));
    sizes.push_back(columnCount);
    return b.create<memref::SubViewOp>(loc, buffer, offsets, sizes, strides)
        .getResult();
  };
  for (Value v : reloaded) {
    argOfLoaded[v] = inputs.size();
    inputs.push_back(chunkOf(v));
    maps.push_back(chunkMap);
  }

  // Outputs, reductions filled with their identity first.
  SmallVector<Value> outputs;
  bool anyElementwise = false;
  for (unsigned j : outs) {
    auto [view, map] = resultView(j);
    Operation *def = yield->getOperand(j).getDefiningOp();
    if (isReduce(def)) {
      Type et = elementOf(src.results[j]);
      bool sum = isa<ReduceSumOp>(def);
      Value init =
          isa<FloatType>(et)
              ? fconst(b, loc, et, sum ? 0.0 : -INFINITY)
              : b.create<arith::ConstantIntOp>(
                     loc, sum ? 0 : std::numeric_limits<int64_t>::min(), et)
                    .getResult();
      b.create<linalg::FillOp>(loc, ValueRange{init}, ValueRange{view});
    } else {
      anyElementwise = true;
    }
    outputs.push_back(view);
    maps.push_back(map);
  }
  for (Value v : spills) {
    outputs.push_back(chunkOf(v));
    maps.push_back(chunkMap);
    anyElementwise = true;
  }
  if (outputs.empty())
    return success();
  SmallVector<utils::IteratorType> iterators;
  for (bool r : isReductionDim)
    iterators.push_back(r && !anyElementwise ? utils::IteratorType::reduction
                                             : utils::IteratorType::parallel);

  spanEveryDimension(inputs, maps);
  size_t numInputs = inputs.size();
  b.create<linalg::GenericOp>(
      loc, TypeRange{}, inputs, outputs, maps, iterators,
      [&](OpBuilder &bb, Location l, ValueRange args) {
        auto arg = [&](unsigned index, Type et) {
          return fromStorage(bb, l, args[index], et);
        };
        DenseMap<Value, Value> scalar;
        for (auto [v, index] : argOfLoaded)
          scalar[v] = arg(index, elementOf(v));
        status = computeMembers(
            bb, l, [&](Operation *op) { return needed.count(op) != 0; },
            [&](Operation *op, unsigned i) {
              return arg(argOfRead[readOfOperand[{op, i}]],
                         elementOf(op->getOperand(i)));
            },
            tables, scalar);
        if (failed(status)) {
          bb.create<linalg::YieldOp>(l, ValueRange{});
          return;
        }
        SmallVector<Value> yielded;
        for (auto [k, j] : llvm::enumerate(outs)) {
          Value v = yield->getOperand(j);
          Value s = readOfYield.count(j)
                        ? arg(argOfRead[readOfYield[j]], elementOf(v))
                        : scalar[v];
          s = combine(bb, l, v.getDefiningOp(), args[numInputs + k], s);
          yielded.push_back(toStorage(bb, l, s));
        }
        for (Value v : spills)
          yielded.push_back(toStorage(bb, l, scalar[v]));
        bb.create<linalg::YieldOp>(l, yielded);
      });
  // Past the columns computed: the value each output is known to have.
  SmallVector<unsigned> filled;
  if (causal && columnCount)
    llvm::copy_if(outs, std::back_inserter(filled),
                  [&](unsigned j) { return causal->fill.count(j); });
  if (!filled.empty()) {
    Value from = columnFrom, covered = columnCount;
    columnFrom = covered;
    columnCount = b.create<arith::SubIOp>(
        loc, b.create<arith::ConstantIndexOp>(loc, space.back()), covered);
    for (unsigned j : filled) {
      Value c = toStorage(b, loc,
                          fconst(b, loc, elementOf(src.results[j]),
                                 causal->fill.lookup(j)));
      b.create<linalg::FillOp>(loc, ValueRange{c},
                               ValueRange{resultView(j).first});
    }
    columnFrom = from;
    columnCount = covered;
  }
  return status;
}

} // namespace sinter::codegen::detail
