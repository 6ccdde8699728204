// RUN: sinterc %s --entry=softmax --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=SOFTMAX
// RUN: sinterc %s --entry=softmax --target=cuda --cuda-row-slots=0 --compile-to=lowered | FileCheck %s --check-prefix=NOSLOTS
// RUN: sinterc %s --entry=long_softmax --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=LONG
// RUN: sinterc %s --entry=long_softmax --target=cuda --cuda-row-slots=2 --compile-to=lowered | FileCheck %s --check-prefix=SLOTS2
// RUN: sinterc %s --entry=long_softmax --target=cuda --cuda-row-slots=16 --compile-to=lowered | FileCheck %s --check-prefix=SLOTS16
// RUN: not sinterc %s --entry=softmax --cuda-row-slots=2 --compile-to=lowered 2>&1 | FileCheck %s --check-prefix=SLOTS-CPU
// RUN: not sinterc %s --entry=softmax --target=cuda --cuda-row-slots=17 --compile-to=lowered 2>&1 | FileCheck %s --check-prefix=SLOTS-RANGE
// SLOTS-CPU: error: --cuda-row-slots needs --target=cuda (or cuda-host)
// SLOTS-RANGE: error: --cuda-row-slots=17 is not in [0, 16]
// RUN: sinterc %s --entry=tanh --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=LOOP
// RUN: sinterc %s --entry=layer_norm --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=NORM
// RUN: sinterc %s --entry=dropout --target=cuda --cuda-merge-launches=false --compile-to=lowered | FileCheck %s --check-prefix=DROPOUT
// RUN: sinterc %s --entry=concat --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=CONCAT
// RUN: sinterc %s --entry=colsum --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=COLUMNS
// RUN: sinterc %s --entry=batch1_sum --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=BATCH1

// RUN: sinterc %s --entry=embedding_grad --target=cuda --compile-to=lowered | FileCheck %s --check-prefix=EMBGRAD
// Tests the CUDA target's kernels (compiler/CodeGen/Cuda/CudaKernels.cpp)
// in the lowered phase: each launch names a function with the CUDA kernel
// signature (five memref<?xi8> slabs, then the launch's words as i64) and
// records its launch shape (extent = blocks, sched.cuda_block = threads).

