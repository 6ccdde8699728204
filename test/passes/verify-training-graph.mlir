// RUN: sinter-opt %s -split-input-file -verify-diagnostics --sinter-verify-training-graph

// Tests that a well-formed training step passes.
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w"}, %f: tensor<3xf32> {sgraph.param = "f", sgraph.frozen}, %m: tensor<3xf32> {sgraph.opt_state = "optimizer.w.momentum_buffer"}, %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "w"}, tensor<3xf32> {sgraph.name = "optimizer.w.momentum_buffer"}) {
  %lr = sgraph.constant dense<0.1> : tensor<f32>
  %g = sgraph.mul %w, %f : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %w1, %m1 = sgraph.momentum_update %w, %g, %m, %lr, %s {momentum = 0.9 : f64} : tensor<3xf32>, tensor<f32>, tensor<i64>
  return %w1, %m1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// Tests that the phase must produce @train_step.
// expected-error @+1 {{the training phase must produce @train_step}}
module {
  func.func @forward(%w: tensor<3xf32>) -> tensor<3xf32> {
    return %w : tensor<3xf32>
  }
}

// -----

// Tests that a trainable parameter without an update is reported.
// expected-error @+1 {{trainable parameter 'w' has no optimizer update in @train_step}}
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w"}, %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "w"}) {
  return %w : tensor<3xf32>
}

// -----

// Tests that a parameter may be updated only once.
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w"}, %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "w"}) {
  %lr = sgraph.constant dense<0.1> : tensor<f32>
  %w1 = sgraph.sgd_update %w, %w, %lr : tensor<3xf32>, tensor<f32>
  // expected-error @+1 {{'sgraph.sgd_update' op updates parameter 'w', which another update op updates too}}
  %w2 = sgraph.sgd_update %w, %w, %lr : tensor<3xf32>, tensor<f32>
  return %w2 : tensor<3xf32>
}

// -----

// Tests that a frozen parameter must not be updated.
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w", sgraph.frozen}, %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "w"}) {
  %lr = sgraph.constant dense<0.1> : tensor<f32>
  // expected-error @+1 {{'sgraph.sgd_update' op updates frozen parameter 'w'}}
  %w1 = sgraph.sgd_update %w, %w, %lr : tensor<3xf32>, tensor<f32>
  return %w1 : tensor<3xf32>
}

// -----

// Tests that the new parameter must be returned under its name.
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w"}, %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "w"}) {
  %lr = sgraph.constant dense<0.1> : tensor<f32>
  // expected-error @+1 {{'sgraph.sgd_update' op the new value of parameter 'w' is not returned under its name}}
  %w1 = sgraph.sgd_update %w, %w, %lr : tensor<3xf32>, tensor<f32>
  return %w : tensor<3xf32>
}

// -----

// Tests that updates apply to parameter arguments only.
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w"}, %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "w"}) {
  %lr = sgraph.constant dense<0.1> : tensor<f32>
  %e = sgraph.exp %w : tensor<3xf32>
  // expected-error @+1 {{'sgraph.sgd_update' op updates a value that is not a parameter argument of @train_step}}
  %w1 = sgraph.sgd_update %e, %w, %lr : tensor<3xf32>, tensor<f32>
  return %w1 : tensor<3xf32>
}

// -----

// Tests that optimizer state must be a state argument used by one update.
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w"},
                      // expected-error @+1 {{optimizer state 'optimizer.w.exp_avg' is not used by any update}}
                      %m: tensor<3xf32> {sgraph.opt_state = "optimizer.w.exp_avg"}, %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "w"}) {
  %lr = sgraph.constant dense<0.1> : tensor<f32>
  %w1 = sgraph.sgd_update %w, %w, %lr : tensor<3xf32>, tensor<f32>
  return %w1 : tensor<3xf32>
}

// -----

// Tests that no stop_gradient may be left.
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w"}, %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "w"}) {
  %lr = sgraph.constant dense<0.1> : tensor<f32>
  // expected-error @+1 {{'sgraph.stop_gradient' op is left after the training phase}}
  %g = sgraph.stop_gradient %w : tensor<3xf32>
  %w1 = sgraph.sgd_update %w, %g, %lr : tensor<3xf32>, tensor<f32>
  return %w1 : tensor<3xf32>
}

