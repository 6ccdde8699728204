//===- AssignBuffers.cpp - the fused step as a scheduled program ---------===//
//
// Replaces the entry function (fused, in its scheduled order) by a
// `sched.program` of the same name (docs/dialects/sched.md): the memory plan
// of passes/StepPlan.h becomes slabs and typed views at static offsets, and
// the function's ops, in order, become the program's steps:
//
//   - an `sgraph.fusion` of kind loop, reduction or special becomes a
//     `sched.kernel` (the region's ops, moved) and a `sched.launch` of it on
//     the views of its inputs and results;
//   - a matmul, alone or in a `matmul` region with its epilogue (a splat
//     scale, a bias along the last axis, a ReLU or GELU, the rounding of a
//     half matmul's f32 result to half), becomes one
//     `sched.matmul` library call; a bias that is not a vector is read
//     through a view of its bytes as `[N]`;
//   - a gradient bucket (a variadic `sgraph.all_reduce`) becomes one view
//     of its bytes and a `sched.all_reduce_start` on it right where the
//     all-reduce stands (after the kernel that wrote its last gradient),
//     with `sched.copy`s first for the slots no kernel writes in place;
//     its `sched.all_reduce_done` goes right before the first step that
//     reads any of its results, so the collective overlaps every step in
//     between (recorded on the start op as `sinter.overlap`);
//   - a reshape becomes a view that aliases its operand's; a constant read
//     outside kernels a view of the constants slab and a `sched.fill`;
//   - the arguments become `sched.argument`s (kind, initializer, aliases of
//     tied parameters, the hyperparameter's default, and the bound of an
//     integer input: the rows of the embedding tables it indexes or the
//     classes of the cross-entropy it labels, with its ignore_index, so the
//     trainer can reject out-of-range token ids and labels instead of
//     training on clamped rows or meaningless losses), and the results `sched.result`s, in order. A new
//     parameter or optimizer-state value the plan could not write in place
//     is copied back into its argument by a final `sched.copy` (the state
//     contract of docs/StepProgram.md).
//
// Nothing else changes: the step order is the function's op order, every
// offset is the plan's. With `report=<file>` the pass writes the planner's
// report (NN-memory-plan.txt). Precondition: sinter-schedule-kernels has
// run on a fused function. Opens the scheduled phase.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Schedule/ScheduleOps.h"
#include "passes/Recompute.h"
#include "passes/StepPlan.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace sinter {
#define GEN_PASS_DEF_ASSIGNBUFFERSPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter;
using namespace sinter::sgraph;

namespace {

/// The triangle sinter-causal-matmuls proved the matmul may skip ("full":
/// none).
StringRef triangleOf(MatmulOp mm) {
  auto t = mm->getAttrOfType<StringAttr>("sinter.triangle");
  return t ? t.getValue() : StringRef("full");
}

/// What an integer argument may hold: values in [0, bound), or `ignore`.
struct IndexBound {
  int64_t bound = 0;
  std::optional<int64_t> ignore;
};

/// The bound of each integer argument: the rows of the embedding tables it
/// indexes and the classes of the cross-entropies it labels (recorded by
/// sinter-decompose-ops as sgraph.index_bound), the smallest; the
/// cross-entropy's ignore_index when no embedding reads it.
llvm::DenseMap<unsigned, IndexBound> inputBounds(func::FuncOp fn) {
  llvm::DenseMap<unsigned, IndexBound> bounds;
  auto add = [&](unsigned i, int64_t rows) {
    auto [it, inserted] = bounds.try_emplace(i, IndexBound{rows, {}});
    if (!inserted)
      it->second.bound = std::min(it->second.bound, rows);
  };
  llvm::DenseSet<unsigned> embedded;
  fn.walk([&](EmbeddingOp e) {
    Value indices = e.getIndices();
    if (auto inner = dyn_cast<BlockArgument>(indices))
      if (auto fusion = dyn_cast<FusionOp>(inner.getOwner()->getParentOp()))
        indices = fusion.getInputs()[inner.getArgNumber()];
    auto arg = dyn_cast<BlockArgument>(indices);
    if (!arg || arg.getOwner()->getParentOp() != fn)
      return;
    add(arg.getArgNumber(),
        cast<RankedTensorType>(e.getTable().getType()).getDimSize(0));
    embedded.insert(arg.getArgNumber());
  });
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto classes = fn.getArgAttrOfType<IntegerAttr>(i, attr::kIndexBound);
    if (!classes)
      continue;
    add(i, classes.getInt());
    if (auto ignore = fn.getArgAttrOfType<IntegerAttr>(i, attr::kIndexIgnore))
      if (!embedded.contains(i))
        bounds[i].ignore = ignore.getInt();
  }
  return bounds;
}

