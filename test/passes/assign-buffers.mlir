// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels --sinter-assign-buffers=entry=f --sinter-verify-schedule=entry=f | FileCheck %s

// Tests that the entry becomes a program of the same name: one slab of each
// kind, arguments in their slabs in argument order (each a named view and a
// sched.argument), kernel and matmul results in the arena, the steps in op
// order, and two values whose lives do not overlap sharing bytes (the first
// matmul's result is dead once the tanh kernel has read it, so the second
// matmul writes over it).
// CHECK-NOT: func.func
// CHECK-LABEL: sched.kernel @k1(
// CHECK: sgraph.tanh
// CHECK-LABEL: sched.program @f attributes {role = "step", seed = 0 : i64}
// CHECK: %[[ARENA:.*]] = sched.slab "arena" size 128
// CHECK: %[[PARAMS:.*]] = sched.slab "params" size 128
// CHECK: sched.slab "opt_state" size 0
// CHECK: %[[IO:.*]] = sched.slab "io" size 64
// CHECK: sched.slab "constants" size 0
// CHECK: %[[W0:.*]] = sched.view %[[PARAMS]][0] {category = "parameters", name = "w0"}
// CHECK: sched.argument "w0" "param" %[[W0]]
// CHECK: %[[W1:.*]] = sched.view %[[PARAMS]][64] {category = "parameters", name = "w1"}
// CHECK: %[[X:.*]] = sched.view %[[IO]][0] {category = "inputs", name = "x"}
// CHECK: sched.argument "x" "input" %[[X]]
// CHECK: %[[A:.*]] = sched.view %[[ARENA]][[[OFF:[0-9]+]]] {category = "activations"}
// CHECK: sched.matmul %[[X]], %[[W0]] -> %[[A]]
// CHECK: %[[B:.*]] = sched.view %[[ARENA]]
// CHECK: sched.launch @k1(%[[A]] : {{.*}}) -> (%[[B]] : {{.*}})
// CHECK: %[[C:.*]] = sched.view %[[ARENA]][[[OFF]]] {category = "activations"}
// CHECK: sched.matmul %[[B]], %[[W1]] -> %[[C]]
// CHECK: %[[L:.*]] = sched.view %[[ARENA]][{{[0-9]+}}] {category = "outputs"} : !sched.buffer<f32>
// CHECK: sched.launch @k3(%[[C]] : {{.*}}) -> (%[[L]] : {{.*}})
// CHECK: sched.result "loss" "metric" %[[L]]
func.func @f(%w0: tensor<4x4xf32> {sgraph.param = "w0"}, %w1: tensor<4x4xf32> {sgraph.param = "w1"}, %x: tensor<4x4xf32> {sgraph.input = "x"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %1 = sgraph.matmul %x, %w0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = sgraph.tanh %1 : tensor<4x4xf32>
  %3 = sgraph.matmul %2, %w1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %4 = sgraph.reduce_sum %3 axes = [0, 1] : (tensor<4x4xf32>) -> tensor<f32>
  return %4 : tensor<f32>
}

// -----

// Tests that a new parameter and optimizer state produced by a loop kernel
// that reads the old values elementwise are written in place: the launch
// writes the arguments' own views, the results name them, and no copy is
// needed.
// CHECK-LABEL: sched.program @f
// CHECK: %[[P:.*]] = sched.view %params[0]
// CHECK: %[[M:.*]] = sched.view %opt_state[0]
// CHECK: sched.argument "step" "step"
// CHECK: sched.launch @k1(%[[P]], %{{.*}}, %[[M]], {{.*}}) -> (%[[P]], %[[M]] :
// CHECK-NOT: sched.copy
// CHECK: sched.result "p" "param" %[[P]]
// CHECK: sched.result "optimizer.p.momentum_buffer" "opt_state" %[[M]]
func.func @f(%p: tensor<16xf32> {sgraph.param = "p"}, %m: tensor<16xf32> {sgraph.opt_state = "optimizer.p.momentum_buffer"}, %g: tensor<16xf32> {sgraph.input = "g"}, %step: tensor<i64> {sgraph.step}) -> (tensor<16xf32> {sgraph.name = "p"}, tensor<16xf32> {sgraph.name = "optimizer.p.momentum_buffer"}) {
  %lr = sgraph.lr_schedule %step {lr = 0.1 : f64} : (tensor<i64>) -> tensor<f32>
  %np, %nm = sgraph.momentum_update %p, %g, %m, %lr, %step {momentum = 0.9 : f64} : tensor<16xf32>, tensor<f32>, tensor<i64>
  return %np, %nm : tensor<16xf32>, tensor<16xf32>
}

// -----

// Tests that a reshape is a view that aliases its operand's at the same
// offset: the reduction reads the exp kernel's bytes as 16 elements.
// CHECK-LABEL: sched.program @f
// CHECK: %[[E:.*]] = sched.view %arena[[[OFF:[0-9]+]]] {{.*}} : !sched.buffer<4x4xf32>
// CHECK: sched.launch @k0({{.*}}) -> (%[[E]] :
// CHECK: %[[R:.*]] = sched.view %arena[[[OFF]]] aliases(%[[E]] : !sched.buffer<4x4xf32>) {{.*}} : !sched.buffer<16xf32>
// CHECK: sched.launch @k1(%[[R]] :
func.func @f(%x: tensor<4x4xf32> {sgraph.input = "x"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %1 = sgraph.exp %x : tensor<4x4xf32>
  %2 = sgraph.reshape %1 : tensor<4x4xf32> to tensor<16xf32>
  %3 = sgraph.reduce_sum %2 axes = [0] : (tensor<16xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// Tests a matmul with its epilogue (a bias of shape [1, N], read as [N]
// through an aliasing view, and a ReLU) as one library call, a constant
// read outside kernels as a fill of the constants slab, the initializer of
// a parameter on its argument, and a state update that cannot be written
// in place (a matmul reads the old w after the update's kernel): it goes
// to the arena and a final copy puts it into w.
// CHECK-LABEL: sched.program @f
// CHECK: sched.argument "w" "param" %[[W:[^ ]*]] {init = {dist = "normal", std = 2.000000e-02 : f64}}
// CHECK: %[[B:.*]] = sched.view %params[64] {category = "parameters", name = "b"} : !sched.buffer<1x4xf32>
// CHECK: %[[BV:.*]] = sched.view %params[64] aliases(%[[B]] : !sched.buffer<1x4xf32>) {{.*}} : !sched.buffer<4xf32>
// CHECK: sched.matmul %{{.*}}, %[[W]] -> %{{.*}} bias(%[[BV]] : !sched.buffer<4xf32>) {activation = "relu"}
// CHECK: %[[C:.*]] = sched.view %constants[0] {category = "constants"} : !sched.buffer<1x4xf32>
// CHECK: sched.fill %[[C]], dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]>
// CHECK: sched.launch @k{{[0-9]+}}({{.*}}) -> (%[[NEW:[^ ]*]] :
// CHECK: sched.matmul %{{.*}}, %[[W]] ->
// CHECK: sched.copy %[[NEW]] -> %[[W]]
// CHECK: sched.result "w" "param" %[[W]]
func.func @f(%w: tensor<4x4xf32> {sgraph.param = "w", sgraph.init = {dist = "normal", std = 0.02 : f64}}, %x: tensor<2x4xf32> {sgraph.input = "x"}, %b: tensor<1x4xf32> {sgraph.param = "b"}) -> (tensor<2x4xf32> {sgraph.name = "y"}, tensor<4x4xf32> {sgraph.name = "w"}, tensor<1x4xf32> {sgraph.name = "z"}) {
  %0 = sgraph.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = sgraph.add %0, %b : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  %2 = sgraph.relu %1 : tensor<2x4xf32>
  %c = sgraph.constant dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>
  %h = sgraph.constant dense<0.5> : tensor<f32>
  %5 = sgraph.mul %w, %h : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %6 = sgraph.matmul %c, %w : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
  return %2, %5, %6 : tensor<2x4xf32>, tensor<4x4xf32>, tensor<1x4xf32>
}

// -----

// Tests that an integer input indexing an embedding table gets the table's
// rows as its bound, so that the trainer can reject larger token ids.
// CHECK-LABEL: sched.program @f
// CHECK: sched.argument "idx" "input" %{{.*}} {bound = 7 : i64}
func.func @f(%t: tensor<7x4xf32> {sgraph.param = "t"}, %idx: tensor<3xi64> {sgraph.input = "idx"}) -> (tensor<3x4xf32> {sgraph.name = "e"}) {
  %0 = sgraph.embedding %t, %idx : (tensor<7x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
