// RUN: sinter-opt %s -split-input-file -verify-diagnostics

// One case per constraint of docs/dialects/sgraph.md for dropout,
// stop_gradient, train_eval, the collectives, the optimizer updates,
// global_norm and lr_schedule:
// `@<op>_c<N>` breaks constraint C<N> of sgraph.<op> and nothing else (as
// in invalid.mlir).

// Tests that dropout rejects a step that is not a 0-d integer tensor (C1).
func.func @dropout_c1(%x: tensor<2xf32>, %s: tensor<1xi64>) {
  // expected-error @+1 {{'sgraph.dropout' op operand #1 must be 0-d integer tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<1xi64>'}}
  %0 = sgraph.dropout %x, %s {rate = 1.0e-01 : f64, seed = 7 : i64} : tensor<2xf32>, tensor<1xi64>
  return
}

// -----

// Tests that dropout rejects a rate of 1 (C2).
func.func @dropout_c2(%x: tensor<2xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'sgraph.dropout' op rate 1.000000e+00 is not in [0, 1)}}
  %0 = sgraph.dropout %x, %s {rate = 1.0 : f64, seed = 7 : i64} : tensor<2xf32>, tensor<i64>
  return
}

// -----

// Tests that dropout's batch axis is an axis of its operand (C4).
func.func @dropout_c4(%x: tensor<2x3xf32>, %s: tensor<i64>, %r: tensor<i64>) {
  // expected-error @+1 {{'sgraph.dropout' op batch_axis 2 is not an axis of the rank-2 operand}}
  %0 = sgraph.dropout %x, %s shard %r {batch_axis = 2 : i64, rate = 0.5 : f64, seed = 7 : i64} : tensor<2x3xf32>, tensor<i64>, tensor<i64>
  return
}

// -----

func.func @dropout_c4_negative(%x: tensor<2x3xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'sgraph.dropout' op batch_axis -1 is not an axis of the rank-2 operand}}
  %0 = sgraph.dropout %x, %s {batch_axis = -1 : i64, rate = 0.5 : f64, seed = 7 : i64} : tensor<2x3xf32>, tensor<i64>
  return
}

// -----

// Tests that dropout's result must have the operand's type (C3).
func.func @dropout_c3(%x: tensor<2xf32>, %s: tensor<i64>) {
  // expected-error @+2 {{'sgraph.dropout' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<2xbf16>'}}
  // expected-error @+1 {{'sgraph.dropout' op failed to infer returned types}}
  %0 = "sgraph.dropout"(%x, %s) {rate = 1.0e-01 : f64, seed = 7 : i64} : (tensor<2xf32>, tensor<i64>) -> tensor<2xbf16>
  return
}

// -----

// Tests that stop_gradient rejects an element type sgraph does not support
// (C1).
func.func @stop_gradient_c1(%x: tensor<2xi8>) {
  // expected-error @+1 {{'sgraph.stop_gradient' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi8>'}}
  %0 = sgraph.stop_gradient %x : tensor<2xi8>
  return
}

// -----

// Tests that stop_gradient's result must have the operand's type (C2).
func.func @stop_gradient_c2(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.stop_gradient' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<1x2xf32>'}}
  // expected-error @+1 {{'sgraph.stop_gradient' op failed to infer returned types}}
  %0 = "sgraph.stop_gradient"(%x) : (tensor<2xf32>) -> tensor<1x2xf32>
  return
}

// -----

// Tests that all_reduce rejects a boolean operand (C1).
func.func @all_reduce_c1(%x: tensor<2xi1>) {
  // expected-error @+1 {{'sgraph.all_reduce' op operand #0 must be variadic of statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi1>'}}
  %0 = sgraph.all_reduce %x : tensor<2xi1>
  return
}

// -----

// Tests that all_reduce rejects an unknown reduction (C2).
func.func @all_reduce_c2(%x: tensor<2xf32>) {
  // expected-error @+1 {{'sgraph.all_reduce' op reduction 'prod' is not one of sum, mean, max, min}}
  %0 = sgraph.all_reduce %x {reduction = "prod"} : tensor<2xf32>
  return
}

// -----

