// RUN: sinter-opt %s -split-input-file -verify-diagnostics

// One case per constraint of docs/dialects/sgraph.md: `@<op>_c<N>` breaks
// constraint C<N> of sgraph.<op> and nothing else. C1 is always the ODS type
// constraint; the ops with AllTypesMatch have a second C1 case for it.
// This file has the constants and elementwise ops; invalid-reductions.mlir,
// invalid-layout.mlir and invalid-training.mlir the rest.

// Tests that constant rejects a value whose element type sgraph does not
// support (C1).
func.func @constant_c1() {
  // expected-error @+1 {{'sgraph.constant' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi8>'}}
  %0 = sgraph.constant dense<1> : tensor<2xi8>
  return
}

// -----

// Tests that constant's result must have the type of its value (C2).
func.func @constant_c2() {
  // expected-error @+2 {{'sgraph.constant' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.constant' op failed to infer returned types}}
  %0 = "sgraph.constant"() {value = dense<0.0> : tensor<2xf32>} : () -> tensor<3xf32>
  return
}

// -----

// Tests that iota rejects a boolean result (C1).
func.func @iota_c1() {
  // expected-error @+1 {{'sgraph.iota' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = sgraph.iota axis = 0 : tensor<4xi1>
  return
}

// -----

// Tests that iota rejects a 0-d result (C2).
func.func @iota_c2() {
  // expected-error @+1 {{'sgraph.iota' op result must have rank >= 1, got 'tensor<i64>'}}
  %0 = sgraph.iota axis = 0 : tensor<i64>
  return
}

// -----

// Tests that iota rejects an axis outside the result's rank (C3).
func.func @iota_c3() {
  // expected-error @+1 {{'sgraph.iota' op axis -1 is out of range [0, 2)}}
  %0 = sgraph.iota axis = -1 : tensor<4x4xi64>
  return
}

// -----

// Tests that causal_mask rejects a non-boolean result (C1).
func.func @causal_mask_c1() {
  // expected-error @+1 {{'sgraph.causal_mask' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4x4xf32>'}}
  %0 = sgraph.causal_mask : tensor<4x4xf32>
  return
}

// -----

// Tests that causal_mask rejects a result that is not rank 2 (C2).
func.func @causal_mask_c2() {
  // expected-error @+1 {{'sgraph.causal_mask' op result must have rank 2, got 'tensor<2x4x4xi1>'}}
  %0 = sgraph.causal_mask : tensor<2x4x4xi1>
  return
}

// -----

// Tests that causal_mask rejects a non-square result (C3).
func.func @causal_mask_c3() {
  // expected-error @+1 {{'sgraph.causal_mask' op result must be square, got 'tensor<4x8xi1>'}}
  %0 = sgraph.causal_mask : tensor<4x8xi1>
  return
}

// -----

// Tests that add rejects boolean operands (C1).
func.func @add_c1(%x: tensor<2xi1>) {
  // expected-error @+1 {{'sgraph.add' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi1>'}}
  %0 = sgraph.add %x, %x : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  return
}

// -----

// Tests that add rejects operands of different element types (C2).
func.func @add_c2(%x: tensor<2xf32>, %y: tensor<2xf16>) {
  // expected-error @+2 {{operands have different element types: 'f32' and 'f16'}}
  // expected-error @+1 {{'sgraph.add' op failed to infer returned types}}
  %0 = sgraph.add %x, %y : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return
}

// -----

// Tests that add rejects operand shapes that do not broadcast (C3).
func.func @add_c3(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes do not broadcast: 'tensor<4x3xf32>' and 'tensor<4xf32>'}}
  // expected-error @+1 {{'sgraph.add' op failed to infer returned types}}
  %0 = sgraph.add %x, %y : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that add's result must have the broadcast shape (C4).
func.func @add_c4(%x: tensor<4x1xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{'sgraph.add' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'sgraph.add' op failed to infer returned types}}
  %0 = sgraph.add %x, %y : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  return
}

// -----

// Tests that sub rejects boolean operands (C1).
func.func @sub_c1(%x: tensor<2xi1>) {
  // expected-error @+1 {{'sgraph.sub' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi1>'}}
  %0 = sgraph.sub %x, %x : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  return
}

// -----

