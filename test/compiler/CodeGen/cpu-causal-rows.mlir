// RUN: sinterc %s --entry=causal_softmax --compile-to=lowered | FileCheck %s
// RUN: sinterc %s --entry=attention_grad --compile-to=optimized | FileCheck %s --check-prefix=MARKED
// RUN: sinterc %s --entry=attention_grad --compile-to=lowered | FileCheck %s --check-prefix=GRAD
// RUN: sinterc %s --entry=zero_masked --compile-to=lowered | FileCheck %s --check-prefix=UNKNOWN
// Tests a CPU row kernel under a causal mask (KernelBuilder::causalRows,
// docs/CodeGen.md "Causal rows"): where every value past a row's diagonal
// is known, a chunk is one row, each phase runs over the row's columns up
// to the diagonal rounded up to a multiple of 64 (the mask, still computed,
// covers the rest of that block), and the outputs are filled past it.

// 2x4 planes of 128 rows, split over the planes. Rows 0..63 compute 64
// columns, rows 64..127 all 128: the bytes count 3/4 of x read (8 x 12288
// x 4 = 393216), the probabilities written whole (524288) and the per-row
// max and sum (8192).
// CHECK: sched.launch @sinter_k0(%x : !sched.buffer<2x4x128x128xf32>) {{.*}}bytes = 925696 : i64
// CHECK-LABEL: func.func private @sinter_k0_body(
// CHECK: memref.alloca() {{.*}} : memref<1x1x1x128xf32>
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %c128 step
// CHECK:   %[[NEXT:.*]] = arith.addi %[[ROW]], %c64 : index
// CHECK:   %[[ROUND:.*]] = arith.andi %[[NEXT]], %c-64 : index
// CHECK:   %[[LIMIT:.*]] = arith.minui %[[ROUND]], %c128{{.*}} : index
// CHECK:   memref.subview %{{.*}}[%{{.*}}, %{{.*}}, %[[ROW]], %{{.*}}] [%{{.*}}, 1, 1, %[[LIMIT]]]
// CHECK:   linalg.generic
// CHECK:     arith.cmpi ule
// CHECK:     arith.maximumf
// CHECK:   memref.subview %alloca[0, 0, 0, 0] [1, 1, 1, %[[LIMIT]]]
// CHECK:   linalg.generic
// CHECK:     math.exp
// CHECK:   linalg.generic
// CHECK:     arith.divf
// CHECK:   %[[REST:.*]] = arith.subi %c128{{.*}}, %[[LIMIT]] : index
// CHECK:   %[[TAIL:.*]] = memref.subview %{{.*}}[%{{.*}}, %{{.*}}, %[[ROW]], %[[LIMIT]]] [%{{.*}}, 1, 1, %[[REST]]]
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%[[TAIL]]
func.func @causal_softmax(%x: tensor<2x4x128x128xf32> {sgraph.input = "x"})
    -> (tensor<2x4x128x128xf32> {sgraph.name = "y"}) {
  %mask = sgraph.causal_mask : tensor<128x128xi1>
  %ninf = sgraph.constant dense<0xFF800000> : tensor<f32>
  %z = sgraph.select %mask, %x, %ninf : (tensor<128x128xi1>, tensor<2x4x128x128xf32>, tensor<f32>) -> tensor<2x4x128x128xf32>
  %m = sgraph.reduce_max %z axes = [3] {keepdims = true} : (tensor<2x4x128x128xf32>) -> tensor<2x4x128x1xf32>
  %d = sgraph.sub %z, %m : (tensor<2x4x128x128xf32>, tensor<2x4x128x1xf32>) -> tensor<2x4x128x128xf32>
  %e = sgraph.exp %d : tensor<2x4x128x128xf32>
  %s = sgraph.reduce_sum %e axes = [3] {keepdims = true} : (tensor<2x4x128x128xf32>) -> tensor<2x4x128x1xf32>
  %y = sgraph.div %e, %s : (tensor<2x4x128x128xf32>, tensor<2x4x128x1xf32>) -> tensor<2x4x128x128xf32>
  return %y : tensor<2x4x128x128xf32>
}

