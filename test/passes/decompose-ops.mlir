// RUN: sinter-opt %s -split-input-file --sinter-decompose-ops | FileCheck %s
// RUN: sinter-opt %s -split-input-file --sinter-decompose-ops --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// Tests that reduce_mean becomes a reduce_sum over the same axes times a
// splat 1/N, N the product of the reduced dims (4 * 2 = 8), keepdims kept.
// CHECK-LABEL: func.func @reduce_mean_keepdims(
// CHECK-SAME: %[[X:.*]]: tensor<4x3x2xf32>
// CHECK-NOT: sgraph.reduce_mean
// CHECK: %[[S:.*]] = sgraph.reduce_sum %[[X]] axes = [0, 2] {keepdims = true} : (tensor<4x3x2xf32>) -> tensor<1x3x1xf32>
// CHECK: %[[N:.*]] = sgraph.constant dense<1.250000e-01> : tensor<f32>
// CHECK: %[[M:.*]] = sgraph.mul %[[S]], %[[N]] : (tensor<1x3x1xf32>, tensor<f32>) -> tensor<1x3x1xf32>
// CHECK: return %[[M]]
func.func @reduce_mean_keepdims(%x: tensor<4x3x2xf32>) -> tensor<1x3x1xf32> {
  %m = sgraph.reduce_mean %x axes = [0, 2] {keepdims = true} : (tensor<4x3x2xf32>) -> tensor<1x3x1xf32>
  return %m : tensor<1x3x1xf32>
}

// -----

// Tests that reduce_mean without keepdims drops the axes, and that a mean
// over no axes (a copy) becomes its operand.
// CHECK-LABEL: func.func @reduce_mean_drop(
// CHECK-SAME: %[[X:.*]]: tensor<4x3xf64>
// CHECK-NOT: sgraph.reduce_mean
// CHECK: %[[S:.*]] = sgraph.reduce_sum %[[X]] axes = [1] : (tensor<4x3xf64>) -> tensor<4xf64>
// CHECK: %[[N:.*]] = sgraph.constant dense<0.33333333333333331> : tensor<f64>
// CHECK: %[[M:.*]] = sgraph.mul %[[S]], %[[N]] : (tensor<4xf64>, tensor<f64>) -> tensor<4xf64>
// CHECK: return %[[M]], %[[X]]
func.func @reduce_mean_drop(%x: tensor<4x3xf64>) -> (tensor<4xf64>, tensor<4x3xf64>) {
  %m = sgraph.reduce_mean %x axes = [1] : (tensor<4x3xf64>) -> tensor<4xf64>
  %c = sgraph.reduce_mean %x axes = [] : (tensor<4x3xf64>) -> tensor<4x3xf64>
  return %m, %c : tensor<4xf64>, tensor<4x3xf64>
}

// -----

// Tests that a bf16 reduce_mean computes in f32: cast up, sum, scale, cast
// back.
// CHECK-LABEL: func.func @reduce_mean_bf16(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xbf16>
// CHECK-NOT: sgraph.reduce_mean
// CHECK: %[[U:.*]] = sgraph.cast %[[X]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK: %[[S:.*]] = sgraph.reduce_sum %[[U]] axes = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK: %[[M:.*]] = sgraph.mul %[[S]], %{{.*}} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK: %[[D:.*]] = sgraph.cast %[[M]] : tensor<4xf32> to tensor<4xbf16>
// CHECK: return %[[D]]
func.func @reduce_mean_bf16(%x: tensor<4x8xbf16>) -> tensor<4xbf16> {
  %m = sgraph.reduce_mean %x axes = [1] : (tensor<4x8xbf16>) -> tensor<4xbf16>
  return %m : tensor<4xbf16>
}

// -----

