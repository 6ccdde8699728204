//===- ImportTraining.cpp - loss, metrics and the training section -------===//
//
// The loss becomes @forward's first result and the metrics the rest; the
// training section is checked and stored as the module's `sgraph.training`
// dictionary, which the training phase (passes/Autodiff.cpp) reads. Its keys
// are listed in docs/ModelFormat.md.
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer/ModelImporter.h"

#include "abi/Abi.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace sinter;
using namespace sinter::importer;

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

namespace {

bool isFloat(Value v) {
  return isa<FloatType>(ModelImporter::typeOf(v).getElementType());
}

bool isInteger(Value v) {
  Type t = ModelImporter::typeOf(v).getElementType();
  return t.isInteger(32) || t.isInteger(64);
}

} // namespace

Value ModelImporter::emitLoss(const Node &root, const Bindings &bindings) {
  const model::Model &m = *model;
  if (!m.has_loss()) {
    error(root.loc) << "the model has no loss";
    return {};
  }
  Node node = child(root, "loss");
  Location loc = named("loss", node.loc);
  const model::Loss &loss = m.loss();
  switch (loss.kind_case()) {
  case model::Loss::kSoftmaxCrossEntropy: {
    Node ce = child(node, "softmax_cross_entropy");
    const auto &spec = loss.softmax_cross_entropy();
    Value logits = lookup(bindings, spec.logits(), fieldLoc(ce, "logits"),
                          "logits");
    if (!logits)
      return {};
    Value labels = lookup(bindings, spec.labels(), fieldLoc(ce, "labels"),
                          "labels");
    if (!labels)
      return {};
    if (!isFloat(logits) || typeOf(logits).getRank() < 1) {
      error(fieldLoc(ce, "logits"))
          << "logits '" << spec.logits() << "' must be a float tensor, got "
          << logits.getType();
      return {};
    }
    if (!isInteger(labels) ||
        typeOf(labels).getShape() != typeOf(logits).getShape().drop_back()) {
      error(fieldLoc(ce, "labels"))
          << "labels '" << spec.labels() << "' must be integers shaped like "
          << "the logits " << logits.getType()
          << " without their last axis, got " << labels.getType();
      return {};
    }
    // No count: the training step gives it one (sinter-autodiff).
    return create<sgraph::SoftmaxCrossEntropyOp>(
        loc, logits, labels, mlir::Value(),
        builder.getI64IntegerAttr(spec.ignore_index()),
        builder.getStringAttr("mean"));
  }
  case model::Loss::kMeanSquaredError: {
    Node mse = child(node, "mean_squared_error");
    const auto &spec = loss.mean_squared_error();
    Value prediction = lookup(bindings, spec.prediction(),
                              fieldLoc(mse, "prediction"), "prediction");
    if (!prediction)
      return {};
    Value target =
        lookup(bindings, spec.target(), fieldLoc(mse, "target"), "target");
    if (!target)
      return {};
    if (!isFloat(prediction) || prediction.getType() != target.getType()) {
      error(fieldLoc(mse, "target"))
          << "prediction and target must be float tensors of one type, got "
          << prediction.getType() << " and " << target.getType();
      return {};
    }
    // mean((prediction - target)^2), as nn.MSELoss.
    Value diff = create<sgraph::SubOp>(loc, prediction, target);
    Value square = create<sgraph::MulOp>(loc, diff, diff);
    SmallVector<int64_t> all(typeOf(prediction).getRank());
    std::iota(all.begin(), all.end(), 0);
    return create<sgraph::ReduceMeanOp>(loc, square,
                                        builder.getDenseI64ArrayAttr(all),
                                        builder.getBoolAttr(false));
  }
  case model::Loss::kValue: {
    Value v = lookup(bindings, loss.value(), fieldLoc(node, "value"), "loss");
    if (!v)
      return {};
    if (!isFloat(v) || typeOf(v).getRank() != 0) {
      error(fieldLoc(node, "value"))
          << "the loss must be a 0-d float tensor, '" << loss.value()
          << "' is " << v.getType();
      return {};
    }
    return v;
  }
  case model::Loss::KIND_NOT_SET:
    break;
  }
  error(node.loc) << "loss needs one of softmax_cross_entropy, "
                     "mean_squared_error, value";
  return {};
}

