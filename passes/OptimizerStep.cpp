//===- OptimizerStep.cpp - clipping, schedule and updates ----------------===//
//
// After the gradients g_i of the trainable parameters p_i are known:
//
//   grad_norm = global_norm(g_0, g_1, ...)                (always, for logs)
//   with data parallelism, each g_i is first averaged across ranks;
//   with grad_clip > 0:  c = min(grad_clip / (grad_norm + 1e-6), 1)
//                        g_i = g_i * c   (torch.nn.utils.clip_grad_norm_)
//   lr = lr_schedule(step)     (peak from a runtime `lr` argument if given)
//   p_i', state_i' = <optimizer>_update(p_i, g_i, state_i, lr, step)
//
// Weight decay goes to every parameter, or with weight_decay_params =
// matrices only to those of rank >= 2 (nanoGPT's grouping: no biases, no
// norms). The update ops themselves carry PyTorch's formulas (GraphOps.td).
//
//===----------------------------------------------------------------------===//

#include "passes/OptimizerStep.h"

#include "abi/Abi.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Diagnostics.h"

#include <limits>

using namespace mlir;
using namespace sinter;

namespace {

double getDouble(DictionaryAttr dict, StringRef key, double fallback) {
  if (auto attr = dict.getAs<FloatAttr>(key))
    return attr.getValueAsDouble();
  return fallback;
}

int64_t getInt(DictionaryAttr dict, StringRef key, int64_t fallback) {
  if (auto attr = dict.getAs<IntegerAttr>(key))
    return attr.getInt();
  return fallback;
}

std::string getString(DictionaryAttr dict, StringRef key,
                      StringRef fallback) {
  if (auto attr = dict.getAs<StringAttr>(key))
    return attr.str();
  return fallback.str();
}

} // namespace

FailureOr<TrainingConfig> sinter::readTrainingConfig(ModuleOp module,
                                                     Location loc) {
  auto training = module->getAttrOfType<DictionaryAttr>(sgraph::attr::kTraining);
  if (!training)
    return emitError(loc) << "the module has no '" << sgraph::attr::kTraining
                          << "' configuration";
  auto optimizer = training.getAs<DictionaryAttr>("optimizer");
  if (!optimizer)
    return emitError(loc) << "the model has no training.optimizer; the "
                             "training step needs one (sgd, adam or adamw)";
  TrainingConfig c;
  c.optimizer = getString(optimizer, "kind", "");
  if (c.optimizer != "sgd" && c.optimizer != "adam" && c.optimizer != "adamw")
    return emitError(loc) << "unknown optimizer '" << c.optimizer << "'";
  c.lr = getDouble(optimizer, "lr", c.lr);
  c.momentum = getDouble(optimizer, "momentum", 0);
  c.dampening = getDouble(optimizer, "dampening", 0);
  if (auto nesterov = optimizer.getAs<BoolAttr>("nesterov"))
    c.nesterov = nesterov.getValue();
  c.beta1 = getDouble(optimizer, "beta1", c.beta1);
  c.beta2 = getDouble(optimizer, "beta2", c.beta2);
  c.epsilon = getDouble(optimizer, "epsilon", c.epsilon);
  c.weightDecay = getDouble(optimizer, "weight_decay", 0);
  c.decayMatricesOnly =
      getString(optimizer, "weight_decay_params", "all") == "matrices";
  if (auto schedule = training.getAs<DictionaryAttr>("lr_schedule")) {
    c.schedule = getString(schedule, "kind", "constant");
    c.warmupSteps = getInt(schedule, "warmup_steps", 0);
    c.decaySteps = getInt(schedule, "decay_steps", 0);
    c.minLr = getDouble(schedule, "min_lr", 0);
  }
  c.gradClip = getDouble(training, "grad_clip", 0);
  if (auto dp = training.getAs<DictionaryAttr>("data_parallel")) {
    if (auto mean = dp.getAs<BoolAttr>("gradients_mean"))
      c.gradientsMean = mean.getValue();
    c.gradCommDtype = getString(dp, "grad_comm_dtype", "");
  }
  c.precision = getString(training, "precision", "fp32");
  c.gradAccumulationSteps = getInt(training, "grad_accumulation_steps", 1);
  if (auto scale = training.getAs<DictionaryAttr>("loss_scale")) {
    c.lossScale = getString(scale, "kind", "none");
    c.initScale = getDouble(scale, "init_scale", c.initScale);
  }
  if (auto recompute = training.getAs<DictionaryAttr>("recompute"))
    c.recompute = getString(recompute, "policy", "none");
  return c;
}

