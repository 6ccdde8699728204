//===- GraphOps.td - sgraph op definitions -------------------------------===//
//
// One section per op family. Each op's constraints are numbered in
// docs/dialects/sgraph.md; the checks in GraphTypeInference.cpp and
// GraphOps.cpp carry the same labels (`// matmul_c3`), and so do the negative
// tests in test/dialects/Graph/invalid.mlir (`@matmul_c3`).
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_DIALECTS_GRAPH_GRAPHOPS_TD
#define SINTER_DIALECTS_GRAPH_GRAPHOPS_TD

include "dialects/Graph/GraphBase.td"
include "dialects/Graph/GraphInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

class SG_Op<string mnemonic, list<Trait> traits = []>
    : Op<SGraph_Dialect, mnemonic, traits>;

defvar SG_Differentiable = DeclareOpInterfaceMethods<SG_GradientOpInterface>;

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

def SG_ConstantOp : SG_Op<"constant",
    [Pure, ConstantLike, InferTypeOpAdaptor]> {
  let summary = "A tensor constant";
  let description = [{
    Produces the tensor held by `value`; the result has the value's type.

    ```mlir
    %zeros = sgraph.constant dense<0.0> : tensor<4x8xf32>
    %ids = sgraph.constant dense<[1, 2, 3]> : tensor<3xi64>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs SG_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def SG_IotaOp : SG_Op<"iota", [Pure]> {
  let summary = "Indices along one axis";
  let description = [{
    Fills the result with the index of each element along `axis`:
    `result[i0, …, in] = i_axis`.

    ```mlir
    %pos = sgraph.iota axis = 0 : tensor<256xi64>
    ```
  }];
  let arguments = (ins I64Attr:$axis);
  let results = (outs SG_NumericTensor:$result);
  let assemblyFormat = "`axis` `=` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def SG_CausalMaskOp : SG_Op<"causal_mask", [Pure]> {
  let summary = "Lower-triangular boolean mask";
  let description = [{
    `result[i, j] = (j <= i)`: true where query position `i` may attend to key
    position `j`.

    ```mlir
    %mask = sgraph.causal_mask : tensor<256x256xi1>
    ```
  }];
  let results = (outs SG_BoolTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops (numpy broadcasting)
//===----------------------------------------------------------------------===//

class SG_BinaryOp<string mnemonic, Type operandType, string math,
                  list<Trait> traits = []>
    : SG_Op<mnemonic, !listconcat([Pure, InferTypeOpAdaptor], traits)> {
  let summary = "Elementwise " # math # " with numpy broadcasting";
  let description = [{
    Computes `}] # math # [{` elementwise. The operand shapes broadcast as in
    numpy: aligned at the trailing dimension, each pair of dimensions is
    equal or one of them is 1; the result has the broadcast shape.

    ```mlir
    %y = sgraph.}] # mnemonic # [{ %x, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def SG_AddOp : SG_BinaryOp<"add", SG_NumericTensor, "lhs + rhs",
                           [Commutative, SG_Differentiable]>;
def SG_SubOp : SG_BinaryOp<"sub", SG_NumericTensor, "lhs - rhs",
                           [SG_Differentiable]>;
def SG_MulOp : SG_BinaryOp<"mul", SG_NumericTensor, "lhs * rhs",
                           [Commutative, SG_Differentiable]>;
def SG_DivOp : SG_BinaryOp<"div", SG_NumericTensor,
                           "lhs / rhs (integers truncate toward zero)",
                           [SG_Differentiable]>;
def SG_PowOp : SG_BinaryOp<"pow", SG_FloatTensor, "lhs ^ rhs",
                           [SG_Differentiable]>;
def SG_MaximumOp : SG_BinaryOp<"maximum", SG_NumericTensor, "max(lhs, rhs)",
                               [Commutative, SG_Differentiable]>;
def SG_MinimumOp : SG_BinaryOp<"minimum", SG_NumericTensor, "min(lhs, rhs)",
                               [Commutative, SG_Differentiable]>;

def SG_CompareOp : SG_Op<"compare", [Pure, InferTypeOpAdaptor]> {
  let summary = "Elementwise comparison with numpy broadcasting";
  let description = [{
    Compares `lhs` and `rhs` elementwise with `direction`, one of `eq`, `ne`,
    `lt`, `le`, `gt`, `ge`, and yields an `i1` tensor of the broadcast shape.
    Comparisons with NaN are false except `ne`.

    ```mlir
    %valid = sgraph.compare %labels, %ignore {direction = "ne"}
        : (tensor<8x256xi64>, tensor<i64>) -> tensor<8x256xi1>
    ```
  }];
  let arguments = (ins SG_Tensor:$lhs, SG_Tensor:$rhs, StrAttr:$direction);
  let results = (outs SG_BoolTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def SG_SelectOp : SG_Op<"select",
    [Pure, InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "Elementwise choice with numpy broadcasting";
  let description = [{
    `result = cond ? on_true : on_false`, elementwise, all three operands
    broadcast together.

    ```mlir
    %masked = sgraph.select %mask, %scores, %neg_inf
        : (tensor<256x256xi1>, tensor<8x6x256x256xf32>, tensor<f32>) -> tensor<8x6x256x256xf32>
    ```
  }];
  let arguments = (ins SG_BoolTensor:$cond, SG_Tensor:$on_true,
                   SG_Tensor:$on_false);
  let results = (outs SG_Tensor:$result);
  let assemblyFormat =
      "$cond `,` $on_true `,` $on_false attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

class SG_UnaryOp<string mnemonic, Type operandType, string math,
                 list<Trait> traits = []>
    : SG_Op<mnemonic, !listconcat([Pure, InferTypeOpAdaptor], traits)> {
  let summary = "Elementwise " # math;
  let description = [{
    Computes `}] # math # [{` elementwise; the result has the operand's type.

    ```mlir
    %y = sgraph.}] # mnemonic # [{ %x : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins operandType:$operand);
  let results = (outs operandType:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand)";
}

def SG_NegOp : SG_UnaryOp<"neg", SG_NumericTensor, "-x", [SG_Differentiable]>;
def SG_AbsOp : SG_UnaryOp<"abs", SG_NumericTensor, "|x|", [SG_Differentiable]>;
def SG_ExpOp : SG_UnaryOp<"exp", SG_FloatTensor, "e^x", [SG_Differentiable]>;
def SG_LogOp : SG_UnaryOp<"log", SG_FloatTensor, "ln(x)", [SG_Differentiable]>;
def SG_SqrtOp : SG_UnaryOp<"sqrt", SG_FloatTensor, "sqrt(x)",
                           [SG_Differentiable]>;
def SG_RsqrtOp : SG_UnaryOp<"rsqrt", SG_FloatTensor, "1 / sqrt(x)",
                            [SG_Differentiable]>;
def SG_TanhOp : SG_UnaryOp<"tanh", SG_FloatTensor, "tanh(x)",
                           [SG_Differentiable]>;
def SG_SigmoidOp : SG_UnaryOp<"sigmoid", SG_FloatTensor, "1 / (1 + e^-x)",
                              [SG_Differentiable]>;
def SG_ReluOp : SG_UnaryOp<"relu", SG_FloatTensor, "max(x, 0)",
                           [SG_Differentiable]>;
def SG_ErfOp : SG_UnaryOp<"erf", SG_FloatTensor, "erf(x)",
                          [SG_Differentiable]>;

def SG_GeluOp : SG_Op<"gelu", [Pure, InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    With `approximate = "none"` (the default, PyTorch's `F.gelu`):
    `x * 0.5 * (1 + erf(x / sqrt(2)))`. With `approximate = "tanh"` (GPT-2):
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`.

    ```mlir
    %h = sgraph.gelu %x {approximate = "tanh"} : tensor<8x256x1536xf32>
    ```
  }];
  let arguments = (ins SG_FloatTensor:$operand,
                   DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs SG_FloatTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand)";
  let hasVerifier = 1;
}