/// The parameter each all-reduced gradient updates (or the buffer an
/// all-reduced value is), by the all-reduce's result: traced from each
/// optimizer update's `grad` back through its kernel's same-shaped ops (the
/// clip's multiply) to the kernel input.
llvm::DenseMap<Value, std::string> gradientNames(func::FuncOp fn) {
  llvm::DenseMap<Value, std::string> names;
  fn.walk([&](FusionOp fusion) {
    auto outer = [&](Value inner) -> Value {
      for (int hops = 0; hops < 16 && inner; ++hops) {
        if (auto arg = dyn_cast<BlockArgument>(inner))
          return arg.getOwner()->getParentOp() == fusion
                     ? fusion.getInputs()[arg.getArgNumber()]
                     : Value();
        Operation *def = inner.getDefiningOp();
        Value next;
        for (Value operand : def ? def->getOperands() : ValueRange())
          if (operand.getType() == inner.getType()) {
            next = operand;
            break;
          }
        inner = next;
      }
      return Value();
    };
    fusion.getBody().walk([&](Operation *op) {
      Value grad, param;
      if (auto u = dyn_cast<AdamUpdateOp>(op))
        grad = u.getGrad(), param = u.getParam();
      else if (auto u = dyn_cast<MomentumUpdateOp>(op))
        grad = u.getGrad(), param = u.getParam();
      else if (auto u = dyn_cast<SgdUpdateOp>(op))
        grad = u.getGrad(), param = u.getParam();
      if (!grad)
        return;
      Value g = outer(grad), p = outer(param);
      auto arg = dyn_cast_or_null<BlockArgument>(p);
      if (g && arg && arg.getOwner()->getParentOp() == fn)
        names[g] = argumentName(fn, arg.getArgNumber());
    });
  });
  // A buffer's new value (batch normalization's running statistics) is
  // all-reduced and returned as it is, under the buffer's name.
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (v.getDefiningOp<AllReduceOp>() && !names.count(v))
      names[v] = resultName(fn, i);
  return names;
}

class ProgramBuilder {
public:
  ProgramBuilder(func::FuncOp fn, const plan::FunctionPlan &plan,
                 StringRef role)
      : fn(fn), plan(plan), role(role), ctx(fn.getContext()), b(ctx),
        symbols(fn->getParentOfType<ModuleOp>()) {}

  FailureOr<sched::ProgramOp> build();

private:
  /// The view of `v` (made on first use, at the builder's position).
  Value viewOf(Value v);
  Value makeView(Value v, Type type, const plan::Place &place,
                 Value aliased = {}, StringRef name = "");
  LogicalResult lowerKernel(FusionOp fusion);
  LogicalResult lowerMatmulRegion(FusionOp fusion);
  LogicalResult lowerMatmul(MatmulOp mm);
  LogicalResult lowerResults(func::ReturnOp ret);
  /// The view of bucket `k`'s bytes, as a vector of its element type.
  Value bucketView(int64_t k);
  /// The view of matmul step `op`'s workspace (a vector of i8), or null
  /// when the plan gives it none.
  Value workspaceView(Operation *op);
  void startAllReduce(AllReduceOp ar);
  /// Emits the done of every collective in flight that `op` reads.
  void finishCollectivesReadBy(Operation *op);
  void finishCollective(size_t pendingIndex, Location loc);

