// RUN: sinter-opt %s -split-input-file --sinter-align-matmuls | FileCheck %s
// RUN: sinter-opt %s -split-input-file --sinter-align-matmuls | FileCheck %s --check-prefix=DEAD

// Tests sinter-align-matmuls: a matmul dimension some operand or the result
// strides by, whose rows' bytes are not a multiple of 16 (and that is at
// least 64), is padded with zeros to the next multiple; M and N are sliced
// off the result.

// GPT-2's logits in bf16: N = 65 words strides the result (and the rhs,
// read transposed, by K = 32: aligned). The rhs gets 7 rows of zeros, the
// result loses its 7 last columns.
// CHECK-LABEL: func.func @logits
// CHECK: %[[W:.*]] = sgraph.pad %arg1 {high = array<i64: 7, 0>, low = array<i64: 0, 0>} : (tensor<65x32xbf16>) -> tensor<72x32xbf16>
// CHECK: %[[P:.*]] = sgraph.matmul %arg0, %[[W]] {transpose_rhs = true} : (tensor<4x100x32xbf16>, tensor<72x32xbf16>) -> tensor<4x100x72xbf16>
// CHECK: %[[S:.*]] = sgraph.slice %[[P]] {limit = array<i64: 4, 100, 65>, start = array<i64: 0, 0, 0>} : (tensor<4x100x72xbf16>) -> tensor<4x100x65xbf16>
// CHECK: return %[[S]]
func.func @logits(%x: tensor<4x100x32xbf16>, %w: tensor<65x32xbf16>) -> tensor<4x100x65xbf16> {
  %y = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<4x100x32xbf16>, tensor<65x32xbf16>) -> tensor<4x100x65xbf16>
  return %y : tensor<4x100x65xbf16>
}

// -----

// Their gradient into the hidden states: K = 65 strides the lhs; both
// operands padded along K (products of zeros), nothing to slice.
// CHECK-LABEL: func.func @hidden_grad
// CHECK-DAG: %[[G:.*]] = sgraph.pad %arg0 {high = array<i64: 0, 0, 7>, {{.*}}} : (tensor<4x100x65xbf16>) -> tensor<4x100x72xbf16>
// CHECK-DAG: %[[W:.*]] = sgraph.pad %arg1 {high = array<i64: 7, 0>, {{.*}}} : (tensor<65x32xbf16>) -> tensor<72x32xbf16>
// CHECK: %[[P:.*]] = sgraph.matmul %[[G]], %[[W]] : (tensor<4x100x72xbf16>, tensor<72x32xbf16>) -> tensor<4x100x32xbf16>
// CHECK-NOT: sgraph.slice
// CHECK: return %[[P]]
func.func @hidden_grad(%g: tensor<4x100x65xbf16>, %w: tensor<65x32xbf16>) -> tensor<4x100x32xbf16> {
  %y = sgraph.matmul %g, %w : (tensor<4x100x65xbf16>, tensor<65x32xbf16>) -> tensor<4x100x32xbf16>
  return %y : tensor<4x100x32xbf16>
}

// -----

// And into the embedding (f32 result): the lhs read transposed strides by
// M = 65, padded and sliced off; K = 400 is no operand's stride here.
// CHECK-LABEL: func.func @embedding_grad
// CHECK: %[[G:.*]] = sgraph.pad %arg0 {high = array<i64: 0, 7>, {{.*}}} : (tensor<400x65xbf16>) -> tensor<400x72xbf16>
// CHECK: %[[P:.*]] = sgraph.matmul %[[G]], %arg1 {f32_result = true, transpose_lhs = true} : (tensor<400x72xbf16>, tensor<400x32xbf16>) -> tensor<72x32xf32>
// CHECK: sgraph.slice %[[P]] {limit = array<i64: 65, 32>, start = array<i64: 0, 0>} : (tensor<72x32xf32>) -> tensor<65x32xf32>
func.func @embedding_grad(%g: tensor<400x65xbf16>, %x: tensor<400x32xbf16>) -> tensor<65x32xf32> {
  %y = sgraph.matmul %g, %x {transpose_lhs = true, f32_result = true} : (tensor<400x65xbf16>, tensor<400x32xbf16>) -> tensor<65x32xf32>
  return %y : tensor<65x32xf32>
}

