//===- ImportConv.cpp - convolution, pooling and flatten layers ----------===//
//
// conv2d, max_pool2d, avg_pool2d and flatten on NCHW tensors, computing what
// PyTorch's nn.Conv2d (zero padding), nn.MaxPool2d and
// nn.AvgPool2d (floor mode, count_include_pad) and nn.Flatten compute, with
// their parameter names and default initializers.
//
// Each layer is built from ops the dialect already has, so every pass, both
// targets, mixed precision, recompute and autodiff apply to it unchanged
// (docs/ModelFormat.md, "Convolution and pooling"):
//   - The windows of a kernel are unit-stride `slice`s of the `pad`ded
//     input with its spatial axes split by the stride (splitByStride), one
//     per kernel offset; their gradients are pads without interior padding,
//     which fuse into the kernel that sums them.
//   - A convolution works channels-last: its windows, joined by a `concat`
//     (im2col), are [B OH OW, kh kw C], and one `matmul` with the weight
//     reordered to [out, kh kw C] computes it, a GEMM of B OH OW rows as a
//     dense layer's; with groups, one batched matmul over the groups. A
//     depthwise convolution is elementwise: each offset's window times its
//     weights, summed.
//   - Pooling combines the windows elementwise: a sum for the average; for
//     the maximum, `maximum`s, then `select`s of the first element equal to
//     it, so that the gradient goes where PyTorch's goes, to one element,
//     ties included. Large windows that tile the input are reduced over the
//     split axes instead (`reduce_mean`; `argmax` and a select).
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer/ModelImporter.h"

#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace sinter;
using namespace sinter::importer;

namespace {

/// Windows of more elements than this are pooled by a reduction over the
/// window axes (when they tile the input) rather than one op per offset.
constexpr int64_t kMaxElementwiseTaps = 9;

/// Kernel, stride, padding and dilation along height and width.
struct Window {
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};  // before (top, left)
  int64_t padAfter[2] = {0, 0}; // after (bottom, right)
  int64_t dilation[2] = {1, 1};
  int64_t out[2] = {0, 0}; // output height and width

  int64_t size() const { return kernel[0] * kernel[1]; }
};

StringRef layerName(const Node &layer) {
  return static_cast<const model::Layer &>(*layer.msg).name();
}

/// Where element `index` of a repeated field is written when the file
/// records it (`field: 3` repeated), else where the field is (a list
/// `field: [3, 3]` is located at its start).
Location elementLoc(ModelImporter &im, const Node &node, StringRef field,
                    int index) {
  Location loc = im.fieldLoc(node, field, index);
  return loc == node.loc ? im.fieldLoc(node, field, 0) : loc;
}

/// Reads a field of one value (both axes) or two (height, width) into `out`;
/// leaves `out` as it is when the field is not written. Values must be in
/// [minValue, kMaxDimSize].
template <typename Repeated>
bool readPair(ModelImporter &im, const Node &node, StringRef field,
              const Repeated &values, int64_t minValue, int64_t out[2]) {
  if (values.empty())
    return true;
  auto at = [&](int index) { return elementLoc(im, node, field, index); };
  if (values.size() > 2) {
    im.error(at(2))
        << field << " takes one value (both axes) or two (height, width), got "
        << values.size();
    return false;
  }
  for (int i = 0; i < values.size(); ++i) {
    if (values[i] < minValue || values[i] > ImportLimits::kMaxDimSize) {
      im.error(at(i)) << field << " " << values[i] << " is out of range ["
                      << minValue << ", " << ImportLimits::kMaxDimSize << "]";
      return false;
    }
  }
  out[0] = values[0];
  out[1] = values.size() == 2 ? values[1] : values[0];
  return true;
}

/// Checks that `x` is a float [B, C, H, W] tensor, of `elementType` when
/// one is given (a layer with parameters of that type).
bool checkImages(ModelImporter &im, const Node &layer, StringRef kind, Value x,
                 Type elementType = {}) {
  auto type = ModelImporter::typeOf(x);
  if (isa<FloatType>(type.getElementType()) && type.getRank() == 4 &&
      (!elementType || type.getElementType() == elementType))
    return true;
  auto diag = im.error(layer.loc);
  diag << kind << " layer '" << layerName(layer) << "' needs a ";
  if (elementType)
    diag << "(batch, channels, height, width) tensor of the model's dtype "
         << elementType;
  else
    diag << "float (batch, channels, height, width) tensor";
  diag << ", got " << type;
  return false;
}

