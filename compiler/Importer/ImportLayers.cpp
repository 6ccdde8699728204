//===- ImportLayers.cpp - the built-in layers of a model description -----===//
//
// Each built-in layer becomes a few sgraph ops and its parameters, named as
// PyTorch names the same module's state_dict entries, with PyTorch's (or,
// for the GPT layers, nanoGPT's) default initializers. Shapes are checked
// here, before any op is built, so that errors name the layer and its field.
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer/BatchAxes.h"
#include "compiler/Importer/ModelImporter.h"

#include <cmath>

using namespace mlir;
using namespace sinter;
using namespace sinter::importer;

namespace {

StringRef layerName(const Node &layer) {
  return static_cast<const model::Layer &>(*layer.msg).name();
}

LayerContext childContext(const LayerContext &ctx, StringRef part) {
  LayerContext sub = ctx;
  sub.prefix = ctx.prefix + part.str() + ".";
  return sub;
}

} // namespace

Value ModelImporter::emitLayerOnce(const Node &layer, ArrayRef<Value> inputs,
                                   const LayerContext &ctx) {
  const auto &spec = static_cast<const model::Layer &>(*layer.msg);
  if (++layerCount > ImportLimits::kMaxLayers) {
    error(layer.loc) << "the model expands to more than "
                     << ImportLimits::kMaxLayers
                     << " layers (through repeat and blocks)";
    return {};
  }
  if (opCount > ImportLimits::kMaxOps) {
    error(layer.loc) << "the model expands to more than "
                     << ImportLimits::kMaxOps
                     << " ops (through repeat and blocks)";
    return {};
  }
  auto expectInputs = [&](size_t n) {
    if (inputs.size() == n)
      return true;
    error(layer.loc) << "layer '" << spec.name() << "' takes " << n
                     << (n == 1 ? " input" : " inputs") << ", got "
                     << inputs.size();
    return false;
  };

  switch (spec.kind_case()) {
  case model::Layer::kDense:
    return expectInputs(1) ? emitDense(layer, spec.dense(), inputs[0], ctx)
                           : Value();
  case model::Layer::kEmbedding:
    return expectInputs(1)
               ? emitEmbedding(layer, spec.embedding(), inputs[0], ctx)
               : Value();
  case model::Layer::kPositionalEmbedding:
    return expectInputs(1) ? emitPositionalEmbedding(
                                 layer, spec.positional_embedding(), inputs[0],
                                 ctx)
                           : Value();
  case model::Layer::kLayerNorm: {
    Node node = child(layer, "layer_norm");
    if (!(spec.layer_norm().epsilon() > 0)) {
      error(fieldLoc(node, "epsilon"))
          << "epsilon must be > 0, got "
          << formatNumber(spec.layer_norm().epsilon());
      return {};
    }
    return expectInputs(1) ? emitLayerNorm(layer, spec.layer_norm().epsilon(),
                                           spec.layer_norm().bias(), inputs[0],
                                           ctx)
                           : Value();
  }
  case model::Layer::kCausalSelfAttention:
    return expectInputs(1) ? emitAttention(layer, spec.causal_self_attention(),
                                           inputs[0], ctx)
                           : Value();
  case model::Layer::kMlp:
    return expectInputs(1) ? emitMlp(layer, spec.mlp(), inputs[0], ctx)
                           : Value();
  case model::Layer::kTransformerBlock:
    return expectInputs(1) ? emitTransformerBlock(
                                 layer, spec.transformer_block(), inputs[0],
                                 ctx)
                           : Value();
  case model::Layer::kAdd:
    if (inputs.size() < 2) {
      error(layer.loc) << "add layer '" << spec.name()
                       << "' needs at least 2 inputs, got " << inputs.size();
      return {};
    }
    return emitAdd(layer, inputs, ctx);
  case model::Layer::kDropout: {
    Node node = child(layer, "dropout");
    double rate = spec.dropout().rate();
    if (!(rate >= 0 && rate < 1)) {
      error(fieldLoc(node, "rate")) << "rate " << formatNumber(rate)
                                    << " is not in [0, 1)";
      return {};
    }
    return expectInputs(1) ? emitDropout(layer, rate, inputs[0], ctx) : Value();
  }
  case model::Layer::kActivation:
    return expectInputs(1)
               ? emitActivation(layer, spec.activation().kind(), inputs[0], ctx)
               : Value();
  case model::Layer::kBlock:
    return emitBlockCall(layer, spec.block(), inputs, ctx);
  case model::Layer::kOp:
    return emitRawOp(layer, child(layer, "op"), inputs, ctx);
  case model::Layer::kParameter:
    return expectInputs(0)
               ? emitParameterLayer(layer, spec.parameter(), ctx)
               : Value();
  case model::Layer::kConv2D:
    return expectInputs(1) ? emitConv2d(layer, spec.conv2d(), inputs[0], ctx)
                           : Value();
  case model::Layer::kMaxPool2D:
    return expectInputs(1)
               ? emitPool2d(layer, spec.max_pool2d(), true, inputs[0], ctx)
               : Value();
  case model::Layer::kAvgPool2D:
    return expectInputs(1)
               ? emitPool2d(layer, spec.avg_pool2d(), false, inputs[0], ctx)
               : Value();
  case model::Layer::kFlatten:
    return expectInputs(1) ? emitFlatten(layer, inputs[0], ctx) : Value();
  case model::Layer::kBatchNorm:
    return expectInputs(1)
               ? emitBatchNorm(layer, spec.batch_norm(), inputs[0], ctx)
               : Value();
  case model::Layer::KIND_NOT_SET:
    break;
  }
  error(layer.loc) << "layer '" << spec.name()
                   << "' has no kind; give one of dense, embedding, "
                      "positional_embedding, layer_norm, "
                      "causal_self_attention, mlp, transformer_block, add, "
                      "dropout, activation, conv2d, max_pool2d, avg_pool2d, "
                      "flatten, batch_norm, block, op, parameter";
  return {};
}