// Tests that sub rejects operands of different element types (C2).
func.func @sub_c2(%x: tensor<2xf32>, %y: tensor<2xf16>) {
  // expected-error @+2 {{operands have different element types: 'f32' and 'f16'}}
  // expected-error @+1 {{'sgraph.sub' op failed to infer returned types}}
  %0 = sgraph.sub %x, %y : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return
}

// -----

// Tests that sub rejects operand shapes that do not broadcast (C3).
func.func @sub_c3(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes do not broadcast: 'tensor<4x3xf32>' and 'tensor<4xf32>'}}
  // expected-error @+1 {{'sgraph.sub' op failed to infer returned types}}
  %0 = sgraph.sub %x, %y : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that sub's result must have the broadcast shape (C4).
func.func @sub_c4(%x: tensor<4x1xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{'sgraph.sub' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'sgraph.sub' op failed to infer returned types}}
  %0 = sgraph.sub %x, %y : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  return
}

// -----

// Tests that mul rejects boolean operands (C1).
func.func @mul_c1(%x: tensor<2xi1>) {
  // expected-error @+1 {{'sgraph.mul' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi1>'}}
  %0 = sgraph.mul %x, %x : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  return
}

// -----

// Tests that mul rejects operands of different element types (C2).
func.func @mul_c2(%x: tensor<2xf32>, %y: tensor<2xf16>) {
  // expected-error @+2 {{operands have different element types: 'f32' and 'f16'}}
  // expected-error @+1 {{'sgraph.mul' op failed to infer returned types}}
  %0 = sgraph.mul %x, %y : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return
}

// -----

// Tests that mul rejects operand shapes that do not broadcast (C3).
func.func @mul_c3(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes do not broadcast: 'tensor<4x3xf32>' and 'tensor<4xf32>'}}
  // expected-error @+1 {{'sgraph.mul' op failed to infer returned types}}
  %0 = sgraph.mul %x, %y : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that mul's result must have the broadcast shape (C4).
func.func @mul_c4(%x: tensor<4x1xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{'sgraph.mul' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'sgraph.mul' op failed to infer returned types}}
  %0 = sgraph.mul %x, %y : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  return
}

// -----

// Tests that div rejects boolean operands (C1).
func.func @div_c1(%x: tensor<2xi1>) {
  // expected-error @+1 {{'sgraph.div' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi1>'}}
  %0 = sgraph.div %x, %x : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  return
}

// -----

// Tests that div rejects operands of different element types (C2).
func.func @div_c2(%x: tensor<2xf32>, %y: tensor<2xf16>) {
  // expected-error @+2 {{operands have different element types: 'f32' and 'f16'}}
  // expected-error @+1 {{'sgraph.div' op failed to infer returned types}}
  %0 = sgraph.div %x, %y : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return
}

// -----

// Tests that div rejects operand shapes that do not broadcast (C3).
func.func @div_c3(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes do not broadcast: 'tensor<4x3xf32>' and 'tensor<4xf32>'}}
  // expected-error @+1 {{'sgraph.div' op failed to infer returned types}}
  %0 = sgraph.div %x, %y : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that div's result must have the broadcast shape (C4).
func.func @div_c4(%x: tensor<4x1xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{'sgraph.div' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'sgraph.div' op failed to infer returned types}}
  %0 = sgraph.div %x, %y : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  return
}

// -----

// Tests that pow rejects integer operands (pow is float-only) (C1).
func.func @pow_c1(%x: tensor<2xi32>) {
  // expected-error @+1 {{'sgraph.pow' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = sgraph.pow %x, %x : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return
}

// -----

// Tests that pow rejects operands of different element types (C2).
func.func @pow_c2(%x: tensor<2xf32>, %y: tensor<2xf16>) {
  // expected-error @+2 {{operands have different element types: 'f32' and 'f16'}}
  // expected-error @+1 {{'sgraph.pow' op failed to infer returned types}}
  %0 = sgraph.pow %x, %y : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return
}

// -----

// Tests that pow rejects operand shapes that do not broadcast (C3).
func.func @pow_c3(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes do not broadcast: 'tensor<4x3xf32>' and 'tensor<4xf32>'}}
  // expected-error @+1 {{'sgraph.pow' op failed to infer returned types}}
  %0 = sgraph.pow %x, %y : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that pow's result must have the broadcast shape (C4).
