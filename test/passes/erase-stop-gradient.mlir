// RUN: sinter-opt %s --sinter-erase-stop-gradient | FileCheck %s

// Tests that every stop_gradient is replaced by its operand.
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[X:.*]]: tensor<3xf32>
// CHECK-NOT: sgraph.stop_gradient
// CHECK: %[[E:.*]] = sgraph.exp %[[X]]
// CHECK: return %[[E]]
func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  %s = sgraph.stop_gradient %x : tensor<3xf32>
  %e = sgraph.exp %s : tensor<3xf32>
  %t = sgraph.stop_gradient %e : tensor<3xf32>
  return %t : tensor<3xf32>
}
