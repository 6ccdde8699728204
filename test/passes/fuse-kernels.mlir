// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels | FileCheck %s
// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels="max-kernel-inputs=3" | FileCheck %s --check-prefix=CAP
// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels="memory-bound=true" | FileCheck %s --check-prefix=GPU

// Tests that a chain of elementwise ops with broadcast operands becomes one
// loop kernel whose inputs are the chain's outside operands, and that a splat
// constant is cloned into the kernel rather than passed in.
// CHECK-LABEL: func.func @chain(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>
// CHECK: %[[K:.*]] = sgraph.fusion "k0" kind = "loop"(%[[X]], %[[B]])
// CHECK:   sgraph.constant {{.*}}dense<0.000000e+00>
// CHECK:   sgraph.add {{.*}}sinter.fusion = "k0: starts a loop kernel over 4x8 (no fusible producer)"
// CHECK:   sgraph.relu {{.*}}sinter.fusion = "k0: fused with its producer, same iteration shape 4x8"
// CHECK:   sgraph.maximum
// CHECK:   sgraph.yield
// CHECK-NOT: sgraph.fusion
// CHECK: return %[[K]]
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = sgraph.constant dense<0.0> : tensor<f32>
  %0 = sgraph.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = sgraph.relu %0 : tensor<4x8xf32>
  %2 = sgraph.maximum %1, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// Tests that a reduction joins the loop of its producers and that an op
