// RUN: sinter-opt %s -split-input-file --sinter-mixed-precision --sinter-autodiff --sinter-decompose-ops --canonicalize --cse --sinter-fuse-kernels | FileCheck %s

// Tests that a kernel recomputing another kernel's chain stops at a value
// that kernel writes anyway (a matmul reads it) and reads it from memory.
// Under bf16 the layer norm's input gradient is rounded to bf16 for the
// weight gradient's matmul; the bias gradient sums its widened rows in a
// column kernel of its own (the layer norm's backward kernel has row
// reductions). That kernel reads the bf16 gradient and widens it, so the
// backward kernel writes no f32 copy for it; walking past the rounding
// into the layer norm's backward chain would be too long to recompute.
// CHECK-LABEL: func.func @train_step(
// CHECK: sgraph.fusion "[[LN:k[0-9]+]]" kind = "reduction"({{.*}}) -> (tensor<16x128x1xf32>, tensor<16x128x1xf32>, tensor<16x128x64xf32>, tensor<16x128x64xbf16>)
// CHECK: sgraph.fusion "[[DB:k[0-9]+]]" kind = "reduction"(%{{.*}}#3) : (tensor<16x128x64xbf16>) -> tensor<16x1x64xf32>
// CHECK-NEXT: ^bb0(%[[G:.*]]: tensor<16x128x64xbf16>):
// CHECK-NEXT: sgraph.cast %[[G]] {sinter.fusion = "[[DB]]: recomputed here from [[LN]]'s chain instead of read from memory"} : tensor<16x128x64xbf16> to tensor<16x128x64xf32>
// CHECK-NEXT: sgraph.reduce_sum
// CHECK: sgraph.matmul %{{.*}}, %{{.*}} {f32_result = true, {{.*}}transpose_lhs = true} : (tensor<2048x64xbf16>, tensor<2048x64xbf16>) -> tensor<64x64xf32>
module attributes {sgraph.training = {batch_size = 16 : i64, seed = 1 : i64, precision = "bf16_mixed", optimizer = {kind = "sgd", lr = 1.0e-3 : f64}}} {
func.func @forward(%w1: tensor<64x64xf32> {sgraph.param = "fc.weight"}, %b1: tensor<64xf32> {sgraph.param = "fc.bias"}, %g: tensor<64xf32> {sgraph.param = "ln.weight"}, %be: tensor<64xf32> {sgraph.param = "ln.bias"}, %w2: tensor<32x64xf32> {sgraph.param = "proj.weight"}, %x: tensor<16x128x64xf32> {sgraph.input = "x"}, %y: tensor<2048xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w1 {transpose_rhs = true} : (tensor<16x128x64xf32>, tensor<64x64xf32>) -> tensor<16x128x64xf32>
  %1 = sgraph.add %0, %b1 : (tensor<16x128x64xf32>, tensor<64xf32>) -> tensor<16x128x64xf32>
  %2 = sgraph.layer_norm %1, %g, %be axis = 2 : (tensor<16x128x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<16x128x64xf32>
  %3 = sgraph.matmul %2, %w2 {transpose_rhs = true} : (tensor<16x128x64xf32>, tensor<32x64xf32>) -> tensor<16x128x32xf32>
  %4 = sgraph.reshape %3 : tensor<16x128x32xf32> to tensor<2048x32xf32>
  %5 = sgraph.softmax_cross_entropy %4, %y : (tensor<2048x32xf32>, tensor<2048xi64>) -> tensor<f32>
  return %5 : tensor<f32>
}
}

// -----

// Tests the same once every kernel is built: a kernel that reads a value
// from memory without recomputing it (the residual add reading the
// residual stream's sum) also ends a chain. The layer norm's backward
// kernel recomputes the normalized input from that sum and the exported
// mean and 1/sqrt(var + eps), so the forward kernel writes no f32 copy of
// it: its outputs are the sum, four per-row values and the bf16 result.
// CHECK-LABEL: func.func @train_step(
// CHECK: sgraph.fusion "[[LNF:k[0-9]+]]" kind = "reduction"({{.*}}) -> (tensor<16x128x64xf32>, tensor<16x128x1xf32>, tensor<16x128x1xf32>, tensor<16x128x1xf32>, tensor<16x128x1xf32>, tensor<16x128x64xbf16>)
// CHECK: sgraph.fusion "{{k[0-9]+}}" kind = "loop"(%{{.*}}, %[[SUM:.*]]#0) : (tensor<16x128x64xbf16>, tensor<16x128x64xf32>) -> tensor<16x128x64xbf16>
// CHECK: sgraph.fusion "[[LNB:k[0-9]+]]" kind = "reduction"(%{{.*}}, %{{.*}}, %[[SUM]]#0, %{{.*}}, %{{.*}})
// CHECK: sgraph.sub %{{.*}}, %{{.*}} {sinter.fusion = "[[LNB]]: recomputed here from [[LNF]]'s chain instead of read from memory"}
// CHECK-NEXT: sgraph.mul %{{.*}}, %{{.*}} {sinter.fusion = "[[LNB]]: recomputed here from [[LNF]]'s chain instead of read from memory"}
module attributes {sgraph.training = {batch_size = 16 : i64, seed = 1 : i64, precision = "bf16_mixed", optimizer = {kind = "sgd", lr = 1.0e-3 : f64}}} {
func.func @forward(%w1: tensor<64x64xf32> {sgraph.param = "fc.weight"}, %g: tensor<64xf32> {sgraph.param = "ln.weight"}, %be: tensor<64xf32> {sgraph.param = "ln.bias"}, %w2: tensor<64x64xf32> {sgraph.param = "proj.weight"}, %w3: tensor<32x64xf32> {sgraph.param = "head.weight"}, %x: tensor<16x128x64xf32> {sgraph.input = "x"}, %y: tensor<2048xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w1 {transpose_rhs = true} : (tensor<16x128x64xf32>, tensor<64x64xf32>) -> tensor<16x128x64xf32>
  %1 = sgraph.add %x, %0 : (tensor<16x128x64xf32>, tensor<16x128x64xf32>) -> tensor<16x128x64xf32>
  %2 = sgraph.layer_norm %1, %g, %be axis = 2 : (tensor<16x128x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<16x128x64xf32>
  %3 = sgraph.matmul %2, %w2 {transpose_rhs = true} : (tensor<16x128x64xf32>, tensor<64x64xf32>) -> tensor<16x128x64xf32>
  %4 = sgraph.add %1, %3 : (tensor<16x128x64xf32>, tensor<16x128x64xf32>) -> tensor<16x128x64xf32>
  %5 = sgraph.matmul %4, %w3 {transpose_rhs = true} : (tensor<16x128x64xf32>, tensor<32x64xf32>) -> tensor<16x128x32xf32>
  %6 = sgraph.reshape %5 : tensor<16x128x32xf32> to tensor<2048x32xf32>
  %7 = sgraph.softmax_cross_entropy %6, %y : (tensor<2048x32xf32>, tensor<2048xi64>) -> tensor<f32>
  return %7 : tensor<f32>
}
}
