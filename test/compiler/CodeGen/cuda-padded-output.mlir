// RUN: sinterc %s --entry=softmax_padded --target=cuda --compile-to=scheduled | FileCheck %s --check-prefix=FUSED
// RUN: sinterc %s --entry=softmax_padded --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=ROWS
// RUN: sinterc %s --entry=scale_padded --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=LOOP
// RUN: sinterc %s --entry=scale_padded --compile-to=scheduled | FileCheck %s --check-prefix=CPU
// RUN: sinterc %s --entry=padded_rows --target=cuda --compile-to=scheduled | FileCheck %s --check-prefix=OTHERAXIS
// RUN: sinterc %s --entry=padded_then_column_sum --target=cuda --cuda-merge-launches=false --compile-to=lowered | FileCheck %s --check-prefix=COLSUM
// Tests a kernel that writes a pad of its own value at the end of the last
// axis (KernelGrouper::paddedRowOutput, on memory-bound targets: the
// logits' gradient padded from 50257 to 50264 columns for the matmul that
// reads it): the pad joins the kernel, which stores each element into the
// padded buffer and fills the padding itself, instead of writing the value
// for a pad kernel to copy.

// FUSED: sched.kernel @k0(
// FUSED: sgraph.pad {{.*}}sinter.fusion = "k0: writes its rows into the padded buffer, the padding included, instead of a pad kernel copying them"
// FUSED: sched.yield %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8x1xf32>, tensor<4x8x1xf32>, tensor<4x8x104xf32>
// FUSED-NOT: sched.kernel
// FUSED: sched.program

// A block per row: the phases store the row's 100 values into the padded
// buffer's row, then the block's threads fill columns 100..103 with the
// padding value. Bytes: 12800 read, 13312 written, 256 of per-row results.
// ROWS: sched.launch @sinter_k0(%x : !sched.buffer<4x8x100xf32>) -> ({{.*}}!sched.buffer<4x8x104xf32>) {{.*}}bytes = 26368 : i64
// ROWS-LABEL: func.func @sinter_k0(
// ROWS: %[[PAD:.*]] = arith.constant 1.500000e+00 : f32
// ROWS: scf.for %{{.*}} = %{{.*}} to %c32 step
// ROWS: memref.store %{{.*}} : memref<4x8x104xf32>
// ROWS: %[[FROM:.*]] = arith.addi %{{.*}}, %c100 : index
// ROWS: scf.for %[[COL:.*]] = %[[FROM]] to %c104 step
// ROWS: memref.store %[[PAD]], %{{.*}}[%{{.*}}, %{{.*}}, %[[COL]]] : memref<4x8x104xf32>
func.func @softmax_padded(%x: tensor<4x8x100xf32> {sgraph.input = "x"})
    -> (tensor<4x8x104xf32> {sgraph.name = "y"}) {
  %m = sgraph.reduce_max %x axes = [2] {keepdims = true} : (tensor<4x8x100xf32>) -> tensor<4x8x1xf32>
  %d = sgraph.sub %x, %m : (tensor<4x8x100xf32>, tensor<4x8x1xf32>) -> tensor<4x8x100xf32>
  %e = sgraph.exp %d : tensor<4x8x100xf32>
  %s = sgraph.reduce_sum %e axes = [2] {keepdims = true} : (tensor<4x8x100xf32>) -> tensor<4x8x1xf32>
  %y = sgraph.div %e, %s : (tensor<4x8x100xf32>, tensor<4x8x1xf32>) -> tensor<4x8x100xf32>
  %p = sgraph.pad %y {low = array<i64: 0, 0, 0>, high = array<i64: 0, 0, 4>, value = 1.5} : (tensor<4x8x100xf32>) -> tensor<4x8x104xf32>
  return %p : tensor<4x8x104xf32>
}