// Tests that comm_dtype is bf16 or f16, with sum or mean, on f32 (C5).
func.func @all_reduce_c5_type(%x: tensor<2xf32>) {
  // expected-error @+1 {{'sgraph.all_reduce' op comm_dtype 'f8' is not bf16 or f16}}
  %0 = sgraph.all_reduce %x {reduction = "mean", comm_dtype = "f8"} : tensor<2xf32>
  return
}

// -----

func.func @all_reduce_c5_max(%x: tensor<2xf32>) {
  // expected-error @+1 {{'sgraph.all_reduce' op comm_dtype needs reduction sum or mean, not 'max'}}
  %0 = sgraph.all_reduce %x {reduction = "max", comm_dtype = "bf16"} : tensor<2xf32>
  return
}

// -----

func.func @all_reduce_c5_f64(%x: tensor<2xf64>) {
  // expected-error @+1 {{'sgraph.all_reduce' op comm_dtype needs f32 operands, not 'tensor<2xf64>'}}
  %0 = sgraph.all_reduce %x {reduction = "sum", comm_dtype = "f16"} : tensor<2xf64>
  return
}

// -----

// Tests that all_reduce needs at least one operand (C4).
func.func @all_reduce_c4() {
  // expected-error @+1 {{'sgraph.all_reduce' op needs at least one operand}}
  "sgraph.all_reduce"() : () -> ()
  return
}

// -----