// -----

// Tests that the step argument is required.
// expected-error @+1 {{@train_step has no step argument (sgraph.step)}}
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w"}) -> (tensor<3xf32> {sgraph.name = "w"}) {
  %lr = sgraph.constant dense<0.1> : tensor<f32>
  %w1 = sgraph.sgd_update %w, %w, %lr : tensor<3xf32>, tensor<f32>
  return %w1 : tensor<3xf32>
}

// -----

// Tests that @eval_step must run in eval mode: no dropout.
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w"}, %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "w"}) {
  %lr = sgraph.constant dense<0.1> : tensor<f32>
  %w1 = sgraph.sgd_update %w, %w, %lr : tensor<3xf32>, tensor<f32>
  return %w1 : tensor<3xf32>
}
func.func @eval_step(%w: tensor<3xf32> {sgraph.param = "w"}, %s: tensor<i64> {sgraph.input = "s"}) -> (tensor<3xf32> {sgraph.name = "loss"}) {
  // expected-error @+1 {{'sgraph.dropout' op is in @eval_step, which must run in eval mode}}
  %d = sgraph.dropout %w, %s {rate = 0.5 : f64, seed = 1 : i64} : tensor<3xf32>, tensor<i64>
  return %d : tensor<3xf32>
}

// -----

// Tests that @eval_step takes only parameters and model inputs (here the
// step, which dropout would read).
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w"}, %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "w"}) {
  %lr = sgraph.constant dense<0.1> : tensor<f32>
  %w1 = sgraph.sgd_update %w, %w, %lr : tensor<3xf32>, tensor<f32>
  return %w1 : tensor<3xf32>
}
// expected-error @+1 {{argument #1 of @eval_step ('step') is neither a parameter nor a model input}}
func.func @eval_step(%w: tensor<3xf32> {sgraph.param = "w"}, %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "loss"}) {
  return %w : tensor<3xf32>
}

// -----

// Tests that no train_eval may be left.
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w"}, %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "w"}) {
  %lr = sgraph.constant dense<0.1> : tensor<f32>
  // expected-error @+1 {{'sgraph.train_eval' op is left after the training phase}}
  %g = sgraph.train_eval %w, %w : tensor<3xf32>
  %w1 = sgraph.sgd_update %w, %g, %lr : tensor<3xf32>, tensor<f32>
  return %w1 : tensor<3xf32>
}

// -----

// Tests that a buffer is frozen: the optimizer never updates it.
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w"},
                      // expected-error @+1 {{buffer 'bn.running_mean' is not frozen}}
                      %m: tensor<3xf32> {sgraph.param = "bn.running_mean", sgraph.buffer},
                      %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "w"}, tensor<3xf32> {sgraph.name = "bn.running_mean"}) {
  %lr = sgraph.constant dense<0.1> : tensor<f32>
  %w1 = sgraph.sgd_update %w, %w, %lr : tensor<3xf32>, tensor<f32>
  return %w1, %w : tensor<3xf32>, tensor<3xf32>
}

// -----

// Tests that evaluation updates no buffer.
func.func @train_step(%w: tensor<3xf32> {sgraph.param = "w"}, %s: tensor<i64> {sgraph.step}) -> (tensor<3xf32> {sgraph.name = "w"}) {
  %lr = sgraph.constant dense<0.1> : tensor<f32>
  %w1 = sgraph.sgd_update %w, %w, %lr : tensor<3xf32>, tensor<f32>
  return %w1 : tensor<3xf32>
}
// expected-error @+1 {{@eval_step returns a new value of buffer 'bn.running_mean'; evaluation must update nothing}}
func.func @eval_step(%m: tensor<3xf32> {sgraph.param = "bn.running_mean", sgraph.frozen, sgraph.buffer}) -> (tensor<3xf32> {sgraph.name = "bn.running_mean"}) {
  return %m : tensor<3xf32>
}