  /// A collective in flight: its start, the values only its done makes
  /// readable, and the steps issued since it started.
  struct InFlight {
    sched::AllReduceStartOp start;
    llvm::DenseSet<Value> results;
    int64_t launches = 0, matmuls = 0;
    std::string firstStep, lastStep;
  };
  SmallVector<InFlight> inFlight;
  DenseMap<Operation *, int64_t> bucketIndex;
  DenseMap<int64_t, Value> bucketViews;
  llvm::DenseMap<Value, std::string> paramOfGradient;
  /// Counts a step toward every collective in flight.
  void noteStep(bool isMatmul, StringRef name);

  func::FuncOp fn;
  const plan::FunctionPlan &plan;
  StringRef role;
  MLIRContext *ctx;
  OpBuilder b;
  sched::ProgramOp program;
  sched::SlabOp slabs[abi::kNumSlabs];
  DenseMap<Value, Value> views;
  /// The module's symbols and the kernels made so far (a kernel's name must
  /// be new; ModuleOp::lookupSymbol would scan the module once per kernel).
  SymbolTable symbols;
};

Value ProgramBuilder::makeView(Value v, Type type, const plan::Place &place,
                               Value aliased, StringRef name) {
  auto view = b.create<sched::ViewOp>(
      v.getLoc(), sched::BufferType::get(cast<RankedTensorType>(type)),
      slabs[place.slab].getSlab(), b.getI64IntegerAttr(place.offset), aliased,
      name.empty() ? StringAttr() : b.getStringAttr(name),
      b.getStringAttr(abi::categoryName(place.category)));
  return view.getResult();
}

Value ProgramBuilder::bucketView(int64_t k) {
  if (Value view = bucketViews.lookup(k))
    return view;
  const plan::BucketPlace &bucket = plan.buckets[k];
  auto ar = cast<AllReduceOp>(bucket.op);
  Type element = getElementTypeOrSelf(ar.getOperands()[0].getType());
  int64_t elementBytes =
      plan::tensorBytes(RankedTensorType::get({}, element));
  auto type = RankedTensorType::get({bucket.bytes / elementBytes}, element);
  plan::Place place;
  place.slab = abi::Slab::arena;
  place.offset = bucket.offset;
  place.category = abi::Category::gradients;
  return bucketViews[k] = makeView(ar.getResult(0), type, place);
}

Value ProgramBuilder::workspaceView(Operation *op) {
  auto it = plan.workspaceOffsets.find(op);
  if (it == plan.workspaceOffsets.end())
    return Value();
  plan::Place place;
  place.slab = abi::Slab::arena;
  place.offset = it->second;
  place.category = abi::Category::workspace;
  auto type = RankedTensorType::get({plan.workspaceBytes},
                                    IntegerType::get(ctx, 8));
  return makeView(op->getResult(0), type, place);
}

Value ProgramBuilder::viewOf(Value v) {
  if (Value view = views.lookup(v))
    return view;
  plan::Place place = plan.places.lookup(v);
  if (place.bucket >= 0)
    return views[v] =
               makeView(v, v.getType(), place, bucketView(place.bucket));
  Value aliased;
  if (place.aliasOf) {
    aliased = viewOf(place.aliasOf);
    // An update written in place is the argument's own buffer.
    if (aliased.getType() ==
        sched::BufferType::get(cast<RankedTensorType>(v.getType())))
      if (!v.getDefiningOp<ReshapeOp>())
        return views[v] = aliased;
  }
  return views[v] = makeView(v, v.getType(), place, aliased);
}

