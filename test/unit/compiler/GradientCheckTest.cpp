//===- GradientCheckTest.cpp - every gradient rule vs finite differences --===//
//
// For each differentiable op (with broadcasting and reductions over every
// axis) the test builds
//
//   @forward(params..., [integer inputs...], %w) -> (sum(op(params) * w), op(params))
//
// in f64, runs sinter-autodiff (mode=gradients), and compares the full
// Jacobian of op(params) two ways: analytically, one row per output element
// (w = e_j through @forward_grad), and by central differences of @forward's
// second result. The tolerance is torch.autograd.gradcheck's: eps 1e-6,
// |analytic - numeric| <= 1e-5 + 1e-3 |numeric|. Whole models built by the
// importer (an MLP, a GPT block with attention, layer norm with a residual,
// cross-entropy with ignored positions) are checked the same way through
// their scalar loss.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "compiler/Importer/ImportModel.h"
#include "compiler/Interpreter/Interpreter.h"
#include "dialects/Graph/GraphOps.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>

using namespace sinter;
using namespace sinter::test;
using interp::ElementKind;
using interp::Tensor;

namespace {

constexpr double kEps = 1e-6, kAtol = 1e-5, kRtol = 1e-3;

/// How a float parameter's values are drawn.
enum class Values {
  Any,      // uniform in [-1, 1]
  Positive, // uniform in [0.5, 2] (log, sqrt, pow bases, divisors)
  Distinct, // a shuffled grid: no ties, at least 0.125 from 0 (kinks)
};

struct Param {
  std::string type; // "2x3"
  Values values = Values::Any;
};

struct IntInput {
  std::string type; // "2x3xi64"
  std::vector<int64_t> values;
};

/// One op under test: `body` computes %y from %p0, %p1, ... and %i0, ...
struct OpCase {
  std::string name;
  std::vector<Param> params;
  std::string resultType; // "2x3"
  std::string body;
  std::vector<IntInput> ints = {};
  /// Central-difference step; larger only where the function rounds its
  /// input (casts to f32), so that rounding does not swamp the difference.
  double eps = kEps;
};

/// gtest prints a failing case by its name.
void PrintTo(const OpCase &c, std::ostream *os) { *os << c.name; }

std::vector<int64_t> shapeOf(const std::string &type) {
  std::vector<int64_t> shape;
  std::stringstream ss(type);
  std::string part;
  while (std::getline(ss, part, 'x'))
    if (!part.empty() && std::isdigit(part[0]))
      shape.push_back(std::stoll(part));
  return shape;
}

std::string tensorType(const std::string &dims, const char *element = "f64") {
  return dims.empty() ? "tensor<" + std::string(element) + ">"
                      : "tensor<" + dims + "x" + element + ">";
}

/// Wraps a case into @forward(params, ints, w) -> (sum(y * w), y).
std::string moduleText(const OpCase &c) {
  std::string args;
  for (size_t k = 0; k < c.params.size(); ++k)
    args += "%p" + std::to_string(k) + ": " + tensorType(c.params[k].type) +
            " {sgraph.param = \"p" + std::to_string(k) + "\"}, ";
  for (size_t k = 0; k < c.ints.size(); ++k)
    args += "%i" + std::to_string(k) + ": tensor<" + c.ints[k].type +
            "> {sgraph.input = \"i" + std::to_string(k) + "\"}, ";
  std::string y = tensorType(c.resultType);
  size_t rank = shapeOf(c.resultType).size();
  std::string axes;
  for (size_t k = 0; k < rank; ++k)
    axes += (k ? ", " : "") + std::to_string(k);
  return "func.func @forward(" + args + "%w: " + y +
         " {sgraph.input = \"w\"}) -> (tensor<f64> {sgraph.name = \"loss\"}, " +
         y + " {sgraph.name = \"out\"}) {\n" + c.body +
         "\n  %prod = sgraph.mul %y, %w : (" + y + ", " + y + ") -> " + y +
         "\n  %loss = sgraph.reduce_sum %prod axes = [" + axes + "] : (" + y +
         ") -> tensor<f64>\n  return %loss, %y : tensor<f64>, " + y + "\n}\n";
}

/// Runs sinter-autodiff in gradients mode.
bool differentiate(TestContext &ctx, mlir::ModuleOp module) {
  mlir::PassManager pm(&ctx.get());
  pm.addPass(createAutodiffPass(AutodiffPassOptions{"gradients"}));
  bool ok = mlir::succeeded(pm.run(module));
  EXPECT_TRUE(ok) << ctx.diagnostics;
  return ok;
}

Tensor drawValues(const std::vector<int64_t> &shape, Values kind,
                  std::mt19937_64 &rng, std::vector<double> &pool) {
  Tensor t(ElementKind::F64, shape);
  std::uniform_real_distribution<double> any(-1.0, 1.0), positive(0.5, 2.0);
  for (double &v : t.f) {
    if (kind == Values::Distinct) {
      v = pool.back();
      pool.pop_back();
    } else {
      v = kind == Values::Positive ? positive(rng) : any(rng);
    }
  }
  return t;
}

/// |a - n| <= atol + rtol |n| for every entry, reporting the worst.
void expectClose(const std::vector<double> &analytic,
                 const std::vector<double> &numeric, const std::string &what) {
  ASSERT_EQ(analytic.size(), numeric.size());
  double worst = 0;
  size_t at = 0;
  for (size_t k = 0; k < analytic.size(); ++k) {
    double excess = std::abs(analytic[k] - numeric[k]) -
                    (kAtol + kRtol * std::abs(numeric[k]));
    if (k == 0 || excess > worst) {
      worst = excess;
      at = k;
    }
  }
  EXPECT_LE(worst, 0.0) << what << ": entry " << at << " analytic "
                        << analytic[at] << " numeric " << numeric[at];
}

void checkOp(const OpCase &c) {
  SCOPED_TRACE(c.name);
  TestContext ctx;
  std::string text = moduleText(c);
  auto module = ctx.parse(text);
  if (!module || !differentiate(ctx, *module))
    return;

  std::mt19937_64 rng(std::hash<std::string>()(c.name));
  // One pool of distinct values for all Distinct parameters together, so
  // that no two of them tie either.
  size_t distinct = 0;
  for (const Param &p : c.params)
    if (p.values == Values::Distinct) {
      size_t n = 1;
      for (int64_t d : shapeOf(p.type))
        n *= d;
      distinct += n;
    }
  std::vector<double> pool;
  for (size_t k = 0; k < distinct; ++k)
    pool.push_back((double(k) - double(distinct) / 2 + 0.5) * 0.25);
  std::shuffle(pool.begin(), pool.end(), rng);

  std::vector<Tensor> params;
  for (const Param &p : c.params)
    params.push_back(drawValues(shapeOf(p.type), p.values, rng, pool));
  std::vector<Tensor> ints;
  for (const IntInput &in : c.ints) {
    std::vector<int64_t> shape = shapeOf(in.type);
    ElementKind kind = in.type.find("i32") != std::string::npos
                           ? ElementKind::I32
                           : ElementKind::I64;
    ints.push_back(sinter::test::ints(kind, shape, in.values));
  }
  std::vector<int64_t> outShape = shapeOf(c.resultType);
  Tensor w(ElementKind::F64, outShape);
  int64_t outCount = w.numElements();

  auto args = [&](const std::vector<Tensor> &ps, const Tensor &cotangent) {
    std::vector<Tensor> all = ps;
    all.insert(all.end(), ints.begin(), ints.end());
    all.push_back(cotangent);
    return all;
  };

  for (size_t p = 0; p < params.size(); ++p) {
    int64_t inCount = params[p].numElements();
    // Analytic Jacobian, row by row.
    std::vector<double> analytic(outCount * inCount);
    for (int64_t j = 0; j < outCount; ++j) {
      Tensor e = w;
      e.f[j] = 1.0;
      auto results = ctx.run(*module, "forward_grad", args(params, e));
      ASSERT_EQ(results.size(), 2 + params.size());
      const Tensor &grad = results[2 + p];
      for (int64_t i = 0; i < inCount; ++i)
        analytic[j * inCount + i] = grad.f[i];
    }
    // Numeric Jacobian, column by column.
    std::vector<double> numeric(outCount * inCount);
    for (int64_t i = 0; i < inCount; ++i) {
      std::vector<Tensor> plus = params, minus = params;
      plus[p].f[i] += c.eps;
      minus[p].f[i] -= c.eps;
      auto up = ctx.run(*module, "forward", args(plus, w));
      auto down = ctx.run(*module, "forward", args(minus, w));
      ASSERT_EQ(up.size(), 2u);
      ASSERT_EQ(down.size(), 2u);
      for (int64_t j = 0; j < outCount; ++j)
        numeric[j * inCount + i] = (up[1].f[j] - down[1].f[j]) / (2 * c.eps);
    }
    expectClose(analytic, numeric, c.name + " d/dp" + std::to_string(p));
  }
}

//===----------------------------------------------------------------------===//
// The cases
//===----------------------------------------------------------------------===//

/// Broadcasting pairs (lhs, rhs, result) the binary ops are checked on.
const std::vector<std::array<std::string, 3>> kBroadcastShapes = {
    {"2x3", "2x3", "2x3"},
    {"2x3", "3", "2x3"},
    {"2x1", "1x3", "2x3"},
    {"3", "2x1x3", "2x1x3"},
    {"", "2x2", "2x2"},
};

std::string binaryBody(const std::string &op, const std::string &l,
                       const std::string &r, const std::string &y) {
  return "  %y = sgraph." + op + " %p0, %p1 : (" + tensorType(l) + ", " +
         tensorType(r) + ") -> " + tensorType(y);
}

std::vector<OpCase> binaryCases() {
  std::vector<OpCase> cases;
  struct Spec {
    const char *op;
    Values lhs, rhs;
  };
  for (Spec s : {Spec{"add", Values::Any, Values::Any},
                 Spec{"sub", Values::Any, Values::Any},
                 Spec{"mul", Values::Any, Values::Any},
                 Spec{"div", Values::Any, Values::Positive},
                 Spec{"pow", Values::Positive, Values::Any},
                 Spec{"maximum", Values::Distinct, Values::Distinct},
                 Spec{"minimum", Values::Distinct, Values::Distinct}})
    for (const auto &[l, r, y] : kBroadcastShapes)
      cases.push_back({std::string(s.op) + " " + l + "," + r,
                       {{l, s.lhs}, {r, s.rhs}},
                       y,
                       binaryBody(s.op, l, r, y)});
  return cases;
}

std::vector<OpCase> unaryCases() {
  std::vector<OpCase> cases;
  struct Spec {
    const char *op;
    Values values;
    const char *attrs;
  };
  for (Spec s : {Spec{"neg", Values::Any, ""}, Spec{"abs", Values::Distinct, ""},
                 Spec{"exp", Values::Any, ""}, Spec{"log", Values::Positive, ""},
                 Spec{"sqrt", Values::Positive, ""},
                 Spec{"rsqrt", Values::Positive, ""},
                 Spec{"tanh", Values::Any, ""}, Spec{"sigmoid", Values::Any, ""},
                 Spec{"relu", Values::Distinct, ""},
                 Spec{"erf", Values::Any, ""}, Spec{"gelu", Values::Any, ""},
                 Spec{"gelu", Values::Any, " {approximate = \"tanh\"}"}})
    cases.push_back({std::string(s.op) + s.attrs,
                     {{"2x3", s.values}},
                     "2x3",
                     "  %y = sgraph." + std::string(s.op) + " %p0" + s.attrs +
                         " : tensor<2x3xf64>"});
  return cases;
}

std::vector<OpCase> reductionCases() {
  std::vector<OpCase> cases;
  const std::vector<std::vector<int64_t>> axesList = {
      {0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}};
  const std::vector<int64_t> shape = {2, 3, 4};
  for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max"})
    for (const auto &axes : axesList)
      for (bool keep : {false, true}) {
        std::string dims, axesText;
        for (size_t d = 0; d < shape.size(); ++d) {
          bool reduced =
              std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
          if (!reduced || keep)
            dims += (dims.empty() ? "" : "x") +
                    std::to_string(reduced ? 1 : shape[d]);
        }
        for (size_t k = 0; k < axes.size(); ++k)
          axesText += (k ? ", " : "") + std::to_string(axes[k]);
        std::string attrs = keep ? " {keepdims = true}" : "";
        cases.push_back(
            {std::string(op) + " [" + axesText + "]" + attrs,
             {{"2x3x4", std::string(op) == "reduce_max" ? Values::Distinct
                                                         : Values::Any}},
             dims,
             "  %y = sgraph." + std::string(op) + " %p0 axes = [" + axesText +
                 "]" + attrs + " : (tensor<2x3x4xf64>) -> " +
                 tensorType(dims)});
      }
  return cases;
}

std::vector<OpCase> normalizationCases() {
  std::vector<OpCase> cases;
  for (const char *op : {"softmax", "log_softmax"})
    for (int axis : {0, 1, 2})
      cases.push_back({std::string(op) + " axis " + std::to_string(axis),
                       {{"2x3x4"}},
                       "2x3x4",
                       "  %y = sgraph." + std::string(op) + " %p0 axis = " +
                           std::to_string(axis) + " : tensor<2x3x4xf64>"});
  cases.push_back({"layer_norm axis 2",
                   {{"2x3x4"}, {"4"}, {"4"}},
                   "2x3x4",
                   "  %y = sgraph.layer_norm %p0, %p1, %p2 axis = 2 : "
                   "(tensor<2x3x4xf64>, tensor<4xf64>, tensor<4xf64>) -> "
                   "tensor<2x3x4xf64>"});
  cases.push_back({"layer_norm axis 1",
                   {{"2x3x4"}, {"3x4"}, {"3x4"}},
                   "2x3x4",
                   "  %y = sgraph.layer_norm %p0, %p1, %p2 axis = 1 "
                   "{epsilon = 1.0e-3 : f64} : (tensor<2x3x4xf64>, "
                   "tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<2x3x4xf64>"});
  return cases;
}

std::vector<OpCase> matmulCases() {
  std::vector<OpCase> cases;
  for (bool tl : {false, true})
    for (bool tr : {false, true}) {
      std::string lhs = tl ? "3x2" : "2x3", rhs = tr ? "4x3" : "3x4";
      std::string attrs = std::string(" {transpose_lhs = ") +
                          (tl ? "true" : "false") + ", transpose_rhs = " +
                          (tr ? "true" : "false") + "}";
      cases.push_back({"matmul" + attrs,
                       {{lhs}, {rhs}},
                       "2x4",
                       "  %y = sgraph.matmul %p0, %p1" + attrs + " : (" +
                           tensorType(lhs) + ", " + tensorType(rhs) +
                           ") -> tensor<2x4xf64>"});
    }
  cases.push_back({"matmul batch broadcast",
                   {{"2x1x2x3"}, {"3x3x2"}},
                   "2x3x2x2",
                   "  %y = sgraph.matmul %p0, %p1 : (tensor<2x1x2x3xf64>, "
                   "tensor<3x3x2xf64>) -> tensor<2x3x2x2xf64>"});
  cases.push_back({"matmul linear layer",
                   {{"2x3x4"}, {"5x4"}},
                   "2x3x5",
                   "  %y = sgraph.matmul %p0, %p1 {transpose_rhs = true} : "
                   "(tensor<2x3x4xf64>, tensor<5x4xf64>) -> tensor<2x3x5xf64>"});
  cases.push_back({"matmul transposed batch",
                   {{"2x3x2"}, {"2x4x3"}},
                   "2x2x4",
                   "  %y = sgraph.matmul %p0, %p1 {transpose_lhs = true, "
                   "transpose_rhs = true} : (tensor<2x3x2xf64>, "
                   "tensor<2x4x3xf64>) -> tensor<2x2x4xf64>"});
  return cases;
}

std::vector<OpCase> lossCases() {
  std::vector<OpCase> cases;
  cases.push_back({"embedding",
                   {{"5x3"}},
                   "2x3x3",
                   "  %y = sgraph.embedding %p0, %i0 : (tensor<5x3xf64>, "
                   "tensor<2x3xi64>) -> tensor<2x3x3xf64>",
                   {{"2x3xi64", {4, 0, 4, 2, 2, 4}}}});
  for (const char *reduction : {"mean", "sum", "none"}) {
    bool none = std::string(reduction) == "none";
    cases.push_back(
        {std::string("softmax_cross_entropy ") + reduction,
         {{"4x5"}},
         none ? "4" : "",
         "  %y = sgraph.softmax_cross_entropy %p0, %i0 {ignore_index = -1 : "
         "i64, reduction = \"" +
             std::string(reduction) + "\"} : (tensor<4x5xf64>, tensor<4xi64>) -> " +
             tensorType(none ? "4" : ""),
         {{"4xi64", {3, -1, 0, 3}}}});
  }
  // A positive count divides instead of the positions not ignored (3
  // here); zero falls back to them.
  for (const char *count : {"2.5", "0.0"})
    cases.push_back(
        {std::string("softmax_cross_entropy count ") + count,
         {{"4x5"}},
         "",
         std::string("  %n = sgraph.constant dense<") + count +
             "> : tensor<f64>\n"
             "  %y = sgraph.softmax_cross_entropy %p0, %i0 count %n "
             "{ignore_index = -1 : i64} : (tensor<4x5xf64>, tensor<4xi64>, "
             "tensor<f64>) -> tensor<f64>",
         {{"4xi64", {3, -1, 0, 3}}}});
  cases.push_back({"softmax_cross_entropy rank 3",
                   {{"2x3x5"}},
                   "",
                   "  %y = sgraph.softmax_cross_entropy %p0, %i0 : "
                   "(tensor<2x3x5xf64>, tensor<2x3xi32>) -> tensor<f64>",
                   {{"2x3xi32", {1, 4, 0, 2, 2, -100}}}});
  return cases;
}

std::vector<OpCase> shapeCases() {
  std::vector<OpCase> cases;
  cases.push_back({"reshape",
                   {{"2x3x4"}},
                   "6x4",
                   "  %y = sgraph.reshape %p0 : tensor<2x3x4xf64> to "
                   "tensor<6x4xf64>"});
  cases.push_back({"transpose",
                   {{"2x3x4"}},
                   "4x2x3",
                   "  %y = sgraph.transpose %p0 permutation = [2, 0, 1] : "
                   "(tensor<2x3x4xf64>) -> tensor<4x2x3xf64>"});
  cases.push_back({"broadcast leading",
                   {{"3"}},
                   "2x4x3",
                   "  %y = sgraph.broadcast %p0 : tensor<3xf64> to "
                   "tensor<2x4x3xf64>"});
  cases.push_back({"broadcast ones",
                   {{"4x1"}},
                   "2x4x5",
                   "  %y = sgraph.broadcast %p0 : tensor<4x1xf64> to "
                   "tensor<2x4x5xf64>"});
  cases.push_back({"slice strided",
                   {{"4x5"}},
                   "2x2",
                   "  %y = sgraph.slice %p0 {start = array<i64: 0, 1>, limit "
                   "= array<i64: 4, 5>, stride = array<i64: 2, 2>} : "
                   "(tensor<4x5xf64>) -> tensor<2x2xf64>"});
  cases.push_back({"slice",
                   {{"4x5"}},
                   "2x3",
                   "  %y = sgraph.slice %p0 {start = array<i64: 1, 2>, limit "
                   "= array<i64: 3, 5>} : (tensor<4x5xf64>) -> "
                   "tensor<2x3xf64>"});
  cases.push_back({"pad",
                   {{"2x3"}},
                   "4x6",
                   "  %y = sgraph.pad %p0 {low = array<i64: 1, 0>, high = "
                   "array<i64: 1, 1>, interior = array<i64: 0, 1>, value = "
                   "2.0 : f64} : (tensor<2x3xf64>) -> tensor<4x6xf64>"});
  cases.push_back({"concat",
                   {{"2x3"}, {"2x2"}, {"2x1"}},
                   "2x6",
                   "  %y = sgraph.concat %p0, %p1, %p2 axis = 1 : "
                   "(tensor<2x3xf64>, tensor<2x2xf64>, tensor<2x1xf64>) -> "
                   "tensor<2x6xf64>"});
  cases.push_back({"concat same operand",
                   {{"2x3"}},
                   "4x3",
                   "  %y = sgraph.concat %p0, %p0 axis = 0 : "
                   "(tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<4x3xf64>"});
  cases.push_back({"select",
                   {{"2x3"}, {"3"}},
                   "2x3",
                   "  %c = sgraph.constant dense<[[true, false, true], [false, "
                   "false, true]]> : tensor<2x3xi1>\n  %y = sgraph.select %c, "
                   "%p0, %p1 : (tensor<2x3xi1>, tensor<2x3xf64>, "
                   "tensor<3xf64>) -> tensor<2x3xf64>"});
  cases.push_back({"dropout",
                   {{"4x5"}},
                   "4x5",
                   "  %y = sgraph.dropout %p0, %i0 {rate = 0.3 : f64, seed = "
                   "11 : i64} : tensor<4x5xf64>, tensor<i64>",
                   {{"i64", {5}}}});
  for (const char *reduction : {"sum", "mean"})
    cases.push_back({std::string("all_reduce ") + reduction,
                     {{"2x3"}},
                     "2x3",
                     "  %y = sgraph.all_reduce %p0 {reduction = \"" +
                         std::string(reduction) + "\"} : tensor<2x3xf64>"});
  cases.push_back({"all_gather",
                   {{"2x3"}},
                   "2x3",
                   "  %y = sgraph.all_gather %p0 {axis = 0 : i64, world_size "
                   "= 1 : i64} : (tensor<2x3xf64>) -> tensor<2x3xf64>"});
  cases.push_back({"reduce_scatter",
                   {{"2x3"}},
                   "2x3",
                   "  %y = sgraph.reduce_scatter %p0 {axis = 1 : i64, "
                   "world_size = 1 : i64, reduction = \"mean\"} : "
                   "(tensor<2x3xf64>) -> tensor<2x3xf64>"});
  // cast is the identity up to rounding to f32 (relative 6e-8), so the step
  // is 1e-2: the rounding error of the difference stays below 1e-5.
  cases.push_back({"cast through f32",
                   {{"2x3"}},
                   "2x3",
                   "  %c = sgraph.cast %p0 : tensor<2x3xf64> to "
                   "tensor<2x3xf32>\n  %y = sgraph.cast %c : tensor<2x3xf32> "
                   "to tensor<2x3xf64>",
                   {},
                   1e-2});
  // A value used three times (fan-out): its gradient is the sum.
  cases.push_back({"fan-out",
                   {{"2x3"}},
                   "2x3",
                   "  %a = sgraph.mul %p0, %p0 : (tensor<2x3xf64>, "
                   "tensor<2x3xf64>) -> tensor<2x3xf64>\n  %y = sgraph.add "
                   "%a, %p0 : (tensor<2x3xf64>, tensor<2x3xf64>) -> "
                   "tensor<2x3xf64>"});
  return cases;
}

class OpGradient : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpGradient, MatchesFiniteDifferences) { checkOp(GetParam()); }

