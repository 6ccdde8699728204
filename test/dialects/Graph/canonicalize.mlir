// RUN: sinter-opt %s -split-input-file --canonicalize | FileCheck %s

// Tests that a reshape of a slice becomes a slice of a reshape when the
// reshape splits the sliced dimension at a multiple of its inner factor
// (the attention heads of a fused QKV projection): the reshape then aliases
// the whole buffer and the slice is a view.
// CHECK-LABEL: func.func @heads(
// CHECK-SAME: %[[X:.*]]: tensor<2x8x48xf32>
// CHECK: %[[R:.*]] = sgraph.reshape %[[X]] : tensor<2x8x48xf32> to tensor<2x8x6x8xf32>
// CHECK: %[[S:.*]] = sgraph.slice %[[R]] {limit = array<i64: 2, 8, 4, 8>, start = array<i64: 0, 0, 2, 0>}
// CHECK: return %[[S]]
func.func @heads(%x: tensor<2x8x48xf32>) -> tensor<2x8x2x8xf32> {
  %s = sgraph.slice %x {start = array<i64: 0, 0, 16>, limit = array<i64: 2, 8, 32>} : (tensor<2x8x48xf32>) -> tensor<2x8x16xf32>
  %r = sgraph.reshape %s : tensor<2x8x16xf32> to tensor<2x8x2x8xf32>
  return %r : tensor<2x8x2x8xf32>
}

// -----

// Tests that the swap does not happen when the slice starts inside an inner
// factor (4 is not a multiple of 8) or is strided.
// CHECK-LABEL: func.func @unaligned(
// CHECK: %[[S:.*]] = sgraph.slice
// CHECK: sgraph.reshape %[[S]]
// CHECK: %[[T:.*]] = sgraph.slice
// CHECK: sgraph.reshape %[[T]]
func.func @unaligned(%x: tensor<2x8x48xf32>) -> (tensor<2x8x2x8xf32>, tensor<2x4x2x8xf32>) {
  %s = sgraph.slice %x {start = array<i64: 0, 0, 4>, limit = array<i64: 2, 8, 20>} : (tensor<2x8x48xf32>) -> tensor<2x8x16xf32>
  %r = sgraph.reshape %s : tensor<2x8x16xf32> to tensor<2x8x2x8xf32>
  %t = sgraph.slice %x {start = array<i64: 0, 0, 0>, limit = array<i64: 2, 8, 16>, stride = array<i64: 1, 2, 1>} : (tensor<2x8x48xf32>) -> tensor<2x4x16xf32>
  %q = sgraph.reshape %t : tensor<2x4x16xf32> to tensor<2x4x2x8xf32>
  return %r, %q : tensor<2x8x2x8xf32>, tensor<2x4x2x8xf32>
}

// -----

// Tests that a batched matmul contracting over rows and summed over its
// batch (a linear layer's weight gradient) becomes one matmul over batch and
// rows of the reshaped operands, with keepdims' leading 1 restored by a
// reshape.
// CHECK-LABEL: func.func @weight_gradient(
// CHECK-SAME: %[[DY:.*]]: tensor<8x16x6xf32>, %[[X:.*]]: tensor<8x16x4xf32>
// CHECK-DAG: %[[L:.*]] = sgraph.reshape %[[DY]] : tensor<8x16x6xf32> to tensor<128x6xf32>
// CHECK-DAG: %[[R:.*]] = sgraph.reshape %[[X]] : tensor<8x16x4xf32> to tensor<128x4xf32>
// CHECK: %[[M:.*]] = sgraph.matmul %[[L]], %[[R]] {transpose_lhs = true} : (tensor<128x6xf32>, tensor<128x4xf32>) -> tensor<6x4xf32>
// CHECK-NOT: sgraph.reduce_sum
// CHECK: %[[M2:.*]] = sgraph.matmul {{.*}} -> tensor<6x4xf32>
// CHECK: %[[K:.*]] = sgraph.reshape %[[M2]] : tensor<6x4xf32> to tensor<1x6x4xf32>
// CHECK: return %[[M]], %[[K]]
func.func @weight_gradient(%dy: tensor<8x16x6xf32>, %x: tensor<8x16x4xf32>) -> (tensor<6x4xf32>, tensor<1x6x4xf32>) {
  %g = sgraph.matmul %dy, %x {transpose_lhs = true} : (tensor<8x16x6xf32>, tensor<8x16x4xf32>) -> tensor<8x6x4xf32>
  %w = sgraph.reduce_sum %g axes = [0] : (tensor<8x6x4xf32>) -> tensor<6x4xf32>
  %g2 = sgraph.matmul %dy, %x {transpose_lhs = true} : (tensor<8x16x6xf32>, tensor<8x16x4xf32>) -> tensor<8x6x4xf32>
  %k = sgraph.reduce_sum %g2 axes = [0] {keepdims = true} : (tensor<8x6x4xf32>) -> tensor<1x6x4xf32>
  return %w, %k : tensor<6x4xf32>, tensor<1x6x4xf32>
}