def SG_GeluGradOp : SG_Op<"gelu_grad", [Pure, InferTypeOpAdaptor,
                                         AllTypesMatch<["grad", "operand"]>]> {
  let summary = "The gradient of gelu: grad times gelu's derivative";
  let description = [{
    `grad * gelu'(operand)` elementwise, with the derivative of the form
    `approximate` names (as `sgraph.gelu`): what autodiff emits for a
    `gelu`, one op that a matmul library can apply as its epilogue
    (cuBLASLt's `DGELU`) and elementwise code otherwise.

    ```mlir
    %dx = sgraph.gelu_grad %g, %x {approximate = "tanh"} : tensor<8x256x1536xf32>
    ```
  }];
  let arguments = (ins SG_FloatTensor:$grad, SG_FloatTensor:$operand,
                   DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs SG_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $operand attr-dict `:` type($operand)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

class SG_ReduceOp<string mnemonic, Type operandType, string math>
    : SG_Op<mnemonic, [Pure, InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "The " # math # " over some axes";
  let description = [{
    Reduces `operand` over `axes` with the }] # math # [{. With `keepdims`
    the reduced axes stay as size 1; otherwise they are removed. An empty
    `axes` list copies the operand.

    ```mlir
    %s = sgraph.}] # mnemonic # [{ %x axes = [1] {keepdims = true}
        : (tensor<8x16xf32>) -> tensor<8x1xf32>
    ```
  }];
  let arguments = (ins operandType:$operand, DenseI64ArrayAttr:$axes,
                   DefaultValuedAttr<BoolAttr, "false">:$keepdims);
  let results = (outs operandType:$result);
  let assemblyFormat =
      "$operand `axes` `=` $axes attr-dict `:` functional-type(operands, results)";
}

def SG_ReduceSumOp : SG_ReduceOp<"reduce_sum", SG_NumericTensor, "sum"> {
  let hasCanonicalizer = 1;
}
def SG_ReduceMeanOp : SG_ReduceOp<"reduce_mean", SG_FloatTensor, "mean">;
def SG_ReduceMaxOp : SG_ReduceOp<"reduce_max", SG_NumericTensor, "maximum">;

def SG_ArgmaxOp : SG_Op<"argmax", [Pure, InferTypeOpAdaptor]> {
  let summary = "Index of the maximum along one axis";
  let description = [{
    The `i64` index of the first maximal element along `axis`, which is
    removed from the shape (as `numpy.argmax`). NaN counts as larger than
    every number. Not differentiable; used for accuracy metrics and sampling.

    ```mlir
    %pred = sgraph.argmax %logits axis = 1 : (tensor<8x10xf32>) -> tensor<8xi64>
    ```
  }];
  let arguments = (ins SG_NumericTensor:$operand, I64Attr:$axis);
  let results = (outs I64Tensor:$result);
  let assemblyFormat =
      "$operand `axis` `=` $axis attr-dict `:` functional-type(operands, results)";
}

class SG_SoftmaxLikeOp<string mnemonic, string math>
    : SG_Op<mnemonic, [Pure, InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = math # " along one axis";
  let description = [{
    Computes }] # math # [{ of `operand` along `axis`, subtracting the maximum
    first so that large inputs do not overflow.

    ```mlir
    %p = sgraph.}] # mnemonic # [{ %scores axis = 3 : tensor<8x6x256x256xf32>
    ```
  }];
  let arguments = (ins SG_FloatTensor:$operand, I64Attr:$axis);
  let results = (outs SG_FloatTensor:$result);
  let assemblyFormat = "$operand `axis` `=` $axis attr-dict `:` type($operand)";
}