// The softmax's gradient in a kernel of its own, reading the saved
// probabilities (as attention's backward pass does: P @ V and the
// probabilities' gradient come between). sinter-causal-kernel-inputs
// proves them 0 above the diagonal across the kernels (operand 0), so the
// gradient's sum(p * dp) adds nothing past it and its rows stop there too.
// MARKED: sgraph.fusion "k3" kind = "reduction"(%0#2, %2) {sinter.causal_zeros = array<i64: 0>}
// GRAD: sched.launch @sinter_k3({{.*}}bytes = 1314816 : i64
// GRAD-LABEL: func.func private @sinter_k3_body(
// GRAD: scf.for %[[ROW:.*]] = %{{.*}} to %c128 step
// GRAD:   %[[LIMIT:.*]] = arith.minui
// GRAD:   linalg.generic
// GRAD:     arith.addf {{.*}} fastmath<reassoc,contract>
// GRAD:   linalg.generic
// GRAD:     arith.select
// GRAD:   linalg.fill
func.func @attention_grad(%x: tensor<2x4x128x128xf32> {sgraph.input = "x"},
                          %v: tensor<2x4x128x16xf32> {sgraph.input = "v"})
    -> (tensor<2x4x128x128xf32> {sgraph.name = "dx"}) {
  %mask = sgraph.causal_mask : tensor<128x128xi1>
  %ninf = sgraph.constant dense<0xFF800000> : tensor<f32>
  %zero = sgraph.constant dense<0.0> : tensor<f32>
  %z = sgraph.select %mask, %x, %ninf : (tensor<128x128xi1>, tensor<2x4x128x128xf32>, tensor<f32>) -> tensor<2x4x128x128xf32>
  %m = sgraph.reduce_max %z axes = [3] {keepdims = true} : (tensor<2x4x128x128xf32>) -> tensor<2x4x128x1xf32>
  %d = sgraph.sub %z, %m : (tensor<2x4x128x128xf32>, tensor<2x4x128x1xf32>) -> tensor<2x4x128x128xf32>
  %e = sgraph.exp %d : tensor<2x4x128x128xf32>
  %s = sgraph.reduce_sum %e axes = [3] {keepdims = true} : (tensor<2x4x128x128xf32>) -> tensor<2x4x128x1xf32>
  %y = sgraph.div %e, %s : (tensor<2x4x128x128xf32>, tensor<2x4x128x1xf32>) -> tensor<2x4x128x128xf32>
  %o = sgraph.matmul %y, %v : (tensor<2x4x128x128xf32>, tensor<2x4x128x16xf32>) -> tensor<2x4x128x16xf32>
  %dp = sgraph.matmul %o, %v {transpose_rhs = true} : (tensor<2x4x128x16xf32>, tensor<2x4x128x16xf32>) -> tensor<2x4x128x128xf32>
  %pd = sgraph.mul %y, %dp : (tensor<2x4x128x128xf32>, tensor<2x4x128x128xf32>) -> tensor<2x4x128x128xf32>
  %s2 = sgraph.reduce_sum %pd axes = [3] {keepdims = true} : (tensor<2x4x128x128xf32>) -> tensor<2x4x128x1xf32>
  %c = sgraph.sub %dp, %s2 : (tensor<2x4x128x128xf32>, tensor<2x4x128x1xf32>) -> tensor<2x4x128x128xf32>
  %g = sgraph.mul %y, %c : (tensor<2x4x128x128xf32>, tensor<2x4x128x128xf32>) -> tensor<2x4x128x128xf32>
  %dx = sgraph.select %mask, %g, %zero : (tensor<128x128xi1>, tensor<2x4x128x128xf32>, tensor<f32>) -> tensor<2x4x128x128xf32>
  return %dx : tensor<2x4x128x128xf32>
}

// Scores masked with 0 instead of -inf: past the diagonal exp(0 - max)
// is not known, so a chunk is the rows of whole planes (here all 4 of a
// batch), every element computed.
// UNKNOWN-LABEL: func.func private @sinter_k0_body(
// UNKNOWN: memref.alloca() {{.*}} : memref<1x4x128x128xf32>
// UNKNOWN-NOT: arith.minui
// UNKNOWN-NOT: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<?x1x1x?xf32
// UNKNOWN: return
func.func @zero_masked(%x: tensor<2x4x128x128xf32> {sgraph.input = "x"})
    -> (tensor<2x4x128x128xf32> {sgraph.name = "y"}) {
  %mask = sgraph.causal_mask : tensor<128x128xi1>
  %zero = sgraph.constant dense<0.0> : tensor<f32>
  %z = sgraph.select %mask, %x, %zero : (tensor<128x128xi1>, tensor<2x4x128x128xf32>, tensor<f32>) -> tensor<2x4x128x128xf32>
  %m = sgraph.reduce_max %z axes = [3] {keepdims = true} : (tensor<2x4x128x128xf32>) -> tensor<2x4x128x1xf32>
  %d = sgraph.sub %z, %m : (tensor<2x4x128x128xf32>, tensor<2x4x128x1xf32>) -> tensor<2x4x128x128xf32>
  %e = sgraph.exp %d : tensor<2x4x128x128xf32>
  %s = sgraph.reduce_sum %e axes = [3] {keepdims = true} : (tensor<2x4x128x128xf32>) -> tensor<2x4x128x1xf32>
  %y = sgraph.div %e, %s : (tensor<2x4x128x128xf32>, tensor<2x4x128x1xf32>) -> tensor<2x4x128x128xf32>
  return %y : tensor<2x4x128x128xf32>
}