// A softmax over rows of 256: one block per row (4x8x128 = 4096 rows,
// 256 threads). A thread's element of the row (its slot: rows of 256 over
// 256 threads need one) is loaded once, before the first phase, and kept:
// each phase computes the slot's values of that phase from the kept ones,
// then a strided loop over the rest of the row (from thread + 1 x threads:
// nothing on the GPU, every element but the first on the host's one
// thread) recomputes from memory as before, then an all-reduce across the
// block. The slot's index past the row (a launch with fewer elements than
// threads) loads element 0, adds nothing and stores nothing. Thread 0
// writes the per-row results; a barrier ends the row, whose all-reduces'
// shared memory the next row reuses.
// SOFTMAX: sched.launch @sinter_k0(%x : {{.*}}) -> ({{.*}}) {args = array<i64: 0, {{.*}}>, {{.*}}extent = 4096 : i64, {{.*}}sched.cuda_block = 256 : i64
// SOFTMAX-LABEL: func.func @sinter_k0(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xi8>, %arg3: memref<?xi8>, %arg4: memref<?xi8>, %arg5: i64, %arg6: i64, %arg7: i64, %arg8: i64)
// SOFTMAX-SAME: sched.cuda_block = 256 : i64, sched.cuda_grid = 4096 : i64, sched.kernel_args = 4 : i64
// SOFTMAX: %[[TID:.*]] = gpu.thread_id x
// SOFTMAX: %[[BID:.*]] = gpu.block_id x
// SOFTMAX: %[[THREADS:.*]] = gpu.block_dim x
// SOFTMAX: %[[BLOCKS:.*]] = gpu.grid_dim x
// SOFTMAX: scf.for %[[ROW:.*]] = %[[BID]] to %c4096 step %[[BLOCKS]] {
// SOFTMAX:   %[[VALID:.*]] = arith.cmpi ult, %[[TID]], %c256
// SOFTMAX:   %[[AT:.*]] = arith.select %[[VALID]], %[[TID]], %c0
// SOFTMAX:   %[[REST:.*]] = arith.addi %[[TID]], %[[THREADS]]
// SOFTMAX:   %[[X:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[AT]]]
// SOFTMAX:   %[[P0:.*]] = arith.select %[[VALID]], %[[X]], %cst
// SOFTMAX:   scf.for %{{.*}} = %[[REST]] to %c256 step %[[THREADS]] iter_args(%{{.*}} = %[[P0]])
// SOFTMAX:     memref.load
// SOFTMAX:     arith.maximumf
// SOFTMAX:   %[[MAX:.*]] = gpu.all_reduce maximumf %{{.*}} uniform
// SOFTMAX-NOT: memref.load
// SOFTMAX:   arith.subf %[[X]], %[[MAX]]
// SOFTMAX:   math.fma
// SOFTMAX:   %[[A:.*]] = arith.addf %[[E:.*]], %{{.*}} fastmath<reassoc,contract>
// SOFTMAX:   %[[P1:.*]] = arith.select %[[VALID]], %[[A]], %{{.*}}
// SOFTMAX:   scf.for %{{.*}} = %[[REST]] to %c256 step %[[THREADS]] iter_args(%{{.*}} = %[[P1]])
// SOFTMAX:     memref.load
// SOFTMAX:     arith.subf %{{.*}}, %[[MAX]]
// SOFTMAX:     math.fma
// SOFTMAX:     arith.addf {{.*}} fastmath<reassoc,contract>
// SOFTMAX:   %[[SUM:.*]] = gpu.all_reduce add %{{.*}} uniform
// SOFTMAX-NOT: memref.load
// SOFTMAX:   %[[Y:.*]] = arith.divf %[[E]], %[[SUM]]
// SOFTMAX:   scf.if %[[VALID]] {
// SOFTMAX:     memref.store %[[Y]], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[AT]]]
// SOFTMAX:   scf.for %{{.*}} = %[[REST]] to %c256{{.*}} step %[[THREADS]] {
// SOFTMAX:     memref.load
// SOFTMAX:     math.fma
// SOFTMAX:     arith.divf %{{.*}}, %[[SUM]]
// SOFTMAX:     memref.store
// SOFTMAX:   arith.cmpi eq, %[[TID]], %c0
// SOFTMAX:   scf.if
// SOFTMAX:     memref.store %[[MAX]]
// SOFTMAX:     memref.store %[[SUM]]
// SOFTMAX:   gpu.barrier

// --cuda-row-slots=0 keeps nothing: each phase is one loop strided by the
// block's threads from the thread's index, which recomputes the earlier
// phases' values from the input (the last phase exp, the CPU's
// polynomial form, math.fma).
// NOSLOTS: scf.for %[[ROW:.*]] = %{{.*}} to %c4096 step
// NOSLOTS-NOT: arith.cmpi ult
// NOSLOTS:   scf.for %{{.*}} = %[[TID:.*]] to %c256 step %[[THREADS:.*]] iter_args
// NOSLOTS:     arith.maximumf
// NOSLOTS:   %[[MAX:.*]] = gpu.all_reduce maximumf %{{.*}} uniform
// NOSLOTS:   scf.for %{{.*}} = %[[TID]] to %c256{{.*}} step %[[THREADS]] iter_args
// NOSLOTS:     arith.subf %{{.*}}, %[[MAX]]
// NOSLOTS:   %[[SUM:.*]] = gpu.all_reduce add %{{.*}} uniform
// NOSLOTS:   scf.for %{{.*}} = %[[TID]] to %c256{{.*}} step %[[THREADS]] {
// NOSLOTS:     memref.load
// NOSLOTS:     math.fma
// NOSLOTS:     arith.divf %{{.*}}, %[[SUM]]
// NOSLOTS:     memref.store

