// RUN: sinter-opt %s -split-input-file --sinter-verify-optimized=entry=f -verify-diagnostics

// Tests that an op outside every kernel region is rejected: after fusion
// only regions, matmuls, reshapes and constants are.
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'sgraph.tanh' op is outside every kernel region}}
  %0 = sgraph.tanh %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that a composite op left inside a region is rejected.
func.func @f(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = sgraph.fusion "k0" kind = "loop"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<2x4xf32>):
    // expected-error @+1 {{'sgraph.softmax' op is a composite op; sinter-decompose-ops should have expanded it}}
    %s = sgraph.softmax %a axis = 1 : tensor<2x4xf32>
    sgraph.yield %s : tensor<2x4xf32>
  }
  return %0 : tensor<2x4xf32>
}

// -----

// Tests that a matmul region holds exactly one matmul.
func.func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'sgraph.fusion' op matmul region holds 0 matmuls, not one}}
  %0 = sgraph.fusion "k0" kind = "matmul"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>):
    %t = sgraph.relu %a : tensor<4x4xf32>
    sgraph.yield %t : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

// -----

// Tests that the entry must exist.
// expected-error @+1 {{no function @f to check}}
module {
}