func.func @pow_c4(%x: tensor<4x1xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{'sgraph.pow' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'sgraph.pow' op failed to infer returned types}}
  %0 = sgraph.pow %x, %y : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  return
}

// -----

// Tests that maximum rejects boolean operands (C1).
func.func @maximum_c1(%x: tensor<2xi1>) {
  // expected-error @+1 {{'sgraph.maximum' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi1>'}}
  %0 = sgraph.maximum %x, %x : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  return
}

// -----

// Tests that maximum rejects operands of different element types (C2).
func.func @maximum_c2(%x: tensor<2xf32>, %y: tensor<2xf16>) {
  // expected-error @+2 {{operands have different element types: 'f32' and 'f16'}}
  // expected-error @+1 {{'sgraph.maximum' op failed to infer returned types}}
  %0 = sgraph.maximum %x, %y : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return
}

// -----

// Tests that maximum rejects operand shapes that do not broadcast (C3).
func.func @maximum_c3(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes do not broadcast: 'tensor<4x3xf32>' and 'tensor<4xf32>'}}
  // expected-error @+1 {{'sgraph.maximum' op failed to infer returned types}}
  %0 = sgraph.maximum %x, %y : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that maximum's result must have the broadcast shape (C4).
func.func @maximum_c4(%x: tensor<4x1xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{'sgraph.maximum' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'sgraph.maximum' op failed to infer returned types}}
  %0 = sgraph.maximum %x, %y : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  return
}

// -----

// Tests that minimum rejects boolean operands (C1).
func.func @minimum_c1(%x: tensor<2xi1>) {
  // expected-error @+1 {{'sgraph.minimum' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi1>'}}
  %0 = sgraph.minimum %x, %x : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  return
}

// -----

// Tests that minimum rejects operands of different element types (C2).
func.func @minimum_c2(%x: tensor<2xf32>, %y: tensor<2xf16>) {
  // expected-error @+2 {{operands have different element types: 'f32' and 'f16'}}
  // expected-error @+1 {{'sgraph.minimum' op failed to infer returned types}}
  %0 = sgraph.minimum %x, %y : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return
}

// -----

// Tests that minimum rejects operand shapes that do not broadcast (C3).
func.func @minimum_c3(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes do not broadcast: 'tensor<4x3xf32>' and 'tensor<4xf32>'}}
  // expected-error @+1 {{'sgraph.minimum' op failed to infer returned types}}
  %0 = sgraph.minimum %x, %y : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that minimum's result must have the broadcast shape (C4).
func.func @minimum_c4(%x: tensor<4x1xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{'sgraph.minimum' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'sgraph.minimum' op failed to infer returned types}}
  %0 = sgraph.minimum %x, %y : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  return
}

// -----

// Tests that compare rejects operands whose element type sgraph does not
// support (C1).
func.func @compare_c1(%x: tensor<2xi8>) {
  // expected-error @+1 {{'sgraph.compare' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi8>'}}
  %0 = sgraph.compare %x, %x {direction = "eq"} : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi1>
  return
}

// -----

// Tests that compare rejects operands of different element types (C2).
func.func @compare_c2(%x: tensor<2xf32>, %y: tensor<2xi32>) {
  // expected-error @+2 {{operands have different element types: 'f32' and 'i32'}}
  // expected-error @+1 {{'sgraph.compare' op failed to infer returned types}}
  %0 = sgraph.compare %x, %y {direction = "eq"} : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xi1>
  return
}

// -----