def SG_SoftmaxOp : SG_SoftmaxLikeOp<"softmax", "softmax">;
def SG_LogSoftmaxOp : SG_SoftmaxLikeOp<"log_softmax", "log-softmax">;

def SG_LayerNormOp : SG_Op<"layer_norm",
    [Pure, InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "Layer normalization over the trailing axes";
  let description = [{
    Normalizes `operand` over axes `[axis, rank)` to zero mean and unit
    (biased) variance, then scales by `scale` and shifts by `bias`, both of
    shape `operand.shape[axis:]`; as PyTorch's `F.layer_norm`:
    `(x - mean) / sqrt(var + epsilon) * scale + bias`.

    ```mlir
    %y = sgraph.layer_norm %x, %w, %b axis = 2 {epsilon = 1.0e-05 : f64}
        : (tensor<8x256x384xf32>, tensor<384xf32>, tensor<384xf32>) -> tensor<8x256x384xf32>
    ```
  }];
  let arguments = (ins SG_FloatTensor:$operand, SG_FloatTensor:$scale,
                   SG_FloatTensor:$bias, I64Attr:$axis,
                   DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs SG_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` $scale `,` $bias `axis` `=` $axis attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def SG_MatmulOp : SG_Op<"matmul",
    [Pure, InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "Batched matrix product";
  let description = [{
    Multiplies the trailing two axes of `lhs` and `rhs`, each optionally
    transposed first: `lhs` is `[..., M, K]` (or `[..., K, M]` with
    `transpose_lhs`), `rhs` is `[..., K, N]` (or `[..., N, K]` with
    `transpose_rhs`). The leading (batch) axes broadcast as in numpy; the
    result is `[batch..., M, N]`. A PyTorch `nn.Linear` is
    `matmul(x, weight) {transpose_rhs = true}` with `weight` `[out, in]`.

    ```mlir
    %y = sgraph.matmul %x, %w {transpose_rhs = true}
        : (tensor<8x256x384xf32>, tensor<1152x384xf32>) -> tensor<8x256x1152xf32>
    ```

    With `f32_result`, a product of bf16 or f16 operands is f32: the
    products' f32 sum, not rounded to the operands' type (a weight gradient
    under mixed precision, docs/MixedPrecision.md).

    ```mlir
    %dw = sgraph.matmul %dy, %x {transpose_lhs = true, f32_result = true}
        : (tensor<2048x1152xbf16>, tensor<2048x384xbf16>) -> tensor<1152x384xf32>
    ```
  }];
  let arguments = (ins SG_NumericTensor:$lhs, SG_NumericTensor:$rhs,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs,
                   DefaultValuedAttr<BoolAttr, "false">:$f32_result);
  let results = (outs SG_NumericTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Embeddings and losses
//===----------------------------------------------------------------------===//

def SG_EmbeddingOp : SG_Op<"embedding",
    [Pure, InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "Row lookup in a table";
  let description = [{
    `result[i..., :] = table[indices[i...], :]` for a `[V, D]` table; the
    result shape is `indices.shape + [D]`. An index outside `[0, V)` is a
    runtime error.

    ```mlir
    %tok = sgraph.embedding %wte, %idx
        : (tensor<65x384xf32>, tensor<8x256xi64>) -> tensor<8x256x384xf32>
    ```
  }];
  let arguments = (ins SG_FloatTensor:$table, SG_IntTensor:$indices);
  let results = (outs SG_FloatTensor:$result);
  let assemblyFormat =
      "$table `,` $indices attr-dict `:` functional-type(operands, results)";
}

def SG_EmbeddingGradOp : SG_Op<"embedding_grad", [Pure]> {
  let summary = "Scatter-add of rows into a table (the gradient of embedding)";
  let description = [{
    Starts from a zero `[V, D]` table and adds `grad[i..., :]` to row
    `indices[i...]` for every index; indices outside `[0, V)` are skipped.

    ```mlir
    %dwte = sgraph.embedding_grad %g, %idx
        : (tensor<8x256x384xf32>, tensor<8x256xi64>) -> tensor<65x384xf32>
    ```
  }];
  let arguments = (ins SG_FloatTensor:$grad, SG_IntTensor:$indices);
  let results = (outs SG_FloatTensor:$result);
  let assemblyFormat =
      "$grad `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def SG_SoftmaxCrossEntropyOp : SG_Op<"softmax_cross_entropy",
    [Pure, InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "Cross-entropy of softmax(logits) against integer labels";
  let description = [{
    For logits `[..., C]` and labels `[...]`, the per-position loss is
    `logsumexp(logits[i, :]) - logits[i, labels[i]]`; positions whose label
    equals `ignore_index` contribute nothing. `reduction` is `mean` (the
    default: the sum divided by the number of positions not ignored, NaN when
    all are ignored, as PyTorch's `F.cross_entropy`), `sum`, or `none` (the
    per-position losses, zero where ignored). A label outside `[0, C)` other
    than `ignore_index` is a runtime error.

    `count` (optional, 0-d float, `mean` only) divides the sum instead of
    the positions not ignored where it is positive: the training step's
    `loss_count` hyper argument, with which ranks and micro-batches that
    hold different numbers of ignored positions each divide by their share
    of the whole step's count, so their mean is the mean over every position
    of the step (docs/Distributed.md, "Semantics"). Zero or negative: the
    positions not ignored, as without it.

    ```mlir
    %loss = sgraph.softmax_cross_entropy %logits, %targets {ignore_index = -1 : i64}
        : (tensor<8x256x65xf32>, tensor<8x256xi64>) -> tensor<f32>
    %share = sgraph.softmax_cross_entropy %logits, %targets count %n {ignore_index = -1 : i64}
        : (tensor<8x256x65xf32>, tensor<8x256xi64>, tensor<f64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins SG_FloatTensor:$logits, SG_IntTensor:$labels,
                   Optional<SG_FloatTensor>:$count,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                   DefaultValuedStrAttr<StrAttr, "mean">:$reduction);
  let results = (outs SG_FloatTensor:$result);
  let assemblyFormat =
      "$logits `,` $labels (`count` $count^)? attr-dict `:` "
      "functional-type(operands, results)";
}

def SG_OneHotOp : SG_Op<"one_hot", [Pure]> {
  let summary = "One-hot encoding of integer labels";
  let description = [{
    `result[i..., c] = (labels[i...] == c) ? 1 : 0` with `c` in `[0, C)`,
    where `C` is the result's last dimension. Labels outside `[0, C)` give an
    all-zero row.

    ```mlir
    %oh = sgraph.one_hot %labels : (tensor<8xi64>) -> tensor<8x10xf32>
    ```
  }];
  let arguments = (ins SG_IntTensor:$labels);
  let results = (outs SG_FloatTensor:$result);
  let assemblyFormat =
      "$labels attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

def SG_ReshapeOp : SG_Op<"reshape", [Pure, SG_Differentiable]> {
  let summary = "Same elements, new shape (row-major order)";
  let description = [{
    Reinterprets the operand's elements, in row-major order, with the
    result's shape; the element count and type are unchanged.

    ```mlir
    %h = sgraph.reshape %x : tensor<8x256x384xf32> to tensor<8x256x6x64xf32>
    ```
  }];
  let arguments = (ins SG_Tensor:$operand);
  let results = (outs SG_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def SG_TransposeOp : SG_Op<"transpose",
    [Pure, InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "Permutes the axes";
  let description = [{
    `result.shape[i] = operand.shape[permutation[i]]`, as `numpy.transpose`.

    ```mlir
    %t = sgraph.transpose %h permutation = [0, 2, 1, 3]
        : (tensor<8x256x6x64xf32>) -> tensor<8x6x256x64xf32>
    ```
  }];
  let arguments = (ins SG_Tensor:$operand, DenseI64ArrayAttr:$permutation);
  let results = (outs SG_Tensor:$result);
  let assemblyFormat = [{
    $operand `permutation` `=` $permutation attr-dict
    `:` functional-type(operands, results)
  }];
  let hasCanonicalizer = 1;
}

def SG_BroadcastOp : SG_Op<"broadcast", [Pure, SG_Differentiable]> {
  let summary = "Numpy broadcast to a larger shape";
  let description = [{
    Broadcasts `operand` to the result shape as `numpy.broadcast_to`: the
    shapes are aligned at the trailing axis and every operand dimension is 1
    or equal to the result's.

    ```mlir
    %b = sgraph.broadcast %bias : tensor<384xf32> to tensor<8x256x384xf32>
    ```
  }];
  let arguments = (ins SG_Tensor:$operand);
  let results = (outs SG_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `to` type($result)";
  let hasVerifier = 1;
}

def SG_SliceOp : SG_Op<"slice",
    [Pure, InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "A strided box of the operand";
  let description = [{
    Takes elements `start[i] <= j < limit[i]` in steps of `stride[i]` (1 when
    `stride` is absent) along every axis `i`; the result dimension is
    `ceil((limit - start) / stride)`.

    ```mlir
    %q = sgraph.slice %qkv {start = array<i64: 0, 0, 0>, limit = array<i64: 8, 256, 384>}
        : (tensor<8x256x1152xf32>) -> tensor<8x256x384xf32>
    ```
  }];
  let arguments = (ins SG_Tensor:$operand, DenseI64ArrayAttr:$start,
                   DenseI64ArrayAttr:$limit,
                   OptionalAttr<DenseI64ArrayAttr>:$stride);
  let results = (outs SG_Tensor:$result);
  let assemblyFormat =
      "$operand attr-dict `:` functional-type(operands, results)";
  let hasCanonicalizer = 1;
}

def SG_PadOp : SG_Op<"pad", [Pure, InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "Pads with a constant at the edges and between elements";
  let description = [{
    Along each axis `i`, puts `low[i]` padding elements before, `high[i]`
    after and `interior[i]` (0 when absent) between every two operand
    elements; the padding elements hold `value`. The result dimension is
    `low + high + d + (d - 1) * interior` (for `d > 0`). The gradient of
    `slice` is a `pad` with zeros.

    ```mlir
    %p = sgraph.pad %x {low = array<i64: 0, 1>, high = array<i64: 0, 2>}
        : (tensor<2x3xf32>) -> tensor<2x6xf32>
    ```
  }];
  let arguments = (ins SG_Tensor:$operand, DenseI64ArrayAttr:$low,
                   DenseI64ArrayAttr:$high,
                   OptionalAttr<DenseI64ArrayAttr>:$interior,
                   DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs SG_Tensor:$result);
  let assemblyFormat =
      "$operand attr-dict `:` functional-type(operands, results)";
}

def SG_ConcatOp : SG_Op<"concat",
    [Pure, InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "Joins tensors along one axis";
  let description = [{
    Concatenates the operands, in order, along `axis`; every other dimension
    must agree.

    ```mlir
    %c = sgraph.concat %a, %b axis = 1
        : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<SG_Tensor>:$operands, I64Attr:$axis);
  let results = (outs SG_Tensor:$result);
  let assemblyFormat =
      "$operands `axis` `=` $axis attr-dict `:` functional-type(operands, results)";
}

def SG_CastOp : SG_Op<"cast", [Pure, SG_Differentiable]> {
  let summary = "Converts the element type";
  let description = [{
    Converts each element to the result's element type. Float to float rounds
    to nearest even; float to integer truncates toward zero, saturates at the
    integer's range, and maps NaN to 0; integer to float rounds to nearest
    even; to `i1`, nonzero is true.

    ```mlir
    %h = sgraph.cast %x : tensor<8x384xf32> to tensor<8x384xbf16>
    ```
  }];
  let arguments = (ins SG_Tensor:$operand);
  let results = (outs SG_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Randomness, gradient control and modes
//===----------------------------------------------------------------------===//

def SG_DropoutOp : SG_Op<"dropout",
    [Pure, InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "Inverted dropout with an explicit seed";
  let description = [{
    Keeps each element with probability `1 - rate` and scales kept elements
    by `1 / (1 - rate)`; the rest become 0. Whether element `k` is kept is
    a pure function of `(seed, step, shard * N + k)`, with N the operand's
    element count and `k` the element's row-major index once axis
    `batch_axis` (0 when absent) is moved to the front (the counter-based
    generator in `abi/Random.h`), so the op is deterministic and its
    gradient is the same op applied to the incoming gradient. `shard` (0
    when absent) is which block of the global batch a data-parallel rank
    computes, and `batch_axis` the operand's axis that holds the batch:
    rank r's rows get exactly the masks one process at the global batch
    draws for those rows.

    ```mlir
    %y = sgraph.dropout %x, %step {rate = 1.000000e-01 : f64, seed = 7 : i64}
        : tensor<8x256x384xf32>, tensor<i64>
    %z = sgraph.dropout %x, %step shard %rank {rate = 1.000000e-01 : f64,
        seed = 7 : i64} : tensor<8x256x384xf32>, tensor<i64>, tensor<i64>
    ```
  }];
  let arguments = (ins SG_FloatTensor:$operand, SG_IntScalar:$step,
                   Optional<SG_IntScalar>:$shard,
                   F64Attr:$rate, I64Attr:$seed,
                   OptionalAttr<I64Attr>:$batch_axis);
  let results = (outs SG_FloatTensor:$result);
  let assemblyFormat =
      "$operand `,` $step (`shard` $shard^)? attr-dict `:` type($operand) `,` "
      "type($step) (`,` type($shard)^)?";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The operand's element counts before, along and after the batch
    /// axis: the view random::batchMajorIndex numbers the counters in.
    std::array<int64_t, 3> getBatchView();
  }];
}

def SG_StopGradientOp : SG_Op<"stop_gradient",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "Identity that no gradient flows through";
  let description = [{
    Returns its operand. Autodiff treats the result as a constant; the
    training pipeline removes the op once the backward graph is built.

    ```mlir
    %t = sgraph.stop_gradient %target : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins SG_Tensor:$operand);
  let results = (outs SG_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand)";
}

def SG_TrainEvalOp : SG_Op<"train_eval",
    [Pure, InferTypeOpAdaptor, AllTypesMatch<["train", "eval"]>]> {
  let summary = "A value that differs between training and evaluation";
  let description = [{
    `train` in training and `eval` in evaluation (PyTorch's `model.train()`
    and `model.eval()`): batch normalization reads the batch's statistics in
    one and its running statistics in the other. The training phase resolves
    it: the functions it builds from @forward (@train_step,
    @accumulate_step, @forward_grad) take `train`, @eval_step takes `eval`,
    and no later phase sees the op.

    ```mlir
    %y = sgraph.train_eval %batch_stats, %running_stats : tensor<8x16x4x4xf32>
    ```
  }];
  let arguments = (ins SG_Tensor:$train, SG_Tensor:$eval);
  let results = (outs SG_Tensor:$result);
  let assemblyFormat = "$train `,` $eval attr-dict `:` type($train)";
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// Collectives are not `Pure`: every rank must issue the same collectives in
// the same order, so passes must neither drop nor reorder them.

def SG_AllReduceOp : SG_Op<"all_reduce",
    [InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "Reduces tensors across all ranks";
  let description = [{
    Every rank gets the elementwise `reduction` (`sum`, `mean`, `max` or
    `min`) of each operand over all ranks. Several operands are one bucket:
    one collective over their bytes, laid out side by side
    (`sinter-bucket-gradients` makes them). `mean` divides by the world size
    the binary runs at, which is read at start, not compiled in. With
    `comm_dtype` (`bf16` or `f16`; f32 operands, `sum` or `mean`) the bytes
    travel between ranks in that type: each rank's values and the partial
    sums are rounded to it, and the result is f32 again.

    ```mlir
    %g = sgraph.all_reduce %grad {reduction = "mean"} : tensor<384x384xf32>
    %w, %b = sgraph.all_reduce %gw, %gb {reduction = "mean"}
        : tensor<384x384xf32>, tensor<384xf32>
    ```
  }];
  let arguments = (ins Variadic<SG_NumericTensor>:$operands,
                   DefaultValuedStrAttr<StrAttr, "sum">:$reduction,
                   OptionalAttr<StrAttr>:$comm_dtype);
  let results = (outs Variadic<SG_NumericTensor>:$results);
  let assemblyFormat = "$operands attr-dict `:` type($operands)";
  let hasVerifier = 1;
}

def SG_AllGatherOp : SG_Op<"all_gather",
    [InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "Concatenates every rank's tensor along an axis";
  let description = [{
    The result is the rank-ordered concatenation of all `world_size` ranks'
    operands along `axis`.

    ```mlir
    %all = sgraph.all_gather %shard {axis = 0 : i64, world_size = 4 : i64}
        : (tensor<16x384xf32>) -> tensor<64x384xf32>
    ```
  }];
  let arguments = (ins SG_Tensor:$operand, I64Attr:$axis,
                   I64Attr:$world_size);
  let results = (outs SG_Tensor:$result);
  let assemblyFormat =
      "$operand attr-dict `:` functional-type(operands, results)";
}

def SG_ReduceScatterOp : SG_Op<"reduce_scatter",
    [InferTypeOpAdaptor, SG_Differentiable]> {
  let summary = "Reduces across ranks, each rank keeping one slice";
  let description = [{
    Reduces the operand over all ranks with `reduction` (`sum`, `mean`, `max`
    or `min`), splits the result into `world_size` equal slices along `axis`,
    and gives rank `r` slice `r`.

    ```mlir
    %mine = sgraph.reduce_scatter %grad {axis = 0 : i64, world_size = 4 : i64}
        : (tensor<64x384xf32>) -> tensor<16x384xf32>
    ```
  }];
  let arguments = (ins SG_NumericTensor:$operand, I64Attr:$axis,
                   I64Attr:$world_size,
                   DefaultValuedStrAttr<StrAttr, "sum">:$reduction);
  let results = (outs SG_NumericTensor:$result);
  let assemblyFormat =
      "$operand attr-dict `:` functional-type(operands, results)";
}

def SG_CollectiveBroadcastOp : SG_Op<"collective_broadcast",
    [InferTypeOpAdaptor]> {
  let summary = "Every rank gets the root rank's tensor";
  let description = [{
    Every rank's result is rank `root`'s operand (the other ranks' operands
    only give the type). Not differentiable.

    ```mlir
    %w = sgraph.collective_broadcast %w0 {root = 0 : i64} : tensor<384x384xf32>
    ```
  }];
  let arguments = (ins SG_Tensor:$operand, DefaultValuedAttr<I64Attr, "0">:$root);
  let results = (outs SG_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

def SG_SgdUpdateOp : SG_Op<"sgd_update", [Pure, InferTypeOpAdaptor,
    AllTypesMatch<["param", "grad"]>]> {
  let summary = "One plain SGD step (torch.optim.SGD, momentum = 0)";
  let description = [{
    `g = grad + weight_decay * param; param' = param - lr * g`.

    ```mlir
    %w1 = sgraph.sgd_update %w, %dw, %lr : tensor<16x8xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins SG_FloatTensor:$param, SG_FloatTensor:$grad,
                   SG_FloatScalar:$lr,
                   DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs SG_FloatTensor:$new_param);
  let assemblyFormat =
      "$param `,` $grad `,` $lr attr-dict `:` type($param) `,` type($lr)";
  let hasVerifier = 1;
}

def SG_MomentumUpdateOp : SG_Op<"momentum_update",
    [Pure, InferTypeOpAdaptor,
     AllTypesMatch<["param", "grad", "momentum_buffer"]>]> {
  let summary = "One SGD step with momentum (torch.optim.SGD)";
  let description = [{
    With `g = grad + weight_decay * param`: at `step == 0` the buffer becomes
    `g`, later `buf' = momentum * buf + (1 - dampening) * g`; the update
    direction is `g + momentum * buf'` with `nesterov`, else `buf'`;
    `param' = param - lr * direction`.

    ```mlir
    %w1, %buf1 = sgraph.momentum_update %w, %dw, %buf, %lr, %step {momentum = 9.000000e-01 : f64}
        : tensor<16x8xf32>, tensor<f32>, tensor<i64>
    ```
  }];
  let arguments = (ins SG_FloatTensor:$param, SG_FloatTensor:$grad,
                   SG_FloatTensor:$momentum_buffer, SG_FloatScalar:$lr,
                   SG_IntScalar:$step, F64Attr:$momentum,
                   DefaultValuedAttr<F64Attr, "0.0">:$dampening,
                   DefaultValuedAttr<BoolAttr, "false">:$nesterov,
                   DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs SG_FloatTensor:$new_param,
                 SG_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer `,` $lr `,` $step attr-dict
    `:` type($param) `,` type($lr) `,` type($step)
  }];
  let hasVerifier = 1;
}

def SG_AdamUpdateOp : SG_Op<"adam_update", [Pure, InferTypeOpAdaptor,
    AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq"]>]> {
  let summary = "One Adam or AdamW step (torch.optim.Adam / AdamW)";
  let description = [{
    With `t = step + 1`. Adam (`decoupled_weight_decay = false`) first sets
    `g = grad + weight_decay * param`; AdamW sets `g = grad` and
    `param *= 1 - lr * weight_decay`. Then
    `m' = beta1 * m + (1 - beta1) * g`, `v' = beta2 * v + (1 - beta2) * g^2`,
    `param' = param - lr / (1 - beta1^t) * m' / (sqrt(v') / sqrt(1 - beta2^t) + epsilon)`.

    ```mlir
    %w1, %m1, %v1 = sgraph.adam_update %w, %dw, %m, %v, %lr, %step
        {decoupled_weight_decay = true, weight_decay = 1.000000e-01 : f64}
        : tensor<16x8xf32>, tensor<f32>, tensor<i64>
    ```
  }];
  let arguments = (ins SG_FloatTensor:$param, SG_FloatTensor:$grad,
                   SG_FloatTensor:$exp_avg, SG_FloatTensor:$exp_avg_sq,
                   SG_FloatScalar:$lr, SG_IntScalar:$step,
                   DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                   DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                   DefaultValuedAttr<F64Attr, "1.0e-8">:$epsilon,
                   DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                   DefaultValuedAttr<BoolAttr, "false">:$decoupled_weight_decay);
  let results = (outs SG_FloatTensor:$new_param, SG_FloatTensor:$new_exp_avg,
                 SG_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $lr `,` $step attr-dict
    `:` type($param) `,` type($lr) `,` type($step)
  }];
  let hasVerifier = 1;
}