std::string caseName(const ::testing::TestParamInfo<OpCase> &info) {
  std::string name;
  for (char c : info.param.name)
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Binary, OpGradient,
                         ::testing::ValuesIn(binaryCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Unary, OpGradient, ::testing::ValuesIn(unaryCases()),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Reductions, OpGradient,
                         ::testing::ValuesIn(reductionCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Normalizations, OpGradient,
                         ::testing::ValuesIn(normalizationCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Matmul, OpGradient,
                         ::testing::ValuesIn(matmulCases()), caseName);
INSTANTIATE_TEST_SUITE_P(EmbeddingAndLoss, OpGradient,
                         ::testing::ValuesIn(lossCases()), caseName);
INSTANTIATE_TEST_SUITE_P(ShapeAndMisc, OpGradient,
                         ::testing::ValuesIn(shapeCases()), caseName);

TEST(StopGradient, CutsTheBackwardPath) {
  // y = sum(x * x * stop_gradient(x)): the stopped factor is a constant, so
  // dy/dx = 2 x * x, not the 3 x^2 finite differences would see.
  TestContext ctx;
  auto module = ctx.parse(R"(
    func.func @forward(%x: tensor<3xf64> {sgraph.param = "x"}) -> (tensor<f64> {sgraph.name = "loss"}) {
      %a = sgraph.mul %x, %x : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
      %s = sgraph.stop_gradient %x : tensor<3xf64>
      %b = sgraph.mul %a, %s : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
      %l = sgraph.reduce_sum %b axes = [0] : (tensor<3xf64>) -> tensor<f64>
      return %l : tensor<f64>
    })");
  ASSERT_TRUE(module);
  ASSERT_TRUE(differentiate(ctx, *module));
  auto out = ctx.run(*module, "forward_grad", {f64({3}, {1, 2, 3})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].f, (std::vector<double>{2, 8, 18}));
}

//===----------------------------------------------------------------------===//
// Whole models
//===----------------------------------------------------------------------===//

/// Imports a model (in f64), differentiates it and checks every parameter's
/// gradient of the loss against central differences.
void checkModel(const std::string &name, const std::string &pbtxt,
                const std::vector<std::pair<std::string, Tensor>> &inputs) {
  SCOPED_TRACE(name);
  TestContext ctx;
  ImportOptions options;
  auto module = importModel(pbtxt, name + ".pbtxt", ctx.get(), options);
  ASSERT_TRUE(module) << ctx.diagnostics;
  ASSERT_TRUE(differentiate(ctx, *module));
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");

  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(-0.5, 0.5);
  std::vector<Tensor> args;
  std::vector<unsigned> paramArgs;
  for (unsigned k = 0; k < forward.getNumArguments(); ++k) {
    auto type = mlir::cast<mlir::RankedTensorType>(forward.getArgumentTypes()[k]);
    std::string argName = sgraph::argumentName(forward, k);
    if (forward.getArgAttr(k, sgraph::attr::kParam)) {
      Tensor t = interp::zerosOf(type);
      for (double &v : t.f)
        v = dist(rng);
      args.push_back(t);
      if (!forward.getArgAttr(k, sgraph::attr::kFrozen))
        paramArgs.push_back(k);
      continue;
    }
    if (forward.getArgAttr(k, sgraph::attr::kStep)) {
      args.push_back(i64({}, {3}));
      continue;
    }
    // Rank 1 of a data-parallel job: dropout masks for the second shard.
    if (forward.getArgAttr(k, sgraph::attr::kRank)) {
      args.push_back(i64({}, {1}));
      continue;
    }
    auto it = std::find_if(inputs.begin(), inputs.end(),
                           [&](const auto &in) { return in.first == argName; });
    ASSERT_NE(it, inputs.end()) << "no input " << argName;
    args.push_back(it->second);
  }

  auto grads = ctx.run(*module, "forward_grad", args);
  ASSERT_GE(grads.size(), 1 + paramArgs.size());
  size_t firstGrad = grads.size() - paramArgs.size();
  for (size_t p = 0; p < paramArgs.size(); ++p) {
    unsigned k = paramArgs[p];
    std::vector<double> analytic = grads[firstGrad + p].f, numeric;
    for (size_t i = 0; i < args[k].f.size(); ++i) {
      std::vector<Tensor> plus = args, minus = args;
      plus[k].f[i] += kEps;
      minus[k].f[i] -= kEps;
      double up = ctx.run(*module, "forward", plus)[0].f[0];
      double down = ctx.run(*module, "forward", minus)[0].f[0];
      numeric.push_back((up - down) / (2 * kEps));
    }
    expectClose(analytic, numeric,
                name + " d/d " + sgraph::argumentName(forward, k));
  }
}

TEST(ModelGradient, Mlp) {
  checkModel("mlp", R"(
    dtype: FLOAT64
    input { name: "x" shape: [-1, 4] dtype: FLOAT64 }
    input { name: "y" shape: [-1] dtype: INT64 }
    layer { name: "fc1" input: "x" dense { units: 5 } }
    layer { name: "act" input: "fc1" activation { kind: TANH } }
    layer { name: "fc2" input: "act" dense { units: 3 } }
    loss { softmax_cross_entropy { logits: "fc2" labels: "y" } }
    training { batch_size: 3 }
  )",
             {{"x", f64({3, 4}, {0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, -0.8,
                                 0.9, 1.0, -1.1, 1.2})},
              {"y", i64({3}, {2, 0, 1})}});
}

TEST(ModelGradient, LayerNormWithResidual) {
  checkModel("layer_norm_residual", R"(
    dtype: FLOAT64
    input { name: "x" shape: [-1, 3, 6] dtype: FLOAT64 }
    input { name: "t" shape: [-1, 3, 6] dtype: FLOAT64 }
    layer { name: "fc" input: "x" dense { units: 6 } }
    layer { name: "ln" input: "fc" layer_norm {} }
    layer { name: "res" input: ["x", "ln"] add {} }
    loss { mean_squared_error { prediction: "res" target: "t" } }
    training { batch_size: 2 }
  )",
             {{"x", [] {
                 Tensor t(ElementKind::F64, {2, 3, 6});
                 for (size_t k = 0; k < t.f.size(); ++k)
                   t.f[k] = std::sin(double(k));
                 return t;
               }()},
              {"t", [] {
                 Tensor t(ElementKind::F64, {2, 3, 6});
                 for (size_t k = 0; k < t.f.size(); ++k)
                   t.f[k] = std::cos(double(k));
                 return t;
               }()}});
}

TEST(ModelGradient, AttentionBlockWithTiedEmbeddingAndIgnoredTargets) {
  // A two-position-deep GPT: embeddings, one transformer block (causal
  // attention, MLP, two layer norms, dropout), a tied head and cross-entropy
  // with ignored targets.
  checkModel("tiny_gpt", R"(
    dtype: FLOAT64
    input { name: "idx" shape: [-1, 4] dtype: INT64 }
    input { name: "targets" shape: [-1, 4] dtype: INT64 }
    layer { name: "wte" input: "idx" embedding { num_embeddings: 7 dim: 8 } }
    layer { name: "wpe" input: "idx" positional_embedding { max_positions: 4 dim: 8 } }
    layer { name: "emb" input: ["wte", "wpe"] add {} }
    layer { name: "h" input: "emb" repeat: 1 transformer_block { num_heads: 2 dropout: 0.1 } }
    layer { name: "ln_f" input: "h" layer_norm {} }
    layer { name: "head" input: "ln_f" dense { units: 7 bias: false tie_weight: "wte.weight" } }
    loss { softmax_cross_entropy { logits: "head" labels: "targets" ignore_index: -1 } }
    training { batch_size: 2 }
  )",
             {{"idx", i64({2, 4}, {1, 5, 5, 0, 6, 2, 3, 1})},
              {"targets", i64({2, 4}, {5, 5, -1, 2, 2, 3, 1, -1})}});
}