// Tests that compare rejects operand shapes that do not broadcast (C3).
func.func @compare_c3(%x: tensor<2xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{operand shapes do not broadcast: 'tensor<2xf32>' and 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.compare' op failed to infer returned types}}
  %0 = sgraph.compare %x, %y {direction = "eq"} : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xi1>
  return
}

// -----

// Tests that compare rejects an unknown direction (C4).
func.func @compare_c4(%x: tensor<2xf32>) {
  // expected-error @+2 {{direction 'lte' is not one of eq, ne, lt, le, gt, ge}}
  // expected-error @+1 {{'sgraph.compare' op failed to infer returned types}}
  %0 = sgraph.compare %x, %x {direction = "lte"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  return
}

// -----

// Tests that compare's result must be an i1 tensor of the broadcast shape
// (C5).
func.func @compare_c5(%x: tensor<2x1xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{'sgraph.compare' op inferred type(s) 'tensor<2x3xi1>' are incompatible with return type(s) of operation 'tensor<2x1xi1>'}}
  // expected-error @+1 {{'sgraph.compare' op failed to infer returned types}}
  %0 = sgraph.compare %x, %y {direction = "eq"} : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x1xi1>
  return
}

// -----

// Tests that select rejects a non-boolean condition (C1).
func.func @select_c1(%c: tensor<2xf32>, %x: tensor<2xf32>) {
  // expected-error @+1 {{'sgraph.select' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<2xf32>'}}
  %0 = sgraph.select %c, %x, %x : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that select rejects branches of different element types (C2).
func.func @select_c2(%c: tensor<2xi1>, %x: tensor<2xf32>, %y: tensor<2xf16>) {
  // expected-error @+2 {{on_true and on_false have different element types: 'f32' and 'f16'}}
  // expected-error @+1 {{'sgraph.select' op failed to infer returned types}}
  %0 = sgraph.select %c, %x, %y : (tensor<2xi1>, tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return
}

// -----

// Tests that select rejects a condition whose shape does not broadcast with
// the branches (C3).
func.func @select_c3(%c: tensor<3xi1>, %x: tensor<2xf32>) {
  // expected-error @+2 {{operand shapes do not broadcast: 'tensor<3xi1>', 'tensor<2xf32>' and 'tensor<2xf32>'}}
  // expected-error @+1 {{'sgraph.select' op failed to infer returned types}}
  %0 = sgraph.select %c, %x, %x : (tensor<3xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that select's result must have the broadcast shape of all three
// operands (C4).
func.func @select_c4(%c: tensor<4x1xi1>, %x: tensor<3xf32>, %y: tensor<f32>) {
  // expected-error @+2 {{'sgraph.select' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.select' op failed to infer returned types}}
  %0 = sgraph.select %c, %x, %y : (tensor<4x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return
}

// -----

// Tests that neg rejects a boolean operand (C1).
func.func @neg_c1(%x: tensor<2xi1>) {
  // expected-error @+1 {{'sgraph.neg' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi1>'}}
  %0 = sgraph.neg %x : tensor<2xi1>
  return
}

// -----

// Tests that neg's result must have the operand's type (C2).
func.func @neg_c2(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.neg' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.neg' op failed to infer returned types}}
  %0 = "sgraph.neg"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

// Tests that abs rejects a boolean operand (C1).
func.func @abs_c1(%x: tensor<2xi1>) {
  // expected-error @+1 {{'sgraph.abs' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi1>'}}
  %0 = sgraph.abs %x : tensor<2xi1>
  return
}

// -----

// Tests that abs's result must have the operand's type (C2).
func.func @abs_c2(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.abs' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.abs' op failed to infer returned types}}
  %0 = "sgraph.abs"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

// Tests that exp rejects an integer operand (C1).
func.func @exp_c1(%x: tensor<2xi32>) {
  // expected-error @+1 {{'sgraph.exp' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = sgraph.exp %x : tensor<2xi32>
  return
}

// -----

// Tests that exp's result must have the operand's type (C2).
func.func @exp_c2(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.exp' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.exp' op failed to infer returned types}}
  %0 = "sgraph.exp"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

// Tests that log rejects an integer operand (C1).
func.func @log_c1(%x: tensor<2xi32>) {
  // expected-error @+1 {{'sgraph.log' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = sgraph.log %x : tensor<2xi32>
  return
}

// -----

// Tests that log's result must have the operand's type (C2).
func.func @log_c2(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.log' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.log' op failed to infer returned types}}
  %0 = "sgraph.log"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

// Tests that sqrt rejects an integer operand (C1).
func.func @sqrt_c1(%x: tensor<2xi32>) {
  // expected-error @+1 {{'sgraph.sqrt' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = sgraph.sqrt %x : tensor<2xi32>
  return
}

// -----

// Tests that sqrt's result must have the operand's type (C2).
func.func @sqrt_c2(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.sqrt' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.sqrt' op failed to infer returned types}}
  %0 = "sgraph.sqrt"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

// Tests that rsqrt rejects an integer operand (C1).
func.func @rsqrt_c1(%x: tensor<2xi32>) {
  // expected-error @+1 {{'sgraph.rsqrt' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = sgraph.rsqrt %x : tensor<2xi32>
  return
}

// -----

// Tests that rsqrt's result must have the operand's type (C2).
func.func @rsqrt_c2(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.rsqrt' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.rsqrt' op failed to infer returned types}}
  %0 = "sgraph.rsqrt"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

