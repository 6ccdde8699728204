// RUN: sinter-opt %s -split-input-file --sinter-autodiff | FileCheck %s

// Tests plain SGD: one sgd_update per parameter with the scheduled lr, no
// optimizer state, and the training-step signature: parameters, inputs and
// the step in; loss, lr, grad_norm and the new parameters out. Every
// gradient is averaged across data-parallel ranks first (one all_reduce
// each; on one rank the identity), and the norm and the update read the
// average.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %[[B:[^:]*]]: tensor<4xf32> {sgraph.param = "fc.bias"}, %{{.*}}: tensor<2x3xf32> {sgraph.input = "x"}, %{{.*}}: tensor<2xi64> {sgraph.input = "y"}, %[[STEP:[^:]*]]: tensor<i64> {sgraph.step}, %{{[^:]*}}: tensor<f64> {sgraph.default = 0.000000e+00 : f64, sgraph.hyper = "loss_count"})
// CHECK-SAME: -> (tensor<f32> {sgraph.name = "loss"}, tensor<f32> {sgraph.name = "lr"}, tensor<f32> {sgraph.name = "grad_norm"}, tensor<4x3xf32> {sgraph.name = "fc.weight"}, tensor<4xf32> {sgraph.name = "fc.bias"})
// CHECK: %[[DW0:.*]] = sgraph.matmul %{{.*}}, %{{.*}} {transpose_lhs = true}
// CHECK: %[[DW:.*]] = sgraph.all_reduce %[[DW0]] {reduction = "mean"} : tensor<4x3xf32>
// CHECK: %[[DB:.*]] = sgraph.all_reduce %{{.*}} {reduction = "mean"} : tensor<4xf32>
// CHECK: %[[NORM:.*]] = sgraph.global_norm %[[DW]], %[[DB]] : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<f32>
// CHECK: %[[LR:.*]] = sgraph.lr_schedule %[[STEP]] {lr = 1.000000e-01 : f64} : (tensor<i64>) -> tensor<f32>
// CHECK: %[[W1:.*]] = sgraph.sgd_update %[[W]], %[[DW]], %[[LR]] : tensor<4x3xf32>, tensor<f32>
// CHECK: %[[B1:.*]] = sgraph.sgd_update %[[B]], %[[DB]], %[[LR]] : tensor<4xf32>, tensor<f32>
// CHECK: return %{{.*}}, %[[LR]], %[[NORM]], %[[W1]], %[[B1]]
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "sgd", lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %b: tensor<4xf32> {sgraph.param = "fc.bias"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = sgraph.softmax_cross_entropy %1, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %2 : tensor<f32>
}
}

// -----

// Tests SGD with Nesterov momentum: a momentum buffer per parameter as
// optimizer state after the parameters, and weight decay only on matrices
// (weight_decay_params = "matrices"), so the bias update has none.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %[[B:[^:]*]]: tensor<4xf32> {sgraph.param = "fc.bias"}, %[[WBUF:[^:]*]]: tensor<4x3xf32> {sgraph.opt_state = "optimizer.fc.weight.momentum_buffer"}, %[[BBUF:[^:]*]]: tensor<4xf32> {sgraph.opt_state = "optimizer.fc.bias.momentum_buffer"}
// CHECK-SAME: %[[STEP:[^:]*]]: tensor<i64> {sgraph.step}, %{{[^:]*}}: tensor<f64> {sgraph.default = 0.000000e+00 : f64, sgraph.hyper = "loss_count"})
// CHECK-SAME: tensor<4x3xf32> {sgraph.name = "optimizer.fc.weight.momentum_buffer"}, tensor<4xf32> {sgraph.name = "optimizer.fc.bias.momentum_buffer"})
// CHECK: %[[LR:.*]] = sgraph.lr_schedule
// CHECK: %[[W1:.*]], %[[WB1:.*]] = sgraph.momentum_update %[[W]], %{{.*}}, %[[WBUF]], %[[LR]], %[[STEP]] {momentum = 9.000000e-01 : f64, nesterov = true, weight_decay = 1.000000e-02 : f64}
// CHECK: %[[B1:.*]], %[[BB1:.*]] = sgraph.momentum_update %[[B]], %{{.*}}, %[[BBUF]], %[[LR]], %[[STEP]] {momentum = 9.000000e-01 : f64, nesterov = true} :
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %[[W1]], %[[B1]], %[[WB1]], %[[BB1]]
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "sgd", lr = 0.1 : f64, momentum = 0.9 : f64, dampening = 0.0 : f64, nesterov = true, weight_decay = 0.01 : f64, weight_decay_params = "matrices"}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %b: tensor<4xf32> {sgraph.param = "fc.bias"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = sgraph.softmax_cross_entropy %1, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %2 : tensor<f32>
}
}

// -----

