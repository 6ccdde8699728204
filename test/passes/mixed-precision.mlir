// RUN: sinter-opt %s --sinter-mixed-precision | FileCheck %s
// RUN: sinter-opt %s --sinter-mixed-precision=precision=fp16_mixed | FileCheck %s --check-prefix=F16
// RUN: sinter-opt %s --sinter-mixed-precision=precision=fp32 | FileCheck %s --check-prefix=F32
// RUN: sinter-opt %s --sinter-mixed-precision --sinter-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: not sinter-opt %s --sinter-mixed-precision=precision=int8 2>&1 | FileCheck %s --check-prefix=BAD

// Tests the mixed-precision pass (training.precision = bf16_mixed here):
// each f32 matmul of @forward reads its operands cast to bf16 and its bf16
// result is cast back to f32; the integer matmul and every other op are
// left alone. After autodiff the backward matmuls read bf16 operands too
// (the incoming f32 gradient cast down, the forward's casts reused); a
// parameter's gradient is its matmul's f32 sum (f32_result, no bf16
// rounding and no widening cast), while the hidden activation's gradient
// stays a bf16 product widened where the kernels read it.
// CHECK-LABEL: func.func @forward(
// CHECK: sgraph.mul
// CHECK: sgraph.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<2x3xbf16>, tensor<3x3xbf16>) -> tensor<2x3xbf16>
// CHECK: %[[XF:.*]] = sgraph.cast %{{.*}} : tensor<2x3xbf16> to tensor<2x3xf32>
// CHECK: %[[X16:.*]] = sgraph.cast %[[XF]] : tensor<2x3xf32> to tensor<2x3xbf16>
// CHECK: %[[W16:.*]] = sgraph.cast %{{.*}} : tensor<4x3xf32> to tensor<4x3xbf16>
// CHECK: %[[Y16:.*]] = sgraph.matmul %[[X16]], %[[W16]] {transpose_rhs = true} : (tensor<2x3xbf16>, tensor<4x3xbf16>) -> tensor<2x4xbf16>
// CHECK: %[[Y:.*]] = sgraph.cast %[[Y16]] : tensor<2x4xbf16> to tensor<2x4xf32>
// CHECK: sgraph.softmax_cross_entropy %[[Y]]
// CHECK: sgraph.matmul %{{.*}}, %{{.*}} : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi64>
// F16: sgraph.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<2x3xf16>, tensor<4x3xf16>) -> tensor<2x4xf16>
// F32-NOT: sgraph.cast
// F32: sgraph.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
// GRAD-LABEL: func.func @train_step(
// GRAD: %[[W16:.*]] = sgraph.cast %{{.*}} : tensor<4x3xf32> to tensor<4x3xbf16>
// GRAD: %[[G16:.*]] = sgraph.cast %{{.*}} : tensor<2x4xf32> to tensor<2x4xbf16>
// GRAD: %[[DH16:.*]] = sgraph.matmul %[[G16]], %[[W16]] : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xbf16>
// GRAD: %[[DW:.*]] = sgraph.matmul %[[G16]], %[[H16:.*]] {f32_result = true, transpose_lhs = true} : (tensor<2x4xbf16>, tensor<2x3xbf16>) -> tensor<4x3xf32>
// GRAD-NOT: sgraph.cast %[[DW]]
// GRAD: %[[DH:.*]] = sgraph.cast %[[DH16]] : tensor<2x3xbf16> to tensor<2x3xf32>
// GRAD: %[[DH2:.*]] = sgraph.cast %[[DH]] : tensor<2x3xf32> to tensor<2x3xbf16>
// GRAD: %[[DW1:.*]] = sgraph.matmul %[[DH2]], %{{.*}} {f32_result = true, transpose_lhs = true} : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<3x3xf32>
// GRAD: %[[AR1:.*]] = sgraph.all_reduce %[[DW1]]
// GRAD: %[[AR:.*]] = sgraph.all_reduce %[[DW]]
// GRAD: sgraph.adam_update %{{.*}}, %[[AR1]]
// GRAD: sgraph.adam_update %{{.*}}, %[[AR]]
// BAD: error: precision 'int8' is not one of fp32, bf16_mixed, fp16_mixed
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, precision = "bf16_mixed", optimizer = {kind = "adamw", lr = 1.0e-3 : f64, weight_decay = 0.1 : f64}}} {
func.func @forward(%w1: tensor<3x3xf32> {sgraph.param = "hidden.weight"}, %w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}, %n: tensor<2x2xi64> {sgraph.input = "n"}) -> (tensor<f32> {sgraph.name = "loss"}, tensor<2x2xi64> {sgraph.name = "nn"}) {
  %x2 = sgraph.mul %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %xf = sgraph.matmul %x2, %w1 {transpose_rhs = true} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  %0 = sgraph.matmul %xf, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.softmax_cross_entropy %0, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  %2 = sgraph.matmul %n, %n : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi64>
  return %1, %2 : tensor<f32>, tensor<2x2xi64>
}
}
