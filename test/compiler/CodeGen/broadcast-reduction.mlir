// RUN: sinter-opt %s --sinter-lower-cpu-kernels --sinter-verify-lowered | FileCheck %s
// RUN: sinter-opt %s --sinter-lower-cpu-kernels | sinter-opt --sinter-convert-cpu-to-llvm | FileCheck %s --check-prefix=LLVM

// Tests that a reduction over an axis only a broadcast makes, which no
// buffer of the kernel spans (linalg takes its loop bounds from its
// operands' shapes), gets one more input that spans it: a stack buffer of
// one byte per index of the missing axes, at the top of the body, which
// the payload ignores. k0 sums w [4] broadcast to [3, 4] over both axes
// (the loss of a model computed from a parameter alone); k1 is its
// gradient, the 0-d seed as 1x1 broadcast to [3, 4] and summed over the
// broadcast axis into [1, 4].
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[SPAN:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[ALL:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-DAG: #[[SEED:.*]] = affine_map<(d0, d1) -> (0, 0)>
// CHECK-DAG: #[[KEEP:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func private @sinter_k0_body(
// CHECK-NEXT: %[[S0:.*]] = memref.alloca() : memref<3xi8>
// CHECK: linalg.generic {indexing_maps = [#[[ROW]], #[[SPAN]], #[[ALL]]], iterator_types = ["reduction", "reduction"]} ins(%{{.*}}, %[[S0]] : memref<4xf32>, memref<3xi8>) outs(%{{.*}} : memref<f32>)
// CHECK-NEXT: ^bb0(%[[W:.*]]: f32, %{{.*}}: i8, %[[ACC:.*]]: f32):
// CHECK-NEXT: arith.addf %[[ACC]], %[[W]]
// CHECK-LABEL: func.func private @sinter_k1_body(
// CHECK-NEXT: %[[S1:.*]] = memref.alloca() : memref<3xi8>
// CHECK: linalg.generic {indexing_maps = [#[[SEED]], #[[SPAN]], #[[KEEP]]], iterator_types = ["reduction", "parallel"]} ins(%{{.*}}, %[[S1]] : memref<1x1xf32>, memref<3xi8>) outs(%{{.*}} : memref<1x4xf32>)

// Both lower to loops and to the LLVM dialect.
// LLVM-LABEL: llvm.func internal @sinter_k0_body(
// LLVM-NOT: linalg.generic
// LLVM-LABEL: llvm.func internal @sinter_k1_body(
// LLVM-NOT: linalg.generic
sched.kernel @k0(%w: tensor<4xf32>) -> tensor<f32> attributes {kind = "reduction"} {
  %0 = sgraph.broadcast %w : tensor<4xf32> to tensor<3x4xf32>
  %1 = sgraph.reduce_sum %0 axes = [0, 1] : (tensor<3x4xf32>) -> tensor<f32>
  sched.yield %1 : tensor<f32>
}
sched.kernel @k1(%g: tensor<1x1xf32>) -> tensor<1x4xf32> attributes {kind = "reduction"} {
  %0 = sgraph.broadcast %g : tensor<1x1xf32> to tensor<3x4xf32>
  %1 = sgraph.reduce_sum %0 axes = [0] {keepdims = true} : (tensor<3x4xf32>) -> tensor<1x4xf32>
  sched.yield %1 : tensor<1x4xf32>
}
sched.program @f attributes {role = "step", seed = 0 : i64} {
  %params = sched.slab "params" size 64 : !sched.slab
  %arena = sched.slab "arena" size 128 : !sched.slab
  %w = sched.view %params[0] {name = "w"} : !sched.buffer<4xf32>
  sched.argument "w" "param" %w : !sched.buffer<4xf32>
  %l = sched.view %arena[0] : !sched.buffer<f32>
  %g = sched.view %arena[0] aliases(%l : !sched.buffer<f32>) : !sched.buffer<1x1xf32>
  %d = sched.view %arena[64] : !sched.buffer<1x4xf32>
  sched.launch @k0(%w : !sched.buffer<4xf32>) -> (%l : !sched.buffer<f32>)
  sched.launch @k1(%g : !sched.buffer<1x1xf32>) -> (%d : !sched.buffer<1x4xf32>)
  sched.result "l" "metric" %l : !sched.buffer<f32>
  sched.result "d" "tensor" %d : !sched.buffer<1x4xf32>
}
