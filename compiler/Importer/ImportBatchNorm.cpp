//===- ImportBatchNorm.cpp - batch normalization layers ------------------===//
//
// batch_norm on [B, C, ...] tensors computes what PyTorch's nn.BatchNorm1d,
// nn.BatchNorm2d and nn.BatchNorm3d compute, with their parameter and buffer
// names and initial values (docs/ModelFormat.md, "Batch normalization"):
//
//   - in training, each channel is normalized by the mean and the biased
//     variance of the batch (every axis but 1), then scaled and shifted by
//     "<name>.weight" and "<name>.bias";
//   - the running statistics "<name>.running_mean" and "<name>.running_var"
//     (buffers: frozen parameter arguments with `sgraph.buffer`, saved and
//     loaded with the parameters) become momentum · batch statistic +
//     (1 − momentum) · running statistic, the variance unbiased (n / (n−1));
//     @forward returns the new values under the buffers' names, and the
//     training phase passes them on (docs/Autodiff.md, "Buffers");
//   - in evaluation the running statistics normalize instead: the layer's
//     result is a `train_eval` of the two, which the training phase resolves;
//   - `use_batch_statistics` (MindSpore's) picks one of them for both modes:
//     the batch's (the running ones still tracked), or the running ones,
//     never updated (a frozen batch norm).
//
// Everything is built from the dialect's elementwise ops and reductions, so
// autodiff, fusion, both targets and the interpreter take it unchanged.
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer/ModelImporter.h"

#include <limits>

using namespace mlir;
using namespace sinter;
using namespace sinter::importer;

