// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels --sinter-plan-memory=entry=f --sinter-verify-memory-plan=entry=f | FileCheck %s

// Tests that arguments get their slabs in argument order, that kernel and
// matmul results go in the arena, that two values whose lifetimes do not
// overlap share bytes (%1 is dead once %2 is computed, so %3 reuses it), and
// that the function's summary counts the saving.
// CHECK-LABEL: func.func @f(
// CHECK-SAME: sinter.buffer = {bytes = 64 : i64, category = "parameters", offset = 0 : i64, slab = "params"}
// CHECK-SAME: sinter.buffer = {bytes = 64 : i64, category = "parameters", offset = 64 : i64, slab = "params"}
// CHECK-SAME: sinter.buffer = {bytes = 64 : i64, category = "inputs", offset = 0 : i64, slab = "io"}
// CHECK-SAME: sinter.memory = {arena = 128 : i64, arena_lower_bound = 128 : i64, arena_without_reuse = 256 : i64, constants = 0 : i64, io = 64 : i64, opt_state = 0 : i64, params = 128 : i64
// CHECK: %[[A:.*]] = sgraph.matmul {{.*}}sinter.buffers = [{bytes = 64 : i64, category = "activations", offset = [[OFF_A:[0-9]+]] : i64, slab = "arena"}], {{.*}}sinter.step = 0
// CHECK: %[[B:.*]] = sgraph.fusion "k1" {{.*}}sinter.buffers = [{bytes = 64 : i64, category = "activations", offset = [[OFF_B:[0-9]+]] : i64, slab = "arena"}], sinter.step = 1
// CHECK: %[[C:.*]] = sgraph.matmul {{.*}}sinter.buffers = [{bytes = 64 : i64, category = "activations", offset = [[OFF_A]] : i64, slab = "arena"}], {{.*}}sinter.step = 2
// CHECK: sgraph.fusion "k3" {{.*}}sinter.buffers = [{bytes = 4 : i64, category = "outputs", {{.*}}slab = "arena"}], sinter.step = 3
func.func @f(%w0: tensor<4x4xf32> {sgraph.param = "w0"}, %w1: tensor<4x4xf32> {sgraph.param = "w1"}, %x: tensor<4x4xf32> {sgraph.input = "x"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %1 = sgraph.matmul %x, %w0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = sgraph.tanh %1 : tensor<4x4xf32>
  %3 = sgraph.matmul %2, %w1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %4 = sgraph.reduce_sum %3 axes = [0, 1] : (tensor<4x4xf32>) -> tensor<f32>
  return %4 : tensor<f32>
}

// -----

// Tests that a new parameter and optimizer state produced by a loop kernel
// that reads the old values elementwise are written in place: the kernel's
// results are placed at the arguments' own bytes, not in the arena.
// CHECK-LABEL: func.func @f(
// CHECK: sgraph.fusion "k1" {{.*}}sinter.buffers = [{bytes = 64 : i64, category = "parameters", offset = 0 : i64, slab = "params"}, {bytes = 64 : i64, category = "optimizer_state", offset = 0 : i64, slab = "opt_state"}]
func.func @f(%p: tensor<16xf32> {sgraph.param = "p"}, %m: tensor<16xf32> {sgraph.opt_state = "optimizer.p.momentum_buffer"}, %g: tensor<16xf32> {sgraph.input = "g"}, %step: tensor<i64> {sgraph.step}) -> (tensor<16xf32> {sgraph.name = "p"}, tensor<16xf32> {sgraph.name = "optimizer.p.momentum_buffer"}) {
  %lr = sgraph.lr_schedule %step {lr = 0.1 : f64} : (tensor<i64>) -> tensor<f32>
  %np, %nm = sgraph.momentum_update %p, %g, %m, %lr, %step {momentum = 0.9 : f64} : tensor<16xf32>, tensor<f32>, tensor<i64>
  return %np, %nm : tensor<16xf32>, tensor<16xf32>
}

// -----

// Tests that a reshape shares its operand's bytes: same offset, and the
// operand lives as long as the reshape is read.
// CHECK-LABEL: func.func @f(
// CHECK: sgraph.fusion "k0" {{.*}}sinter.buffers = [{bytes = 64 : i64, category = "activations", offset = [[OFF:[0-9]+]] : i64, slab = "arena"}]
// CHECK: sgraph.reshape {{.*}}sinter.buffers = [{bytes = 64 : i64, category = "{{.*}}", offset = [[OFF]] : i64, slab = "arena"}]
func.func @f(%x: tensor<4x4xf32> {sgraph.input = "x"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %1 = sgraph.exp %x : tensor<4x4xf32>
  %2 = sgraph.reshape %1 : tensor<4x4xf32> to tensor<16xf32>
  %3 = sgraph.reduce_sum %2 axes = [0] : (tensor<16xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}
