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

// -----

// Tests that a loss linear in the cross-entropy (here it minus a constant
// multiple of an auxiliary term, the sum of the squared weights, which
// holds no cross-entropy) gets the count too: the ranks' shares of the
// cross-entropy then add up to the whole step's mean as before, and the
// auxiliary term is each rank's own.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[N:[^:]*]]: tensor<f64> {sgraph.default = 0.000000e+00 : f64, sgraph.hyper = "loss_count"}
// CHECK: sgraph.softmax_cross_entropy %{{[^ ]*}}, %{{[^ ]*}} count %[[N]] {ignore_index = -1 : i64}
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "sgd", lr = 1.0e-1 : f64}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.softmax_cross_entropy %0, %y {ignore_index = -1 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  %2 = sgraph.mul %w, %w : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %3 = sgraph.reduce_sum %2 axes = [0, 1] : (tensor<4x3xf32>) -> tensor<f32>
  %h = sgraph.constant dense<-1.0e-2> : tensor<f32>
  %4 = sgraph.mul %h, %3 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %5 = sgraph.add %1, %4 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %5 : tensor<f32>
}
}

// -----

// Tests that a cross-entropy the loss uses other than linearly (here also
// squared) gets no count: a share of the mean is no mean to square.
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: loss_count
// CHECK: sgraph.softmax_cross_entropy %{{[^ ]*}}, %{{[^ ]*}} {ignore_index = -1 : i64}
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "sgd", lr = 1.0e-1 : f64}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.softmax_cross_entropy %0, %y {ignore_index = -1 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  %2 = sgraph.mul %1, %1 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %3 = sgraph.add %1, %2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %3 : tensor<f32>
}
}

// -----

// Tests that two cross-entropies over one input's labels, averaged, both
// take the one count.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[N:[^:]*]]: tensor<f64> {sgraph.default = 0.000000e+00 : f64, sgraph.hyper = "loss_count"}
// CHECK: sgraph.softmax_cross_entropy %{{[^ ]*}}, %{{[^ ]*}} count %[[N]]
// CHECK: sgraph.softmax_cross_entropy %{{[^ ]*}}, %{{[^ ]*}} count %[[N]]
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "sgd", lr = 1.0e-1 : f64}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.softmax_cross_entropy %0, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  %2 = sgraph.neg %0 : tensor<2x4xf32>
  %3 = sgraph.softmax_cross_entropy %2, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  %4 = sgraph.add %1, %3 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %h = sgraph.constant dense<2.0> : tensor<f32>
  %5 = sgraph.div %4, %h : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %5 : tensor<f32>
}
}

// -----

// Tests that cross-entropies over two inputs' labels get no count: the
// runtime counts one input's.
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: loss_count
// CHECK: return
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "sgd", lr = 1.0e-1 : f64}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}, %z: tensor<2xi64> {sgraph.input = "z"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.softmax_cross_entropy %0, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  %2 = sgraph.softmax_cross_entropy %0, %z : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  %3 = sgraph.sub %1, %2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %3 : tensor<f32>
}
}
