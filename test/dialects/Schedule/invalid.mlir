// RUN: sinter-opt %s -split-input-file -verify-diagnostics

// One case per constraint of docs/dialects/sched.md: `@<op>_c<N>` breaks
// constraint <op>_c<N> and nothing else.

// Tests that a slab's kind must be a slab of the ABI (slab_c1).
sched.program @slab_c1 attributes {role = "step"} {
  // expected-error @+1 {{'sched.slab' op kind 'heap' is not a slab of the ABI}}
  %s = sched.slab "heap" size 64 : !sched.slab
}

// -----

// Tests that a slab's size is not negative (slab_c2).
sched.program @slab_c2 attributes {role = "step"} {
  // expected-error @+1 {{'sched.slab' op size must be >= 0, got -64}}
  %s = sched.slab "arena" size -64 : !sched.slab
}

// -----

// Tests that a view must lie within its slab (view_c1).
sched.program @view_c1 attributes {role = "step"} {
  %arena = sched.slab "arena" size 64 : !sched.slab
  // expected-error @+1 {{'sched.view' op bytes [64, 128) lie outside slab 'arena' of 64 bytes}}
  %v = sched.view %arena[64] : !sched.buffer<16xf32>
}

// -----

// Tests that a view's offset is a multiple of 64 (view_c2).
sched.program @view_c2 attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  // expected-error @+1 {{'sched.view' op offset 32 is not a multiple of 64 (only a view that aliases another may be unaligned)}}
  %v = sched.view %arena[32] : !sched.buffer<16xf32>
}

// -----

// Tests that an aliasing view lies within the bytes of the view it aliases
// (view_c3).
sched.program @view_c3 attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %v = sched.view %arena[0] : !sched.buffer<16xf32>
  // expected-error @+1 {{'sched.view' op bytes [32, 96) lie outside the bytes [0, 64) of the view it aliases}}
  %w = sched.view %arena[32] aliases(%v : !sched.buffer<16xf32>) : !sched.buffer<16xf32>
}

// -----

// Tests that an aliasing view is in the slab of the view it aliases (view_c3).
sched.program @view_c3 attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %io = sched.slab "io" size 256 : !sched.slab
  %v = sched.view %arena[0] : !sched.buffer<16xf32>
  // expected-error @+1 {{'sched.view' op aliases a view of slab 'arena', not of its own slab 'io'}}
  %w = sched.view %io[0] aliases(%v : !sched.buffer<16xf32>) : !sched.buffer<16xf32>
}

// -----

// Tests that a view's category is one of the ABI's (view_c4).
sched.program @view_c4 attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  // expected-error @+1 {{'sched.view' op category 'scratch' is not one of}}
  %v = sched.view %arena[0] {category = "scratch"} : !sched.buffer<16xf32>
}

// -----

