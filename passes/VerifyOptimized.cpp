//===- VerifyOptimized.cpp - the contract of the optimized phase ---------===//
//
// Closes the optimized phase: the entry function is a sequence of what
// sinter-assign-buffers turns into a scheduled program (kernel regions,
// matmul calls, reshapes, constants, gradient all-reduces, the return), each
// region well formed
// for code generation: no nested region, a matmul region holding its one
// matmul and other regions none, no composite op left for
// sinter-decompose-ops.
// A violation is a bug of an earlier pass; this names it at the op instead
// of letting code generation fail on it later.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Graph/GraphOps.h"

namespace sinter {
#define GEN_PASS_DEF_VERIFYOPTIMIZEDPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter::sgraph;

namespace {

bool isComposite(Operation *op) {
  return isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, SoftmaxCrossEntropyOp,
             ReduceMeanOp, GlobalNormOp>(op);
}

LogicalResult verifyRegion(FusionOp fusion) {
  // (The region's kind is its own verifier's to check.)
  StringRef kind = fusion.getKind();
  int matmuls = 0;
  for (Operation &op : fusion.getBody().front()) {
    if (isa<FusionOp>(op))
      return op.emitOpError("is a kernel region inside another");
    if (isComposite(&op))
      return op.emitOpError("is a composite op; sinter-decompose-ops should "
                            "have expanded it");
    matmuls += isa<MatmulOp>(op);
  }
  if (kind == "matmul" && matmuls != 1)
    return fusion.emitOpError("matmul region holds ")
           << matmuls << " matmuls, not one";
  if (kind != "matmul" && matmuls)
    return fusion.emitOpError("a ") << kind << " region holds a matmul";
  return success();
}

class VerifyOptimizedPass
    : public sinter::impl::VerifyOptimizedPassBase<VerifyOptimizedPass> {
public:
  using VerifyOptimizedPassBase::VerifyOptimizedPassBase;

  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>(entry);
    if (!fn) {
      getOperation().emitError("no function @") << entry << " to check";
      return signalPassFailure();
    }
    for (Operation &op : fn.getBody().front()) {
      if (auto fusion = dyn_cast<FusionOp>(op)) {
        if (failed(verifyRegion(fusion)))
          return signalPassFailure();
        continue;
      }
      if (isa<MatmulOp, ReshapeOp, ConstantOp, func::ReturnOp>(op))
        continue;
      if (auto ar = dyn_cast<AllReduceOp>(op)) {
        // A bucket is one collective over bytes side by side: one element
        // type.
        Type element = getElementTypeOrSelf(ar.getOperands()[0].getType());
        for (Value v : ar.getOperands())
          if (getElementTypeOrSelf(v.getType()) != element) {
            ar.emitOpError("bucket mixes element types ")
                << element << " and " << getElementTypeOrSelf(v.getType());
            return signalPassFailure();
          }
        continue;
      }
      op.emitOpError("is outside every kernel region; after fusion only "
                     "kernel regions, matmuls, reshapes, constants and "
                     "all-reduces are");
      return signalPassFailure();
    }
  }
};

} // namespace
