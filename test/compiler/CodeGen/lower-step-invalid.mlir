// RUN: sinter-opt %s -split-input-file --sinter-lower-step -verify-diagnostics

// Tests that a launch's symbol must be an LLVM function of the module: the
// target's conversion to the LLVM dialect has not run.
func.func @sinter_k0(%arg0: memref<?xi8>) {
  return
}
sched.program @f attributes {role = "step"} {
  %arena = sched.slab "arena" size 64 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.launch' op kernel symbol @_mlir_ciface_sinter_k0 is not an LLVM function of the module}}
  sched.launch @sinter_k0(%a : !sched.buffer<4xf32>) -> () {extent = 1 : i64, label = "k0", symbol = "_mlir_ciface_sinter_k0"}
}

// -----

// Tests that a launch must be lowered before its program is.
llvm.func @k(%arg0: !llvm.ptr) {
  llvm.return
}
sched.kernel @k0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {kind = "loop"} {
  sched.yield %a : tensor<4xf32>
}
sched.program @f attributes {role = "step"} {
  %arena = sched.slab "arena" size 128 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<4xf32>
  %b = sched.view %arena[64] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.launch' op is not lowered yet: run the target's kernel lowering first}}
  sched.launch @k0(%a : !sched.buffer<4xf32>) -> (%b : !sched.buffer<4xf32>)
}

// -----

// Tests that a role has one program.
sched.program @f attributes {role = "step"} {
  %arena = sched.slab "arena" size 0 : !sched.slab
}
// expected-error @+1 {{'sched.program' op is a second program of role 'step'}}
sched.program @g attributes {role = "step"} {
  %arena = sched.slab "arena" size 0 : !sched.slab
}