// Tests AdamW with global-norm clipping and nanoGPT's warmup + cosine
// schedule: the norm of all gradients, the clip factor
// min(max_norm / (norm + 1e-6), 1) applied to each gradient, the schedule
// from the step, and decoupled weight decay on the matrix only.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %[[B:[^:]*]]: tensor<4xf32> {sgraph.param = "fc.bias"}, %[[M:[^:]*]]: tensor<4x3xf32> {sgraph.opt_state = "optimizer.fc.weight.exp_avg"}, %[[V:[^:]*]]: tensor<4x3xf32> {sgraph.opt_state = "optimizer.fc.weight.exp_avg_sq"}, %[[BM:[^:]*]]: tensor<4xf32> {sgraph.opt_state = "optimizer.fc.bias.exp_avg"}, %[[BV:[^:]*]]: tensor<4xf32> {sgraph.opt_state = "optimizer.fc.bias.exp_avg_sq"}
// CHECK: %[[DW0:.*]] = sgraph.matmul %{{.*}}, %{{.*}} {transpose_lhs = true}
// CHECK: %[[DW:.*]] = sgraph.all_reduce %[[DW0]] {reduction = "mean"}
// CHECK: %[[DB:.*]] = sgraph.all_reduce %{{.*}} {reduction = "mean"}
// CHECK: %[[NORM:.*]] = sgraph.global_norm %[[DW]], %[[DB]] :
// CHECK: %[[EPS:.*]] = sgraph.constant dense<9.99999997E-7> : tensor<f32>
// CHECK: %[[DENOM:.*]] = sgraph.add %[[NORM]], %[[EPS]]
// CHECK: %[[MAX:.*]] = sgraph.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[RATIO:.*]] = sgraph.div %[[MAX]], %[[DENOM]]
// CHECK: %[[COEF:.*]] = sgraph.minimum %[[RATIO]], %{{.*}}
// CHECK: %[[CDW:.*]] = sgraph.mul %[[DW]], %[[COEF]]
// CHECK: %[[CDB:.*]] = sgraph.mul %[[DB]], %[[COEF]]
// CHECK: %[[LR:.*]] = sgraph.lr_schedule %{{.*}} {decay_steps = 100 : i64, lr = 1.000000e-03 : f64, min_lr = 1.000000e-04 : f64, schedule = "warmup_cosine", warmup_steps = 10 : i64}
// CHECK: sgraph.adam_update %[[W]], %[[CDW]], %[[M]], %[[V]], %[[LR]], %{{.*}} {beta2 = 0.94999999999999996 : f64, decoupled_weight_decay = true, weight_decay = 1.000000e-01 : f64}
// CHECK: sgraph.adam_update %[[B]], %[[CDB]], %[[BM]], %[[BV]], %[[LR]], %{{.*}} {beta2 = 0.94999999999999996 : f64, decoupled_weight_decay = true} :
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "adamw", lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, weight_decay_params = "matrices"}, lr_schedule = {kind = "warmup_cosine", warmup_steps = 10 : i64, decay_steps = 100 : i64, min_lr = 1.0e-4 : f64}, grad_clip = 1.0 : f64}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %b: tensor<4xf32> {sgraph.param = "fc.bias"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = sgraph.softmax_cross_entropy %1, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %2 : tensor<f32>
}
}

// -----

// Tests Adam with data parallelism: each gradient is averaged across ranks
// before the norm and the update; the frozen bias gets no state and no
// update.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %{{.*}}: tensor<4xf32> {sgraph.frozen, sgraph.param = "fc.bias"}, %{{.*}}: tensor<4x3xf32> {sgraph.opt_state = "optimizer.fc.weight.exp_avg"}, %{{.*}}: tensor<4x3xf32> {sgraph.opt_state = "optimizer.fc.weight.exp_avg_sq"}, %{{.*}}: tensor<2x3xf32> {sgraph.input = "x"}
// CHECK-NOT: optimizer.fc.bias
// CHECK: %[[DW:.*]] = sgraph.matmul %{{.*}}, %{{.*}} {transpose_lhs = true}
// CHECK: %[[MEAN:.*]] = sgraph.all_reduce %[[DW]] {reduction = "mean"} : tensor<4x3xf32>
// CHECK: sgraph.global_norm %[[MEAN]] :
// CHECK: sgraph.adam_update %[[W]], %[[MEAN]]
// CHECK-NOT: sgraph.adam_update
// CHECK: return
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "adam", lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.0 : f64}, data_parallel = {gradients_mean = true}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %b: tensor<4xf32> {sgraph.param = "fc.bias", sgraph.frozen}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = sgraph.softmax_cross_entropy %1, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %2 : tensor<f32>
}
}

// -----

// Tests data_parallel.gradients_mean = false (MindSpore's
// gradients_mean=False): the ranks' gradients are summed, not averaged.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {sgraph.param = "fc.weight"}
// CHECK: %[[DW:.*]] = sgraph.matmul %{{.*}}, %{{.*}} {transpose_lhs = true}
// CHECK: %[[SUM:.*]] = sgraph.all_reduce %[[DW]] : tensor<4x3xf32>
// CHECK: sgraph.adam_update %[[W]], %[[SUM]]
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "adam", lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.0 : f64}, data_parallel = {gradients_mean = false}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %b: tensor<4xf32> {sgraph.param = "fc.bias", sgraph.frozen}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = sgraph.softmax_cross_entropy %1, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %2 : tensor<f32>
}
}

// -----

// Tests data_parallel.grad_comm_dtype (what the importer writes for
// `grad_comm_dtype: BF16`): each f32 gradient's all-reduce travels as bf16.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[DW:.*]] = sgraph.matmul %{{.*}}, %{{.*}} {transpose_lhs = true}
// CHECK: sgraph.all_reduce %[[DW]] {comm_dtype = "bf16", reduction = "mean"} : tensor<4x3xf32>
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, optimizer = {kind = "sgd", lr = 1.0e-3 : f64}, data_parallel = {gradients_mean = true, grad_comm_dtype = "bf16"}}} {
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %x: tensor<2x3xf32> {sgraph.input = "x"}, %y: tensor<2xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %2 = sgraph.softmax_cross_entropy %0, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %2 : tensor<f32>
}
}
