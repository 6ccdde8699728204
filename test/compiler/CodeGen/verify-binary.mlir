// RUN: sinter-opt %s -split-input-file --sinter-verify-binary -verify-diagnostics

// Tests that a program left over (sinter-lower-step has not run) is
// rejected.
module {
  // expected-error @+1 {{'sched.program' op is not LLVM dialect after the binary phase}}
  sched.program @f attributes {role = "step"} {
  }
}

// -----

// Tests that the step program's symbol must be there.
// expected-error @+1 {{the step program's symbol @sinter_program is missing}}
module {
  llvm.mlir.global external constant @sinter_default_data("\00")
}

// -----

// Tests that a program's symbols come together.
// expected-error @+1 {{@sinter_program and @sinter_kernels come together}}
module {
  llvm.mlir.global external constant @sinter_program("\08\02")
  llvm.mlir.global external constant @sinter_program_size(2 : i64) : i64
  llvm.mlir.global external constant @sinter_default_data("\00")
}

// -----

// Tests that the data folder's symbol must be there.
// expected-error @+1 {{@sinter_default_data is missing}}
module {
  llvm.mlir.global external constant @sinter_program("\08\02")
  llvm.mlir.global external constant @sinter_program_size(2 : i64) : i64
  llvm.mlir.global external constant @sinter_kernels() : !llvm.array<0 x ptr> {
    %0 = llvm.mlir.undef : !llvm.array<0 x ptr>
    llvm.return %0 : !llvm.array<0 x ptr>
  }
}