//===----------------------------------------------------------------------===//
// Checks shared by the layers
//===----------------------------------------------------------------------===//

namespace {

/// Reports unless `x` is a float tensor of rank >= minRank.
bool checkFloatInput(ModelImporter &im, const Node &layer, Value x,
                     int64_t minRank, StringRef expected) {
  auto type = ModelImporter::typeOf(x);
  if (isa<FloatType>(type.getElementType()) && type.getRank() >= minRank)
    return true;
  im.error(layer.loc) << "layer '" << layerName(layer) << "' needs "
                      << expected << ", got " << type;
  return false;
}

bool checkPositive(ModelImporter &im, const Node &node, StringRef field,
                   int64_t value, bool isSet) {
  if (!isSet) {
    im.error(node.loc) << "'" << field << "' is required";
    return false;
  }
  if (value < 1 || value > ImportLimits::kMaxDimSize) {
    im.error(im.fieldLoc(node, field))
        << field << " " << value << " is out of range [1, "
        << ImportLimits::kMaxDimSize << "]";
    return false;
  }
  return true;
}

bool checkRate(ModelImporter &im, const Node &node, StringRef field,
               double rate) {
  if (rate >= 0 && rate < 1)
    return true;
  im.error(im.fieldLoc(node, field)) << field << " " << formatNumber(rate)
                                     << " is not in [0, 1)";
  return false;
}

bool checkStd(ModelImporter &im, const Node &node, StringRef field,
              double value) {
  if (value >= 0 && std::isfinite(value))
    return true;
  im.error(im.fieldLoc(node, field))
      << field << " must be a finite number >= 0, got " << formatNumber(value);
  return false;
}

} // namespace

//===----------------------------------------------------------------------===//
// dense
//===----------------------------------------------------------------------===//