LogicalResult ProgramBuilder::lowerKernel(FusionOp fusion) {
  // The region's ops, moved into a kernel of the module.
  OpBuilder mb(ctx);
  mb.setInsertionPoint(program);
  auto type = FunctionType::get(ctx, fusion.getInputs().getTypes(),
                                fusion.getResultTypes());
  if (symbols.lookup(fusion.getSymName()))
    return fusion.emitOpError("kernel name @")
           << fusion.getSymName() << " is already a symbol of the module";
  auto kernel = mb.create<sched::KernelOp>(fusion.getLoc(), fusion.getSymName(),
                                           type, fusion.getKind());
  symbols.insert(kernel);
  for (NamedAttribute a : fusion->getDiscardableAttrs())
    kernel->setAttr(a.getName(), a.getValue());
  kernel.getBody().takeBody(fusion.getBody());
  Operation *yield = kernel.getBlock().getTerminator();
  OpBuilder yb(yield);
  yb.create<sched::YieldOp>(yield->getLoc(), yield->getOperands());
  yield->erase();

  SmallVector<Value> inputs, outputs;
  for (Value in : fusion.getInputs())
    inputs.push_back(viewOf(in));
  for (Value out : fusion.getResults())
    outputs.push_back(viewOf(out));
  b.create<sched::LaunchOp>(fusion.getLoc(), fusion.getSymName(), inputs,
                            outputs, IntegerAttr(), IntegerAttr(), StringAttr(),
                            StringAttr(), DenseI64ArrayAttr());
  return success();
}

