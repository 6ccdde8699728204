// RUN: sinterc %s --entry=f --compile-to=lowered | FileCheck %s
// RUN: rm -rf %t && sinterc %s --entry=f --compile-to=lowered --dump-dir=%t -o /dev/null
// RUN: %python %S/Inputs/print_program.py %t | FileCheck %s --check-prefix=PROGRAM

// Tests the kernel of a sum of pads that tile the last axis (the attention
// heads' gradients assembled into the fused QKV gradient): one concat
// kernel that copies each head-layout input into its slice of the rows,
// reading it through a strided transpose and viewing the slice of the
// result split into heads (expand_shape), with no copy kernel for the
// transposes; threads split the leading dimension ([begin, end) on both
// sides of every copy).

// CHECK-LABEL: func.func private @sinter_k{{[0-9]+}}_body(
// CHECK-COUNT-3: memref.expand_shape
// CHECK: memref.transpose %{{.*}} (d0, d1, d2, d3) -> (d0, d2, d1, d3)
// CHECK: memref.subview %{{.*}}[%arg{{[0-9]+}}, 0, 0, 0] [%{{.*}}, 64, 2, 32]
// CHECK: linalg.copy
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @sinter_k{{[0-9]+}}(

// PROGRAM: function f
// PROGRAM-NEXT: kernel k0_transpose_reshape_concat extent 4
// PROGRAM-NEXT: result y tensor

func.func @f(%q: tensor<4x2x64x32xf32> {sgraph.input = "q"},
             %k: tensor<4x2x64x32xf32> {sgraph.input = "k"},
             %v: tensor<4x2x64x32xf32> {sgraph.input = "v"})
    -> (tensor<4x64x192xf32> {sgraph.name = "y"}) {
  %qt = sgraph.transpose %q permutation = [0, 2, 1, 3] : (tensor<4x2x64x32xf32>) -> tensor<4x64x2x32xf32>
  %kt = sgraph.transpose %k permutation = [0, 2, 1, 3] : (tensor<4x2x64x32xf32>) -> tensor<4x64x2x32xf32>
  %vt = sgraph.transpose %v permutation = [0, 2, 1, 3] : (tensor<4x2x64x32xf32>) -> tensor<4x64x2x32xf32>
  %qr = sgraph.reshape %qt : tensor<4x64x2x32xf32> to tensor<4x64x64xf32>
  %kr = sgraph.reshape %kt : tensor<4x64x2x32xf32> to tensor<4x64x64xf32>
  %vr = sgraph.reshape %vt : tensor<4x64x2x32xf32> to tensor<4x64x64xf32>
  %qp = sgraph.pad %qr {low = array<i64: 0, 0, 0>, high = array<i64: 0, 0, 128>} : (tensor<4x64x64xf32>) -> tensor<4x64x192xf32>
  %kp = sgraph.pad %kr {low = array<i64: 0, 0, 64>, high = array<i64: 0, 0, 64>} : (tensor<4x64x64xf32>) -> tensor<4x64x192xf32>
  %vp = sgraph.pad %vr {low = array<i64: 0, 0, 128>, high = array<i64: 0, 0, 0>} : (tensor<4x64x64xf32>) -> tensor<4x64x192xf32>
  %s1 = sgraph.add %qp, %kp : (tensor<4x64x192xf32>, tensor<4x64x192xf32>) -> tensor<4x64x192xf32>
  %s = sgraph.add %s1, %vp : (tensor<4x64x192xf32>, tensor<4x64x192xf32>) -> tensor<4x64x192xf32>
  return %s : tensor<4x64x192xf32>
}
