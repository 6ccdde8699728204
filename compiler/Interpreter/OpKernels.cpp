//===- OpKernels.cpp - what each sgraph op computes ----------------------===//
//
// One plain loop per op, written for obviousness, not speed: values are
// doubles (or int64), each result element is rounded once to its element
// type. The formulas are those of docs/dialects/sgraph.md; where PyTorch
// defines the behaviour (NaN in maximum, ties in argmax, the optimizers) it
// is followed.
//
//===----------------------------------------------------------------------===//

#include "compiler/Interpreter/Interpreter.h"
#include "compiler/Interpreter/OptimizerKernels.h"

#include "dialects/Graph/GraphOps.h"
#include "abi/Gelu.h"
#include "abi/Random.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>
#include <optional>

using namespace mlir;
using namespace sinter;
using namespace sinter::interp;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Tensor resultTensor(Operation *op, unsigned index = 0) {
  return zerosOf(cast<RankedTensorType>(op->getResult(index).getType()));
}

/// Strides of an operand over the result's index space: aligned at the
/// trailing axis, 0 on broadcast (size-1 or missing) axes.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &operand,
                                      const std::vector<int64_t> &result) {
  std::vector<int64_t> own = stridesOf(operand);
  std::vector<int64_t> strides(result.size(), 0);
  size_t offset = result.size() - operand.size();
  for (size_t d = 0; d < operand.size(); ++d)
    strides[d + offset] = operand[d] == 1 ? 0 : own[d];
  return strides;
}

/// Calls fn(resultIndex, operandOffsets) for every element of `shape`,
/// tracking each operand's flat offset through its strides.
template <typename Fn>
void forEachElement(const std::vector<int64_t> &shape,
                    const std::vector<std::vector<int64_t>> &strides, Fn fn) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  if (n == 0)
    return;
  size_t rank = shape.size(), count = strides.size();
  std::vector<int64_t> index(rank, 0), offsets(count, 0);
  for (int64_t k = 0; k < n; ++k) {
    fn(k, offsets.data());
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      ++index[d];
      for (size_t o = 0; o < count; ++o)
        offsets[o] += strides[o][d];
      if (index[d] < shape[d])
        break;
      for (size_t o = 0; o < count; ++o)
        offsets[o] -= strides[o][d] * shape[d];
      index[d] = 0;
    }
  }
}

/// Sets element k of a result from a double (rounded) or an integer
/// (wrapped).
void setFloat(Tensor &t, int64_t k, double v) { t.f[k] = roundTo(t.kind, v); }
void setInt(Tensor &t, int64_t k, int64_t v) { t.i[k] = wrapTo(t.kind, v); }

int64_t wrappingAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}
int64_t wrappingSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}
int64_t wrappingMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) *
                              static_cast<uint64_t>(b));
}