//===----------------------------------------------------------------------===//
// Metrics
//===----------------------------------------------------------------------===//

bool ModelImporter::emitMetrics(const Node &root, const Bindings &bindings,
                                SmallVectorImpl<Value> &values,
                                SmallVectorImpl<std::string> &names) {
  for (int i = 0; i < model->metric_size(); ++i) {
    Node node = child(root, "metric", i);
    const model::Metric &metric = model->metric(i);
    Location nameLoc = fieldLoc(node, "name");
    if (!metric.has_name() || metric.name().empty()) {
      error(node.loc) << "metric needs a name";
      return false;
    }
    if (llvm::is_contained(names, metric.name()) || metric.name() == "lr" ||
        metric.name() == "grad_norm") {
      error(nameLoc) << "metric name '" << metric.name()
                     << "' is already used (loss, lr and grad_norm are "
                        "reserved)";
      return false;
    }
    Location loc = named(metric.name(), node.loc);
    Value value;
    switch (metric.kind_case()) {
    case model::Metric::kAccuracy: {
      Node acc = child(node, "accuracy");
      const auto &spec = metric.accuracy();
      Value logits = lookup(bindings, spec.logits(), fieldLoc(acc, "logits"),
                            "logits");
      if (!logits)
        return false;
      Value labels = lookup(bindings, spec.labels(), fieldLoc(acc, "labels"),
                            "labels");
      if (!labels)
        return false;
      if (!isFloat(logits) || typeOf(logits).getRank() < 1 ||
          !isInteger(labels) ||
          typeOf(labels).getShape() != typeOf(logits).getShape().drop_back()) {
        error(acc.loc) << "accuracy needs float logits and integer labels "
                          "shaped like the logits without their last axis, "
                          "got "
                       << logits.getType() << " and " << labels.getType();
        return false;
      }
      // sum(argmax == label, over labels != ignore_index) / count(valid)
      Type labelType = typeOf(labels).getElementType();
      Value predicted = create<sgraph::ArgmaxOp>(
          loc, logits,
          builder.getI64IntegerAttr(typeOf(logits).getRank() - 1));
      if (!labelType.isInteger(64))
        predicted = createTyped<sgraph::CastOp>(
            loc, typeOf(labels), predicted);
      Value correct = create<sgraph::CompareOp>(loc, predicted, labels,
                                                builder.getStringAttr("eq"));
      Value valid = create<sgraph::CompareOp>(
          loc, labels,
          scalarConstant(labelType, double(spec.ignore_index()), loc),
          builder.getStringAttr("ne"));
      auto asFloat = [&](Value mask) {
        return createTyped<sgraph::CastOp>(
            loc, floatTensor(typeOf(mask).getShape()), mask);
      };
      Value validF = asFloat(valid);
      Value hits = create<sgraph::MulOp>(loc, asFloat(correct), validF);
      SmallVector<int64_t> all(typeOf(labels).getRank());
      std::iota(all.begin(), all.end(), 0);
      auto total = [&](Value v) {
        return create<sgraph::ReduceSumOp>(loc, v,
                                           builder.getDenseI64ArrayAttr(all),
                                           builder.getBoolAttr(false));
      };
      Value correctCount = total(hits);
      Value validCount = total(validF);
      value = create<sgraph::DivOp>(loc, correctCount, validCount);
      labelMetrics.push_back({metric.name(), labels, spec.ignore_index()});
      break;
    }
    case model::Metric::kValue:
      value = lookup(bindings, metric.value(), fieldLoc(node, "value"),
                     "metric value");
      if (value && typeOf(value).getRank() != 0) {
        error(fieldLoc(node, "value"))
            << "a metric must be a 0-d tensor, '" << metric.value() << "' is "
            << value.getType();
        return false;
      }
      break;
    case model::Metric::KIND_NOT_SET:
      error(node.loc) << "metric '" << metric.name()
                      << "' needs one of accuracy, value";
      return false;
    }
    if (!value)
      return false;
    values.push_back(value);
    names.push_back(metric.name());
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Training section
//===----------------------------------------------------------------------===//

namespace {

/// Collects the dictionary entries, reporting the first bad value.
class ConfigBuilder {
public:
  ConfigBuilder(ModelImporter &im) : im(im), b(im.builder) {}

  bool number(const Node &node, StringRef field, StringRef key, double value,
              double min, double max, bool maxExclusive = false) {
    if (!std::isfinite(value) || value < min ||
        (maxExclusive ? value >= max : value > max)) {
      auto diag = im.error(im.fieldLoc(node, field));
      diag << field << " " << formatNumber(value) << " is out of range ["
           << formatNumber(min) << ", " << formatNumber(max)
           << (maxExclusive ? ")" : "]");
      return false;
    }
    entries.push_back(b.getNamedAttr(key, b.getF64FloatAttr(value)));
    return true;
  }

  bool integer(const Node &node, StringRef field, StringRef key, int64_t value,
               int64_t min, int64_t max) {
    if (value < min || value > max) {
      im.error(im.fieldLoc(node, field))
          << field << " " << value << " is out of range [" << min << ", "
          << max << "]";
      return false;
    }
    entries.push_back(b.getNamedAttr(key, b.getI64IntegerAttr(value)));
    return true;
  }

  void string(StringRef key, StringRef value) {
    entries.push_back(b.getNamedAttr(key, b.getStringAttr(value)));
  }
  void flag(StringRef key, bool value) {
    entries.push_back(b.getNamedAttr(key, b.getBoolAttr(value)));
  }
  void dict(StringRef key, DictionaryAttr value) {
    entries.push_back(b.getNamedAttr(key, value));
  }
  DictionaryAttr get() { return b.getDictionaryAttr(entries); }

private:
  ModelImporter &im;
  OpBuilder &b;
  SmallVector<NamedAttribute> entries;
};

constexpr int64_t kMaxSteps = int64_t(1) << 50;

} // namespace

DictionaryAttr ModelImporter::trainingConfig(const Node &root) {
  Node node = child(root, "training");
  const model::Training &t = model->training();
  ConfigBuilder config(*this);
  constexpr double kHuge = abi::kMaxHyperparameter;

  if (!config.integer(node, "batch_size", "batch_size", batchSize, 1,
                      int64_t(1) << 31) ||
      !config.integer(node, "seed", "seed", t.seed(), 0,
                      std::numeric_limits<int64_t>::max()))
    return {};

  // Optimizer.
  if (t.has_optimizer()) {
    Node optNode = child(node, "optimizer");
    const model::Optimizer &opt = t.optimizer();
    ConfigBuilder o(*this);
    switch (opt.kind_case()) {
    case model::Optimizer::kSgd: {
      Node n = child(optNode, "sgd");
      const model::Sgd &sgd = opt.sgd();
      o.string("kind", "sgd");
      if (!o.number(n, "lr", "lr", sgd.lr(), 0, kHuge) ||
          !o.number(n, "momentum", "momentum", sgd.momentum(), 0, kHuge) ||
          !o.number(n, "dampening", "dampening", sgd.dampening(), 0, 1) ||
          !o.number(n, "weight_decay", "weight_decay", sgd.weight_decay(), 0,
                    kHuge))
        return {};
      if (sgd.nesterov() && (sgd.momentum() <= 0 || sgd.dampening() != 0)) {
        error(fieldLoc(n, "nesterov"))
            << "nesterov needs momentum > 0 and dampening 0 (as "
               "torch.optim.SGD)";
        return {};
      }
      o.flag("nesterov", sgd.nesterov());
      break;
    }
    case model::Optimizer::kAdam:
    case model::Optimizer::kAdamw: {
      bool decoupled = opt.kind_case() == model::Optimizer::kAdamw;
      Node n = child(optNode, decoupled ? "adamw" : "adam");
      const model::Adam &adam = decoupled ? opt.adamw() : opt.adam();
      o.string("kind", decoupled ? "adamw" : "adam");
      // torch.optim.AdamW decays by 0.01 unless told otherwise; Adam by 0.
      double wd = adam.has_weight_decay() ? adam.weight_decay()
                                          : (decoupled ? 0.01 : 0.0);
      if (!o.number(n, "lr", "lr", adam.lr(), 0, kHuge) ||
          !o.number(n, "beta1", "beta1", adam.beta1(), 0, 1, true) ||
          !o.number(n, "beta2", "beta2", adam.beta2(), 0, 1, true) ||
          !o.number(n, "epsilon", "epsilon", adam.epsilon(), 0, kHuge) ||
          !o.number(n, "weight_decay", "weight_decay", wd, 0, kHuge))
        return {};
      break;
    }
    case model::Optimizer::KIND_NOT_SET:
      error(optNode.loc) << "optimizer needs one of sgd, adam, adamw";
      return {};
    }
    o.string("weight_decay_params",
             opt.weight_decay_params() == model::MATRICES ? "matrices" : "all");
    config.dict("optimizer", o.get());
  }

  // Learning-rate schedule.
  {
    Node sNode = child(node, "lr_schedule");
    ConfigBuilder s(*this);
    const model::LrSchedule &schedule = t.lr_schedule();
    switch (schedule.kind_case()) {
    case model::LrSchedule::KIND_NOT_SET:
      s.string("kind", "constant");
      s.integer(sNode, "warmup_steps", "warmup_steps", 0, 0, 0);
      break;
    case model::LrSchedule::kConstant: {
      Node n = child(sNode, "constant");
      s.string("kind", "constant");
      if (!s.integer(n, "warmup_steps", "warmup_steps",
                     schedule.constant().warmup_steps(), 0, kMaxSteps))
        return {};
      break;
    }
    case model::LrSchedule::kWarmupCosine: {
      Node n = child(sNode, "warmup_cosine");
      const model::WarmupCosineLr &wc = schedule.warmup_cosine();
      s.string("kind", "warmup_cosine");
      if (!wc.has_decay_steps()) {
        error(n.loc) << "warmup_cosine needs decay_steps";
        return {};
      }
      double peak = 0;
      if (t.optimizer().has_sgd())
        peak = t.optimizer().sgd().lr();
      else if (t.optimizer().has_adam())
        peak = t.optimizer().adam().lr();
      else if (t.optimizer().has_adamw())
        peak = t.optimizer().adamw().lr();
      if (!s.integer(n, "warmup_steps", "warmup_steps", wc.warmup_steps(), 0,
                     kMaxSteps) ||
          !s.integer(n, "decay_steps", "decay_steps", wc.decay_steps(),
                     wc.warmup_steps() + 1, kMaxSteps) ||
          !s.number(n, "min_lr", "min_lr", wc.min_lr(), 0, peak))
        return {};
      break;
    }
    }
    config.dict("lr_schedule", s.get());
  }

  if (!config.number(node, "grad_clip", "grad_clip", t.grad_clip(), 0, kHuge))
    return {};

  // For sinter-mixed-precision (docs/MixedPrecision.md); the command line
  // may override it (sinterc --precision, checked there).
  if (options.precision) {
    config.string("precision", *options.precision);
  } else {
    switch (t.precision()) {
    case model::PRECISION_UNSPECIFIED:
    case model::FP32:
      config.string("precision", "fp32");
      break;
    case model::BF16_MIXED:
      config.string("precision", "bf16_mixed");
      break;
    case model::FP16_MIXED:
      config.string("precision", "fp16_mixed");
      break;
    }
  }
  {
    // Loss scaling: dynamic by default for f16, none otherwise.
    Node sNode = child(node, "loss_scale");
    const model::LossScale &ls = t.loss_scale();
    std::string precision = options.precision.value_or(
        t.precision() == model::FP16_MIXED ? "fp16_mixed" : "");
    ConfigBuilder s(*this);
    switch (ls.kind()) {
    case model::LossScale::KIND_UNSPECIFIED:
      s.string("kind", precision == "fp16_mixed" ? "dynamic" : "none");
      break;
    case model::LossScale::NONE:
      s.string("kind", "none");
      break;
    case model::LossScale::STATIC:
      s.string("kind", "static");
      break;
    case model::LossScale::DYNAMIC:
      s.string("kind", "dynamic");
      break;
    }
    if (!s.number(sNode, "init_scale", "init_scale", ls.init_scale(), 0x1p-24,
                  0x1p64) ||
        !s.number(sNode, "growth_factor", "growth_factor", ls.growth_factor(),
                  1, 1024) ||
        !s.number(sNode, "backoff_factor", "backoff_factor",
                  ls.backoff_factor(), 0x1p-10, 1, /*maxExclusive=*/true) ||
        !s.integer(sNode, "growth_interval", "growth_interval",
                   ls.growth_interval(), 1, kMaxSteps) ||
        !s.integer(sNode, "max_consecutive_overflows",
                   "max_consecutive_overflows", ls.max_consecutive_overflows(),
                   1, 1 << 20))
      return {};
    // Absent when off, so that models without it keep their IR.
    if (s.get().getAs<StringAttr>("kind").getValue() != "none")
      config.dict("loss_scale", s.get());
  }
  if (!config.integer(node, "grad_accumulation_steps",
                      "grad_accumulation_steps", t.grad_accumulation_steps(),
                      1, abi::kMaxGradAccumulationSteps))
    return {};
  {
    Node rNode = child(node, "recompute");
    ConfigBuilder r(*this);
    switch (t.recompute().policy()) {
    case model::Recompute::POLICY_UNSPECIFIED:
    case model::Recompute::NONE:
      r.string("policy", "none");
      break;
    case model::Recompute::BLOCKS:
      r.string("policy", "blocks");
      break;
    case model::Recompute::BUDGET:
      r.string("policy", "budget");
      if (t.recompute().budget_bytes() < 1) {
        error(fieldLoc(rNode, "budget_bytes"))
            << "policy BUDGET needs budget_bytes >= 1";
        return {};
      }
      break;
    }
    if (!r.integer(rNode, "budget_bytes", "budget_bytes",
                   t.recompute().budget_bytes(), 0,
                   std::numeric_limits<int64_t>::max()))
      return {};
    config.dict("recompute", r.get());
  }
  {
    Node dNode = child(node, "data_parallel");
    ConfigBuilder d(*this);
    if (t.data_parallel().world_size() < 1 ||
        t.data_parallel().world_size() > (1 << 16)) {
      error(fieldLoc(dNode, "world_size"))
          << "world_size " << t.data_parallel().world_size()
          << " is out of range [1, 65536]";
      return {};
    }
    if (t.data_parallel().world_size() != 1)
      mlir::emitWarning(fieldLoc(dNode, "world_size"))
          << "world_size is read when the binary starts (sinter-launch -n N, "
             "WORLD_SIZE, mpirun, srun), not compiled in; this value is "
             "ignored";
    d.flag("gradients_mean", t.data_parallel().gradients_mean());
    switch (t.data_parallel().grad_comm_dtype()) {
    case model::DataParallel::COMM_DTYPE_UNSPECIFIED:
    case model::DataParallel::FP32:
      break;
    case model::DataParallel::BF16:
      d.string("grad_comm_dtype", "bf16");
      break;
    case model::DataParallel::FP16:
      d.string("grad_comm_dtype", "f16");
      break;
    }
    config.dict("data_parallel", d.get());
  }
  return config.get();
}