LogicalResult ProgramBuilder::lowerMatmulRegion(FusionOp fusion) {
  Block &body = fusion.getBody().front();
  auto outer = [&](Value inner) -> Value {
    auto arg = dyn_cast<BlockArgument>(inner);
    return arg ? fusion.getInputs()[arg.getArgNumber()] : Value();
  };
  // Under mixed precision a bias or aux is a half input, widened in the
  // region: the library reads the input.
  auto unwidened = [](Value v) {
    auto widen = v.getDefiningOp<CastOp>();
    return widen ? widen.getOperand() : v;
  };
  MatmulOp mm;
  double alpha = 1.0;
  Value bias;
  StringRef activation = abi::activationName(abi::MatmulStep::none);
  // The activation's input (kept: GELU_AUX, an inner value; read: DGELU, a
  // kernel input) and the bias gradient's inner value (DGELU_BGRAD).
  Value auxInner, auxInput, biasGradInner;
  for (Operation &op : body.without_terminator()) {
    if (isa<ConstantOp>(op))
      continue;
    if (auto m = dyn_cast<MatmulOp>(op)) {
      mm = m;
      continue;
    }
    if (auto mul = dyn_cast<MulOp>(op)) {
      Value c = mul.getLhs().getDefiningOp<ConstantOp>() ? mul.getLhs()
                                                         : mul.getRhs();
      alpha = cast<DenseElementsAttr>(c.getDefiningOp<ConstantOp>().getValue())
                  .getSplatValue<APFloat>()
                  .convertToDouble();
      continue;
    }
    if (auto add = dyn_cast<AddOp>(op)) {
      Value v = isa<BlockArgument>(add.getLhs()) ||
                        add.getLhs().getDefiningOp<CastOp>()
                    ? add.getLhs()
                    : add.getRhs();
      v = unwidened(v);
      if (!isa<BlockArgument>(v))
        return add.emitOpError("matmul bias must be a kernel input");
      bias = outer(v);
      continue;
    }
    if (isa<CastOp>(op))
      continue; // the rounding to out's type (half), after the f32 epilogue
    if (isa<ReluOp>(op)) {
      activation = abi::activationName(abi::MatmulStep::relu);
      continue;
    }
    if (auto g = dyn_cast<GeluOp>(op)) {
      activation = abi::activationName(g.getApproximate() == "tanh"
                                           ? abi::MatmulStep::gelu_tanh
                                           : abi::MatmulStep::gelu_erf);
      auxInner = g.getOperand();
      continue;
    }
    if (auto g = dyn_cast<GeluGradOp>(op)) {
      Value at = unwidened(g.getOperand());
      if (g.getApproximate() != "tanh" || !outer(at))
        return g.emitOpError("is not a matmul epilogue the library applies: "
                             "DGELU is the tanh form, at a kernel input");
      activation = abi::activationName(abi::MatmulStep::dgelu_tanh);
      auxInput = outer(at);
      continue;
    }
    if (auto r = dyn_cast<ReduceSumOp>(op)) {
      biasGradInner = r.getResult();
      continue;
    }
    return op.emitOpError("is not a matmul epilogue the library applies");
  }
  if (!mm || !outer(mm.getLhs()) || !outer(mm.getRhs()))
    return fusion.emitOpError("matmul region without a matmul of its inputs");
  // Under mixed precision GELU_AUX writes the activation's input rounded to
  // half: the cast of it the region exports.
  if (auxInner)
    for (Operation *user : auxInner.getUsers())
      if (isa<CastOp>(user) && user->getBlock() == &body)
        auxInner = user->getResult(0);
  // A vector [N] of `v`'s bytes, as the library wants a bias (or its
  // gradient); the view itself when `v` already is one.
  auto vectorView = [&](Value v) {
    Value view = viewOf(v);
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() == 1)
      return view;
    plan::Place place = plan.places.lookup(v);
    auto vector = RankedTensorType::get({type.getShape().back()},
                                        type.getElementType());
    auto root = view.getDefiningOp<sched::ViewOp>();
    place.offset = root.getOffsetAttr().getInt();
    return makeView(v, vector, place, view);
  };
  Value biasView = bias ? vectorView(bias) : Value();
  // The region's results: out, and the activation's input (GELU_AUX) or
  // the bias gradient (DGELU_BGRAD) when the kernel exports them.
  Value out, aux, biasGrad;
  auto yield = cast<YieldOp>(body.getTerminator());
  for (auto [inner, result] :
       llvm::zip(yield.getOperands(), fusion.getResults())) {
    if (inner == biasGradInner && biasGradInner)
      biasGrad = vectorView(result);
    else if (inner == auxInner && auxInner)
      aux = viewOf(result);
    else if (!out)
      out = viewOf(result);
    else
      return fusion.emitOpError("matmul region exports a value the library "
                                "does not write");
  }
  if (auxInput)
    aux = viewOf(auxInput);
  if (!out)
    return fusion.emitOpError("matmul region without its product");
  Value lhs = viewOf(outer(mm.getLhs())), rhs = viewOf(outer(mm.getRhs()));
  b.create<sched::MatmulOp>(fusion.getLoc(), lhs, rhs, out, biasView,
                            workspaceView(fusion), aux, biasGrad,
                            mm.getTransposeLhs(), mm.getTransposeRhs(),
                            APFloat(alpha), activation, triangleOf(mm));
  return success();
}

LogicalResult ProgramBuilder::lowerMatmul(MatmulOp mm) {
  double alpha = 1.0;
  if (auto a = mm->getAttrOfType<FloatAttr>("sinter.alpha"))
    alpha = a.getValueAsDouble();
  Value lhs = viewOf(mm.getLhs()), rhs = viewOf(mm.getRhs());
  Value out = viewOf(mm.getResult());
  b.create<sched::MatmulOp>(mm.getLoc(), lhs, rhs, out, Value(),
                            workspaceView(mm), Value(), Value(),
                            mm.getTransposeLhs(), mm.getTransposeRhs(),
                            APFloat(alpha), "none", triangleOf(mm));
  return success();
}

