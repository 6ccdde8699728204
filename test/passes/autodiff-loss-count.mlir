// RUN: sinter-opt %s --split-input-file --sinter-autodiff | FileCheck %s

// Tests that a training step whose loss is a mean cross-entropy over labels
// it is fed (here through a reshape) gets the `loss_count` hyper argument
// (f64, default 0) and divides by it: the step's count of labels that are
// not ignored, shared out over the ranks and micro-batches
// (docs/Distributed.md, "Labels that do not count").
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[Y:[^:]*]]: tensor<2x2xi64> {sgraph.input = "y"}
// CHECK-SAME: %[[N:[^:]*]]: tensor<f64> {sgraph.default = 0.000000e+00 : f64, sgraph.hyper = "loss_count"}
// CHECK: %[[LABELS:.*]] = sgraph.reshape %[[Y]]
// CHECK: sgraph.softmax_cross_entropy %{{.*}}, %[[LABELS]] count %[[N]] {ignore_index = -1 : i64}
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "sgd", lr = 1.0e-1 : f64}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %x: tensor<4x3xf32> {sgraph.input = "x"}, %y: tensor<2x2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x4xf32>
  %labels = sgraph.reshape %y : tensor<2x2xi64> to tensor<4xi64>
  %1 = sgraph.softmax_cross_entropy %0, %labels {ignore_index = -1 : i64} : (tensor<4x4xf32>, tensor<4xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}
}

// -----

// Tests that a summed cross-entropy, whose sum over ranks needs no shared
// count, gets no loss_count.
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: loss_count
// CHECK: sgraph.softmax_cross_entropy %{{[^ ]*}}, %{{[^ ]*}} {reduction = "sum"}
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "sgd", lr = 1.0e-1 : f64}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.softmax_cross_entropy %0, %y {reduction = "sum"} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}
}

// -----

// Tests that labels the step computes rather than is fed (here the arg-max
// of another product) get no loss_count: the runtime could not count them.
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: loss_count
// CHECK: sgraph.softmax_cross_entropy %{{[^ ]*}}, %{{[^ ]*}} :
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "sgd", lr = 1.0e-1 : f64}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %x: tensor<2x3xf32> {sgraph.input = "x"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %y = sgraph.argmax %x axis = 1 : (tensor<2x3xf32>) -> tensor<2xi64>
  %1 = sgraph.softmax_cross_entropy %0, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}
}