/// maximum/minimum propagate NaN, as torch.maximum.
double nanMax(double a, double b) {
  return std::isnan(a) || std::isnan(b)
             ? std::numeric_limits<double>::quiet_NaN()
             : std::max(a, b);
}
double nanMin(double a, double b) {
  return std::isnan(a) || std::isnan(b)
             ? std::numeric_limits<double>::quiet_NaN()
             : std::min(a, b);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

enum class Binary { Add, Sub, Mul, Div, Pow, Max, Min };

LogicalResult binary(Operation *op, Binary kind, const Tensor &a,
                     const Tensor &b, Tensor &out) {
  bool divByZero = false;
  forEachElement(out.shape,
                 {broadcastStrides(a.shape, out.shape),
                  broadcastStrides(b.shape, out.shape)},
                 [&](int64_t k, const int64_t *o) {
                   if (out.isFloat()) {
                     double x = a.f[o[0]], y = b.f[o[1]], r = 0;
                     switch (kind) {
                     case Binary::Add:
                       r = x + y;
                       break;
                     case Binary::Sub:
                       r = x - y;
                       break;
                     case Binary::Mul:
                       r = x * y;
                       break;
                     case Binary::Div:
                       r = x / y;
                       break;
                     case Binary::Pow:
                       r = std::pow(x, y);
                       break;
                     case Binary::Max:
                       r = nanMax(x, y);
                       break;
                     case Binary::Min:
                       r = nanMin(x, y);
                       break;
                     }
                     setFloat(out, k, r);
                     return;
                   }
                   int64_t x = a.i[o[0]], y = b.i[o[1]], r = 0;
                   switch (kind) {
                   case Binary::Add:
                     r = wrappingAdd(x, y);
                     break;
                   case Binary::Sub:
                     r = wrappingSub(x, y);
                     break;
                   case Binary::Mul:
                     r = wrappingMul(x, y);
                     break;
                   case Binary::Div:
                     if (y == 0) {
                       divByZero = true;
                       return;
                     }
                     // INT_MIN / -1 wraps instead of trapping.
                     r = y == -1 ? wrappingSub(0, x) : x / y;
                     break;
                   case Binary::Pow:
                     break; // float only (verifier)
                   case Binary::Max:
                     r = std::max(x, y);
                     break;
                   case Binary::Min:
                     r = std::min(x, y);
                     break;
                   }
                   setInt(out, k, r);
                 });
  if (divByZero)
    return op->emitOpError("divides an integer by zero");
  return success();
}

template <typename Fn> void unaryFloat(const Tensor &x, Tensor &out, Fn fn) {
  for (int64_t k = 0, n = x.numElements(); k < n; ++k)
    setFloat(out, k, fn(x.f[k]));
}

template <typename T> bool compareValues(StringRef direction, T x, T y) {
  // IEEE semantics for doubles: every comparison with NaN is false but ne.
  if (direction == "eq")
    return x == y;
  if (direction == "ne")
    return x != y;
  if (direction == "lt")
    return x < y;
  if (direction == "le")
    return x <= y;
  if (direction == "gt")
    return x > y;
  return x >= y;
}

LogicalResult compare(StringRef direction, const Tensor &a, const Tensor &b,
                      Tensor &out) {
  forEachElement(out.shape,
                 {broadcastStrides(a.shape, out.shape),
                  broadcastStrides(b.shape, out.shape)},
                 [&](int64_t k, const int64_t *o) {
                   out.i[k] =
                       a.isFloat()
                           ? compareValues(direction, a.f[o[0]], b.f[o[1]])
                           : compareValues(direction, a.i[o[0]], b.i[o[1]]);
                 });
  return success();
}

void select(const Tensor &c, const Tensor &t, const Tensor &f, Tensor &out) {
  forEachElement(out.shape,
                 {broadcastStrides(c.shape, out.shape),
                  broadcastStrides(t.shape, out.shape),
                  broadcastStrides(f.shape, out.shape)},
                 [&](int64_t k, const int64_t *o) {
                   bool chooseTrue = c.i[o[0]] != 0;
                   const Tensor &src = chooseTrue ? t : f;
                   int64_t at = chooseTrue ? o[1] : o[2];
                   if (out.isFloat())
                     out.f[k] = src.f[at];
                   else
                     out.i[k] = src.i[at];
                 });
}

/// Conversion between element kinds (sgraph.cast semantics).
void castInto(const Tensor &x, Tensor &out) {
  for (int64_t k = 0, n = x.numElements(); k < n; ++k) {
    if (out.isFloat()) {
      setFloat(out, k, x.get(k));
      continue;
    }
    if (out.kind == ElementKind::I1) {
      out.i[k] = x.get(k) != 0;
      continue;
    }
    if (!x.isFloat()) {
      setInt(out, k, x.i[k]);
      continue;
    }
    // Float to integer: toward zero, saturating, NaN to 0.
    double v = x.f[k];
    double lo = out.kind == ElementKind::I32
                    ? double(std::numeric_limits<int32_t>::min())
                    : -9223372036854775808.0;
    double hi = out.kind == ElementKind::I32
                    ? double(std::numeric_limits<int32_t>::max())
                    : 9223372036854775807.0;
    if (std::isnan(v))
      out.i[k] = 0;
    else if (v <= lo)
      out.i[k] = out.kind == ElementKind::I32
                     ? std::numeric_limits<int32_t>::min()
                     : std::numeric_limits<int64_t>::min();
    else if (v >= hi)
      out.i[k] = out.kind == ElementKind::I32
                     ? std::numeric_limits<int32_t>::max()
                     : std::numeric_limits<int64_t>::max();
    else
      out.i[k] = static_cast<int64_t>(std::trunc(v));
  }
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

// one-definition: how reduce_sum/mean/max fold an axis of one tensor, not
// the ABI's Collective.Reduction (what an all-reduce does across ranks).
enum class Reduce { Sum, Mean, Max };

void reduce(Reduce kind, const Tensor &x, ArrayRef<int64_t> axes, Tensor &out) {
  // Output strides over the input's index space, 0 on reduced axes.
  std::vector<int64_t> keptShape = x.shape;
  for (int64_t a : axes)
    keptShape[a] = 1;
  std::vector<int64_t> strides = broadcastStrides(keptShape, x.shape);
  int64_t n = out.numElements();
  int64_t count = 1;
  for (int64_t a : axes)
    count *= x.shape[a];
  if (x.isFloat() || kind == Reduce::Mean) {
    std::vector<double> acc(n, kind == Reduce::Max
                                   ? -std::numeric_limits<double>::infinity()
                                   : 0.0);
    forEachElement(x.shape, {strides}, [&](int64_t k, const int64_t *o) {
      double v = x.get(k);
      if (kind == Reduce::Max)
        acc[o[0]] = nanMax(acc[o[0]], v);
      else
        acc[o[0]] += v;
    });
    for (int64_t k = 0; k < n; ++k) {
      double v = kind == Reduce::Mean ? acc[k] / double(count) : acc[k];
      if (out.isFloat())
        setFloat(out, k, v);
      else
        setInt(out, k, static_cast<int64_t>(v));
    }
    return;
  }
  std::vector<int64_t> acc(
      n, kind == Reduce::Max ? std::numeric_limits<int64_t>::min() : 0);
  forEachElement(x.shape, {strides}, [&](int64_t k, const int64_t *o) {
    acc[o[0]] = kind == Reduce::Max ? std::max(acc[o[0]], x.i[k])
                                    : wrappingAdd(acc[o[0]], x.i[k]);
  });
  for (int64_t k = 0; k < n; ++k)
    setInt(out, k, acc[k]);
}

/// Calls fn(base, stride, length) for every 1-d line along `axis`.
template <typename Fn>
void forEachLine(const std::vector<int64_t> &shape, int64_t axis, Fn fn) {
  int64_t length = shape[axis];
  int64_t inner = 1, outer = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      fn(o * length * inner + i, inner, length);
}

void softmax(const Tensor &x, int64_t axis, bool log, Tensor &out) {
  forEachLine(x.shape, axis, [&](int64_t base, int64_t stride, int64_t n) {
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < n; ++j)
      max = std::max(max, x.f[base + j * stride]);
    // A line of -inf (everything masked) has no finite maximum.
    if (std::isinf(max) && max < 0)
      max = 0;
    double sum = 0;
    for (int64_t j = 0; j < n; ++j)
      sum += std::exp(x.f[base + j * stride] - max);
    for (int64_t j = 0; j < n; ++j) {
      double v = x.f[base + j * stride] - max;
      setFloat(out, base + j * stride,
               log ? v - std::log(sum) : std::exp(v) / sum);
    }
  });
}

void argmax(const Tensor &x, int64_t axis, Tensor &out) {
  // Lines come out in row-major order of the result (the axis removed).
  int64_t k = 0;
  forEachLine(x.shape, axis, [&](int64_t base, int64_t stride, int64_t n) {
    int64_t best = 0;
    double bestValue = x.get(base);
    for (int64_t j = 1; j < n && !std::isnan(bestValue); ++j) {
      double v = x.get(base + j * stride);
      if (std::isnan(v) || v > bestValue) {
        best = j;
        bestValue = v;
      }
    }
    out.i[k++] = best;
  });
}

void layerNorm(const Tensor &x, const Tensor &scale, const Tensor &bias,
               int64_t axis, double eps, Tensor &out) {
  int64_t inner = 1;
  for (size_t d = axis; d < x.shape.size(); ++d)
    inner *= x.shape[d];
  int64_t outer = inner ? x.numElements() / inner : 0;
  for (int64_t o = 0; o < outer; ++o) {
    const double *row = x.f.data() + o * inner;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < inner; ++j)
      mean += row[j];
    mean /= double(inner);
    for (int64_t j = 0; j < inner; ++j)
      var += (row[j] - mean) * (row[j] - mean);
    var /= double(inner);
    double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < inner; ++j)
      setFloat(out, o * inner + j,
               (row[j] - mean) * rstd * scale.f[j] + bias.f[j]);
  }
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