/// Sets `w.out` from the input's height and width, reporting a window that
/// does not fit (PyTorch's output size, floor mode).
bool computeOutput(ModelImporter &im, const Node &layer, StringRef kind,
                   Window &w, int64_t height, int64_t width) {
  int64_t in[2] = {height, width};
  static const char *axes[2] = {"height", "width"};
  for (int i = 0; i < 2; ++i) {
    // Each factor is at most 2^40: the span may overflow, and is then
    // larger than any input.
    int64_t span;
    bool overflow = llvm::MulOverflow(w.dilation[i], w.kernel[i] - 1, span);
    span = overflow ? std::numeric_limits<int64_t>::max() : span + 1;
    int64_t padded = in[i] + w.padding[i] + w.padAfter[i];
    if (span > padded) {
      auto diag = im.error(layer.loc);
      diag << kind << " layer '" << layerName(layer) << "': the kernel spans ";
      if (overflow)
        diag << "more than 2^63";
      else
        diag << span;
      diag << " positions along " << axes[i] << ", but the input has " << in[i];
      if (padded != in[i])
        diag << " (" << padded << " with padding)";
      return false;
    }
    w.out[i] = (padded - span) / w.stride[i] + 1;
  }
  return true;
}

/// Reports a layer whose windows would exceed the element or op limits:
/// B OH OW taps C elements, and `opsPerOffset` ops per kernel offset. Every
/// factor fits (the output is no larger than the padded input), but their
/// products may not.
bool checkWindowLimits(ModelImporter &im, const Node &layer, StringRef kind,
                       const Window &w, int64_t batch, int64_t channels,
                       int64_t opsPerOffset, int64_t opsLeft) {
  int64_t taps, positions, elements;
  bool overflow = llvm::MulOverflow(w.kernel[0], w.kernel[1], taps) ||
                  llvm::MulOverflow(w.out[0], w.out[1], positions) ||
                  llvm::MulOverflow(positions, batch, elements) ||
                  llvm::MulOverflow(elements, channels, elements) ||
                  llvm::MulOverflow(elements, taps, elements);
  if (overflow || elements > ImportLimits::kMaxElements) {
    im.error(layer.loc) << kind << " layer '" << layerName(layer)
                        << "': its windows would hold more than "
                        << ImportLimits::kMaxElements << " elements";
    return false;
  }
  int64_t ops;
  if (llvm::MulOverflow(taps, opsPerOffset, ops) || ops > opsLeft) {
    im.error(layer.loc) << kind << " layer '" << layerName(layer) << "': its "
                        << taps << "-element kernel would take more than "
                        << ImportLimits::kMaxOps << " ops";
    return false;
  }
  return true;
}

