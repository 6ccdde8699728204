// RUN: sinterc %s --entry=causal_softmax --target=cuda --compile-to=scheduled | FileCheck %s --check-prefix=FUSED
// RUN: sinterc %s --entry=causal_softmax --target=cuda --compile-to=lowered | FileCheck %s
// RUN: sinterc %s --entry=causal_softmax_grad --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=GRAD
// RUN: sinterc %s --entry=zero_masked --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=UNKNOWN
// RUN: sinterc %s --entry=unmasked_output --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=UNKNOWN
// RUN: sinterc %s --entry=causal_softmax --target=cuda-host --compile-to=lowered | FileCheck %s --check-prefix=HOST
// Tests a CUDA row kernel under a causal mask (KernelBuilder::causalRows):
// the mask is computed in the kernel from its indices (no buffer), and
// where every value past a row's diagonal is known (a softmax of scores
// masked with -inf: exp(-inf - max) = 0, and its gradient) the row is read
// and computed up to the diagonal only, its outputs past it filled.

// FUSED: sched.kernel @k0(%{{.*}}: tensor<2x4x128x128xf32>) ->
// FUSED-NEXT: sgraph.causal_mask {sinter.fusion = "causal mask: computed from the indices in every kernel that reads it"} : tensor<128x128xi1>
// FUSED-NOT: sched.kernel
// FUSED: sched.program

// One block per row of 128 (2x4x128 rows). Each phase's loop over the row
// ends at the row's query index + 1, and a last loop writes 0 past it; the
// bytes count the triangle read (8 planes x 128 x 129 / 2 x 4 bytes =
// 264192), the probabilities written whole (524288) and the per-row max
// and sum (8192).
// CHECK: sched.launch @sinter_k0(%x : !sched.buffer<2x4x128x128xf32>) {{.*}}bytes = 796672 : i64
// CHECK-LABEL: func.func @sinter_k0(
// CHECK-SAME: sched.causal_rows
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %c1024
// CHECK:   %[[LIMIT:.*]] = arith.addi %[[QUERY:.*]], %c1 : index
// CHECK:   arith.cmpi ult, %{{.*}}, %[[LIMIT]]
// CHECK:   scf.for %{{.*}} = %{{.*}} to %[[LIMIT]] step
// CHECK:     arith.maximumf
// CHECK:   gpu.all_reduce maximumf
// CHECK:   scf.for %{{.*}} = %{{.*}} to %[[LIMIT]] step
// CHECK:   gpu.all_reduce add
// CHECK:   scf.for %{{.*}} = %{{.*}} to %[[LIMIT]] step
// CHECK:     memref.store
// CHECK:   %[[FROM:.*]] = arith.addi %[[LIMIT]], %{{.*}} : index
// CHECK:   scf.for %[[COL:.*]] = %[[FROM]] to %c128 step
// CHECK-NEXT: memref.view
// CHECK-NEXT: memref.store %[[ZERO:.*]], %{{.*}}[%{{.*}}, %{{.*}}, %[[QUERY]], %[[COL]]] : memref<2x4x128x128xf32>
// CHECK-NEXT: }
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

// The gradient's kernel: p * (dp - sum(p * dp)), masked with 0. The
// probabilities p are 0 past the diagonal, so the sum adds nothing there
// (dp taken as finite) and the masked gradient is 0 whatever dp is.
// GRAD-LABEL: func.func @sinter_k0(
// GRAD-SAME: sched.causal_rows
// GRAD: arith.addi %{{.*}}, %c1 : index
// GRAD: gpu.all_reduce add
func.func @causal_softmax_grad(%p: tensor<2x4x128x128xf32> {sgraph.input = "p"},
                               %dp: tensor<2x4x128x128xf32> {sgraph.input = "dp"})
    -> (tensor<2x4x128x128xf32> {sgraph.name = "dx"}) {
  %mask = sgraph.causal_mask : tensor<128x128xi1>
  %zero = sgraph.constant dense<0.0> : tensor<f32>
  %ninf = sgraph.constant dense<0xFF800000> : tensor<f32>
  %z = sgraph.select %mask, %p, %ninf : (tensor<128x128xi1>, tensor<2x4x128x128xf32>, tensor<f32>) -> tensor<2x4x128x128xf32>
  %e = sgraph.exp %z : tensor<2x4x128x128xf32>
  %pd = sgraph.mul %e, %dp : (tensor<2x4x128x128xf32>, tensor<2x4x128x128xf32>) -> tensor<2x4x128x128xf32>
  %s = sgraph.reduce_sum %pd axes = [3] {keepdims = true} : (tensor<2x4x128x128xf32>) -> tensor<2x4x128x1xf32>
  %c = sgraph.sub %dp, %s : (tensor<2x4x128x128xf32>, tensor<2x4x128x1xf32>) -> tensor<2x4x128x128xf32>
  %g = sgraph.mul %e, %c : (tensor<2x4x128x128xf32>, tensor<2x4x128x128xf32>) -> tensor<2x4x128x128xf32>
  %dx = sgraph.select %mask, %g, %zero : (tensor<128x128xi1>, tensor<2x4x128x128xf32>, tensor<f32>) -> tensor<2x4x128x128xf32>
  return %dx : tensor<2x4x128x128xf32>
}

// Scores masked with 0 instead of -inf: past the diagonal exp(0 - max)
// is not known, so every element is read and computed.
// UNKNOWN-LABEL: func.func @sinter_k0(
// UNKNOWN-NOT: sched.causal_rows
// UNKNOWN: scf.for %{{.*}} = %{{.*}} to %c128 step
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

// The same softmax, its kernel also writing x / sum (a later phase of the
// same kernel) unmasked: that output is not known past the diagonal, so
// the whole row is computed.
func.func @unmasked_output(%x: tensor<2x4x128x128xf32> {sgraph.input = "x"})
    -> (tensor<2x4x128x128xf32> {sgraph.name = "y"}, tensor<2x4x128x128xf32> {sgraph.name = "ex"}) {
  %mask = sgraph.causal_mask : tensor<128x128xi1>
  %ninf = sgraph.constant dense<0xFF800000> : tensor<f32>
  %z = sgraph.select %mask, %x, %ninf : (tensor<128x128xi1>, tensor<2x4x128x128xf32>, tensor<f32>) -> tensor<2x4x128x128xf32>
  %m = sgraph.reduce_max %z axes = [3] {keepdims = true} : (tensor<2x4x128x128xf32>) -> tensor<2x4x128x1xf32>
  %d = sgraph.sub %z, %m : (tensor<2x4x128x128xf32>, tensor<2x4x128x1xf32>) -> tensor<2x4x128x128xf32>
  %e = sgraph.exp %d : tensor<2x4x128x128xf32>
  %s = sgraph.reduce_sum %e axes = [3] {keepdims = true} : (tensor<2x4x128x128xf32>) -> tensor<2x4x128x1xf32>
  %y = sgraph.div %e, %s : (tensor<2x4x128x128xf32>, tensor<2x4x128x1xf32>) -> tensor<2x4x128x128xf32>
  %ex = sgraph.div %x, %s : (tensor<2x4x128x128xf32>, tensor<2x4x128x1xf32>) -> tensor<2x4x128x128xf32>
  return %y, %ex : tensor<2x4x128x128xf32>, tensor<2x4x128x128xf32>
}

// cuda-host runs the same kernels (one thread a block), so the numbers
// tests (cuda-host.test, cuda-fake-numbers.test) run the skipping code.
// HOST: sched.causal_rows