// Tests that softmax along a non-last axis is max (keepdims), sub, exp, sum
// (keepdims), div, all along that axis.
// CHECK-LABEL: func.func @softmax_axis1(
// CHECK-SAME: %[[X:.*]]: tensor<2x5x3xf32>
// CHECK-NOT: sgraph.softmax
// CHECK: %[[MAX:.*]] = sgraph.reduce_max %[[X]] axes = [1] {keepdims = true} : (tensor<2x5x3xf32>) -> tensor<2x1x3xf32>
// CHECK: %[[SH:.*]] = sgraph.sub %[[X]], %[[MAX]] : (tensor<2x5x3xf32>, tensor<2x1x3xf32>) -> tensor<2x5x3xf32>
// CHECK: %[[E:.*]] = sgraph.exp %[[SH]]
// CHECK: %[[SUM:.*]] = sgraph.reduce_sum %[[E]] axes = [1] {keepdims = true} : (tensor<2x5x3xf32>) -> tensor<2x1x3xf32>
// CHECK: %[[Y:.*]] = sgraph.div %[[E]], %[[SUM]] : (tensor<2x5x3xf32>, tensor<2x1x3xf32>) -> tensor<2x5x3xf32>
// CHECK: return %[[Y]]
func.func @softmax_axis1(%x: tensor<2x5x3xf32>) -> tensor<2x5x3xf32> {
  %y = sgraph.softmax %x axis = 1 : tensor<2x5x3xf32>
  return %y : tensor<2x5x3xf32>
}

// -----