// A row longer than the slots span (rows of 4096: 16 a thread of 256, over
// the default 8) keeps nothing: each phase is the loop from the thread's
// index, 8 elements an iteration (--cuda-row-slots=2: 2), the first in the
// row by the loop's bound, the others' loads independent of it and guarded
// as a slot's are. --cuda-row-slots=16 keeps the row in 16 slots.
// LONG: scf.for %[[ROW:.*]] = %{{.*}} to %c64 step
// LONG-NOT: arith.cmpi ult
// LONG: %[[STRIDE:.*]] = arith.muli %{{.*}}, %c8 : index
// LONG: scf.for %{{.*}} = %[[TID:.*]] to %c4096 step %[[STRIDE]] iter_args
// LONG-COUNT-7: arith.cmpi ult, %{{.*}}, %c4096
// LONG-NOT: arith.cmpi ult, %{{.*}}, %c4096
// LONG: scf.yield
// SLOTS2: %[[STEP:.*]] = arith.muli %{{.*}}, %c2 : index
// SLOTS2: scf.for %[[E:.*]] = %{{.*}} to %c4096 step %[[STEP]] iter_args
// SLOTS2-NOT: arith.cmpi
// SLOTS2: memref.load %{{.*}}[%{{.*}}, %[[E]]]
// SLOTS2: %[[E1:.*]] = arith.addi %[[E]], %{{.*}} : index
// SLOTS2: %[[IN:.*]] = arith.cmpi ult, %[[E1]], %c4096
// SLOTS2: %[[AT1:.*]] = arith.select %[[IN]], %[[E1]], %c0
// SLOTS2: memref.load %{{.*}}[%{{.*}}, %[[AT1]]]
// SLOTS2: arith.select %[[IN]]
// SLOTS2: scf.yield
// SLOTS16: scf.for %[[ROW:.*]] = %{{.*}} to %c64 step
// SLOTS16-COUNT-16: arith.cmpi ult, %{{.*}}, %c4096
// SLOTS16: arith.muli %{{.*}}, %c16 : index

func.func @softmax(%x: tensor<4x8x128x256xf32> {sgraph.input = "x"})
    -> (tensor<4x8x128x256xf32> {sgraph.name = "y"}) {
  %m = sgraph.reduce_max %x axes = [3] {keepdims = true} : (tensor<4x8x128x256xf32>) -> tensor<4x8x128x1xf32>
  %d = sgraph.sub %x, %m : (tensor<4x8x128x256xf32>, tensor<4x8x128x1xf32>) -> tensor<4x8x128x256xf32>
  %e = sgraph.exp %d : tensor<4x8x128x256xf32>
  %s = sgraph.reduce_sum %e axes = [3] {keepdims = true} : (tensor<4x8x128x256xf32>) -> tensor<4x8x128x1xf32>
  %y = sgraph.div %e, %s : (tensor<4x8x128x256xf32>, tensor<4x8x128x1xf32>) -> tensor<4x8x128x256xf32>
  return %y : tensor<4x8x128x256xf32>
}

func.func @long_softmax(%x: tensor<64x4096xf32> {sgraph.input = "x"})
    -> (tensor<64x4096xf32> {sgraph.name = "y"}) {
  %m = sgraph.reduce_max %x axes = [1] {keepdims = true} : (tensor<64x4096xf32>) -> tensor<64x1xf32>
  %d = sgraph.sub %x, %m : (tensor<64x4096xf32>, tensor<64x1xf32>) -> tensor<64x4096xf32>
  %e = sgraph.exp %d : tensor<64x4096xf32>
  %s = sgraph.reduce_sum %e axes = [1] {keepdims = true} : (tensor<64x4096xf32>) -> tensor<64x1xf32>
  %y = sgraph.div %e, %s : (tensor<64x4096xf32>, tensor<64x1xf32>) -> tensor<64x4096xf32>
  return %y : tensor<64x4096xf32>
}

// An elementwise kernel: one grid-stride loop over the flattened 64,000
// elements, 256 threads a block, ceil(64000 / 256) = 250 blocks; each
// thread's first element is block * threads + thread.
// LOOP: sched.launch @sinter_k0({{.*}}extent = 250 : i64, {{.*}}sched.cuda_block = 256 : i64
// LOOP-LABEL: func.func @sinter_k0(
// LOOP: %[[TID:.*]] = gpu.thread_id x
// LOOP: %[[BID:.*]] = gpu.block_id x
// LOOP: %[[THREADS:.*]] = gpu.block_dim x
// LOOP: %[[BLOCKS:.*]] = gpu.grid_dim x
// LOOP: %[[B0:.*]] = arith.muli %[[BID]], %[[THREADS]]
// LOOP: %[[FIRST:.*]] = arith.addi %[[B0]], %[[TID]]
// LOOP: %[[STRIDE:.*]] = arith.muli %[[BLOCKS]], %[[THREADS]]
// LOOP: scf.for %[[I:.*]] = %[[FIRST]] to %c64000 step %[[STRIDE]] {
// LOOP:   memref.load %{{.*}}[%[[I]]] : memref<64000xf32>
// LOOP-NOT: math.tanh
// LOOP:   math.fma
// LOOP:   memref.store %{{.*}}, %{{.*}}[%[[I]]] : memref<64000xf32>
// LOOP-NOT: gpu.all_reduce

