// RUN: sinter-opt %s --sinter-autodiff | FileCheck %s
// RUN: sinter-opt %s --sinter-autodiff --sinter-verify-training-graph

// Tests loss scaling (training.loss_scale, docs/MixedPrecision.md): the
// backward pass starts from the loss_scale hyper argument (f64, default the
// initial scale), each gradient is divided by it before the all-reduce,
// and a step whose global norm is not finite (`< inf` fails for inf and
// NaN) returns the parameter, its Adam state and the optimizer's own step
// count as they came; Adam's bias correction counts optimizer.step, not the
// global step (which still drives the schedule).
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %[[N:[^:]*]]: tensor<f32> {sgraph.opt_state = "optimizer.step"},
// CHECK-SAME: %[[M:[^:]*]]: tensor<4x3xf32> {sgraph.opt_state = "optimizer.fc.weight.exp_avg"}, %[[V:[^:]*]]: tensor<4x3xf32> {sgraph.opt_state = "optimizer.fc.weight.exp_avg_sq"},
// CHECK-SAME: %[[STEP:[^:]*]]: tensor<i64> {sgraph.step}, %[[S:[^:]*]]: tensor<f64> {sgraph.default = 6.553600e+04 : f64, sgraph.hyper = "loss_scale"}, %{{[^:]*}}: tensor<f64> {sgraph.default = 0.000000e+00 : f64, sgraph.hyper = "loss_count"})
// CHECK: %[[SEED:.*]] = sgraph.cast %[[S]] : tensor<f64> to tensor<f32>
// CHECK: sgraph.mul %{{.*}}, %[[SEED]]
// CHECK: %[[DW:.*]] = sgraph.matmul
// CHECK: %[[S32:.*]] = sgraph.cast %[[S]] : tensor<f64> to tensor<f32>
// CHECK: %[[UNSCALED:.*]] = sgraph.div %[[DW]], %[[S32]]
// CHECK: %[[G:.*]] = sgraph.all_reduce %[[UNSCALED]]
// CHECK: %[[NORM:.*]] = sgraph.global_norm %[[G]]
// CHECK: %[[LR:.*]] = sgraph.lr_schedule %[[STEP]]
// CHECK: %[[INF:.*]] = sgraph.constant dense<0x7F800000> : tensor<f32>
// CHECK: %[[OK:.*]] = sgraph.compare %[[NORM]], %[[INF]] {direction = "lt"}
// CHECK: %[[NEXT:.*]] = sgraph.add %[[N]]
// CHECK: %[[COUNT:.*]] = sgraph.select %[[OK]], %[[NEXT]], %[[N]]
// CHECK: %[[T:.*]] = sgraph.cast %[[N]] : tensor<f32> to tensor<i64>
// CHECK: %[[P1:.*]], %[[M1:.*]], %[[V1:.*]] = sgraph.adam_update %[[W]], %[[G]], %[[M]], %[[V]], %[[LR]], %[[T]]
// CHECK: %[[P:.*]] = sgraph.select %[[OK]], %[[P1]], %[[W]]
// CHECK: %[[MM:.*]] = sgraph.select %[[OK]], %[[M1]], %[[M]]
// CHECK: %[[VV:.*]] = sgraph.select %[[OK]], %[[V1]], %[[V]]
// CHECK: return %{{.*}}, %[[LR]], %[[NORM]], %[[P]], %[[COUNT]], %[[MM]], %[[VV]]
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, loss_scale = {kind = "dynamic", init_scale = 65536.0 : f64}, optimizer = {kind = "adamw", lr = 1.0e-3 : f64, weight_decay = 0.1 : f64}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.softmax_cross_entropy %0, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}
}
