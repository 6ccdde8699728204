// RUN: sinter-opt %s -split-input-file -verify-diagnostics

// One case per constraint of docs/dialects/sgraph.md for reductions,
// softmax, layer_norm, matmul, embedding, cross-entropy and one_hot:
// `@<op>_c<N>` breaks constraint C<N> of sgraph.<op> and nothing else (as
// in invalid.mlir).

// Tests that reduce_sum rejects a boolean operand (C1).
func.func @reduce_sum_c1(%x: tensor<2x3xi1>) {
  // expected-error @+1 {{'sgraph.reduce_sum' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x3xi1>'}}
  %0 = sgraph.reduce_sum %x axes = [1] : (tensor<2x3xi1>) -> tensor<2xi1>
  return
}

// -----

// Tests that reduce_sum rejects an axis outside the operand's rank (C2).
func.func @reduce_sum_c2(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{reduction axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{'sgraph.reduce_sum' op failed to infer returned types}}
  %0 = sgraph.reduce_sum %x axes = [2] : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that reduce_sum rejects an axis listed twice (C3).
func.func @reduce_sum_c3(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{reduction axis 1 appears more than once}}
  // expected-error @+1 {{'sgraph.reduce_sum' op failed to infer returned types}}
  %0 = sgraph.reduce_sum %x axes = [1, 1] : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that reduce_sum's result keeps the reduced axes as 1 with keepdims
// (C4).
func.func @reduce_sum_c4(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'sgraph.reduce_sum' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'sgraph.reduce_sum' op failed to infer returned types}}
  %0 = sgraph.reduce_sum %x axes = [1] {keepdims = true} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that reduce_mean rejects an integer operand (reduce_mean is float-
// only) (C1).
func.func @reduce_mean_c1(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{'sgraph.reduce_mean' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2x3xi32>'}}
  %0 = sgraph.reduce_mean %x axes = [1] : (tensor<2x3xi32>) -> tensor<2xi32>
  return
}

// -----

// Tests that reduce_mean rejects an axis outside the operand's rank (C2).
func.func @reduce_mean_c2(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{reduction axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{'sgraph.reduce_mean' op failed to infer returned types}}
  %0 = sgraph.reduce_mean %x axes = [2] : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that reduce_mean rejects an axis listed twice (C3).
func.func @reduce_mean_c3(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{reduction axis 1 appears more than once}}
  // expected-error @+1 {{'sgraph.reduce_mean' op failed to infer returned types}}
  %0 = sgraph.reduce_mean %x axes = [1, 1] : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that reduce_mean's result keeps the reduced axes as 1 with keepdims
// (C4).
func.func @reduce_mean_c4(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'sgraph.reduce_mean' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'sgraph.reduce_mean' op failed to infer returned types}}
  %0 = sgraph.reduce_mean %x axes = [1] {keepdims = true} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that reduce_max rejects a boolean operand (C1).
func.func @reduce_max_c1(%x: tensor<2x3xi1>) {
  // expected-error @+1 {{'sgraph.reduce_max' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x3xi1>'}}
  %0 = sgraph.reduce_max %x axes = [1] : (tensor<2x3xi1>) -> tensor<2xi1>
  return
}

// -----

// Tests that reduce_max rejects an axis outside the operand's rank (C2).
func.func @reduce_max_c2(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{reduction axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{'sgraph.reduce_max' op failed to infer returned types}}
  %0 = sgraph.reduce_max %x axes = [2] : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that reduce_max rejects an axis listed twice (C3).
func.func @reduce_max_c3(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{reduction axis 1 appears more than once}}
  // expected-error @+1 {{'sgraph.reduce_max' op failed to infer returned types}}
  %0 = sgraph.reduce_max %x axes = [1, 1] : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that reduce_max's result keeps the reduced axes as 1 with keepdims
// (C4).
func.func @reduce_max_c4(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'sgraph.reduce_max' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'sgraph.reduce_max' op failed to infer returned types}}
  %0 = sgraph.reduce_max %x axes = [1] {keepdims = true} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that argmax rejects a boolean operand (C1).
func.func @argmax_c1(%x: tensor<2x3xi1>) {
  // expected-error @+1 {{'sgraph.argmax' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x3xi1>'}}
  %0 = sgraph.argmax %x axis = 1 : (tensor<2x3xi1>) -> tensor<2xi64>
  return
}

// -----

// Tests that argmax rejects an axis outside the operand's rank (C2).
func.func @argmax_c2(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis -1 is out of range [0, 2)}}
  // expected-error @+1 {{'sgraph.argmax' op failed to infer returned types}}
  %0 = sgraph.argmax %x axis = -1 : (tensor<2x3xf32>) -> tensor<2xi64>
  return
}