// -----

// f32 rows need multiples of 4 elements: 66 becomes 68. Dimensions under
// 64 (here N = 5) and aligned ones stay.
// CHECK-LABEL: func.func @f32
// CHECK-DAG: sgraph.pad %arg0 {high = array<i64: 0, 2>, {{.*}}} : (tensor<64x66xf32>) -> tensor<64x68xf32>
// CHECK-DAG: sgraph.pad %arg1 {high = array<i64: 2, 0>, {{.*}}} : (tensor<66x5xf32>) -> tensor<68x5xf32>
// CHECK: sgraph.matmul {{.*}} -> tensor<64x5xf32>
// CHECK-LABEL: func.func @aligned
// CHECK-NOT: sgraph.pad
// CHECK-NOT: sgraph.slice
func.func @f32(%a: tensor<64x66xf32>, %b: tensor<66x5xf32>) -> tensor<64x5xf32> {
  %y = sgraph.matmul %a, %b : (tensor<64x66xf32>, tensor<66x5xf32>) -> tensor<64x5xf32>
  return %y : tensor<64x5xf32>
}
func.func @aligned(%a: tensor<64x128xbf16>, %b: tensor<128x8xbf16>) -> tensor<64x8xbf16> {
  %y = sgraph.matmul %a, %b : (tensor<64x128xbf16>, tensor<128x8xbf16>) -> tensor<64x8xbf16>
  return %y : tensor<64x8xbf16>
}

// -----

// The logits' gradient feeds both backward matmuls, one through a reshape
// that keeps its last axis: one pad, before the reshape, serves both. The
// old reshape of the unpadded gradient is erased (left, it would keep that
// value in memory: fusion would write it for no reader).
// CHECK-LABEL: func.func @shared
// DEAD-LABEL: func.func @shared
// DEAD-NOT: sgraph.reshape %arg0
// DEAD: return
// CHECK: %[[P:.*]] = sgraph.pad %arg0 {high = array<i64: 0, 0, 7>, {{.*}}} : (tensor<4x100x65xbf16>) -> tensor<4x100x72xbf16>
// CHECK: %[[R:.*]] = sgraph.reshape %[[P]] : tensor<4x100x72xbf16> to tensor<400x72xbf16>
// CHECK-NOT: sgraph.pad %arg0
// CHECK: sgraph.matmul %[[P]], %{{.*}} : (tensor<4x100x72xbf16>, tensor<72x32xbf16>)
// CHECK: sgraph.matmul %[[R]], %arg2 {f32_result = true, transpose_lhs = true} : (tensor<400x72xbf16>, tensor<400x32xbf16>) -> tensor<72x32xf32>
// CHECK-NOT: sgraph.pad %{{.*}} : (tensor<400x65xbf16>)
func.func @shared(%g: tensor<4x100x65xbf16>, %w: tensor<65x32xbf16>, %x: tensor<400x32xbf16>) -> (tensor<4x100x32xbf16>, tensor<65x32xf32>) {
  %dx = sgraph.matmul %g, %w : (tensor<4x100x65xbf16>, tensor<65x32xbf16>) -> tensor<4x100x32xbf16>
  %r = sgraph.reshape %g : tensor<4x100x65xbf16> to tensor<400x65xbf16>
  %dw = sgraph.matmul %r, %x {transpose_lhs = true, f32_result = true} : (tensor<400x65xbf16>, tensor<400x32xbf16>) -> tensor<65x32xf32>
  return %dx, %dw : tensor<4x100x32xbf16>, tensor<65x32xf32>
}
