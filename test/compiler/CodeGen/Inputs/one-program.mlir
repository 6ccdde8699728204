// A module with one program and no evaluation program (lower-step.mlir).
module {
  sched.program @f attributes {role = "step"} {
    %arena = sched.slab "arena" size 0 : !sched.slab
  }
}
