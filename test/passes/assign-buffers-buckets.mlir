// RUN: sinter-opt %s --sinter-fuse-kernels --sinter-bucket-gradients --sinter-assign-buffers="entry=copied" --sinter-verify-schedule="entry=copied" | FileCheck %s

// Tests that a gradient an argument holds (no kernel writes it) and one
// with another reader (here: the function returns it too) are copied into
// their slots before the collective starts, so that no reader of the
// original sees reduced bytes.
// CHECK-LABEL: sched.program @copied
// CHECK: sched.copy %x -> %[[S0:.*]] :
// CHECK: sched.copy %{{.*}} -> %[[S1:.*]] :
// CHECK-NEXT: sched.all_reduce_start "sum"
func.func @copied(%x: tensor<16xf32> {sgraph.input = "x"})
    -> (tensor<16xf32> {sgraph.name = "a"}, tensor<16xf32> {sgraph.name = "b"},
        tensor<16xf32> {sgraph.name = "c"}) {
  %t = sgraph.tanh %x : tensor<16xf32>
  %r:2 = sgraph.all_reduce %x, %t {reduction = "sum"} : tensor<16xf32>, tensor<16xf32>
  return %r#0, %r#1, %t : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
