// RUN: sinter-opt %s -split-input-file -verify-diagnostics --sinter-autodiff=mode=gradients

// Tests that an op without a gradient rule between a parameter and the loss
// is reported at the op.
func.func @forward(%p: tensor<3xf32> {sgraph.param = "p"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  // expected-error @+1 {{'sgraph.collective_broadcast' op lies between a trainable parameter and the loss but has no gradient rule}}
  %b = sgraph.collective_broadcast %p : tensor<3xf32>
  %l = sgraph.reduce_sum %b axes = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that a reduction with no gradient (max across ranks) is reported.
func.func @forward(%p: tensor<3xf32> {sgraph.param = "p"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  // expected-error @+1 {{'sgraph.all_reduce' op has no gradient for reduction 'max'}}
  %b = sgraph.all_reduce %p {reduction = "max"} : tensor<3xf32>
  %l = sgraph.reduce_sum %b axes = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that the loss must be a 0-d float tensor.
// expected-error @+1 {{@forward must return the loss, a 0-d float tensor, as its first result}}
func.func @forward(%p: tensor<3xf32> {sgraph.param = "p"}) -> (tensor<3xf32> {sgraph.name = "loss"}) {
  return %p : tensor<3xf32>
}

// -----

// Tests that a module without @forward is reported.
// expected-error @+1 {{the module has no @forward function to differentiate}}
module {
  func.func @other(%p: tensor<3xf32>) -> tensor<3xf32> {
    return %p : tensor<3xf32>
  }
}
