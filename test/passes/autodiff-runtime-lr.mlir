// RUN: sinter-opt %s --sinter-autodiff=runtime-lr=true | FileCheck %s
// RUN: sinter-opt %s --sinter-autodiff | FileCheck %s --check-prefix=DEFAULT
// RUN: sinter-opt %s --sinter-training-pipeline=runtime-lr=true | FileCheck %s --check-prefix=PIPELINE

// Tests that with runtime-lr the training step takes the peak learning
// rate as its last argument, a 0-d f64 tensor of kind hyper named "lr" whose
// default is the model's lr, and that the schedule reads it as peak_lr
// (its attributes unchanged); and that without the option the signature
// and the schedule are as before.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[STEP:[^:]*]]: tensor<i64> {sgraph.step}, %{{[^:]*}}: tensor<f64> {sgraph.default = 0.000000e+00 : f64, sgraph.hyper = "loss_count"}, %[[PEAK:[^:]*]]: tensor<f64> {sgraph.default = 1.000000e-03 : f64, sgraph.hyper = "lr"})
// CHECK-SAME: -> (tensor<f32> {sgraph.name = "loss"}, tensor<f32> {sgraph.name = "lr"}, tensor<f32> {sgraph.name = "grad_norm"},
// CHECK: %[[LR:.*]] = sgraph.lr_schedule %[[STEP]], peak_lr %[[PEAK]] {decay_steps = 100 : i64, lr = 1.000000e-03 : f64, min_lr = 1.000000e-04 : f64, schedule = "warmup_cosine", warmup_steps = 10 : i64} : (tensor<i64>, tensor<f64>) -> tensor<f32>
// CHECK: sgraph.adam_update {{.*}}, %[[LR]], %[[STEP]]
// CHECK: return %{{.*}}, %[[LR]],
// DEFAULT-LABEL: func.func @train_step(
// DEFAULT-SAME: %[[STEP:[^:]*]]: tensor<i64> {sgraph.step}, %{{[^:]*}}: tensor<f64> {sgraph.default = 0.000000e+00 : f64, sgraph.hyper = "loss_count"})
// DEFAULT-NOT: sgraph.hyper
// DEFAULT: sgraph.lr_schedule %[[STEP]] {decay_steps
// PIPELINE-LABEL: func.func @train_step(
// PIPELINE-SAME: tensor<f64> {sgraph.default = 1.000000e-03 : f64, sgraph.hyper = "lr"})
// PIPELINE-NOT: func.func @eval_step
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "adamw", lr = 1.0e-3 : f64, weight_decay = 0.1 : f64}, lr_schedule = {kind = "warmup_cosine", warmup_steps = 10 : i64, decay_steps = 100 : i64, min_lr = 1.0e-4 : f64}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.softmax_cross_entropy %0, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}
}