Value ModelImporter::linear(Value x, int64_t units, bool bias,
                            const LayerContext &ctx, StringRef name,
                            InitSpec weightInit, InitSpec biasInit,
                            Location loc, Value weight) {
  RankedTensorType xType = typeOf(x);
  int64_t in = xType.getShape().back();
  std::string prefix = name.empty() ? "" : name.str() + ".";
  if (!weight)
    weight = createParam(ctx, prefix + "weight", {units, in}, weightInit, loc);
  if (!weight)
    return {};
  // matmul wants rank >= 2; a single vector is a batch of one.
  Value lhs = x;
  if (xType.getRank() == 1)
    lhs = createTyped<sgraph::ReshapeOp>(loc, floatTensor({1, in}), x);
  Value y = create<sgraph::MatmulOp>(loc, lhs, weight, builder.getBoolAttr(false),
                                     builder.getBoolAttr(true));
  if (y && xType.getRank() == 1)
    y = createTyped<sgraph::ReshapeOp>(loc, floatTensor({units}), y);
  if (bias) {
    Value b = createParam(ctx, prefix + "bias", {units}, biasInit, loc);
    y = create<sgraph::AddOp>(loc, y, b);
  }
  return y;
}

Value ModelImporter::emitDense(const Node &layer, const model::Dense &spec,
                               Value x, const LayerContext &ctx) {
  Node node = child(layer, "dense");
  Location loc = layerLoc(layer, ctx);
  if (!checkPositive(*this, node, "units", spec.units(), spec.has_units()) ||
      !checkFloatInput(*this, layer, x, 1, "a float tensor") ||
      !checkInit(node, "weight_init", spec.has_weight_init(),
                 spec.weight_init()) ||
      !checkInit(node, "bias_init", spec.has_bias_init(), spec.bias_init()))
    return {};
  int64_t in = typeOf(x).getShape().back();
  // nn.Linear's default: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias.
  InitSpec fallback{InitSpec::Uniform, 1.0 / std::sqrt(static_cast<double>(in))};

  Value weight;
  if (spec.has_tie_weight()) {
    Location tieLoc = fieldLoc(node, "tie_weight");
    weight = findParam(spec.tie_weight());
    if (!weight) {
      auto diag = error(tieLoc);
      diag << "tie_weight '" << spec.tie_weight()
           << "' is not a parameter defined before this layer";
      std::vector<std::string> known;
      for (const ParamInfo &p : params)
        known.push_back(p.name);
      addHint(diag, spec.tie_weight(), known);
      return {};
    }
    auto expected = floatTensor({spec.units(), in});
    if (weight.getType() != expected) {
      error(tieLoc) << "tie_weight '" << spec.tie_weight() << "' is "
                    << weight.getType() << ", but this layer needs "
                    << expected << " ([units, in])";
      return {};
    }
    addAlias(weight, ctx.prefix + "weight");
  }
  return linear(x, spec.units(), spec.bias(), ctx, "",
                initFrom(spec.weight_init(), spec.has_weight_init(), fallback),
                initFrom(spec.bias_init(), spec.has_bias_init(), fallback),
                loc, weight);
}

//===----------------------------------------------------------------------===//
// embedding, positional_embedding
//===----------------------------------------------------------------------===//

Value ModelImporter::emitEmbedding(const Node &layer,
                                   const model::Embedding &spec, Value x,
                                   const LayerContext &ctx) {
  Node node = child(layer, "embedding");
  Location loc = layerLoc(layer, ctx);
  if (!checkPositive(*this, node, "num_embeddings", spec.num_embeddings(),
                     spec.has_num_embeddings()) ||
      !checkPositive(*this, node, "dim", spec.dim(), spec.has_dim()) ||
      !checkInit(node, "init", spec.has_init(), spec.init()))
    return {};
  auto type = typeOf(x);
  if (!type.getElementType().isInteger(32) &&
      !type.getElementType().isInteger(64)) {
    error(layer.loc) << "embedding layer '" << layerName(layer)
                     << "' needs integer indices, got " << type;
    return {};
  }
  // nn.Embedding's default: N(0, 1).
  Value table = createParam(ctx, "weight", {spec.num_embeddings(), spec.dim()},
                            initFrom(spec.init(), spec.has_init(),
                                     {InitSpec::Normal, 1.0}),
                            loc);
  return create<sgraph::EmbeddingOp>(loc, table, x);
}

