// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels="matmul-epilogues=scale,bias,relu,gelu_tanh,gelu_aux,dgelu,dgelu_bgrad matmul-library=cuBLASLt" | FileCheck %s
// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels="matmul-epilogues=scale,bias,relu,gelu_tanh matmul-library=cuBLASLt" | FileCheck %s --check-prefix=PLAIN

// Tests cuBLASLt's training forms of the tanh GELU (the CUDA target asks
// for them). Forward: a linear layer's GELU whose input the backward pass
// reads joins the matmul, which writes that input too (GELU_AUX): one
// region, two results. Backward: the gradient's matmul takes gelu_grad at
// that input (DGELU) and the sum of its rows, the layer's bias gradient
// (DGELU_BGRAD), left whole rather than split for threads. Without the
// forms (PLAIN, the CPU's case) the GELU and its gradient stay in
// elementwise kernels.
// CHECK-LABEL: func.func @mlp(
// CHECK: %[[F:.*]]:2 = sgraph.fusion "k0" kind = "matmul"
// CHECK:   sgraph.add {{.*}}matmul epilogue (bias)
// CHECK:   sgraph.gelu {{.*}}"k0: matmul epilogue (activation, its input written too for the backward pass (GELU_AUX)) applied by the matmul library in the same call"
// CHECK: %[[B:.*]]:2 = sgraph.fusion "k1" kind = "matmul"
// CHECK:   sgraph.matmul
// CHECK:   sgraph.gelu_grad {{.*}}"k1: matmul epilogue (gelu's derivative at its input, which the library reads (DGELU)) applied
// CHECK:   sgraph.reduce_sum {{.*}}"k1: matmul epilogue (bias gradient, the sum of its rows (DGELU_BGRAD)) applied
// CHECK-NOT: sgraph.fusion
// CHECK: return
// PLAIN-LABEL: func.func @mlp(
// PLAIN: sgraph.gelu {{.*}}starts a loop kernel
// PLAIN: sgraph.gelu_grad {{.*}}starts a loop kernel
func.func @mlp(%x: tensor<2x4x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>, %g: tensor<2x4x16xf32>) -> (tensor<2x4x32xf32>, tensor<2x4x32xf32>, tensor<32xf32>) {
  %m = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x4x16xf32>, tensor<32x16xf32>) -> tensor<2x4x32xf32>
  %y = sgraph.add %m, %b : (tensor<2x4x32xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  %h = sgraph.gelu %y {approximate = "tanh"} : tensor<2x4x32xf32>
  %dh = sgraph.matmul %g, %w {transpose_rhs = true} : (tensor<2x4x16xf32>, tensor<32x16xf32>) -> tensor<2x4x32xf32>
  %d = sgraph.gelu_grad %dh, %y {approximate = "tanh"} : tensor<2x4x32xf32>
  %db = sgraph.reduce_sum %d axes = [0, 1] : (tensor<2x4x32xf32>) -> tensor<32xf32>
  return %h, %d, %db : tensor<2x4x32xf32>, tensor<2x4x32xf32>, tensor<32xf32>
}

// -----

// Tests where the forms do not fit, each left to elementwise kernels: rows
// of 12 (cuBLASLt's aux matrix wants a multiple of 8), the erf GELU
// (cuBLASLt has none), a batch of products (an rhs per batch: the bias
// gradient sums one matrix), a product read by something else too, and
// under mixed precision (an f32 result of bf16 operands, which the IR
// rounds before the activation).
// CHECK-LABEL: func.func @misfits(
// CHECK-NOT: GELU_AUX
// CHECK-NOT: DGELU
// CHECK: return
func.func @misfits(%x: tensor<4x16xf32>, %w: tensor<12x16xf32>, %b: tensor<12xf32>, %g: tensor<4x16xf32>,
                   %x8: tensor<4x16xf32>, %w8: tensor<8x16xf32>, %g8: tensor<4x16xf32>,
                   %bx: tensor<2x4x16xf32>, %bw: tensor<2x16x8xf32>,
                   %hx: tensor<4x16xbf16>, %hw: tensor<8x16xbf16>)
    -> (tensor<4x12xf32>, tensor<4x12xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %m = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<4x16xf32>, tensor<12x16xf32>) -> tensor<4x12xf32>
  %y = sgraph.add %m, %b : (tensor<4x12xf32>, tensor<12xf32>) -> tensor<4x12xf32>
  %h = sgraph.gelu %y {approximate = "tanh"} : tensor<4x12xf32>
  %dh = sgraph.matmul %g, %w {transpose_rhs = true} : (tensor<4x16xf32>, tensor<12x16xf32>) -> tensor<4x12xf32>
  %d = sgraph.gelu_grad %dh, %y {approximate = "tanh"} : tensor<4x12xf32>
  %e = sgraph.matmul %x8, %w8 {transpose_rhs = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %he = sgraph.gelu %e : tensor<4x8xf32>
  %de0 = sgraph.matmul %g8, %w8 {transpose_rhs = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %de = sgraph.gelu_grad %de0, %e : tensor<4x8xf32>
  %bm = sgraph.matmul %bx, %bw : (tensor<2x4x16xf32>, tensor<2x16x8xf32>) -> tensor<2x4x8xf32>
  %bd = sgraph.gelu_grad %bm, %bm {approximate = "tanh"} : tensor<2x4x8xf32>
  %sm = sgraph.matmul %g8, %w8 {transpose_rhs = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %sd = sgraph.gelu_grad %sm, %e {approximate = "tanh"} : tensor<4x8xf32>
  %s2 = sgraph.mul %sm, %sm : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %hm = sgraph.matmul %hx, %hw {transpose_rhs = true, f32_result = true} : (tensor<4x16xbf16>, tensor<8x16xbf16>) -> tensor<4x8xf32>
  %hg = sgraph.gelu %hm {approximate = "tanh"} : tensor<4x8xf32>
  %hd = sgraph.gelu_grad %e, %hm {approximate = "tanh"} : tensor<4x8xf32>
  %hsum = sgraph.add %hg, %hd : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %h, %d, %he, %de, %bd, %sd, %s2, %hsum : tensor<4x12xf32>, tensor<4x12xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