func.func @tanh(%x: tensor<64x1000xf32> {sgraph.input = "x"})
    -> (tensor<64x1000xf32> {sgraph.name = "y"}) {
  %y = sgraph.tanh %x : tensor<64x1000xf32>
  return %y : tensor<64x1000xf32>
}

// A layer norm's row op (1/sqrt(var + eps), per row): every thread
// computes it from the row's totals; rows of 48 get a block of 64
// threads (a warp's multiple, not 256 mostly idle).
// NORM: sched.launch @sinter_k0({{.*}}extent = 32 : i64, {{.*}}sched.cuda_block = 64 : i64
// NORM: %[[S:.*]] = gpu.all_reduce add
// NORM: %[[V:.*]] = gpu.all_reduce add
// NORM: scf.for
// NORM:   arith.mulf %[[V]]
// NORM:   math.sqrt
// NORM:   arith.divf
// NORM:   memref.store
// NORM: gpu.barrier

func.func @layer_norm(%x: tensor<32x48xf32> {sgraph.input = "x"})
    -> (tensor<32x48xf32> {sgraph.name = "y"}) {
  %inv = sgraph.constant dense<0.020833334> : tensor<f32>
  %eps = sgraph.constant dense<1.0e-5> : tensor<f32>
  %s = sgraph.reduce_sum %x axes = [1] {keepdims = true} : (tensor<32x48xf32>) -> tensor<32x1xf32>
  %mean = sgraph.mul %s, %inv : (tensor<32x1xf32>, tensor<f32>) -> tensor<32x1xf32>
  %d = sgraph.sub %x, %mean : (tensor<32x48xf32>, tensor<32x1xf32>) -> tensor<32x48xf32>
  %d2 = sgraph.mul %d, %d : (tensor<32x48xf32>, tensor<32x48xf32>) -> tensor<32x48xf32>
  %v = sgraph.reduce_sum %d2 axes = [1] {keepdims = true} : (tensor<32x48xf32>) -> tensor<32x1xf32>
  %var = sgraph.mul %v, %inv : (tensor<32x1xf32>, tensor<f32>) -> tensor<32x1xf32>
  %ve = sgraph.add %var, %eps : (tensor<32x1xf32>, tensor<f32>) -> tensor<32x1xf32>
  %r = sgraph.rsqrt %ve : tensor<32x1xf32>
  %y = sgraph.mul %d, %r : (tensor<32x48xf32>, tensor<32x1xf32>) -> tensor<32x48xf32>
  return %y : tensor<32x48xf32>
}

// A dropout's key is a word of the launch (the last of args), passed to
// the kernel as an i64 parameter like the places' offsets, so two layers'
// dropouts share one kernel (launched apart here: merged, they are one
// launch, cuda-merge-launches.mlir).
// DROPOUT: sched.launch @sinter_k0({{.*}}args = array<i64: 0, 4194304, 0, -621772950581698083>, {{.*}}label = "k0_dropout"
// DROPOUT: sched.launch @sinter_k0({{.*}}args = array<i64: 0, 4194304, 4194304, -7037347547344193994>, {{.*}}label = "k1_dropout"
// DROPOUT-LABEL: func.func @sinter_k0(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xi8>, %arg3: memref<?xi8>, %arg4: memref<?xi8>, %arg5: i64, %arg6: i64, %arg7: i64, %arg8: i64)
// DROPOUT-SAME: sched.kernel_args = 4 : i64
// DROPOUT-NOT: func.func

func.func @dropout(%x: tensor<4x8x128x256xf32> {sgraph.input = "x"},
                   %step: tensor<i64> {sgraph.input = "step"})
    -> (tensor<4x8x128x256xf32> {sgraph.name = "a"},
        tensor<4x8x128x256xf32> {sgraph.name = "b"}) {
  %a = sgraph.dropout %x, %step {rate = 2.000000e-01 : f64, seed = 7 : i64} : tensor<4x8x128x256xf32>, tensor<i64>
  %b = sgraph.dropout %x, %step {rate = 2.000000e-01 : f64, seed = 8 : i64} : tensor<4x8x128x256xf32>, tensor<i64>
  return %a, %b : tensor<4x8x128x256xf32>, tensor<4x8x128x256xf32>
}