Value ModelImporter::emitPositionalEmbedding(
    const Node &layer, const model::PositionalEmbedding &spec, Value x,
    const LayerContext &ctx) {
  Node node = child(layer, "positional_embedding");
  Location loc = layerLoc(layer, ctx);
  if (!checkPositive(*this, node, "max_positions", spec.max_positions(),
                     spec.has_max_positions()) ||
      !checkPositive(*this, node, "dim", spec.dim(), spec.has_dim()) ||
      !checkInit(node, "init", spec.has_init(), spec.init()))
    return {};
  auto type = typeOf(x);
  if (type.getRank() < 2) {
    error(layer.loc) << "positional_embedding layer '" << layerName(layer)
                     << "' reads the sequence length from axis 1 of its input, "
                        "which has type "
                     << type;
    return {};
  }
  int64_t positions = type.getDimSize(1);
  if (positions > spec.max_positions()) {
    error(fieldLoc(node, "max_positions"))
        << "the input has " << positions << " positions (axis 1 of " << type
        << "), more than max_positions " << spec.max_positions();
    return {};
  }
  Value table = createParam(ctx, "weight", {spec.max_positions(), spec.dim()},
                            initFrom(spec.init(), spec.has_init(),
                                     {InitSpec::Normal, 1.0}),
                            loc);
  // The first T rows, [T, dim]; `add` broadcasts them over the batch.
  return create<sgraph::SliceOp>(
      loc, table, builder.getDenseI64ArrayAttr({0, 0}),
      builder.getDenseI64ArrayAttr({positions, spec.dim()}),
      DenseI64ArrayAttr());
}

//===----------------------------------------------------------------------===//
// layer_norm, activation, dropout, add
//===----------------------------------------------------------------------===//

Value ModelImporter::emitLayerNorm(const Node &layer, double epsilon, bool bias,
                                   Value x, const LayerContext &ctx) {
  Location loc = layerLoc(layer, ctx);
  if (!checkFloatInput(*this, layer, x, 1, "a float tensor"))
    return {};
  auto type = typeOf(x);
  int64_t c = type.getShape().back();
  Value scale =
      createParam(ctx, "weight", {c}, {InitSpec::Constant, 1.0}, loc);
  Value shift;
  if (bias)
    shift = createParam(ctx, "bias", {c}, {InitSpec::Constant, 0.0}, loc);
  else
    shift = zerosConstant(floatTensor({c}), loc);
  return create<sgraph::LayerNormOp>(loc, x, scale, shift,
                                     builder.getI64IntegerAttr(type.getRank() - 1),
                                     builder.getF64FloatAttr(epsilon));
}

Value ModelImporter::emitActivation(const Node &layer,
                                    model::ActivationKind kind, Value x,
                                    const LayerContext &ctx) {
  Location loc = layerLoc(layer, ctx);
  if (!checkFloatInput(*this, layer, x, 0, "a float tensor"))
    return {};
  switch (kind) {
  case model::GELU:
    return create<sgraph::GeluOp>(loc, x, builder.getStringAttr("none"));
  case model::GELU_TANH:
    return create<sgraph::GeluOp>(loc, x, builder.getStringAttr("tanh"));
  case model::RELU:
    return create<sgraph::ReluOp>(loc, x);
  case model::TANH:
    return create<sgraph::TanhOp>(loc, x);
  case model::SIGMOID:
    return create<sgraph::SigmoidOp>(loc, x);
  case model::ACTIVATION_UNSPECIFIED:
    break;
  }
  error(layer.loc) << "activation layer '" << layerName(layer)
                   << "' needs a kind: GELU, GELU_TANH, RELU, TANH or SIGMOID";
  return {};
}

Value ModelImporter::emitDropout(const Node &layer, double rate, Value x,
                                 const LayerContext &ctx) {
  if (!x || rate == 0.0)
    return x;
  Location loc = layerLoc(layer, ctx);
  if (!checkFloatInput(*this, layer, x, 0, "a float tensor"))
    return {};
  // In this order: the step argument comes before the rank.
  Value step = stepValue();
  Value rank = rankValue();
  return create<sgraph::DropoutOp>(loc, x, step, rank,
                                   builder.getF64FloatAttr(rate),
                                   builder.getI64IntegerAttr(nextDropoutSeed()),
                                   /*batch_axis=*/IntegerAttr());
}

