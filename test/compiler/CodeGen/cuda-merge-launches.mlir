// RUN: sinterc %s --entry=dropouts --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=MERGED
// RUN: sinterc %s --entry=dropouts --target=cuda --cuda-merge-launches=false --compile-to=lowered | FileCheck %s --check-prefix=APART
// RUN: sinterc %s --entry=dropouts --target=cuda-host --compile-to=lowered | FileCheck %s --check-prefix=HOST
// RUN: sinterc %s --entry=dependent --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=DEPENDENT
// RUN: sinterc %s --entry=reused_bytes --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=REUSED
// RUN: sinterc %s --entry=column_sums --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=COLUMNS
// RUN: sinterc %S/Inputs/one_dense.pbtxt --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=BUCKET
// RUN: not sinterc %s --entry=dropouts --cuda-merge-launches=false --compile-to=lowered 2>&1 | FileCheck %s --check-prefix=CPU
// Tests sinter-merge-cuda-launches (compiler/CodeGen/Cuda/MergeLaunches.cpp):
// neighbouring launches that touch disjoint bytes run as one kernel whose
// grid is the members' grids one after another; block b runs the member
// whose range holds it, as block b - start of that member's grid.

// Two dropouts of one input (4096 blocks each): one launch of 8192 blocks,
// the members' words one after another (each member's dropout key last),
// the label the first kernel's number, x2 and the op names; each member's
// buffers (indices into the launch's) and count of origins in
// sched.members, for the step program.
// MERGED: sched.launch @sinter_k0_x2(%x, %step : {{.*}}) -> (%v, %v_0 : {{.*}}) {args = array<i64: 0, 4194304, 0, -621772950581698083, 0, 4194304, 4194304, -7037347547344193994>, bytes = 16777232 : i64, extent = 8192 : i64, label = "k0_x2_dropout", sched.cuda_block = 256 : i64, sched.members = [{inputs = array<i64: 0, 1>, origins = 1 : i64, outputs = array<i64: 0>}, {inputs = array<i64: 0, 1>, origins = 1 : i64, outputs = array<i64: 1>}], sched.origins = [#{{.*}}, #{{.*}}], symbol = "sinter_k0_x2"}
// MERGED-NOT: sched.launch
// MERGED-LABEL: func.func @sinter_k0_x2(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xi8>, %arg3: memref<?xi8>, %arg4: memref<?xi8>, %arg5: i64, %arg6: i64, %arg7: i64, %arg8: i64, %arg9: i64, %arg10: i64, %arg11: i64, %arg12: i64)
// MERGED-SAME: sched.cuda_block = 256 : i64, sched.cuda_grid = 8192 : i64, sched.cuda_members = array<i64: 4096, 4096>, sched.kernel_args = 8 : i64
// MERGED: %[[BID:.*]] = gpu.block_id x
// The first member: blocks [0, 4096), its block id the grid's, its words
// the first four, its grid-stride loop over a grid of 4096.
// MERGED: %[[IN0:.*]] = arith.cmpi ult, %[[BID]], %c4096
// MERGED: scf.if %[[IN0]] {
// MERGED:   arith.index_cast %arg5
// MERGED:   %[[FIRST0:.*]] = arith.muli %[[BID]], %[[THREADS0:.*]] : index
// MERGED:   %[[STRIDE0:.*]] = arith.muli %[[THREADS0]], %c4096
// MERGED:   scf.for %{{.*}} = %{{.*}} to %c1048576 step %[[STRIDE0]]
// MERGED:     arith.xori %arg8,
// The second: blocks [4096, 8192) as its blocks [0, 4096), words 5 to 8.
// MERGED: %[[LOCAL1:.*]] = arith.subi %[[BID]], %c4096
// MERGED: %[[IN1:.*]] = arith.cmpi ult, %[[LOCAL1]], %c4096
// MERGED: scf.if %[[IN1]] {
// MERGED:   arith.index_cast %arg9
// MERGED:   arith.muli %[[LOCAL1]], %{{.*}} : index
// MERGED:   scf.for
// MERGED:     arith.xori %arg12,
// MERGED-NOT: gpu.grid_dim
// MERGED-NOT: func.func

// APART: sched.launch @sinter_k0({{.*}}label = "k0_dropout"
// APART: sched.launch @sinter_k0({{.*}}label = "k1_dropout"

// On the host (one thread a block), the merged kernel runs every block of
// its grid in turn: each member only in the blocks of its range.
// HOST-LABEL: func.func private @sinter_k0_x2_body(
// HOST: scf.for %[[B:.*]] = %c0 to %c8192 step %c1 {
// HOST:   arith.cmpi ult, %[[B]], %c4096
// HOST:   arith.subi %[[B]], %c4096

// CPU: error: --cuda-merge-launches needs --target=cuda (or cuda-host)

func.func @dropouts(%x: tensor<4x8x128x256xf32> {sgraph.input = "x"},
                    %step: tensor<i64> {sgraph.input = "step"})
    -> (tensor<4x8x128x256xf32> {sgraph.name = "a"},
        tensor<4x8x128x256xf32> {sgraph.name = "b"}) {
  %a = sgraph.dropout %x, %step {rate = 2.000000e-01 : f64, seed = 7 : i64} : tensor<4x8x128x256xf32>, tensor<i64>
  %b = sgraph.dropout %x, %step {rate = 2.000000e-01 : f64, seed = 8 : i64} : tensor<4x8x128x256xf32>, tensor<i64>
  return %a, %b : tensor<4x8x128x256xf32>, tensor<4x8x128x256xf32>
}

