//===- KernelBuilder.h - the state of one kernel's emission ----*- C++ -*-===//
//
// Internal to compiler/CodeGen: the class that turns one fused region (a
// KernelSource) into a kernel function (KernelEmitter.cpp: analysis, the
// single-phase body, the entry; KernelPhases.cpp: row-phased bodies;
// SpecialKernels.cpp: pads, concats, embedding gradients, argmax). Only
// emitKernel (KernelEmitter.h) is public.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_CODEGEN_CPU_KERNELBUILDER_H
#define SINTER_COMPILER_CODEGEN_CPU_KERNELBUILDER_H

#include "compiler/CodeGen/Cpu/KernelEmitter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace sinter::codegen::detail {

using namespace mlir;
using namespace sinter::sgraph;

/// One buffer dimension as a function of the iteration dimensions:
/// `scale * d_iter + offset`, or the constant `offset` when iter < 0.
struct Dim {
  int iter = -1;
  int64_t scale = 1;
  int64_t offset = 0;
  bool operator==(const Dim &o) const {
    return iter == o.iter && scale == o.scale && offset == o.offset;
  }
};

/// A read of a region input through a composition of views.
struct Read {
  unsigned input = 0;
  SmallVector<Dim> dims;
  bool operator==(const Read &o) const {
    return input == o.input && dims == o.dims;
  }
};

inline ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
inline Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}
inline ArrayRef<int64_t> shapeOf(const KernelOperand &o) {
  return o.type.getShape();
}
inline Type elementOf(const KernelOperand &o) {
  return o.type.getElementType();
}
/// Memory element type: i1 is stored as i8.
inline Type storageType(Type t) {
  return t.isInteger(1) ? IntegerType::get(t.getContext(), 8) : t;
}

/// The dims of an operand of rank `rank` read by an op whose result dims
/// are `resultDims`, with numpy broadcasting (aligned at the trailing axis).
inline SmallVector<Dim> broadcastDims(ArrayRef<int64_t> operandShape,
                                      ArrayRef<int64_t> resultShape,
                                      ArrayRef<Dim> resultDims) {
  SmallVector<Dim> dims;
  size_t lead = resultShape.size() - operandShape.size();
  for (auto [j, size] : llvm::enumerate(operandShape)) {
    if (size == 1 && resultShape[lead + j] != 1)
      dims.push_back(Dim{-1, 0, 0});
    else
      dims.push_back(resultDims[lead + j]);
  }
  return dims;
}

class KernelBuilder {
public:
  KernelBuilder(const KernelSource &src, ModuleOp kernels, StringRef symbol,
                const analysis::KernelLimits &limits)
      : src(src), kernels(kernels), symbol(symbol.str()), limits(limits),
        ctx(src.op->getContext()), b(ctx) {}

  FailureOr<EmittedKernel> emit();
  /// The kernel for the CUDA target (compiler/CodeGen/Cuda/CudaKernels.cpp):
  /// the same analysis, GPU loops instead of linalg.
  FailureOr<EmittedKernel> emitCuda();
  /// "k7_exp_mul": the region's name and its op kinds, for profiles.
  std::string label() const;

private:
  LogicalResult analyze();
  /// How `v` (a block argument or a cloned view) is read when its own
  /// dims map to iteration dims as `dims`.
  FailureOr<Read> readOf(Value v, SmallVector<Dim> dims);
  /// The dims of operand `i` of member `op` (whose result has the space,
  /// or in a later phase the per-row shape).
  SmallVector<Dim> operandDims(Operation *op, unsigned i);
  /// How a member result of the space's rank maps to the iteration dims.
  SmallVector<Dim> resultDims(Value v);
  /// Phases of a row-phased kernel (see emitPhased).
  void assignPhases();
  LogicalResult emitPhased();
  /// A row kernel over the last dimension that computes a causal mask
  /// (OpClass::Generated) over its last two, where every element past a
  /// row's diagonal is known without reading anything: each reduction
  /// adds its identity there (the max -inf, the sum 0) and each
  /// elementwise output is a constant. A softmax of masked scores and its
  /// gradient are: exp(-inf - max) = 0, 0 / sum = 0, the gradient's
  /// select(mask, ..., 0). Such a kernel need read and compute only
  /// columns 0..row of each row and fill the rest: flash attention's
  /// skipped blocks, element by element. The known values are found by
  /// evaluating the members above the diagonal with every value the
  /// kernel reads taken as finite (0 * x = 0): an inf past the diagonal,
  /// which the reference's 0 * inf turns into a NaN row, is never read
  /// here (docs/Cuda.md, "Causal rows").
  struct CausalRows {
    /// The space's dimension the mask's rows (queries) run along.
    int rowDim = -1;
    /// Each elementwise output's value past the diagonal, by yield index.
    DenseMap<unsigned, double> fill;
  };
  std::optional<CausalRows> causalRows();
  /// A pad of a member's value at the end of the last axis
  /// (KernelGrouper::paddedRowOutput): the kernel stores the value into
  /// the padded buffer and fills the padding; nothing reads it by index.
  bool paddedOutput(Operation *op) const;
  LogicalResult emitPhase(int phase,
                          const DenseMap<Operation *, Value> &tables);
  /// Whole views of the operands read by computed index (an embedding's
  /// table, a padded tensor), by member; the body captures them.
  FailureOr<DenseMap<Operation *, Value>> indexTables();
  /// The scalars of every member `wanted` accepts, in order, into
  /// `scalar` (which may hold some already: values loaded whole); an
  /// operand read from memory is `read(op, i)`.
  LogicalResult
  computeMembers(OpBuilder &bb, Location l,
                 llvm::function_ref<bool(Operation *)> wanted,
                 llvm::function_ref<Value(Operation *, unsigned)> read,
                 const DenseMap<Operation *, Value> &tables,
                 DenseMap<Value, Value> &scalar);
  /// The scalars of `op` from its operands' scalars `in` (the body of one
  /// iteration); embeddings and pads read `tables`.
  FailureOr<SmallVector<Value>>
  computeMember(OpBuilder &bb, Location l, Operation *op, ArrayRef<Value> in,
                const DenseMap<Operation *, Value> &tables);

