// RUN: sinter-opt %s --sinter-mixed-precision=gelu-epilogues=true | FileCheck %s
// RUN: sinter-opt %s --sinter-mixed-precision | FileCheck %s --check-prefix=CPU
// RUN: sinter-opt %s --sinter-mixed-precision=gelu-epilogues=true --sinter-autodiff --canonicalize | FileCheck %s --check-prefix=GRAD
// RUN: sinter-opt %s --sinter-mixed-precision=gelu-epilogues=true --sinter-autodiff --sinter-decompose-ops --canonicalize --cse --sinter-fuse-kernels="matmul-epilogues=scale,bias,relu,gelu_tanh,gelu_aux,dgelu,dgelu_bgrad matmul-library=cuBLASLt" | FileCheck %s --check-prefix=FUSE
// RUN: sinter-opt %s --sinter-mixed-precision=gelu-epilogues=true --sinter-autodiff --sinter-decompose-ops --canonicalize --cse --sinter-fuse-kernels="matmul-epilogues=scale,bias,relu,gelu_tanh matmul-library=cuBLASLt" | FileCheck %s --check-prefix=PLAIN
// RUN: sinter-opt %s --sinter-mixed-precision=gelu-epilogues=true --sinter-autodiff --sinter-decompose-ops --canonicalize --cse --sinter-fuse-kernels="matmul-epilogues=scale,bias,relu,gelu_tanh,gelu_aux,dgelu,dgelu_bgrad matmul-library=cuBLASLt" --sinter-assign-buffers=entry=train_step --sinter-verify-schedule=entry=train_step | FileCheck %s --check-prefix=SCHED

// Tests a linear layer and its tanh GELU under mixed precision where the
// matmul library applies the GELU (gelu-epilogues, the CUDA target): the
// GELU reads the f32 sum, not the sum rounded to bf16, and its result is
// rounded where the next matmul reads it, as cuBLASLt's GELU_AUX_BIAS
// computes under bf16 (docs/Cuda.md, "On an H200").
// CHECK-LABEL: func.func @forward(
// CHECK: %[[P:.*]] = sgraph.matmul %{{.*}}, %{{.*}} {f32_result = true, transpose_rhs = true} : (tensor<2x3xbf16>, tensor<8x3xbf16>) -> tensor<2x8xf32>
// CHECK: %[[Q:.*]] = sgraph.add %[[P]], %{{.*}} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %[[G:.*]] = sgraph.gelu %[[Q]] {approximate = "tanh"} : tensor<2x8xf32>
// CHECK-NEXT: sgraph.cast %[[G]] : tensor<2x8xf32> to tensor<2x8xbf16>
// Without the option (the CPU target) the sum rounds first, as before.
// CPU: %[[Q:.*]] = sgraph.add %{{.*}}, %{{.*}} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CPU-NEXT: %[[Q16:.*]] = sgraph.cast %[[Q]] : tensor<2x8xf32> to tensor<2x8xbf16>
// CPU-NEXT: %[[QW:.*]] = sgraph.cast %[[Q16]] : tensor<2x8xbf16> to tensor<2x8xf32>
// CPU-NEXT: sgraph.gelu %[[QW]] {approximate = "tanh"}

// After autodiff the forward pass also rounds the sum to bf16 (the aux
// matrix); the GELU's derivative is taken there, applied to the f32 sum
// of the product of the gradient coming in (f32_result), and rounded to
// bf16 once. The bias gradient sums the rounded derivative widened; the
// weight gradient's matmul reads the bf16 derivative.
// GRAD-LABEL: func.func @train_step(
// GRAD: %[[Q:.*]] = sgraph.add %{{.*}}, %{{.*}} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GRAD-NEXT: %[[AUX:.*]] = sgraph.cast %[[Q]] : tensor<2x8xf32> to tensor<2x8xbf16>
// GRAD-NEXT: sgraph.gelu %[[Q]] {approximate = "tanh"}
// GRAD: %[[DP:.*]] = sgraph.matmul %{{.*}}, %{{.*}} {f32_result = true} : (tensor<2x5xbf16>, tensor<5x8xbf16>) -> tensor<2x8xf32>
// GRAD: %[[AW:.*]] = sgraph.cast %[[AUX]] : tensor<2x8xbf16> to tensor<2x8xf32>
// GRAD-NEXT: %[[D:.*]] = sgraph.gelu_grad %[[DP]], %[[AW]] {approximate = "tanh"} : tensor<2x8xf32>
// GRAD-NEXT: %[[D16:.*]] = sgraph.cast %[[D]] : tensor<2x8xf32> to tensor<2x8xbf16>
// GRAD-NEXT: %[[DW:.*]] = sgraph.cast %[[D16]] : tensor<2x8xbf16> to tensor<2x8xf32>
// GRAD-NEXT: sgraph.reduce_sum %[[DW]] axes = [0] {keepdims = true}
// GRAD: sgraph.matmul %[[D16]], %{{.*}} {f32_result = true, transpose_lhs = true} : (tensor<2x8xbf16>, tensor<2x3xbf16>) -> tensor<8x3xf32>