// -----

// Tests that argmax's result drops the reduced axis (C3).
func.func @argmax_c3(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'sgraph.argmax' op inferred type(s) 'tensor<2xi64>' are incompatible with return type(s) of operation 'tensor<3xi64>'}}
  // expected-error @+1 {{'sgraph.argmax' op failed to infer returned types}}
  %0 = sgraph.argmax %x axis = 1 : (tensor<2x3xf32>) -> tensor<3xi64>
  return
}

// -----

// Tests that softmax rejects an integer operand (C1).
func.func @softmax_c1(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{'sgraph.softmax' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2x3xi32>'}}
  %0 = sgraph.softmax %x axis = 1 : tensor<2x3xi32>
  return
}

// -----

// Tests that softmax rejects an axis outside the operand's rank (C2).
func.func @softmax_c2(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range [0, 2)}}
  %0 = sgraph.softmax %x axis = 2 : tensor<2x3xf32>
  return
}

// -----

// Tests that softmax's result must have the operand's type (C3).
func.func @softmax_c3(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'sgraph.softmax' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error @+1 {{'sgraph.softmax' op failed to infer returned types}}
  %0 = "sgraph.softmax"(%x) {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

// Tests that log_softmax rejects an integer operand (C1).
func.func @log_softmax_c1(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{'sgraph.log_softmax' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2x3xi32>'}}
  %0 = sgraph.log_softmax %x axis = 1 : tensor<2x3xi32>
  return
}

// -----

// Tests that log_softmax rejects an axis outside the operand's rank (C2).
func.func @log_softmax_c2(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range [0, 2)}}
  %0 = sgraph.log_softmax %x axis = 2 : tensor<2x3xf32>
  return
}

// -----

// Tests that log_softmax's result must have the operand's type (C3).
func.func @log_softmax_c3(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'sgraph.log_softmax' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error @+1 {{'sgraph.log_softmax' op failed to infer returned types}}
  %0 = "sgraph.log_softmax"(%x) {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

// Tests that layer_norm rejects integer operands (C1).
func.func @layer_norm_c1(%x: tensor<2x3xi32>, %w: tensor<3xi32>) {
  // expected-error @+1 {{'sgraph.layer_norm' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2x3xi32>'}}
  %0 = sgraph.layer_norm %x, %w, %w axis = 1 : (tensor<2x3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  return
}

// -----

// Tests that layer_norm rejects a scale of another element type (C2).
func.func @layer_norm_c2(%x: tensor<2x3xf32>, %w: tensor<3xf16>, %b: tensor<3xf32>) {
  // expected-error @+2 {{scale and bias must have the operand's element type 'f32', got 'f16' and 'f32'}}
  // expected-error @+1 {{'sgraph.layer_norm' op failed to infer returned types}}
  %0 = sgraph.layer_norm %x, %w, %b axis = 1 : (tensor<2x3xf32>, tensor<3xf16>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that layer_norm rejects an axis outside the operand's rank (C3).
func.func @layer_norm_c3(%x: tensor<2x3xf32>, %w: tensor<3xf32>) {
  // expected-error @+2 {{axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{'sgraph.layer_norm' op failed to infer returned types}}
  %0 = sgraph.layer_norm %x, %w, %w axis = 2 : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that layer_norm rejects a scale whose shape is not the normalized
// shape (C4).
func.func @layer_norm_c4(%x: tensor<2x3xf32>, %w: tensor<3xf32>) {
  // expected-error @+2 {{scale and bias must have the normalized shape [2, 3], got 'tensor<3xf32>' and 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.layer_norm' op failed to infer returned types}}
  %0 = sgraph.layer_norm %x, %w, %w axis = 0 : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that layer_norm rejects a zero epsilon (C5).
func.func @layer_norm_c5(%x: tensor<2x3xf32>, %w: tensor<3xf32>) {
  // expected-error @+1 {{'sgraph.layer_norm' op epsilon must be > 0, got 0.000000e+00}}
  %0 = sgraph.layer_norm %x, %w, %w axis = 1 {epsilon = 0.0 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that layer_norm's result must have the operand's type (C6).
func.func @layer_norm_c6(%x: tensor<2x3xf32>, %w: tensor<3xf32>) {
  // expected-error @+2 {{'sgraph.layer_norm' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf16>'}}
  // expected-error @+1 {{'sgraph.layer_norm' op failed to infer returned types}}
  %0 = sgraph.layer_norm %x, %w, %w axis = 1 : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf16>
  return
}

// -----

// Tests that matmul rejects boolean operands (C1).
func.func @matmul_c1(%x: tensor<2x2xi1>) {
  // expected-error @+1 {{'sgraph.matmul' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x2xi1>'}}
  %0 = sgraph.matmul %x, %x : (tensor<2x2xi1>, tensor<2x2xi1>) -> tensor<2x2xi1>
  return
}

// -----

// Tests that matmul rejects operands of different element types (C2).
func.func @matmul_c2(%x: tensor<2x3xf32>, %y: tensor<3x4xbf16>) {
  // expected-error @+2 {{operands have different element types: 'f32' and 'bf16'}}
  // expected-error @+1 {{'sgraph.matmul' op failed to infer returned types}}
  %0 = sgraph.matmul %x, %y : (tensor<2x3xf32>, tensor<3x4xbf16>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that matmul rejects a rank-1 operand (C3).
func.func @matmul_c3(%x: tensor<2x3xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{operands must have rank >= 2, got 'tensor<2x3xf32>' and 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.matmul' op failed to infer returned types}}
  %0 = sgraph.matmul %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that matmul rejects contracting dimensions that differ after the
// transpose flags apply (C4).
func.func @matmul_c4(%x: tensor<2x3xf32>, %y: tensor<4x3xf32>) {
  // expected-error @+2 {{contracting dimensions differ: lhs has 3, rhs has 4}}
  // expected-error @+1 {{'sgraph.matmul' op failed to infer returned types}}
  %0 = sgraph.matmul %x, %y : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that matmul rejects batch dimensions that do not broadcast (C5).
func.func @matmul_c5(%x: tensor<2x2x3xf32>, %y: tensor<5x3x4xf32>) {
  // expected-error @+2 {{batch dimensions do not broadcast: 'tensor<2x2x3xf32>' and 'tensor<5x3x4xf32>'}}
  // expected-error @+1 {{'sgraph.matmul' op failed to infer returned types}}
  %0 = sgraph.matmul %x, %y : (tensor<2x2x3xf32>, tensor<5x3x4xf32>) -> tensor<2x2x4xf32>
  return
}

// -----

// Tests that matmul's result is [batch..., M, N] (C6).
func.func @matmul_c6(%x: tensor<2x3xf32>, %y: tensor<4x3xf32>) {
  // expected-error @+2 {{'sgraph.matmul' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'sgraph.matmul' op failed to infer returned types}}
  %0 = sgraph.matmul %x, %y {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that f32_result needs half operands (C7).
func.func @matmul_c7(%x: tensor<2x3xf32>, %y: tensor<3x4xf32>) {
  // expected-error @+2 {{f32_result needs bf16 or f16 operands, got 'f32'}}
  // expected-error @+1 {{'sgraph.matmul' op failed to infer returned types}}
  %0 = sgraph.matmul %x, %y {f32_result = true} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that embedding rejects float indices (C1).
func.func @embedding_c1(%t: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'sgraph.embedding' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xf32>'}}
  %0 = sgraph.embedding %t, %i : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

// Tests that embedding rejects a table that is not rank 2 (C2).
func.func @embedding_c2(%t: tensor<10xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{table must have rank 2, got 'tensor<10xf32>'}}
  // expected-error @+1 {{'sgraph.embedding' op failed to infer returned types}}
  %0 = sgraph.embedding %t, %i : (tensor<10xf32>, tensor<3xi64>) -> tensor<3xf32>
  return
}

// -----

// Tests that embedding's result is indices.shape + [D] (C3).
func.func @embedding_c3(%t: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{'sgraph.embedding' op inferred type(s) 'tensor<3x4xf32>' are incompatible with return type(s) of operation 'tensor<3x10xf32>'}}
  // expected-error @+1 {{'sgraph.embedding' op failed to infer returned types}}
  %0 = sgraph.embedding %t, %i : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x10xf32>
  return
}

// -----

// Tests that embedding_grad rejects float indices (C1).
func.func @embedding_grad_c1(%g: tensor<3x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'sgraph.embedding_grad' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xf32>'}}
  %0 = sgraph.embedding_grad %g, %i : (tensor<3x4xf32>, tensor<3xf32>) -> tensor<10x4xf32>
  return
}

// -----

// Tests that embedding_grad's result must be a rank-2 table of grad's
// element type (C2).
func.func @embedding_grad_c2(%g: tensor<3x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'sgraph.embedding_grad' op result must be a rank-2 table of 'f32', got 'tensor<10x4xbf16>'}}
  %0 = sgraph.embedding_grad %g, %i : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<10x4xbf16>
  return
}

// -----

// Tests that embedding_grad rejects a grad whose shape is not indices.shape
// + [D] (C3).
func.func @embedding_grad_c3(%g: tensor<3x5xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'sgraph.embedding_grad' op grad 'tensor<3x5xf32>' must have shape indices.shape + [4] = [3, 4]}}
  %0 = sgraph.embedding_grad %g, %i : (tensor<3x5xf32>, tensor<3xi64>) -> tensor<10x4xf32>
  return
}

// -----

// Tests that softmax_cross_entropy rejects float labels (C1).
func.func @softmax_cross_entropy_c1(%l: tensor<8x10xf32>, %y: tensor<8xf32>) {
  // expected-error @+1 {{'sgraph.softmax_cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<8xf32>'}}
  %0 = sgraph.softmax_cross_entropy %l, %y : (tensor<8x10xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

// Tests that softmax_cross_entropy rejects 0-d logits (C2).
func.func @softmax_cross_entropy_c2(%l: tensor<f32>, %y: tensor<i64>) {
  // expected-error @+2 {{logits must have rank >= 1}}
  // expected-error @+1 {{'sgraph.softmax_cross_entropy' op failed to infer returned types}}
  %0 = sgraph.softmax_cross_entropy %l, %y : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

// Tests that softmax_cross_entropy rejects labels that are not logits' shape
// without the class axis (C3).
func.func @softmax_cross_entropy_c3(%l: tensor<8x10xf32>, %y: tensor<10xi64>) {
  // expected-error @+2 {{labels 'tensor<10xi64>' must have the shape of logits 'tensor<8x10xf32>' without its last dimension}}
  // expected-error @+1 {{'sgraph.softmax_cross_entropy' op failed to infer returned types}}
  %0 = sgraph.softmax_cross_entropy %l, %y : (tensor<8x10xf32>, tensor<10xi64>) -> tensor<f32>
  return
}

// -----

// Tests that softmax_cross_entropy rejects an unknown reduction (C4).
func.func @softmax_cross_entropy_c4(%l: tensor<8x10xf32>, %y: tensor<8xi64>) {
  // expected-error @+2 {{reduction 'avg' is not one of mean, sum, none}}
  // expected-error @+1 {{'sgraph.softmax_cross_entropy' op failed to infer returned types}}
  %0 = sgraph.softmax_cross_entropy %l, %y {reduction = "avg"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

// Tests that softmax_cross_entropy's result is per position with reduction
// none (C5).
func.func @softmax_cross_entropy_c5(%l: tensor<8x10xf32>, %y: tensor<8xi64>) {
  // expected-error @+2 {{'sgraph.softmax_cross_entropy' op inferred type(s) 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{'sgraph.softmax_cross_entropy' op failed to infer returned types}}
  %0 = sgraph.softmax_cross_entropy %l, %y {reduction = "none"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

// Tests that softmax_cross_entropy's count is 0-d (C6).
func.func @softmax_cross_entropy_c6_rank(%l: tensor<8x10xf32>, %y: tensor<8xi64>, %n: tensor<1xf64>) {
  // expected-error @+2 {{count must be a 0-d float tensor, got 'tensor<1xf64>'}}
  // expected-error @+1 {{'sgraph.softmax_cross_entropy' op failed to infer returned types}}
  %0 = sgraph.softmax_cross_entropy %l, %y count %n : (tensor<8x10xf32>, tensor<8xi64>, tensor<1xf64>) -> tensor<f32>
  return
}

// -----

// Tests that softmax_cross_entropy's count divides a mean only (C6).
func.func @softmax_cross_entropy_c6_sum(%l: tensor<8x10xf32>, %y: tensor<8xi64>, %n: tensor<f64>) {
  // expected-error @+2 {{count divides a 'mean' reduction, not 'sum'}}
  // expected-error @+1 {{'sgraph.softmax_cross_entropy' op failed to infer returned types}}
  %0 = sgraph.softmax_cross_entropy %l, %y count %n {reduction = "sum"} : (tensor<8x10xf32>, tensor<8xi64>, tensor<f64>) -> tensor<f32>
  return
}

// -----

// Tests that one_hot rejects float labels (C1).
func.func @one_hot_c1(%y: tensor<8xf32>) {
  // expected-error @+1 {{'sgraph.one_hot' op operand #0 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<8xf32>'}}
  %0 = sgraph.one_hot %y : (tensor<8xf32>) -> tensor<8x10xf32>
  return
}

// -----

// Tests that one_hot's result must be labels.shape + [C] (C2).
func.func @one_hot_c2(%y: tensor<8xi64>) {
  // expected-error @+1 {{'sgraph.one_hot' op result 'tensor<10x8xf32>' must have shape labels.shape + [C] with C >= 1 for labels 'tensor<8xi64>'}}
  %0 = sgraph.one_hot %y : (tensor<8xi64>) -> tensor<10x8xf32>
  return
}