// reading its per-row result (a reduction over the trailing axis) joins the
// same kernel as a later row phase; the sums are exported even though only
// the kernel reads them (the later phase loads them).
// CHECK-LABEL: func.func @softmax_like(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>
// CHECK: %[[K:.*]]:2 = sgraph.fusion "k0" kind = "reduction"(%[[X]]) : (tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x8xf32>)
// CHECK:   sgraph.mul
// CHECK:   sgraph.reduce_sum {{.*}}sinter.fusion = "k0: reduction joins its producers' loop over 4x8"
// CHECK:   sgraph.div {{.*}}sinter.fusion = "k0: a later row phase: reads k0's per-row result once final, while the rows are still in cache"
// CHECK:   sgraph.yield
// CHECK-NOT: sgraph.fusion
// CHECK: return %[[K]]#1
func.func @softmax_like(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = sgraph.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = sgraph.reduce_sum %e axes = [1] {keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %y = sgraph.div %e, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Tests that a later phase that needs an exp of an earlier phase joins
// when a chunk of rows is small enough for code generation to keep the
// exps on the stack, and is refused where rows are too long for that (it
// would have to recompute them): there the exp is written once and read
// back by a kernel of its own.
// CHECK-LABEL: func.func @softmax_exp(
// CHECK: sgraph.fusion "k0" kind = "reduction"
// CHECK:   sgraph.exp
// CHECK:   sgraph.reduce_sum
// CHECK:   sgraph.div {{.*}}sinter.fusion = "k0: a later row phase
// CHECK-NOT: sgraph.fusion
func.func @softmax_exp(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = sgraph.exp %x : tensor<4x8xf32>
  %s = sgraph.reduce_sum %e axes = [1] {keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %y = sgraph.div %e, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_exp_long_rows(
// CHECK: %[[K:.*]]:2 = sgraph.fusion "k0" kind = "reduction"
// CHECK:   sgraph.exp
// CHECK:   sgraph.reduce_sum
// CHECK: sgraph.fusion "k1" kind = "loop"(%[[K]]#{{[01]}}, %[[K]]#{{[01]}})
// CHECK:   sgraph.div {{.*}}sinter.fusion = "k1: starts a loop kernel over 2x524288; not k0: a later phase of k0 would recompute its exp, which costs more than reading it back"
func.func @softmax_exp_long_rows(%x: tensor<2x524288xf32>) -> tensor<2x524288xf32> {
  %e = sgraph.exp %x : tensor<2x524288xf32>
  %s = sgraph.reduce_sum %e axes = [1] {keepdims = true} : (tensor<2x524288xf32>) -> tensor<2x1xf32>
  %y = sgraph.div %e, %s : (tensor<2x524288xf32>, tensor<2x1xf32>) -> tensor<2x524288xf32>
  return %y : tensor<2x524288xf32>
}

// -----

// Tests a layer norm's shape: row ops on the per-row results (the mean,
// 1/sqrt(var + eps)) join as later phases too, so the mean, the variance
// and the normalized rows are one kernel over the input.
// CHECK-LABEL: func.func @layer_norm_like(
// CHECK: sgraph.fusion "k0" kind = "reduction"
// CHECK:   sgraph.reduce_sum
// CHECK:   sgraph.mul {{.*}}sinter.fusion = "k0: a later row phase{{.*}}tensor<4x1xf32>
// CHECK:   sgraph.sub {{.*}}sinter.fusion = "k0: a later row phase
// CHECK:   sgraph.reduce_sum
// CHECK:   sgraph.rsqrt {{.*}}sinter.fusion = "k0: a later row phase
// CHECK:   sgraph.mul {{.*}}sinter.fusion = "k0: a later row phase{{.*}}tensor<4x8xf32>
// CHECK:   sgraph.yield
// CHECK-NOT: sgraph.fusion
func.func @layer_norm_like(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %inv = sgraph.constant dense<0.125> : tensor<f32>
  %eps = sgraph.constant dense<1.0e-5> : tensor<f32>
  %s = sgraph.reduce_sum %x axes = [1] {keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %mean = sgraph.mul %s, %inv : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %d = sgraph.sub %x, %mean : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %d2 = sgraph.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = sgraph.reduce_sum %d2 axes = [1] {keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %var = sgraph.mul %v, %inv : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %ve = sgraph.add %var, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = sgraph.rsqrt %ve : tensor<4x1xf32>
  %y = sgraph.mul %d, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Tests that a reduction over a leading axis takes no later phases: an op
// reading its result starts a new kernel (with the reason) that recomputes
// the cheap square from the kernel's input rather than reading it from
// memory, so the first kernel writes only the sums.
// CHECK-LABEL: func.func @column_sums(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>
// CHECK: %[[S:.*]] = sgraph.fusion "k0" kind = "reduction"(%[[X]]) : (tensor<4x8xf32>) -> tensor<1x8xf32>
// CHECK: sgraph.fusion "k1" kind = "loop"(%[[X]], %[[S]])
// CHECK:   sgraph.mul {{.*}}sinter.fusion = "k1: recomputed here from k0's chain instead of read from memory"
// CHECK:   sgraph.div {{.*}}sinter.fusion = "k1: starts a loop kernel over 4x8; not k0: reads the reduction result of k0, final only after its loop (not a reduction of the trailing axes: no row phases)"
func.func @column_sums(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = sgraph.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = sgraph.reduce_sum %e axes = [0] {keepdims = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %y = sgraph.div %e, %s : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Tests that matmuls stay outside kernels as library calls and reshapes as
// aliases, each with the reason, and that an op of another iteration shape
// is not fused into its producer's kernel.
// CHECK-LABEL: func.func @matmul_and_reshape(
// CHECK: %[[M:.*]] = sgraph.matmul {{.*}}sinter.fusion = "k0: matmul library call (oneDNN)"
// CHECK: sgraph.fusion "k1" kind = "loop"(%[[M]])
// CHECK:   sgraph.tanh
// CHECK: sgraph.reshape {{.*}}sinter.fusion = "reshape: shares its operand's bytes, no kernel"
// CHECK: sgraph.fusion "k2" kind = "reduction"
// CHECK:   sgraph.reduce_sum {{.*}}sinter.fusion = "k2: starts a reduction kernel over 32; not k1: k1 iterates over 4x8, this op over 32"
func.func @matmul_and_reshape(%a: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> tensor<f32> {
  %m = sgraph.matmul %a, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %t = sgraph.tanh %m : tensor<4x8xf32>
  %r = sgraph.reshape %t : tensor<4x8xf32> to tensor<32xf32>
  %s = sgraph.reduce_sum %r axes = [0] : (tensor<32xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Tests that a transpose of a value in memory is absorbed into the kernel
// that reads it (its input is the transpose's operand), while a transpose a
// matmul reads is materialized as a copy kernel of its own.
// CHECK-LABEL: func.func @views(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>
// CHECK: sgraph.fusion "k{{[0-9]+}}" kind = "loop"(%[[X]])
// CHECK:   sgraph.transpose {{.*}}sinter.fusion = "k{{[0-9]+}}: view materialized as a copy because a non-kernel op reads it"
// CHECK: sgraph.fusion "k0" kind = "loop"(%[[X]], %{{.*}})
// CHECK:   sgraph.transpose {{.*}}sinter.fusion = "view: absorbed into the kernels that read it"
// CHECK:   sgraph.add
// CHECK: sgraph.matmul
func.func @views(%x: tensor<4x8xf32>, %y: tensor<8x4xf32>, %w: tensor<4x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t = sgraph.transpose %x permutation = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %a = sgraph.add %t, %y : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %m = sgraph.matmul %t, %w : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  return %a, %m : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Tests that an op is not fused into a producer's kernel when another of
// its operands depends on that kernel through a matmul (joining would make
// a cycle), and that the reason names both kernels.
// CHECK-LABEL: func.func @cycle(
// CHECK: sgraph.fusion "k0" kind = "loop"
// CHECK:   sgraph.relu
// CHECK: sgraph.matmul
// CHECK: sgraph.fusion "k2" kind = "loop"
// CHECK:   sgraph.add {{.*}}sinter.fusion = "k2: starts a loop kernel over 4x4; not k0: reads k1, which depends on k0: joining would make a cycle"
func.func @cycle(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = sgraph.relu %x : tensor<4x4xf32>
  %m = sgraph.matmul %r, %r : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = sgraph.add %r, %m : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %a : tensor<4x4xf32>
}

// -----

// Tests that embedding_grad gets a special kernel of its own, and that a
// sum of zero pads whose operands tile one axis becomes a concat (a special
// kernel that copies each operand into its slice).
// CHECK-LABEL: func.func @special(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3xf32>, %[[Y:[^:]*]]: tensor<2x3xf32>
// CHECK: sgraph.fusion "k{{[0-9]+}}" kind = "special"(%[[X]], %[[Y]])
// CHECK:   sgraph.concat {{.*}} axis = 1
// CHECK-NOT: sgraph.pad
// CHECK-NOT: sgraph.add
// CHECK: sgraph.fusion "k{{[0-9]+}}" kind = "special"
// CHECK:   sgraph.embedding_grad
func.func @special(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %g: tensor<4x8xf32>, %i: tensor<4xi64>) -> (tensor<2x6xf32>, tensor<10x8xf32>) {
  %p = sgraph.pad %x {low = array<i64: 0, 0>, high = array<i64: 0, 3>} : (tensor<2x3xf32>) -> tensor<2x6xf32>
  %q = sgraph.pad %y {low = array<i64: 0, 3>, high = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x6xf32>
  %s = sgraph.add %p, %q : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
  %e = sgraph.embedding_grad %g, %i : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<10x8xf32>
  return %s, %e : tensor<2x6xf32>, tensor<10x8xf32>
}

// -----

// Tests that pads whose ranges overlap stay a sum: a pad (no interior
// padding) is an elementwise op of its result's shape, and pads read only
// by one sum are all moved into the sum's kernel.
// CHECK-LABEL: func.func @overlapping_pads(
// CHECK: sgraph.fusion "k{{[0-9]+}}" kind = "loop"
// CHECK:   sgraph.pad {{.*}}sinter.fusion = "k{{[0-9]+}}: starts a loop kernel over 2x5 (no fusible producer)"
// CHECK:   sgraph.pad {{.*}}sinter.fusion = "k{{[0-9]+}}: its kernel k{{[0-9]+}} fed only this one, so the two became one loop"
// CHECK:   sgraph.add
// CHECK-NOT: sgraph.concat
func.func @overlapping_pads(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x5xf32> {
  %p = sgraph.pad %x {low = array<i64: 0, 0>, high = array<i64: 0, 2>} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  %q = sgraph.pad %y {low = array<i64: 0, 2>, high = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  %s = sgraph.add %p, %q : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  return %s : tensor<2x5xf32>
}

// -----

// Tests the attention heads' gradient: three head-layout tensors, each
// transposed and reshaped back to rows, padded into their third of the
// fused QKV row and summed, with a gap of 2 columns at each end. The sum
// becomes a pad of a concat, and the concat reads the head layouts through
// the transposes and reshapes cloned into its kernel: no copy kernel for
// them.
// CHECK-LABEL: func.func @heads_to_rows(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<2x3x4x5xf32>, %[[K:[^:]*]]: tensor<2x3x4x5xf32>, %[[V:[^:]*]]: tensor<2x3x4x5xf32>
// CHECK: %[[C:.*]] = sgraph.fusion "k{{[0-9]+}}" kind = "special"(%[[Q]], %[[K]], %[[V]])
// CHECK-COUNT-3: sgraph.{{transpose|reshape}} {{.*}}sinter.fusion = "k{{[0-9]+}}: the concat reads through this view, no copy"
// CHECK-COUNT-3: sgraph.{{transpose|reshape}} {{.*}}sinter.fusion = "k{{[0-9]+}}: the concat reads through this view, no copy"
// CHECK: sgraph.concat {{.*}} axis = 2
// CHECK: sgraph.fusion "k{{[0-9]+}}" kind = "loop"(%[[C]])
// CHECK:   sgraph.pad {{.*}}low = array<i64: 0, 0, 2>
// CHECK-NOT: sgraph.fusion
func.func @heads_to_rows(%q: tensor<2x3x4x5xf32>, %k: tensor<2x3x4x5xf32>, %v: tensor<2x3x4x5xf32>) -> tensor<2x4x49xf32> {
  %qt = sgraph.transpose %q permutation = [0, 2, 1, 3] : (tensor<2x3x4x5xf32>) -> tensor<2x4x3x5xf32>
  %kt = sgraph.transpose %k permutation = [0, 2, 1, 3] : (tensor<2x3x4x5xf32>) -> tensor<2x4x3x5xf32>
  %vt = sgraph.transpose %v permutation = [0, 2, 1, 3] : (tensor<2x3x4x5xf32>) -> tensor<2x4x3x5xf32>
  %qr = sgraph.reshape %qt : tensor<2x4x3x5xf32> to tensor<2x4x15xf32>
  %kr = sgraph.reshape %kt : tensor<2x4x3x5xf32> to tensor<2x4x15xf32>
  %vr = sgraph.reshape %vt : tensor<2x4x3x5xf32> to tensor<2x4x15xf32>
  %qp = sgraph.pad %qr {low = array<i64: 0, 0, 2>, high = array<i64: 0, 0, 32>} : (tensor<2x4x15xf32>) -> tensor<2x4x49xf32>
  %kp = sgraph.pad %kr {low = array<i64: 0, 0, 17>, high = array<i64: 0, 0, 17>} : (tensor<2x4x15xf32>) -> tensor<2x4x49xf32>
  %vp = sgraph.pad %vr {low = array<i64: 0, 0, 32>, high = array<i64: 0, 0, 2>} : (tensor<2x4x15xf32>) -> tensor<2x4x49xf32>
  %s1 = sgraph.add %qp, %kp : (tensor<2x4x49xf32>, tensor<2x4x49xf32>) -> tensor<2x4x49xf32>
  %s = sgraph.add %s1, %vp : (tensor<2x4x49xf32>, tensor<2x4x49xf32>) -> tensor<2x4x49xf32>
  return %s : tensor<2x4x49xf32>
}

// -----

// Tests the same gradient under mixed precision: each head tensor is bf16,
// widened after its layout change, and the f32 sum is read by a bias
// gradient (f32) and narrowed again for the projection's backward matmul.
// The concat joins the bf16 values through their views (no copy kernel,
// no cast kernel per operand), the pad stays bf16 and the matmul reads it,
// and the one widening is fused into the bias gradient's reduction.
// CHECK-LABEL: func.func @heads_to_rows_bf16(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<2x3x4x5xbf16>, %[[K:[^:]*]]: tensor<2x3x4x5xbf16>, %[[V:[^:]*]]: tensor<2x3x4x5xbf16>
// CHECK: %[[C:.*]] = sgraph.fusion "k{{[0-9]+}}" kind = "special"(%[[Q]], %[[K]], %[[V]])
// CHECK-COUNT-6: sgraph.{{transpose|reshape}} {{.*}}sinter.fusion = "k{{[0-9]+}}: the concat reads through this view, no copy"
// CHECK: sgraph.concat {{.*}} -> tensor<2x4x45xbf16>
// CHECK: %[[P:.*]]:2 = sgraph.fusion "k{{[0-9]+}}" kind = "reduction"(%[[C]])
// CHECK:   sgraph.pad {{.*}} -> tensor<2x4x49xbf16>
// CHECK:   sgraph.cast {{.*}} to tensor<2x4x49xf32>
// CHECK:   sgraph.reduce_sum
// CHECK: sgraph.matmul %[[P]]#0, %{{.*}} : (tensor<2x4x49xbf16>, tensor<49x7xbf16>)
// CHECK-NOT: sgraph.cast
// CHECK: return
func.func @heads_to_rows_bf16(%q: tensor<2x3x4x5xbf16>, %k: tensor<2x3x4x5xbf16>, %v: tensor<2x3x4x5xbf16>, %w: tensor<49x7xbf16>) -> (tensor<49xf32>, tensor<2x4x7xbf16>) {
  %qt = sgraph.transpose %q permutation = [0, 2, 1, 3] : (tensor<2x3x4x5xbf16>) -> tensor<2x4x3x5xbf16>
  %kt = sgraph.transpose %k permutation = [0, 2, 1, 3] : (tensor<2x3x4x5xbf16>) -> tensor<2x4x3x5xbf16>
  %vt = sgraph.transpose %v permutation = [0, 2, 1, 3] : (tensor<2x3x4x5xbf16>) -> tensor<2x4x3x5xbf16>
  %qr = sgraph.reshape %qt : tensor<2x4x3x5xbf16> to tensor<2x4x15xbf16>
  %kr = sgraph.reshape %kt : tensor<2x4x3x5xbf16> to tensor<2x4x15xbf16>
  %vr = sgraph.reshape %vt : tensor<2x4x3x5xbf16> to tensor<2x4x15xbf16>
  %qw = sgraph.cast %qr : tensor<2x4x15xbf16> to tensor<2x4x15xf32>
  %kw = sgraph.cast %kr : tensor<2x4x15xbf16> to tensor<2x4x15xf32>
  %vw = sgraph.cast %vr : tensor<2x4x15xbf16> to tensor<2x4x15xf32>
  %qp = sgraph.pad %qw {low = array<i64: 0, 0, 2>, high = array<i64: 0, 0, 32>} : (tensor<2x4x15xf32>) -> tensor<2x4x49xf32>
  %kp = sgraph.pad %kw {low = array<i64: 0, 0, 17>, high = array<i64: 0, 0, 17>} : (tensor<2x4x15xf32>) -> tensor<2x4x49xf32>
  %vp = sgraph.pad %vw {low = array<i64: 0, 0, 32>, high = array<i64: 0, 0, 2>} : (tensor<2x4x15xf32>) -> tensor<2x4x49xf32>
  %s1 = sgraph.add %qp, %kp : (tensor<2x4x49xf32>, tensor<2x4x49xf32>) -> tensor<2x4x49xf32>
  %s = sgraph.add %s1, %vp : (tensor<2x4x49xf32>, tensor<2x4x49xf32>) -> tensor<2x4x49xf32>
  %db = sgraph.reduce_sum %s axes = [0, 1] : (tensor<2x4x49xf32>) -> tensor<49xf32>
  %n = sgraph.cast %s : tensor<2x4x49xf32> to tensor<2x4x49xbf16>
  %dx = sgraph.matmul %n, %w : (tensor<2x4x49xbf16>, tensor<49x7xbf16>) -> tensor<2x4x7xbf16>
  return %db, %dx : tensor<49xf32>, tensor<2x4x7xbf16>
}

// -----

// Tests that a matmul's epilogue (a splat scale, then a bias along the last
// dimension, then an activation) joins the matmul in a "matmul" region the
// matmul library runs in one call, while an epilogue whose input is also
// read elsewhere (the backward needs the pre-activation) stays outside.
// CHECK-LABEL: func.func @epilogue(
// CHECK: %[[Y:.*]] = sgraph.fusion "k0" kind = "matmul"
// CHECK:   sgraph.matmul
// CHECK:   sgraph.mul {{.*}}sinter.fusion = "k0: matmul epilogue (scale) applied by the matmul library in the same call"
// CHECK:   sgraph.add {{.*}}sinter.fusion = "k0: matmul epilogue (bias) applied by the matmul library in the same call"
// CHECK:   sgraph.gelu {{.*}}sinter.fusion = "k0: matmul epilogue (activation) applied by the matmul library in the same call"
// CHECK: %[[Z:.*]] = sgraph.fusion "k1" kind = "matmul"
// CHECK:   sgraph.add
// CHECK-NOT: sgraph.relu
// CHECK: sgraph.fusion "k2" kind = "loop"(%[[Z]])
// CHECK:   sgraph.relu
func.func @epilogue(%x: tensor<4x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = sgraph.constant dense<0.125> : tensor<f32>
  %m = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %s = sgraph.mul %m, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %a = sgraph.add %s, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %g = sgraph.gelu %a {approximate = "tanh"} : tensor<4x8xf32>
  %m2 = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %a2 = sgraph.add %m2, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %r = sgraph.relu %a2 : tensor<4x8xf32>
  return %g, %a2, %r : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Tests that a chain of views a matmul reads (slice, then transpose) is
// copied out by one kernel holding the whole chain, not one copy per view.
// CHECK-LABEL: func.func @view_chain(
// CHECK-SAME: %[[X:.*]]: tensor<4x16xf32>
// CHECK: %[[K:.*]] = sgraph.fusion "k{{[0-9]+}}" kind = "loop"(%[[X]])
// CHECK:   sgraph.slice
// CHECK:   sgraph.transpose
// CHECK:   sgraph.yield
// CHECK-NOT: sgraph.fusion
// CHECK: sgraph.matmul %[[K]]
func.func @view_chain(%x: tensor<4x16xf32>, %w: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %s = sgraph.slice %x {start = array<i64: 0, 8>, limit = array<i64: 4, 16>} : (tensor<4x16xf32>) -> tensor<4x8xf32>
  %t = sgraph.transpose %s permutation = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %m = sgraph.matmul %t, %w : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  return %m : tensor<8x4xf32>
}

// -----

// Tests that a reduction over every axis of a big tensor (here 256x256) is
// split into a row reduction, which has a parallel dimension, and a sum of
// the 256 row results; a small one (4x8) is left whole.
// CHECK-LABEL: func.func @full_reduction(
// CHECK: %[[ROWS:.*]] = sgraph.fusion "k{{[0-9]+}}" kind = "reduction"
// CHECK:   sgraph.reduce_sum %{{.*}} axes = [1] {{.*}}: (tensor<256x256xf32>) -> tensor<256xf32>
// CHECK: sgraph.fusion "k{{[0-9]+}}" kind = "reduction"(%[[ROWS]])
// CHECK:   sgraph.reduce_sum %{{.*}} axes = [0] {{.*}}: (tensor<256xf32>) -> tensor<f32>
// CHECK: sgraph.reduce_sum %{{.*}} axes = [0, 1] {{.*}}: (tensor<4x8xf32>) -> tensor<f32>
func.func @full_reduction(%x: tensor<256x256xf32>, %y: tensor<4x8xf32>) -> (tensor<f32>, tensor<f32>) {
  %s = sgraph.reduce_sum %x axes = [0, 1] : (tensor<256x256xf32>) -> tensor<f32>
  %t = sgraph.reduce_sum %y axes = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %s, %t : tensor<f32>, tensor<f32>
}

// -----

// Tests the cross-entropy's shape: a kernel outside the row-phased
// softmax reads the shifted logits (x - max); it recomputes them from the
// input and the exported per-row max instead of having the softmax kernel
// write a full-size tensor (206 MB for GPT-2's logits).
// CHECK-LABEL: func.func @shifted_logits(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>
// CHECK: %[[K:.*]]:3 = sgraph.fusion "k0" kind = "reduction"(%[[X]]) : (tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x8xf32>)
// CHECK:   sgraph.reduce_max
// CHECK:   sgraph.sub {{.*}}sinter.fusion = "k0: a later row phase
// CHECK:   sgraph.exp
// CHECK:   sgraph.reduce_sum
// CHECK:   sgraph.div
// CHECK:   sgraph.yield %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x8xf32>
// CHECK: sgraph.fusion "k{{[0-9]+}}" kind = "loop"(%[[X]], %[[K]]#0, %{{.*}})
// CHECK:   sgraph.sub {{.*}}sinter.fusion = "k{{[0-9]+}}: recomputed here from k0's chain instead of read from memory"
// CHECK:   sgraph.mul
func.func @shifted_logits(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %m = sgraph.reduce_max %x axes = [1] {keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = sgraph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %e = sgraph.exp %d : tensor<4x8xf32>
  %s = sgraph.reduce_sum %e axes = [1] {keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %y = sgraph.div %e, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %p = sgraph.matmul %y, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %q = sgraph.mul %d, %p : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %q : tensor<4x8xf32>
}

// -----

// Tests that a sum over the leading axes of a big tensor (a bias gradient:
// over batch and positions) is split in two: the positions first, in the
// kernel of the chain that produces the tensor (its threads split the
// batch axis, so each walks whole rows in order), then the batch, in a
// small kernel of its own. A small tensor keeps its one reduction.
// CHECK-LABEL: func.func @bias_gradient(
// CHECK-SAME: %[[X:.*]]: tensor<8x256x64xf32>, %[[G:.*]]: tensor<8x256x64xf32>
// CHECK: %[[K:.*]]:2 = sgraph.fusion "k0" kind = "reduction"(%[[X]], %[[G]])
// CHECK:   sgraph.erf
// CHECK:   sgraph.reduce_sum %{{.*}} axes = [1] {keepdims = true, {{.*}}} : (tensor<8x256x64xf32>) -> tensor<8x1x64xf32>
// CHECK: sgraph.fusion "k1" kind = "reduction"(%[[K]]#1)
// CHECK:   sgraph.reduce_sum %{{.*}} axes = [0, 1] {keepdims = true, {{.*}}} : (tensor<8x1x64xf32>) -> tensor<1x1x64xf32>
// CHECK-LABEL: func.func @small_bias_gradient(
// CHECK:   sgraph.reduce_sum %{{.*}} axes = [0, 1] {keepdims = true, {{.*}}} : (tensor<2x8x64xf32>) -> tensor<1x1x64xf32>
// CHECK-NOT: sgraph.reduce_sum
func.func @bias_gradient(%x: tensor<8x256x64xf32>, %g: tensor<8x256x64xf32>)
    -> (tensor<8x256x64xf32>, tensor<1x1x64xf32>) {
  %e = sgraph.erf %x : tensor<8x256x64xf32>
  %d = sgraph.mul %g, %e : (tensor<8x256x64xf32>, tensor<8x256x64xf32>) -> tensor<8x256x64xf32>
  %s = sgraph.reduce_sum %d axes = [0, 1] {keepdims = true} : (tensor<8x256x64xf32>) -> tensor<1x1x64xf32>
  return %d, %s : tensor<8x256x64xf32>, tensor<1x1x64xf32>
}
func.func @small_bias_gradient(%x: tensor<2x8x64xf32>) -> tensor<1x1x64xf32> {
  %s = sgraph.reduce_sum %x axes = [0, 1] {keepdims = true} : (tensor<2x8x64xf32>) -> tensor<1x1x64xf32>
  return %s : tensor<1x1x64xf32>
}

// -----

// Tests that a bias gradient at batch 1 (the rows of one sequence), which
// the split above leaves, is cut into groups of rows instead: 256 rows as
// 64 groups of 4, reshaped below the widening cast of the bf16 gradient (in
// memory anyway), each group summed by the thread that walks its rows, then
// the 64 partial rows. A sum of a value nothing else writes to memory (an
// erf's result) keeps its one kernel, and so does every sum on a
// memory-bound target (a GPU, which has column kernels).
// CHECK-LABEL: func.func @bias_gradient_batch_one(
// CHECK-SAME: %[[D:.*]]: tensor<1x256x128xbf16>, %[[W:.*]]: tensor<128x64xbf16>
// CHECK: %[[R:.*]] = sgraph.reshape %[[D]] {{.*}} : tensor<1x256x128xbf16> to tensor<64x4x128xbf16>
// CHECK: %[[P:.*]] = sgraph.fusion "{{k[0-9]+}}" kind = "reduction"(%[[R]])
// CHECK:   sgraph.cast %{{.*}} : tensor<64x4x128xbf16> to tensor<64x4x128xf32>
// CHECK:   sgraph.reduce_sum %{{.*}} axes = [1] {keepdims = true, {{.*}}} : (tensor<64x4x128xf32>) -> tensor<64x1x128xf32>
// CHECK: %[[T:.*]] = sgraph.fusion "{{k[0-9]+}}" kind = "reduction"(%[[P]])
// CHECK:   sgraph.reduce_sum %{{.*}} axes = [0, 1] {{{.*}}} : (tensor<64x1x128xf32>) -> tensor<128xf32>
// CHECK: sgraph.reshape %[[T]] {{.*}} : tensor<128xf32> to tensor<1x1x128xf32>
// CHECK-LABEL: func.func @sum_of_an_erf(
// CHECK-NOT: sgraph.reshape
// CHECK: sgraph.reduce_sum %{{.*}} axes = [0] {{.*}} : (tensor<4096x64xf32>) -> tensor<64xf32>
// CHECK-NOT: sgraph.reduce_sum
// GPU-LABEL: func.func @bias_gradient_batch_one(
// GPU-NOT: sgraph.reshape
// GPU: sgraph.reduce_sum %{{.*}} axes = [0, 1] {{.*}} : (tensor<1x256x128xf32>) -> tensor<1x1x128xf32>
func.func @bias_gradient_batch_one(%d: tensor<1x256x128xbf16>, %w: tensor<128x64xbf16>)
    -> (tensor<1x256x64xbf16>, tensor<1x1x128xf32>) {
  %m = sgraph.matmul %d, %w : (tensor<1x256x128xbf16>, tensor<128x64xbf16>) -> tensor<1x256x64xbf16>
  %c = sgraph.cast %d : tensor<1x256x128xbf16> to tensor<1x256x128xf32>
  %s = sgraph.reduce_sum %c axes = [0, 1] {keepdims = true} : (tensor<1x256x128xf32>) -> tensor<1x1x128xf32>
  return %m, %s : tensor<1x256x64xbf16>, tensor<1x1x128xf32>
}
func.func @sum_of_an_erf(%x: tensor<4096x64xf32>) -> tensor<64xf32> {
  %e = sgraph.erf %x : tensor<4096x64xf32>
  %s = sgraph.reduce_sum %e axes = [0] : (tensor<4096x64xf32>) -> tensor<64xf32>
  return %s : tensor<64xf32>
}

// -----

// Tests that a kernel reads at most max-kernel-inputs values from outside:
// a sum of five scalars (the global norm's sum of squared parameter norms)
// is one kernel by default; at three it goes on in a second kernel that
// reads the first's partial sum, the same additions in the same order,
// and the first is not merged back into it.
// CHECK-LABEL: func.func @wide_sum(
// CHECK: sgraph.fusion "k0" kind = "loop"(%arg0, %arg1, %arg2, %arg3, %arg4)
// CHECK-NOT: sgraph.fusion
// CAP-LABEL: func.func @wide_sum(
// CAP-SAME: %[[A:[a-z0-9]+]]: tensor<f64>, %[[B:[a-z0-9]+]]: tensor<f64>, %[[C:[a-z0-9]+]]: tensor<f64>, %[[D:[a-z0-9]+]]: tensor<f64>, %[[E:[a-z0-9]+]]: tensor<f64>
// CAP: %[[K0:.*]] = sgraph.fusion "k0" kind = "loop"(%[[A]], %[[B]], %[[C]])
// CAP: %[[K1:.*]] = sgraph.fusion "k1" kind = "loop"(%[[K0]], %[[D]], %[[E]])
// CAP: sinter.fusion = "k1: starts a loop kernel over scalar; not k0: k0 reads 3 values already, and a kernel reads at most 3"
// CAP: return %[[K1]]
func.func @wide_sum(%a: tensor<f64>, %b: tensor<f64>, %c: tensor<f64>,
                    %d: tensor<f64>, %e: tensor<f64>) -> tensor<f64> {
  %0 = sgraph.add %a, %b : (tensor<f64>, tensor<f64>) -> tensor<f64>
  %1 = sgraph.add %0, %c : (tensor<f64>, tensor<f64>) -> tensor<f64>
  %2 = sgraph.add %1, %d : (tensor<f64>, tensor<f64>) -> tensor<f64>
  %3 = sgraph.add %2, %e : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %3 : tensor<f64>
}

// -----

// Tests that a group that writes nothing is no kernel: here a cast nothing
// reads (as when every reader recomputes a value instead of reading it, the
// group's values are all recomputed elsewhere); only the exp's kernel is
// built.
// CHECK-LABEL: func.func @writes_nothing(
// CHECK-NOT: -> ()
// CHECK: sgraph.fusion "k1" kind = "loop"(%{{.*}}) : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK-NOT: sgraph.fusion
// CHECK: return
func.func @writes_nothing(%a: tensor<4x8xbf16>) -> tensor<4x8xf32> {
  %d = sgraph.cast %a : tensor<4x8xbf16> to tensor<4x8xf32>
  %w = sgraph.cast %a : tensor<4x8xbf16> to tensor<4x8xf32>
  %e = sgraph.exp %w : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

// Tests a convolution's windows: strided slices of a padded image joined
// along the channels. The pad is a loop kernel; the concat reads each
// window through its slice, cloned into the concat's kernel with its
// start, limit and stride: no copy kernel per window. A slice of a
// function argument is read through the same way.
// CHECK-LABEL: func.func @windows(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x5x5x3xf32>
// CHECK: %[[P:.*]] = sgraph.fusion "k{{[0-9]+}}" kind = "loop"(%[[X]])
// CHECK:   sgraph.pad
// CHECK: sgraph.fusion "k{{[0-9]+}}" kind = "special"(%[[P]], %[[X]])
// CHECK-COUNT-3: sgraph.slice {{.*}}sinter.fusion = "k{{[0-9]+}}: the concat reads through this view, no copy", start = {{.*}}, stride = array<i64: 1, 2, 2, 1>}
// CHECK: sgraph.slice {{.*}}sinter.fusion = "k{{[0-9]+}}: the concat reads through this view, no copy"
// CHECK: sgraph.concat {{.*}} axis = 3 {{.*}} -> tensor<2x3x3x12xf32>
// CHECK-NOT: sgraph.fusion
func.func @windows(%x: tensor<2x5x5x3xf32>) -> tensor<2x3x3x12xf32> {
  %p = sgraph.pad %x {low = array<i64: 0, 1, 1, 0>, high = array<i64: 0, 1, 1, 0>} : (tensor<2x5x5x3xf32>) -> tensor<2x7x7x3xf32>
  %a = sgraph.slice %p {start = array<i64: 0, 0, 0, 0>, limit = array<i64: 2, 5, 5, 3>, stride = array<i64: 1, 2, 2, 1>} : (tensor<2x7x7x3xf32>) -> tensor<2x3x3x3xf32>
  %b = sgraph.slice %p {start = array<i64: 0, 0, 1, 0>, limit = array<i64: 2, 5, 6, 3>, stride = array<i64: 1, 2, 2, 1>} : (tensor<2x7x7x3xf32>) -> tensor<2x3x3x3xf32>
  %c = sgraph.slice %p {start = array<i64: 0, 1, 0, 0>, limit = array<i64: 2, 6, 5, 3>, stride = array<i64: 1, 2, 2, 1>} : (tensor<2x7x7x3xf32>) -> tensor<2x3x3x3xf32>
  %d = sgraph.slice %x {start = array<i64: 0, 1, 1, 0>, limit = array<i64: 2, 4, 4, 3>} : (tensor<2x5x5x3xf32>) -> tensor<2x3x3x3xf32>
  %w = sgraph.concat %a, %b, %c, %d axis = 3 : (tensor<2x3x3x3xf32>, tensor<2x3x3x3xf32>, tensor<2x3x3x3xf32>, tensor<2x3x3x3xf32>) -> tensor<2x3x3x12xf32>
  return %w : tensor<2x3x3x12xf32>
}

// -----

// Tests the windows as the importer builds them: unit-stride slices of the
// padded image with its spatial axes split by the stride (a reshape, which
// shares the pad's bytes). The concat reads each slice through the
// reshaped pad result, its one input.
// CHECK-LABEL: func.func @split_windows(
// CHECK: %[[P:.*]] = sgraph.fusion "k{{[0-9]+}}" kind = "loop"
// CHECK:   sgraph.pad
// CHECK: %[[R:.*]] = sgraph.reshape %[[P]] {{.*}} to tensor<2x3x2x3x2x3xf32>
// CHECK: sgraph.fusion "k{{[0-9]+}}" kind = "special"(%[[R]])
// CHECK-COUNT-3: sgraph.slice {{.*}}sinter.fusion = "k{{[0-9]+}}: the concat reads through this view, no copy"
// CHECK: sgraph.concat {{.*}} axis = 5 {{.*}} -> tensor<2x3x1x3x1x9xf32>
// CHECK-NOT: sgraph.fusion
func.func @split_windows(%x: tensor<2x5x5x3xf32>) -> tensor<2x3x1x3x1x9xf32> {
  %p = sgraph.pad %x {low = array<i64: 0, 1, 1, 0>, high = array<i64: 0, 0, 0, 0>} : (tensor<2x5x5x3xf32>) -> tensor<2x6x6x3xf32>
  %r = sgraph.reshape %p : tensor<2x6x6x3xf32> to tensor<2x3x2x3x2x3xf32>
  %a = sgraph.slice %r {start = array<i64: 0, 0, 0, 0, 0, 0>, limit = array<i64: 2, 3, 1, 3, 1, 3>} : (tensor<2x3x2x3x2x3xf32>) -> tensor<2x3x1x3x1x3xf32>
  %b = sgraph.slice %r {start = array<i64: 0, 0, 0, 0, 1, 0>, limit = array<i64: 2, 3, 1, 3, 2, 3>} : (tensor<2x3x2x3x2x3xf32>) -> tensor<2x3x1x3x1x3xf32>
  %c = sgraph.slice %r {start = array<i64: 0, 0, 1, 0, 0, 0>, limit = array<i64: 2, 3, 2, 3, 1, 3>} : (tensor<2x3x2x3x2x3xf32>) -> tensor<2x3x1x3x1x3xf32>
  %w = sgraph.concat %a, %b, %c axis = 5 : (tensor<2x3x1x3x1x3xf32>, tensor<2x3x1x3x1x3xf32>, tensor<2x3x1x3x1x3xf32>) -> tensor<2x3x1x3x1x9xf32>
  return %w : tensor<2x3x1x3x1x9xf32>
}
