// RUN: sinterc %s --entry=gelu_and_grad --compile-to=lowered | FileCheck %s
// Tests GELU's kernels on the CPU (ScalarOps.cpp, normalCdf): in the
// gradient the normal CDF comes from an approximation of erfc that shares
// its exp(-x^2/2) with the density, so the kernel computes one exp and no
// erf (which the polynomial approximations would expand to a
// three-interval rational function next to a second exp); GELU itself
// keeps 0.5 x (1 + erf(x / sqrt 2)), with erf one rational function over a
// clamp (rationalErf: a copysign, one division, no math.erf). The numbers
// are checked against the exact functions by test/e2e/gelu-accuracy.test
// (it fails with erf's second numerator coefficient scaled by 1.001) and
// against the interpreter by the GPT tests (compiled-step.test fails with
// the erfc tail scaled by 1.0001).

// CHECK-LABEL: func.func private @sinter_k0_body(
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK: math.copysign
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK: arith.divf
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK: return
// CHECK-LABEL: func.func private @sinter_k1_body(
// CHECK-NOT: math.erf
// CHECK: math.exp
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK: return
func.func @gelu_and_grad(%x: tensor<64x512xf32> {sgraph.input = "x"},
                         %g: tensor<64x512xf32> {sgraph.input = "g"})
    -> (tensor<64x512xf32> {sgraph.name = "y"},
        tensor<64x512xf32> {sgraph.name = "dx"}) {
  %y = sgraph.gelu %x : tensor<64x512xf32>
  %dx = sgraph.gelu_grad %g, %x : tensor<64x512xf32>
  return %y, %dx : tensor<64x512xf32>, tensor<64x512xf32>
}
