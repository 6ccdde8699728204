// RUN: sinter-opt %s --sinter-mixed-precision --sinter-autodiff --sinter-decompose-ops --canonicalize --cse --sinter-fuse-kernels="memory-bound=true matmul-library=cuBLASLt" | FileCheck %s
// RUN: sinter-opt %s --sinter-mixed-precision --sinter-autodiff --sinter-decompose-ops --canonicalize --cse --sinter-fuse-kernels | FileCheck %s --check-prefix=CPU
// RUN: sinter-opt %s --sinter-mixed-precision=precision=fp32 --sinter-autodiff --sinter-decompose-ops --canonicalize --cse --sinter-fuse-kernels="memory-bound=true" | FileCheck %s --check-prefix=F32

// Tests that on a memory-bound target (`memory-bound`, the CUDA target) the
// backward pass recomputes a softmax's f32 probabilities from the bf16
// scores and the row max and sum the forward kernel exports, rather than
// reading an f32 copy the forward kernel writes for it alone: an attention
// softmax (whose bf16 probabilities the next matmul reads) and the
// cross-entropy's (p - one_hot). The forward kernels then write no f32
// tensor of the scores' shape. And the cross-entropy's target logit is
// picked in the softmax's kernel: the mask of labels against an iota
// (a kernel that reads nothing of its size) is tried last, so the select
// joins the kernel that reads the logits, and the mask goes with it.
// CHECK-LABEL: func.func @train_step(
// CHECK: sgraph.fusion "[[SM:k[0-9]+]]" kind = "reduction"(%{{.*}}) : (tensor<2x4x4xbf16>) -> (tensor<2x4x1xf32>, tensor<2x4x1xf32>, tensor<2x4x4xbf16>)
// CHECK: sgraph.fusion "[[CE:k[0-9]+]]" kind = "reduction"(%{{.*}}) : (tensor<8x8xbf16>, tensor<8x1xi64>, tensor<8xi64>, tensor<8xi64>) -> (tensor<8x1xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x1xf32>)
// CHECK: sgraph.compare {{.*}}direction = "eq", sinter.fusion = "[[CE]]: {{.*}}"
// CHECK-NEXT: sgraph.select {{.*}}sinter.fusion = "[[CE]]: fused with its producer
// CHECK: sgraph.fusion "[[CEG:k[0-9]+]]" kind = "loop"(%{{.*}}) : (tensor<8x8xbf16>, tensor<8x1xf32>, tensor<8x1xf32>, tensor<8xi64>, tensor<8x1xf32>) -> tensor<8x8xf32>
// CHECK: sgraph.exp %{{.*}} {sinter.fusion = "[[CEG]]: recomputed here from [[CE]]'s chain instead of read from memory"}
// CHECK: sgraph.div %{{.*}} {sinter.fusion = "[[CEG]]: recomputed here from [[CE]]'s chain instead of read from memory"}
// CHECK: sgraph.one_hot %{{.*}} {sinter.fusion = "[[CEG]]: recomputed here from [[CE]]'s chain instead of read from memory"}
// CHECK: sgraph.fusion "[[SMG:k[0-9]+]]" kind = "reduction"(%{{.*}}) : (tensor<2x4x4xbf16>, tensor<2x4x4xbf16>, tensor<2x4x1xf32>, tensor<2x4x1xf32>) -> (tensor<2x4x1xf32>, tensor<2x4x4xbf16>)
// CHECK: sgraph.exp %{{.*}} {sinter.fusion = "[[SMG]]: recomputed here from [[SM]]'s chain instead of read from memory"}
// CHECK: sgraph.div %{{.*}} {sinter.fusion = "[[SMG]]: recomputed here from [[SM]]'s chain instead of read from memory"}

// The CPU target reads the f32 probabilities: recomputing the exp there
// was measured slower (docs/CodeGen.md).
// CPU-LABEL: func.func @train_step(
// CPU: sgraph.fusion "{{k[0-9]+}}" kind = "reduction"(%{{.*}}) : (tensor<2x4x4xbf16>) -> (tensor<2x4x1xf32>, tensor<2x4x1xf32>, tensor<2x4x4xf32>, tensor<2x4x4xbf16>)
// CPU: sgraph.fusion "{{k[0-9]+}}" kind = "reduction"(%{{.*}}, %{{.*}}) : (tensor<8x8xbf16>, tensor<8xi64>) -> (tensor<8x1xf32>, tensor<8xf32>, tensor<8x1xf32>, tensor<8x8xf32>)
// CPU: sgraph.compare {{.*}}direction = "eq", sinter.fusion = "[[T:k[0-9]+]]: starts a loop kernel over 8x8
// CPU-NEXT: sgraph.select {{.*}}sinter.fusion = "[[T]]: fused with its producer
// CPU-NOT: sgraph.exp {{.*}}recomputed here

// In f32 the scores take as many bytes as the probabilities: nothing to
// save, so the probabilities are read (the next matmul reads them anyway);
// the target logit is still picked in the softmax's kernel.
// F32-LABEL: func.func @train_step(
// F32: sgraph.fusion "{{k[0-9]+}}" kind = "reduction"(%{{.*}}) : (tensor<2x4x4xf32>) -> (tensor<2x4x1xf32>, tensor<2x4x1xf32>, tensor<2x4x4xf32>)
// F32: sgraph.fusion "{{k[0-9]+}}" kind = "reduction"(%{{.*}}) : (tensor<8x8xf32>, tensor<8x1xi64>, tensor<8xi64>, tensor<8xi64>) -> (tensor<8x1xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x1xf32>, tensor<8x8xf32>)
// F32-NOT: sgraph.exp {{.*}}recomputed here
module attributes {sgraph.training = {batch_size = 2 : i64, seed = 1 : i64, precision = "bf16_mixed", optimizer = {kind = "sgd", lr = 1.0e-3 : f64}}} {
func.func @forward(%w: tensor<8x3xf32> {sgraph.param = "fc.weight"}, %x: tensor<2x4x3xf32> {sgraph.input = "x"}, %y: tensor<8xi64> {sgraph.input = "y"}) -> (tensor<f32> {sgraph.name = "loss"}) {
  %h = sgraph.matmul %x, %w {transpose_rhs = true} : (tensor<2x4x3xf32>, tensor<8x3xf32>) -> tensor<2x4x8xf32>
  %s = sgraph.matmul %h, %h {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %p = sgraph.softmax %s axis = 2 : tensor<2x4x4xf32>
  %o = sgraph.matmul %p, %h : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %r = sgraph.reshape %o : tensor<2x4x8xf32> to tensor<8x8xf32>
  %l = sgraph.softmax_cross_entropy %r, %y : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
}
