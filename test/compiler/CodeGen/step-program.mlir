// RUN: sinterc %s --entry=f --compile-to=lowered | FileCheck %s
// RUN: rm -rf %t && sinterc %s --entry=f --compile-to=lowered --dump-dir=%t -o /dev/null
// RUN: %python %S/Inputs/print_program.py %t | FileCheck %s --check-prefix=PROGRAM

// Tests how a planned step becomes kernels and a step program:
//  - each kernel has the uniform entry (five slabs, begin, end) that cuts
//    its places out of the slabs and calls a body taking one noalias buffer
//    per place;
//  - a fused elementwise chain is one linalg.generic, flattened to one
//    dimension and sliced to [begin, end) for threads;
//  - a reduction fills its output first, then combines with reassociation;
//  - the matmul is a library step, the state update a copy when it cannot
//    be written in place (here the matmul reads w after the update).

// CHECK-LABEL: func.func private @sinter_k{{[0-9]+}}_body(
// CHECK-SAME: memref<?xi8> {llvm.noalias}
// CHECK: memref.view %arg{{[0-9]+}}[%{{.*}}][] : memref<?xi8> to memref<65536xf32>
// CHECK: memref.subview %{{.*}}[%arg{{[0-9]+}}] [%{{.*}}] [1]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK: math.tanh
// CHECK: arith.mulf
// CHECK-LABEL: func.func @sinter_k{{[0-9]+}}(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xi8>, %arg3: memref<?xi8>, %arg4: memref<?xi8>, %arg5: memref<?xi64>, %arg6: index, %arg7: index) attributes {llvm.emit_c_interface, sched.kernel_args = {{[0-9]+}} : i64}
// CHECK: call @sinter_k{{[0-9]+}}_body(
// CHECK-LABEL: func.func private @sinter_k{{[0-9]+}}_body(
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32

// PROGRAM: function f
// PROGRAM: kernel k{{[0-9]+}}_tanh_mul extent 65536
// PROGRAM: matmul lhs [256, 256] rhs [256, 256] out [256, 256]
// PROGRAM: kernel k{{[0-9]+}}_reduce_sum extent 256
// PROGRAM: copy
// PROGRAM: result loss metric
// PROGRAM: result w param

func.func @f(%w: tensor<256x256xf32> {sgraph.param = "w", sgraph.init = {dist = "normal", std = 0.02 : f64}},
             %x: tensor<256x256xf32> {sgraph.input = "x"})
    -> (tensor<f32> {sgraph.name = "loss"}, tensor<256x256xf32> {sgraph.name = "w"}) {
  %c = sgraph.constant dense<0.5> : tensor<f32>
  %t = sgraph.tanh %x : tensor<256x256xf32>
  %nw = sgraph.mul %t, %c : (tensor<256x256xf32>, tensor<f32>) -> tensor<256x256xf32>
  %m = sgraph.matmul %x, %w : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %s = sgraph.reduce_sum %m axes = [1] : (tensor<256x256xf32>) -> tensor<256xf32>
  %l = sgraph.reduce_sum %s axes = [0] : (tensor<256xf32>) -> tensor<f32>
  return %l, %nw : tensor<f32>, tensor<256x256xf32>
}