// An elementwise kernel: its grid-stride loop over the 3200 elements
// stores into the padded buffer, and a second one over the padding's
// 32 x 4 elements fills it. On the CPU target the pad stays a kernel of
// its own.
// LOOP: sched.launch @sinter_k0(%x : !sched.buffer<4x8x100xf32>) -> (%{{.*}} : !sched.buffer<4x8x104xf32>) {{.*}}bytes = 26112 : i64
// LOOP-LABEL: func.func @sinter_k0(
// LOOP: %[[PAD:.*]] = arith.constant 1.500000e+00 : f32
// LOOP: scf.for %{{.*}} = %{{.*}} to %c3200 step
// LOOP: arith.mulf
// LOOP: memref.store %{{.*}} : memref<4x8x104xf32>
// LOOP: scf.for %{{.*}} = %{{.*}} to %c128 step
// LOOP: memref.store %[[PAD]], {{.*}} : memref<4x8x104xf32>
// CPU: sched.kernel @k0(
// CPU-NOT: sgraph.pad
// CPU: sched.kernel @k1(
// CPU-NEXT: sgraph.pad {{.*}}not k0: k0 iterates over 4x8x100, this op over 4x8x104
func.func @scale_padded(%x: tensor<4x8x100xf32> {sgraph.input = "x"})
    -> (tensor<4x8x104xf32> {sgraph.name = "y"}) {
  %c = sgraph.constant dense<2.0> : tensor<f32>
  %y = sgraph.mul %x, %c : (tensor<4x8x100xf32>, tensor<f32>) -> tensor<4x8x100xf32>
  %p = sgraph.pad %y {low = array<i64: 0, 0, 0>, high = array<i64: 0, 0, 4>, value = 1.5} : (tensor<4x8x100xf32>) -> tensor<4x8x104xf32>
  return %p : tensor<4x8x104xf32>
}

// Padding another axis than the last is a kernel of its own.
// OTHERAXIS: sched.kernel @k1(
// OTHERAXIS-NEXT: sgraph.pad {{.*}}not k0: k0 iterates over 4x8x100, this op over 4x12x100
func.func @padded_rows(%x: tensor<4x8x100xf32> {sgraph.input = "x"})
    -> (tensor<4x12x100xf32> {sgraph.name = "y"}) {
  %c = sgraph.constant dense<2.0> : tensor<f32>
  %y = sgraph.mul %x, %c : (tensor<4x8x100xf32>, tensor<f32>) -> tensor<4x8x100xf32>
  %p = sgraph.pad %y {low = array<i64: 0, 0, 0>, high = array<i64: 0, 4, 0>} : (tensor<4x8x100xf32>) -> tensor<4x12x100xf32>
  return %p : tensor<4x12x100xf32>
}

// A reduction over another axis may not join a kernel that writes a padded
// output (its code runs along the last axis, the padding filled per row):
// two kernels (launched apart here; merged, they are one launch).
// RUN: sinterc %s --entry=padded_then_column_sum --target=cuda --compile-to=scheduled | FileCheck %s --check-prefix=COLSUM-WHY
// COLSUM: sched.launch @sinter_k0(%x : !sched.buffer<4x8x100xf32>) -> (%{{.*}} : !sched.buffer<4x8x104xf32>) {{.*}}label = "k0_mul_pad"
// COLSUM: sched.launch @sinter_k1(%x : !sched.buffer<4x8x100xf32>) -> (%{{.*}} : !sched.buffer<4x1x100xf32>) {{.*}}label = "k1_mul_reduce_sum"
// COLSUM-WHY: sgraph.reduce_sum {{.*}}not k0: k0 writes a padded output along its last axis, and this reduces over others
func.func @padded_then_column_sum(%x: tensor<4x8x100xf32> {sgraph.input = "x"})
    -> (tensor<4x8x104xf32> {sgraph.name = "y"}, tensor<4x1x100xf32> {sgraph.name = "s"}) {
  %c = sgraph.constant dense<2.0> : tensor<f32>
  %y = sgraph.mul %x, %c : (tensor<4x8x100xf32>, tensor<f32>) -> tensor<4x8x100xf32>
  %p = sgraph.pad %y {low = array<i64: 0, 0, 0>, high = array<i64: 0, 0, 4>} : (tensor<4x8x100xf32>) -> tensor<4x8x104xf32>
  %s = sgraph.reduce_sum %y axes = [1] {keepdims = true} : (tensor<4x8x100xf32>) -> tensor<4x1x100xf32>
  return %p, %s : tensor<4x8x104xf32>, tensor<4x1x100xf32>
}