OptimizerStepValues sinter::emitOptimizerStep(OpBuilder &b, Location loc,
                                              const TrainingConfig &config,
                                              ArrayRef<ParamGradient> params,
                                              Value step,
                                              AddStateFn addState,
                                              Value peakLr) {
  OptimizerStepValues out;
  // Scalars (norm, lr, clip factor) are f64 for f64 models, else f32.
  bool anyF64 = llvm::any_of(params, [](const ParamGradient &p) {
    return cast<RankedTensorType>(p.param.getType()).getElementType().isF64();
  });
  Type scalarElement = anyF64 ? Type(b.getF64Type()) : Type(b.getF32Type());
  auto scalarType = RankedTensorType::get({}, scalarElement);
  auto scalar = [&](double v, Type element) {
    return sgraph::buildScalarConstant(b, loc, element, v);
  };
  auto castScalar = [&](Value v, Type element) -> Value {
    auto type = RankedTensorType::get({}, element);
    return v.getType() == type ? v : b.create<sgraph::CastOp>(loc, type, v);
  };

  SmallVector<Value> grads;
  for (const ParamGradient &p : params) {
    Value g = p.grad;
    // Data parallelism: every rank steps with the mean (or sum) of the ranks'
    // gradients, whatever the world size the binary runs at (one rank: the
    // gradient itself). sinter-bucket-gradients merges these into buckets.
    // f32 gradients may travel as bf16 or f16 (data_parallel's
    // grad_comm_dtype); others as they are.
    StringAttr wire;
    if (!config.gradCommDtype.empty() &&
        cast<RankedTensorType>(g.getType()).getElementType().isF32())
      wire = b.getStringAttr(config.gradCommDtype);
    g = b.create<sgraph::AllReduceOp>(
              loc, ValueRange{g},
              b.getStringAttr(config.gradientsMean ? "mean" : "sum"), wire)
            .getResult(0);
    grads.push_back(g);
  }

  if (!grads.empty()) {
    out.gradNorm = b.create<sgraph::GlobalNormOp>(loc, scalarType, grads);
  } else {
    out.gradNorm = scalar(0.0, scalarElement);
  }
  if (config.gradClip > 0 && !grads.empty()) {
    Value denom = b.create<sgraph::AddOp>(loc, out.gradNorm,
                                          scalar(1e-6, scalarElement));
    Value coef = b.create<sgraph::DivOp>(
        loc, scalar(config.gradClip, scalarElement), denom);
    coef = b.create<sgraph::MinimumOp>(loc, coef, scalar(1.0, scalarElement));
    for (Value &g : grads) {
      Type element = cast<RankedTensorType>(g.getType()).getElementType();
      g = b.create<sgraph::MulOp>(loc, g, castScalar(coef, element));
    }
  }

  out.lr = b.create<sgraph::LrScheduleOp>(
      loc, scalarType, step, peakLr, b.getStringAttr(config.schedule),
      b.getF64FloatAttr(config.lr), b.getF64FloatAttr(config.minLr),
      b.getI64IntegerAttr(config.warmupSteps),
      b.getI64IntegerAttr(config.decaySteps));

  // Loss scaling: skip the update when the gradients overflowed. The norm
  // is computed from the all-reduced gradients, so every rank decides
  // alike; NaN fails `< inf` too.
  Value finite, optimizerStep, newOptimizerStep;
  bool skips = config.lossScale != "none" && !params.empty();
  if (skips) {
    Value inf = scalar(std::numeric_limits<double>::infinity(), scalarElement);
    finite = b.create<sgraph::CompareOp>(loc, out.gradNorm, inf,
                                         b.getStringAttr("lt"));
    auto f32 = RankedTensorType::get({}, b.getF32Type());
    optimizerStep = addState(
        f32, llvm::StringRef(sinter::abi::kOptimizerStepState.data(),
                             sinter::abi::kOptimizerStepState.size()));
    out.stateArgs.push_back(optimizerStep);
    Value next = b.create<sgraph::AddOp>(loc, optimizerStep,
                                         scalar(1.0, b.getF32Type()));
    newOptimizerStep =
        b.create<sgraph::SelectOp>(loc, f32, finite, next, optimizerStep);
    step = b.create<sgraph::CastOp>(
        loc, RankedTensorType::get({}, b.getI64Type()), optimizerStep);
  }
  auto keep = [&](Value updated, Value old) -> Value {
    if (!skips)
      return updated;
    return b.create<sgraph::SelectOp>(loc, old.getType(), finite, updated,
                                      old);
  };

  for (auto [p, g] : llvm::zip(params, grads)) {
    // A parameter's update is at the layer that owns it (its argument's
    // location), so that a report of a non-finite update names that layer.
    Location at = p.param.getLoc();
    Type type = p.param.getType();
    bool decays = !config.decayMatricesOnly ||
                  cast<RankedTensorType>(type).getRank() >= 2;
    FloatAttr wd = b.getF64FloatAttr(decays ? config.weightDecay : 0.0);
    auto state = [&](StringRef slot) {
      Value arg = addState(type, "optimizer." + p.name + "." + slot.str());
      out.stateArgs.push_back(arg);
      return arg;
    };
    if (config.optimizer == "sgd" && config.momentum == 0) {
      out.newParams.push_back(keep(
          b.create<sgraph::SgdUpdateOp>(at, p.param, g, out.lr, wd),
          p.param));
    } else if (config.optimizer == "sgd") {
      Value buffer = state("momentum_buffer");
      auto update = b.create<sgraph::MomentumUpdateOp>(
          at, p.param, g, buffer, out.lr, step,
          b.getF64FloatAttr(config.momentum),
          b.getF64FloatAttr(config.dampening), b.getBoolAttr(config.nesterov),
          wd);
      out.newParams.push_back(keep(update.getNewParam(), p.param));
      out.newState.push_back(keep(update.getNewMomentumBuffer(), buffer));
    } else {
      Value expAvg = state("exp_avg");
      Value expAvgSq = state("exp_avg_sq");
      auto update = b.create<sgraph::AdamUpdateOp>(
          at, p.param, g, expAvg, expAvgSq, out.lr, step,
          b.getF64FloatAttr(config.beta1), b.getF64FloatAttr(config.beta2),
          b.getF64FloatAttr(config.epsilon), wd,
          b.getBoolAttr(config.optimizer == "adamw"));
      out.newParams.push_back(keep(update.getNewParam(), p.param));
      out.newState.push_back(keep(update.getNewExpAvg(), expAvg));
      out.newState.push_back(keep(update.getNewExpAvgSq(), expAvgSq));
    }
  }
  // The step count's state comes first among the state tensors (it was
  // added first), so its new value does too.
  if (skips)
    out.newState.insert(out.newState.begin(), newOptimizerStep);
  return out;
}