// A concat of attention heads (the backward pass's QKV gradient): each
// operand read through its transpose, written through the merging reshape
// into its slice. Every thread copies elements: one grid-stride loop over
// all 2 x 4x32x48 of them (48 blocks of 256), each piece an if on the
// element's place; no per-thread loop over a whole slice.
// CONCAT: sched.launch @sinter_k0({{.*}}extent = 48 : i64, {{.*}}label = "k0_transpose_reshape_concat", sched.cuda_block = 256 : i64
// CONCAT-LABEL: func.func @sinter_k0(
// CONCAT-SAME: sched.cuda_block = 256 : i64, sched.cuda_grid = 48 : i64
// CONCAT: scf.for %{{.*}} = %{{.*}} to %c12288 step
// CONCAT-NOT: scf.for
// CONCAT: scf.if
// CONCAT: memref.load {{.*}}strided<[1536, 8, 256, 1]
// CONCAT: memref.store {{.*}}strided<[3072, 96, 8, 1]
// CONCAT: scf.if
// CONCAT: memref.load {{.*}}strided<[1536, 8, 256, 1]
// CONCAT: memref.store {{.*}}strided<[3072, 96, 8, 1], offset: ?>
// CONCAT-NOT: linalg.copy
// CONCAT: return

func.func @concat(%q: tensor<4x6x32x8xf32> {sgraph.input = "q"},
                  %k: tensor<4x6x32x8xf32> {sgraph.input = "k"})
    -> (tensor<4x32x96xf32> {sgraph.name = "qk"}) {
  %tq = sgraph.transpose %q permutation = [0, 2, 1, 3] : (tensor<4x6x32x8xf32>) -> tensor<4x32x6x8xf32>
  %rq = sgraph.reshape %tq : tensor<4x32x6x8xf32> to tensor<4x32x48xf32>
  %tk = sgraph.transpose %k permutation = [0, 2, 1, 3] : (tensor<4x6x32x8xf32>) -> tensor<4x32x6x8xf32>
  %rk = sgraph.reshape %tk : tensor<4x32x6x8xf32> to tensor<4x32x48xf32>
  %c = sgraph.concat %rq, %rk axis = 2 : (tensor<4x32x48xf32>, tensor<4x32x48xf32>) -> tensor<4x32x96xf32>
  return %c : tensor<4x32x96xf32>
}

// A sum down columns (a bias gradient: rows reduced, the innermost
// dimension kept): a warp's lanes side by side over 32 neighbouring
// columns (96 / 32 = 3 blocks), the block's 8 waves down the rows, so a
// warp reads 32 neighbouring elements; each thread's partial goes to the
// block's shared array (a workgroup attribution once outlined), and the
// first wave totals its column's 8 partials in order. A thread takes 8 of
// its rows an iteration (--cuda-row-slots), independent loads, the first
// in range by the loop's bound, the others guarded, summed in row order.
// COLUMNS: sched.launch @sinter_k0({{.*}}extent = 3 : i64, {{.*}}sched.cuda_block = 256 : i64
// COLUMNS-LABEL: func.func @sinter_k0(
// COLUMNS-SAME: sched.cuda_block = 256 : i64, sched.cuda_grid = 3 : i64
// COLUMNS: %[[SHARED:.*]] = memref.alloca() {sched.cuda_workgroup} : memref<256xf32, #gpu.address_space<workgroup>>
// COLUMNS: %[[LANES:.*]] = arith.minui %{{.*}}, %c32
// COLUMNS: %[[WAVES:.*]] = arith.divui %{{.*}}, %[[LANES]]
// COLUMNS: %[[LANE:.*]] = arith.remui %{{.*}}, %[[LANES]]
// COLUMNS: %[[WAVE:.*]] = arith.divui %{{.*}}, %[[LANES]]
// COLUMNS: scf.for
// COLUMNS: %[[STEP:.*]] = arith.muli %[[WAVES]], %c8
// COLUMNS: scf.for %[[R:.*]] = %[[WAVE]] to %c64 step %[[STEP]] iter_args
// COLUMNS:   memref.load %{{.*}}[%[[R]], %[[COL:.*]]] : memref<64x96xf32>
// COLUMNS:   %[[R1:.*]] = arith.addi %[[R]], %[[WAVES]]
// COLUMNS:   %[[IN:.*]] = arith.cmpi ult, %[[R1]], %c64
// COLUMNS:   %[[AT:.*]] = arith.select %[[IN]], %[[R1]], %c0
// COLUMNS:   memref.load %{{.*}}[%[[AT]], %[[COL]]] : memref<64x96xf32>
// COLUMNS:   arith.select %[[IN]]
// COLUMNS: memref.store %{{.*}}, %[[SHARED]]
// COLUMNS: gpu.barrier
// COLUMNS: scf.for %{{.*}} = %c0 to %[[WAVES]] step %c1 iter_args
// COLUMNS:   memref.load %[[SHARED]]
// COLUMNS: memref.store %{{.*}} : memref<96xf32>
// COLUMNS: gpu.barrier

