// RUN: sinter-opt %s -split-input-file -verify-diagnostics --sinter-autodiff

// Tests that the training step needs an optimizer in the training section.
module attributes {sgraph.training = {batch_size = 2 : i64}} {
  // expected-error @+1 {{the model has no training.optimizer; the training step needs one (sgd, adam or adamw)}}
  func.func @forward(%p: tensor<3xf32> {sgraph.param = "p"}) -> (tensor<f32> {sgraph.name = "loss"}) {
    %l = sgraph.reduce_sum %p axes = [0] : (tensor<3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tests that a trainable parameter the loss does not depend on is reported
// and left without an update (PyTorch skips parameters whose .grad is None).
module attributes {sgraph.training = {optimizer = {kind = "sgd", lr = 0.1 : f64}}} {
  func.func @forward(%p: tensor<3xf32> {sgraph.param = "p"},
                     // expected-warning @+1 {{parameter 'unused' does not affect the loss; it gets no gradient and no update}}
                     %u: tensor<2xf32> {sgraph.param = "unused"}) -> (tensor<f32> {sgraph.name = "loss"}) {
    %l = sgraph.reduce_sum %p axes = [0] : (tensor<3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tests that what this version does not do yet is reported, not silently
// left out.
module attributes {sgraph.training = {optimizer = {kind = "sgd", lr = 0.1 : f64}, precision = "fp16_mixed"}} {
  // expected-warning @+1 {{training.precision fp16_mixed with loss_scale NONE: gradients below 2^-24 flush to zero in f16}}
  func.func @forward(%p: tensor<3xf32> {sgraph.param = "p"}) -> (tensor<f32> {sgraph.name = "loss"}) {
    %l = sgraph.reduce_sum %p axes = [0] : (tensor<3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
