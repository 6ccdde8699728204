// RUN: sinter-opt %s -split-input-file --sinter-verify-schedule=entry=f -verify-diagnostics

// Tests that the entry must have become a program: a function of that name
// means sinter-assign-buffers has not run.
// expected-error @+1 {{@f is not a sched.program: the scheduled phase replaces it by its program (sinter-assign-buffers)}}
module {
  func.func @f() {
    return
  }
}

// -----

// Tests that the entry's program must exist.
// expected-error @+1 {{@f has no scheduled program}}
module {
}

// -----

// Tests that every kernel is launched by some program.
// expected-error @+1 {{'sched.kernel' op is never launched}}
sched.kernel @k0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {kind = "loop"} {
  sched.yield %a : tensor<4xf32>
}
sched.program @f attributes {role = "step"} {
  %arena = sched.slab "arena" size 0 : !sched.slab
}

// -----

// Tests that a program needs an arena, whose plan the check reads.
// expected-error @+1 {{'sched.program' op has no arena slab}}
sched.program @f attributes {role = "step"} {
  %io = sched.slab "io" size 0 : !sched.slab
}
