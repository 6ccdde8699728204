// RUN: sinter-opt %s --sinter-mixed-precision | FileCheck %s
// RUN: sinter-opt %s --sinter-mixed-precision=precision=fp16_mixed | FileCheck %s --check-prefix=F16
// RUN: sinter-opt %s --sinter-mixed-precision --sinter-autodiff --canonicalize | FileCheck %s --check-prefix=GRAD
// RUN: sinter-opt %s --sinter-mixed-precision --sinter-autodiff --sinter-decompose-ops --canonicalize --cse --sinter-fuse-kernels | FileCheck %s --check-prefix=FUSE
// RUN: sinter-opt %s --sinter-mixed-precision --sinter-autodiff --sinter-decompose-ops --canonicalize --cse --sinter-fuse-kernels --sinter-assign-buffers=entry=train_step --sinter-verify-schedule=entry=train_step | FileCheck %s --check-prefix=SCHED

// Tests a linear layer under mixed precision: the matmul whose only reader
// adds a bias gives its f32 sum (f32_result), the bias is rounded to bf16
// and widened (as autocast's `linear` casts it), and the sum rounds to
// bf16 once, after the bias. The matmul without a bias (the LM head here)
// rounds its own result as before.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %[[B:[^:]*]]: tensor<4xf32> {sgraph.param = "fc.bias"}
// CHECK: %[[P:.*]] = sgraph.matmul %{{.*}}, %{{.*}} {f32_result = true, transpose_rhs = true} : (tensor<2x3xbf16>, tensor<4x3xbf16>) -> tensor<2x4xf32>
// CHECK: %[[B16:.*]] = sgraph.cast %[[B]] : tensor<4xf32> to tensor<4xbf16>
// CHECK: %[[BW:.*]] = sgraph.cast %[[B16]] : tensor<4xbf16> to tensor<4xf32>
// CHECK: %[[Q:.*]] = sgraph.add %[[P]], %[[BW]] : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK: %[[Q16:.*]] = sgraph.cast %[[Q]] : tensor<2x4xf32> to tensor<2x4xbf16>
// CHECK: %[[Y:.*]] = sgraph.cast %[[Q16]] : tensor<2x4xbf16> to tensor<2x4xf32>
// CHECK: sgraph.relu %[[Y]]
// CHECK: sgraph.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<2x4xbf16>, tensor<5x4xbf16>) -> tensor<2x5xbf16>
// F16: sgraph.matmul %{{.*}}, %{{.*}} {f32_result = true, transpose_rhs = true} : (tensor<2x3xf16>, tensor<4x3xf16>) -> tensor<2x4xf32>
// F16: sgraph.cast %{{.*}} : tensor<4xf32> to tensor<4xf16>
// F16: sgraph.cast %{{.*}} : tensor<2x4xf32> to tensor<2x4xf16>

// After autodiff the bias's gradient is the f32 sum over the rows of the
// widened bf16 gradient, handed on as it is (never rounded to bf16, as a
// weight's), and the f32-result matmul's input gradient reads the bf16
// gradient directly (the widen-and-narrow pair canonicalizes away).
// GRAD-LABEL: func.func @train_step(
// GRAD: sgraph.select {{.*}} : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
// GRAD-NEXT: %[[G16:.*]] = sgraph.cast %{{.*}} : tensor<2x4xf32> to tensor<2x4xbf16>
// GRAD-NEXT: %[[GW:.*]] = sgraph.cast %[[G16]] : tensor<2x4xbf16> to tensor<2x4xf32>
// GRAD: %[[DB:.*]] = sgraph.reduce_sum %[[GW]] axes = [0] {keepdims = true} : (tensor<2x4xf32>) -> tensor<1x4xf32>
// GRAD: %[[DB1:.*]] = sgraph.reshape %[[DB]] : tensor<1x4xf32> to tensor<4xf32>
// GRAD: sgraph.matmul %[[G16]], %{{.*}} {f32_result = true, transpose_lhs = true} : (tensor<2x4xbf16>, tensor<2x3xbf16>) -> tensor<4x3xf32>
// GRAD-NOT: sgraph.cast %[[DB1]]
// GRAD: sgraph.all_reduce %[[DB1]]

// Fusion makes the matmul, the bias's widening, the add and the rounding
// one library call, and the ReLU after it too: it commutes with the
// rounding, and its backward mask reads its (rounded) result, which the
// next matmul reads anyway, so the rounded sum before it is no value of
// its own.
// FUSE-LABEL: func.func @train_step(
// FUSE: sgraph.fusion "[[K:k[0-9]+]]" kind = "matmul"
// FUSE-NEXT: ^bb0(
// FUSE-NEXT: sgraph.matmul {{.*}}"[[K]]: matmul library call (oneDNN)"
// FUSE-NEXT: sgraph.cast {{.*}}"[[K]]: matmul epilogue (its bias, read as bf16) applied by the matmul library in the same call"
// FUSE-NEXT: sgraph.add {{.*}}"[[K]]: matmul epilogue (bias) applied by the matmul library in the same call"
// FUSE-NEXT: sgraph.cast {{.*}}"[[K]]: matmul epilogue (rounding to bf16) applied by the matmul library in the same call"
// FUSE-NEXT: sgraph.cast {{.*}}"[[K]]: matmul epilogue (its result widened for a ReLU, which commutes with the rounding) applied
// FUSE-NEXT: sgraph.relu {{.*}}"[[K]]: matmul epilogue (activation, before the rounding) applied
// FUSE-NEXT: sgraph.cast {{.*}}"[[K]]: matmul epilogue (rounding to bf16) applied
// FUSE-NEXT: sgraph.yield

// The call reads the bf16 bias and writes the bf16 out, the ReLU applied.
// SCHED-LABEL: @train_step
// SCHED: sched.matmul %{{.*}}, %{{.*}} -> %{{.*}} bias(%{{.*}} : !sched.buffer<4xbf16>) {activation = "relu", transpose_rhs} : !sched.buffer<2x3xbf16>, !sched.buffer<4x3xbf16> -> !sched.buffer<2x4xbf16>
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, precision = "bf16_mixed", optimizer = {kind = "sgd", lr = 1.0e-3 : f64}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %b: tensor<4xf32> {sgraph.param = "fc.bias"}, %head: tensor<5x4xf32> {sgraph.param = "head.weight"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = sgraph.relu %1 : tensor<2x4xf32>
  %3 = sgraph.matmul %2, %head {transpose_rhs = true} : (tensor<2x4xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
  %4 = sgraph.softmax_cross_entropy %3, %y : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<f32>
  return %4 : tensor<f32>
}
}
