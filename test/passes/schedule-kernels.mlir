// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels --sinter-schedule-kernels | FileCheck %s
// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels --sinter-schedule-kernels="big-operand-bytes=1048576" | FileCheck %s --check-prefix=LARGER

// Tests that a kernel reading a big tensor into small results (a weight
// gradient's sum of squares for the global norm) runs right after the
// tensor's producer, where the tensor is still in cache, instead of at
// the end of the step where the program computes it; a reshape it reads
// through moves up with it. A kernel with a big result stays where it is.
// CHECK-LABEL: func.func @norm_early(
// CHECK: %[[G:.*]] = sgraph.matmul
// CHECK-NEXT: %[[R:.*]] = sgraph.reshape %[[G]]
// CHECK-NEXT: sgraph.fusion "k{{[0-9]+}}" kind = "reduction"(%[[R]]) {sinter.fusion = "scheduled right after its reshape operand: reads its big operand while it is in cache, into small results"}
// CHECK: sgraph.reduce_sum
// CHECK: sgraph.matmul
// CHECK: sgraph.fusion "k{{[0-9]+}}" kind = "loop"
// CHECK-NOT: sinter.fusion = "scheduled
// CHECK: sgraph.tanh
// CHECK: return
func.func @norm_early(%a: tensor<256x512xf32>, %b: tensor<512x256xf32>,
                      %c: tensor<256x256xf32>)
    -> (tensor<f32>, tensor<256x256xf32>) {
  %g = sgraph.matmul %a, %b : (tensor<256x512xf32>, tensor<512x256xf32>) -> tensor<256x256xf32>
  %h = sgraph.matmul %c, %c : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %t = sgraph.tanh %h : tensor<256x256xf32>
  %r = sgraph.reshape %g : tensor<256x256xf32> to tensor<65536xf32>
  %sq = sgraph.mul %r, %r : (tensor<65536xf32>, tensor<65536xf32>) -> tensor<65536xf32>
  %s = sgraph.reduce_sum %sq axes = [0] : (tensor<65536xf32>) -> tensor<f32>
  return %s, %t : tensor<f32>, tensor<256x256xf32>
}

// -----

// Tests that the program's order stays when the target's caches are larger
// than the operand (big-operand-bytes above its 256 KiB), and that a
// function without kernels to move is left alone.
// LARGER-LABEL: func.func @norm_early(
// LARGER: sgraph.matmul
// LARGER: sgraph.matmul
// LARGER-NOT: sinter.fusion = "scheduled
// LARGER: return
// LARGER-LABEL: func.func @plain(
// LARGER-NEXT: sgraph.fusion
// LARGER: sgraph.tanh
// LARGER-NOT: scheduled
// CHECK-LABEL: func.func @plain(
// CHECK-NOT: scheduled
// CHECK: return
func.func @plain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %t = sgraph.tanh %a : tensor<4xf32>
  return %t : tensor<4xf32>
}
