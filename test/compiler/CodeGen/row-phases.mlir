// RUN: sinterc %s --entry=f --compile-to=lowered | FileCheck %s
// RUN: rm -rf %t && sinterc %s --entry=f --compile-to=lowered --dump-dir=%t -o /dev/null
// RUN: %python %S/Inputs/print_program.py %t | FileCheck %s --check-prefix=PROGRAM
// RUN: sinterc %s --entry=softmax --compile-to=lowered | FileCheck %s --check-prefix=SOFTMAX
// RUN: sinterc %s --entry=dropout_grad --compile-to=lowered | FileCheck %s --check-prefix=DROPOUT

// Tests how a row-phased kernel (docs/CodeGen.md, "row phases") is
// emitted: a layer norm over the last axis of a 4x8x128x256 input is one
// kernel whose body walks chunks of rows, one index of the split dimension
// (the threads' range [begin, end)) and one of the next dimension at a
// time (a chunk of 128 rows is 32K elements, at most kChunkElements), and
// runs the three phases on each chunk: the row sums, the sums of squared
// deviations (the mean a row op, recomputed per element), then the
// normalized rows. Each phase fills its per-row output on the chunk before
// it adds into it; later phases read the per-row results from their
// buffers.

// CHECK-LABEL: func.func private @sinter_k{{[0-9]+}}_body(
// CHECK: scf.for %[[B:.*]] = %arg{{[0-9]+}} to %arg{{[0-9]+}} step %c1
// CHECK:   scf.for %[[H:.*]] = %c0{{.*}} to %c8 step %c1
// CHECK:     memref.subview %{{.*}}[%[[B]], %[[H]], 0, 0] [%c1, 1, 128, 256]
// CHECK:     linalg.fill
// CHECK:     linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK:       arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK:     linalg.fill
// CHECK:     linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK:       arith.mulf
// CHECK:       arith.subf
// CHECK:       arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK:     linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK:       math.sqrt
// CHECK:       arith.divf
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @sinter_k{{[0-9]+}}(

// PROGRAM: function f
// PROGRAM-NEXT: kernel k0_reduce_sum_mul_sub_add_rsqrt extent 4
// PROGRAM-NEXT: result y tensor

func.func @f(%x: tensor<4x8x128x256xf32> {sgraph.input = "x"})
    -> (tensor<4x8x128x256xf32> {sgraph.name = "y"}) {
  %inv = sgraph.constant dense<0.00390625> : tensor<f32>
  %eps = sgraph.constant dense<1.0e-5> : tensor<f32>
  %s = sgraph.reduce_sum %x axes = [3] {keepdims = true} : (tensor<4x8x128x256xf32>) -> tensor<4x8x128x1xf32>
  %mean = sgraph.mul %s, %inv : (tensor<4x8x128x1xf32>, tensor<f32>) -> tensor<4x8x128x1xf32>
  %d = sgraph.sub %x, %mean : (tensor<4x8x128x256xf32>, tensor<4x8x128x1xf32>) -> tensor<4x8x128x256xf32>
  %d2 = sgraph.mul %d, %d : (tensor<4x8x128x256xf32>, tensor<4x8x128x256xf32>) -> tensor<4x8x128x256xf32>
  %v = sgraph.reduce_sum %d2 axes = [3] {keepdims = true} : (tensor<4x8x128x256xf32>) -> tensor<4x8x128x1xf32>
  %var = sgraph.mul %v, %inv : (tensor<4x8x128x1xf32>, tensor<f32>) -> tensor<4x8x128x1xf32>
  %ve = sgraph.add %var, %eps : (tensor<4x8x128x1xf32>, tensor<f32>) -> tensor<4x8x128x1xf32>
  %r = sgraph.rsqrt %ve : tensor<4x8x128x1xf32>
  %y = sgraph.mul %d, %r : (tensor<4x8x128x256xf32>, tensor<4x8x128x1xf32>) -> tensor<4x8x128x256xf32>
  return %y : tensor<4x8x128x256xf32>
}

// A softmax keeps each chunk's exponentials in a stack buffer of the
// chunk's shape: the second phase writes them there while it sums them,
// the third reads them back to divide, so exp runs once per element and
// the exponentials never reach memory.
// SOFTMAX-LABEL: func.func private @sinter_k{{[0-9]+}}_body(
// SOFTMAX: %[[E:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x1x128x256xf32>
// SOFTMAX: scf.for
// SOFTMAX:   scf.for
// SOFTMAX:     linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// SOFTMAX:       arith.maximumf
// SOFTMAX:     linalg.generic {{.*}}outs({{.*}}, %[[E]] : {{.*}}memref<1x1x128x256xf32>)
// SOFTMAX:       math.exp
// SOFTMAX:     linalg.generic {{.*}}ins({{.*}}%[[E]] : {{.*}}memref<1x1x128x256xf32>)
// SOFTMAX-NOT:   math.exp
// SOFTMAX:       arith.divf
// SOFTMAX-LABEL: func.func @sinter_k{{[0-9]+}}(

func.func @softmax(%x: tensor<4x8x128x256xf32> {sgraph.input = "x"})
    -> (tensor<4x8x128x256xf32> {sgraph.name = "y"}) {
  %m = sgraph.reduce_max %x axes = [3] {keepdims = true} : (tensor<4x8x128x256xf32>) -> tensor<4x8x128x1xf32>
  %d = sgraph.sub %x, %m : (tensor<4x8x128x256xf32>, tensor<4x8x128x1xf32>) -> tensor<4x8x128x256xf32>
  %e = sgraph.exp %d : tensor<4x8x128x256xf32>
  %s = sgraph.reduce_sum %e axes = [3] {keepdims = true} : (tensor<4x8x128x256xf32>) -> tensor<4x8x128x1xf32>
  %y = sgraph.div %e, %s : (tensor<4x8x128x256xf32>, tensor<4x8x128x1xf32>) -> tensor<4x8x128x256xf32>
  return %y : tensor<4x8x128x256xf32>
}

// The softmax backward through attention dropout: the dropped gradient is
// needed by both phases (the row sums of its product with p, then the
// difference). Its hashing (the splitmix64 multiplies) runs once per
// element, in the first phase, which keeps the values in a stack buffer
// the second phase reads.
// DROPOUT-LABEL: func.func private @sinter_k{{[0-9]+}}_body(
// DROPOUT: %[[G:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x1x128x256xf32>
// DROPOUT: linalg.generic {{.*}}outs(%{{.*}}, %[[G]] : {{.*}}memref<1x1x128x256xf32>)
// DROPOUT: arith.muli %{{.*}}, %c-4658895280553007687_i64
// DROPOUT: linalg.generic {{.*}}ins(%{{.*}}, %{{.*}}, %[[G]] : {{.*}}memref<1x1x128x256xf32>)
// DROPOUT-NOT: -4658895280553007687
// DROPOUT-LABEL: func.func @sinter_k{{[0-9]+}}(

func.func @dropout_grad(%dp: tensor<4x8x128x256xf32> {sgraph.input = "dp"},
                        %p: tensor<4x8x128x256xf32> {sgraph.input = "p"},
                        %step: tensor<i64> {sgraph.input = "step"})
    -> (tensor<4x8x128x256xf32> {sgraph.name = "ds"}) {
  %g = sgraph.dropout %dp, %step {rate = 2.000000e-01 : f64, seed = 7 : i64} : tensor<4x8x128x256xf32>, tensor<i64>
  %gp = sgraph.mul %g, %p : (tensor<4x8x128x256xf32>, tensor<4x8x128x256xf32>) -> tensor<4x8x128x256xf32>
  %s = sgraph.reduce_sum %gp axes = [3] {keepdims = true} : (tensor<4x8x128x256xf32>) -> tensor<4x8x128x1xf32>
  %d = sgraph.sub %g, %s : (tensor<4x8x128x256xf32>, tensor<4x8x128x1xf32>) -> tensor<4x8x128x256xf32>
  %ds = sgraph.mul %p, %d : (tensor<4x8x128x256xf32>, tensor<4x8x128x256xf32>) -> tensor<4x8x128x256xf32>
  return %ds : tensor<4x8x128x256xf32>
}