func.func @colsum(%x: tensor<64x96xf32> {sgraph.input = "x"})
    -> (tensor<96xf32> {sgraph.name = "s"}) {
  %s = sgraph.reduce_sum %x axes = [0] : (tensor<64x96xf32>) -> tensor<96xf32>
  return %s : tensor<96xf32>
}

// An embedding's gradient: a thread per column (96) of each of 682 ranges
// of the table's 1000 rows (65536 / 96: 65472 threads, 256 blocks). Each
// zeroes its rows [r * 1000 / 682, (r + 1) * 1000 / 682) of its column,
// then reads all 128 indices in order and adds the gradient's row of each
// one in its range: every element one thread's, in index order.
// EMBGRAD: sched.launch @sinter_k0({{.*}}extent = 256 : i64, label = "k0_embedding_grad", sched.cuda_block = 256 : i64
// EMBGRAD-LABEL: func.func @sinter_k0(
// EMBGRAD: scf.for %[[T:.*]] = %{{.*}} to %c65472 step
// EMBGRAD:   %[[D:.*]] = arith.remui %[[T]], %c96
// EMBGRAD:   %[[R:.*]] = arith.divui %[[T]], %c96
// EMBGRAD:   %[[L0:.*]] = arith.muli %[[R]], %c1000
// EMBGRAD:   %[[LO:.*]] = arith.divui %[[L0]], %c682
// EMBGRAD:   %[[HI:.*]] = arith.divui %{{.*}}, %c682
// EMBGRAD:   scf.for %[[V:.*]] = %[[LO]] to %[[HI]] step %c1 {
// EMBGRAD:     memref.store %{{.*}}, %{{.*}}[%[[V]], %[[D]]] : memref<1000x96xf32>
// EMBGRAD:   scf.for %[[I:.*]] = %c0 to %c128 step %c1 {
// EMBGRAD:     %[[ID:.*]] = memref.load %{{.*}}[%[[I]]] : memref<128xi64>
// EMBGRAD:     %[[ROW:.*]] = arith.index_cast %[[ID]]
// EMBGRAD:     scf.if
// EMBGRAD:       memref.load %{{.*}}[%[[ROW]], %[[D]]] : memref<1000x96xf32>
// EMBGRAD:       memref.load %{{.*}}[%[[I]], %[[D]]] : memref<128x96xf32>
// EMBGRAD:       memref.store %{{.*}}, %{{.*}}[%[[ROW]], %[[D]]] : memref<1000x96xf32>

func.func @embedding_grad(%g: tensor<4x32x96xf32> {sgraph.input = "g"},
                          %ids: tensor<4x32xi64> {sgraph.input = "ids"})
    -> (tensor<1000x96xf32> {sgraph.name = "table"}) {
  %t = sgraph.embedding_grad %g, %ids : (tensor<4x32x96xf32>, tensor<4x32xi64>) -> tensor<1000x96xf32>
  return %t : tensor<1000x96xf32>
}

// A sum over a batch of 1 (the positional embedding's gradient at batch
// size 1) keeps the space's shape; it is still the kernel's per-row result
// and is stored (it was not: char-GPT's wpe gradient at batch 1 was what
// the memory held).
// BATCH1: sched.launch @sinter_k0({{.*}}label = "k0_reduce_sum"
// BATCH1: gpu.barrier
// BATCH1: scf.if
// BATCH1:   memref.store %{{.*}}, %{{.*}}[%c0, %{{.*}}, %{{.*}}] : memref<1x64x96xf32>
// BATCH1: gpu.barrier

func.func @batch1_sum(%x: tensor<1x64x96xf32> {sgraph.input = "x"})
    -> (tensor<1x64x96xf32> {sgraph.name = "y"}) {
  %s = sgraph.reduce_sum %x axes = [0] {keepdims = true} : (tensor<1x64x96xf32>) -> tensor<1x64x96xf32>
  return %s : tensor<1x64x96xf32>
}