const llvm::DenseMap<Value, BatchAxis> &ModelImporter::batchAxes() {
  if (!foundBatchAxes)
    foundBatchAxes = findBatchAxes(*body, batchInputs, reshapeBatchAxes);
  return *foundBatchAxes;
}

void ModelImporter::placeDropoutBatches() {
  if (!rank)
    return;
  const llvm::DenseMap<Value, BatchAxis> &axes = batchAxes();
  body->walk([&](sgraph::DropoutOp dropout) {
    BatchAxis batch = axes.lookup(dropout.getOperand());
    switch (batch.kind) {
    case BatchAxis::Axis:
      if (batch.axis != 0)
        dropout.setBatchAxis(batch.axis);
      break;
    case BatchAxis::None:
      // The same tensor at any batch (a parameter's): one process draws
      // one mask for it, so every rank and micro-batch draws that mask.
      dropout.getShardMutable().clear();
      break;
    case BatchAxis::Unknown: {
      auto diag = mlir::emitWarning(dropout.getLoc())
                  << "cannot tell which axis of this dropout's input holds "
                     "the batch";
      if (batch.lostAt) {
        diag << " (lost at the sgraph op '"
             << batch.lostAt->getName().stripDialect() << "'";
        if (auto layer = dyn_cast<NameLoc>(batch.lostAt->getLoc()))
          diag << " of layer '" << layer.getName().getValue() << "'";
        diag << ")";
      }
      diag << "; its masks are drawn as if it were the leading axis, so "
              "under data parallelism W ranks at batch B do not draw the "
              "masks one process at batch W*B draws";
      break;
    }
    }
  });
}

void ModelImporter::warnBatchSumLoss(Value loss) {
  const model::Model &m = *model;
  if (m.loss().kind_case() != model::Loss::kValue ||
      !m.training().data_parallel().gradients_mean())
    return;
  Operation *sum = batchSumOf(*body, loss, batchAxes(), batchSize);
  if (!sum)
    return;
  mlir::emitWarning(sum->getLoc())
      << "the loss '" << m.loss().value()
      << "' sums over the batch here instead of averaging: the ranks of a "
         "data-parallel run average their gradients (gradients_mean), so W "
         "ranks at batch B step with 1/W of the gradient one process at "
         "batch W*B steps with (and K accumulated micro-batches with 1/K); "
         "average with reduce_mean, or set data_parallel { gradients_mean: "
         "false }";
}

Value ModelImporter::emitAdd(const Node &layer, ArrayRef<Value> inputs,
                             const LayerContext &ctx) {
  Location loc = layerLoc(layer, ctx);
  Value sum = inputs.front();
  for (Value next : inputs.drop_front())
    sum = create<sgraph::AddOp>(loc, sum, next);
  return sum;
}

Value ModelImporter::emitParameterLayer(const Node &layer,
                                        const model::Parameter &spec,
                                        const LayerContext &ctx) {
  Node node = child(layer, "parameter");
  if (!spec.has_init()) {
    error(node.loc) << "parameter layer '" << layerName(layer)
                    << "' needs an init";
    return {};
  }
  if (spec.shape_size() == 0) {
    error(node.loc) << "parameter layer '" << layerName(layer)
                    << "' needs a shape";
    return {};
  }
  if (!checkInit(node, "init", true, spec.init()))
    return {};
  SmallVector<int64_t> shape(spec.shape().begin(), spec.shape().end());
  return createParam(ctx, "", shape, initFrom(spec.init(), true, {}),
                     fieldLoc(node, "shape", 0));
}

//===----------------------------------------------------------------------===//
// causal_self_attention, mlp, transformer_block
//===----------------------------------------------------------------------===//

namespace {

struct AttentionConfig {
  int64_t heads;
  bool bias;
  double dropout;
  double initStd;
};

struct MlpConfig {
  int64_t hidden; // 0: 4 * C
  model::ActivationKind activation;
  bool bias;
  double dropout;
  double initStd;
};

} // namespace

