// RUN: sinter-opt %s -split-input-file --sinter-autodiff=mode=gradients | FileCheck %s

// Tests that a linear layer's backward has the shapes of its parameters:
// dW by a transposed matmul, db by summing the broadcast axis, and nothing
// for the data input x.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: %[[W:.*]]: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %[[B:.*]]: tensor<4xf32> {sgraph.param = "fc.bias"}, %[[X:.*]]: tensor<2x3xf32> {sgraph.input = "x"})
// CHECK-SAME: -> (tensor<f32> {sgraph.name = "loss"}, tensor<4x3xf32> {sgraph.name = "grad.fc.weight"}, tensor<4xf32> {sgraph.name = "grad.fc.bias"})
// CHECK: %[[SEED:.*]] = sgraph.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[G:.*]] = sgraph.broadcast %{{.*}} : tensor<1x1xf32> to tensor<2x4xf32>
// CHECK: %[[DB:.*]] = sgraph.reduce_sum %[[G]] axes = [0] {keepdims = true} : (tensor<2x4xf32>) -> tensor<1x4xf32>
// CHECK: %[[DBR:.*]] = sgraph.reshape %[[DB]] : tensor<1x4xf32> to tensor<4xf32>
// CHECK: %[[DW:.*]] = sgraph.matmul %[[G]], %[[X]] {transpose_lhs = true} : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-NOT: sgraph.matmul
// CHECK: return %{{.*}}, %[[DW]], %[[DBR]]
func.func @forward(%w: tensor<4x3xf32> {sgraph.param = "fc.weight"}, %b: tensor<4xf32> {sgraph.param = "fc.bias"}, %x: tensor<2x3xf32> {sgraph.input = "x"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %0 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = sgraph.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = sgraph.reduce_sum %1 axes = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Tests that stop_gradient cuts its branch: q reaches the loss only through
// it, so nothing is differentiated there (no tanh rule: no `sub`) and q's
// gradient is zero.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: -> (tensor<f32> {sgraph.name = "loss"}, tensor<3xf32> {sgraph.name = "grad.p"}, tensor<3xf32> {sgraph.name = "grad.q"})
// CHECK: %[[T:.*]] = sgraph.tanh
// CHECK: sgraph.constant dense<1.000000e+00>
// CHECK: %[[DP:.*]] = sgraph.mul %{{.*}}, %[[T]]
// CHECK-NOT: sgraph.sub
// CHECK: %[[DQ:.*]] = sgraph.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: return %{{.*}}, %[[DP]], %[[DQ]]
func.func @forward(%p: tensor<3xf32> {sgraph.param = "p"}, %q: tensor<3xf32> {sgraph.param = "q"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %s = sgraph.stop_gradient %q : tensor<3xf32>
  %t = sgraph.tanh %s : tensor<3xf32>
  %m = sgraph.mul %p, %t : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = sgraph.reduce_sum %m axes = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that a branch that does not reach the loss (a metric) gets no
// backward ops: sigmoid's rule would emit a `sub`.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: -> (tensor<f32> {sgraph.name = "loss"}, tensor<f32> {sgraph.name = "metric"}, tensor<3xf32> {sgraph.name = "grad.p"})
// CHECK: %[[E:.*]] = sgraph.exp
// CHECK: sgraph.sigmoid
// CHECK: %[[DP:.*]] = sgraph.mul %{{.*}}, %[[E]]
// CHECK-NOT: sgraph.sub
// CHECK: return %{{.*}}, %{{.*}}, %[[DP]]
func.func @forward(%p: tensor<3xf32> {sgraph.param = "p"}) -> (tensor<f32> {sgraph.name = "loss"}, tensor<f32> {sgraph.name = "metric"}) {
  %e = sgraph.exp %p : tensor<3xf32>
  %l = sgraph.reduce_sum %e axes = [0] : (tensor<3xf32>) -> tensor<f32>
  %s = sgraph.sigmoid %p : tensor<3xf32>
  %m = sgraph.reduce_mean %s axes = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l, %m : tensor<f32>, tensor<f32>
}

// -----

// Tests that a frozen parameter gets neither a gradient nor backward work
// (no embedding_grad), while the trainable one does.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: -> (tensor<f32> {sgraph.name = "loss"}, tensor<4xf32> {sgraph.name = "grad.w"})
// CHECK-NOT: sgraph.embedding_grad
// CHECK: return
func.func @forward(%t: tensor<5x4xf32> {sgraph.param = "wte.weight", sgraph.frozen}, %w: tensor<4xf32> {sgraph.param = "w"}, %idx: tensor<2xi64> {sgraph.input = "idx"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %e = sgraph.embedding %t, %idx : (tensor<5x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %m = sgraph.mul %e, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %l = sgraph.reduce_sum %m axes = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that a value used twice gets the sum of both uses' gradients.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: %[[P:.*]]: tensor<3xf32> {sgraph.param = "p"}
// CHECK: sgraph.constant dense<1.000000e+00>
// CHECK: %[[A:.*]] = sgraph.mul %[[G:.*]], %[[P]]
// CHECK: %[[B:.*]] = sgraph.mul %[[G]], %[[P]]
// CHECK: %[[SUM:.*]] = sgraph.add %[[A]], %[[B]]
// CHECK: return %{{.*}}, %[[SUM]]
func.func @forward(%p: tensor<3xf32> {sgraph.param = "p"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %m = sgraph.mul %p, %p : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = sgraph.reduce_sum %m axes = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that a tied weight (the embedding table reused as the output layer)
// gets one gradient: the lm_head matmul's plus the embedding's scatter-add;
// the integer indices get none, and cross-entropy differentiates to
// softmax - one_hot.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: %[[T:.*]]: tensor<5x4xf32> {sgraph.param = "wte.weight"}, %[[IDX:.*]]: tensor<2x3xi64> {sgraph.input = "idx"})
// CHECK-SAME: -> (tensor<f32> {sgraph.name = "loss"}, tensor<5x4xf32> {sgraph.name = "grad.wte.weight"})
// CHECK: %[[E:.*]] = sgraph.embedding %[[T]], %[[IDX]]
// CHECK: %[[LOGITS:.*]] = sgraph.matmul %[[E]], %[[T]] {transpose_rhs = true}
// CHECK: %[[PROBS:.*]] = sgraph.softmax %[[LOGITS]] axis = 2 : tensor<2x3x5xf32>
// CHECK: %[[ONEHOT:.*]] = sgraph.one_hot %[[IDX]] : (tensor<2x3xi64>) -> tensor<2x3x5xf32>
// CHECK: %[[DIFF:.*]] = sgraph.sub %[[PROBS]], %[[ONEHOT]]
// CHECK: %[[DLOGITS:.*]] = sgraph.mul %[[DIFF]]
// CHECK: %[[DE:.*]] = sgraph.matmul %[[DLOGITS]], %[[T]] : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32>
// The head's weight gradient contracts over batch and rows in one matmul.
// CHECK: %[[DLROWS:.*]] = sgraph.reshape %[[DLOGITS]] : tensor<2x3x5xf32> to tensor<6x5xf32>
// CHECK: %[[EROWS:.*]] = sgraph.reshape %[[E]] : tensor<2x3x4xf32> to tensor<6x4xf32>
// CHECK: %[[DHEADR:.*]] = sgraph.matmul %[[DLROWS]], %[[EROWS]] {transpose_lhs = true} : (tensor<6x5xf32>, tensor<6x4xf32>) -> tensor<5x4xf32>
// CHECK: %[[DTABLE:.*]] = sgraph.embedding_grad %[[DE]], %[[IDX]] : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<5x4xf32>
// CHECK: %[[TOTAL:.*]] = sgraph.add %[[DHEADR]], %[[DTABLE]]
// CHECK: return %{{.*}}, %[[TOTAL]]
func.func @forward(%t: tensor<5x4xf32> {sgraph.param = "wte.weight"}, %idx: tensor<2x3xi64> {sgraph.input = "idx"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %e = sgraph.embedding %t, %idx : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %logits = sgraph.matmul %e, %t {transpose_rhs = true} : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
  %l = sgraph.softmax_cross_entropy %logits, %idx : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests the backward shapes of the ops of an attention head: the layer norm
// rule (mean, variance, rsqrt), softmax (y * (g - sum(g * y))), the
// transposes inverted, the slice scattered back with a pad, and the
// dropout replayed with the same seed and step.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x6xf32> {sgraph.param = "x"}
// CHECK-SAME: %[[STEP:[^:]*]]: tensor<i64> {sgraph.step}
// CHECK: sgraph.dropout %[[G:.*]], %[[STEP]] {rate = 1.000000e-01 : f64, seed = 5 : i64} : tensor<2x4x4xf32>, tensor<i64>
// CHECK: sgraph.reduce_sum %{{.*}} axes = [2] {keepdims = true} : (tensor<2x4x4xf32>) -> tensor<2x4x1xf32>
// CHECK: sgraph.transpose %{{.*}} permutation = [0, 2, 1] : (tensor<2x2x4xf32>) -> tensor<2x4x2xf32>
// CHECK: sgraph.pad %{{.*}} {high = array<i64: 0, 0, 4>, interior = array<i64: 0, 0, 0>, low = array<i64: 0, 0, 0>} : (tensor<2x4x2xf32>) -> tensor<2x4x6xf32>
// CHECK: sgraph.rsqrt %{{.*}} : tensor<2x4x1xf32>
// CHECK: return
func.func @forward(%x: tensor<2x4x6xf32> {sgraph.param = "x"}, %w: tensor<6xf32> {sgraph.param = "w"}, %b: tensor<6xf32> {sgraph.param = "b"}, %step: tensor<i64> {sgraph.step}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %n = sgraph.layer_norm %x, %w, %b axis = 2 : (tensor<2x4x6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x4x6xf32>
  %q = sgraph.slice %n {start = array<i64: 0, 0, 0>, limit = array<i64: 2, 4, 2>} : (tensor<2x4x6xf32>) -> tensor<2x4x2xf32>
  %kt = sgraph.transpose %q permutation = [0, 2, 1] : (tensor<2x4x2xf32>) -> tensor<2x2x4xf32>
  %s = sgraph.matmul %q, %kt : (tensor<2x4x2xf32>, tensor<2x2x4xf32>) -> tensor<2x4x4xf32>
  %p = sgraph.softmax %s axis = 2 : tensor<2x4x4xf32>
  %d = sgraph.dropout %p, %step {rate = 0.1 : f64, seed = 5 : i64} : tensor<2x4x4xf32>, tensor<i64>
  %l = sgraph.reduce_sum %d axes = [0, 1, 2] : (tensor<2x4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that ReLU's mask is read from its result (y > 0 exactly where
// x > 0), so its input need not be kept and a matmul library may apply
// the ReLU in a training step; a ReLU of a half value widened reads the
// mask from that (half the bytes).
// CHECK-LABEL: func.func @forward_grad(
// CHECK: %[[Y:.*]] = sgraph.relu %{{.*}} : tensor<2x3xf32>
// CHECK: %[[W:.*]] = sgraph.cast %{{.*}} : tensor<2x3xbf16> to tensor<2x3xf32>
// CHECK: sgraph.relu %[[W]]
// CHECK: sgraph.compare %[[W]], %{{.*}} {direction = "gt"}
// CHECK: sgraph.compare %[[Y]], %{{.*}} {direction = "gt"}
func.func @forward(%w: tensor<3x3xf32> {sgraph.param = "w"}, %x: tensor<2x3xf32> {sgraph.input = "x"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %p = sgraph.matmul %x, %w : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  %y = sgraph.relu %p : tensor<2x3xf32>
  %h = sgraph.cast %y : tensor<2x3xf32> to tensor<2x3xbf16>
  %hw = sgraph.cast %h : tensor<2x3xbf16> to tensor<2x3xf32>
  %r = sgraph.relu %hw : tensor<2x3xf32>
  %l = sgraph.reduce_sum %r axes = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