// -----

// Tests that the batch is not merged when the reduction leaves a batch axis
// or the matmul does not contract over rows.
// CHECK-LABEL: func.func @not_weight_gradient(
// CHECK: sgraph.matmul {{.*}} -> tensor<8x6x6xf32>
// CHECK: sgraph.reduce_sum
func.func @not_weight_gradient(%a: tensor<8x6x16xf32>, %b: tensor<8x16x6xf32>) -> tensor<6x6xf32> {
  %g = sgraph.matmul %a, %b : (tensor<8x6x16xf32>, tensor<8x16x6xf32>) -> tensor<8x6x6xf32>
  %w = sgraph.reduce_sum %g axes = [0] : (tensor<8x6x6xf32>) -> tensor<6x6xf32>
  return %w : tensor<6x6xf32>
}

// -----

// Tests that an exact widening (bf16 -> f32) sinks below a transpose and a
// reshape used only by it, and meets the cast back to bf16: mixed
// precision's attention output, widened, moved to [B, T, C] and narrowed
// for the next matmul, becomes a bf16 transpose and reshape.
// CHECK-LABEL: func.func @widen_move_narrow(
// CHECK-SAME: %[[O:.*]]: tensor<2x3x4x5xbf16>
// CHECK: %[[T:.*]] = sgraph.transpose %[[O]] permutation = [0, 2, 1, 3] : (tensor<2x3x4x5xbf16>) -> tensor<2x4x3x5xbf16>
// CHECK: %[[R:.*]] = sgraph.reshape %[[T]] : tensor<2x4x3x5xbf16> to tensor<2x4x15xbf16>
// CHECK-NOT: sgraph.cast
// CHECK: return %[[R]]
func.func @widen_move_narrow(%o: tensor<2x3x4x5xbf16>) -> tensor<2x4x15xbf16> {
  %w = sgraph.cast %o : tensor<2x3x4x5xbf16> to tensor<2x3x4x5xf32>
  %t = sgraph.transpose %w permutation = [0, 2, 1, 3] : (tensor<2x3x4x5xf32>) -> tensor<2x4x3x5xf32>
  %r = sgraph.reshape %t : tensor<2x4x3x5xf32> to tensor<2x4x15xf32>
  %n = sgraph.cast %r : tensor<2x4x15xf32> to tensor<2x4x15xbf16>
  return %n : tensor<2x4x15xbf16>
}

// -----

