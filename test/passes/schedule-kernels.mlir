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

// -----

// Tests that after the last all-reduce the kernels run in the order their
// collectives started: the global norm's sums of squares come in parameter
// order (the gradient reduced last, %gb, first), and the sum of squares of
// the gradient reduced first moves ahead of them, so that it overlaps the
// last all-reduce instead of waiting for it; the sum that combines them
// keeps its operands' order (the numbers do not change).
// CHECK-LABEL: func.func @buckets_in_order(
// LARGER-LABEL: func.func @buckets_in_order(
// LARGER: scheduled among the readers of bucket 0
// CHECK: %[[RA:.*]] = sgraph.all_reduce %arg0
// CHECK-NEXT: %[[RB:.*]] = sgraph.all_reduce %arg1
// CHECK-NEXT: %[[SQA:.*]] = sgraph.fusion "k{{[0-9]+}}" kind = "reduction"(%[[RA]]) {sinter.fusion = "scheduled among the readers of bucket 0: the all-reduced gradients are read in the order their collectives started"}
// CHECK: %[[SA:.*]] = sgraph.fusion "k{{[0-9]+}}" kind = "reduction"(%[[SQA]])
// CHECK: %[[SQB:.*]] = sgraph.fusion "k{{[0-9]+}}" kind = "reduction"(%[[RB]]) {sinter.fusion = "scheduled among the readers of bucket 1
// CHECK: %[[SB:.*]] = sgraph.fusion "k{{[0-9]+}}" kind = "reduction"(%[[SQB]])
// CHECK: sgraph.fusion "k{{[0-9]+}}" kind = "loop"(%[[SB]], %[[SA]])
// CHECK: return
func.func @buckets_in_order(%ga: tensor<256x256xf32>, %gb: tensor<256x256xf32>)
    -> tensor<f32> {
  %ra = sgraph.all_reduce %ga {reduction = "mean"} : tensor<256x256xf32>
  %rb = sgraph.all_reduce %gb {reduction = "mean"} : tensor<256x256xf32>
  %sqb = sgraph.mul %rb, %rb : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %sb = sgraph.reduce_sum %sqb axes = [0, 1] : (tensor<256x256xf32>) -> tensor<f32>
  %sqa = sgraph.mul %ra, %ra : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %sa = sgraph.reduce_sum %sqa axes = [0, 1] : (tensor<256x256xf32>) -> tensor<f32>
  %s = sgraph.add %sb, %sa : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Tests that a tail already in bucket order is left as it is.
// CHECK-LABEL: func.func @buckets_already_in_order(
// CHECK-NOT: scheduled among
// CHECK: return
func.func @buckets_already_in_order(%ga: tensor<256x256xf32>,
                                    %gb: tensor<256x256xf32>) -> tensor<f32> {
  %ra = sgraph.all_reduce %ga {reduction = "mean"} : tensor<256x256xf32>
  %rb = sgraph.all_reduce %gb {reduction = "mean"} : tensor<256x256xf32>
  %sqa = sgraph.mul %ra, %ra : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %sa = sgraph.reduce_sum %sqa axes = [0, 1] : (tensor<256x256xf32>) -> tensor<f32>
  %sqb = sgraph.mul %rb, %rb : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %sb = sgraph.reduce_sum %sqb axes = [0, 1] : (tensor<256x256xf32>) -> tensor<f32>
  %s = sgraph.add %sa, %sb : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}
