// RUN: sinter-opt %s --sinter-training-pipeline | FileCheck %s
// RUN: sinter-opt %s --sinter-training-pipeline --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=DUMP
// RUN: sinter-opt %s --sinter-training-pipeline=eval-step=true | FileCheck %s --check-prefix=EVAL

// Tests that the training pipeline builds a verified @train_step and leaves
// no stop_gradient behind, and that MLIR's IR dumps work on it.
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: sgraph.stop_gradient
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: sgraph.stop_gradient
// CHECK: sgraph.adam_update
// With eval-step it also builds @eval_step (after train_step, before
// stop_gradient is erased, so it has none either); without, it does not.
// CHECK-NOT: func.func @eval_step
// EVAL-LABEL: func.func @train_step(
// EVAL-LABEL: func.func @eval_step(
// EVAL-SAME: {sgraph.param = "p"}, %{{[^:]*}}: tensor<3xf32> {sgraph.input = "t"}) -> (tensor<f32> {sgraph.name = "loss"})
// EVAL-NOT: sgraph.stop_gradient
// EVAL: return
// DUMP: IR Dump After AutodiffPass (sinter-autodiff)
// DUMP: IR Dump After EraseStopGradientPass (sinter-erase-stop-gradient)
// DUMP: IR Dump After VerifyTrainingGraphPass (sinter-verify-training-graph)
module attributes {sgraph.training = {optimizer = {kind = "adam", lr = 1.0e-3 : f64}}} {
  func.func @forward(%p: tensor<3xf32> {sgraph.param = "p"}, %t: tensor<3xf32> {sgraph.input = "t"}) -> (tensor<f32> {sgraph.name = "loss"}) {
    %s = sgraph.stop_gradient %t : tensor<3xf32>
    %d = sgraph.sub %p, %s : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %q = sgraph.mul %d, %d : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %l = sgraph.reduce_mean %q axes = [0] : (tensor<3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