void matmul(const Tensor &a, const Tensor &b, bool ta, bool tb, Tensor &out) {
  int64_t ar = a.rank(), rr = out.rank();
  int64_t m = out.shape[rr - 2], n = out.shape[rr - 1];
  int64_t kDim = ta ? a.shape[ar - 2] : a.shape[ar - 1];
  // Element (i, k) of op(A) and (k, j) of op(B) within one matrix.
  int64_t aRow = ta ? 1 : kDim, aCol = ta ? m : 1;
  int64_t bRow = tb ? 1 : n, bCol = tb ? kDim : 1;
  std::vector<int64_t> batch(out.shape.begin(), out.shape.end() - 2);
  std::vector<int64_t> aBatch(a.shape.begin(), a.shape.end() - 2);
  std::vector<int64_t> bBatch(b.shape.begin(), b.shape.end() - 2);
  int64_t aMatrix = m * kDim, bMatrix = kDim * n, outMatrix = m * n;
  std::vector<int64_t> aStrides = broadcastStrides(aBatch, batch);
  std::vector<int64_t> bStrides = broadcastStrides(bBatch, batch);
  bool isFloat = out.isFloat();
  std::vector<double> acc(n);
  // A transposed float B is first copied row-major, so that the inner loop
  // below walks memory in order (the same sums in the same order; only
  // faster: a GPT-2 step spends most of its time here).
  std::vector<double> bRows;
  int64_t bRowsOf = -1;
  forEachElement(
      batch, {aStrides, bStrides}, [&](int64_t bi, const int64_t *o) {
        int64_t aBase = o[0] * aMatrix, bBase = o[1] * bMatrix;
        const double *bData = nullptr;
        if (isFloat && bCol != 1) {
          if (bRowsOf != bBase) {
            bRows.resize(kDim * n);
            for (int64_t k = 0; k < kDim; ++k)
              for (int64_t j = 0; j < n; ++j)
                bRows[k * n + j] = b.f[bBase + k * bRow + j * bCol];
            bRowsOf = bBase;
          }
          bData = bRows.data();
        } else if (isFloat) {
          bData = b.f.data() + bBase;
        }
        for (int64_t i = 0; i < m; ++i) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t k = 0; k < kDim; ++k) {
            double av = a.get(aBase + i * aRow + k * aCol);
            if (av == 0.0 && isFloat)
              continue;
            int64_t bk = bBase + k * bRow;
            if (isFloat) {
              const double *row = bData + k * (bCol != 1 ? n : bRow);
              for (int64_t j = 0; j < n; ++j)
                acc[j] += av * row[j];
            } else {
              for (int64_t j = 0; j < n; ++j)
                acc[j] += av * static_cast<double>(b.i[bk + j * bCol]);
            }
          }
          for (int64_t j = 0; j < n; ++j) {
            int64_t k = bi * outMatrix + i * n + j;
            if (isFloat)
              setFloat(out, k, acc[j]);
            else
              setInt(out, k, static_cast<int64_t>(acc[j]));
          }
        }
      });
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

