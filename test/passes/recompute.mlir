// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels --sinter-recompute=entry=annotated | FileCheck %s --check-prefix=ANNOT
// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels '--sinter-recompute=entry=budget budget=100000' | FileCheck %s --check-prefix=TIGHT
// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels '--sinter-recompute=entry=budget budget=100%' | FileCheck %s --check-prefix=LOOSE
// RUN: sinter-opt %s -split-input-file --sinter-fuse-kernels '--sinter-recompute=entry=impossible budget=1KiB' -verify-diagnostics -o /dev/null

// The step of a two-layer network, forward and backward, in the form
// sinter-autodiff gives (gradient rules simplified to one op each):
//   h1 = x w1, g1 = gelu(h1), h2 = g1 w2, g2 = gelu(h2), y = g2 w3,
//   loss = sum(y * y).
// The backward pass reads g2 (for w3's gradient), h2, g1 (for w2's) and h1.
// Every tensor is 16 KiB; without recompute 96 KiB are live at the end of
// the forward pass, when h1, g1, h2, g2 and y all are (the plan's arena is
// 112 KiB).

// Tests that an annotated layer ("l2", every op located in it or its
// sub-layers) is recomputed from its input in the backward pass: h2 (its
// matmul, which the backward pass reads) is computed again from g1, the
// layer's input, right before the first backward kernel that reads it, and
// that kernel reads the copy. g2, the layer's output (read by "out"), is
// kept: the backward matmul for w3 reads the original.
// ANNOT-LABEL: func.func @annotated(
// ANNOT: %[[H1:.*]] = sgraph.matmul %arg3, %arg0
// ANNOT: %[[G1:.*]] = sgraph.fusion "k1"
// ANNOT: %[[H2:.*]] = sgraph.matmul %[[G1]], %arg1
// ANNOT: %[[G2:.*]] = sgraph.fusion "k3" kind = "loop"(%[[H2]])
// ANNOT: %[[DY:.*]] = sgraph.fusion "k6"
// ANNOT: sgraph.matmul %[[G2]], %[[DY]] {{.*}}transpose_lhs = true
// ANNOT: %[[DG2:.*]] = sgraph.matmul %[[DY]], %arg2
// ANNOT: %[[COPY:.*]] = sgraph.matmul %[[G1]], %arg1 {{{.*}}sinter.recomputed = "r0: annotated layer 'l2'"}
// ANNOT-NEXT: sgraph.fusion "k9" kind = "loop"(%[[DG2]], %[[COPY]])
// ANNOT-NOT: sinter.recomputed
// ANNOT: return
module attributes {sinter.recompute_layers = ["l2"]} {
func.func @annotated(%w1: tensor<64x64xf32> {sgraph.param = "w1"}, %w2: tensor<64x64xf32> {sgraph.param = "w2"}, %w3: tensor<64x64xf32> {sgraph.param = "w3"}, %x: tensor<64x64xf32> {sgraph.input = "x"}) -> (tensor<f32> {sgraph.name = "loss"}, tensor<64x64xf32> {sgraph.name = "grad.w1"}, tensor<64x64xf32> {sgraph.name = "grad.w2"}, tensor<64x64xf32> {sgraph.name = "grad.w3"}) {
  %h1 = sgraph.matmul %x, %w1 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l1.fc")
  %g1 = sgraph.gelu %h1 : tensor<64x64xf32> loc("l1")
  %h2 = sgraph.matmul %g1, %w2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l2.fc")
  %g2 = sgraph.gelu %h2 : tensor<64x64xf32> loc("l2")
  %y = sgraph.matmul %g2, %w3 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("out")
  %sq = sgraph.mul %y, %y : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("loss")
  %l = sgraph.reduce_sum %sq axes = [0, 1] : (tensor<64x64xf32>) -> tensor<f32> loc("loss")
  %two = sgraph.constant dense<2.0> : tensor<f32>
  %dy = sgraph.mul %y, %two : (tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32> loc("loss")
  %dw3 = sgraph.matmul %g2, %dy {transpose_lhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("out")
  %dg2 = sgraph.matmul %dy, %w3 {transpose_rhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("out")
  %dh2 = sgraph.mul %dg2, %h2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l2")
  %dw2 = sgraph.matmul %g1, %dh2 {transpose_lhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l2.fc")
  %dg1 = sgraph.matmul %dh2, %w2 {transpose_rhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l2.fc")
  %dh1 = sgraph.mul %dg1, %h1 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l1")
  %dw1 = sgraph.matmul %x, %dh1 {transpose_lhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l1.fc")
  return %l, %dw1, %dw2, %dw3 : tensor<f32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}
}

// -----

// Tests that a budget the step misses by a little makes the pass recompute
// the cheapest value that lowers the peak: g1, a GELU (22 FLOP-equivalents
// per byte saved), not the matmul outputs h1 or h2 (56). The copy of g1's
// kernel runs right before the backward matmul that reads it, and the arena
// drops from 112 KiB (96 KiB live) to 96 KiB (the slab sizes round the
// 4-byte loss up to 64).
// TIGHT-LABEL: func.func @budget(
// TIGHT-SAME: sinter.recompute_plan = {arena = 98368 : i64, arena_without_recompute = 114752 : i64, budget = 100000 : i64
// TIGHT-SAME: regions = 1 : i64
// TIGHT: %[[G1:.*]] = sgraph.fusion "k1" kind = "loop"(%[[H1:.*]]) :
// TIGHT: %[[DH2:.*]] = sgraph.fusion "k9"
// TIGHT: %[[COPY:.*]] = sgraph.fusion "k1_r0" kind = "loop"(%[[H1]]) {sinter.recomputed = "r0: budget, round 1: the arena's peak (96.00 KiB live at step 6, k6: sgraph.mul @ 'loss') over the target 93.66 KiB; of the 4 values kept there for the backward pass, the cheapest per byte saved: 22.0 FLOP-equivalents/B
// TIGHT: sgraph.gelu
// TIGHT: sgraph.matmul %[[COPY]], %[[DH2]] {{.*}}transpose_lhs = true
// TIGHT-NOT: sinter.recomputed
// TIGHT: return

// Tests that a budget the step already fits recomputes nothing.
// LOOSE-LABEL: func.func @budget(
// LOOSE-SAME: sinter.recompute_plan = {arena = 114752 : i64, arena_without_recompute = 114752 : i64, budget = 114752 : i64
// LOOSE-SAME: values = 0 : i64
// LOOSE-NOT: sinter.recomputed
// LOOSE: return
func.func @budget(%w1: tensor<64x64xf32> {sgraph.param = "w1"}, %w2: tensor<64x64xf32> {sgraph.param = "w2"}, %w3: tensor<64x64xf32> {sgraph.param = "w3"}, %x: tensor<64x64xf32> {sgraph.input = "x"}) -> (tensor<f32> {sgraph.name = "loss"}, tensor<64x64xf32> {sgraph.name = "grad.w1"}, tensor<64x64xf32> {sgraph.name = "grad.w2"}, tensor<64x64xf32> {sgraph.name = "grad.w3"}) {
  %h1 = sgraph.matmul %x, %w1 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l1.fc")
  %g1 = sgraph.gelu %h1 : tensor<64x64xf32> loc("l1")
  %h2 = sgraph.matmul %g1, %w2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l2.fc")
  %g2 = sgraph.gelu %h2 : tensor<64x64xf32> loc("l2")
  %y = sgraph.matmul %g2, %w3 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("out")
  %sq = sgraph.mul %y, %y : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("loss")
  %l = sgraph.reduce_sum %sq axes = [0, 1] : (tensor<64x64xf32>) -> tensor<f32> loc("loss")
  %two = sgraph.constant dense<2.0> : tensor<f32>
  %dy = sgraph.mul %y, %two : (tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32> loc("loss")
  %dw3 = sgraph.matmul %g2, %dy {transpose_lhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("out")
  %dg2 = sgraph.matmul %dy, %w3 {transpose_rhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("out")
  %dh2 = sgraph.mul %dg2, %h2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l2")
  %dw2 = sgraph.matmul %g1, %dh2 {transpose_lhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l2.fc")
  %dg1 = sgraph.matmul %dh2, %w2 {transpose_rhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l2.fc")
  %dh1 = sgraph.mul %dg1, %h1 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l1")
  %dw1 = sgraph.matmul %x, %dh1 {transpose_lhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l1.fc")
  return %l, %dw1, %dw2, %dw3 : tensor<f32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// Tests that a budget below what any recomputation reaches is an error at
// the function, with the smallest arena reached and what dominates its peak.
// expected-error @+1 {{memory budget 1.00 KiB (the arena without recompute is 112.06 KiB) cannot be met: recomputing what helps brings the arena down to 80.06 KiB at best; its peak is at step 13 (sgraph.matmul @ 'l2.fc'): activations 48.00 KiB, outputs 32.00 KiB; largest live: 16.00 KiB sgraph.matmul @ 'l2.fc'}}
func.func @impossible(%w1: tensor<64x64xf32> {sgraph.param = "w1"}, %w2: tensor<64x64xf32> {sgraph.param = "w2"}, %w3: tensor<64x64xf32> {sgraph.param = "w3"}, %x: tensor<64x64xf32> {sgraph.input = "x"}) -> (tensor<f32> {sgraph.name = "loss"}, tensor<64x64xf32> {sgraph.name = "grad.w1"}, tensor<64x64xf32> {sgraph.name = "grad.w2"}, tensor<64x64xf32> {sgraph.name = "grad.w3"}) {
  %h1 = sgraph.matmul %x, %w1 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l1.fc")
  %g1 = sgraph.gelu %h1 : tensor<64x64xf32> loc("l1")
  %h2 = sgraph.matmul %g1, %w2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l2.fc")
  %g2 = sgraph.gelu %h2 : tensor<64x64xf32> loc("l2")
  %y = sgraph.matmul %g2, %w3 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("out")
  %sq = sgraph.mul %y, %y : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("loss")
  %l = sgraph.reduce_sum %sq axes = [0, 1] : (tensor<64x64xf32>) -> tensor<f32> loc("loss")
  %two = sgraph.constant dense<2.0> : tensor<f32>
  %dy = sgraph.mul %y, %two : (tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32> loc("loss")
  %dw3 = sgraph.matmul %g2, %dy {transpose_lhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("out")
  %dg2 = sgraph.matmul %dy, %w3 {transpose_rhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("out")
  %dh2 = sgraph.mul %dg2, %h2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l2")
  %dw2 = sgraph.matmul %g1, %dh2 {transpose_lhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l2.fc")
  %dg1 = sgraph.matmul %dh2, %w2 {transpose_rhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l2.fc")
  %dh1 = sgraph.mul %dg1, %h1 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l1")
  %dw1 = sgraph.matmul %x, %dh1 {transpose_lhs = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("l1.fc")
  return %l, %dw1, %dw2, %dw3 : tensor<f32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}