  void beginFunction();
  void finishFunction();
  Value slabView(const KernelOperand &outer, int64_t rank,
                 ArrayRef<int64_t> shape, Type elementType);
  /// A subview of `base` for `dims`, and the map it is indexed with.
  std::pair<Value, AffineMap> subviewFor(Value base, ArrayRef<Dim> dims);
  /// linalg takes its loop bounds from its operands' shapes, so each
  /// dimension of the space must index one of them; a reduction over an
  /// axis only a broadcast makes (`reduce_sum(broadcast(w))`) has none.
  /// Appends to `inputs` (whose maps are the first inputs.size() of `maps`,
  /// the outputs' follow) one that spans the missing dimensions: a stack
  /// buffer of a byte per index, never written, whose block argument the
  /// payload ignores (the loads the loops get are dead; LLVM drops them and
  /// the buffer).
  void spanEveryDimension(SmallVectorImpl<Value> &inputs,
                          SmallVectorImpl<AffineMap> &maps);
  LogicalResult emitGeneric();
  LogicalResult emitSpecial();
  LogicalResult emitConcat(ConcatOp concat, Value out);
  Value iterIndex(OpBuilder &bb, Location loc, int dim);
  /// Bytes the kernel reads and writes: each distinct read once (broadcast
  /// dimensions count once), each output once.
  int64_t bytesMoved();
  Value linearIndex(OpBuilder &bb, Location loc);

  /// The CUDA forms (CudaKernels.cpp).
  void collectPlaces();
  void beginCudaFunction(int64_t block);
  /// The thread's index in the grid and the grid's threads.
  std::pair<Value, Value> globalThread();
  LogicalResult emitCudaElementwise();
  /// The padding of each padded output (paddedOutput), as a grid-stride
  /// loop over its elements from `first` by `stride`.
  void fillPadding(Value first, Value stride);
  LogicalResult emitCudaRows();
  LogicalResult emitCudaSpecial();
  /// Reductions down columns (the kept innermost dimension): a warp's
  /// lanes side by side over neighbouring rows, the block's waves down
  /// the reduced elements, partials totalled through shared memory.
  bool columnsFit();
  /// Operand `i` of member `op`, loaded at cudaIndex.
  Value cudaRead(Operation *op, unsigned i);
  /// A row kernel's per-row results (the reductions' and the row ops',
  /// from `totals`), at the row `cudaIndex` holds, its reduced indices 0.
  LogicalResult storeRowResults(
      const DenseMap<Value, Value> &totals,
      llvm::function_ref<Value(Operation *, unsigned)> read,
      const DenseMap<Operation *, Value> &tables);
  /// A row or column kernel's elementwise results of `phase` (the space's
  /// shape) at the element cudaIndex holds, from `scalar`; in phase 0 also
  /// the inputs the kernel yields as they are.
  void storeElementwise(int phase, DenseMap<Value, Value> &scalar);
  /// `store()` where `valid` holds (always when it is null).
  void storeIf(Value valid, llvm::function_ref<void()> store);
  /// `acc` combined with `v` as `reduce` combines, where `valid` holds.
  Value accumulateIf(Value valid, Operation *reduce, Value acc, Value v);
  /// The body of a loop over a row's elements that takes `lanes` of them
  /// an iteration: `first + j * stride` for j < lanes, the first in the row
  /// (the loop's bound says so), the others at or past `elems` (the row's
  /// length, or where a causal row's computed part ends) loading element 0
  /// and guarded. For each: cudaIndex from `indexOf`, the members `wanted`
  /// from `totals` and memory, `store` under the guard, and each of
  /// `reduces` combined into `acc`. Independent loads: a thread has
  /// `lanes` in flight.
  LogicalResult
  emitLanes(Value first, Value stride, int64_t lanes, Value elems,
            ArrayRef<int64_t> elemSizes,
            llvm::function_ref<SmallVector<Value>(ArrayRef<Value>)> indexOf,
            llvm::function_ref<bool(Operation *)> wanted,
            const DenseMap<Value, Value> &totals,
            const DenseMap<Operation *, Value> &tables,
            llvm::function_ref<void(DenseMap<Value, Value> &)> store,
            ArrayRef<Operation *> reduces, MutableArrayRef<Value> acc);
  LogicalResult emitCudaEmbeddingGrad(EmbeddingGradOp eg);
  LogicalResult emitCudaColumns();
  /// A concat's copies as one grid-stride loop over their elements.
  void spreadCopies(scf::ForOp loop, int64_t extent);
  Value cudaLoad(OpBuilder &bb, Location l, const Read &r, Type et);
  Value typedView(OpBuilder &bb, Location l, const KernelOperand &outer,
                  ArrayRef<int64_t> shape);
  void cudaStore(OpBuilder &bb, Location l, const KernelOperand &outer,
                 ArrayRef<Dim> dims, Value scalar);

