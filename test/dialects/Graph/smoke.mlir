// RUN: sinter-opt %s | FileCheck %s
// CHECK-LABEL: func.func @smoke
func.func @smoke(%a: tensor<2xf32>) -> tensor<2xf32> {
  // CHECK: sgraph.exp
  %0 = sgraph.exp %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}