/// out[index] = x[map(index)] for a strided view of x over out's shape.
void gather(const Tensor &x, const std::vector<int64_t> &strides,
            int64_t offset, Tensor &out) {
  forEachElement(out.shape, {strides}, [&](int64_t k, const int64_t *o) {
    if (out.isFloat())
      out.f[k] = x.f[offset + o[0]];
    else
      out.i[k] = x.i[offset + o[0]];
  });
}

void transpose(const Tensor &x, ArrayRef<int64_t> perm, Tensor &out) {
  std::vector<int64_t> own = stridesOf(x.shape), strides;
  for (int64_t p : perm)
    strides.push_back(own[p]);
  gather(x, strides, 0, out);
}

void slice(const Tensor &x, ArrayRef<int64_t> start,
           std::optional<ArrayRef<int64_t>> stride, Tensor &out) {
  std::vector<int64_t> own = stridesOf(x.shape), strides;
  int64_t offset = 0;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    offset += start[d] * own[d];
    strides.push_back(own[d] * (stride ? (*stride)[d] : 1));
  }
  gather(x, strides, offset, out);
}

void pad(const Tensor &x, ArrayRef<int64_t> low,
         std::optional<ArrayRef<int64_t>> interior, double value, Tensor &out) {
  for (int64_t k = 0, n = out.numElements(); k < n; ++k) {
    if (out.isFloat())
      out.f[k] = roundTo(out.kind, value);
    else
      out.i[k] = wrapTo(out.kind, static_cast<int64_t>(value));
  }
  // Each operand element lands at low + index * (interior + 1).
  std::vector<int64_t> own = stridesOf(out.shape), strides;
  int64_t offset = 0;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    offset += low[d] * own[d];
    strides.push_back(own[d] * ((interior ? (*interior)[d] : 0) + 1));
  }
  forEachElement(x.shape, {strides}, [&](int64_t k, const int64_t *o) {
    if (out.isFloat())
      out.f[offset + o[0]] = x.f[k];
    else
      out.i[offset + o[0]] = x.i[k];
  });
}