TEST(ModelGradient, FrozenParametersAndIntegerInputsGetNoGradient) {
  TestContext ctx;
  auto module = importModel(R"(
    dtype: FLOAT64
    input { name: "idx" shape: [-1, 2] dtype: INT64 }
    layer { name: "wte" input: "idx" embedding { num_embeddings: 3 dim: 2 } frozen: true }
    layer { name: "fc" input: "wte" dense { units: 3 } }
    loss { softmax_cross_entropy { logits: "fc" labels: "idx" } }
  )",
                            "frozen.pbtxt", ctx.get());
  ASSERT_TRUE(module) << ctx.diagnostics;
  ASSERT_TRUE(differentiate(ctx, *module));
  auto grad = module->lookupSymbol<mlir::func::FuncOp>("forward_grad");
  // loss, grad.fc.weight, grad.fc.bias: none for the frozen table.
  ASSERT_EQ(grad.getNumResults(), 3u);
  EXPECT_EQ(sgraph::resultName(grad, 1), "grad.fc.weight");
  EXPECT_EQ(sgraph::resultName(grad, 2), "grad.fc.bias");
  bool scatters = false;
  grad.walk([&](sgraph::EmbeddingGradOp) { scatters = true; });
  EXPECT_FALSE(scatters);
}

} // namespace
