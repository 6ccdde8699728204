//===- EraseStopGradient.cpp - stop_gradient becomes its operand ---------===//
//
// stop_gradient tells autodiff where to cut the backward graph and means
// nothing afterwards. This pass runs right after sinter-autodiff in the
// training phase and replaces every stop_gradient, in every function, with
// its operand, which the training-phase contract requires. A `train_eval`
// left where the training phase built nothing from it (@forward itself)
// becomes its train value, a PyTorch module's default mode, since no
// later phase knows the op either.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

namespace sinter {
#define GEN_PASS_DEF_ERASESTOPGRADIENTPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;

namespace {

class EraseStopGradientPass
    : public sinter::impl::EraseStopGradientPassBase<EraseStopGradientPass> {
public:
  void runOnOperation() override {
    getOperation().walk([](sinter::sgraph::StopGradientOp op) {
      op.getResult().replaceAllUsesWith(op.getOperand());
      op.erase();
    });
    sinter::sgraph::resolveTrainEval(getOperation(), /*training=*/true);
  }
};

} // namespace