/// `x` padded with `padValue` and its spatial axes (`hAxis`, `hAxis + 1`)
/// split by their strides, [..., M_h, s_h, M_w, s_w, ...]: the window
/// offset t = q s + r along an axis is then the unit-stride slice
/// [q, q + O) x [r, r + 1), and its elements are x[..., t + s o, ...] of the
/// padded input. Each axis is padded (or cut) to M s first; what lies past
/// the last window is never read.
///
/// So no window needs a strided slice, and the windows' gradients are pads
/// without interior padding, which fuse into the kernel that sums them (a
/// strided slice's gradient would be a pad kernel of its own per offset,
/// each writing the whole input). When the stride is the kernel size, the
/// s axes are the windows themselves.
Value splitByStride(ModelImporter &im, Value x, const Window &w, int64_t hAxis,
                    double padValue, Location loc) {
  OpBuilder &b = im.builder;
  auto type = ModelImporter::typeOf(x);
  int64_t rank = type.getRank();
  int64_t length[2], split[2]; // the padded axis, and its M
  SmallVector<int64_t> low(rank, 0), high(rank, 0);
  bool cut = false;
  for (int a = 0; a < 2; ++a) {
    int64_t padded = type.getDimSize(hAxis + a) + w.padding[a] + w.padAfter[a];
    int64_t lastOffset = (w.kernel[a] - 1) * w.dilation[a];
    split[a] = lastOffset / w.stride[a] + w.out[a];
    length[a] = split[a] * w.stride[a];
    low[hAxis + a] = w.padding[a];
    // Elements past the last window's are never read: padding or cut.
    high[hAxis + a] = w.padAfter[a] + std::max<int64_t>(0, length[a] - padded);
    cut |= length[a] < padded;
  }
  if (llvm::any_of(low, [](int64_t v) { return v != 0; }) ||
      llvm::any_of(high, [](int64_t v) { return v != 0; })) {
    x = im.create<sgraph::PadOp>(
        loc, x, b.getDenseI64ArrayAttr(low), b.getDenseI64ArrayAttr(high),
        DenseI64ArrayAttr(), b.getF64FloatAttr(padValue));
    if (!x)
      return Value();
  }
  if (cut) {
    SmallVector<int64_t> start(rank, 0);
    SmallVector<int64_t> limit(ModelImporter::typeOf(x).getShape());
    limit[hAxis] = length[0];
    limit[hAxis + 1] = length[1];
    x = im.create<sgraph::SliceOp>(loc, x, b.getDenseI64ArrayAttr(start),
                                   b.getDenseI64ArrayAttr(limit),
                                   DenseI64ArrayAttr());
    if (!x)
      return Value();
  }
  // [..., M_h, s_h, M_w, s_w, ...]
  SmallVector<int64_t> shape(type.getShape().take_front(hAxis));
  shape.append({split[0], w.stride[0], split[1], w.stride[1]});
  shape.append(type.getShape().begin() + hAxis + 2, type.getShape().end());
  return im.createTyped<sgraph::ReshapeOp>(
      loc, RankedTensorType::get(shape, type.getElementType()), x);
}

/// The windows of `x` (see splitByStride), one slice per kernel offset,
/// each [..., OH, 1, OW, 1, ...].
///
/// With `groups` > 1 the last axis (channels last) is cut into that many
/// groups, and the windows come group by group: for each group, each
/// offset's slice of that group's channels.
SmallVector<Value> windows(ModelImporter &im, Value x, const Window &w,
                           int64_t hAxis, double padValue, Location loc,
                           int64_t groups = 1) {
  x = splitByStride(im, x, w, hAxis, padValue, loc);
  if (!x)
    return {};
  ArrayRef<int64_t> shape = ModelImporter::typeOf(x).getShape();
  OpBuilder &b = im.builder;
  SmallVector<Value> result;
  int64_t groupWidth = shape.back() / groups;
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t i = 0; i < w.kernel[0]; ++i) {
      for (int64_t j = 0; j < w.kernel[1]; ++j) {
        SmallVector<int64_t> start(shape.size(), 0), limit(shape);
        if (groups > 1) {
          start.back() = g * groupWidth;
          limit.back() = (g + 1) * groupWidth;
        }
        int64_t offset[2] = {i * w.dilation[0], j * w.dilation[1]};
        for (int a = 0; a < 2; ++a) {
          int64_t q = offset[a] / w.stride[a], r = offset[a] % w.stride[a];
          start[hAxis + 2 * a] = q;
          limit[hAxis + 2 * a] = q + w.out[a];
          start[hAxis + 2 * a + 1] = r;
          limit[hAxis + 2 * a + 1] = r + 1;
        }
        if (ArrayRef<int64_t>(limit) == ArrayRef<int64_t>(shape) &&
            llvm::all_of(start, [](int64_t v) { return v == 0; })) {
          result.push_back(x); // a 1 x 1 kernel reads every element
          continue;
        }
        result.push_back(im.create<sgraph::SliceOp>(
            loc, x, b.getDenseI64ArrayAttr(start),
            b.getDenseI64ArrayAttr(limit), DenseI64ArrayAttr()));
        if (!result.back())
          return {};
      }
    }
  }
  return result;
}

