// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels="matmul-epilogues=scale,bias,relu,gelu_tanh matmul-library=cuBLASLt" | FileCheck %s
// RUN: not sinter-opt %s --sinter-fuse-kernels="matmul-epilogues=bias,swish" 2>&1 | FileCheck %s --check-prefix=BAD

// Tests the CUDA target's epilogues (cuBLASLt: ReLU and the tanh GELU, no
// erf GELU): a tanh GELU and a ReLU join their matmul, an erf GELU stays in
// an elementwise kernel after it, which computes it exactly; the report
// names the target's library.
// CHECK-LABEL: func.func @cublaslt(
// CHECK: sgraph.fusion "k0" kind = "matmul"
// CHECK:   sgraph.matmul {{.*}}sinter.fusion = "k0: matmul library call (cuBLASLt)"
// CHECK:   sgraph.gelu {{.*}}sinter.fusion = "k0: matmul epilogue (activation) applied by the matmul library in the same call"
// CHECK: sgraph.fusion "k1" kind = "matmul"
// CHECK:   sgraph.relu {{.*}}sinter.fusion = "k1: matmul epilogue (activation) applied by the matmul library in the same call"
// CHECK: %[[E:.*]] = sgraph.fusion "k2" kind = "matmul"
// CHECK:   sgraph.add {{.*}}matmul epilogue (bias)
// CHECK-NOT: sgraph.gelu
// CHECK: sgraph.fusion "k3" kind = "loop"(%[[E]])
// CHECK:   sgraph.gelu {{.*}}"k3: starts a loop kernel
func.func @cublaslt(%x: tensor<4x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %m = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %a = sgraph.add %m, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %g = sgraph.gelu %a {approximate = "tanh"} : tensor<4x8xf32>
  %m2 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r = sgraph.relu %m2 : tensor<4x8xf32>
  %m3 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %a3 = sgraph.add %m3, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %e = sgraph.gelu %a3 : tensor<4x8xf32>
  return %g, %r, %e : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// BAD: matmul-epilogues: 'swish' is not none, scale, bias, activation, relu, gelu_tanh, gelu_erf, gelu_aux, dgelu or dgelu_bgrad
