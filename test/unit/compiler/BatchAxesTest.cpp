//===- BatchAxesTest.cpp - where the batch is, op by op -------------------===//
//
// compiler/Importer/BatchAxes.cpp rule by rule: each test function takes its
// batch in its first argument (on the axis the test names) and returns the
// values whose batch axes are checked, in order. -1 stands for None, -2 for
// Unknown.
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer/BatchAxes.h"
#include "test/unit/compiler/TestUtil.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace sinter;
using namespace sinter::importer;

namespace {

constexpr int64_t kNone = -1;
constexpr int64_t kUnknown = -2;

/// The batch axes of @f's results, with its first argument's batch on
/// `axis`.
std::vector<int64_t> resultAxes(const std::string &text, int64_t axis) {
  test::TestContext ctx;
  auto module = ctx.parse(text);
  if (!module)
    return {};
  auto fn = module->lookupSymbol<func::FuncOp>("f");
  Block &body = fn.getBody().front();
  // A reshape's `hint` stands for the -1 of a model file's raw reshape.
  llvm::DenseMap<Operation *, int64_t> hints;
  fn.walk([&](Operation *op) {
    if (auto hint = op->getAttrOfType<IntegerAttr>("hint"))
      hints[op] = hint.getInt();
  });
  auto axes = findBatchAxes(body, {{body.getArgument(0), axis}}, hints);
  std::vector<int64_t> out;
  for (Value v : body.getTerminator()->getOperands()) {
    BatchAxis b = axes.lookup(v);
    out.push_back(b.kind == BatchAxis::Axis   ? b.axis
                  : b.kind == BatchAxis::None ? kNone
                                              : kUnknown);
  }
  return out;
}

TEST(BatchAxes, ElementwiseAndBroadcastAlignFromTheRight) {
  // x: [B = 2, 3, 4], batch on axis 0; w a parameter.
  EXPECT_EQ(resultAxes(R"(
    func.func @f(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>, %y: tensor<5x2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4xf32>, tensor<5x2x3x4xf32>, tensor<7x2x3x4xf32>) {
      %a = sgraph.add %x, %w : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
      %e = sgraph.exp %w : tensor<4xf32>
      %c = sgraph.mul %y, %x : (tensor<5x2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<5x2x3x4xf32>
      %b = sgraph.broadcast %x : tensor<2x3x4xf32> to tensor<7x2x3x4xf32>
      return %a, %e, %c, %b : tensor<2x3x4xf32>, tensor<4xf32>, tensor<5x2x3x4xf32>, tensor<7x2x3x4xf32>
    })",
                       0),
            (std::vector<int64_t>{0, kNone, 1, 1}));
}

TEST(BatchAxes, ABatchOfOneBroadcastToMoreIsLost) {
  EXPECT_EQ(resultAxes(R"(
    func.func @f(%x: tensor<1x4xf32>, %w: tensor<3x4xf32>) -> tensor<3x4xf32> {
      %a = sgraph.add %x, %w : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
      return %a : tensor<3x4xf32>
    })",
                       0),
            (std::vector<int64_t>{kUnknown}));
}

TEST(BatchAxes, TransposesPermuteAndReductionsRemove) {
  // x: [3, B = 2, 4], batch on axis 1.
  EXPECT_EQ(resultAxes(R"(
    func.func @f(%x: tensor<3x2x4xf32>) -> (tensor<4x3x2xf32>, tensor<2x4xf32>, tensor<3x1x4xf32>, tensor<3x4xf32>, tensor<3x2xi64>) {
      %t = sgraph.transpose %x permutation = [2, 0, 1] : (tensor<3x2x4xf32>) -> tensor<4x3x2xf32>
      %r = sgraph.reduce_sum %x axes = [0] : (tensor<3x2x4xf32>) -> tensor<2x4xf32>
      %k = sgraph.reduce_max %x axes = [1] {keepdims = true} : (tensor<3x2x4xf32>) -> tensor<3x1x4xf32>
      %m = sgraph.reduce_mean %x axes = [1] : (tensor<3x2x4xf32>) -> tensor<3x4xf32>
      %i = sgraph.argmax %x axis = 2 : (tensor<3x2x4xf32>) -> tensor<3x2xi64>
      return %t, %r, %k, %m, %i : tensor<4x3x2xf32>, tensor<2x4xf32>, tensor<3x1x4xf32>, tensor<3x4xf32>, tensor<3x2xi64>
    })",
                       1),
            (std::vector<int64_t>{2, 0, kNone, kNone, 1}));
}