/// Joins `parts` along `axis` (one part is itself).
Value join(ModelImporter &im, ArrayRef<Value> parts, int64_t axis,
           Location loc) {
  if (parts.size() == 1)
    return parts.front();
  return im.create<sgraph::ConcatOp>(loc, ValueRange(parts),
                                     im.builder.getI64IntegerAttr(axis));
}

/// The maximum or the mean of the windows, elementwise.
Value poolWindows(ModelImporter &im, ArrayRef<Value> parts, bool max,
                  int64_t taps, Location loc) {
  if (taps == 1)
    return parts.front();
  Type elementType = ModelImporter::typeOf(parts.front()).getElementType();
  if (!max) {
    Value sum = parts.front();
    for (Value part : ArrayRef<Value>(parts).drop_front())
      sum = im.create<sgraph::AddOp>(loc, sum, part);
    return im.create<sgraph::MulOp>(
        loc, sum, im.scalarConstant(elementType, 1.0 / double(taps), loc));
  }

  // The maximum m (NaN if any element is NaN), then the first element
  // equal to it, picked by selects from the last offset back to the first,
  // so that the gradient goes to that one element as PyTorch's does. m
  // itself gets no gradient.
  Value m = parts.front();
  for (Value part : ArrayRef<Value>(parts).drop_front())
    m = im.create<sgraph::MaximumOp>(loc, m, part);
  m = im.create<sgraph::StopGradientOp>(loc, m);
  Value picked = parts.back();
  for (Value part : llvm::reverse(ArrayRef<Value>(parts).drop_back())) {
    Value isMax = im.create<sgraph::CompareOp>(loc, part, m,
                                               im.builder.getStringAttr("eq"));
    picked = im.create<sgraph::SelectOp>(loc, isMax, part, picked);
  }
  Value isNan =
      im.create<sgraph::CompareOp>(loc, m, m, im.builder.getStringAttr("ne"));
  return im.create<sgraph::SelectOp>(loc, isNan, m, picked);
}

/// Pooling of windows that tile the input, from the input split by the
/// stride, [B, C, OH, kh, OW, kw]: a mean over the window axes, or the first
/// maximum of each window in row-major order (`argmax`; NaN counts as the
/// largest), picked by a select so that the gradient goes to it alone.
Value poolWhole(ModelImporter &im, Value split, bool max, const Window &w,
                Location loc) {
  OpBuilder &b = im.builder;
  if (!max)
    return im.create<sgraph::ReduceMeanOp>(
        loc, split, b.getDenseI64ArrayAttr({3, 5}), b.getBoolAttr(false));
  auto type = ModelImporter::typeOf(split);
  int64_t taps = w.size();
  Value rows = im.create<sgraph::TransposeOp>(
      loc, split, b.getDenseI64ArrayAttr({0, 1, 2, 4, 3, 5}));
  SmallVector<int64_t> flat = {type.getDimSize(0), type.getDimSize(1), w.out[0],
                               w.out[1], taps};
  rows = im.createTyped<sgraph::ReshapeOp>(
      loc, RankedTensorType::get(flat, type.getElementType()), rows);
  Value first = im.create<sgraph::ArgmaxOp>(loc, rows, b.getI64IntegerAttr(4));
  Type i64 = b.getI64Type();
  flat.back() = 1;
  first = im.createTyped<sgraph::ReshapeOp>(
      loc, RankedTensorType::get(flat, i64), first);
  Value offsets = im.createTyped<sgraph::IotaOp>(
      loc, RankedTensorType::get({taps}, i64), b.getI64IntegerAttr(0));
  Value picked =
      im.create<sgraph::CompareOp>(loc, first, offsets, b.getStringAttr("eq"));
  Value kept = im.create<sgraph::SelectOp>(
      loc, picked, rows, im.scalarConstant(type.getElementType(), 0.0, loc));
  return im.create<sgraph::ReduceSumOp>(loc, kept, b.getDenseI64ArrayAttr({4}),
                                        b.getBoolAttr(false));
}