def SG_GlobalNormOp : SG_Op<"global_norm", [Pure]> {
  let summary = "The L2 norm of several tensors taken together";
  let description = [{
    `sqrt(sum over all operands and elements of x^2)`, accumulated in f64 and
    rounded to the result type; the norm `torch.nn.utils.clip_grad_norm_`
    computes.

    ```mlir
    %n = sgraph.global_norm %g0, %g1 : (tensor<16x8xf32>, tensor<16xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<SG_FloatTensor>:$operands);
  let results = (outs SG_FloatScalar:$result);
  let assemblyFormat =
      "$operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def SG_LrScheduleOp : SG_Op<"lr_schedule", [Pure]> {
  let summary = "The learning rate at a step";
  let description = [{
    `schedule = "constant"` gives `lr`. `schedule = "warmup_cosine"` is
    nanoGPT's `get_lr(step)`: `lr * (step + 1) / (warmup_steps + 1)` while
    `step < warmup_steps`; `min_lr` once `step > decay_steps`; in between
    `min_lr + 0.5 * (1 + cos(pi * r)) * (lr - min_lr)` with
    `r = (step - warmup_steps) / (decay_steps - warmup_steps)`.

    With the optional operand `peak_lr` (a 0-d float tensor, e.g. an
    argument the trainer sets at run time), the schedule uses the value of
    `peak_lr` in place of `lr`, and `min_lr * (peak_lr / lr)` in place of
    `min_lr`: the floor keeps its ratio to the peak (a `min_lr` of 0 stays
    0, so `lr = 0` needs no division). The attributes then describe the
    schedule's shape and its compiled default.

    ```mlir
    %lr = sgraph.lr_schedule %step {schedule = "warmup_cosine", lr = 6.0e-04 : f64,
        min_lr = 6.0e-05 : f64, warmup_steps = 100 : i64, decay_steps = 5000 : i64}
        : (tensor<i64>) -> tensor<f32>
    %lr2 = sgraph.lr_schedule %step, peak_lr %peak {lr = 6.0e-04 : f64}
        : (tensor<i64>, tensor<f64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins SG_IntScalar:$step,
                   Optional<SG_FloatScalar>:$peak_lr,
                   DefaultValuedStrAttr<StrAttr, "constant">:$schedule,
                   F64Attr:$lr,
                   DefaultValuedAttr<F64Attr, "0.0">:$min_lr,
                   DefaultValuedAttr<I64Attr, "0">:$warmup_steps,
                   DefaultValuedAttr<I64Attr, "0">:$decay_steps);
  let results = (outs SG_FloatScalar:$result);
  let assemblyFormat = [{
    $step (`,` `peak_lr` $peak_lr^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernel regions
//===----------------------------------------------------------------------===//

def SG_FusionOp : SG_Op<"fusion", [IsolatedFromAbove, SingleBlock,
    RecursiveMemoryEffects]> {
  let summary = "A group of ops that code generation emits as one kernel";
  let description = [{
    `sinter-fuse-kernels` groups the training step into kernel regions. The
    body computes the results from the block arguments (one per input) with
    ordinary sgraph ops and ends in `sgraph.yield`; the region is isolated,
    so a kernel's inputs are explicit. `kind` is how the kernel is emitted:
    `loop` (one loop nest over the shape of its results), `reduction` (one
    loop nest over the shape of a reduction's operand, with elementwise
    producers inlined), `matmul` (a matmul with the epilogue the matmul
    library applies in the same call: a scale, a bias, an activation), or
    `special` (a single op with its own lowering: `pad`, `concat`,
    `embedding_grad`, `argmax`). `reasons` records why the
    ops are grouped as they are; the dumps print it.

    ```mlir
    %y = sgraph.fusion "k7_softmax" kind = "loop" (%e, %s)
        : (tensor<8x64xf32>, tensor<8x1xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x64xf32>, %b: tensor<8x1xf32>):
      %q = sgraph.div %a, %b : (tensor<8x64xf32>, tensor<8x1xf32>) -> tensor<8x64xf32>
      sgraph.yield %q : tensor<8x64xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<SG_Tensor>:$inputs, StrAttr:$sym_name,
                   StrAttr:$kind);
  let results = (outs Variadic<SG_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `kind` `=` $kind `(` $inputs `)` attr-dict `:`
    functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
}

def SG_YieldOp : SG_Op<"yield", [Pure, Terminator, ReturnLike,
    HasParent<"FusionOp">]> {
  let summary = "The results of a kernel region";
  let description = [{
    Ends an `sgraph.fusion` body; its operands become the fusion's results.

    ```mlir
    sgraph.yield %q : tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Variadic<SG_Tensor>:$operands);
  let assemblyFormat = "($operands^ `:` type($operands))? attr-dict";
}

#endif // SINTER_DIALECTS_GRAPH_GRAPHOPS_TD