  const KernelSource &src;
  ModuleOp kernels;
  std::string symbol;
  const analysis::KernelLimits &limits;
  MLIRContext *ctx;
  OpBuilder b;

  SmallVector<int64_t> space;
  SmallVector<bool> isReductionDim;
  bool flattened = false;
  int splitDim = -1;
  std::vector<Read> reads; // distinct reads, the generic's inputs
  DenseMap<std::pair<Operation *, unsigned>, int> readOfOperand;
  DenseMap<unsigned, int> readOfYield;
  SmallVector<Operation *> members;
  Operation *anyReduce = nullptr;
  /// Row phases: a member reading a reduction result of the kernel runs in
  /// the phase after that reduction's; 1 phase for every other kernel.
  DenseMap<Operation *, int> phaseOf;
  int numPhases = 1;
  /// Iteration dims (beyond the split one) fixed to one index per chunk of
  /// a phased kernel, and that index.
  DenseMap<int, Value> chunkIndex;
  /// Values of a phased kernel kept per chunk in a stack buffer.
  DenseMap<Value, Value> scratch;
  /// Set when the code reads and computes only up to each row's diagonal
  /// (causalRows), which bytesMoved counts.
  std::optional<CausalRows> causal;
  /// CPU causal rows: the columns (of the space's last dimension) the
  /// views subviewFor makes cover, from `columnFrom`, `columnCount` of
  /// them; all of them while `columnCount` is null. A row's count is
  /// rounded up to a multiple of `causalColumns` (1: the diagonal).
  Value columnFrom, columnCount;
  int64_t causalColumns = 1;

  func::FuncOp fn, bodyFn;
  struct PlaceInfo {
    abi::SlabKind slab;
    int64_t offset;
    int64_t bytes;
    Value arg;
  };
  SmallVector<PlaceInfo> places;
  /// The dropout ops among the members and the body arguments holding
  /// their keys (the entry reads them from the launch's words).
  SmallVector<Operation *> dropouts;
  DenseMap<Operation *, Value> dropoutKeys;
  /// The launch's words, in the order the entry reads them: each place's
  /// byte offset, then each dropout key.
  std::vector<int64_t> launchArgs;
  Value begin, end, count;
  /// CUDA: the element's index along each iteration dimension, which
  /// iterIndex returns instead of linalg's; the grid and block of the
  /// launch.
  SmallVector<Value> cudaIndex;
  /// Emitting for the CUDA target (emitCuda).
  bool cuda = false;
  int64_t cudaGrid = 1, cudaBlock = 1;
};

/// A pad's padding value as a scalar of its element type.
Value paddingOf(OpBuilder &bb, Location l, PadOp pad);
/// A memory element (i1 is stored as i8) as the scalar of type `et`.
Value fromStorage(OpBuilder &bb, Location l, Value v, Type et);
/// A scalar as the element stored for it.
Value toStorage(OpBuilder &bb, Location l, Value v);
/// `acc` combined with `s` as the reduction `reduce` combines (sums
/// reassociable, so LLVM vectorizes them); `s` itself for any other op.
Value combine(OpBuilder &bb, Location l, Operation *reduce, Value acc, Value s);

} // namespace sinter::codegen::detail

#endif // SINTER_COMPILER_CODEGEN_CPU_KERNELBUILDER_H