/// A convolution's channels-last result (any shape whose last axis is the
/// output channels) plus its bias, as [B, out, OH, OW].
Value finishConv(ModelImporter &im, Value y, Value bias, const Window &w,
                 int64_t batch, int64_t out, Location loc) {
  if (bias)
    y = im.create<sgraph::AddOp>(loc, y, bias);
  y = im.createTyped<sgraph::ReshapeOp>(
      loc, im.floatTensor({batch, w.out[0], w.out[1], out}), y);
  if (!y)
    return {};
  return im.create<sgraph::TransposeOp>(
      loc, y, im.builder.getDenseI64ArrayAttr({0, 3, 1, 2}));
}

} // namespace

//===----------------------------------------------------------------------===//
// conv2d
//===----------------------------------------------------------------------===//

Value ModelImporter::emitConv2d(const Node &layer, const model::Conv2d &spec,
                                Value x, const LayerContext &ctx) {
  Node node = child(layer, "conv2d");
  Location loc = layerLoc(layer, ctx);
  Window w;
  if (!spec.has_out_channels()) {
    error(node.loc) << "'out_channels' is required";
    return {};
  }
  if (spec.out_channels() < 1 ||
      spec.out_channels() > ImportLimits::kMaxDimSize) {
    error(fieldLoc(node, "out_channels"))
        << "out_channels " << spec.out_channels() << " is out of range [1, "
        << ImportLimits::kMaxDimSize << "]";
    return {};
  }
  if (spec.kernel_size().empty()) {
    error(node.loc) << "'kernel_size' is required";
    return {};
  }
  if (!readPair(*this, node, "kernel_size", spec.kernel_size(), 1, w.kernel) ||
      !readPair(*this, node, "stride", spec.stride(), 1, w.stride) ||
      !readPair(*this, node, "padding", spec.padding(), 0, w.padding) ||
      !readPair(*this, node, "dilation", spec.dilation(), 1, w.dilation) ||
      !checkInit(node, "weight_init", spec.has_weight_init(),
                 spec.weight_init()) ||
      !checkInit(node, "bias_init", spec.has_bias_init(), spec.bias_init()) ||
      !checkImages(*this, layer, "conv2d", x, floatType))
    return {};
  auto type = typeOf(x);
  int64_t batch = type.getDimSize(0), channels = type.getDimSize(1);
  if (spec.padding_same() && !spec.padding().empty()) {
    error(fieldLoc(node, "padding_same"))
        << "padding_same: true and padding exclude each other";
    return {};
  }
  for (int i = 0; i < 2; ++i) {
    w.padAfter[i] = w.padding[i];
    if (!spec.padding_same())
      continue;
    // ceil(H / s) outputs; the windows they need, less the input.
    int64_t in = type.getDimSize(2 + i);
    int64_t outputs = (in + w.stride[i] - 1) / w.stride[i];
    int64_t total =
        std::max<int64_t>(0, (outputs - 1) * w.stride[i] +
                                 w.dilation[i] * (w.kernel[i] - 1) + 1 - in);
    w.padding[i] = total / 2;
    w.padAfter[i] = total - total / 2;
  }
  if (!computeOutput(*this, layer, "conv2d", w, type.getDimSize(2),
                     type.getDimSize(3)))
    return {};
  int64_t out = spec.out_channels(), groups = spec.groups();
  if (groups < 1 || channels % groups || out % groups) {
    error(fieldLoc(node, "groups"))
        << "groups " << groups << " must be >= 1 and divide both the input's "
        << channels << " channels and out_channels " << out;
    return {};
  }
  if (!checkWindowLimits(*this, layer, "conv2d", w, batch, channels, groups,
                         ImportLimits::kMaxOps - opCount))
    return {};
  int64_t taps = w.size(), groupIn = channels / groups, groupOut = out / groups;

  // nn.Conv2d's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and
  // bias (kaiming_uniform with a = sqrt(5)), fan_in = C / groups * kh * kw.
  InitSpec fallback{InitSpec::Uniform,
                    1.0 / std::sqrt(static_cast<double>(groupIn * taps))};
  Value weight = createParam(
      ctx, "weight", {out, groupIn, w.kernel[0], w.kernel[1]},
      initFrom(spec.weight_init(), spec.has_weight_init(), fallback), loc);
  Value bias;
  if (spec.bias())
    bias = createParam(
        ctx, "bias", {out},
        initFrom(spec.bias_init(), spec.has_bias_init(), fallback), loc);
  if (!weight || (spec.bias() && !bias))
    return {};

  // Channels last: [B, H, W, C], windows [B, OH, OW, kh * kw * C] in
  // (kh, kw, C) order, which the weight [out, C, kh, kw] takes as
  // [out, kh, kw, C]. With groups, the windows come group by group,
  // [B, OH, OW, G * kh * kw * C / G], and the weight as [G, out / G,
  // kh * kw * C / G].
  Value nhwc = create<sgraph::TransposeOp>(
      loc, x, builder.getDenseI64ArrayAttr({0, 2, 3, 1}));
  if (!nhwc)
    return {};
  if (groups == channels && groups == out && taps <= kMaxElementwiseTaps) {
    // Depthwise: each channel's own filter, sum_k w[c, k] window_k[..., c],
    // as one loop kernel over the windows (a matmul per channel would be
    // one column wide). Each offset's weights are a row of the weight seen
    // as [kh kw, C], which broadcasts over the windows' last axis.
    SmallVector<Value> parts = windows(*this, nhwc, w, 1, 0.0, loc);
    if (parts.empty())
      return {};
    Value taps2d =
        createTyped<sgraph::ReshapeOp>(loc, floatTensor({out, taps}), weight);
    taps2d = create<sgraph::TransposeOp>(loc, taps2d,
                                         builder.getDenseI64ArrayAttr({1, 0}));
    Value y;
    for (auto [k, part] : llvm::enumerate(parts)) {
      Value wk = create<sgraph::SliceOp>(
          loc, taps2d, builder.getDenseI64ArrayAttr({int64_t(k), 0}),
          builder.getDenseI64ArrayAttr({int64_t(k) + 1, out}),
          DenseI64ArrayAttr());
      Value term = create<sgraph::MulOp>(loc, part, wk);
      y = y ? create<sgraph::AddOp>(loc, y, term) : term;
    }
    return finishConv(*this, y, bias, w, batch, out, loc);
  }
  SmallVector<Value> parts = windows(*this, nhwc, w, 1, 0.0, loc, groups);
  if (parts.empty())
    return {};
  // One GEMM of B * OH * OW rows (the batched form would be B * OH GEMMs),
  // or one per group.
  int64_t rows = batch * w.out[0] * w.out[1], depth = taps * groupIn;
  Value columns = join(*this, parts, 5, loc);
  Value kernel = create<sgraph::TransposeOp>(
      loc, weight, builder.getDenseI64ArrayAttr({0, 2, 3, 1}));
  Value y;
  if (groups == 1) {
    columns = createTyped<sgraph::ReshapeOp>(loc, floatTensor({rows, depth}),
                                             columns);
    kernel =
        createTyped<sgraph::ReshapeOp>(loc, floatTensor({out, depth}), kernel);
    y = create<sgraph::MatmulOp>(loc, columns, kernel,
                                 builder.getBoolAttr(false),
                                 builder.getBoolAttr(true));
  } else {
    // [G, rows, depth] x [G, out / G, depth]^T -> [G, rows, out / G], then
    // back to [rows, out] with each group's filters in order.
    columns = createTyped<sgraph::ReshapeOp>(
        loc, floatTensor({rows, groups, depth}), columns);
    columns = create<sgraph::TransposeOp>(
        loc, columns, builder.getDenseI64ArrayAttr({1, 0, 2}));
    kernel = createTyped<sgraph::ReshapeOp>(
        loc, floatTensor({groups, groupOut, depth}), kernel);
    y = create<sgraph::MatmulOp>(loc, columns, kernel,
                                 builder.getBoolAttr(false),
                                 builder.getBoolAttr(true));
    if (!y)
      return {};
    y = create<sgraph::TransposeOp>(loc, y,
                                    builder.getDenseI64ArrayAttr({1, 0, 2}));
    y = createTyped<sgraph::ReshapeOp>(loc, floatTensor({rows, out}), y);
  }
  return finishConv(*this, y, bias, w, batch, out, loc);
}

