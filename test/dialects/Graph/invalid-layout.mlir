// RUN: sinter-opt %s -split-input-file -verify-diagnostics

// One case per constraint of docs/dialects/sgraph.md for reshape,
// transpose, broadcast, slice, pad, concat and cast:
// `@<op>_c<N>` breaks constraint C<N> of sgraph.<op> and nothing else (as
// in invalid.mlir).

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