/// GPT-2 attention on x (B, T, C):
///   q, k, v = split(x W_attn^T + b_attn)          each (B, T, C)
///   q, k, v -> (B, H, T, hd)
///   att = softmax(causal(q k^T / sqrt(hd)))       (B, H, T, T)
///   y = dropout(att) v -> (B, T, C);  out = dropout(y W_proj^T + b_proj)
static Value buildAttention(ModelImporter &im, const Node &layer,
                            const AttentionConfig &cfg, Value x,
                            const LayerContext &ctx) {
  OpBuilder &b = im.builder;
  Location loc = im.layerLoc(layer, ctx);
  if (!checkFloatInput(im, layer, x, 3, "a (batch, sequence, channels) tensor"))
    return {};
  auto type = ModelImporter::typeOf(x);
  if (type.getRank() != 3) {
    im.error(layer.loc) << "attention in layer '" << layerName(layer)
                        << "' needs a (batch, sequence, channels) tensor, got "
                        << type;
    return {};
  }
  int64_t batch = type.getDimSize(0), seq = type.getDimSize(1),
          channels = type.getDimSize(2), heads = cfg.heads;
  if (channels % heads != 0) {
    im.error(layer.loc) << "attention in layer '" << layerName(layer) << "': "
                        << channels << " channels do not split into " << heads
                        << " heads";
    return {};
  }
  int64_t headDim = channels / heads;
  InitSpec weightInit{InitSpec::Normal, cfg.initStd};
  InitSpec projInit{InitSpec::Normal,
                    cfg.initStd / std::sqrt(2.0 * ctx.residualLayers)};
  InitSpec zero{InitSpec::Constant, 0.0};

  Value qkv = im.linear(x, 3 * channels, cfg.bias, ctx, "c_attn", weightInit,
                        zero, loc);
  auto head = [&](int64_t which) -> Value {
    Value part = im.create<sgraph::SliceOp>(
        loc, qkv, b.getDenseI64ArrayAttr({0, 0, which * channels}),
        b.getDenseI64ArrayAttr({batch, seq, (which + 1) * channels}),
        DenseI64ArrayAttr());
    Value split = im.createTyped<sgraph::ReshapeOp>(
        loc, im.floatTensor({batch, seq, heads, headDim}), part);
    return im.create<sgraph::TransposeOp>(loc, split,
                                          b.getDenseI64ArrayAttr({0, 2, 1, 3}));
  };
  Value q = head(0), k = head(1), v = head(2);
  Value scores = im.create<sgraph::MatmulOp>(loc, q, k, b.getBoolAttr(false),
                                             b.getBoolAttr(true));
  scores = im.create<sgraph::MulOp>(
      loc, scores,
      im.scalarConstant(im.floatType, 1.0 / std::sqrt(double(headDim)), loc));
  Value mask = im.createTyped<sgraph::CausalMaskOp>(
      loc, RankedTensorType::get({seq, seq}, b.getI1Type()));
  Value negInf = im.scalarConstant(
      im.floatType, -std::numeric_limits<double>::infinity(), loc);
  scores = im.create<sgraph::SelectOp>(loc, mask, scores, negInf);
  Value probs =
      im.create<sgraph::SoftmaxOp>(loc, scores, b.getI64IntegerAttr(3));
  probs = im.emitDropout(layer, cfg.dropout, probs, ctx);
  Value y = im.create<sgraph::MatmulOp>(loc, probs, v, b.getBoolAttr(false),
                                        b.getBoolAttr(false));
  y = im.create<sgraph::TransposeOp>(loc, y,
                                     b.getDenseI64ArrayAttr({0, 2, 1, 3}));
  y = im.createTyped<sgraph::ReshapeOp>(
      loc, im.floatTensor({batch, seq, channels}), y);
  y = im.linear(y, channels, cfg.bias, ctx, "c_proj", projInit, zero, loc);
  return im.emitDropout(layer, cfg.dropout, y, ctx);
}

