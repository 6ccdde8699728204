// RUN: sinter-opt %s | sinter-opt | FileCheck %s
// RUN: sinter-opt %s --mlir-print-op-generic | sinter-opt | FileCheck %s

// Round trip of every sgraph op, one function per op family in the order of
// GraphOps.td. Attributes written with their default value must be elided
// when printed.

// Tests that constants, iota and causal_mask round-trip with their types.
// CHECK-LABEL: func.func @constants_and_generators()
func.func @constants_and_generators() -> (tensor<4x8xf32>, tensor<3xi64>, tensor<2x3xi32>, tensor<4x4xi1>) {
  // CHECK: %[[ZEROS:.+]] = sgraph.constant dense<0.000000e+00> : tensor<4x8xf32>
  %zeros = sgraph.constant dense<0.0> : tensor<4x8xf32>
  // CHECK: %[[IDS:.+]] = sgraph.constant dense<[1, 2, 3]> : tensor<3xi64>
  %ids = sgraph.constant dense<[1, 2, 3]> : tensor<3xi64>
  // CHECK: sgraph.constant dense<true> : tensor<i1>
  %flag = sgraph.constant dense<true> : tensor<i1>
  // CHECK: sgraph.constant dense<1.500000e+00> : tensor<2xbf16>
  %half = sgraph.constant dense<1.5> : tensor<2xbf16>
  // CHECK: %[[POS:.+]] = sgraph.iota axis = 1 : tensor<2x3xi32>
  %pos = sgraph.iota axis = 1 : tensor<2x3xi32>
  // CHECK: sgraph.iota axis = 0 : tensor<256xf32>
  %fpos = sgraph.iota axis = 0 : tensor<256xf32>
  // CHECK: %[[MASK:.+]] = sgraph.causal_mask : tensor<4x4xi1>
  %mask = sgraph.causal_mask : tensor<4x4xi1>
  // CHECK: return %[[ZEROS]], %[[IDS]], %[[POS]], %[[MASK]]
  return %zeros, %ids, %pos, %mask : tensor<4x8xf32>, tensor<3xi64>, tensor<2x3xi32>, tensor<4x4xi1>
}

// Tests that the binary ops, compare and select round-trip, with operand
// shapes that broadcast (trailing alignment, size-1 axes, 0-d scalars).
// CHECK-LABEL: func.func @elementwise_binary(
// CHECK-SAME: %[[X:[^:]+]]: tensor<8x16xf32>, %[[B:[^:]+]]: tensor<16xf32>, %[[C:[^:]+]]: tensor<8x1xf32>, %[[S:[^:]+]]: tensor<f32>, %[[I:[^:]+]]: tensor<8x16xi32>, %[[J:[^:]+]]: tensor<i32>, %[[M:[^:]+]]: tensor<16xi1>
func.func @elementwise_binary(%x: tensor<8x16xf32>, %b: tensor<16xf32>, %c: tensor<8x1xf32>,
                              %s: tensor<f32>, %i: tensor<8x16xi32>, %j: tensor<i32>,
                              %m: tensor<16xi1>) -> tensor<8x16xf32> {
  // CHECK: %[[ADD:.+]] = sgraph.add %[[X]], %[[B]] : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %add = sgraph.add %x, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  // CHECK: sgraph.sub %[[C]], %[[B]] : (tensor<8x1xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %sub = sgraph.sub %c, %b : (tensor<8x1xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  // CHECK: sgraph.mul %[[X]], %[[S]] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %mul = sgraph.mul %x, %s : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  // CHECK: sgraph.div %[[I]], %[[J]] : (tensor<8x16xi32>, tensor<i32>) -> tensor<8x16xi32>
  %div = sgraph.div %i, %j : (tensor<8x16xi32>, tensor<i32>) -> tensor<8x16xi32>
  // CHECK: sgraph.pow %[[S]], %[[S]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %pow = sgraph.pow %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  // CHECK: sgraph.maximum %[[X]], %[[C]] : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %max = sgraph.maximum %x, %c : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  // CHECK: sgraph.minimum %[[I]], %[[I]] : (tensor<8x16xi32>, tensor<8x16xi32>) -> tensor<8x16xi32>
  %min = sgraph.minimum %i, %i : (tensor<8x16xi32>, tensor<8x16xi32>) -> tensor<8x16xi32>
  // CHECK: sgraph.compare %[[I]], %[[J]] {direction = "ne"} : (tensor<8x16xi32>, tensor<i32>) -> tensor<8x16xi1>
  %ne = sgraph.compare %i, %j {direction = "ne"} : (tensor<8x16xi32>, tensor<i32>) -> tensor<8x16xi1>
  // CHECK: %[[LT:.+]] = sgraph.compare %[[C]], %[[B]] {direction = "lt"} : (tensor<8x1xf32>, tensor<16xf32>) -> tensor<8x16xi1>
  %lt = sgraph.compare %c, %b {direction = "lt"} : (tensor<8x1xf32>, tensor<16xf32>) -> tensor<8x16xi1>
  // CHECK: sgraph.select %[[M]], %[[C]], %[[S]] : (tensor<16xi1>, tensor<8x1xf32>, tensor<f32>) -> tensor<8x16xf32>
  %sel = sgraph.select %m, %c, %s : (tensor<16xi1>, tensor<8x1xf32>, tensor<f32>) -> tensor<8x16xf32>
  // CHECK: %[[SEL:.+]] = sgraph.select %[[LT]], %[[ADD]], %[[X]] : (tensor<8x16xi1>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %sel2 = sgraph.select %lt, %add, %x : (tensor<8x16xi1>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: return %[[SEL]]
  return %sel2 : tensor<8x16xf32>
}

