//===- Autodiff.cpp - reverse-mode differentiation of @forward -----------===//
//
// Builds `@train_step` (or `@forward_grad`) from `@forward`, the function the
// importer produces. Preconditions: the module verifies; @forward returns
// the loss (a 0-d float tensor) first; trainable parameters are arguments
// with `sgraph.param` and without `sgraph.frozen`. It runs first in the
// training phase (compiler/Pipelines/Pipelines.cpp), before stop_gradient is
// erased and the training graph is verified.
//
// The algorithm, over the ops of a copy of @forward's body:
//
//   1. Activity. A value is *varied* if it depends on a trainable parameter
//      through float-typed values, not through stop_gradient; *useful* if
//      the loss depends on it. Only values that are both get gradients, so
//      frozen parameters, integer inputs, stop_gradient and branches that do
//      not reach the loss produce no backward ops.
//   2. Reverse sweep. Walking the ops backwards, every op with a result
//      gradient and an active operand asks its GradientOpInterface rule
//      (dialects/Graph/GraphGradients.cpp) for the operand gradients it
//      needs. A value used several times gets the sum of its uses'
//      gradients; a parameter used twice (tied weights) thus gets one summed
//      gradient.
//   3. Training step. Clipping, the learning rate and the optimizer updates
//      follow (passes/OptimizerStep.cpp); optimizer-state arguments are added
//      after the parameters, and with `runtime-lr` the peak learning rate
//      (kind hyper, named "lr") after everything else.
//
// A trainable parameter that does not reach the loss has no gradient; as
// PyTorch skips parameters whose .grad is None, it gets no update (a
// warning says so) and is marked frozen in @train_step.
//
// With grad_accumulation_steps K > 1, @train_step is a step's last
// micro-batch: it takes accumulators (the earlier micro-batches' gradient
// sums, after the parameters) and K (a hyper argument) and steps with
// (accumulator + gradient) / K; @accumulate_step, built from another copy
// of @forward, is every earlier micro-batch: accumulator + gradient, no
// update (docs/Autodiff.md, "Gradient accumulation").
//
// With training.loss_scale, both start the reverse sweep from a hyper
// argument `loss_scale` instead of 1, @train_step divides each gradient by
// it, and the optimizer step keeps nothing of an overflowed step
// (passes/OptimizerStep.cpp; docs/MixedPrecision.md).
//
//===----------------------------------------------------------------------===//

#include "abi/Abi.h"
#include "passes/OptimizerStep.h"
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace sinter {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter;

namespace {

/// Gradients of `loss` with respect to `wrt`, built at the end of `body`
/// (before its terminator), starting from `seed` (a 0-d tensor; null: 1).
/// An entry is null when the loss does not depend on that value.
FailureOr<SmallVector<Value>> reverseMode(OpBuilder &b, Block &body,
                                          ArrayRef<Value> wrt, Value loss,
                                          Value seed) {
  auto isFloat = [](Value v) { return sgraph::isFloatTensor(v.getType()); };
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);

  // 1. Activity.
  llvm::DenseSet<Value> varied, useful;
  for (Value v : wrt)
    if (isFloat(v))
      varied.insert(v);
  for (Operation *op : ops) {
    if (isa<sgraph::StopGradientOp>(op))
      continue;
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return varied.contains(v); }))
      for (Value r : op->getResults())
        if (isFloat(r))
          varied.insert(r);
  }
  useful.insert(loss);
  for (Operation *op : llvm::reverse(ops))
    if (llvm::any_of(op->getResults(),
                     [&](Value v) { return useful.contains(v); }))
      for (Value operand : op->getOperands())
        useful.insert(operand);
  auto active = [&](Value v) {
    return varied.contains(v) && useful.contains(v);
  };

  // 2. Reverse sweep.
  llvm::DenseMap<Value, Value> grads;
  b.setInsertionPoint(body.getTerminator());
  auto lossType = cast<RankedTensorType>(loss.getType());
  if (!seed)
    seed = sgraph::buildScalarConstant(b, loss.getLoc(),
                                       lossType.getElementType(), 1.0);
  else if (seed.getType() != lossType)
    seed = b.create<sgraph::CastOp>(loss.getLoc(), lossType, seed);
  grads[loss] = seed;

  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultGrads;
    bool anyGrad = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(grads.lookup(r));
      anyGrad |= bool(resultGrads.back());
    }
    SmallVector<bool> needed;
    for (Value operand : op->getOperands())
      needed.push_back(active(operand));
    if (!anyGrad || !llvm::is_contained(needed, true) ||
        isa<sgraph::StopGradientOp>(op))
      continue;

    auto rule = dyn_cast<sgraph::GradientOpInterface>(op);
    if (!rule)
      return op->emitOpError()
             << "lies between a trainable parameter and the loss but has no "
                "gradient rule";
    SmallVector<Value> operandGrads;
    if (failed(rule.buildGradients(b, resultGrads, needed, operandGrads)))
      return failure();
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      if (!needed[i])
        continue;
      Value g = i < operandGrads.size() ? operandGrads[i] : Value();
      if (!g || g.getType() != operand.getType())
        return op->emitOpError() << "gradient rule gave operand #" << i << " "
                                 << (g ? g.getType() : Type())
                                 << ", expected " << operand.getType();
      Value &sum = grads[operand];
      sum = sum ? b.create<sgraph::AddOp>(op->getLoc(), sum, g).getResult()
                : g;
    }
  }

  SmallVector<Value> result;
  for (Value v : wrt)
    result.push_back(grads.lookup(v));
  return result;
}