// Tests that tanh rejects an integer operand (C1).
func.func @tanh_c1(%x: tensor<2xi32>) {
  // expected-error @+1 {{'sgraph.tanh' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = sgraph.tanh %x : tensor<2xi32>
  return
}

// -----

// Tests that tanh's result must have the operand's type (C2).
func.func @tanh_c2(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.tanh' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.tanh' op failed to infer returned types}}
  %0 = "sgraph.tanh"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

// Tests that sigmoid rejects an integer operand (C1).
func.func @sigmoid_c1(%x: tensor<2xi32>) {
  // expected-error @+1 {{'sgraph.sigmoid' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = sgraph.sigmoid %x : tensor<2xi32>
  return
}

// -----

// Tests that sigmoid's result must have the operand's type (C2).
func.func @sigmoid_c2(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.sigmoid' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.sigmoid' op failed to infer returned types}}
  %0 = "sgraph.sigmoid"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

// Tests that relu rejects an integer operand (C1).
func.func @relu_c1(%x: tensor<2xi32>) {
  // expected-error @+1 {{'sgraph.relu' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = sgraph.relu %x : tensor<2xi32>
  return
}

// -----

// Tests that relu's result must have the operand's type (C2).
func.func @relu_c2(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.relu' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.relu' op failed to infer returned types}}
  %0 = "sgraph.relu"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

// Tests that erf rejects an integer operand (C1).
func.func @erf_c1(%x: tensor<2xi32>) {
  // expected-error @+1 {{'sgraph.erf' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = sgraph.erf %x : tensor<2xi32>
  return
}

// -----

// Tests that erf's result must have the operand's type (C2).
func.func @erf_c2(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.erf' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'sgraph.erf' op failed to infer returned types}}
  %0 = "sgraph.erf"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

// Tests that gelu rejects an integer operand (C1).
func.func @gelu_c1(%x: tensor<2xi32>) {
  // expected-error @+1 {{'sgraph.gelu' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = sgraph.gelu %x : tensor<2xi32>
  return
}

// -----

// Tests that gelu rejects an unknown approximation (C2).
func.func @gelu_c2(%x: tensor<2xf32>) {
  // expected-error @+1 {{'sgraph.gelu' op approximate 'sigmoid' is not one of none, tanh}}
  %0 = sgraph.gelu %x {approximate = "sigmoid"} : tensor<2xf32>
  return
}

// -----

// Tests that gelu's result must have the operand's type (C3).
func.func @gelu_c3(%x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.gelu' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<2xf16>'}}
  // expected-error @+1 {{'sgraph.gelu' op failed to infer returned types}}
  %0 = "sgraph.gelu"(%x) : (tensor<2xf32>) -> tensor<2xf16>
  return
}

// -----

// Tests that gelu_grad rejects an unknown approximation (C2).
func.func @gelu_grad_c2(%g: tensor<2xf32>, %x: tensor<2xf32>) {
  // expected-error @+1 {{'sgraph.gelu_grad' op approximate 'sigmoid' is not one of none, tanh}}
  %0 = sgraph.gelu_grad %g, %x {approximate = "sigmoid"} : tensor<2xf32>
  return
}

// -----

// Tests that gelu_grad's grad must have the operand's type (C3).
func.func @gelu_grad_c3(%g: tensor<3xf32>, %x: tensor<2xf32>) {
  // expected-error @+1 {{'sgraph.gelu_grad' op failed to verify that all of {grad, operand} have same type}}
  %0 = "sgraph.gelu_grad"(%g, %x) : (tensor<3xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that gelu_grad's result must have the operand's type (C4).
func.func @gelu_grad_c4(%g: tensor<2xf32>, %x: tensor<2xf32>) {
  // expected-error @+2 {{'sgraph.gelu_grad' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<2xf16>'}}
  // expected-error @+1 {{'sgraph.gelu_grad' op failed to infer returned types}}
  %0 = "sgraph.gelu_grad"(%g, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf16>
  return
}