void concat(ArrayRef<const Tensor *> inputs, int64_t axis, Tensor &out) {
  std::vector<int64_t> own = stridesOf(out.shape);
  int64_t offset = 0;
  for (const Tensor *x : inputs) {
    forEachElement(x->shape, {own}, [&](int64_t k, const int64_t *o) {
      if (out.isFloat())
        out.f[offset + o[0]] = x->f[k];
      else
        out.i[offset + o[0]] = x->i[k];
    });
    offset += x->shape[axis] * own[axis];
  }
}

//===----------------------------------------------------------------------===//
// Embeddings and losses
//===----------------------------------------------------------------------===//

std::string indexText(const std::vector<int64_t> &shape, int64_t flat) {
  std::vector<int64_t> strides = stridesOf(shape);
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    text += (d ? ", " : "") + std::to_string(flat / strides[d]);
    flat %= strides[d];
  }
  return text + "]";
}

LogicalResult embedding(Operation *op, const Tensor &table,
                        const Tensor &indices, Tensor &out) {
  int64_t rows = table.shape[0], dim = table.shape[1];
  for (int64_t k = 0, n = indices.numElements(); k < n; ++k) {
    int64_t row = indices.i[k];
    if (row < 0 || row >= rows)
      return op->emitOpError("index ")
             << row << " at " << indexText(indices.shape, k)
             << " is out of range [0, " << rows << ")";
    for (int64_t j = 0; j < dim; ++j)
      out.f[k * dim + j] = table.f[row * dim + j];
  }
  return success();
}

void embeddingGrad(const Tensor &grad, const Tensor &indices, Tensor &out) {
  int64_t rows = out.shape[0], dim = out.shape[1];
  std::vector<double> acc(rows * dim, 0.0);
  for (int64_t k = 0, n = indices.numElements(); k < n; ++k) {
    int64_t row = indices.i[k];
    if (row < 0 || row >= rows)
      continue;
    for (int64_t j = 0; j < dim; ++j)
      acc[row * dim + j] += grad.f[k * dim + j];
  }
  for (int64_t k = 0; k < rows * dim; ++k)
    setFloat(out, k, acc[k]);
}

LogicalResult crossEntropy(Operation *op, const Tensor &logits,
                           const Tensor &labels, int64_t ignore,
                           StringRef reduction, const Tensor *share,
                           Tensor &out) {
  int64_t classes = logits.shape.back();
  int64_t rows = labels.numElements();
  double total = 0;
  int64_t counted = 0;
  std::vector<double> losses(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = labels.i[r];
    if (label == ignore)
      continue;
    if (label < 0 || label >= classes)
      return op->emitOpError("label ")
             << label << " at " << indexText(labels.shape, r)
             << " is out of range [0, " << classes << ") and is not the "
             << "ignore_index " << ignore;
    const double *row = logits.f.data() + r * classes;
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < classes; ++c)
      max = std::max(max, row[c]);
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(row[c] - max);
    losses[r] = std::log(sum) + max - row[label];
    total += losses[r];
    ++counted;
  }
  if (reduction == "none") {
    for (int64_t r = 0; r < rows; ++r)
      setFloat(out, r, losses[r]);
  } else if (reduction == "sum") {
    setFloat(out, 0, total);
  } else {
    // 0 / 0 = NaN when every position is ignored, as PyTorch. A positive
    // `count` operand (the step's count shared out) divides instead.
    double divisor = double(counted);
    if (share && share->f[0] > 0)
      divisor = share->f[0];
    setFloat(out, 0, total / divisor);
  }
  return success();
}

