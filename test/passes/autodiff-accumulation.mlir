// RUN: sinter-opt %s --sinter-autodiff | FileCheck %s
// RUN: sinter-opt %s --sinter-autodiff | FileCheck %s --check-prefix=MICRO

// Tests gradient accumulation (grad_accumulation_steps = 4): @train_step
// takes an accumulator per trained parameter right after the parameters
// (the frozen one has none), ahead of the optimizer state, and a hyper
// argument K (default 4) last (after loss_count: autodiff-loss-count.mlir);
// each gradient the optimizer sees is
// (accumulator + gradient) / K. @accumulate_step takes the parameters and
// the same accumulators in the same places and returns the loss and
// accumulator + gradient under each accumulator's name; nothing is updated.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %{{[^:]*}}: tensor<3xf32> {sgraph.frozen, sgraph.param = "fc.frozen"},
// CHECK-SAME: %[[A:[^:]*]]: tensor<4x3xf32> {sgraph.accumulator = "grad_accum.fc.weight"},
// CHECK-SAME: %{{[^:]*}}: tensor<4x3xf32> {sgraph.opt_state = "optimizer.fc.weight.exp_avg"},
// CHECK-SAME: %[[K:[^:]*]]: tensor<f64> {sgraph.default = 4.000000e+00 : f64, sgraph.hyper = "grad_accumulation_steps"})
// CHECK-NOT: sgraph.name = "grad_accum.
// CHECK: %[[KF:.*]] = sgraph.cast %[[K]] : tensor<f64> to tensor<f32>
// CHECK: %[[SUM:.*]] = sgraph.add %[[A]], %[[G:.*]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[MEAN:.*]] = sgraph.div %[[SUM]], %[[KF]]
// CHECK: sgraph.all_reduce %[[MEAN]]
// MICRO-LABEL: func.func @accumulate_step(
// MICRO-SAME: %{{[^:]*}}: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %{{[^:]*}}: tensor<3xf32> {sgraph.frozen, sgraph.param = "fc.frozen"},
// MICRO-SAME: %[[A:[^:]*]]: tensor<4x3xf32> {sgraph.accumulator = "grad_accum.fc.weight"},
// MICRO-SAME: %{{[^:]*}}: tensor<2x3xf32> {sgraph.input = "x"}, %{{[^:]*}}: tensor<2xi64> {sgraph.input = "y"},
// MICRO-SAME: %{{[^:]*}}: tensor<f64> {sgraph.default = 0.000000e+00 : f64, sgraph.hyper = "loss_count"})
// MICRO-SAME: -> (tensor<f32> {sgraph.name = "loss"}, tensor<4x3xf32> {sgraph.name = "grad_accum.fc.weight"})
// MICRO-NOT: sgraph.adam_update
// MICRO-NOT: sgraph.all_reduce
// MICRO: %[[NEW:.*]] = sgraph.add %[[A]], %{{.*}} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// MICRO: return %{{.*}}, %[[NEW]] : tensor<f32>, tensor<4x3xf32>
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, grad_accumulation_steps = 4 : i64, optimizer = {kind = "adamw", lr = 1.0e-3 : f64, weight_decay = 0.1 : f64}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %f: tensor<3xf32> {sgraph.param = "fc.frozen", sgraph.frozen}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %xf = sgraph.mul %x, %f : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = sgraph.matmul %xf, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.softmax_cross_entropy %0, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}
}