class AutodiffPass : public sinter::impl::AutodiffPassBase<AutodiffPass> {
public:
  using AutodiffPassBase::AutodiffPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal()) {
      module.emitError("the module has no @forward function to differentiate");
      return signalPassFailure();
    }
    if (mode != "train-step" && mode != "gradients") {
      module.emitError("sinter-autodiff: mode must be train-step or "
                       "gradients, got '")
          << mode << "'";
      return signalPassFailure();
    }
    auto fail = [&]() { signalPassFailure(); };
    if (forward.getNumResults() < 1 ||
        !sgraph::isFloatTensor(forward.getResultTypes()[0]) ||
        cast<RankedTensorType>(forward.getResultTypes()[0]).getRank() != 0) {
      forward.emitError("@forward must return the loss, a 0-d float tensor, "
                        "as its first result");
      return fail();
    }
    if (mode == "gradients") {
      if (failed(buildGradientFunction(module, forward)))
        return fail();
      return;
    }
    if (failed(buildTrainStep(module, forward)))
      return fail();
  }

private:
  /// Trainable parameters of @forward: argument indices.
  static SmallVector<unsigned> trainableArgs(func::FuncOp forward) {
    SmallVector<unsigned> result;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      if (forward.getArgAttr(i, sgraph::attr::kParam) &&
          !forward.getArgAttr(i, sgraph::attr::kFrozen))
        result.push_back(i);
    return result;
  }

  /// The gradients of `loss` with respect to `body`'s arguments `indices`
  /// (reverseMode).
  static FailureOr<SmallVector<Value>> gradientsOf(OpBuilder &b, Block &body,
                                                   ArrayRef<unsigned> indices,
                                                   Value loss,
                                                   Value seed = {}) {
    SmallVector<Value> wrt;
    for (unsigned i : indices)
      wrt.push_back(body.getArgument(i));
    return reverseMode(b, body, wrt, loss, seed);
  }

  /// Loss scaling: the `loss_scale` hyper argument (f64, appended), the
  /// seed of the backward pass; null without scaling.
  static Value addLossScale(Block &body, const TrainingConfig &config) {
    if (config.lossScale == "none")
      return {};
    return body.addArgument(
        RankedTensorType::get({}, Float64Type::get(body.getParent()->getContext())),
        body.getParentOp()->getLoc());
  }

  /// The cross-entropies `v` is linear in: through casts, negations, sums,
  /// differences, and products with (quotients by) constants, the ops of
  /// which go into `chain`. Any other op is a term of its own, which the
  /// walk does not enter (a regularizer, an auxiliary loss).
  static void linearTerms(Value v,
                          SmallVectorImpl<sgraph::SoftmaxCrossEntropyOp> &out,
                          llvm::SmallPtrSetImpl<Operation *> &chain) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return;
    auto isConstant = [](Value x) {
      return x.getDefiningOp<sgraph::ConstantOp>() != nullptr;
    };
    SmallVector<Value> next;
    if (auto ce = dyn_cast<sgraph::SoftmaxCrossEntropyOp>(def)) {
      out.push_back(ce);
    } else if (isa<sgraph::CastOp, sgraph::NegOp>(def)) {
      next.push_back(def->getOperand(0));
    } else if (isa<sgraph::AddOp, sgraph::SubOp>(def)) {
      next.append({def->getOperand(0), def->getOperand(1)});
    } else if (isa<sgraph::MulOp>(def)) {
      if (isConstant(def->getOperand(0)))
        next.push_back(def->getOperand(1));
      else if (isConstant(def->getOperand(1)))
        next.push_back(def->getOperand(0));
    } else if (isa<sgraph::DivOp>(def) && isConstant(def->getOperand(1))) {
      next.push_back(def->getOperand(0));
    }
    if (next.empty())
      return;
    chain.insert(def);
    for (Value n : next)
      linearTerms(n, out, chain);
  }

  /// A step-wide mean: when the loss is linear in mean cross-entropies over
  /// one input's labels the step is fed (an input, maybe reshaped or cast),
  /// such as the cross-entropy itself, or it plus an auxiliary loss, the
  /// `loss_count` hyper argument (f64, appended, default 0) becomes their
  /// `count`. The runtime sets it to the step's count of positions not
  /// ignored, over every rank and micro-batch, divided by their number, so
  /// that each one's loss and gradient are its share of the whole step's
  /// mean: ranks and micro-batches with different numbers of ignored labels
  /// then compute what one process at the whole batch does. Null otherwise
  /// (also where a cross-entropy is used other than linearly: its own mean
  /// is the only one such a use has).
  static Value addLossCount(Block &body, Value loss) {
    SmallVector<sgraph::SoftmaxCrossEntropyOp> ces;
    llvm::SmallPtrSet<Operation *, 8> chain;
    linearTerms(loss, ces, chain);
    if (ces.empty())
      return {};
    BlockArgument labelsArg;
    for (sgraph::SoftmaxCrossEntropyOp ce : ces) {
      if (ce.getReduction() != "mean" || ce.getCount() ||
          ce.getIgnoreIndex() != ces.front().getIgnoreIndex())
        return {};
      Value labels = ce.getLabels();
      while (Operation *def = labels.getDefiningOp()) {
        if (!isa<sgraph::ReshapeOp, sgraph::CastOp>(def))
          return {};
        labels = def->getOperand(0);
      }
      auto arg = dyn_cast<BlockArgument>(labels);
      if (!arg || arg.getOwner() != &body || (labelsArg && arg != labelsArg))
        return {};
      labelsArg = arg;
      for (Operation *user : ce->getUsers())
        if (!chain.contains(user) && !isa<func::ReturnOp>(user))
          return {};
    }
    Value count = body.addArgument(
        RankedTensorType::get({},
                              Float64Type::get(body.getParent()->getContext())),
        ces.front().getLoc());
    for (sgraph::SoftmaxCrossEntropyOp ce : ces)
      ce.getCountMutable().assign(count);
    return count;
  }

  static DictionaryAttr lossCountAttrs(Builder &b) {
    return b.getDictionaryAttr(
        {b.getNamedAttr(sgraph::attr::kHyper,
                        b.getStringAttr(sinter::abi::kLossCountHyper)),
         b.getNamedAttr(sgraph::attr::kDefault, b.getF64FloatAttr(0.0))});
  }

  static DictionaryAttr lossScaleAttrs(Builder &b,
                                       const TrainingConfig &config) {
    return b.getDictionaryAttr(
        {b.getNamedAttr(sgraph::attr::kHyper,
                        b.getStringAttr(sinter::abi::kLossScaleHyper)),
         b.getNamedAttr(sgraph::attr::kDefault,
                        b.getF64FloatAttr(config.initScale))});
  }

  /// Names each result (`sgraph.name`).
  static void setResultNames(func::FuncOp fn, ArrayRef<std::string> names) {
    Builder b(fn.getContext());
    SmallVector<DictionaryAttr> attrs;
    for (const std::string &name : names)
      attrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(sgraph::attr::kName, b.getStringAttr(name))));
    fn.setAllResultAttrs(attrs);
  }

  /// A copy of @forward named `name` in training mode (every `train_eval`
  /// its train value), inserted after it; its return op is left in place
  /// (operands = loss, metrics, buffers' new values).
  static func::FuncOp cloneForward(func::FuncOp forward, StringRef name) {
    OpBuilder b(forward);
    b.setInsertionPointAfter(forward);
    auto fn = cast<func::FuncOp>(b.clone(*forward));
    fn.setSymName(name);
    sgraph::resolveTrainEval(fn, /*training=*/true);
    return fn;
  }

  /// @forward's result indices: loss and metrics, then buffers' new values.
  static void splitResults(func::FuncOp forward,
                           SmallVectorImpl<unsigned> &outputs,
                           SmallVectorImpl<unsigned> &buffers) {
    SmallVector<unsigned> updates = sgraph::bufferUpdateResults(forward);
    for (unsigned i = 0; i < forward.getNumResults(); ++i)
      (llvm::is_contained(updates, i) ? buffers : outputs).push_back(i);
  }

  LogicalResult buildGradientFunction(ModuleOp module, func::FuncOp forward) {
    if (module.lookupSymbol("forward_grad"))
      return module.emitError("@forward_grad already exists");
    func::FuncOp fn = cloneForward(forward, "forward_grad");
    Block &body = fn.front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<unsigned> trainable = trainableArgs(forward);
    OpBuilder b(ret);
    auto grads = gradientsOf(b, body, trainable, ret.getOperand(0));
    if (failed(grads))
      return failure();

    // Loss and metrics; buffers' new values are left out (a gradient
    // evaluation updates nothing).
    SmallVector<unsigned> outputs, buffers;
    splitResults(forward, outputs, buffers);
    SmallVector<Value> results;
    SmallVector<std::string> names;
    for (unsigned i : outputs) {
      results.push_back(ret.getOperand(i));
      names.push_back(sgraph::resultName(forward, i));
    }
    for (auto [i, g] : llvm::zip(trainable, *grads)) {
      Value arg = body.getArgument(i);
      // A parameter the loss does not depend on has a zero gradient.
      if (!g) {
        b.setInsertionPoint(ret);
        auto type = cast<RankedTensorType>(arg.getType());
        g = b.create<sgraph::ConstantOp>(
            arg.getLoc(),
            DenseElementsAttr::get(type,
                                   b.getFloatAttr(type.getElementType(), 0.0)));
      }
      results.push_back(g);
      names.push_back("grad." + sgraph::argumentName(forward, i));
    }
    b.setInsertionPoint(ret);
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    fn.setFunctionType(FunctionType::get(
        &getContext(), body.getArgumentTypes(), ValueRange(results).getTypes()));
    setResultNames(fn, names);
    return success();
  }

  LogicalResult buildTrainStep(ModuleOp module, func::FuncOp forward) {
    if (module.lookupSymbol("train_step"))
      return module.emitError("@train_step already exists");
    FailureOr<TrainingConfig> config =
        readTrainingConfig(module, forward.getLoc());
    if (failed(config))
      return failure();
    warnAboutPendingFeatures(*config, forward.getLoc());

    func::FuncOp fn = cloneForward(forward, "train_step");
    Block &body = fn.front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    OpBuilder b(ret);

    // The step argument: @forward's own (dropout uses it) or a new one.
    Value step;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (fn.getArgAttr(i, sgraph::attr::kStep))
        step = body.getArgument(i);
    if (!step) {
      // The function type is rebuilt from the block's arguments below.
      step = body.addArgument(RankedTensorType::get({}, b.getI64Type()),
                              forward.getLoc());
    }

    SmallVector<unsigned> trainable = trainableArgs(forward);
    Value lossScale = addLossScale(body, *config);
    Value lossCount = addLossCount(body, ret.getOperand(0));
    auto grads = gradientsOf(b, body, trainable, ret.getOperand(0), lossScale);
    if (failed(grads))
      return failure();

    SmallVector<ParamGradient> params;
    SmallVector<unsigned> frozenByWarning;
    for (auto [i, g] : llvm::zip(trainable, *grads)) {
      std::string name = sgraph::argumentName(forward, i);
      if (!g) {
        emitWarning(body.getArgument(i).getLoc())
            << "parameter '" << name
            << "' does not affect the loss; it gets no gradient and no update";
        frozenByWarning.push_back(i);
        continue;
      }
      params.push_back({name, body.getArgument(i), g});
    }

    // Accumulators, then optimizer-state arguments, go right after the
    // parameters.
    unsigned paramCount = paramArgCount(forward);
    b.setInsertionPoint(ret);
    Value microBatches;
    SmallVector<std::pair<Value, std::string>> accumulators;
    if (config->gradAccumulationSteps > 1)
      microBatches = addAccumulation(b, body, paramCount, params, accumulators);
    // Scaled gradients (and accumulator sums) back to the loss's scale.
    if (lossScale)
      for (ParamGradient &p : params) {
        auto type = cast<RankedTensorType>(p.grad.getType());
        Value s = b.create<sgraph::CastOp>(
            forward.getLoc(), RankedTensorType::get({}, type.getElementType()),
            lossScale);
        p.grad = b.create<sgraph::DivOp>(forward.getLoc(), p.grad, s);
      }
    SmallVector<std::pair<Value, std::string>> stateArgs;
    auto addState = [&](Type type, StringRef name) -> Value {
      Value arg = body.insertArgument(
          paramCount + accumulators.size() + stateArgs.size(), type,
          forward.getLoc());
      stateArgs.push_back({arg, name.str()});
      return arg;
    };
    // The runtime peak learning rate: the last argument, after the step.
    Value peakLr;
    if (runtimeLr)
      peakLr = body.addArgument(RankedTensorType::get({}, b.getF64Type()),
                                forward.getLoc());
    OptimizerStepValues opt = emitOptimizerStep(
        b, forward.getLoc(), *config, params, step, addState, peakLr);

    // Results: loss, metrics..., lr, grad_norm, params'..., buffers'...,
    // state'...
    SmallVector<unsigned> outputs, buffers;
    splitResults(forward, outputs, buffers);
    SmallVector<Value> results;
    SmallVector<std::string> names;
    for (unsigned i : outputs) {
      results.push_back(ret.getOperand(i));
      names.push_back(sgraph::resultName(forward, i));
    }
    results.append({opt.lr, opt.gradNorm});
    names.append({"lr", "grad_norm"});
    for (auto [p, updated] : llvm::zip(params, opt.newParams)) {
      results.push_back(updated);
      names.push_back(p.name);
    }
    // Buffers stay the same on every rank: each takes the mean of the ranks'
    // new values (one rank: its own). The update is affine in the old value,
    // so the mean after the step's last micro-batch equals taking it after
    // each (@accumulate_step updates them locally). They are updated on a
    // step that loss scaling skips too, as PyTorch's forward pass does.
    b.setInsertionPoint(ret);
    for (unsigned i : buffers) {
      results.push_back(b.create<sgraph::AllReduceOp>(
                             forward.getLoc(), ValueRange{ret.getOperand(i)},
                             b.getStringAttr("mean"), StringAttr())
                            .getResult(0));
      names.push_back(sgraph::resultName(forward, i));
    }
    for (auto [arg, updated] : llvm::zip(stateArgs, opt.newState)) {
      results.push_back(updated);
      names.push_back(arg.second);
    }
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();

    // The signature with the attributes of every argument.
    SmallVector<DictionaryAttr> argAttrs;
    for (BlockArgument arg : body.getArguments()) {
      (void)arg;
      argAttrs.push_back(b.getDictionaryAttr({}));
    }
    // Copy @forward's argument attributes to the arguments they map to.
    for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
      unsigned index =
          i < paramCount ? i : i + accumulators.size() + stateArgs.size();
      SmallVector<NamedAttribute> attrs(forward.getArgAttrDict(i) ? forward.getArgAttrDict(i).getValue() : ArrayRef<NamedAttribute>());
      if (llvm::is_contained(frozenByWarning, i))
        attrs.push_back(
            b.getNamedAttr(sgraph::attr::kFrozen, b.getUnitAttr()));
      argAttrs[index] = b.getDictionaryAttr(attrs);
    }
    for (auto [k, acc] : llvm::enumerate(accumulators))
      argAttrs[paramCount + k] = b.getDictionaryAttr(b.getNamedAttr(
          sgraph::attr::kAccumulator, b.getStringAttr(acc.second)));
    for (auto [k, state] : llvm::enumerate(stateArgs))
      argAttrs[paramCount + accumulators.size() + k] =
          b.getDictionaryAttr(b.getNamedAttr(sgraph::attr::kOptState,
                                             b.getStringAttr(state.second)));
    if (microBatches)
      argAttrs[cast<BlockArgument>(microBatches).getArgNumber()] =
          microBatchesAttrs(b, config->gradAccumulationSteps);
    unsigned stepIndex = cast<BlockArgument>(step).getArgNumber();
    argAttrs[stepIndex] = b.getDictionaryAttr(
        b.getNamedAttr(sgraph::attr::kStep, b.getUnitAttr()));
    if (lossScale)
      argAttrs[cast<BlockArgument>(lossScale).getArgNumber()] =
          lossScaleAttrs(b, *config);
    if (lossCount)
      argAttrs[cast<BlockArgument>(lossCount).getArgNumber()] =
          lossCountAttrs(b);
    if (peakLr)
      argAttrs[cast<BlockArgument>(peakLr).getArgNumber()] =
          b.getDictionaryAttr(
              {b.getNamedAttr(sgraph::attr::kHyper, b.getStringAttr("lr")),
               b.getNamedAttr(sgraph::attr::kDefault,
                              b.getF64FloatAttr(config->lr))});

    fn.setFunctionType(FunctionType::get(
        &getContext(), body.getArgumentTypes(), ValueRange(results).getTypes()));
    fn.setAllArgAttrs(argAttrs);
    setResultNames(fn, names);
    if (config->gradAccumulationSteps > 1)
      return buildAccumulateStep(module, forward, *config);
    return success();
  }

  /// The number of leading arguments up to the last parameter.
  static unsigned paramArgCount(func::FuncOp forward) {
    unsigned count = 0;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      if (forward.getArgAttr(i, sgraph::attr::kParam))
        count = i + 1;
    return count;
  }

  static std::string accumulatorName(StringRef param) {
    return ("grad_accum." + param).str();
  }

  /// @train_step's side of accumulation: an accumulator argument per
  /// gradient (inserted at `at`, in `params` order), and each gradient
  /// replaced by (accumulator + gradient) / K, K the "grad_accumulation_steps"
  /// hyper argument it returns (appended, f64 as hyper arguments are).
  static Value
  addAccumulation(OpBuilder &b, Block &body, unsigned at,
                  MutableArrayRef<ParamGradient> params,
                  SmallVectorImpl<std::pair<Value, std::string>> &accumulators) {
    Location loc = body.getParentOp()->getLoc();
    Value k = body.addArgument(RankedTensorType::get({}, b.getF64Type()), loc);
    for (ParamGradient &p : params) {
      Value acc = body.insertArgument(at + accumulators.size(),
                                      p.param.getType(), loc);
      accumulators.push_back({acc, accumulatorName(p.name)});
      auto type = cast<RankedTensorType>(p.grad.getType());
      Value kOfType = k;
      if (type.getElementType() != b.getF64Type())
        kOfType = b.create<sgraph::CastOp>(
            loc, RankedTensorType::get({}, type.getElementType()), k);
      Value sum = b.create<sgraph::AddOp>(loc, acc, p.grad);
      p.grad = b.create<sgraph::DivOp>(loc, sum, kOfType);
    }
    return k;
  }

  static DictionaryAttr microBatchesAttrs(Builder &b, int64_t k) {
    return b.getDictionaryAttr(
        {b.getNamedAttr(sgraph::attr::kHyper,
                        b.getStringAttr(sinter::abi::kGradAccumulationHyper)),
         b.getNamedAttr(sgraph::attr::kDefault,
                        b.getF64FloatAttr(static_cast<double>(k)))});
  }

  /// @accumulate_step(params, accumulators, inputs...[, step][, rank]) ->
  /// (loss, metrics..., accumulators'): the forward and backward pass of one
  /// micro-batch that is not a step's last, each gradient added to its
  /// accumulator. The parameters and accumulators are the ones @train_step
  /// takes, in the same order, so that both programs lay them out alike.
  LogicalResult buildAccumulateStep(ModuleOp module, func::FuncOp forward,
                                    const TrainingConfig &config) {
    if (module.lookupSymbol("accumulate_step"))
      return module.emitError("@accumulate_step already exists");
    func::FuncOp fn = cloneForward(forward, "accumulate_step");
    Block &body = fn.front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    OpBuilder b(ret);
    SmallVector<unsigned> trainable = trainableArgs(forward);
    // With loss scaling the accumulators sum scaled gradients; @train_step
    // divides the total by the same scale.
    Value lossScale = addLossScale(body, config);
    Value lossCount = addLossCount(body, ret.getOperand(0));
    auto grads = gradientsOf(b, body, trainable, ret.getOperand(0), lossScale);
    if (failed(grads))
      return failure();

    unsigned paramCount = paramArgCount(forward);
    SmallVector<Value> results(ret.getOperands());
    SmallVector<std::string> names;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i)
      names.push_back(sgraph::resultName(forward, i));
    SmallVector<std::string> accumulators;
    for (auto [i, g] : llvm::zip(trainable, *grads)) {
      if (!g)
        continue; // no gradient, no update (@train_step warns)
      std::string name = accumulatorName(sgraph::argumentName(forward, i));
      Value acc = body.insertArgument(paramCount + accumulators.size(),
                                      g.getType(), forward.getLoc());
      b.setInsertionPoint(ret);
      results.push_back(b.create<sgraph::AddOp>(forward.getLoc(), acc, g));
      names.push_back(name);
      accumulators.push_back(name);
    }
    b.setInsertionPoint(ret);
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();

    SmallVector<DictionaryAttr> argAttrs(body.getNumArguments(),
                                         b.getDictionaryAttr({}));
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      if (DictionaryAttr attrs = forward.getArgAttrDict(i))
        argAttrs[i < paramCount ? i : i + accumulators.size()] = attrs;
    for (auto [k, name] : llvm::enumerate(accumulators))
      argAttrs[paramCount + k] = b.getDictionaryAttr(b.getNamedAttr(
          sgraph::attr::kAccumulator, b.getStringAttr(name)));
    if (lossScale)
      argAttrs[cast<BlockArgument>(lossScale).getArgNumber()] =
          lossScaleAttrs(b, config);
    if (lossCount)
      argAttrs[cast<BlockArgument>(lossCount).getArgNumber()] =
          lossCountAttrs(b);
    fn.setFunctionType(FunctionType::get(
        &getContext(), body.getArgumentTypes(), ValueRange(results).getTypes()));
    fn.setAllArgAttrs(argAttrs);
    setResultNames(fn, names);
    return success();
  }

  /// Settings that are likely mistakes.
  static void warnAboutPendingFeatures(const TrainingConfig &config,
                                       Location loc) {
    if (config.precision == "fp16_mixed" && config.lossScale == "none")
      emitWarning(loc) << "training.precision fp16_mixed with loss_scale "
                          "NONE: gradients below 2^-24 flush to zero in f16";
  }
};

} // namespace