// Tests that an argument's kind is one of param, opt_state, input, step,
// hyper (argument_c1).
sched.program @argument_c1 attributes {role = "step"} {
  %io = sched.slab "io" size 64 : !sched.slab
  %v = sched.view %io[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.argument' op kind 'weight' is not one of param, opt_state, input, step, hyper}}
  sched.argument "x" "weight" %v : !sched.buffer<4xf32>
}

// -----

// Tests that only a param has an init (argument_c2).
sched.program @argument_c2 attributes {role = "step"} {
  %io = sched.slab "io" size 64 : !sched.slab
  %v = sched.view %io[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.argument' op only a param has an init or aliases}}
  sched.argument "x" "input" %v {init = {dist = "constant", value = 0.0 : f64}} : !sched.buffer<4xf32>
}

// -----

// Tests that the step argument is an i64 scalar (argument_c3).
sched.program @argument_c3 attributes {role = "step"} {
  %io = sched.slab "io" size 64 : !sched.slab
  %v = sched.view %io[0] : !sched.buffer<i32>
  // expected-error @+1 {{'sched.argument' op a step argument is an i64 scalar, got '!sched.buffer<i32>'}}
  sched.argument "step" "step" %v : !sched.buffer<i32>
}

// -----

// Tests that a hyper argument has a finite default (argument_c4).
sched.program @argument_c4 attributes {role = "step"} {
  %io = sched.slab "io" size 64 : !sched.slab
  %v = sched.view %io[0] : !sched.buffer<f32>
  // expected-error @+1 {{'sched.argument' op default 1.000000e+300 is not a finite 'f32'}}
  sched.argument "lr" "hyper" %v {default_value = 1.0e300 : f64} : !sched.buffer<f32>
}

// -----

// Tests that a result's kind is one of metric, param, opt_state, tensor
// (result_c1).
sched.program @result_c1 attributes {role = "step"} {
  %io = sched.slab "io" size 64 : !sched.slab
  %v = sched.view %io[0] : !sched.buffer<f32>
  // expected-error @+1 {{'sched.result' op kind 'scalar' is not one of metric, param, opt_state, tensor}}
  sched.result "loss" "scalar" %v : !sched.buffer<f32>
}

// -----

// Tests that only a metric counts labels (result_c3).
sched.program @result_c3 attributes {role = "step"} {
  %io = sched.slab "io" size 64 : !sched.slab
  %v = sched.view %io[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.result' op only a metric has labels, this is a tensor}}
  sched.result "probs" "tensor" %v {labels = "targets", ignore = -1 : i64} : !sched.buffer<4xf32>
}

// -----

// Tests that labels come with an ignore (result_c3).
sched.program @result_c3_ignore attributes {role = "step"} {
  %io = sched.slab "io" size 64 : !sched.slab
  %v = sched.view %io[0] : !sched.buffer<f32>
  // expected-error @+1 {{'sched.result' op has labels without an ignore}}
  sched.result "accuracy" "metric" %v {labels = "targets"} : !sched.buffer<f32>
}

// -----

// Tests that a metric is a scalar (result_c2).
sched.program @result_c2 attributes {role = "step"} {
  %io = sched.slab "io" size 64 : !sched.slab
  %v = sched.view %io[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.result' op a metric is a scalar, got '!sched.buffer<4xf32>'}}
  sched.result "loss" "metric" %v : !sched.buffer<4xf32>
}

// -----

// Tests that a fill's value has the buffer's type (fill_c1).
sched.program @fill_c1 attributes {role = "step"} {
  %c = sched.slab "constants" size 64 : !sched.slab
  %v = sched.view %c[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.fill' op value of type 'tensor<2xf32>' does not fill a '!sched.buffer<4xf32>'}}
  sched.fill %v, dense<1.0> : tensor<2xf32> : !sched.buffer<4xf32>
}

// -----

// Tests that only the constants slab is filled (fill_c2).
sched.program @fill_c2 attributes {role = "step"} {
  %io = sched.slab "io" size 64 : !sched.slab
  %v = sched.view %io[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.fill' op fills a buffer outside the constants slab}}
  sched.fill %v, dense<1.0> : tensor<4xf32> : !sched.buffer<4xf32>
}

// -----

// Tests that a kernel's kind is loop, reduction or special (kernel_c1).
// expected-error @+1 {{'sched.kernel' op kind 'matmul' is not one of loop, reduction, special}}
sched.kernel @kernel_c1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {kind = "matmul"} {
  sched.yield %a : tensor<4xf32>
}

// -----

// Tests that a kernel's arguments are statically shaped tensors (kernel_c2).
// expected-error @+1 {{'sched.kernel' op arguments and results must be statically shaped tensors of a step-program element type, got 'tensor<?xf32>'}}
sched.kernel @kernel_c2(%a: tensor<?xf32>) -> tensor<?xf32> attributes {kind = "loop"} {
  sched.yield %a : tensor<?xf32>
}

// -----

// Tests that a yield returns the kernel's result types (yield_c1).
sched.kernel @yield_c1(%a: tensor<4xf32>) -> tensor<4xi32> attributes {kind = "loop"} {
  // expected-error @+1 {{'sched.yield' op yields 'tensor<4xf32>' but the kernel returns 'tensor<4xi32>'}}
  sched.yield %a : tensor<4xf32>
}

// -----

// Tests that a launch names an existing kernel (launch_c1).
sched.program @launch_c1 attributes {role = "step"} {
  %arena = sched.slab "arena" size 64 : !sched.slab
  %v = sched.view %arena[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.launch' op kernel @missing does not exist}}
  sched.launch @missing(%v : !sched.buffer<4xf32>) -> ()
}

// -----

// Tests that a launch's buffers have the kernel's types (launch_c2).
sched.kernel @k(%a: tensor<4xf32>) -> tensor<4xf32> attributes {kind = "loop"} {
  sched.yield %a : tensor<4xf32>
}
sched.program @launch_c2 attributes {role = "step"} {
  %arena = sched.slab "arena" size 128 : !sched.slab
  %v = sched.view %arena[0] : !sched.buffer<4xf32>
  %w = sched.view %arena[64] : !sched.buffer<8xf32>
  // expected-error @+1 {{'sched.launch' op outputs 0 is '!sched.buffer<8xf32>' but @k has 'tensor<4xf32>'}}
  sched.launch @k(%v : !sched.buffer<4xf32>) -> (%w : !sched.buffer<8xf32>)
}

// -----

// Tests that a launch's extent is at least 1 (launch_c3).
sched.kernel @k(%a: tensor<4xf32>) -> tensor<4xf32> attributes {kind = "loop"} {
  sched.yield %a : tensor<4xf32>
}
sched.program @launch_c3 attributes {role = "step"} {
  %arena = sched.slab "arena" size 128 : !sched.slab
  %v = sched.view %arena[0] : !sched.buffer<4xf32>
  %w = sched.view %arena[64] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.launch' op extent must be >= 1, got 0}}
  sched.launch @k(%v : !sched.buffer<4xf32>) -> (%w : !sched.buffer<4xf32>) {extent = 0 : i64}
}

// -----

// Tests that a lowered launch passes its function as many words as it reads
// (launch_c4): a kernel shared by the launches of every layer finds their
// buffers by these, so one word short reads past them.
func.func @sinter_k0(%a: memref<?xi8>, %b: memref<?xi8>, %c: memref<?xi8>, %d: memref<?xi8>, %e: memref<?xi8>, %w: memref<?xi64>, %begin: index, %end: index) attributes {sched.kernel_args = 2 : i64} {
  return
}
sched.program @launch_c4 attributes {role = "step"} {
  %arena = sched.slab "arena" size 128 : !sched.slab
  %v = sched.view %arena[0] : !sched.buffer<4xf32>
  %w = sched.view %arena[64] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.launch' op passes 1 words (args) to @sinter_k0, which reads 2}}
  sched.launch @sinter_k0(%v : !sched.buffer<4xf32>) -> (%w : !sched.buffer<4xf32>) {args = array<i64: 0>, extent = 1 : i64, label = "k0", symbol = "_mlir_ciface_sinter_k0"}
}

// -----

// Tests that a matmul's operands share one element type (matmul_c1).
sched.program @matmul_c1 attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %b = sched.view %arena[64] : !sched.buffer<2x2xf64>
  %c = sched.view %arena[128] : !sched.buffer<2x2xf32>
  // expected-error @+1 {{'sched.matmul' op operands, result and bias must have one element type, or bf16/f16 operands an f32 result and bias; got lhs 'f32', rhs 'f64', out 'f32'}}
  sched.matmul %a, %b -> %c : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf64> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that an f32 out of bf16 operands takes an f32 bias, not a bf16 one
// (matmul_c1).
sched.program @matmul_c1_bias attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xbf16>
  %c = sched.view %arena[128] : !sched.buffer<2x2xf32>
  %b = sched.view %arena[192] : !sched.buffer<2xbf16>
  // expected-error @+1 {{'sched.matmul' op operands, result and bias must have one element type, or bf16/f16 operands an f32 result and bias; got lhs 'bf16', rhs 'bf16', out 'f32'}}
  sched.matmul %a, %a -> %c bias(%b : !sched.buffer<2xbf16>) : !sched.buffer<2x2xbf16>, !sched.buffer<2x2xbf16> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that a matmul's shapes compose (matmul_c2).
sched.program @matmul_c2 attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x3xf32>
  %b = sched.view %arena[64] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[128] : !sched.buffer<2x2xf32>
  // expected-error @+1 {{'sched.matmul' op rhs [2, 2] gives K=2 but lhs [2, 3] gives K=3}}
  sched.matmul %a, %b -> %c : !sched.buffer<2x3xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that a matmul's bias is [N] (matmul_c3).
sched.program @matmul_c3 attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[128] : !sched.buffer<2x2xf32>
  %b = sched.view %arena[192] : !sched.buffer<3xf32>
  // expected-error @+1 {{'sched.matmul' op bias has shape [3]; expected [2]}}
  sched.matmul %a, %a -> %c bias(%b : !sched.buffer<3xf32>) : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that a matmul's activation is one the library applies (matmul_c4).
sched.program @matmul_c4 attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[128] : !sched.buffer<2x2xf32>
  // expected-error @+1 {{'sched.matmul' op activation 'tanh' is not one of none, relu, gelu_erf, gelu_tanh}}
  sched.matmul %a, %a -> %c {activation = "tanh"} : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that a matmul's output shares no byte with an operand (matmul_c5).
sched.program @matmul_c5 attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[0] aliases(%a : !sched.buffer<2x2xf32>) : !sched.buffer<2x2xf32>
  // expected-error @+1 {{'sched.matmul' op out [0, 16) overlaps lhs [0, 16)}}
  sched.matmul %a, %a -> %c : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that a matmul's workspace is bytes of its own (matmul_c6): an i8
// vector no operand shares, here overlapping the output.
sched.program @matmul_c6 attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[128] : !sched.buffer<2x2xf32>
  %w = sched.view %arena[64] : !sched.buffer<128xi8>
  // expected-error @+1 {{'sched.matmul' op workspace [64, 192) overlaps out [128, 144)}}
  sched.matmul %a, %a -> %c workspace(%w : !sched.buffer<128xi8>) : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that a matmul's workspace is a vector of bytes (matmul_c6).
sched.program @matmul_c6_type attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[64] : !sched.buffer<2x2xf32>
  %w = sched.view %arena[128] : !sched.buffer<16xf32>
  // expected-error @+1 {{'sched.matmul' op workspace must be a 1-D i8 buffer; got '!sched.buffer<16xf32>'}}
  sched.matmul %a, %a -> %c workspace(%w : !sched.buffer<16xf32>) : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that aux goes with the tanh GELU only (matmul_c7).
sched.program @matmul_c7 attributes {role = "step"} {
  %arena = sched.slab "arena" size 512 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[64] : !sched.buffer<2x2xf32>
  %x = sched.view %arena[128] : !sched.buffer<2x2xf32>
  // expected-error @+1 {{'sched.matmul' op aux goes with gelu_tanh or dgelu_tanh, not relu}}
  sched.matmul %a, %a -> %c aux(%x : !sched.buffer<2x2xf32>) {activation = "relu"} : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that the GELU's derivative needs the GELU's input (matmul_c7).
sched.program @matmul_c7_needed attributes {role = "step"} {
  %arena = sched.slab "arena" size 512 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[64] : !sched.buffer<2x2xf32>
  %x = sched.view %arena[128] : !sched.buffer<2x2xf32>
  // expected-error @+1 {{'sched.matmul' op dgelu_tanh needs aux, the activation's input}}
  sched.matmul %a, %a -> %c {activation = "dgelu_tanh"} : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that aux is shaped as out (matmul_c7).
sched.program @matmul_c7_shape attributes {role = "step"} {
  %arena = sched.slab "arena" size 512 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[64] : !sched.buffer<2x2xf32>
  %x = sched.view %arena[128] : !sched.buffer<2x2xf32>
  %y = sched.view %arena[192] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.matmul' op aux is '!sched.buffer<4xf32>'; expected out's shape and type}}
  sched.matmul %a, %a -> %c aux(%y : !sched.buffer<4xf32>) {activation = "gelu_tanh"} : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that aux, which GELU_AUX writes, shares no byte with an operand (matmul_c7).
sched.program @matmul_c7_overlap attributes {role = "step"} {
  %arena = sched.slab "arena" size 512 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[64] : !sched.buffer<2x2xf32>
  %x = sched.view %arena[128] : !sched.buffer<2x2xf32>
  // expected-error @+1 {{'sched.matmul' op aux [0, 16) overlaps lhs [0, 16)}}
  sched.matmul %a, %x -> %c aux(%a : !sched.buffer<2x2xf32>) {activation = "gelu_tanh"} : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that a bias gradient goes with the GELU's derivative only (matmul_c8).
sched.program @matmul_c8 attributes {role = "step"} {
  %arena = sched.slab "arena" size 512 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[64] : !sched.buffer<2x2xf32>
  %x = sched.view %arena[128] : !sched.buffer<2x2xf32>
  %g = sched.view %arena[192] : !sched.buffer<2xf32>
  // expected-error @+1 {{'sched.matmul' op bias_grad goes with dgelu_tanh, not gelu_tanh}}
  sched.matmul %a, %a -> %c aux(%x : !sched.buffer<2x2xf32>) bias_grad(%g : !sched.buffer<2xf32>) {activation = "gelu_tanh"} : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that a bias gradient is [N] (matmul_c8).
sched.program @matmul_c8_shape attributes {role = "step"} {
  %arena = sched.slab "arena" size 512 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[64] : !sched.buffer<2x2xf32>
  %x = sched.view %arena[128] : !sched.buffer<2x2xf32>
  %g = sched.view %arena[192] : !sched.buffer<3xf32>
  // expected-error @+1 {{'sched.matmul' op bias_grad is '!sched.buffer<3xf32>'; expected [2] of out's type}}
  sched.matmul %a, %a -> %c aux(%x : !sched.buffer<2x2xf32>) bias_grad(%g : !sched.buffer<3xf32>) {activation = "dgelu_tanh"} : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that the GELU's derivative adds no bias (matmul_c8).
sched.program @matmul_c8_bias attributes {role = "step"} {
  %arena = sched.slab "arena" size 512 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[64] : !sched.buffer<2x2xf32>
  %x = sched.view %arena[128] : !sched.buffer<2x2xf32>
  %b = sched.view %arena[192] : !sched.buffer<2xf32>
  // expected-error @+1 {{'sched.matmul' op dgelu_tanh takes no bias}}
  sched.matmul %a, %a -> %c bias(%b : !sched.buffer<2xf32>) aux(%x : !sched.buffer<2x2xf32>) {activation = "dgelu_tanh"} : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that a copy moves equal byte counts (copy_c1).
sched.program @copy_c1 attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<4xf32>
  %b = sched.view %arena[64] : !sched.buffer<4xf64>
  // expected-error @+1 {{'sched.copy' op copies 16 bytes into a buffer of 32}}
  sched.copy %a -> %b : !sched.buffer<4xf32> -> !sched.buffer<4xf64>
}

// -----

// Tests that an all-reduce names a reduction (all_reduce_start_c1).
sched.program @all_reduce_start_c1 attributes {role = "step"} {
  %arena = sched.slab "arena" size 64 : !sched.slab
  %g = sched.view %arena[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.all_reduce_start' op reduction 'avg' is not one of sum, mean, max, min}}
  %t = sched.all_reduce_start "avg" %g : !sched.buffer<4xf32>
  sched.all_reduce_done %t
}

// -----

// Tests that comm_dtype travels only f32 sums and means (all_reduce_start_c2).
sched.program @all_reduce_start_c2 attributes {role = "step"} {
  %arena = sched.slab "arena" size 64 : !sched.slab
  %g = sched.view %arena[0] : !sched.buffer<4xf64>
  // expected-error @+1 {{'sched.all_reduce_start' op comm_dtype needs an f32 buffer}}
  %t = sched.all_reduce_start "sum" %g {comm_dtype = "bf16"} : !sched.buffer<4xf64>
  sched.all_reduce_done %t
}

// -----

// Tests that an all-gather's output is a whole number of inputs
// (all_gather_start_c1).
sched.program @all_gather_start_c1 attributes {role = "step"} {
  %arena = sched.slab "arena" size 128 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<3xf32>
  %b = sched.view %arena[64] : !sched.buffer<8xf32>
  // expected-error @+1 {{'sched.all_gather_start' op output '!sched.buffer<8xf32>' is not a whole number of inputs '!sched.buffer<3xf32>'}}
  %t = sched.all_gather_start %a -> %b : !sched.buffer<3xf32> -> !sched.buffer<8xf32>
  sched.all_gather_done %t
}

// -----

// Tests that a reduce-scatter's input is a whole number of outputs
// (reduce_scatter_start_c1).
sched.program @reduce_scatter_start_c1 attributes {role = "step"} {
  %arena = sched.slab "arena" size 128 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<8xf32>
  %b = sched.view %arena[64] : !sched.buffer<3xf32>
  // expected-error @+1 {{'sched.reduce_scatter_start' op input '!sched.buffer<8xf32>' is not a whole number of outputs '!sched.buffer<3xf32>'}}
  %t = sched.reduce_scatter_start "sum" %a -> %b : !sched.buffer<8xf32> -> !sched.buffer<3xf32>
  sched.reduce_scatter_done %t
}

// -----

// Tests that a broadcast's root is a rank (broadcast_start_c1).
sched.program @broadcast_start_c1 attributes {role = "step"} {
  %arena = sched.slab "arena" size 64 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.broadcast_start' op root must be >= 0, got -1}}
  %t = sched.broadcast_start %a root -1 : !sched.buffer<4xf32>
  sched.broadcast_done %t
}

// -----

// Tests that a token is waited for (token_c1: never used).
sched.program @token_c1 attributes {role = "step"} {
  %arena = sched.slab "arena" size 64 : !sched.slab
  %g = sched.view %arena[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.all_reduce_start' op token is never waited for (no sched.all_reduce_done)}}
  %t = sched.all_reduce_start "sum" %g : !sched.buffer<4xf32>
}

// -----

// Tests that a token is waited for only once (token_c1: used twice).
sched.program @token_c1 attributes {role = "step"} {
  %arena = sched.slab "arena" size 64 : !sched.slab
  %g = sched.view %arena[0] : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.all_reduce_start' op token is used 2 times; it is waited for exactly once}}
  %t = sched.all_reduce_start "sum" %g : !sched.buffer<4xf32>
  sched.all_reduce_done %t
  sched.all_reduce_done %t
}

// -----

// Tests that a done waits for its own kind of collective (done_c1).
sched.program @done_c1 attributes {role = "step"} {
  %arena = sched.slab "arena" size 64 : !sched.slab
  %g = sched.view %arena[0] : !sched.buffer<4xf32>
  %t = sched.broadcast_start %g root 0 : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.all_reduce_done' op waits for a token that is not made by sched.all_reduce_start}}
  sched.all_reduce_done %t
}

// -----

// Tests that a program declares each slab once (program_c1).
sched.program @program_c1 attributes {role = "step"} {
  %a = sched.slab "arena" size 64 : !sched.slab
  // expected-error @+1 {{'sched.slab' op declares slab 'arena' a second time}}
  %b = sched.slab "arena" size 64 : !sched.slab
}

// -----

// Tests that two live views overlapping in bytes, neither aliasing the
// other, are rejected (program_c2).
sched.kernel @k(%a: tensor<16xf32>) -> tensor<16xf32> attributes {kind = "loop"} {
  sched.yield %a : tensor<16xf32>
}
sched.program @program_c2 attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  // expected-note @+1 {{the other view}}
  %a = sched.view %arena[0] : !sched.buffer<16xf32>
  %b = sched.view %arena[0] : !sched.buffer<16xf32>
  %c = sched.view %arena[64] : !sched.buffer<16xf32>
  // expected-error @-2 {{'sched.view' op shares bytes [0, 64) of slab 'arena' with another view while both are live (steps 0..1 and steps 0..1) and neither aliases the other}}
  sched.launch @k(%a : !sched.buffer<16xf32>) -> (%b : !sched.buffer<16xf32>)
  sched.launch @k(%b : !sched.buffer<16xf32>) -> (%a : !sched.buffer<16xf32>)
}

// -----

// Tests that argument names are unique (program_c3).
sched.program @program_c3 attributes {role = "step"} {
  %io = sched.slab "io" size 128 : !sched.slab
  %a = sched.view %io[0] : !sched.buffer<4xf32>
  %b = sched.view %io[64] : !sched.buffer<4xf32>
  sched.argument "x" "input" %a : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.argument' op argument name 'x' is used twice}}
  sched.argument "x" "input" %b : !sched.buffer<4xf32>
}

// -----

// Tests that nothing touches a collective's buffer while it is in flight
// (program_c4).
sched.kernel @k(%a: tensor<16xf32>) -> tensor<16xf32> attributes {kind = "loop"} {
  sched.yield %a : tensor<16xf32>
}
sched.program @program_c4 attributes {role = "step"} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %g = sched.view %arena[0] : !sched.buffer<16xf32>
  %h = sched.view %arena[64] : !sched.buffer<16xf32>
  // expected-note @+1 {{the collective starts here}}
  %t = sched.all_reduce_start "sum" %g : !sched.buffer<16xf32>
  // expected-error @+1 {{'sched.launch' op touches bytes [0, 64) of sched.all_reduce_start's buffer while the collective is in flight (started at step 0, done at step 2)}}
  sched.launch @k(%g : !sched.buffer<16xf32>) -> (%h : !sched.buffer<16xf32>)
  sched.all_reduce_done %t
}

// -----

// Tests that a state result is its argument's buffer (program_c5).
sched.program @program_c5 attributes {role = "step"} {
  %params = sched.slab "params" size 64 : !sched.slab
  %arena = sched.slab "arena" size 64 : !sched.slab
  %w = sched.view %params[0] : !sched.buffer<4xf32>
  %n = sched.view %arena[0] : !sched.buffer<4xf32>
  sched.argument "w" "param" %w : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.result' op state result 'w' is not in its argument's buffer (copy it back first)}}
  sched.result "w" "param" %n : !sched.buffer<4xf32>
}

// -----

// Tests that a result's labels name an i64 or i32 input argument
// (program_c7): here a float input.
sched.program @program_c7 attributes {role = "step"} {
  %io = sched.slab "io" size 128 : !sched.slab
  %x = sched.view %io[0] : !sched.buffer<4xf32>
  %a = sched.view %io[64] : !sched.buffer<f32>
  sched.argument "x" "input" %x : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.result' op counts the labels of 'x', which is not an i64 or i32 input argument}}
  sched.result "accuracy" "metric" %a {labels = "x", ignore = -1 : i64} : !sched.buffer<f32>
}

// -----

// Tests that a result's labels name an argument there is (program_c7).
sched.program @program_c7_missing attributes {role = "step"} {
  %io = sched.slab "io" size 64 : !sched.slab
  %a = sched.view %io[0] : !sched.buffer<f32>
  // expected-error @+1 {{'sched.result' op counts the labels of 'targets', which is not an i64 or i32 input argument}}
  sched.result "accuracy" "metric" %a {labels = "targets", ignore = -1 : i64} : !sched.buffer<f32>
}

// -----

// Tests that a program's role is one of the ABI's (program_c6).
// expected-error @+1 {{'sched.program' op role 'train' is not step or eval}}
sched.program @program_c6 attributes {role = "train"} {
}

// -----

// Tests that a triangle is one the step program encodes (matmul_c9).
sched.program @matmul_c9 attributes {role = "step"} {
  %arena = sched.slab "arena" size 512 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[64] : !sched.buffer<2x2xf32>
  // expected-error @+1 {{'sched.matmul' op triangle 'lower' is not one of full, out_lower, lhs_lower, lhs_upper, rhs_lower, rhs_upper}}
  sched.matmul %a, %a -> %c {triangle = "lower"} : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that a triangle lies over a square matrix (matmul_c9): op(lhs) is
// 2x3 here.
sched.program @matmul_c9_square attributes {role = "step"} {
  %arena = sched.slab "arena" size 512 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x3xf32>
  %b = sched.view %arena[64] : !sched.buffer<3x2xf32>
  %c = sched.view %arena[128] : !sched.buffer<2x2xf32>
  // expected-error @+1 {{'sched.matmul' op triangle lhs_lower needs a square op(lhs); it is 2x3}}
  sched.matmul %a, %b -> %c {triangle = "lhs_lower"} : !sched.buffer<2x3xf32>, !sched.buffer<3x2xf32> -> !sched.buffer<2x2xf32>
}

// -----

// Tests that a triangle goes with no epilogue (matmul_c9): a skipped
// output would not hold the bias.
sched.program @matmul_c9_bias attributes {role = "step"} {
  %arena = sched.slab "arena" size 512 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<2x2xf32>
  %c = sched.view %arena[64] : !sched.buffer<2x2xf32>
  %b = sched.view %arena[128] : !sched.buffer<2xf32>
  // expected-error @+1 {{'sched.matmul' op triangle out_lower goes with no bias, aux or activation}}
  sched.matmul %a, %a -> %c bias(%b : !sched.buffer<2xf32>) {triangle = "out_lower"} : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
}