// A kernel that reads what the one before it writes: two launches, the
// second saying why in sched.merge.
// DEPENDENT: sched.launch @sinter_k0(%x : {{.*}}) -> (%[[S:.*]] : !sched.buffer<96xf32>)
// DEPENDENT-NOT: sched.merge
// DEPENDENT: sched.launch @sinter_k1(%x, %[[S]] : {{.*}}label = "k1_broadcast_mul", {{.*}}sched.merge = "apart from k0's run: reads bytes k0 writes"
// DEPENDENT-NOT: cuda_members
func.func @dependent(%x: tensor<64x96xf32> {sgraph.input = "x"})
    -> (tensor<64x96xf32> {sgraph.name = "y"}) {
  %s = sgraph.reduce_sum %x axes = [0] : (tensor<64x96xf32>) -> tensor<96xf32>
  %b = sgraph.broadcast %s : tensor<96xf32> to tensor<64x96xf32>
  %y = sgraph.mul %x, %b : (tensor<64x96xf32>, tensor<64x96xf32>) -> tensor<64x96xf32>
  return %y : tensor<64x96xf32>
}

// Independent values, but the memory plan gives the tanh's result the
// bytes of the matmul's, which the row kernel before it reads last: run at
// once, the tanh would overwrite the row kernel's input. Two launches.
// REUSED: %[[P:.*]] = sched.view %arena[[[AT:[0-9]+]]] {category = "activations"} : !sched.buffer<64x256xf32>
// REUSED: sched.launch @sinter_k1(%[[P]] : {{.*}}label = "k1_exp_reduce_max", sched.cuda_block = 256 : i64
// REUSED: %[[R:.*]] = sched.view %arena[[[AT]]] {category = "activations"} : !sched.buffer<64x256xf32>
// REUSED: sched.launch @sinter_k2(%z : {{.*}}) -> (%[[R]] : {{.*}}label = "k2_tanh", sched.cuda_block = 256 : i64, sched.merge = "apart from k1's run: the memory plan gives it bytes of a buffer k1 uses"
// REUSED-NOT: cuda_members
func.func @reused_bytes(%x: tensor<64x256xf32> {sgraph.input = "x"},
                        %z: tensor<64x256xf32> {sgraph.input = "z"},
                        %w: tensor<256x256xf32> {sgraph.input = "w"})
    -> (tensor<64x1xf32> {sgraph.name = "y"},
        tensor<64x256xf32> {sgraph.name = "o"}) {
  %p = sgraph.matmul %x, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %e = sgraph.exp %p : tensor<64x256xf32>
  %y = sgraph.reduce_max %e axes = [1] {keepdims = true} : (tensor<64x256xf32>) -> tensor<64x1xf32>
  %r = sgraph.tanh %z : tensor<64x256xf32>
  %o = sgraph.matmul %r, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  return %y, %o : tensor<64x1xf32>, tensor<64x256xf32>
}

// Two column sums (a bias gradient's form), each with the block's shared
// array of partials: one launch, each member keeping an array of its own
// (two workgroup attributions once outlined).
// COLUMNS: sched.launch @sinter_k0_x2(%x, %z : {{.*}}label = "k0_x2_reduce_sum"
// COLUMNS-LABEL: func.func @sinter_k0_x2(
// COLUMNS-SAME: sched.cuda_members = array<i64: 3, 3>
// COLUMNS: %[[BID:.*]] = gpu.block_id x
// COLUMNS: arith.cmpi ult, %[[BID]], %c3
// COLUMNS: memref.alloca() {sched.cuda_workgroup} : memref<256xf32
// COLUMNS: gpu.barrier
// COLUMNS: arith.subi %[[BID]], %c3
// COLUMNS: memref.alloca() {sched.cuda_workgroup} : memref<256xf32
// COLUMNS: gpu.barrier
func.func @column_sums(%x: tensor<64x96xf32> {sgraph.input = "x"},
                       %z: tensor<64x96xf32> {sgraph.input = "z"})
    -> (tensor<96xf32> {sgraph.name = "s"}, tensor<96xf32> {sgraph.name = "t"}) {
  %s = sgraph.reduce_sum %x axes = [0] : (tensor<64x96xf32>) -> tensor<96xf32>
  %t = sgraph.reduce_sum %z axes = [0] : (tensor<64x96xf32>) -> tensor<96xf32>
  return %s, %t : tensor<96xf32>, tensor<96xf32>
}

// Bytes shared through a root: the bias gradient's column sum (k4) writes
// its own bytes of the gradients' bucket, which no byte k2 reads meets, but
// the memory plan gave the bucket's bytes to k2's input until the bucket
// was live. The liveness rule takes a view's life to be its root's, so
// merged, the program would use both at once: two launches. (Checked on
// the views alone, the merge broke the plan: sinterc refused the program.)
// BUCKET: label = "k4_reduce_sum", {{.*}}sched.merge = "apart from k2's run: the memory plan gives it bytes of a buffer k2 uses"