// Tests that the unary ops round-trip with the operand's type, and that gelu
// prints its approximation only when it is not the default "none".
// CHECK-LABEL: func.func @elementwise_unary(
// CHECK-SAME: %[[X:[^:]+]]: tensor<8x16xf32>, %[[I:[^:]+]]: tensor<4xi64>, %[[H:[^:]+]]: tensor<2x3xbf16>
func.func @elementwise_unary(%x: tensor<8x16xf32>, %i: tensor<4xi64>, %h: tensor<2x3xbf16>) -> tensor<8x16xf32> {
  // CHECK: sgraph.neg %[[I]] : tensor<4xi64>
  %neg = sgraph.neg %i : tensor<4xi64>
  // CHECK: sgraph.abs %[[X]] : tensor<8x16xf32>
  %abs = sgraph.abs %x : tensor<8x16xf32>
  // CHECK: sgraph.exp %[[H]] : tensor<2x3xbf16>
  %exp = sgraph.exp %h : tensor<2x3xbf16>
  // CHECK: sgraph.log %[[X]] : tensor<8x16xf32>
  %log = sgraph.log %x : tensor<8x16xf32>
  // CHECK: sgraph.sqrt %[[X]] : tensor<8x16xf32>
  %sqrt = sgraph.sqrt %x : tensor<8x16xf32>
  // CHECK: sgraph.rsqrt %[[X]] : tensor<8x16xf32>
  %rsqrt = sgraph.rsqrt %x : tensor<8x16xf32>
  // CHECK: sgraph.tanh %[[X]] : tensor<8x16xf32>
  %tanh = sgraph.tanh %x : tensor<8x16xf32>
  // CHECK: sgraph.sigmoid %[[X]] : tensor<8x16xf32>
  %sigmoid = sgraph.sigmoid %x : tensor<8x16xf32>
  // CHECK: sgraph.relu %[[X]] : tensor<8x16xf32>
  %relu = sgraph.relu %x : tensor<8x16xf32>
  // CHECK: sgraph.erf %[[X]] : tensor<8x16xf32>
  %erf = sgraph.erf %x : tensor<8x16xf32>
  // CHECK: sgraph.gelu %[[X]] : tensor<8x16xf32>
  %gelu = sgraph.gelu %x : tensor<8x16xf32>
  // CHECK: sgraph.gelu %[[X]] : tensor<8x16xf32>
  %gelu_none = sgraph.gelu %x {approximate = "none"} : tensor<8x16xf32>
  // CHECK: %[[GELU:.+]] = sgraph.gelu %[[X]] {approximate = "tanh"} : tensor<8x16xf32>
  %gelu_tanh = sgraph.gelu %x {approximate = "tanh"} : tensor<8x16xf32>
  // CHECK: sgraph.gelu_grad %[[X]], %[[X]] {approximate = "tanh"} : tensor<8x16xf32>
  %dgelu = sgraph.gelu_grad %x, %x {approximate = "tanh"} : tensor<8x16xf32>
  // CHECK: return %[[GELU]]
  return %gelu_tanh : tensor<8x16xf32>
}

