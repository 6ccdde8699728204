// RUN: sinter-opt %s --sinter-fuse-kernels --sinter-bucket-gradients="bucket-bytes=300000 first-bucket-bytes=1000" | FileCheck %s
// RUN: sinter-opt %s --sinter-fuse-kernels --sinter-bucket-gradients="bucket-bytes=0" | FileCheck %s --check-prefix=NONE
// RUN: sinter-opt %s --sinter-fuse-kernels --sinter-bucket-gradients="bucket-bytes=300000 first-bucket-bytes=1000" --sinter-assign-buffers="entry=three_grads" --sinter-verify-schedule="entry=three_grads" | FileCheck %s --check-prefix=SCHED
// RUN: sinter-opt %s --sinter-fuse-kernels --sinter-bucket-gradients="bucket-bytes=300000 first-bucket-bytes=1000 last-bucket-bytes=100" | FileCheck %s --check-prefix=LAST
// RUN: sinter-opt %s --sinter-fuse-kernels --sinter-bucket-gradients="bucket-bytes=300000 first-bucket-bytes=1000 last-bucket-bytes=100000000" | FileCheck %s

// Tests that the gradient all-reduces merge into buckets in the order the
// gradients are written: a small first bucket (here 1,000 bytes: the first
// gradient alone), then buckets that close once they hold bucket-bytes; each
// bucket right after the kernel that writes its last gradient, its readers
// reading its results.
// CHECK-LABEL: func.func @three_grads(
// CHECK: %[[G0:.*]] = sgraph.matmul %arg0, %arg1 {sinter.fusion = "k0:
// CHECK-NEXT: %[[R0:.*]] = sgraph.all_reduce %[[G0]] {reduction = "mean", sinter.bucket = "bucket 0: 1 gradient, 262,144 bytes, ready after k0"} : tensor<256x256xf32>
// CHECK: %[[G1:.*]] = sgraph.matmul %arg1, %arg0
// CHECK: %[[G2:.*]] = sgraph.fusion "k2"
// CHECK: %[[R:.*]]:2 = sgraph.all_reduce %[[G1]], %[[G2]] {reduction = "mean", sinter.bucket = "bucket 1: 2 gradients, 262,400 bytes, ready after k2"} : tensor<256x256xf32>, tensor<64xf32>
// CHECK: sgraph.fusion "k3" kind = "loop"(%[[R0]])
// CHECK: sgraph.fusion "k4" kind = "loop"(%[[R]]#0)
// CHECK: sgraph.fusion "k5" kind = "loop"(%[[R]]#1)
// CHECK-NOT: sgraph.all_reduce
// CHECK: return

// With bucket-bytes=0 every gradient is a bucket of its own, still right
// after its writer.
// NONE-LABEL: func.func @three_grads(
// NONE: sgraph.matmul %arg0, %arg1
// NONE-NEXT: sgraph.all_reduce {{.*}}"bucket 0: 1 gradient
// NONE: sgraph.matmul %arg1, %arg0
// NONE-NEXT: sgraph.all_reduce {{.*}}"bucket 1: 1 gradient
// NONE: sgraph.fusion "k2"
// NONE: sgraph.all_reduce {{.*}}"bucket 2: 1 gradient

// With last-bucket-bytes=100 the gradient written last (256 bytes) is a
// bucket of its own, so the one before it holds g1 alone and starts right
// after g1's matmul, while k2 still runs; a last bucket that would take
// every gradient (last-bucket-bytes=100000000, the second RUN with CHECK)
// is not made.
// LAST-LABEL: func.func @three_grads(
// LAST: sgraph.all_reduce {{.*}}"bucket 0: 1 gradient, 262,144 bytes, ready after k0"
// LAST: %[[G1:.*]] = sgraph.matmul %arg1, %arg0
// LAST-NEXT: sgraph.all_reduce %[[G1]] {{.*}}"bucket 1: 1 gradient, 262,144 bytes, ready after k1"
// LAST-NEXT: %[[G2:.*]] = sgraph.fusion "k2"
// LAST: sgraph.all_reduce %[[G2]] {{.*}}"bucket 2: 1 gradient, 256 bytes, ready after k2"
// LAST-NOT: sgraph.all_reduce

// The scheduled program: each bucket is one view of the arena that its
// gradients' views alias (the kernels write them in place, no copies); its
// start comes right after the last of them is written and its done right
// before the first step that reads it, with what runs in between recorded.
// SCHED-LABEL: sched.program @three_grads
// SCHED: %[[B0:.*]] = sched.view %arena[{{[0-9]+}}] {category = "gradients"} : !sched.buffer<65536xf32>
// SCHED-NEXT: %[[G0:.*]] = sched.view %arena[{{[0-9]+}}] aliases(%[[B0]] : !sched.buffer<65536xf32>) {category = "gradients"} : !sched.buffer<256x256xf32>
// SCHED-NEXT: sched.matmul %a, %b -> %[[G0]]
// SCHED-NEXT: %[[T0:.*]] = sched.all_reduce_start "mean" %[[B0]] {sinter.bucket = "bucket 0: {{.*}}", sinter.gradients = ["gradient 0"], sinter.overlap = "1 kernel launch and 1 matmul (matmul .. k2)"}
// SCHED: %[[B1:.*]] = sched.view %arena[0] {category = "gradients"} : !sched.buffer<65600xf32>
// SCHED-NEXT: %[[G1:.*]] = sched.view %arena[0] aliases(%[[B1]]
// SCHED-NEXT: sched.matmul %b, %a -> %[[G1]]
// SCHED-NEXT: %[[G2:.*]] = sched.view %arena[262144] aliases(%[[B1]] : !sched.buffer<65600xf32>) {category = "gradients"} : !sched.buffer<64xf32>
// SCHED-NEXT: sched.launch @k2(%c : !sched.buffer<64xf32>) -> (%[[G2]] : !sched.buffer<64xf32>)
// SCHED-NEXT: %[[T1:.*]] = sched.all_reduce_start "mean" %[[B1]]
// SCHED-NOT: sched.copy
// SCHED-NEXT: sched.all_reduce_done %[[T0]]
// SCHED: sched.launch @k3(%[[G0]]
// SCHED-NEXT: sched.all_reduce_done %[[T1]]
// SCHED: sched.launch @k4(%[[G1]]
// SCHED: sched.launch @k5(%[[G2]]
func.func @three_grads(%a: tensor<256x256xf32> {sgraph.input = "a"},
                       %b: tensor<256x256xf32> {sgraph.input = "b"},
                       %c: tensor<64xf32> {sgraph.input = "c"})
    -> (tensor<256x256xf32> {sgraph.name = "u0"},
        tensor<256x256xf32> {sgraph.name = "u1"},
        tensor<64xf32> {sgraph.name = "u2"}) {
  %g0 = sgraph.matmul %a, %b : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %g1 = sgraph.matmul %b, %a : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %g2 = sgraph.tanh %c : tensor<64xf32>
  %r0 = sgraph.all_reduce %g0 {reduction = "mean"} : tensor<256x256xf32>
  %r1 = sgraph.all_reduce %g1 {reduction = "mean"} : tensor<256x256xf32>
  %r2 = sgraph.all_reduce %g2 {reduction = "mean"} : tensor<64xf32>
  %u0 = sgraph.tanh %r0 : tensor<256x256xf32>
  %u1 = sgraph.tanh %r1 : tensor<256x256xf32>
  %u2 = sgraph.exp %r2 : tensor<64xf32>
  return %u0, %u1, %u2 : tensor<256x256xf32>, tensor<256x256xf32>, tensor<64xf32>
}
