// RUN: sinter-opt %s -split-input-file -verify-diagnostics

// One case per constraint of docs/dialects/sgraph.md: `@<op>_c<N>` breaks
// constraint C<N> of sgraph.<op> and nothing else. C1 is always the ODS type
// constraint; the ops with AllTypesMatch have a second C1 case for it.

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

// -----

// Tests that reshape rejects an element type sgraph does not support (C1).
func.func @reshape_c1(%x: tensor<2x3xi8>) {
  // expected-error @+1 {{'sgraph.reshape' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x3xi8>'}}
  %0 = sgraph.reshape %x : tensor<2x3xi8> to tensor<6xi8>
  return
}

// -----

// Tests that reshape rejects a change of element type (C2).
func.func @reshape_c2(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'sgraph.reshape' op element type changes from 'f32' to 'f16'}}
  %0 = sgraph.reshape %x : tensor<2x3xf32> to tensor<6xf16>
  return
}

// -----

// Tests that reshape rejects a change of element count (C3).
func.func @reshape_c3(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'sgraph.reshape' op operand 'tensor<2x3xf32>' has 6 elements but the result 'tensor<5xf32>' has 5}}
  %0 = sgraph.reshape %x : tensor<2x3xf32> to tensor<5xf32>
  return
}

// -----

// Tests that transpose rejects an element type sgraph does not support (C1).
func.func @transpose_c1(%x: tensor<2x3xi8>) {
  // expected-error @+1 {{'sgraph.transpose' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x3xi8>'}}
  %0 = sgraph.transpose %x permutation = [1, 0] : (tensor<2x3xi8>) -> tensor<3x2xi8>
  return
}

// -----

// Tests that transpose rejects a permutation with the wrong number of
// entries (C2).
func.func @transpose_c2(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{permutation has 3 entries, expected the operand rank 2}}
  // expected-error @+1 {{'sgraph.transpose' op failed to infer returned types}}
  %0 = sgraph.transpose %x permutation = [1, 0, 2] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

// Tests that transpose rejects a permutation that repeats an axis (C3).
func.func @transpose_c3(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{[1, 1] is not a permutation of [0, 2)}}
  // expected-error @+1 {{'sgraph.transpose' op failed to infer returned types}}
  %0 = sgraph.transpose %x permutation = [1, 1] : (tensor<2x3xf32>) -> tensor<3x3xf32>
  return
}

// -----

// Tests that transpose's result is the permuted operand shape (C4).
func.func @transpose_c4(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'sgraph.transpose' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error @+1 {{'sgraph.transpose' op failed to infer returned types}}
  %0 = sgraph.transpose %x permutation = [0, 1] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

// Tests that broadcast rejects an element type sgraph does not support (C1).
func.func @broadcast_c1(%x: tensor<3xi8>) {
  // expected-error @+1 {{'sgraph.broadcast' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xi8>'}}
  %0 = sgraph.broadcast %x : tensor<3xi8> to tensor<2x3xi8>
  return
}

// -----

// Tests that broadcast rejects a change of element type (C2).
func.func @broadcast_c2(%x: tensor<3xf32>) {
  // expected-error @+1 {{'sgraph.broadcast' op element type changes from 'f32' to 'f64'}}
  %0 = sgraph.broadcast %x : tensor<3xf32> to tensor<2x3xf64>
  return
}

// -----

// Tests that broadcast rejects a result of lower rank than the operand (C3).
func.func @broadcast_c3(%x: tensor<1x3xf32>) {
  // expected-error @+1 {{'sgraph.broadcast' op operand 'tensor<1x3xf32>' has a higher rank than the result 'tensor<3xf32>'}}
  %0 = sgraph.broadcast %x : tensor<1x3xf32> to tensor<3xf32>
  return
}

// -----

// Tests that broadcast rejects an operand dimension that is neither 1 nor
// the result's (C4).
func.func @broadcast_c4(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'sgraph.broadcast' op operand 'tensor<2x3xf32>' does not broadcast to 'tensor<4x3xf32>' (axis 0 has size 2)}}
  %0 = sgraph.broadcast %x : tensor<2x3xf32> to tensor<4x3xf32>
  return
}

// -----

// Tests that slice rejects an element type sgraph does not support (C1).
func.func @slice_c1(%x: tensor<4xi8>) {
  // expected-error @+1 {{'sgraph.slice' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = sgraph.slice %x {start = array<i64: 0>, limit = array<i64: 2>} : (tensor<4xi8>) -> tensor<2xi8>
  return
}

// -----

// Tests that slice rejects a stride with the wrong number of entries (C2).
func.func @slice_c2(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{start, limit and stride must have one entry per axis (2), got 2, 2 and 1}}
  // expected-error @+1 {{'sgraph.slice' op failed to infer returned types}}
  %0 = sgraph.slice %x {start = array<i64: 0, 0>, limit = array<i64: 4, 6>, stride = array<i64: 2>} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  return
}

// -----

// Tests that slice rejects a limit past the operand's dimension (C3).
func.func @slice_c3(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{axis 1: need 0 <= start (2) <= limit (7) <= dimension (6)}}
  // expected-error @+1 {{'sgraph.slice' op failed to infer returned types}}
  %0 = sgraph.slice %x {start = array<i64: 0, 2>, limit = array<i64: 4, 7>} : (tensor<4x6xf32>) -> tensor<4x5xf32>
  return
}