// Tests that a widening read only by layout ops sinks below each of them:
// the fused QKV projection's bf16 result, widened, sliced into q and k,
// split into heads and narrowed for the scores matmul, becomes bf16 slices
// and transposes with no cast left (nothing writes an f32 copy of it).
// CHECK-LABEL: func.func @widen_slice_narrow(
// CHECK-SAME: %[[QKV:.*]]: tensor<2x4x6xbf16>
// CHECK-NOT: sgraph.cast
// CHECK-DAG: sgraph.slice %[[QKV]] {limit = array<i64: 2, 4, 3>, start = array<i64: 0, 0, 0>} : (tensor<2x4x6xbf16>) -> tensor<2x4x3xbf16>
// CHECK-DAG: sgraph.slice %[[QKV]] {limit = array<i64: 2, 4, 6>, start = array<i64: 0, 0, 3>} : (tensor<2x4x6xbf16>) -> tensor<2x4x3xbf16>
// CHECK-NOT: sgraph.cast
// CHECK: return
func.func @widen_slice_narrow(%qkv: tensor<2x4x6xbf16>) -> (tensor<2x3x4xbf16>, tensor<2x3x4xbf16>) {
  %w = sgraph.cast %qkv : tensor<2x4x6xbf16> to tensor<2x4x6xf32>
  %q = sgraph.slice %w {limit = array<i64: 2, 4, 3>, start = array<i64: 0, 0, 0>} : (tensor<2x4x6xf32>) -> tensor<2x4x3xf32>
  %k = sgraph.slice %w {limit = array<i64: 2, 4, 6>, start = array<i64: 0, 0, 3>} : (tensor<2x4x6xf32>) -> tensor<2x4x3xf32>
  %qt = sgraph.transpose %q permutation = [0, 2, 1] : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
  %kt = sgraph.transpose %k permutation = [0, 2, 1] : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
  %qn = sgraph.cast %qt : tensor<2x3x4xf32> to tensor<2x3x4xbf16>
  %kn = sgraph.cast %kt : tensor<2x3x4xf32> to tensor<2x3x4xbf16>
  return %qn, %kn : tensor<2x3x4xbf16>, tensor<2x3x4xbf16>
}

// -----

// Tests that a widening a slice and an elementwise op both read stays
// where it is (sinking it would cast twice).
// CHECK-LABEL: func.func @widen_slice_and_read(
// CHECK: %[[W:.*]] = sgraph.cast %{{.*}} : tensor<2x6xbf16> to tensor<2x6xf32>
// CHECK: sgraph.slice %[[W]]
// CHECK: sgraph.neg %[[W]]
func.func @widen_slice_and_read(%x: tensor<2x6xbf16>) -> (tensor<2x3xbf16>, tensor<2x6xf32>) {
  %w = sgraph.cast %x : tensor<2x6xbf16> to tensor<2x6xf32>
  %s = sgraph.slice %w {limit = array<i64: 2, 3>, start = array<i64: 0, 0>} : (tensor<2x6xf32>) -> tensor<2x3xf32>
  %n = sgraph.cast %s : tensor<2x3xf32> to tensor<2x3xbf16>
  %m = sgraph.neg %w : tensor<2x6xf32>
  return %n, %m : tensor<2x3xbf16>, tensor<2x6xf32>
}

// -----

// Tests what must not fold: narrowing then widening rounds (f32 -> bf16 ->
// f32 is not the identity), and a widening with another use stays where
// it is (sinking it would cast twice).
// CHECK-LABEL: func.func @casts_that_stay(
// CHECK: %[[N:.*]] = sgraph.cast %{{.*}} : tensor<4xf32> to tensor<4xbf16>
// CHECK: %[[W:.*]] = sgraph.cast %[[N]] : tensor<4xbf16> to tensor<4xf32>
// CHECK: %[[X:.*]] = sgraph.cast %{{.*}} : tensor<2x3xbf16> to tensor<2x3xf32>
// CHECK: sgraph.transpose %[[X]]
// CHECK: return %[[W]], %[[X]]
func.func @casts_that_stay(%a: tensor<4xf32>, %b: tensor<2x3xbf16>) -> (tensor<4xf32>, tensor<2x3xf32>, tensor<3x2xf32>) {
  %n = sgraph.cast %a : tensor<4xf32> to tensor<4xbf16>
  %w = sgraph.cast %n : tensor<4xbf16> to tensor<4xf32>
  %x = sgraph.cast %b : tensor<2x3xbf16> to tensor<2x3xf32>
  %t = sgraph.transpose %x permutation = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %w, %x, %t : tensor<4xf32>, tensor<2x3xf32>, tensor<3x2xf32>
}
