// RUN: sinter-opt %s -split-input-file --sinter-causal-matmuls | FileCheck %s

// Tests sinter-causal-matmuls: which matmuls of causal attention may skip
// a triangle, and which may not.

// The forward pass as the frontend writes it, the softmax decomposed: the
// scores are read only through the causal select (times the scale first),
// so only their lower triangle is needed; the probabilities are exactly 0
// above the diagonal (exp of -inf minus the row max, over the row sum,
// through dropout), so P @ V skips the K products past each row.
// CHECK-LABEL: func.func @forward
// CHECK: %[[S:.*]] = sgraph.matmul %arg0, %arg1 {sinter.triangle = "out_lower", transpose_rhs = true}
// CHECK: sgraph.matmul %{{.*}}, %arg2 {sinter.triangle = "lhs_lower"}
func.func @forward(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %step: tensor<i64>) -> tensor<2x8x4xf32> {
  %scale = sgraph.constant dense<0.5> : tensor<f32>
  %ninf = sgraph.constant dense<0xFF800000> : tensor<f32>
  %s = sgraph.matmul %q, %k {transpose_rhs = true} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
  %ss = sgraph.mul %s, %scale : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %mask = sgraph.causal_mask : tensor<8x8xi1>
  %m = sgraph.select %mask, %ss, %ninf : (tensor<8x8xi1>, tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %max = sgraph.reduce_max %m axes = [2] {keepdims = true} : (tensor<2x8x8xf32>) -> tensor<2x8x1xf32>
  %d = sgraph.sub %m, %max : (tensor<2x8x8xf32>, tensor<2x8x1xf32>) -> tensor<2x8x8xf32>
  %e = sgraph.exp %d : tensor<2x8x8xf32>
  %sum = sgraph.reduce_sum %e axes = [2] {keepdims = true} : (tensor<2x8x8xf32>) -> tensor<2x8x1xf32>
  %p = sgraph.div %e, %sum : (tensor<2x8x8xf32>, tensor<2x8x1xf32>) -> tensor<2x8x8xf32>
  %pd = sgraph.dropout %p, %step {rate = 1.000000e-01 : f64, seed = 3 : i64} : tensor<2x8x8xf32>, tensor<i64>
  %o = sgraph.matmul %pd, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// The backward pass as autodiff writes it: dP = dO @ V^T is read through
// dropout, then only multiplied by P (the softmax gradient P * (dP -
// sum(P * dP))), so its upper triangle is never seen; dS = select(mask,
// .., 0) * scale is 0 above the diagonal, so dS @ K skips like P @ V, and
// dS^T @ Q and P^T @ dO (op(lhs) is then 0 below the diagonal) skip the K
// products before each row. P as the rhs of dO^T @ P: rhs_lower.
// CHECK-LABEL: func.func @backward
// CHECK: sgraph.matmul %arg0, %arg1 {sinter.triangle = "out_lower", transpose_rhs = true}
// CHECK: sgraph.matmul %[[P:.*]], %arg0 {sinter.triangle = "lhs_upper", transpose_lhs = true}
// CHECK: sgraph.matmul %arg0, %[[P]] {sinter.triangle = "rhs_lower", transpose_lhs = true}
// CHECK: sgraph.matmul %[[DS:.*]], %arg3 {sinter.triangle = "lhs_lower"}
// CHECK: sgraph.matmul %[[DS]], %arg4 {sinter.triangle = "lhs_upper", transpose_lhs = true}
func.func @backward(%do: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %p: tensor<2x8x8xf32>, %k: tensor<2x8x4xf32>, %q: tensor<2x8x4xf32>, %step: tensor<i64>) -> (tensor<2x8x4xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>) {
  %zero = sgraph.constant dense<0.0> : tensor<f32>
  %scale = sgraph.constant dense<0.5> : tensor<f32>
  %mask = sgraph.causal_mask : tensor<8x8xi1>
  // P as the forward pass made it: 0 above the diagonal.
  %pz = sgraph.select %mask, %p, %zero : (tensor<8x8xi1>, tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %dp = sgraph.matmul %do, %v {transpose_rhs = true} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
  %dv = sgraph.matmul %pz, %do {transpose_lhs = true} : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %dvt = sgraph.matmul %do, %pz {transpose_lhs = true} : (tensor<2x8x4xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32>
  %dpd = sgraph.dropout %dp, %step {rate = 1.000000e-01 : f64, seed = 3 : i64} : tensor<2x8x8xf32>, tensor<i64>
  %t = sgraph.mul %dpd, %pz : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %r = sgraph.reduce_sum %t axes = [2] {keepdims = true} : (tensor<2x8x8xf32>) -> tensor<2x8x1xf32>
  %c = sgraph.sub %dpd, %r : (tensor<2x8x8xf32>, tensor<2x8x1xf32>) -> tensor<2x8x8xf32>
  %g = sgraph.mul %pz, %c : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %gm = sgraph.select %mask, %g, %zero : (tensor<8x8xi1>, tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %ds = sgraph.mul %gm, %scale : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %dq = sgraph.matmul %ds, %k : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %dk = sgraph.matmul %ds, %q {transpose_lhs = true} : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %dv, %dvt, %dq, %dk : tensor<2x8x4xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>
}

// -----

// What proves nothing. A finite mask value (-1e4: exp gives tiny numbers,
// not 0); scores also returned (read whole); a reduction straight over a
// product (every column summed); a mask that is an argument (its shape of
// truth unknown); a value that is 0 above the diagonal used as a divisor;
// the mask minus a full matrix (not a value per row); a product as the
// select's other branch, the one kept above the diagonal.
// CHECK-LABEL: func.func @unproven
// CHECK-NOT: sinter.triangle
func.func @unproven(%q: tensor<8x4xf32>, %k: tensor<8x4xf32>, %v: tensor<8x4xf32>, %anymask: tensor<8x8xi1>, %full: tensor<8x8xf32>) -> (tensor<8x4xf32>, tensor<8x8xf32>, tensor<8x1xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x8xf32>) {
  %big = sgraph.constant dense<-1.0e4> : tensor<f32>
  %ninf = sgraph.constant dense<0xFF800000> : tensor<f32>
  %zero = sgraph.constant dense<0.0> : tensor<f32>
  %mask = sgraph.causal_mask : tensor<8x8xi1>
  %s = sgraph.matmul %q, %k {transpose_rhs = true} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
  %m = sgraph.select %mask, %s, %big : (tensor<8x8xi1>, tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xf32>
  %e = sgraph.exp %m : tensor<8x8xf32>
  %o = sgraph.matmul %e, %v : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %s2 = sgraph.matmul %k, %q {transpose_rhs = true} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
  %rs = sgraph.reduce_sum %s2 axes = [1] {keepdims = true} : (tensor<8x8xf32>) -> tensor<8x1xf32>
  %a = sgraph.select %anymask, %full, %zero : (tensor<8x8xi1>, tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xf32>
  %o2 = sgraph.matmul %a, %v : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %z = sgraph.select %mask, %full, %zero : (tensor<8x8xi1>, tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xf32>
  %quot = sgraph.div %full, %z : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %o3 = sgraph.matmul %quot, %v : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %n = sgraph.select %mask, %full, %ninf : (tensor<8x8xi1>, tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xf32>
  %d = sgraph.sub %n, %full : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %e2 = sgraph.exp %d : tensor<8x8xf32>
  %o4 = sgraph.matmul %e2, %v : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %s3 = sgraph.matmul %v, %q {transpose_rhs = true} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
  %u = sgraph.select %mask, %full, %s3 : (tensor<8x8xi1>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %o, %s, %rs, %o2, %o3, %o4, %u : tensor<8x4xf32>, tensor<8x8xf32>, tensor<8x1xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x8xf32>
}

// -----

// A transpose of the two axes moves the zeros to the other side; a
// transpose of batch axes keeps them.
// CHECK-LABEL: func.func @transposes
// CHECK: sgraph.matmul %{{.*}}, %arg2 {sinter.triangle = "lhs_upper"}
// CHECK: sgraph.matmul %{{.*}}, %arg3 {sinter.triangle = "lhs_lower"}
func.func @transposes(%x: tensor<2x3x8x8xf32>, %y: tensor<3x2x8x8xf32>, %v: tensor<2x3x8x4xf32>, %w: tensor<3x2x8x4xf32>) -> (tensor<2x3x8x4xf32>, tensor<3x2x8x4xf32>) {
  %zero = sgraph.constant dense<0.0> : tensor<f32>
  %mask = sgraph.causal_mask : tensor<8x8xi1>
  %z = sgraph.select %mask, %x, %zero : (tensor<8x8xi1>, tensor<2x3x8x8xf32>, tensor<f32>) -> tensor<2x3x8x8xf32>
  %zt = sgraph.transpose %z permutation = [0, 1, 3, 2] : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %a = sgraph.matmul %zt, %v : (tensor<2x3x8x8xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x8x4xf32>
  %zb = sgraph.transpose %z permutation = [1, 0, 2, 3] : (tensor<2x3x8x8xf32>) -> tensor<3x2x8x8xf32>
  %b = sgraph.matmul %zb, %w : (tensor<3x2x8x8xf32>, tensor<3x2x8x4xf32>) -> tensor<3x2x8x4xf32>
  return %a, %b : tensor<2x3x8x4xf32>, tensor<3x2x8x4xf32>
}