// -----

// Tests that slice rejects a zero stride (C4).
func.func @slice_c4(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{axis 1: stride 0 must be >= 1}}
  // expected-error @+1 {{'sgraph.slice' op failed to infer returned types}}
  %0 = sgraph.slice %x {start = array<i64: 0, 0>, limit = array<i64: 4, 6>, stride = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

// Tests that slice's result dimension is ceil((limit - start) / stride)
// (C5).
func.func @slice_c5(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{'sgraph.slice' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x2xf32>'}}
  // expected-error @+1 {{'sgraph.slice' op failed to infer returned types}}
  %0 = sgraph.slice %x {start = array<i64: 0, 1>, limit = array<i64: 4, 6>, stride = array<i64: 1, 2>} : (tensor<4x6xf32>) -> tensor<4x2xf32>
  return
}

// -----

// Tests that pad rejects an element type sgraph does not support (C1).
func.func @pad_c1(%x: tensor<4xi8>) {
  // expected-error @+1 {{'sgraph.pad' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = sgraph.pad %x {low = array<i64: 1>, high = array<i64: 1>} : (tensor<4xi8>) -> tensor<6xi8>
  return
}

// -----

// Tests that pad rejects interior padding with the wrong number of entries
// (C2).
func.func @pad_c2(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{low, high and interior must have one entry per axis (2), got 2, 2 and 1}}
  // expected-error @+1 {{'sgraph.pad' op failed to infer returned types}}
  %0 = sgraph.pad %x {low = array<i64: 0, 0>, high = array<i64: 0, 0>, interior = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<3x3xf32>
  return
}

// -----

// Tests that pad rejects negative padding (C3).
func.func @pad_c3(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 1: padding amounts must be >= 0, got low -1, high 0, interior 0}}
  // expected-error @+1 {{'sgraph.pad' op failed to infer returned types}}
  %0 = sgraph.pad %x {low = array<i64: 0, -1>, high = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

// Tests that pad's result dimension is low + high + d + (d - 1) * interior
// (C4).
func.func @pad_c4(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'sgraph.pad' op inferred type(s) 'tensor<2x7xf32>' are incompatible with return type(s) of operation 'tensor<2x5xf32>'}}
  // expected-error @+1 {{'sgraph.pad' op failed to infer returned types}}
  %0 = sgraph.pad %x {low = array<i64: 0, 1>, high = array<i64: 0, 1>, interior = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  return
}

// -----

// Tests that concat rejects an element type sgraph does not support (C1).
func.func @concat_c1(%x: tensor<2xi8>) {
  // expected-error @+1 {{'sgraph.concat' op operand #0 must be variadic of statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi8>'}}
  %0 = sgraph.concat %x, %x axis = 0 : (tensor<2xi8>, tensor<2xi8>) -> tensor<4xi8>
  return
}

// -----

// Tests that concat rejects an empty operand list (C2).
func.func @concat_c2() {
  // expected-error @+2 {{needs at least one operand}}
  // expected-error @+1 {{'sgraph.concat' op failed to infer returned types}}
  %0 = sgraph.concat axis = 0 : () -> tensor<0xf32>
  return
}

// -----

// Tests that concat rejects operands of different ranks (C3).
func.func @concat_c3(%x: tensor<2x3xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{operand #1 'tensor<3xf32>' differs in element type or rank from operand #0 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'sgraph.concat' op failed to infer returned types}}
  %0 = sgraph.concat %x, %y axis = 0 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  return
}

// -----

// Tests that concat rejects an axis outside the operands' rank (C4).
func.func @concat_c4(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{'sgraph.concat' op failed to infer returned types}}
  %0 = sgraph.concat %x, %x axis = 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

// Tests that concat rejects operands that differ off the concatenation axis
// (C5).
func.func @concat_c5(%x: tensor<2x3xf32>, %y: tensor<2x4xf32>) {
  // expected-error @+2 {{operand #1 'tensor<2x4xf32>' differs from operand #0 'tensor<2x3xf32>' in dimension 1}}
  // expected-error @+1 {{'sgraph.concat' op failed to infer returned types}}
  %0 = sgraph.concat %x, %y axis = 0 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that concat's result sums the operands' sizes along the axis (C6).
func.func @concat_c6(%x: tensor<2x3xf32>, %y: tensor<2x5xf32>) {
  // expected-error @+2 {{'sgraph.concat' op inferred type(s) 'tensor<2x8xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'sgraph.concat' op failed to infer returned types}}
  %0 = sgraph.concat %x, %y axis = 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that cast rejects a result element type sgraph does not support
// (C1).
func.func @cast_c1(%x: tensor<2xf32>) {
  // expected-error @+1 {{'sgraph.cast' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi8>'}}
  %0 = sgraph.cast %x : tensor<2xf32> to tensor<2xi8>
  return
}

// -----

// Tests that cast rejects a change of shape (C2).
func.func @cast_c2(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'sgraph.cast' op shape changes from 'tensor<2x3xf32>' to 'tensor<6xf16>'}}
  %0 = sgraph.cast %x : tensor<2x3xf32> to tensor<6xf16>
  return
}

// -----

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
  // expected-error @+1 {{'sgraph.all_reduce' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi1>'}}
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