void ProgramBuilder::startAllReduce(AllReduceOp ar) {
  int64_t k = bucketIndex.lookup(ar);
  const plan::BucketPlace &bucket = plan.buckets[k];
  Value bytes = bucketView(k);
  InFlight flight;
  for (auto [i, operand, result] :
       llvm::enumerate(ar.getOperands(), ar.getResults())) {
    if (bucket.inPlace[i]) {
      views[result] = viewOf(operand);
    } else {
      // No kernel writes this slot: copy the gradient in.
      Value from = viewOf(operand);
      b.create<sched::CopyOp>(ar.getLoc(), from, viewOf(result));
    }
    flight.results.insert(result);
  }
  flight.start = b.create<sched::AllReduceStartOp>(
      ar.getLoc(), sched::TokenType::get(ctx),
      b.getStringAttr(ar.getReduction()), bytes, ar.getCommDtypeAttr());
  if (auto what = ar->getAttrOfType<StringAttr>("sinter.bucket"))
    flight.start->setAttr("sinter.bucket", what);
  // The gradients' names, for the runtime's messages.
  SmallVector<Attribute> names;
  for (auto [i, r] : llvm::enumerate(ar.getResults())) {
    std::string name = paramOfGradient.lookup(r);
    names.push_back(b.getStringAttr(
        name.empty() ? llvm::formatv("gradient {0}", i).str() : name));
  }
  flight.start->setAttr("sinter.gradients", b.getArrayAttr(names));
  inFlight.push_back(std::move(flight));
}

void ProgramBuilder::noteStep(bool isMatmul, StringRef name) {
  for (InFlight &flight : inFlight) {
    (isMatmul ? flight.matmuls : flight.launches) += 1;
    if (flight.firstStep.empty())
      flight.firstStep = name.str();
    flight.lastStep = name.str();
  }
}

void ProgramBuilder::finishCollective(size_t i, Location loc) {
  InFlight flight = std::move(inFlight[i]);
  inFlight.erase(inFlight.begin() + i);
  b.create<sched::AllReduceDoneOp>(loc, flight.start.getToken());
  std::string overlap;
  if (flight.launches + flight.matmuls == 0)
    overlap = "nothing: its first reader runs right after it";
  else
    overlap = llvm::formatv("{0} kernel launch{1} and {2} matmul{3} ({4} "
                            ".. {5})",
                            flight.launches,
                            flight.launches == 1 ? "" : "es", flight.matmuls,
                            flight.matmuls == 1 ? "" : "s", flight.firstStep,
                            flight.lastStep)
                  .str();
  flight.start->setAttr("sinter.overlap", b.getStringAttr(overlap));
}

void ProgramBuilder::finishCollectivesReadBy(Operation *op) {
  for (size_t i = 0; i < inFlight.size();) {
    bool reads = isa<func::ReturnOp>(op) ||
                 llvm::any_of(op->getOperands(), [&](Value v) {
                   return inFlight[i].results.contains(v);
                 });
    if (auto reshape = dyn_cast<ReshapeOp>(op);
        reshape && inFlight[i].results.contains(reshape.getOperand())) {
      // A reshape reads nothing: its readers wait instead.
      inFlight[i].results.insert(reshape.getResult());
      reads = false;
    }
    if (reads)
      finishCollective(i, op->getLoc());
    else
      ++i;
  }
}