//===----------------------------------------------------------------------===//
// max_pool2d, avg_pool2d
//===----------------------------------------------------------------------===//

Value ModelImporter::emitPool2d(const Node &layer, const model::Pool2d &spec,
                                bool max, Value x, const LayerContext &ctx) {
  StringRef kind = max ? "max_pool2d" : "avg_pool2d";
  Node node = child(layer, kind);
  Location loc = layerLoc(layer, ctx);
  Window w;
  if (spec.kernel_size().empty()) {
    error(node.loc) << "'kernel_size' is required";
    return {};
  }
  if (!readPair(*this, node, "kernel_size", spec.kernel_size(), 1, w.kernel))
    return {};
  // nn.MaxPool2d / nn.AvgPool2d: the stride defaults to the kernel size.
  w.stride[0] = w.kernel[0];
  w.stride[1] = w.kernel[1];
  if (!readPair(*this, node, "stride", spec.stride(), 1, w.stride) ||
      !readPair(*this, node, "padding", spec.padding(), 0, w.padding) ||
      !checkImages(*this, layer, kind, x))
    return {};
  for (int i = 0; i < 2; ++i) {
    // PyTorch's rule: a window never lies wholly in the padding.
    if (2 * w.padding[i] > w.kernel[i]) {
      static const char *axes[2] = {"height", "width"};
      error(
          elementLoc(*this, node, "padding", spec.padding_size() == 2 ? i : 0))
          << "padding " << w.padding[i] << " along " << axes[i]
          << " is more than half the kernel's " << w.kernel[i];
      return {};
    }
  }
  auto type = typeOf(x);
  w.padAfter[0] = w.padding[0];
  w.padAfter[1] = w.padding[1];
  if (!computeOutput(*this, layer, kind, w, type.getDimSize(2),
                     type.getDimSize(3)))
    return {};
  int64_t batch = type.getDimSize(0), channels = type.getDimSize(1);
  // Windows of more than kMaxElementwiseTaps elements that tile the input
  // (global pooling) are reduced whole; others take an op per offset, or
  // four for the maximum (a maximum, a compare and two selects).
  bool reduceWhole = w.stride[0] == w.kernel[0] && w.stride[1] == w.kernel[1] &&
                     w.kernel[0] > kMaxElementwiseTaps / w.kernel[1];
  int64_t opsPerOffset = reduceWhole ? 0 : max ? 4 : 1;
  if (!checkWindowLimits(*this, layer, kind, w, batch, channels, opsPerOffset,
                         ImportLimits::kMaxOps - opCount))
    return {};
  int64_t taps = w.size();

  double padValue = max ? -std::numeric_limits<double>::infinity() : 0.0;
  if (reduceWhole) {
    // The split axes [B, C, OH, kh, OW, kw] are the windows, reduced by a
    // reduction kernel rather than by an op per offset.
    Value split = splitByStride(*this, x, w, 2, padValue, loc);
    return split ? poolWhole(*this, split, max, w, loc) : Value();
  }

  // One slice per kernel offset, combined elementwise: the pooling is one
  // loop kernel reading the input through its slices.
  SmallVector<Value> parts = windows(*this, x, w, 2, padValue, loc);
  if (parts.empty())
    return {};
  Value pooled = poolWindows(*this, parts, max, taps, loc);
  if (!pooled)
    return {};
  return createTyped<sgraph::ReshapeOp>(
      loc,
      RankedTensorType::get({batch, channels, w.out[0], w.out[1]},
                            type.getElementType()),
      pooled);
}

//===----------------------------------------------------------------------===//
// flatten
//===----------------------------------------------------------------------===//

Value ModelImporter::emitFlatten(const Node &layer, Value x,
                                 const LayerContext &ctx) {
  auto type = typeOf(x);
  if (type.getRank() < 1) {
    error(layer.loc) << "flatten layer '" << layerName(layer)
                     << "' needs a tensor with a batch axis, got " << type;
    return {};
  }
  int64_t rest = 1;
  for (int64_t d : type.getShape().drop_front())
    rest *= d; // within kMaxElements: the input's own count
  return createTyped<sgraph::ReshapeOp>(
      layerLoc(layer, ctx),
      RankedTensorType::get({type.getDimSize(0), rest}, type.getElementType()),
      x);
}
