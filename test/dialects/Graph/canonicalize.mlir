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