Value ModelImporter::emitBatchNorm(const Node &layer,
                                   const model::BatchNorm &spec, Value x,
                                   const LayerContext &ctx) {
  Node node = child(layer, "batch_norm");
  auto name = static_cast<const model::Layer &>(*layer.msg).name();
  double eps = spec.epsilon();
  if (!(eps > 0 && eps < std::numeric_limits<double>::infinity())) {
    error(fieldLoc(node, "epsilon"))
        << "epsilon must be a finite number > 0, got " << formatNumber(eps);
    return {};
  }
  double momentum = spec.momentum();
  if (!(momentum >= 0 && momentum <= 1)) {
    error(fieldLoc(node, "momentum"))
        << "momentum " << formatNumber(momentum) << " is not in [0, 1]";
    return {};
  }
  auto type = typeOf(x);
  if (type.getElementType() != floatType || type.getRank() < 2) {
    error(layer.loc) << "batch_norm layer '" << name
                     << "' needs a [batch, channels, ...] tensor of the "
                        "model's dtype "
                     << floatType << ", got " << type;
    return {};
  }
  // Which statistics normalize in training and in evaluation.
  bool hasChoice = spec.has_use_batch_statistics();
  bool batchInTraining = !hasChoice || spec.use_batch_statistics();
  bool batchInEval =
      hasChoice ? spec.use_batch_statistics() : !spec.track_running_stats();
  if (!batchInTraining && !spec.track_running_stats()) {
    error(fieldLoc(node, "use_batch_statistics"))
        << "use_batch_statistics: false normalizes by the running "
           "statistics, which track_running_stats: false drops";
    return {};
  }
  int64_t channels = type.getDimSize(1);
  // The values each channel's statistics are over; every shape's element
  // count is within the import limits, so the product is too.
  int64_t n = type.getNumElements() / channels;
  if (batchInTraining && n < 2) {
    error(layer.loc) << "batch_norm layer '" << name << "' gets " << type
                     << ": one value per channel has no variance to "
                        "normalize by in training";
    return {};
  }

  Location loc = layerLoc(layer, ctx);
  OpBuilder &b = builder;
  // A transposed input (a convolution's result is its channels-last GEMM
  // output, transposed to NCHW) is normalized in the layout it is stored
  // in, and the result transposed as it was: the statistics are then sums
  // over the leading axes, whose kernels read whole rows in order, and so
  // are their gradients'.
  Value in = x;
  SmallVector<int64_t> permutation;
  int64_t channelAxis = 1;
  if (auto t = x.getDefiningOp<sgraph::TransposeOp>()) {
    in = t.getOperand();
    permutation.assign(t.getPermutation().begin(), t.getPermutation().end());
    channelAxis = permutation[1];
  }
  int64_t rank = type.getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < rank; ++d)
    if (d != channelAxis)
      axes.push_back(d);
  // Per-channel values [C] broadcast against the input as [C, 1...], the
  // channel axis's position from the end.
  SmallVector<int64_t> channelShape(rank - channelAxis, 1);
  channelShape.front() = channels;
  auto perChannel = [&](Value v) {
    if (channelShape.size() == 1)
      return v;
    return createTyped<sgraph::ReshapeOp>(loc, floatTensor(channelShape), v);
  };
  auto scalar = [&](double v) { return scalarConstant(floatType, v, loc); };

  Value weight, bias;
  if (spec.affine()) {
    weight =
        createParam(ctx, "weight", {channels}, {InitSpec::Constant, 1.0}, loc);
    bias = createParam(ctx, "bias", {channels}, {InitSpec::Constant, 0.0}, loc);
    if (!weight || !bias)
      return {};
  }
  auto affine = [&](Value normalized) {
    if (!weight)
      return normalized;
    Value scaled = create<sgraph::MulOp>(loc, normalized, perChannel(weight));
    return create<sgraph::AddOp>(loc, scaled, perChannel(bias));
  };

  auto inInputLayout = [&](Value v) -> Value {
    if (permutation.empty())
      return v;
    return create<sgraph::TransposeOp>(loc, v,
                                       b.getDenseI64ArrayAttr(permutation));
  };
  Value runningMean, runningVar;
  if (spec.track_running_stats()) {
    runningMean = createBuffer(ctx, "running_mean", {channels},
                               {InitSpec::Constant, 0.0}, loc);
    runningVar = createBuffer(ctx, "running_var", {channels},
                              {InitSpec::Constant, 1.0}, loc);
    if (!runningMean || !runningVar)
      return {};
  }
  // The running statistics' normalization (evaluation; a frozen batch
  // norm's training too).
  auto byRunning = [&]() {
    Value inv = create<sgraph::RsqrtOp>(
        loc, create<sgraph::AddOp>(loc, runningVar, scalar(eps)));
    return affine(create<sgraph::MulOp>(
        loc, create<sgraph::SubOp>(loc, in, perChannel(runningMean)),
        perChannel(inv)));
  };
  if (!batchInTraining) // use_batch_statistics: false, nothing updated
    return inInputLayout(byRunning());

  // Training: the batch's statistics, C values kept in the input's rank.
  auto axesAttr = b.getDenseI64ArrayAttr(axes);
  Value mean =
      create<sgraph::ReduceMeanOp>(loc, in, axesAttr, b.getBoolAttr(true));
  Value centered = create<sgraph::SubOp>(loc, in, mean);
  Value var = create<sgraph::ReduceMeanOp>(
      loc, create<sgraph::MulOp>(loc, centered, centered), axesAttr,
      b.getBoolAttr(true));
  Value inv = create<sgraph::RsqrtOp>(
      loc, create<sgraph::AddOp>(loc, var, scalar(eps)));
  Value train = affine(create<sgraph::MulOp>(loc, centered, inv));
  if (!spec.track_running_stats()) // the batch's statistics in evaluation
    return inInputLayout(train);   // too, as PyTorch
  // momentum · statistic + (1 − momentum) · running, PyTorch's order.
  auto moved = [&](Value running, Value statistic) {
    Value flat =
        createTyped<sgraph::ReshapeOp>(loc, floatTensor({channels}), statistic);
    return create<sgraph::AddOp>(
        loc, create<sgraph::MulOp>(loc, flat, scalar(momentum)),
        create<sgraph::MulOp>(loc, running, scalar(1.0 - momentum)));
  };
  Value unbiased = create<sgraph::MulOp>(
      loc, var, scalar(static_cast<double>(n) / static_cast<double>(n - 1)));
  Value newMean = moved(runningMean, mean);
  Value newVar = moved(runningVar, unbiased);
  if (!newMean || !newVar)
    return {};
  setBufferUpdate(runningMean, newMean);
  setBufferUpdate(runningVar, newVar);
  if (batchInEval) // use_batch_statistics: true
    return inInputLayout(train);
  return inInputLayout(create<sgraph::TrainEvalOp>(loc, train, byRunning()));
}
