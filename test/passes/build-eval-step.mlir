// RUN: sinter-opt %s -split-input-file --sinter-build-eval-step | FileCheck %s
// RUN: not sinter-opt %s -split-input-file --sinter-build-eval-step --sinter-build-eval-step 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: echo 'module {}' | not sinter-opt --sinter-build-eval-step 2>&1 | FileCheck %s --check-prefix=NOFORWARD

// Tests that @eval_step is @forward in eval mode: the dropout is its
// operand, the step (only dropout read it) is gone, and every other
// argument and result keeps its attributes (names, initializers, aliases),
// so a runtime can copy parameters from the training step by name.
// CHECK-LABEL: func.func @forward(
// CHECK: sgraph.dropout
// CHECK-LABEL: func.func @eval_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {sgraph.aliases = ["head.weight"], sgraph.init = {dist = "normal", std = 2.000000e-02 : f64}, sgraph.param = "fc.weight"}, %[[X:[^:]*]]: tensor<2x3xf32> {sgraph.input = "x"}, %[[Y:[^:]*]]: tensor<2xi64> {sgraph.input = "y"})
// CHECK-SAME: -> (tensor<f32> {sgraph.name = "loss"}, tensor<f32> {sgraph.name = "accuracy"})
// CHECK-NOT: sgraph.dropout
// CHECK: %[[H:.*]] = sgraph.matmul %[[X]], %[[W]] {transpose_rhs = true}
// CHECK-NOT: sgraph.dropout
// CHECK: sgraph.softmax_cross_entropy %[[H]], %[[Y]]
// CHECK: return
// TWICE: error: @eval_step already exists
// NOFORWARD: error: the module has no @forward function to build @eval_step from
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "sgd", lr = 0.1 : f64}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight", sgraph.aliases = ["head.weight"], sgraph.init = {dist = "normal", std = 0.02 : f64}}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}, %step: tensor<i64> {sgraph.step}) -> (tensor<f32> {sgraph.name = "loss"}, tensor<f32> {sgraph.name = "accuracy"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.dropout %0, %step {rate = 0.25 : f64, seed = 3 : i64} : tensor<2x4xf32>, tensor<i64>
  %2 = sgraph.softmax_cross_entropy %1, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  %3 = sgraph.constant dense<0.5> : tensor<f32>
  return %2, %3 : tensor<f32>, tensor<f32>
}
}

// -----

// Tests that a step something other than dropout reads stays an argument
// (the importer never produces this; the pass must not drop a used value,
// and sinter-verify-training-graph then rejects the step in @eval_step).
// CHECK-LABEL: func.func @eval_step(
// CHECK-SAME: %{{[^:]*}}: tensor<3xf32> {sgraph.param = "w"}, %[[S:[^:]*]]: tensor<i64> {sgraph.step})
// CHECK: sgraph.cast %[[S]]
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "sgd", lr = 0.1 : f64}}} {
func.func @forward(%w: tensor<3xf32> {sgraph.param = "w"}, %step: tensor<i64> {sgraph.step}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.cast %step : tensor<i64> to tensor<f32>
  return %0 : tensor<f32>
}
}