/// x -> c_fc -> activation -> c_proj -> dropout, over the last axis.
static Value buildMlp(ModelImporter &im, const Node &layer,
                      const MlpConfig &cfg, Value x, const LayerContext &ctx) {
  Location loc = im.layerLoc(layer, ctx);
  if (!checkFloatInput(im, layer, x, 1, "a float tensor"))
    return {};
  int64_t channels = ModelImporter::typeOf(x).getShape().back();
  int64_t hidden = cfg.hidden ? cfg.hidden : 4 * channels;
  InitSpec zero{InitSpec::Constant, 0.0};
  Value h = im.linear(x, hidden, cfg.bias, ctx, "c_fc",
                      {InitSpec::Normal, cfg.initStd}, zero, loc);
  if (!h)
    return {};
  h = im.emitActivation(layer, cfg.activation, h, ctx);
  h = im.linear(h, channels, cfg.bias, ctx, "c_proj",
                {InitSpec::Normal,
                 cfg.initStd / std::sqrt(2.0 * ctx.residualLayers)},
                zero, loc);
  return im.emitDropout(layer, cfg.dropout, h, ctx);
}

Value ModelImporter::emitAttention(const Node &layer,
                                   const model::CausalSelfAttention &spec,
                                   Value x, const LayerContext &ctx) {
  Node node = child(layer, "causal_self_attention");
  if (!checkPositive(*this, node, "num_heads", spec.num_heads(),
                     spec.has_num_heads()) ||
      !checkRate(*this, node, "dropout", spec.dropout()) ||
      !checkStd(*this, node, "init_std", spec.init_std()))
    return {};
  return buildAttention(*this, layer,
                        {spec.num_heads(), spec.bias(), spec.dropout(),
                         spec.init_std()},
                        x, ctx);
}

Value ModelImporter::emitMlp(const Node &layer, const model::Mlp &spec,
                             Value x, const LayerContext &ctx) {
  Node node = child(layer, "mlp");
  if ((spec.has_hidden() &&
       !checkPositive(*this, node, "hidden", spec.hidden(), true)) ||
      !checkRate(*this, node, "dropout", spec.dropout()) ||
      !checkStd(*this, node, "init_std", spec.init_std()))
    return {};
  model::ActivationKind act =
      spec.has_activation() ? spec.activation() : model::GELU;
  return buildMlp(*this, layer,
                  {spec.hidden(), act, spec.bias(), spec.dropout(),
                   spec.init_std()},
                  x, ctx);
}

Value ModelImporter::emitTransformerBlock(const Node &layer,
                                          const model::TransformerBlock &spec,
                                          Value x, const LayerContext &ctx) {
  Node node = child(layer, "transformer_block");
  if (!checkPositive(*this, node, "num_heads", spec.num_heads(),
                     spec.has_num_heads()) ||
      (spec.has_mlp_hidden() &&
       !checkPositive(*this, node, "mlp_hidden", spec.mlp_hidden(), true)) ||
      !checkRate(*this, node, "dropout", spec.dropout()) ||
      !checkStd(*this, node, "init_std", spec.init_std()))
    return {};
  if (!(spec.epsilon() > 0)) {
    error(fieldLoc(node, "epsilon"))
        << "epsilon must be > 0, got " << formatNumber(spec.epsilon());
    return {};
  }
  Location loc = layerLoc(layer, ctx);
  model::ActivationKind act =
      spec.has_activation() ? spec.activation() : model::GELU;

  // x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))
  Value h = emitLayerNorm(layer, spec.epsilon(), spec.bias(), x,
                          childContext(ctx, "ln_1"));
  if (!h)
    return {};
  h = buildAttention(*this, layer,
                     {spec.num_heads(), spec.bias(), spec.dropout(),
                      spec.init_std()},
                     h, childContext(ctx, "attn"));
  x = create<sgraph::AddOp>(loc, x, h);
  if (!x)
    return {};
  h = emitLayerNorm(layer, spec.epsilon(), spec.bias(), x,
                    childContext(ctx, "ln_2"));
  if (!h)
    return {};
  h = buildMlp(*this, layer,
               {spec.mlp_hidden(), act, spec.bias(), spec.dropout(),
                spec.init_std()},
               h, childContext(ctx, "mlp"));
  return create<sgraph::AddOp>(loc, x, h);
}
