// The composite ops, run by decompose-ops-numerics.test through the reference
// interpreter before and after sinter-decompose-ops. @composites_f64 covers
// every op and variant the pass rewrites; @composites_bf16 checks that the
// half-precision expansions (computed in f32) stay within one bf16 rounding.
func.func @composites_f64(
    %x: tensor<3x5x4xf64> {sgraph.input = "x"},
    %w2: tensor<5x4xf64> {sgraph.input = "w2"},
    %b2: tensor<5x4xf64> {sgraph.input = "b2"},
    %w1: tensor<4xf64> {sgraph.input = "w1"},
    %b1: tensor<4xf64> {sgraph.input = "b1"},
    %masked: tensor<3x4xf64> {sgraph.input = "masked"},
    %logits: tensor<2x3x6xf64> {sgraph.input = "logits"},
    %labels: tensor<2x3xi64> {sgraph.input = "labels"},
    %all_ignored: tensor<2x3xi64> {sgraph.input = "all_ignored"},
    %labels32: tensor<2x3xi32> {sgraph.input = "labels32"},
    %s: tensor<f64> {sgraph.input = "s"})
    -> (tensor<1x5x1xf64> {sgraph.name = "mean_keepdims"},
        tensor<3x4xf64> {sgraph.name = "mean_axis1"},
        tensor<f64> {sgraph.name = "mean_all"},
        tensor<3x5x4xf64> {sgraph.name = "softmax0"},
        tensor<3x5x4xf64> {sgraph.name = "softmax1"},
        tensor<3x5x4xf64> {sgraph.name = "softmax2"},
        tensor<3x5x4xf64> {sgraph.name = "log_softmax1"},
        tensor<3x5x4xf64> {sgraph.name = "log_softmax2"},
        tensor<3x4xf64> {sgraph.name = "softmax_masked"},
        tensor<3x4xf64> {sgraph.name = "log_softmax_masked"},
        tensor<3x5x4xf64> {sgraph.name = "layer_norm1"},
        tensor<3x5x4xf64> {sgraph.name = "layer_norm2"},
        tensor<f64> {sgraph.name = "ce_mean"},
        tensor<f64> {sgraph.name = "ce_sum"},
        tensor<2x3xf64> {sgraph.name = "ce_none"},
        tensor<f64> {sgraph.name = "ce_mean_all_ignored"},
        tensor<f64> {sgraph.name = "ce_sum_all_ignored"},
        tensor<f64> {sgraph.name = "ce_mean_ignore_2_i32"},
        tensor<f64> {sgraph.name = "global_norm"}) {
  %m0 = sgraph.reduce_mean %x axes = [0, 2] {keepdims = true} : (tensor<3x5x4xf64>) -> tensor<1x5x1xf64>
  %m1 = sgraph.reduce_mean %x axes = [1] : (tensor<3x5x4xf64>) -> tensor<3x4xf64>
  %m2 = sgraph.reduce_mean %x axes = [0, 1, 2] : (tensor<3x5x4xf64>) -> tensor<f64>
  %sm0 = sgraph.softmax %x axis = 0 : tensor<3x5x4xf64>
  %sm1 = sgraph.softmax %x axis = 1 : tensor<3x5x4xf64>
  %sm2 = sgraph.softmax %x axis = 2 : tensor<3x5x4xf64>
  %ls1 = sgraph.log_softmax %x axis = 1 : tensor<3x5x4xf64>
  %ls2 = sgraph.log_softmax %x axis = 2 : tensor<3x5x4xf64>
  %smm = sgraph.softmax %masked axis = 1 : tensor<3x4xf64>
  %lsm = sgraph.log_softmax %masked axis = 1 : tensor<3x4xf64>
  %ln1 = sgraph.layer_norm %x, %w2, %b2 axis = 1 : (tensor<3x5x4xf64>, tensor<5x4xf64>, tensor<5x4xf64>) -> tensor<3x5x4xf64>
  %ln2 = sgraph.layer_norm %x, %w1, %b1 axis = 2 {epsilon = 1.0e-2 : f64} : (tensor<3x5x4xf64>, tensor<4xf64>, tensor<4xf64>) -> tensor<3x5x4xf64>
  %ce0 = sgraph.softmax_cross_entropy %logits, %labels {ignore_index = -1 : i64} : (tensor<2x3x6xf64>, tensor<2x3xi64>) -> tensor<f64>
  %ce1 = sgraph.softmax_cross_entropy %logits, %labels {ignore_index = -1 : i64, reduction = "sum"} : (tensor<2x3x6xf64>, tensor<2x3xi64>) -> tensor<f64>
  %ce2 = sgraph.softmax_cross_entropy %logits, %labels {ignore_index = -1 : i64, reduction = "none"} : (tensor<2x3x6xf64>, tensor<2x3xi64>) -> tensor<2x3xf64>
  %ce3 = sgraph.softmax_cross_entropy %logits, %all_ignored {ignore_index = -1 : i64} : (tensor<2x3x6xf64>, tensor<2x3xi64>) -> tensor<f64>
  %ce4 = sgraph.softmax_cross_entropy %logits, %all_ignored {ignore_index = -1 : i64, reduction = "sum"} : (tensor<2x3x6xf64>, tensor<2x3xi64>) -> tensor<f64>
  %ce5 = sgraph.softmax_cross_entropy %logits, %labels32 {ignore_index = 2 : i64} : (tensor<2x3x6xf64>, tensor<2x3xi32>) -> tensor<f64>
  %gn = sgraph.global_norm %x, %w1, %s : (tensor<3x5x4xf64>, tensor<4xf64>, tensor<f64>) -> tensor<f64>
  return %m0, %m1, %m2, %sm0, %sm1, %sm2, %ls1, %ls2, %smm, %lsm, %ln1, %ln2, %ce0, %ce1, %ce2, %ce3, %ce4, %ce5, %gn
      : tensor<1x5x1xf64>, tensor<3x4xf64>, tensor<f64>, tensor<3x5x4xf64>, tensor<3x5x4xf64>, tensor<3x5x4xf64>, tensor<3x5x4xf64>, tensor<3x5x4xf64>, tensor<3x4xf64>, tensor<3x4xf64>, tensor<3x5x4xf64>, tensor<3x5x4xf64>, tensor<f64>, tensor<f64>, tensor<2x3xf64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>
}