TEST(BatchAxes, ReshapesKeepTheBatchWhereTheyLeaveItUntouched) {
  // x: [T = 4, B = 2, D = 3], batch on axis 1: reshaping the axes around
  // it keeps it; merging it with the width or behind the sequence loses
  // it (at another batch size the merged axis would not be the one to
  // grow).
  EXPECT_EQ(resultAxes(R"(
    func.func @f(%x: tensor<4x2x3xf32>) -> (tensor<4x2x3x1xf32>, tensor<4x6xf32>, tensor<2x2x2x3xf32>, tensor<8x3xf32>, tensor<1x4x2x3xf32>) {
      %a = sgraph.reshape %x : tensor<4x2x3xf32> to tensor<4x2x3x1xf32>
      %b = sgraph.reshape %x : tensor<4x2x3xf32> to tensor<4x6xf32>
      %c = sgraph.reshape %x : tensor<4x2x3xf32> to tensor<2x2x2x3xf32>
      %d = sgraph.reshape %x : tensor<4x2x3xf32> to tensor<8x3xf32>
      %e = sgraph.reshape %x : tensor<4x2x3xf32> to tensor<1x4x2x3xf32>
      return %a, %b, %c, %d, %e : tensor<4x2x3x1xf32>, tensor<4x6xf32>, tensor<2x2x2x3xf32>, tensor<8x3xf32>, tensor<1x4x2x3xf32>
    })",
                       1),
            (std::vector<int64_t>{1, kUnknown, 2, kUnknown, 2}));
  // With the batch leading, a rank's elements are one block, whatever the
  // reshape: merged with the axes after it, or split.
  EXPECT_EQ(resultAxes(R"(
    func.func @f(%x: tensor<2x4x3xf32>) -> (tensor<8x3xf32>, tensor<24xf32>, tensor<1x24xf32>, tensor<2x4x3x1xf32>) {
      %a = sgraph.reshape %x : tensor<2x4x3xf32> to tensor<8x3xf32>
      %b = sgraph.reshape %x : tensor<2x4x3xf32> to tensor<24xf32>
      %c = sgraph.reshape %x : tensor<2x4x3xf32> to tensor<1x24xf32>
      %d = sgraph.reshape %x : tensor<2x4x3xf32> to tensor<2x4x3x1xf32>
      return %a, %b, %c, %d : tensor<8x3xf32>, tensor<24xf32>, tensor<1x24xf32>, tensor<2x4x3x1xf32>
    })",
                       0),
            (std::vector<int64_t>{0, 0, 1, 0}));
}

TEST(BatchAxes, AReshapeThatNamesItsBatchAxisIsTakenAtItsWord) {
  // x: [T = 4, B = 2, D = 3], batch on axis 1. [4, -1, 3] names axis 1;
  // [4, 3, -1] reinterprets the elements (at batch 2 the same shape as
  // [4, 3, 2]), so the batch is not where the file puts it.
  EXPECT_EQ(resultAxes(R"(
    func.func @f(%x: tensor<4x2x3xf32>) -> (tensor<4x2x3xf32>, tensor<4x3x2xf32>) {
      %a = sgraph.reshape %x {hint = 1} : tensor<4x2x3xf32> to tensor<4x2x3xf32>
      %b = sgraph.reshape %x {hint = 2} : tensor<4x2x3xf32> to tensor<4x3x2xf32>
      return %a, %b : tensor<4x2x3xf32>, tensor<4x3x2xf32>
    })",
                       1),
            (std::vector<int64_t>{1, kUnknown}));
}

