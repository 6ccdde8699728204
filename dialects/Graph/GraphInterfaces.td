//===- GraphInterfaces.td - interfaces of sgraph ops ---------------------===//

#ifndef SINTER_DIALECTS_GRAPH_GRAPHINTERFACES_TD
#define SINTER_DIALECTS_GRAPH_GRAPHINTERFACES_TD

include "mlir/IR/OpBase.td"

def SG_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::sinter::sgraph";
  let description = [{
    An op that can be differentiated in reverse mode. Given the gradient of
    the loss with respect to each result, the op builds the gradient with
    respect to each operand the caller asks for. The rules live in one file,
    `dialects/Graph/GraphGradients.cpp`, one section per op; the autodiff
    pass knows no op math.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the operand gradients at the builder's insertion point.
        `resultGrads[i]` is the gradient of result `i` (null when none flows
        into it). `operandGrads` gets one entry per operand: the gradient
        when `needed[i]` is true, null otherwise. Fails (with a diagnostic
        at the op) when a needed gradient is not defined, e.g. with respect
        to an integer operand.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::ArrayRef<bool>":$needed,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

#endif // SINTER_DIALECTS_GRAPH_GRAPHINTERFACES_TD