// Fusion makes the forward one GELU_AUX_BIAS call (bf16 bias in, bf16 aux
// and out) and the backward one DGELU call (bf16 aux in, bf16 out). No
// DGELU_BGRAD: cuBLASLt would write the bias gradient in bf16, and ours
// stays the f32 sum (docs/MixedPrecision.md).
// FUSE-LABEL: func.func @train_step(
// FUSE: sgraph.fusion "[[K:k[0-9]+]]" kind = "matmul"{{.*}} -> (tensor<2x8xbf16>, tensor<2x8xbf16>)
// FUSE-NEXT: ^bb0(
// FUSE-NEXT: sgraph.matmul {{.*}}"[[K]]: matmul library call (cuBLASLt)"
// FUSE-NEXT: sgraph.cast {{.*}}"[[K]]: matmul epilogue (its bias, read as bf16) applied
// FUSE-NEXT: sgraph.add {{.*}}"[[K]]: matmul epilogue (bias) applied
// FUSE-NEXT: sgraph.cast {{.*}}"[[K]]: matmul epilogue (its sum rounded to bf16, the aux matrix, for the backward pass (GELU_AUX)) applied
// FUSE-NEXT: sgraph.gelu {{.*}}"[[K]]: matmul epilogue (activation, its input written too for the backward pass (GELU_AUX)) applied
// FUSE-NEXT: sgraph.cast {{.*}}"[[K]]: matmul epilogue (rounding to bf16) applied
// FUSE-NEXT: sgraph.yield
// FUSE: sgraph.fusion "[[D:k[0-9]+]]" kind = "matmul"{{.*}} -> tensor<2x8xbf16>
// FUSE-NEXT: ^bb0(
// FUSE-NEXT: sgraph.matmul {{.*}}"[[D]]: matmul library call (cuBLASLt)"
// FUSE-NEXT: sgraph.cast {{.*}}"[[D]]: matmul epilogue (gelu's derivative's aux, read as bf16) applied
// FUSE-NEXT: sgraph.gelu_grad {{.*}}"[[D]]: matmul epilogue (gelu's derivative at its input, which the library reads (DGELU)) applied
// FUSE-NEXT: sgraph.cast {{.*}}"[[D]]: matmul epilogue (rounding to bf16) applied
// FUSE-NEXT: sgraph.yield

// Without the training forms among the epilogues the same IR still
// compiles: the matmul writes its f32 sum, and one kernel adds the bias,
// rounds the aux, applies and rounds the GELU.
// PLAIN-LABEL: func.func @train_step(
// PLAIN: sgraph.matmul {{.*}}"[[K:k[0-9]+]]: matmul library call (cuBLASLt)"{{.*}} -> tensor<2x8xf32>
// PLAIN: sgraph.add {{.*}}"[[L:k[0-9]+]]: starts a loop kernel over 2x8
// PLAIN: sgraph.gelu {{.*}}"[[L]]: fused with its producer

// The calls as the executor makes them.
// SCHED-LABEL: @train_step
// SCHED: sched.matmul %{{.*}}, %{{.*}} -> %{{.*}} bias(%{{.*}} : !sched.buffer<8xbf16>) aux(%[[AUX:.*]] : !sched.buffer<2x8xbf16>) {activation = "gelu_tanh", transpose_rhs} : !sched.buffer<2x3xbf16>, !sched.buffer<8x3xbf16> -> !sched.buffer<2x8xbf16>
// SCHED: sched.matmul %{{.*}}, %{{.*}} -> %{{.*}} aux(%[[AUX]] : !sched.buffer<2x8xbf16>) {activation = "dgelu_tanh"} : !sched.buffer<2x5xbf16>, !sched.buffer<5x8xbf16> -> !sched.buffer<2x8xbf16>
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, precision = "bf16_mixed", optimizer = {kind = "sgd", lr = 1.0e-3 : f64}}} {
func.func @forward(%w1: tensor<8x3xf32> {sgraph.param = "fc.weight"}, %b1: tensor<8xf32> {sgraph.param = "fc.bias"}, %w2: tensor<5x8xf32> {sgraph.param = "proj.weight"}, %b2: tensor<5xf32> {sgraph.param = "proj.bias"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w1 {transpose_rhs = true} : (tensor<2x3xf32>, tensor<8x3xf32>) -> tensor<2x8xf32>
  %1 = sgraph.add %0, %b1 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %2 = sgraph.gelu %1 {approximate = "tanh"} : tensor<2x8xf32>
  %3 = sgraph.matmul %2, %w2 {transpose_rhs = true} : (tensor<2x8xf32>, tensor<5x8xf32>) -> tensor<2x5xf32>
  %4 = sgraph.add %3, %b2 : (tensor<2x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %5 = sgraph.softmax_cross_entropy %4, %y : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<f32>
  return %5 : tensor<f32>
}
}
