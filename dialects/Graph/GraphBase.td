//===- GraphBase.td - the sgraph dialect and its type constraints --------===//
//
// sgraph holds the training graph as value-semantics tensor ops: the forward
// pass, its gradients, collectives and optimizer updates. Every tensor is
// ranked and statically shaped.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_DIALECTS_GRAPH_GRAPHBASE_TD
#define SINTER_DIALECTS_GRAPH_GRAPHBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def SGraph_Dialect : Dialect {
  let name = "sgraph";
  let cppNamespace = "::sinter::sgraph";
  let summary = "Value-semantics tensor ops of a training graph";
  let description = [{
    The `sgraph` dialect is the form every Sinter model takes between import
    and scheduling: a function of statically shaped tensors built from
    elementwise, reduction, linear-algebra, shape, loss, collective and
    optimizer-update ops. The spec with numbered constraints is
    `docs/dialects/sgraph.md`.
  }];
  let useDefaultAttributePrinterParser = 0;
  let useDefaultTypePrinterParser = 0;
  let hasConstantMaterializer = 0;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def SG_FloatElement : AnyTypeOf<[F16, BF16, F32, F64]>;
def SG_IntElement : AnyTypeOf<[I32, I64]>;

def SG_FloatTensor : StaticShapeTensorOf<[F16, BF16, F32, F64]>;
def SG_IntTensor : StaticShapeTensorOf<[I32, I64]>;
def SG_NumericTensor : StaticShapeTensorOf<[F16, BF16, F32, F64, I32, I64]>;
def SG_BoolTensor : StaticShapeTensorOf<[I1]>;
def SG_Tensor : StaticShapeTensorOf<[F16, BF16, F32, F64, I1, I32, I64]>;

def SG_FloatScalar : RankedTensorOf<[F16, BF16, F32, F64],
    [HasAnyRankOfPred<[0]>], "0-d float tensor">;
def SG_IntScalar : RankedTensorOf<[I32, I64],
    [HasAnyRankOfPred<[0]>], "0-d integer tensor">;

#endif // SINTER_DIALECTS_GRAPH_GRAPHBASE_TD
