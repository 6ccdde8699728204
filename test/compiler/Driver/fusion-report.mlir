// RUN: rm -rf %t && mkdir -p %t
// RUN: sinterc %s --entry=f --compile-to=scheduled --dump-dir=%t -o %t/scheduled.mlir
// RUN: FileCheck %s < %t/02-fusion.txt

// Tests that the fusion report says when a kernel was moved in the
// schedule, and why: the sum of squares of a matmul's 256 KiB result runs
// right after the matmul, not after the tanh kernel the program puts
// before it.
// CHECK: @f
// CHECK-NEXT: sgraph.matmul: k{{[0-9]+}}: matmul library call (oneDNN)
// CHECK-NEXT: kernel k{{[0-9]+}} (reduction, 1 inputs, 1 outputs)
// CHECK-NEXT: scheduled right after its matmul operand: reads its big operand while it is in cache, into small results
// CHECK-NEXT: sgraph.mul:
// CHECK-NEXT: sgraph.reduce_sum:
// CHECK-NEXT: kernel k{{[0-9]+}} (loop, 1 inputs, 1 outputs)
// CHECK-NEXT: sgraph.tanh:
func.func @f(%a: tensor<256x512xf32> {sgraph.input = "a"},
             %b: tensor<512x256xf32> {sgraph.input = "b"},
             %c: tensor<256x256xf32> {sgraph.input = "c"})
    -> (tensor<f32> {sgraph.name = "norm"}, tensor<256x256xf32> {sgraph.name = "t"}) {
  %g = sgraph.matmul %a, %b : (tensor<256x512xf32>, tensor<512x256xf32>) -> tensor<256x256xf32>
  %t = sgraph.tanh %c : tensor<256x256xf32>
  %sq = sgraph.mul %g, %g : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %s = sgraph.reduce_sum %sq axes = [0, 1] : (tensor<256x256xf32>) -> tensor<f32>
  return %s, %t : tensor<f32>, tensor<256x256xf32>
}