func.func @composites_bf16(
    %x: tensor<3x5x4xbf16> {sgraph.input = "x_bf16"},
    %w1: tensor<4xbf16> {sgraph.input = "w1_bf16"},
    %b1: tensor<4xbf16> {sgraph.input = "b1_bf16"},
    %logits: tensor<2x3x6xbf16> {sgraph.input = "logits_bf16"},
    %labels: tensor<2x3xi64> {sgraph.input = "labels"})
    -> (tensor<3x4xbf16> {sgraph.name = "mean_axis1"},
        tensor<3x5x4xbf16> {sgraph.name = "softmax1"},
        tensor<3x5x4xbf16> {sgraph.name = "log_softmax2"},
        tensor<3x5x4xbf16> {sgraph.name = "layer_norm2"},
        tensor<f32> {sgraph.name = "ce_mean"},
        tensor<2x3xbf16> {sgraph.name = "ce_none"},
        tensor<f32> {sgraph.name = "global_norm"}) {
  %m1 = sgraph.reduce_mean %x axes = [1] : (tensor<3x5x4xbf16>) -> tensor<3x4xbf16>
  %sm1 = sgraph.softmax %x axis = 1 : tensor<3x5x4xbf16>
  %ls2 = sgraph.log_softmax %x axis = 2 : tensor<3x5x4xbf16>
  %ln2 = sgraph.layer_norm %x, %w1, %b1 axis = 2 : (tensor<3x5x4xbf16>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<3x5x4xbf16>
  %ce0 = sgraph.softmax_cross_entropy %logits, %labels {ignore_index = -1 : i64} : (tensor<2x3x6xbf16>, tensor<2x3xi64>) -> tensor<bf16>
  %ce0f = sgraph.cast %ce0 : tensor<bf16> to tensor<f32>
  %ce2 = sgraph.softmax_cross_entropy %logits, %labels {ignore_index = -1 : i64, reduction = "none"} : (tensor<2x3x6xbf16>, tensor<2x3xi64>) -> tensor<2x3xbf16>
  %gn = sgraph.global_norm %x, %w1 : (tensor<3x5x4xbf16>, tensor<4xbf16>) -> tensor<f32>
  return %m1, %sm1, %ls2, %ln2, %ce0f, %ce2, %gn
      : tensor<3x4xbf16>, tensor<3x5x4xbf16>, tensor<3x5x4xbf16>, tensor<3x5x4xbf16>, tensor<f32>, tensor<2x3xbf16>, tensor<f32>
}
