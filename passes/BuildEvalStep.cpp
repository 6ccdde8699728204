//===- BuildEvalStep.cpp - @forward in eval mode as @eval_step -----------===//
//
// The trainer evaluates held-out data with the model in eval mode: no
// dropout, nothing updated. This pass builds that function from the
// imported `@forward(params..., inputs...[, step]) -> (loss, metrics...)`:
//
//   1. clone @forward as @eval_step (at the end of the module), keeping
//      every argument and result attribute, so parameters keep their
//      `sgraph.param` state_dict names (and init, aliases, frozen) and
//      inputs their `sgraph.input` names: a runtime copies parameters from
//      the training step by name;
//   2. replace every `sgraph.dropout` by its operand and every
//      `sgraph.train_eval` by its eval value (PyTorch's model.eval()), and
//      drop the buffers' new values from the results (evaluation updates no
//      running statistics);
//   3. drop the step argument when nothing reads it any more (dropout was
//      its only reader in the importer's output), so the function takes
//      exactly params and inputs.
//
// It runs in the training phase (compiler/Pipelines/Pipelines.cpp), before
// stop_gradient is erased, so @eval_step meets the phase's contract too.
// The driver compiles @eval_step on its own (a clone of the module) into
// the binary's second step program.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

namespace sinter {
#define GEN_PASS_DEF_BUILDEVALSTEPPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter;

namespace {

class BuildEvalStepPass
    : public sinter::impl::BuildEvalStepPassBase<BuildEvalStepPass> {
public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal()) {
      module.emitError("the module has no @forward function to build "
                       "@eval_step from");
      return signalPassFailure();
    }
    if (module.lookupSymbol("eval_step")) {
      module.emitError("@eval_step already exists");
      return signalPassFailure();
    }

    // 1. The clone, last in the module.
    auto fn = cast<func::FuncOp>(forward->clone());
    fn.setSymName("eval_step");
    module.push_back(fn);

    // 2. Eval mode: dropout is the identity.
    fn.walk([](sgraph::DropoutOp dropout) {
      dropout.getResult().replaceAllUsesWith(dropout.getOperand());
      dropout.erase();
    });
    // Batch normalization reads its running statistics, and updates none.
    sgraph::resolveTrainEval(fn, /*training=*/false);
    SmallVector<unsigned> updates = sgraph::bufferUpdateResults(fn);
    if (!updates.empty()) {
      auto ret = cast<func::ReturnOp>(fn.front().getTerminator());
      llvm::BitVector drop(fn.getNumResults());
      for (unsigned i : updates)
        drop.set(i);
      ret->eraseOperands(drop);
      fn.eraseResults(drop);
      // The statistics' ops are left dead; canonicalization removes them.
    }

    // 3. The step argument, if it is now unread.
    for (unsigned i = fn.getNumArguments(); i-- > 0;)
      if ((fn.getArgAttr(i, sgraph::attr::kStep) ||
           fn.getArgAttr(i, sgraph::attr::kRank)) &&
          fn.getArgument(i).use_empty())
        fn.eraseArgument(i);
  }
};

} // namespace