// Tests that all_reduce's result must have the operand's type (C3).
func.func @all_reduce_c3(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.all_reduce' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'sgraph.all_reduce' op failed to infer returned types}}
  %0 = "sgraph.all_reduce"(%x) : (tensor<2xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that all_gather rejects an element type sgraph does not support
// (C1).
func.func @all_gather_c1(%x: tensor<2xi8>) {
  // expected-error @+1 {{'sgraph.all_gather' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi8>'}}
  %0 = sgraph.all_gather %x {axis = 0 : i64, world_size = 2 : i64} : (tensor<2xi8>) -> tensor<4xi8>
  return
}

// -----

// Tests that all_gather rejects a world size of 0 (C2).
func.func @all_gather_c2(%x: tensor<2xf32>) {
  // expected-error @+2 {{world_size 0 must be >= 1}}
  // expected-error @+1 {{'sgraph.all_gather' op failed to infer returned types}}
  %0 = sgraph.all_gather %x {axis = 0 : i64, world_size = 0 : i64} : (tensor<2xf32>) -> tensor<0xf32>
  return
}

// -----

// Tests that all_gather rejects an axis outside the operand's rank (C3).
func.func @all_gather_c3(%x: tensor<2xf32>) {
  // expected-error @+2 {{axis 1 is out of range [0, 1)}}
  // expected-error @+1 {{'sgraph.all_gather' op failed to infer returned types}}
  %0 = sgraph.all_gather %x {axis = 1 : i64, world_size = 2 : i64} : (tensor<2xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that all_gather's result scales the axis by world_size (C4).
func.func @all_gather_c4(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'sgraph.all_gather' op inferred type(s) 'tensor<2x6xf32>' are incompatible with return type(s) of operation 'tensor<4x3xf32>'}}
  // expected-error @+1 {{'sgraph.all_gather' op failed to infer returned types}}
  %0 = sgraph.all_gather %x {axis = 1 : i64, world_size = 2 : i64} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that reduce_scatter rejects a boolean operand (C1).
func.func @reduce_scatter_c1(%x: tensor<4xi1>) {
  // expected-error @+1 {{'sgraph.reduce_scatter' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = sgraph.reduce_scatter %x {axis = 0 : i64, world_size = 2 : i64} : (tensor<4xi1>) -> tensor<2xi1>
  return
}

// -----

// Tests that reduce_scatter rejects a negative world size (C2).
func.func @reduce_scatter_c2(%x: tensor<4xf32>) {
  // expected-error @+2 {{world_size -2 must be >= 1}}
  // expected-error @+1 {{'sgraph.reduce_scatter' op failed to infer returned types}}
  %0 = sgraph.reduce_scatter %x {axis = 0 : i64, world_size = -2 : i64} : (tensor<4xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that reduce_scatter rejects an axis outside the operand's rank (C3).
func.func @reduce_scatter_c3(%x: tensor<4xf32>) {
  // expected-error @+2 {{axis 1 is out of range [0, 1)}}
  // expected-error @+1 {{'sgraph.reduce_scatter' op failed to infer returned types}}
  %0 = sgraph.reduce_scatter %x {axis = 1 : i64, world_size = 2 : i64} : (tensor<4xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that reduce_scatter rejects an axis that world_size does not divide
// (C4).
func.func @reduce_scatter_c4(%x: tensor<6xf32>) {
  // expected-error @+2 {{dimension 6 of axis 0 is not divisible by world_size 4}}
  // expected-error @+1 {{'sgraph.reduce_scatter' op failed to infer returned types}}
  %0 = sgraph.reduce_scatter %x {axis = 0 : i64, world_size = 4 : i64} : (tensor<6xf32>) -> tensor<1xf32>
  return
}

// -----

// Tests that reduce_scatter rejects an unknown reduction (C5).
func.func @reduce_scatter_c5(%x: tensor<4xf32>) {
  // expected-error @+2 {{reduction 'avg' is not one of sum, mean, max, min}}
  // expected-error @+1 {{'sgraph.reduce_scatter' op failed to infer returned types}}
  %0 = sgraph.reduce_scatter %x {axis = 0 : i64, world_size = 2 : i64, reduction = "avg"} : (tensor<4xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that reduce_scatter's result divides the axis by world_size (C6).
func.func @reduce_scatter_c6(%x: tensor<4x2xf32>) {
  // expected-error @+2 {{'sgraph.reduce_scatter' op inferred type(s) 'tensor<2x2xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'sgraph.reduce_scatter' op failed to infer returned types}}
  %0 = sgraph.reduce_scatter %x {axis = 0 : i64, world_size = 2 : i64} : (tensor<4x2xf32>) -> tensor<4x1xf32>
  return
}

// -----

// Tests that collective_broadcast rejects an element type sgraph does not
// support (C1).
func.func @collective_broadcast_c1(%x: tensor<2xi8>) {
  // expected-error @+1 {{'sgraph.collective_broadcast' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi8>'}}
  %0 = sgraph.collective_broadcast %x : tensor<2xi8>
  return
}

// -----

// Tests that collective_broadcast rejects a negative root (C2).
func.func @collective_broadcast_c2(%x: tensor<2xf32>) {
  // expected-error @+1 {{'sgraph.collective_broadcast' op root -1 must be >= 0}}
  %0 = sgraph.collective_broadcast %x {root = -1 : i64} : tensor<2xf32>
  return
}

// -----

// Tests that collective_broadcast's result must have the operand's type
// (C3).
func.func @collective_broadcast_c3(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.collective_broadcast' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<2xf64>'}}
  // expected-error @+1 {{'sgraph.collective_broadcast' op failed to infer returned types}}
  %0 = "sgraph.collective_broadcast"(%x) : (tensor<2xf32>) -> tensor<2xf64>
  return
}

// -----

// Tests that sgd_update rejects a learning rate that is not a 0-d float
// tensor (C1).
func.func @sgd_update_c1(%w: tensor<4xf32>, %lr: tensor<1xf32>) {
  // expected-error @+1 {{'sgraph.sgd_update' op operand #2 must be 0-d float tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<1xf32>'}}
  %0 = sgraph.sgd_update %w, %w, %lr : tensor<4xf32>, tensor<1xf32>
  return
}

// -----

// Tests that sgd_update rejects a grad whose type differs from the
// parameter's (C1, AllTypesMatch).
func.func @sgd_update_c1(%w: tensor<4xf32>, %g: tensor<4xbf16>, %lr: tensor<f32>) {
  // expected-error @+1 {{'sgraph.sgd_update' op failed to verify that all of {param, grad} have same type}}
  %0 = "sgraph.sgd_update"(%w, %g, %lr) : (tensor<4xf32>, tensor<4xbf16>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Tests that sgd_update's result must have the parameter's type (C2).
func.func @sgd_update_c2(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+2 {{'sgraph.sgd_update' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf16>'}}
  // expected-error @+1 {{'sgraph.sgd_update' op failed to infer returned types}}
  %0 = "sgraph.sgd_update"(%w, %w, %lr) : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf16>
  return
}

// -----

// Tests that sgd_update rejects a negative weight decay (C3).
func.func @sgd_update_c3(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'sgraph.sgd_update' op weight_decay must be >= 0, got -1.000000e-02}}
  %0 = sgraph.sgd_update %w, %w, %lr {weight_decay = -1.0e-02 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

// Tests that momentum_update rejects an integer parameter (C1).
func.func @momentum_update_c1(%w: tensor<4xi32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'sgraph.momentum_update' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0, %1 = sgraph.momentum_update %w, %w, %w, %lr, %s {momentum = 9.0e-01 : f64} : tensor<4xi32>, tensor<f32>, tensor<i64>
  return
}

// -----

// Tests that momentum_update rejects a momentum buffer whose type differs
// from the parameter's (C1, AllTypesMatch).
func.func @momentum_update_c1(%w: tensor<4xf32>, %b: tensor<2x2xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'sgraph.momentum_update' op failed to verify that all of {param, grad, momentum_buffer} have same type}}
  %0:2 = "sgraph.momentum_update"(%w, %w, %b, %lr, %s) {momentum = 9.0e-01 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that momentum_update's results must have the parameter's type (C2).
func.func @momentum_update_c2(%w: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+2 {{'sgraph.momentum_update' op inferred type(s) 'tensor<4xf32>', 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>', 'tensor<4xf64>'}}
  // expected-error @+1 {{'sgraph.momentum_update' op failed to infer returned types}}
  %0:2 = "sgraph.momentum_update"(%w, %w, %w, %lr, %s) {momentum = 9.0e-01 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf64>)
  return
}

// -----

// Tests that momentum_update rejects a negative momentum (C3).
func.func @momentum_update_c3(%w: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'sgraph.momentum_update' op momentum must be >= 0, got -9.000000e-01}}
  %0, %1 = sgraph.momentum_update %w, %w, %w, %lr, %s {momentum = -9.0e-01 : f64} : tensor<4xf32>, tensor<f32>, tensor<i64>
  return
}

// -----

// Tests that momentum_update rejects nesterov with nonzero dampening (C4).
func.func @momentum_update_c4(%w: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'sgraph.momentum_update' op nesterov needs momentum > 0 and dampening = 0, got momentum 9.000000e-01 and dampening 1.000000e-01}}
  %0, %1 = sgraph.momentum_update %w, %w, %w, %lr, %s {momentum = 9.0e-01 : f64, dampening = 1.0e-01 : f64, nesterov = true} : tensor<4xf32>, tensor<f32>, tensor<i64>
  return
}

// -----

// Tests that adam_update rejects a step that is not a 0-d integer tensor
// (C1).
func.func @adam_update_c1(%w: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<f32>) {
  // expected-error @+1 {{'sgraph.adam_update' op operand #5 must be 0-d integer tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<f32>'}}
  %0, %1, %2 = sgraph.adam_update %w, %w, %w, %w, %lr, %s : tensor<4xf32>, tensor<f32>, tensor<f32>
  return
}

// -----

// Tests that adam_update rejects moments whose type differs from the
// parameter's (C1, AllTypesMatch).
func.func @adam_update_c1(%w: tensor<4xf32>, %m: tensor<4xbf16>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'sgraph.adam_update' op failed to verify that all of {param, grad, exp_avg, exp_avg_sq} have same type}}
  %0:3 = "sgraph.adam_update"(%w, %w, %m, %m, %lr, %s) : (tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xbf16>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that adam_update's results must have the parameter's type (C2).
func.func @adam_update_c2(%w: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+2 {{'sgraph.adam_update' op inferred type(s) 'tensor<4xf32>', 'tensor<4xf32>', 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>', 'tensor<4xf32>', 'tensor<8xf32>'}}
  // expected-error @+1 {{'sgraph.adam_update' op failed to infer returned types}}
  %0:3 = "sgraph.adam_update"(%w, %w, %w, %w, %lr, %s) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that adam_update rejects beta1 = 1 (C3).
func.func @adam_update_c3(%w: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'sgraph.adam_update' op betas must be in [0, 1), got (1.000000e+00, 9.990000e-01)}}
  %0, %1, %2 = sgraph.adam_update %w, %w, %w, %w, %lr, %s {beta1 = 1.0 : f64} : tensor<4xf32>, tensor<f32>, tensor<i64>
  return
}

// -----

// Tests that adam_update rejects a negative epsilon (C4).
func.func @adam_update_c4(%w: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'sgraph.adam_update' op epsilon must be >= 0, got -1.000000e-08}}
  %0, %1, %2 = sgraph.adam_update %w, %w, %w, %w, %lr, %s {epsilon = -1.0e-08 : f64} : tensor<4xf32>, tensor<f32>, tensor<i64>
  return
}

// -----

// Tests that global_norm rejects an integer operand (C1).
func.func @global_norm_c1(%g: tensor<4xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{'sgraph.global_norm' op operand #1 must be variadic of statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = sgraph.global_norm %g, %i : (tensor<4xf32>, tensor<4xi32>) -> tensor<f32>
  return
}

// -----

// Tests that global_norm rejects an empty operand list (C2).
func.func @global_norm_c2() {
  // expected-error @+1 {{'sgraph.global_norm' op needs at least one operand}}
  %0 = sgraph.global_norm : () -> tensor<f32>
  return
}

// -----

// Tests that lr_schedule rejects a float step (C1).
func.func @lr_schedule_c1(%s: tensor<f32>) {
  // expected-error @+1 {{'sgraph.lr_schedule' op operand #0 must be 0-d integer tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<f32>'}}
  %0 = sgraph.lr_schedule %s {lr = 1.0e-03 : f64} : (tensor<f32>) -> tensor<f32>
  return
}

// -----

// Tests that lr_schedule rejects an integer peak_lr (C1).
func.func @lr_schedule_c1_peak_lr(%s: tensor<i64>, %p: tensor<i64>) {
  // expected-error @+1 {{'sgraph.lr_schedule' op operand #1 must be 0-d float tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<i64>'}}
  %0 = sgraph.lr_schedule %s, peak_lr %p {lr = 1.0e-03 : f64} : (tensor<i64>, tensor<i64>) -> tensor<f32>
  return
}

// -----

// Tests that lr_schedule rejects a peak_lr that is not 0-d (C1).
func.func @lr_schedule_c1_peak_lr_rank(%s: tensor<i64>, %p: tensor<1xf64>) {
  // expected-error @+1 {{'sgraph.lr_schedule' op operand #1 must be 0-d float tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<1xf64>'}}
  %0 = sgraph.lr_schedule %s, peak_lr %p {lr = 1.0e-03 : f64} : (tensor<i64>, tensor<1xf64>) -> tensor<f32>
  return
}

// -----

// Tests that lr_schedule rejects an unknown schedule (C2).
func.func @lr_schedule_c2(%s: tensor<i64>) {
  // expected-error @+1 {{'sgraph.lr_schedule' op schedule 'linear' is not one of constant, warmup_cosine}}
  %0 = sgraph.lr_schedule %s {lr = 1.0e-03 : f64, schedule = "linear"} : (tensor<i64>) -> tensor<f32>
  return
}

// -----

// Tests that lr_schedule rejects a negative warmup_steps (C3).
func.func @lr_schedule_c3(%s: tensor<i64>) {
  // expected-error @+1 {{'sgraph.lr_schedule' op warmup_steps must be >= 0, got -1.000000e+01}}
  %0 = sgraph.lr_schedule %s {lr = 1.0e-03 : f64, warmup_steps = -10 : i64} : (tensor<i64>) -> tensor<f32>
  return
}

// -----

// Tests that lr_schedule rejects warmup_cosine with decay_steps <=
// warmup_steps (C4).
func.func @lr_schedule_c4(%s: tensor<i64>) {
  // expected-error @+1 {{'sgraph.lr_schedule' op warmup_cosine needs decay_steps > warmup_steps and min_lr <= lr, got decay_steps 100, warmup_steps 100, min_lr 6.000000e-05, lr 6.000000e-04}}
  %0 = sgraph.lr_schedule %s {schedule = "warmup_cosine", lr = 6.0e-04 : f64, min_lr = 6.0e-05 : f64, warmup_steps = 100 : i64, decay_steps = 100 : i64} : (tensor<i64>) -> tensor<f32>
  return
}

// -----

// Tests that train_eval's two values have one type (C2).
func.func @train_eval_c2(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'sgraph.train_eval' op failed to verify that all of {train, eval} have same type}}
  %0 = "sgraph.train_eval"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  return
}