LogicalResult ProgramBuilder::lowerResults(func::ReturnOp ret) {
  DenseMap<StringRef, BlockArgument> stateArgs;
  for (BlockArgument arg : fn.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (auto p = fn.getArgAttrOfType<StringAttr>(i, attr::kParam))
      stateArgs[p.getValue()] = arg;
    if (auto s = fn.getArgAttrOfType<StringAttr>(i, attr::kOptState))
      stateArgs[s.getValue()] = arg;
    if (auto s = fn.getArgAttrOfType<StringAttr>(i, attr::kAccumulator))
      stateArgs[s.getValue()] = arg;
  }
  struct Named {
    std::string name;
    StringRef kind;
    Value buffer;
  };
  SmallVector<Named> results;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    std::string name = resultName(fn, i);
    auto it = stateArgs.find(name);
    if (it != stateArgs.end()) {
      BlockArgument arg = it->second;
      Value from = viewOf(v), to = viewOf(arg);
      if (from != to)
        b.create<sched::CopyOp>(ret.getLoc(), from, to);
      unsigned index = arg.getArgNumber();
      results.push_back(
          {name,
           abi::resultKindName(fn.getArgAttr(index, attr::kParam)
                                   ? abi::Result::param
                               : fn.getArgAttr(index, attr::kOptState)
                                   ? abi::Result::opt_state
                                   : abi::Result::accumulator),
           to});
      continue;
    }
    results.push_back(
        {name,
         abi::resultKindName(cast<RankedTensorType>(v.getType()).getRank() == 0
                                 ? abi::Result::metric
                                 : abi::Result::tensor),
         viewOf(v)});
  }
  // A fraction of labels names the input that holds them (the importer's
  // module attribute): the runtime weights it by the labels that count.
  auto labelMetrics =
      fn->getParentOfType<ModuleOp>()->getAttrOfType<DictionaryAttr>(
          attr::kMetricLabels);
  for (const Named &r : results) {
    StringAttr labels;
    IntegerAttr ignore;
    if (r.kind == StringRef(abi::resultKindName(abi::Result::metric)) &&
        labelMetrics)
      if (auto metric = labelMetrics.getAs<DictionaryAttr>(r.name)) {
        labels = metric.getAs<StringAttr>("labels");
        ignore = metric.getAs<IntegerAttr>("ignore");
      }
    b.create<sched::ResultOp>(ret.getLoc(), b.getStringAttr(r.name),
                              b.getStringAttr(r.kind), r.buffer, labels,
                              ignore);
  }
  return success();
}