TEST(BatchAxes, MatmulsMoveContractOrKeepTheBatch) {
  // x: [B = 2, 3], batch on axis 0: M of a product, N of a transposed one,
  // contracted (none left) when x is transposed.
  EXPECT_EQ(resultAxes(R"(
    func.func @f(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> (tensor<2x4xf32>, tensor<4x2xf32>, tensor<3x3xf32>) {
      %m = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
      %n = sgraph.matmul %w, %x {transpose_rhs = true} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
      %k = sgraph.matmul %x, %x {transpose_lhs = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<3x3xf32>
      return %m, %n, %k : tensor<2x4xf32>, tensor<4x2xf32>, tensor<3x3xf32>
    })",
                       0),
            (std::vector<int64_t>{0, 1, kNone}));
  // x: [B = 2, 5, 3]: a batch axis of the product, from either side.
  EXPECT_EQ(resultAxes(R"(
    func.func @f(%x: tensor<2x5x3xf32>, %w: tensor<3x4xf32>, %v: tensor<6x5xf32>) -> (tensor<2x5x4xf32>, tensor<2x5x5xf32>, tensor<2x6x3xf32>) {
      %a = sgraph.matmul %x, %w : (tensor<2x5x3xf32>, tensor<3x4xf32>) -> tensor<2x5x4xf32>
      %s = sgraph.matmul %x, %x {transpose_rhs = true} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>) -> tensor<2x5x5xf32>
      %r = sgraph.matmul %v, %x : (tensor<6x5xf32>, tensor<2x5x3xf32>) -> tensor<2x6x3xf32>
      return %a, %s, %r : tensor<2x5x4xf32>, tensor<2x5x5xf32>, tensor<2x6x3xf32>
    })",
                       0),
            (std::vector<int64_t>{0, 0, 0}));
}

TEST(BatchAxes, SlicesPadsAndConcatsAlongTheBatchLoseIt) {
  EXPECT_EQ(resultAxes(R"(
    func.func @f(%x: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<1x3xf32>, tensor<2x5xf32>, tensor<3x3xf32>, tensor<2x6xf32>, tensor<4x3xf32>) {
      %a = sgraph.slice %x {start = array<i64: 0, 1>, limit = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
      %b = sgraph.slice %x {start = array<i64: 1, 0>, limit = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<1x3xf32>
      %c = sgraph.pad %x {low = array<i64: 0, 1>, high = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x5xf32>
      %d = sgraph.pad %x {low = array<i64: 1, 0>, high = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<3x3xf32>
      %e = sgraph.concat %x, %x axis = 1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
      %f = sgraph.concat %x, %x axis = 0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
      return %a, %b, %c, %d, %e, %f : tensor<2x2xf32>, tensor<1x3xf32>, tensor<2x5xf32>, tensor<3x3xf32>, tensor<2x6xf32>, tensor<4x3xf32>
    })",
                       0),
            (std::vector<int64_t>{0, kUnknown, 0, kUnknown, 0, kUnknown}));
}

TEST(BatchAxes, EmbeddingsFollowTheIndices) {
  // idx: [5, B = 2], batch on axis 1.
  EXPECT_EQ(resultAxes(R"(
    func.func @f(%idx: tensor<5x2xi64>, %t: tensor<10x4xf32>) -> (tensor<5x2x4xf32>, tensor<5x2x10xf32>) {
      %e = sgraph.embedding %t, %idx : (tensor<10x4xf32>, tensor<5x2xi64>) -> tensor<5x2x4xf32>
      %o = sgraph.one_hot %idx : (tensor<5x2xi64>) -> tensor<5x2x10xf32>
      return %e, %o : tensor<5x2x4xf32>, tensor<5x2x10xf32>
    })",
                       1),
            (std::vector<int64_t>{1, 1}));
}

} // namespace