LogicalResult singleRank(Operation *op, int64_t worldSize) {
  if (worldSize != 1)
    return op->emitOpError("needs ")
           << worldSize << " ranks; the interpreter runs a single rank";
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

LogicalResult sinter::interp::evaluateOp(Operation *op,
                                         ArrayRef<const Tensor *> in,
                                         std::vector<Tensor> &results) {
  for (unsigned r = 0; r < op->getNumResults(); ++r) {
    auto type = dyn_cast<RankedTensorType>(op->getResult(r).getType());
    if (!type || !kindOf(type.getElementType()))
      return op->emitOpError("has a result type the interpreter cannot hold");
    results.push_back(resultTensor(op, r));
  }
  Tensor *out = results.empty() ? nullptr : &results[0];
  auto copyOperand = [&]() {
    *out = *in[0];
    return success();
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](sgraph::ConstantOp c) -> LogicalResult {
        auto t = tensorFromAttr(c.getValue(), c.getLoc());
        if (failed(t))
          return failure();
        *out = std::move(*t);
        return success();
      })
      .Case([&](sgraph::IotaOp iota) {
        int64_t axis = iota.getAxis();
        std::vector<int64_t> strides = stridesOf(out->shape);
        for (int64_t k = 0, n = out->numElements(); k < n; ++k) {
          int64_t index = (k / strides[axis]) % out->shape[axis];
          if (out->isFloat())
            setFloat(*out, k, double(index));
          else
            setInt(*out, k, index);
        }
        return success();
      })
      .Case([&](sgraph::CausalMaskOp) {
        int64_t t = out->shape[0];
        for (int64_t i = 0; i < t; ++i)
          for (int64_t j = 0; j < t; ++j)
            out->i[i * t + j] = j <= i;
        return success();
      })
      .Case([&](sgraph::AddOp) {
        return binary(op, Binary::Add, *in[0], *in[1], *out);
      })
      .Case([&](sgraph::SubOp) {
        return binary(op, Binary::Sub, *in[0], *in[1], *out);
      })
      .Case([&](sgraph::MulOp) {
        return binary(op, Binary::Mul, *in[0], *in[1], *out);
      })
      .Case([&](sgraph::DivOp) {
        return binary(op, Binary::Div, *in[0], *in[1], *out);
      })
      .Case([&](sgraph::PowOp) {
        return binary(op, Binary::Pow, *in[0], *in[1], *out);
      })
      .Case([&](sgraph::MaximumOp) {
        return binary(op, Binary::Max, *in[0], *in[1], *out);
      })
      .Case([&](sgraph::MinimumOp) {
        return binary(op, Binary::Min, *in[0], *in[1], *out);
      })
      .Case([&](sgraph::CompareOp c) {
        return compare(c.getDirection(), *in[0], *in[1], *out);
      })
      .Case([&](sgraph::SelectOp) {
        select(*in[0], *in[1], *in[2], *out);
        return success();
      })
      .Case([&](sgraph::NegOp) {
        for (int64_t k = 0, n = out->numElements(); k < n; ++k) {
          if (out->isFloat())
            out->f[k] = -in[0]->f[k];
          else
            setInt(*out, k, wrappingSub(0, in[0]->i[k]));
        }
        return success();
      })
      .Case([&](sgraph::AbsOp) {
        for (int64_t k = 0, n = out->numElements(); k < n; ++k) {
          if (out->isFloat())
            out->f[k] = std::fabs(in[0]->f[k]);
          else
            setInt(*out, k,
                   in[0]->i[k] < 0 ? wrappingSub(0, in[0]->i[k]) : in[0]->i[k]);
        }
        return success();
      })
      .Case([&](sgraph::ExpOp) {
        unaryFloat(*in[0], *out, [](double x) { return std::exp(x); });
        return success();
      })
      .Case([&](sgraph::LogOp) {
        unaryFloat(*in[0], *out, [](double x) { return std::log(x); });
        return success();
      })
      .Case([&](sgraph::SqrtOp) {
        unaryFloat(*in[0], *out, [](double x) { return std::sqrt(x); });
        return success();
      })
      .Case([&](sgraph::RsqrtOp) {
        unaryFloat(*in[0], *out, [](double x) { return 1.0 / std::sqrt(x); });
        return success();
      })
      .Case([&](sgraph::TanhOp) {
        unaryFloat(*in[0], *out, [](double x) { return std::tanh(x); });
        return success();
      })
      .Case([&](sgraph::SigmoidOp) {
        unaryFloat(*in[0], *out,
                   [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
        return success();
      })
      .Case([&](sgraph::ReluOp) {
        // NaN stays NaN, as torch.relu.
        unaryFloat(*in[0], *out,
                   [](double x) { return std::isnan(x) || x > 0 ? x : 0.0; });
        return success();
      })
      .Case([&](sgraph::ErfOp) {
        unaryFloat(*in[0], *out, [](double x) { return std::erf(x); });
        return success();
      })
      .Case([&](sgraph::GeluOp g) {
        bool tanhForm = g.getApproximate() == "tanh";
        unaryFloat(*in[0], *out, [&](double x) {
          return sinter::gelu::value(x, tanhForm);
        });
        return success();
      })
      .Case([&](sgraph::GeluGradOp g) {
        bool tanhForm = g.getApproximate() == "tanh";
        const Tensor &grad = *in[0], &x = *in[1];
        for (int64_t k = 0, n = x.numElements(); k < n; ++k)
          setFloat(*out, k,
                   grad.f[k] * sinter::gelu::derivative(x.f[k], tanhForm));
        return success();
      })
      .Case([&](sgraph::ReduceSumOp r) {
        reduce(Reduce::Sum, *in[0], r.getAxes(), *out);
        return success();
      })
      .Case([&](sgraph::ReduceMeanOp r) {
        reduce(Reduce::Mean, *in[0], r.getAxes(), *out);
        return success();
      })
      .Case([&](sgraph::ReduceMaxOp r) {
        reduce(Reduce::Max, *in[0], r.getAxes(), *out);
        return success();
      })
      .Case([&](sgraph::ArgmaxOp a) {
        argmax(*in[0], a.getAxis(), *out);
        return success();
      })
      .Case([&](sgraph::SoftmaxOp s) {
        softmax(*in[0], s.getAxis(), false, *out);
        return success();
      })
      .Case([&](sgraph::LogSoftmaxOp s) {
        softmax(*in[0], s.getAxis(), true, *out);
        return success();
      })
      .Case([&](sgraph::LayerNormOp l) {
        layerNorm(*in[0], *in[1], *in[2], l.getAxis(),
                  l.getEpsilon().convertToDouble(), *out);
        return success();
      })
      .Case([&](sgraph::MatmulOp m) {
        matmul(*in[0], *in[1], m.getTransposeLhs(), m.getTransposeRhs(), *out);
        return success();
      })
      .Case([&](sgraph::EmbeddingOp) {
        return embedding(op, *in[0], *in[1], *out);
      })
      .Case([&](sgraph::EmbeddingGradOp) {
        embeddingGrad(*in[0], *in[1], *out);
        return success();
      })
      .Case([&](sgraph::SoftmaxCrossEntropyOp ce) {
        return crossEntropy(op, *in[0], *in[1], ce.getIgnoreIndex(),
                            ce.getReduction(), in.size() > 2 ? in[2] : nullptr,
                            *out);
      })
      .Case([&](sgraph::OneHotOp) {
        int64_t depth = out->shape.back();
        for (int64_t k = 0, n = in[0]->numElements(); k < n; ++k) {
          int64_t label = in[0]->i[k];
          if (label >= 0 && label < depth)
            out->f[k * depth + label] = 1.0;
        }
        return success();
      })
      .Case([&](sgraph::ReshapeOp) {
        out->f = in[0]->f;
        out->i = in[0]->i;
        return success();
      })
      .Case([&](sgraph::TransposeOp t) {
        transpose(*in[0], t.getPermutation(), *out);
        return success();
      })
      .Case([&](sgraph::BroadcastOp) {
        gather(*in[0], broadcastStrides(in[0]->shape, out->shape), 0, *out);
        return success();
      })
      .Case([&](sgraph::SliceOp s) {
        slice(*in[0], s.getStart(), s.getStride(), *out);
        return success();
      })
      .Case([&](sgraph::PadOp p) {
        pad(*in[0], p.getLow(), p.getInterior(), p.getValue().convertToDouble(),
            *out);
        return success();
      })
      .Case([&](sgraph::ConcatOp c) {
        concat(in, c.getAxis(), *out);
        return success();
      })
      .Case([&](sgraph::CastOp) {
        castInto(*in[0], *out);
        return success();
      })
      .Case([&](sgraph::DropoutOp d) {
        double rate = d.getRate().convertToDouble();
        uint64_t key = random::key(static_cast<uint64_t>(d.getSeed()),
                                   static_cast<uint64_t>(in[1]->i[0]));
        // This rank's rows of the global batch: elements shard * n onward,
        // counted with the batch axis first.
        int64_t n = out->numElements();
        uint64_t first =
            in.size() > 2 ? static_cast<uint64_t>(in[2]->i[0] * n) : 0;
        auto [outer, batch, inner] = d.getBatchView();
        for (int64_t k = 0; k < n; ++k)
          setFloat(*out, k,
                   random::dropoutKeeps(
                       key,
                       first + random::batchMajorIndex(k, outer, batch, inner),
                       rate)
                       ? in[0]->f[k] / (1.0 - rate)
                       : 0.0);
        return success();
      })
      .Case([&](sgraph::StopGradientOp) { return copyOperand(); })
      // A function not resolved by the training phase runs in training mode
      // (a PyTorch module's default).
      .Case([&](sgraph::TrainEvalOp) { return copyOperand(); })
      .Case([&](sgraph::AllReduceOp) {
        // One rank: every reduction of one value is that value.
        for (size_t i = 0; i < results.size(); ++i)
          results[i] = *in[i];
        return success();
      })
      .Case([&](sgraph::CollectiveBroadcastOp b) -> LogicalResult {
        if (b.getRoot() != 0)
          return op->emitOpError("broadcasts from rank ")
                 << b.getRoot() << "; the interpreter runs rank 0 only";
        return copyOperand();
      })
      .Case([&](sgraph::AllGatherOp g) -> LogicalResult {
        if (failed(singleRank(op, g.getWorldSize())))
          return failure();
        return copyOperand();
      })
      .Case([&](sgraph::ReduceScatterOp r) -> LogicalResult {
        if (failed(singleRank(op, r.getWorldSize())))
          return failure();
        return copyOperand();
      })
      .Case([&](sgraph::SgdUpdateOp u) {
        sgdUpdate(u, *in[0], *in[1], *in[2], *out);
        return success();
      })
      .Case([&](sgraph::MomentumUpdateOp u) {
        momentumUpdate(u, *in[0], *in[1], *in[2], *in[3], *in[4], results[0],
                       results[1]);
        return success();
      })
      .Case([&](sgraph::AdamUpdateOp u) {
        adamUpdate(u, *in[0], *in[1], *in[2], *in[3], *in[4], *in[5],
                   results[0], results[1], results[2]);
        return success();
      })
      .Case([&](sgraph::GlobalNormOp) {
        double sum = 0;
        for (const Tensor *t : in)
          for (double v : t->f)
            sum += v * v;
        setFloat(*out, 0, std::sqrt(sum));
        return success();
      })
      .Case([&](sgraph::LrScheduleOp s) {
        std::optional<double> peak;
        if (s.getPeakLr())
          peak = in[1]->f[0];
        setFloat(*out, 0, lrAt(s, in[0]->i[0], peak));
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot be run by the reference interpreter");
      });
}

void sinter::interp::matmulInto(const Tensor &a, const Tensor &b,
                                bool transposeA, bool transposeB, Tensor &out) {
  matmul(a, b, transposeA, transposeB, out);
}

double sinter::interp::geluOf(double x, bool tanhForm) {
  return sinter::gelu::value(x, tanhForm);
}

double sinter::interp::geluGradOf(double x, bool tanhForm) {
  return sinter::gelu::derivative(x, tanhForm);
}
