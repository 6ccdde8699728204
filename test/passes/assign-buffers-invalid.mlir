// RUN: sinter-opt %s -split-input-file --sinter-assign-buffers=entry=f -verify-diagnostics
// RUN: not sinter-opt %S/assign-buffers.mlir -split-input-file --sinter-fuse-kernels --sinter-assign-buffers="entry=f role=train" 2>&1 | FileCheck %s --check-prefix=ROLE

// Tests that a program's role is one the ABI names.
// ROLE: error: role 'train' is not step or eval

// Tests that an op fusion has not put in a kernel is rejected at the op:
// the scheduled form has kernels, library calls, views and constants only.
func.func @f(%x: tensor<4xf32> {sgraph.input = "x"}) -> (tensor<4xf32> {sgraph.name = "y"}) {
  // expected-error @+1 {{cannot plan memory for 'sgraph.tanh' outside a kernel}}
  %0 = sgraph.tanh %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that the entry must exist.
// expected-error @+1 {{no function @f to schedule}}
module {
  func.func @g() {
    return
  }
}
