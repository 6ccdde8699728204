// RUN: sinterc %s --run=p | FileCheck %s
// RUN: not sinterc %s --run=several 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: not sinterc %s --run=lowered 2>&1 | FileCheck %s --check-prefix=LOWERED

// The interpreter runs a sched.program on its slabs' bytes: a constant
// filled in, a kernel writing into the arena, an aliasing view reading the
// same bytes as another shape, a matmul with its whole epilogue (alpha,
// bias, relu), bytes reused once their value is dead, an all-gather as one
// rank, a copy; results are read after the last step.
//
//   c = [1, 2, 3, 4]         a = c + c = [2, 4, 6, 8], read as [[2, 4], [6, 8]]
//   m = relu(0.5 * a @ w + bias) with w = [[1, -1], [0, 1]], bias = [-1, 0]
//     = relu([[1, 1], [3, 1]] + [-1, 0]) = [[0, 1], [2, 1]]
//   s = sum(m) = 4, written where a was;  g = m gathered, h = g copied
//   q = sum(h * h) = 6

// CHECK: s = 4
// CHECK-NEXT: q = 6

sched.kernel @double(%x: tensor<4xf32>) -> tensor<4xf32> attributes {kind = "loop"} {
  %0 = sgraph.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  sched.yield %0 : tensor<4xf32>
}
sched.kernel @sum(%x: tensor<2x2xf32>) -> tensor<f32> attributes {kind = "reduction"} {
  %0 = sgraph.reduce_sum %x axes = [0, 1] : (tensor<2x2xf32>) -> tensor<f32>
  sched.yield %0 : tensor<f32>
}
sched.kernel @sumsq(%x: tensor<2x2xf32>) -> tensor<f32> attributes {kind = "reduction"} {
  %0 = sgraph.mul %x, %x : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = sgraph.reduce_sum %0 axes = [0, 1] : (tensor<2x2xf32>) -> tensor<f32>
  sched.yield %1 : tensor<f32>
}

sched.program @p attributes {role = "step", seed = 0 : i64} {
  %arena = sched.slab "arena" size 256 : !sched.slab
  %constants = sched.slab "constants" size 192 : !sched.slab
  %c = sched.view %constants[0] : !sched.buffer<4xf32>
  %w = sched.view %constants[64] : !sched.buffer<2x2xf32>
  %bias = sched.view %constants[128] : !sched.buffer<2xf32>
  sched.fill %c, dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> : !sched.buffer<4xf32>
  sched.fill %w, dense<[[1.0, -1.0], [0.0, 1.0]]> : tensor<2x2xf32> : !sched.buffer<2x2xf32>
  sched.fill %bias, dense<[-1.0, 0.0]> : tensor<2xf32> : !sched.buffer<2xf32>
  %a = sched.view %arena[0] : !sched.buffer<4xf32>
  sched.launch @double(%c : !sched.buffer<4xf32>) -> (%a : !sched.buffer<4xf32>)
  %a2 = sched.view %arena[0] aliases(%a : !sched.buffer<4xf32>) : !sched.buffer<2x2xf32>
  %m = sched.view %arena[64] : !sched.buffer<2x2xf32>
  sched.matmul %a2, %w -> %m bias(%bias : !sched.buffer<2xf32>) {alpha = 0.5 : f64, activation = "relu"} : !sched.buffer<2x2xf32>, !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
  %s = sched.view %arena[0] : !sched.buffer<f32>
  sched.launch @sum(%m : !sched.buffer<2x2xf32>) -> (%s : !sched.buffer<f32>)
  %g = sched.view %arena[128] : !sched.buffer<2x2xf32>
  %t = sched.all_gather_start %m -> %g : !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
  sched.all_gather_done %t
  %h = sched.view %arena[192] : !sched.buffer<2x2xf32>
  sched.copy %g -> %h : !sched.buffer<2x2xf32> -> !sched.buffer<2x2xf32>
  %q = sched.view %arena[64] : !sched.buffer<f32>
  sched.launch @sumsq(%h : !sched.buffer<2x2xf32>) -> (%q : !sched.buffer<f32>)
  sched.result "s" "metric" %s : !sched.buffer<f32>
  sched.result "q" "metric" %q : !sched.buffer<f32>
}

// A program built for two ranks: its all-gather doubles the buffer, which
// one rank cannot do.
// RANKS: error: 'sched.all_gather_start' op moves 16 bytes into 32: the interpreter runs collectives as one rank, and this program was built for several
sched.program @several attributes {role = "step", seed = 0 : i64} {
  %arena = sched.slab "arena" size 128 : !sched.slab
  %x = sched.view %arena[0] : !sched.buffer<4xf32>
  %y = sched.view %arena[64] : !sched.buffer<8xf32>
  %t = sched.all_gather_start %x -> %y : !sched.buffer<4xf32> -> !sched.buffer<8xf32>
  sched.all_gather_done %t
  sched.result "y" "tensor" %y : !sched.buffer<8xf32>
}

// A launch of a lowered kernel (a function) is code the interpreter does
// not run.
// LOWERED: error: 'sched.launch' op launches @k_fn, which is no sched.kernel: the interpreter runs the scheduled phase, before the kernels are lowered
func.func @k_fn(%a: memref<?xi8>) {
  return
}
sched.program @lowered attributes {role = "step", seed = 0 : i64} {
  %arena = sched.slab "arena" size 64 : !sched.slab
  %x = sched.view %arena[0] : !sched.buffer<4xf32>
  sched.launch @k_fn() -> (%x : !sched.buffer<4xf32>) {extent = 1 : i64, symbol = "sinter_k_fn"}
  sched.result "x" "tensor" %x : !sched.buffer<4xf32>
}