FailureOr<sched::ProgramOp> ProgramBuilder::build() {
  ModuleOp module = fn->getParentOfType<ModuleOp>();
  b.setInsertionPoint(fn);
  IntegerAttr seed;
  if (auto training = module->getAttrOfType<DictionaryAttr>(attr::kTraining))
    if (auto s = training.getAs<IntegerAttr>("seed"))
      seed = b.getI64IntegerAttr(s.getInt());
  if (!seed)
    seed = b.getI64IntegerAttr(0);
  program = b.create<sched::ProgramOp>(fn.getLoc(), fn.getName(),
                                       b.getStringAttr(role), seed);
  if (auto recompute = fn->getAttr(kRecomputePlanAttr))
    program->setAttr(kRecomputePlanAttr, recompute);
  b.setInsertionPointToStart(&program.getBody().emplaceBlock());
  for (int s = 0; s < abi::kNumSlabs; ++s) {
    auto kind = static_cast<abi::SlabKind>(s);
    slabs[s] = b.create<sched::SlabOp>(fn.getLoc(), sched::SlabType::get(ctx),
                                       abi::slabName(kind), plan.slabBytes[s]);
  }

  // Arguments, in order.
  llvm::DenseMap<unsigned, IndexBound> bounds = inputBounds(fn);
  for (BlockArgument arg : fn.getArguments()) {
    unsigned i = arg.getArgNumber();
    std::string name = argumentName(fn, i);
    Value view = views[arg] =
        makeView(arg, arg.getType(), plan.places.lookup(arg), Value(), name);
    StringRef kind = abi::argumentKindName(abi::Argument::input);
    DictionaryAttr init;
    ArrayAttr aliases;
    IntegerAttr bound, ignore;
    FloatAttr defaultValue;
    if (fn.getArgAttr(i, attr::kParam)) {
      kind = abi::argumentKindName(abi::Argument::param);
      init = fn.getArgAttrOfType<DictionaryAttr>(i, attr::kInit);
      // Other names of a tied parameter (lm_head.weight for
      // transformer.wte.weight): a checkpoint from elsewhere may use them.
      if (auto a = fn.getArgAttrOfType<ArrayAttr>(i, attr::kAliases))
        if (!a.empty())
          aliases = a;
    } else if (fn.getArgAttr(i, attr::kOptState)) {
      kind = abi::argumentKindName(abi::Argument::opt_state);
    } else if (fn.getArgAttr(i, attr::kAccumulator)) {
      kind = abi::argumentKindName(abi::Argument::accumulator);
    } else if (fn.getArgAttr(i, attr::kStep)) {
      kind = abi::argumentKindName(abi::Argument::step);
    } else if (fn.getArgAttr(i, attr::kRank)) {
      kind = abi::argumentKindName(abi::Argument::rank);
    } else if (fn.getArgAttr(i, attr::kHyper)) {
      // A hyperparameter the runtime sets (to its default unless told
      // otherwise), e.g. the peak learning rate.
      kind = abi::argumentKindName(abi::Argument::hyper);
      auto value = fn.getArgAttrOfType<FloatAttr>(i, attr::kDefault);
      auto type = cast<RankedTensorType>(arg.getType());
      if (!value || type.getRank() != 0 || !type.getElementType().isF64())
        return fn.emitError("hyperparameter argument '")
               << name << "' must be a 0-d f64 tensor with an f64 '"
               << attr::kDefault << "'";
      defaultValue = b.getF64FloatAttr(value.getValueAsDouble());
    } else if (auto it = bounds.find(i); it != bounds.end()) {
      bound = b.getI64IntegerAttr(it->second.bound);
      if (it->second.ignore)
        ignore = b.getI64IntegerAttr(*it->second.ignore);
    }
    b.create<sched::ArgumentOp>(arg.getLoc(), b.getStringAttr(name),
                                b.getStringAttr(kind), view, init, aliases,
                                bound, ignore, defaultValue);
  }

  // Steps in order.
  Block &body = fn.getBody().front();
  for (auto [k, bucket] : llvm::enumerate(plan.buckets))
    bucketIndex[bucket.op] = k;
  paramOfGradient = gradientNames(fn);
  for (Operation &op : llvm::make_early_inc_range(body)) {
    finishCollectivesReadBy(&op);
    if (auto ar = dyn_cast<AllReduceOp>(op)) {
      startAllReduce(ar);
      continue;
    }
    if (auto fusion = dyn_cast<FusionOp>(op)) {
      std::string name = fusion.getSymName().str();
      bool isMatmul = fusion.getKind() == "matmul";
      if (failed(isMatmul ? lowerMatmulRegion(fusion) : lowerKernel(fusion)))
        return failure();
      noteStep(isMatmul, name);
      continue;
    }
    if (auto mm = dyn_cast<MatmulOp>(op)) {
      if (failed(lowerMatmul(mm)))
        return failure();
      noteStep(true, "matmul");
      continue;
    }
    if (auto c = dyn_cast<ConstantOp>(op)) {
      Value view = viewOf(c.getResult());
      b.create<sched::FillOp>(c.getLoc(), view, c.getValue());
      continue;
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      viewOf(reshape.getResult());
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (failed(lowerResults(ret)))
        return failure();
      continue;
    }
    return op.emitOpError("has no place in a scheduled program outside a "
                          "kernel");
  }
  return program;
}

class AssignBuffersPass
    : public sinter::impl::AssignBuffersPassBase<AssignBuffersPass> {
public:
  using AssignBuffersPassBase::AssignBuffersPassBase;

  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>(entry);
    if (!fn) {
      getOperation().emitError("no function @") << entry << " to schedule";
      return signalPassFailure();
    }
    FailureOr<plan::FunctionPlan> plan =
        plan::planFunction(fn, noReuse, matmulWorkspaceBytes);
    if (failed(plan))
      return signalPassFailure();
    if (!report.empty()) {
      std::error_code ec;
      llvm::raw_fd_ostream os(report, ec, llvm::sys::fs::OF_Text);
      if (ec) {
        fn.emitError("cannot write the memory report '")
            << report << "': " << ec.message();
        return signalPassFailure();
      }
      os << plan::formatFunctionPlan(fn, *plan, 20);
    }
    if (!abi::programSymbols(role)) {
      fn.emitError("role '") << role << "' is not step or eval";
      return signalPassFailure();
    }
    ProgramBuilder builder(fn, *plan, role);
    if (failed(builder.build()))
      return signalPassFailure();
    fn.erase();
  }
};

} // namespace
