// RUN: sinter-opt %s -split-input-file --sinter-verify-lowered -verify-diagnostics

// Tests that a kernel left unlowered is rejected.
// expected-error @+1 {{'sched.kernel' op is left after the kernels were lowered}}
sched.kernel @k0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {kind = "loop"} {
  sched.yield %a : tensor<4xf32>
}

// -----

// Tests that a launch's function must have the kernel signature.
func.func @sinter_k0(%arg0: memref<?xi8>) {
  return
}
sched.program @f attributes {role = "step"} {
  %arena = sched.slab "arena" size 64 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.launch' op kernel @sinter_k0 is not a function with the kernel signature (one memref<?xi8> per slab, memref<?xi64> words, begin, end; CUDA: one memref<?xi8> per slab, the words as i64)}}
  sched.launch @sinter_k0(%a : !sched.buffer<4xf32>) -> () {extent = 1 : i64, label = "k0", symbol = "_mlir_ciface_sinter_k0"}
}

// -----

// Tests that a launch must carry its label.
func.func @sinter_k0(%a: memref<?xi8>, %b: memref<?xi8>, %c: memref<?xi8>, %d: memref<?xi8>, %e: memref<?xi8>, %w: memref<?xi64>, %begin: index, %end: index) {
  return
}
sched.program @f attributes {role = "step"} {
  %arena = sched.slab "arena" size 64 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.launch' op lacks its extent, symbol or label}}
  sched.launch @sinter_k0(%a : !sched.buffer<4xf32>) -> () {extent = 1 : i64, symbol = "_mlir_ciface_sinter_k0"}
}

// -----

// Tests that two programs may not share a role.
sched.program @f attributes {role = "eval"} {
  %arena = sched.slab "arena" size 0 : !sched.slab
}
// expected-error @+1 {{'sched.program' op is a second program of role 'eval'}}
sched.program @g attributes {role = "eval"} {
  %arena = sched.slab "arena" size 0 : !sched.slab
}
