// RUN: sinter-opt %s | FileCheck %s
// RUN: sinter-opt %s | sinter-opt | FileCheck %s
// RUN: sinter-opt %s --mlir-print-op-generic | sinter-opt | FileCheck %s

// Tests that every sched op prints in its custom form and parses back: a
// kernel, the slabs and views of a program (an aliasing view among them),
// arguments, results and constants, a launch, a matmul with its epilogue
// (and the tanh GELU's training forms, aux and bias_grad), a
// copy, and each collective's start and done.

// CHECK-LABEL: sched.kernel @k0(%{{.*}}: tensor<4x4xf32>, %{{.*}}: tensor<4xf32>) -> tensor<4x4xf32>
// CHECK-SAME: attributes {kind = "loop"}
// CHECK: sgraph.add
// CHECK: sched.yield %{{.*}} : tensor<4x4xf32>
sched.kernel @k0(%a: tensor<4x4xf32>, %b: tensor<4xf32>) -> tensor<4x4xf32>
    attributes {kind = "loop"} {
  %0 = sgraph.add %a, %b : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  sched.yield %0 : tensor<4x4xf32>
}

// CHECK-LABEL: sched.program @train_step attributes {role = "step", seed = 1337 : i64}
// CHECK: %[[ARENA:.*]] = sched.slab "arena" size 256 : !sched.slab
// CHECK: %[[PARAMS:.*]] = sched.slab "params" size 128 : !sched.slab
// CHECK: %[[W:.*]] = sched.view %[[PARAMS]][0] {category = "parameters", name = "w"} : !sched.buffer<4x4xf32>
// CHECK: %[[Y:.*]] = sched.view %[[ARENA]][0] {category = "activations"} : !sched.buffer<4x4xf32>
// CHECK: sched.view %[[ARENA]][0] aliases(%[[Y]] : !sched.buffer<4x4xf32>) : !sched.buffer<16xf32>
// CHECK: sched.argument "w" "param" %[[W]] {init = {dist = "normal", std = 2.000000e-02 : f64}} : !sched.buffer<4x4xf32>
// CHECK: sched.argument "lr" "hyper" %{{.*}} {default_value = 1.000000e-03 : f64} : !sched.buffer<f64>
// CHECK: sched.fill %{{.*}}, dense<1.000000e+00> : tensor<4xf32> : !sched.buffer<4xf32>
// CHECK: sched.matmul %[[W]], %[[W]] -> %[[Y]] bias(%{{.*}} : !sched.buffer<4xf32>) {activation = "relu", alpha = 5.000000e-01 : f64, transpose_rhs} : !sched.buffer<4x4xf32>, !sched.buffer<4x4xf32> -> !sched.buffer<4x4xf32>
// CHECK: sched.matmul %[[W]], %[[W]] -> %[[Y]] workspace(%{{.*}} : !sched.buffer<64xi8>) : !sched.buffer<4x4xf32>, !sched.buffer<4x4xf32> -> !sched.buffer<4x4xf32>
// CHECK: sched.matmul %[[W]], %[[W]] -> %[[Y]] bias(%{{.*}} : !sched.buffer<4xf32>) aux(%{{.*}} : !sched.buffer<4x4xf32>) {activation = "gelu_tanh"}
// CHECK: sched.matmul %[[W]], %[[W]] -> %[[Y]] aux(%{{.*}} : !sched.buffer<4x4xf32>) bias_grad(%{{.*}} : !sched.buffer<4xf32>) {activation = "dgelu_tanh"}
// CHECK: sched.launch @k0(%[[Y]], %{{.*}} : !sched.buffer<4x4xf32>, !sched.buffer<4xf32>) -> (%{{.*}} : !sched.buffer<4x4xf32>)
// CHECK: sched.copy %{{.*}} -> %[[W]] : !sched.buffer<4x4xf32> -> !sched.buffer<4x4xf32>
// CHECK: %[[T0:.*]] = sched.all_reduce_start "mean" %{{.*}} : !sched.buffer<4x4xf32>
// CHECK: sched.all_reduce_done %[[T0]]
// CHECK: %[[T1:.*]] = sched.all_gather_start %{{.*}} -> %{{.*}} : !sched.buffer<4xf32> -> !sched.buffer<16xf32>
// CHECK: sched.all_gather_done %[[T1]]
// CHECK: %[[T2:.*]] = sched.reduce_scatter_start "sum" %{{.*}} -> %{{.*}} : !sched.buffer<16xf32> -> !sched.buffer<4xf32>
// CHECK: sched.reduce_scatter_done %[[T2]]
// CHECK: %[[T3:.*]] = sched.broadcast_start %[[W]] root 0 : !sched.buffer<4x4xf32>
// CHECK: sched.broadcast_done %[[T3]]
// CHECK: sched.result "w" "param" %[[W]] : !sched.buffer<4x4xf32>
// CHECK: sched.result "loss" "metric" %{{.*}} : !sched.buffer<f32>
sched.program @train_step attributes {role = "step", seed = 1337 : i64} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %params = sched.slab "params" size 128 : !sched.slab
  %io = sched.slab "io" size 128 : !sched.slab
  %constants = sched.slab "constants" size 64 : !sched.slab
  %w = sched.view %params[0] {name = "w", category = "parameters"} : !sched.buffer<4x4xf32>
  %y = sched.view %arena[0] {category = "activations"} : !sched.buffer<4x4xf32>
  %yflat = sched.view %arena[0] aliases(%y : !sched.buffer<4x4xf32>) : !sched.buffer<16xf32>
  %z = sched.view %arena[64] {category = "activations"} : !sched.buffer<4x4xf32>
  %shard = sched.view %arena[128] : !sched.buffer<4xf32>
  %full = sched.view %arena[192] : !sched.buffer<16xf32>
  %scratch = sched.view %arena[128] : !sched.buffer<64xi8>
  %lr = sched.view %io[0] : !sched.buffer<f64>
  %loss = sched.view %io[64] : !sched.buffer<f32>
  %b = sched.view %constants[0] : !sched.buffer<4xf32>
  sched.argument "w" "param" %w {init = {dist = "normal", std = 0.02 : f64}} : !sched.buffer<4x4xf32>
  sched.argument "lr" "hyper" %lr {default_value = 1.0e-3 : f64} : !sched.buffer<f64>
  sched.fill %b, dense<1.0> : tensor<4xf32> : !sched.buffer<4xf32>
  sched.matmul %w, %w -> %y bias(%b : !sched.buffer<4xf32>) {transpose_rhs, alpha = 0.5 : f64, activation = "relu"} : !sched.buffer<4x4xf32>, !sched.buffer<4x4xf32> -> !sched.buffer<4x4xf32>
  sched.matmul %w, %w -> %y workspace(%scratch : !sched.buffer<64xi8>) : !sched.buffer<4x4xf32>, !sched.buffer<4x4xf32> -> !sched.buffer<4x4xf32>
  sched.matmul %w, %w -> %y bias(%b : !sched.buffer<4xf32>) aux(%z : !sched.buffer<4x4xf32>) {activation = "gelu_tanh"} : !sched.buffer<4x4xf32>, !sched.buffer<4x4xf32> -> !sched.buffer<4x4xf32>
  sched.matmul %w, %w -> %y aux(%z : !sched.buffer<4x4xf32>) bias_grad(%shard : !sched.buffer<4xf32>) {activation = "dgelu_tanh"} : !sched.buffer<4x4xf32>, !sched.buffer<4x4xf32> -> !sched.buffer<4x4xf32>
  sched.launch @k0(%y, %b : !sched.buffer<4x4xf32>, !sched.buffer<4xf32>) -> (%z : !sched.buffer<4x4xf32>)
  sched.copy %z -> %w : !sched.buffer<4x4xf32> -> !sched.buffer<4x4xf32>
  %t0 = sched.all_reduce_start "mean" %z : !sched.buffer<4x4xf32>
  sched.all_reduce_done %t0
  %t1 = sched.all_gather_start %shard -> %full : !sched.buffer<4xf32> -> !sched.buffer<16xf32>
  sched.all_gather_done %t1
  %t2 = sched.reduce_scatter_start "sum" %full -> %shard : !sched.buffer<16xf32> -> !sched.buffer<4xf32>
  sched.reduce_scatter_done %t2
  %t3 = sched.broadcast_start %w root 0 : !sched.buffer<4x4xf32>
  sched.broadcast_done %t3
  sched.result "w" "param" %w : !sched.buffer<4x4xf32>
  sched.result "loss" "metric" %loss : !sched.buffer<f32>
}
