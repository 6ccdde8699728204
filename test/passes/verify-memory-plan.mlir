// RUN: sinter-opt %s -split-input-file --sinter-verify-memory-plan=entry=f -verify-diagnostics

// Tests that two arena values live at the same step may not share bytes:
// %a is still read by the third matmul when the second writes %b over it.
// expected-error @+1 {{invalid memory plan: buffer 1 at [0, 64) live [1, 2] overlaps buffer 0 at [0, 64) live [0, 2]}}
func.func @f(%x: tensor<4x4xf32> {sinter.buffer = {bytes = 64 : i64, category = "inputs", offset = 0 : i64, slab = "io"}}) -> (tensor<4x4xf32> {sgraph.name = "y"}) attributes {sinter.memory = {arena = 128 : i64, params = 0 : i64, opt_state = 0 : i64, io = 64 : i64, constants = 0 : i64}} {
  %a = sgraph.matmul %x, %x {sinter.buffers = [{bytes = 64 : i64, category = "activations", offset = 0 : i64, slab = "arena"}]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = sgraph.matmul %x, %x {sinter.buffers = [{bytes = 64 : i64, category = "activations", offset = 0 : i64, slab = "arena"}]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = sgraph.matmul %a, %b {sinter.buffers = [{bytes = 64 : i64, category = "outputs", offset = 64 : i64, slab = "arena"}]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %c : tensor<4x4xf32>
}

// -----

// Tests that a buffer must lie inside its slab.
func.func @f(%x: tensor<4x4xf32> {sinter.buffer = {bytes = 64 : i64, category = "inputs", offset = 0 : i64, slab = "io"}}) -> (tensor<4x4xf32> {sgraph.name = "y"}) attributes {sinter.memory = {arena = 64 : i64, params = 0 : i64, opt_state = 0 : i64, io = 64 : i64, constants = 0 : i64}} {
  // expected-error @+1 {{buffer [64, 128) lies outside slab 'arena' of 64 bytes}}
  %a = sgraph.matmul %x, %x {sinter.buffers = [{bytes = 64 : i64, category = "activations", offset = 64 : i64, slab = "arena"}]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %a : tensor<4x4xf32>
}

// -----

// Tests that a buffer's size must match its value's type.
func.func @f(%x: tensor<4x4xf32> {sinter.buffer = {bytes = 64 : i64, category = "inputs", offset = 0 : i64, slab = "io"}}) -> (tensor<4x4xf32> {sgraph.name = "y"}) attributes {sinter.memory = {arena = 64 : i64, params = 0 : i64, opt_state = 0 : i64, io = 64 : i64, constants = 0 : i64}} {
  // expected-error @+1 {{buffer of 32 bytes for a value of 64 bytes}}
  %a = sgraph.matmul %x, %x {sinter.buffers = [{bytes = 32 : i64, category = "activations", offset = 0 : i64, slab = "arena"}]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %a : tensor<4x4xf32>
}

// -----

// Tests that every value needs a place.
func.func @f(%x: tensor<4x4xf32> {sinter.buffer = {bytes = 64 : i64, category = "inputs", offset = 0 : i64, slab = "io"}}) -> (tensor<4x4xf32> {sgraph.name = "y"}) attributes {sinter.memory = {arena = 64 : i64, params = 0 : i64, opt_state = 0 : i64, io = 64 : i64, constants = 0 : i64}} {
  // expected-error @+1 {{has no planned buffers}}
  %a = sgraph.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %a : tensor<4x4xf32>
}