// Tests that log_softmax along the last axis is (x - max) - log(sum(exp)).
// CHECK-LABEL: func.func @log_softmax_last(
// CHECK-SAME: %[[X:.*]]: tensor<4x6xf32>
// CHECK-NOT: sgraph.log_softmax
// CHECK: %[[MAX:.*]] = sgraph.reduce_max %[[X]] axes = [1] {keepdims = true}
// CHECK: %[[SH:.*]] = sgraph.sub %[[X]], %[[MAX]]
// CHECK: %[[E:.*]] = sgraph.exp %[[SH]]
// CHECK: %[[SUM:.*]] = sgraph.reduce_sum %[[E]] axes = [1] {keepdims = true}
// CHECK: %[[L:.*]] = sgraph.log %[[SUM]] : tensor<4x1xf32>
// CHECK: %[[Y:.*]] = sgraph.sub %[[SH]], %[[L]] : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
// CHECK: return %[[Y]]
func.func @log_softmax_last(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %y = sgraph.log_softmax %x axis = 1 : tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// Tests that layer_norm over the trailing two axes is PyTorch's formula:
// mean and biased variance as sums times 1/12, rsqrt(var + eps), then
// * scale + bias broadcast over the leading axis.
// CHECK-LABEL: func.func @layer_norm(
// CHECK-SAME: %[[X:.*]]: tensor<2x3x4xf32>, %[[W:.*]]: tensor<3x4xf32>, %[[B:.*]]: tensor<3x4xf32>
// CHECK-NOT: sgraph.layer_norm
// CHECK: %[[S:.*]] = sgraph.reduce_sum %[[X]] axes = [1, 2] {keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
// CHECK: %[[INV:.*]] = sgraph.constant dense<0.0833333358> : tensor<f32>
// CHECK: %[[MEAN:.*]] = sgraph.mul %[[S]], %[[INV]]
// CHECK: %[[C:.*]] = sgraph.sub %[[X]], %[[MEAN]] : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[SQ:.*]] = sgraph.mul %[[C]], %[[C]]
// CHECK: %[[VS:.*]] = sgraph.reduce_sum %[[SQ]] axes = [1, 2] {keepdims = true}
// CHECK: %[[VAR:.*]] = sgraph.mul %[[VS]], %{{.*}}
// CHECK: %[[EPS:.*]] = sgraph.constant dense<1.000000e-03> : tensor<f32>
// CHECK: %[[VE:.*]] = sgraph.add %[[VAR]], %[[EPS]]
// CHECK: %[[R:.*]] = sgraph.rsqrt %[[VE]] : tensor<2x1x1xf32>
// CHECK: %[[N:.*]] = sgraph.mul %[[C]], %[[R]]
// CHECK: %[[SC:.*]] = sgraph.mul %[[N]], %[[W]] : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[Y:.*]] = sgraph.add %[[SC]], %[[B]] : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
// CHECK: return %[[Y]]
func.func @layer_norm(%x: tensor<2x3x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3x4xf32>) -> tensor<2x3x4xf32> {
  %y = sgraph.layer_norm %x, %w, %b axis = 1 {epsilon = 1.0e-3 : f64} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

// Tests that softmax_cross_entropy with the default mean reduction is
// log(sum(exp(x - max))) minus the label's column of x - max (selected by
// comparing the label with iota(C)), 0 at ignored positions, summed and
// divided by the number of positions not ignored.
// CHECK-LABEL: func.func @cross_entropy_mean(
// CHECK-SAME: %[[X:.*]]: tensor<2x3x5xf32>, %[[L:.*]]: tensor<2x3xi64>
// CHECK-NOT: sgraph.softmax_cross_entropy
// CHECK: %[[MAX:.*]] = sgraph.reduce_max %[[X]] axes = [2] {keepdims = true}
// CHECK: %[[SH:.*]] = sgraph.sub %[[X]], %[[MAX]]
// CHECK: %[[E:.*]] = sgraph.exp %[[SH]]
// CHECK: %[[S:.*]] = sgraph.reduce_sum %[[E]] axes = [2] : (tensor<2x3x5xf32>) -> tensor<2x3xf32>
// CHECK: %[[LSE:.*]] = sgraph.log %[[S]]
// CHECK: %[[IDS:.*]] = sgraph.iota axis = 0 : tensor<5xi64>
// CHECK: %[[COL:.*]] = sgraph.reshape %[[L]] : tensor<2x3xi64> to tensor<2x3x1xi64>
// CHECK: %[[HIT:.*]] = sgraph.compare %[[COL]], %[[IDS]] {direction = "eq"} : (tensor<2x3x1xi64>, tensor<5xi64>) -> tensor<2x3x5xi1>
// CHECK: %[[ZERO:.*]] = sgraph.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[SEL:.*]] = sgraph.select %[[HIT]], %[[SH]], %[[ZERO]]
// CHECK: %[[PICK:.*]] = sgraph.reduce_sum %[[SEL]] axes = [2] : (tensor<2x3x5xf32>) -> tensor<2x3xf32>
// CHECK: %[[IGN:.*]] = sgraph.constant dense<-1> : tensor<i64>
// CHECK: %[[VALID:.*]] = sgraph.compare %[[L]], %[[IGN]] {direction = "ne"}
// CHECK: %[[D:.*]] = sgraph.sub %[[LSE]], %[[PICK]]
// CHECK: %[[LOSS:.*]] = sgraph.select %[[VALID]], %[[D]], %[[ZERO]] : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK: %[[TOT:.*]] = sgraph.reduce_sum %[[LOSS]] axes = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
// CHECK: %[[VF:.*]] = sgraph.cast %[[VALID]] : tensor<2x3xi1> to tensor<2x3xf32>
// CHECK: %[[CNT:.*]] = sgraph.reduce_sum %[[VF]] axes = [0, 1]
// CHECK: %[[MEAN:.*]] = sgraph.div %[[TOT]], %[[CNT]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: return %[[MEAN]]
func.func @cross_entropy_mean(%x: tensor<2x3x5xf32>, %l: tensor<2x3xi64>) -> tensor<f32> {
  %loss = sgraph.softmax_cross_entropy %x, %l {ignore_index = -1 : i64} : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tests that the sum and none reductions stop before the division: the sum
// of the per-position losses, and the per-position losses themselves (i32
// labels give an i32 iota and ignore_index).
// CHECK-LABEL: func.func @cross_entropy_sum_none(
// CHECK-NOT: sgraph.softmax_cross_entropy
// CHECK: sgraph.iota axis = 0 : tensor<7xi32>
// CHECK: sgraph.constant dense<-100> : tensor<i32>
// CHECK: %[[LOSS:.*]] = sgraph.select %{{.*}} : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK: %[[SUM:.*]] = sgraph.reduce_sum %[[LOSS]] axes = [0] : (tensor<4xf32>) -> tensor<f32>
// CHECK-NOT: sgraph.div
// CHECK: %[[NONE:.*]] = sgraph.select %{{.*}} : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NOT: sgraph.reduce_sum
// CHECK: return %[[SUM]], %[[NONE]]
func.func @cross_entropy_sum_none(%x: tensor<4x7xf32>, %l: tensor<4xi32>) -> (tensor<f32>, tensor<4xf32>) {
  %s = sgraph.softmax_cross_entropy %x, %l {reduction = "sum"} : (tensor<4x7xf32>, tensor<4xi32>) -> tensor<f32>
  %n = sgraph.softmax_cross_entropy %x, %l {reduction = "none"} : (tensor<4x7xf32>, tensor<4xi32>) -> tensor<4xf32>
  return %s, %n : tensor<f32>, tensor<4xf32>
}

// -----

// Tests that global_norm sums each operand's squares to a scalar (a 0-d
// operand's square is one already), adds the scalars and takes the square
// root, all in f64 as the op specifies (every operand is cast up first), and
// casts the norm back to the result type.
// CHECK-LABEL: func.func @global_norm(
// CHECK-SAME: %[[A:.*]]: tensor<3x2xf32>, %[[B:.*]]: tensor<f32>, %[[C:.*]]: tensor<4xbf16>
// CHECK-NOT: sgraph.global_norm
// CHECK: %[[AU:.*]] = sgraph.cast %[[A]] : tensor<3x2xf32> to tensor<3x2xf64>
// CHECK: %[[AA:.*]] = sgraph.mul %[[AU]], %[[AU]]
// CHECK: %[[SA:.*]] = sgraph.reduce_sum %[[AA]] axes = [0, 1] : (tensor<3x2xf64>) -> tensor<f64>
// CHECK: %[[BU:.*]] = sgraph.cast %[[B]] : tensor<f32> to tensor<f64>
// CHECK: %[[BB:.*]] = sgraph.mul %[[BU]], %[[BU]] : (tensor<f64>, tensor<f64>) -> tensor<f64>
// CHECK-NEXT: %[[T1:.*]] = sgraph.add %[[SA]], %[[BB]]
// CHECK: %[[CU:.*]] = sgraph.cast %[[C]] : tensor<4xbf16> to tensor<4xf64>
// CHECK: %[[CC:.*]] = sgraph.mul %[[CU]], %[[CU]]
// CHECK: %[[SC:.*]] = sgraph.reduce_sum %[[CC]] axes = [0]
// CHECK: %[[T2:.*]] = sgraph.add %[[T1]], %[[SC]]
// CHECK: %[[N:.*]] = sgraph.sqrt %[[T2]] : tensor<f64>
// CHECK: %[[R:.*]] = sgraph.cast %[[N]] : tensor<f64> to tensor<f32>
// CHECK: return %[[R]]
func.func @global_norm(%a: tensor<3x2xf32>, %b: tensor<f32>, %c: tensor<4xbf16>) -> tensor<f32> {
  %n = sgraph.global_norm %a, %b, %c : (tensor<3x2xf32>, tensor<f32>, tensor<4xbf16>) -> tensor<f32>
  return %n : tensor<f32>
}

// -----

// Tests that gelu (elementwise) and ops that are already primitives are left
// alone.
// CHECK-LABEL: func.func @untouched(
// CHECK: %[[G:.*]] = sgraph.gelu %{{.*}} {approximate = "tanh"}
// CHECK: %[[S:.*]] = sgraph.reduce_sum %[[G]] axes = [0]
// CHECK: return %[[S]]
func.func @untouched(%x: tensor<4xf32>) -> tensor<f32> {
  %g = sgraph.gelu %x {approximate = "tanh"} : tensor<4xf32>
  %s = sgraph.reduce_sum %g axes = [0] : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Tests that every op of an expansion keeps the location of the op it
// replaces.
// LOC-LABEL: func.func @locations(
// LOC: sgraph.reduce_max {{.*}} loc(#[[SM:.*]])
// LOC: sgraph.sub {{.*}} loc(#[[SM]])
// LOC: sgraph.exp {{.*}} loc(#[[SM]])
// LOC: sgraph.reduce_sum {{.*}} loc(#[[SM]])
// LOC: sgraph.div {{.*}} loc(#[[SM]])
// LOC: #[[SM]] = loc("model.pbtxt":12:1)
func.func @locations(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = sgraph.softmax %x axis = 1 : tensor<2x3xf32> loc("model.pbtxt":12:1)
  return %y : tensor<2x3xf32>
}