// Tests that the reductions round-trip with and without keepdims (false is
// the default and is elided), argmax drops its axis, and layer_norm prints
// epsilon only when it differs from 1e-5.
// CHECK-LABEL: func.func @reductions_and_normalizations(
// CHECK-SAME: %[[X:[^:]+]]: tensor<8x16x4xf32>, %[[I:[^:]+]]: tensor<8x16xi32>, %[[W:[^:]+]]: tensor<16x4xf32>, %[[B:[^:]+]]: tensor<16x4xf32>, %[[V:[^:]+]]: tensor<4xf32>
func.func @reductions_and_normalizations(%x: tensor<8x16x4xf32>, %i: tensor<8x16xi32>,
                                         %w: tensor<16x4xf32>, %b: tensor<16x4xf32>,
                                         %v: tensor<4xf32>) -> tensor<8x16x4xf32> {
  // CHECK: sgraph.reduce_sum %[[X]] axes = [0, 2] {keepdims = true} : (tensor<8x16x4xf32>) -> tensor<1x16x1xf32>
  %sum_keep = sgraph.reduce_sum %x axes = [0, 2] {keepdims = true} : (tensor<8x16x4xf32>) -> tensor<1x16x1xf32>
  // CHECK: sgraph.reduce_sum %[[I]] axes = [1] : (tensor<8x16xi32>) -> tensor<8xi32>
  %sum = sgraph.reduce_sum %i axes = [1] {keepdims = false} : (tensor<8x16xi32>) -> tensor<8xi32>
  // CHECK: sgraph.reduce_sum %[[I]] axes = [] : (tensor<8x16xi32>) -> tensor<8x16xi32>
  %copy = sgraph.reduce_sum %i axes = [] : (tensor<8x16xi32>) -> tensor<8x16xi32>
  // CHECK: sgraph.reduce_mean %[[X]] axes = [2] : (tensor<8x16x4xf32>) -> tensor<8x16xf32>
  %mean = sgraph.reduce_mean %x axes = [2] : (tensor<8x16x4xf32>) -> tensor<8x16xf32>
  // CHECK: sgraph.reduce_max %[[X]] axes = [0, 1, 2] : (tensor<8x16x4xf32>) -> tensor<f32>
  %max = sgraph.reduce_max %x axes = [0, 1, 2] : (tensor<8x16x4xf32>) -> tensor<f32>
  // CHECK: sgraph.argmax %[[X]] axis = 2 : (tensor<8x16x4xf32>) -> tensor<8x16xi64>
  %argmax = sgraph.argmax %x axis = 2 : (tensor<8x16x4xf32>) -> tensor<8x16xi64>
  // CHECK: sgraph.argmax %[[I]] axis = 0 : (tensor<8x16xi32>) -> tensor<16xi64>
  %argmax_int = sgraph.argmax %i axis = 0 : (tensor<8x16xi32>) -> tensor<16xi64>
  // CHECK: sgraph.softmax %[[X]] axis = 2 : tensor<8x16x4xf32>
  %softmax = sgraph.softmax %x axis = 2 : tensor<8x16x4xf32>
  // CHECK: sgraph.log_softmax %[[X]] axis = 0 : tensor<8x16x4xf32>
  %log_softmax = sgraph.log_softmax %x axis = 0 : tensor<8x16x4xf32>
  // CHECK: sgraph.layer_norm %[[X]], %[[W]], %[[B]] axis = 1 : (tensor<8x16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<8x16x4xf32>
  %ln_default = sgraph.layer_norm %x, %w, %b axis = 1 {epsilon = 1.0e-05 : f64} : (tensor<8x16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<8x16x4xf32>
  // CHECK: %[[LN:.+]] = sgraph.layer_norm %[[X]], %[[V]], %[[V]] axis = 2 {epsilon = 9.9999999999999995E-7 : f64} : (tensor<8x16x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x16x4xf32>
  %ln = sgraph.layer_norm %x, %v, %v axis = 2 {epsilon = 1.0e-06 : f64} : (tensor<8x16x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x16x4xf32>
  // CHECK: return %[[LN]]
  return %ln : tensor<8x16x4xf32>
}

// Tests that matmul round-trips with each transpose flag, that false flags
// are elided, and that batch axes broadcast.
// CHECK-LABEL: func.func @linear_algebra(
// CHECK-SAME: %[[X:[^:]+]]: tensor<8x256x384xf32>, %[[W:[^:]+]]: tensor<1152x384xf32>, %[[A:[^:]+]]: tensor<2x1x4x3xf64>, %[[B:[^:]+]]: tensor<5x3x6xf64>, %[[K:[^:]+]]: tensor<3x4xi64>, %[[N:[^:]+]]: tensor<5x3xi64>
func.func @linear_algebra(%x: tensor<8x256x384xf32>, %w: tensor<1152x384xf32>,
                          %a: tensor<2x1x4x3xf64>, %b: tensor<5x3x6xf64>,
                          %k: tensor<3x4xi64>, %n: tensor<5x3xi64>) -> tensor<8x256x1152xf32> {
  // CHECK: %[[Y:.+]] = sgraph.matmul %[[X]], %[[W]] {transpose_rhs = true} : (tensor<8x256x384xf32>, tensor<1152x384xf32>) -> tensor<8x256x1152xf32>
  %y = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<8x256x384xf32>, tensor<1152x384xf32>) -> tensor<8x256x1152xf32>
  // CHECK: sgraph.matmul %[[A]], %[[B]] : (tensor<2x1x4x3xf64>, tensor<5x3x6xf64>) -> tensor<2x5x4x6xf64>
  %batched = sgraph.matmul %a, %b {transpose_lhs = false, transpose_rhs = false} : (tensor<2x1x4x3xf64>, tensor<5x3x6xf64>) -> tensor<2x5x4x6xf64>
  // CHECK: sgraph.matmul %[[K]], %[[K]] {transpose_lhs = true} : (tensor<3x4xi64>, tensor<3x4xi64>) -> tensor<4x4xi64>
  %gram = sgraph.matmul %k, %k {transpose_lhs = true} : (tensor<3x4xi64>, tensor<3x4xi64>) -> tensor<4x4xi64>
  // CHECK: sgraph.matmul %[[K]], %[[N]] {transpose_lhs = true, transpose_rhs = true} : (tensor<3x4xi64>, tensor<5x3xi64>) -> tensor<4x5xi64>
  %both = sgraph.matmul %k, %n {transpose_lhs = true, transpose_rhs = true} : (tensor<3x4xi64>, tensor<5x3xi64>) -> tensor<4x5xi64>
  // CHECK: return %[[Y]]
  return %y : tensor<8x256x1152xf32>
}

// Tests that a product of bf16 operands can be f32 (f32_result).
// CHECK-LABEL: func.func @f32_result(
// CHECK: sgraph.matmul %{{.*}}, %{{.*}} {f32_result = true, transpose_lhs = true} : (tensor<16x6xbf16>, tensor<16x4xbf16>) -> tensor<6x4xf32>
func.func @f32_result(%dy: tensor<16x6xbf16>, %x: tensor<16x4xbf16>) -> tensor<6x4xf32> {
  %dw = sgraph.matmul %dy, %x {transpose_lhs = true, f32_result = true} : (tensor<16x6xbf16>, tensor<16x4xbf16>) -> tensor<6x4xf32>
  return %dw : tensor<6x4xf32>
}

// Tests that embedding, embedding_grad, softmax_cross_entropy (default and
// explicit attributes, each reduction's result shape) and one_hot round-trip.
// CHECK-LABEL: func.func @embeddings_and_losses(
// CHECK-SAME: %[[WTE:[^:]+]]: tensor<65x384xf32>, %[[IDX:[^:]+]]: tensor<8x256xi64>, %[[G:[^:]+]]: tensor<8x256x384xf32>, %[[LOGITS:[^:]+]]: tensor<8x256x65xf32>, %[[LABELS:[^:]+]]: tensor<8xi32>
func.func @embeddings_and_losses(%wte: tensor<65x384xf32>, %idx: tensor<8x256xi64>,
                                 %g: tensor<8x256x384xf32>, %logits: tensor<8x256x65xf32>,
                                 %labels: tensor<8xi32>) -> tensor<f32> {
  // CHECK: sgraph.embedding %[[WTE]], %[[IDX]] : (tensor<65x384xf32>, tensor<8x256xi64>) -> tensor<8x256x384xf32>
  %tok = sgraph.embedding %wte, %idx : (tensor<65x384xf32>, tensor<8x256xi64>) -> tensor<8x256x384xf32>
  // CHECK: sgraph.embedding_grad %[[G]], %[[IDX]] : (tensor<8x256x384xf32>, tensor<8x256xi64>) -> tensor<65x384xf32>
  %dwte = sgraph.embedding_grad %g, %idx : (tensor<8x256x384xf32>, tensor<8x256xi64>) -> tensor<65x384xf32>
  // CHECK: %[[LOSS:.+]] = sgraph.softmax_cross_entropy %[[LOGITS]], %[[IDX]] : (tensor<8x256x65xf32>, tensor<8x256xi64>) -> tensor<f32>
  %loss = sgraph.softmax_cross_entropy %logits, %idx {ignore_index = -100 : i64, reduction = "mean"} : (tensor<8x256x65xf32>, tensor<8x256xi64>) -> tensor<f32>
  // CHECK: sgraph.softmax_cross_entropy %[[LOGITS]], %[[IDX]] {ignore_index = -1 : i64, reduction = "sum"} : (tensor<8x256x65xf32>, tensor<8x256xi64>) -> tensor<f32>
  %sum = sgraph.softmax_cross_entropy %logits, %idx {ignore_index = -1 : i64, reduction = "sum"} : (tensor<8x256x65xf32>, tensor<8x256xi64>) -> tensor<f32>
  // CHECK: sgraph.softmax_cross_entropy %[[LOGITS]], %[[IDX]] {reduction = "none"} : (tensor<8x256x65xf32>, tensor<8x256xi64>) -> tensor<8x256xf32>
  %each = sgraph.softmax_cross_entropy %logits, %idx {reduction = "none"} : (tensor<8x256x65xf32>, tensor<8x256xi64>) -> tensor<8x256xf32>
  // CHECK: sgraph.one_hot %[[LABELS]] : (tensor<8xi32>) -> tensor<8x10xf32>
  %oh = sgraph.one_hot %labels : (tensor<8xi32>) -> tensor<8x10xf32>
  // CHECK: return %[[LOSS]]
  return %loss : tensor<f32>
}

// Tests that the shape ops round-trip: slice with and without a stride, pad
// with and without interior padding and a non-default value, and casts
// between every kind of element type.
// CHECK-LABEL: func.func @shape_ops(
// CHECK-SAME: %[[X:[^:]+]]: tensor<8x256x384xf32>, %[[Y:[^:]+]]: tensor<2x3xf32>, %[[Z:[^:]+]]: tensor<2x5xf32>, %[[BIAS:[^:]+]]: tensor<384xf32>, %[[I:[^:]+]]: tensor<2x3xi64>
func.func @shape_ops(%x: tensor<8x256x384xf32>, %y: tensor<2x3xf32>, %z: tensor<2x5xf32>,
                     %bias: tensor<384xf32>, %i: tensor<2x3xi64>) -> tensor<2x8xf32> {
  // CHECK: %[[H:.+]] = sgraph.reshape %[[X]] : tensor<8x256x384xf32> to tensor<8x256x6x64xf32>
  %h = sgraph.reshape %x : tensor<8x256x384xf32> to tensor<8x256x6x64xf32>
  // CHECK: sgraph.transpose %[[H]] permutation = [0, 2, 1, 3] : (tensor<8x256x6x64xf32>) -> tensor<8x6x256x64xf32>
  %t = sgraph.transpose %h permutation = [0, 2, 1, 3] : (tensor<8x256x6x64xf32>) -> tensor<8x6x256x64xf32>
  // CHECK: sgraph.broadcast %[[BIAS]] : tensor<384xf32> to tensor<8x256x384xf32>
  %bb = sgraph.broadcast %bias : tensor<384xf32> to tensor<8x256x384xf32>
  // CHECK: sgraph.broadcast %[[Y]] : tensor<2x3xf32> to tensor<4x2x3xf32>
  %by = sgraph.broadcast %y : tensor<2x3xf32> to tensor<4x2x3xf32>
  // CHECK: sgraph.slice %[[X]] {limit = array<i64: 8, 256, 384>, start = array<i64: 0, 0, 0>} : (tensor<8x256x384xf32>) -> tensor<8x256x384xf32>
  %all = sgraph.slice %x {start = array<i64: 0, 0, 0>, limit = array<i64: 8, 256, 384>} : (tensor<8x256x384xf32>) -> tensor<8x256x384xf32>
  // CHECK: sgraph.slice %[[Y]] {limit = array<i64: 2, 3>, start = array<i64: 1, 0>, stride = array<i64: 1, 2>} : (tensor<2x3xf32>) -> tensor<1x2xf32>
  %strided = sgraph.slice %y {start = array<i64: 1, 0>, limit = array<i64: 2, 3>, stride = array<i64: 1, 2>} : (tensor<2x3xf32>) -> tensor<1x2xf32>
  // CHECK: sgraph.pad %[[Y]] {high = array<i64: 0, 2>, low = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x6xf32>
  %p = sgraph.pad %y {low = array<i64: 0, 1>, high = array<i64: 0, 2>, value = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<2x6xf32>
  // CHECK: sgraph.pad %[[Y]] {high = array<i64: 0, 0>, interior = array<i64: 1, 2>, low = array<i64: 1, 0>, value = -1.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<4x7xf32>
  %pi = sgraph.pad %y {low = array<i64: 1, 0>, high = array<i64: 0, 0>, interior = array<i64: 1, 2>, value = -1.0 : f64} : (tensor<2x3xf32>) -> tensor<4x7xf32>
  // CHECK: %[[C:.+]] = sgraph.concat %[[Y]], %[[Z]] axis = 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %c = sgraph.concat %y, %z axis = 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  // CHECK: sgraph.concat %[[Y]] axis = 0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c1 = sgraph.concat %y axis = 0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: sgraph.cast %[[Y]] : tensor<2x3xf32> to tensor<2x3xbf16>
  %bf = sgraph.cast %y : tensor<2x3xf32> to tensor<2x3xbf16>
  // CHECK: sgraph.cast %[[I]] : tensor<2x3xi64> to tensor<2x3xi1>
  %bits = sgraph.cast %i : tensor<2x3xi64> to tensor<2x3xi1>
  // CHECK: sgraph.cast %[[Y]] : tensor<2x3xf32> to tensor<2x3xi32>
  %ints = sgraph.cast %y : tensor<2x3xf32> to tensor<2x3xi32>
  // CHECK: return %[[C]]
  return %c : tensor<2x8xf32>
}

// Tests that dropout round-trips with its rate, seed and step, that
// stop_gradient keeps its operand's type, and train_eval its values'.
// CHECK-LABEL: func.func @randomness_and_gradient_control(
// CHECK-SAME: %[[X:[^:]+]]: tensor<8x256x384xf32>, %[[STEP:[^:]+]]: tensor<i64>, %[[I:[^:]+]]: tensor<4xi32>
func.func @randomness_and_gradient_control(%x: tensor<8x256x384xf32>, %step: tensor<i64>,
                                           %i: tensor<4xi32>) -> tensor<8x256x384xf32> {
  // CHECK: %[[Y:.+]] = sgraph.dropout %[[X]], %[[STEP]] {rate = 1.000000e-01 : f64, seed = 7 : i64} : tensor<8x256x384xf32>, tensor<i64>
  %y = sgraph.dropout %x, %step {rate = 1.000000e-01 : f64, seed = 7 : i64} : tensor<8x256x384xf32>, tensor<i64>
  // CHECK: sgraph.stop_gradient %[[Y]] : tensor<8x256x384xf32>
  %t = sgraph.stop_gradient %y : tensor<8x256x384xf32>
  // CHECK: sgraph.stop_gradient %[[I]] : tensor<4xi32>
  %ti = sgraph.stop_gradient %i : tensor<4xi32>
  // CHECK: sgraph.train_eval %[[Y]], %[[X]] : tensor<8x256x384xf32>
  %m = sgraph.train_eval %y, %x : tensor<8x256x384xf32>
  // CHECK: return %[[Y]]
  return %y : tensor<8x256x384xf32>
}

// Tests that the collectives round-trip: the default reduction "sum" and the
// default root 0 are elided, and all_gather and reduce_scatter scale the
// gathered axis by world_size.
// CHECK-LABEL: func.func @collectives(
// CHECK-SAME: %[[G:[^:]+]]: tensor<64x384xf32>, %[[SHARD:[^:]+]]: tensor<16x384xf32>, %[[I:[^:]+]]: tensor<8xi64>
func.func @collectives(%g: tensor<64x384xf32>, %shard: tensor<16x384xf32>,
                       %i: tensor<8xi64>) -> tensor<64x384xf32> {
  // CHECK: sgraph.all_reduce %[[G]] : tensor<64x384xf32>
  %sum = sgraph.all_reduce %g {reduction = "sum"} : tensor<64x384xf32>
  // CHECK: %[[MEAN:.+]] = sgraph.all_reduce %[[G]] {reduction = "mean"} : tensor<64x384xf32>
  %mean = sgraph.all_reduce %g {reduction = "mean"} : tensor<64x384xf32>
  // CHECK: sgraph.all_reduce %[[I]] {reduction = "max"} : tensor<8xi64>
  %imax = sgraph.all_reduce %i {reduction = "max"} : tensor<8xi64>
  // CHECK: sgraph.all_gather %[[SHARD]] {axis = 0 : i64, world_size = 4 : i64} : (tensor<16x384xf32>) -> tensor<64x384xf32>
  %all = sgraph.all_gather %shard {axis = 0 : i64, world_size = 4 : i64} : (tensor<16x384xf32>) -> tensor<64x384xf32>
  // CHECK: sgraph.reduce_scatter %[[G]] {axis = 1 : i64, world_size = 4 : i64} : (tensor<64x384xf32>) -> tensor<64x96xf32>
  %mine = sgraph.reduce_scatter %g {axis = 1 : i64, world_size = 4 : i64, reduction = "sum"} : (tensor<64x384xf32>) -> tensor<64x96xf32>
  // CHECK: sgraph.reduce_scatter %[[I]] {axis = 0 : i64, reduction = "min", world_size = 2 : i64} : (tensor<8xi64>) -> tensor<4xi64>
  %imin = sgraph.reduce_scatter %i {axis = 0 : i64, world_size = 2 : i64, reduction = "min"} : (tensor<8xi64>) -> tensor<4xi64>
  // CHECK: sgraph.collective_broadcast %[[G]] : tensor<64x384xf32>
  %w0 = sgraph.collective_broadcast %g {root = 0 : i64} : tensor<64x384xf32>
  // CHECK: sgraph.collective_broadcast %[[I]] {root = 3 : i64} : tensor<8xi64>
  %w3 = sgraph.collective_broadcast %i {root = 3 : i64} : tensor<8xi64>
  // CHECK: return %[[MEAN]]
  return %mean : tensor<64x384xf32>
}

// Tests that the optimizer updates, global_norm and lr_schedule round-trip:
// attributes at their defaults are elided, the others are printed.
// CHECK-LABEL: func.func @optimizer_updates(
// CHECK-SAME: %[[W:[^:]+]]: tensor<16x8xf32>, %[[DW:[^:]+]]: tensor<16x8xf32>, %[[M:[^:]+]]: tensor<16x8xf32>, %[[V:[^:]+]]: tensor<16x8xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[STEP:[^:]+]]: tensor<i64>, %[[B:[^:]+]]: tensor<16xbf16>
func.func @optimizer_updates(%w: tensor<16x8xf32>, %dw: tensor<16x8xf32>, %m: tensor<16x8xf32>,
                             %v: tensor<16x8xf32>, %lr: tensor<f32>, %step: tensor<i64>,
                             %b: tensor<16xbf16>) -> tensor<16x8xf32> {
  // CHECK: sgraph.sgd_update %[[W]], %[[DW]], %[[LR]] : tensor<16x8xf32>, tensor<f32>
  %w1 = sgraph.sgd_update %w, %dw, %lr {weight_decay = 0.0 : f64} : tensor<16x8xf32>, tensor<f32>
  // CHECK: sgraph.sgd_update %[[W]], %[[DW]], %[[LR]] {weight_decay = 1.000000e-02 : f64} : tensor<16x8xf32>, tensor<f32>
  %w2 = sgraph.sgd_update %w, %dw, %lr {weight_decay = 1.0e-02 : f64} : tensor<16x8xf32>, tensor<f32>
  // CHECK: %{{.+}}, %{{.+}} = sgraph.momentum_update %[[W]], %[[DW]], %[[M]], %[[LR]], %[[STEP]] {momentum = 9.000000e-01 : f64} : tensor<16x8xf32>, tensor<f32>, tensor<i64>
  %w3, %m3 = sgraph.momentum_update %w, %dw, %m, %lr, %step {momentum = 9.000000e-01 : f64} : tensor<16x8xf32>, tensor<f32>, tensor<i64>
  // CHECK: %{{.+}}, %{{.+}} = sgraph.momentum_update %[[W]], %[[DW]], %[[M]], %[[LR]], %[[STEP]] {dampening = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, weight_decay = 1.000000e-04 : f64} : tensor<16x8xf32>, tensor<f32>, tensor<i64>
  %w4, %m4 = sgraph.momentum_update %w, %dw, %m, %lr, %step {momentum = 0.9 : f64, dampening = 0.1 : f64, weight_decay = 1.0e-4 : f64} : tensor<16x8xf32>, tensor<f32>, tensor<i64>
  // CHECK: %{{.+}}, %{{.+}} = sgraph.momentum_update %[[W]], %[[DW]], %[[M]], %[[LR]], %[[STEP]] {momentum = 9.000000e-01 : f64, nesterov = true} : tensor<16x8xf32>, tensor<f32>, tensor<i64>
  %w5, %m5 = sgraph.momentum_update %w, %dw, %m, %lr, %step {momentum = 0.9 : f64, nesterov = true} : tensor<16x8xf32>, tensor<f32>, tensor<i64>
  // CHECK: %[[ADAM:[^,]+]], %{{.+}}, %{{.+}} = sgraph.adam_update %[[W]], %[[DW]], %[[M]], %[[V]], %[[LR]], %[[STEP]] : tensor<16x8xf32>, tensor<f32>, tensor<i64>
  %w6, %m6, %v6 = sgraph.adam_update %w, %dw, %m, %v, %lr, %step {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.0 : f64, decoupled_weight_decay = false} : tensor<16x8xf32>, tensor<f32>, tensor<i64>
  // CHECK: sgraph.adam_update %[[W]], %[[DW]], %[[M]], %[[V]], %[[LR]], %[[STEP]] {beta2 = 0.94999999999999996 : f64, decoupled_weight_decay = true, weight_decay = 1.000000e-01 : f64} : tensor<16x8xf32>, tensor<f32>, tensor<i64>
  %w7, %m7, %v7 = sgraph.adam_update %w, %dw, %m, %v, %lr, %step {beta2 = 0.95 : f64, decoupled_weight_decay = true, weight_decay = 1.000000e-01 : f64} : tensor<16x8xf32>, tensor<f32>, tensor<i64>
  // CHECK: sgraph.global_norm %[[DW]], %[[B]] : (tensor<16x8xf32>, tensor<16xbf16>) -> tensor<f32>
  %n = sgraph.global_norm %dw, %b : (tensor<16x8xf32>, tensor<16xbf16>) -> tensor<f32>
  // CHECK: sgraph.lr_schedule %[[STEP]] {lr = 1.000000e-03 : f64} : (tensor<i64>) -> tensor<f32>
  %lr0 = sgraph.lr_schedule %step {lr = 1.0e-03 : f64, schedule = "constant"} : (tensor<i64>) -> tensor<f32>
  // CHECK: sgraph.lr_schedule %[[STEP]] {decay_steps = 5000 : i64, lr = 6.000000e-04 : f64, min_lr = 6.000000e-05 : f64, schedule = "warmup_cosine", warmup_steps = 100 : i64} : (tensor<i64>) -> tensor<f32>
  %lr1 = sgraph.lr_schedule %step {schedule = "warmup_cosine", lr = 6.0e-04 : f64, min_lr = 6.0e-05 : f64, warmup_steps = 100 : i64, decay_steps = 5000 : i64} : (tensor<i64>) -> tensor<f32>
  // CHECK: return %[[ADAM]] :
  return %w6 : tensor<16x8xf32>
}

// Tests that lr_schedule with the optional peak_lr operand round-trips: the
// operand follows the step after `peak_lr`, its type is the second input.
// CHECK-LABEL: func.func @lr_schedule_peak_lr(
// CHECK-SAME: %[[STEP:[^:]+]]: tensor<i64>, %[[PEAK:[^:]+]]: tensor<f64>
func.func @lr_schedule_peak_lr(%step: tensor<i64>, %peak: tensor<f64>) -> (tensor<f32>, tensor<f64>) {
  // CHECK: sgraph.lr_schedule %[[STEP]], peak_lr %[[PEAK]] {decay_steps = 5000 : i64, lr = 6.000000e-04 : f64, min_lr = 6.000000e-05 : f64, schedule = "warmup_cosine", warmup_steps = 100 : i64} : (tensor<i64>, tensor<f64>) -> tensor<f32>
  %lr0 = sgraph.lr_schedule %step, peak_lr %peak {schedule = "warmup_cosine", lr = 6.0e-04 : f64, min_lr = 6.0e-05 : f64, warmup_steps = 100 : i64, decay_steps = 5000 : i64} : (tensor<i64>, tensor<f64>) -> tensor<f32>
  // CHECK: sgraph.lr_schedule %[[STEP]], peak_lr %[[PEAK]] {lr = 0.000000e+00 : f64} : (tensor<i64>, tensor<f64>) -> tensor<f64>
  %lr1 = sgraph.lr_schedule %step, peak_lr %peak {lr = 0.0 : f64} : (tensor<i64>, tensor<f64>) -> tensor<f64>
  return %lr0, %lr1 : tensor<f32>, tensor<f64>
}
