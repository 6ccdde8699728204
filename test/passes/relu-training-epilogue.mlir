// RUN: sinter-opt %s --sinter-autodiff --sinter-decompose-ops --canonicalize --cse --sinter-fuse-kernels | FileCheck %s

// Tests that in a training step a linear layer's ReLU is the matmul
// library's epilogue (bias, then ReLU, one call): its backward mask reads
// the ReLU's result, which the next layer's weight gradient keeps anyway,
// so nothing else reads the sum before the ReLU and it is never written.
// CHECK-LABEL: func.func @train_step(
// CHECK: sgraph.fusion "[[K:k[0-9]+]]" kind = "matmul"{{.*}} -> tensor<2x8xf32>
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: sgraph.matmul {{.*}}"[[K]]: matmul library call (oneDNN)"
// CHECK-NEXT: sgraph.add {{.*}}"[[K]]: matmul epilogue (bias) applied
// CHECK-NEXT: sgraph.relu {{.*}}"[[K]]: matmul epilogue (activation) applied
// CHECK-NEXT: sgraph.yield
// CHECK-NOT: sgraph.relu
// CHECK: return
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "sgd", lr = 1.0e-3 : f64}}} {
func.func @forward(%w1: tensor<8x3xf32> {sgraph.param = "fc.weight"}, %b1: tensor<8xf32> {sgraph.param = "fc.bias"}, %w2: tensor<5x8xf32> {sgraph.param = "proj.weight"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w1 {transpose_rhs = true} : (tensor<2x3xf32>, tensor<8x3xf32>) -> tensor<2x8xf32>
  %1 = sgraph.add %0, %b1 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %2 = sgraph.relu %1 : tensor<2x8xf32>
  %3 = sgraph.matmul %2, %w2 {transpose_rhs = true} : (tensor<2x8xf32>, tensor<5x8xf32>) -> tensor<2x5xf32>
  %4 = sgraph.softmax_cross_entropy %3, %y : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<f32>
  return %4 : tensor<f32>
}
}
