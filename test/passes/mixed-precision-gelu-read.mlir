// RUN: sinter-opt %s --sinter-mixed-precision=gelu-epilogues=true | FileCheck %s

// Tests that with gelu-epilogues a linear layer keeps its rounding after
// the bias when its tanh GELU is read by something other than a matmul
// (a dropout here): the library could not write that GELU in half, so the
// bias stays its epilogue (rounded once) and the GELU a kernel, as on the
// CPU target (mixed-precision-gelu.mlir has the GELU a matmul reads).
// CHECK-LABEL: func.func @forward(
// CHECK: %[[Q:.*]] = sgraph.add %{{.*}}, %{{.*}} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %[[Q16:.*]] = sgraph.cast %[[Q]] : tensor<2x8xf32> to tensor<2x8xbf16>
// CHECK-NEXT: %[[QW:.*]] = sgraph.cast %[[Q16]] : tensor<2x8xbf16> to tensor<2x8xf32>
// CHECK-NEXT: %[[G:.*]] = sgraph.gelu %[[QW]] {approximate = "tanh"}
// CHECK: sgraph.dropout %[[G]]
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, precision = "bf16_mixed", optimizer = {kind = "sgd", lr = 1.0e-3 : f64}}} {
func.func @forward(%w1: tensor<8x3xf32> {sgraph.param = "fc.weight"}, %b1: tensor<8xf32> {sgraph.param = "fc.bias"}, %w2: tensor<5x8xf32> {sgraph.param = "proj.weight"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}, %step: tensor<i64> {sgraph.step}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w1 {transpose_rhs = true} : (tensor<2x3xf32>, tensor<8x3xf32>) -> tensor<2x8xf32>
  %1 = sgraph.add %0, %b1 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %2 = sgraph.gelu %1 {approximate = "tanh"} : tensor<2x8xf32>
  %shard = sgraph.constant dense<0> : tensor<i64>
  %3 = sgraph.dropout %2, %step shard %shard {rate = 1.000000e-01 : f64, seed = 7 : i64} : tensor<2x8xf32>, tensor<i64>, tensor<i64>
  %4 = sgraph.matmul %3, %w2 {transpose_rhs = true} : (tensor<2x8xf32>, tensor<5x8xf32>) -> tensor<2x5xf32>
  %5 = sgraph.softmax_cross_entropy %4, %y : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<f32>
  return %5 : tensor<f32>
}
}
