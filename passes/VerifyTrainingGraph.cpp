//===- VerifyTrainingGraph.cpp - the training-phase contract -------------===//
//
// Ends the training phase (compiler/Pipelines/Pipelines.cpp). Later phases
// rely on what it checks of @train_step:
//
//   - it exists and has the step argument (`sgraph.step`);
//   - no stop_gradient or train_eval is left anywhere in the module;
//   - every trainable parameter argument (`sgraph.param`, no
//     `sgraph.frozen`) is the `param` operand of exactly one optimizer update
//     (sgd_update, momentum_update, adam_update), whose gradient operand is
//     one value, and whose new parameter is returned under the parameter's
//     name; so each parameter has exactly one gradient and one update;
//   - a frozen parameter is never updated, and a buffer (`sgraph.buffer`,
//     whose new value the forward pass returns) is frozen;
//   - every optimizer-state argument (`sgraph.opt_state`) is a state operand
//     of exactly one update, whose new state is returned under its name;
//   - update ops update arguments only;
//   - @eval_step, where there is one, is in eval mode: no dropout, no
//     update, no buffer's new value returned, and only parameter and input
//     arguments (no optimizer state, step or hyperparameter).
//
//===----------------------------------------------------------------------===//

#include "abi/Abi.h"
#include "passes/Passes.h"

namespace sinter {
#define GEN_PASS_DEF_VERIFYTRAININGGRAPHPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter;

namespace {

/// The `param` operand and state operands of an update op, with the results
/// that replace them.
struct Update {
  Operation *op;
  Value param, newParam;
  SmallVector<std::pair<Value, Value>> state; // (state arg, new state)
};

std::optional<Update> asUpdate(Operation *op) {
  if (auto sgd = dyn_cast<sgraph::SgdUpdateOp>(op))
    return Update{op, sgd.getParam(), sgd.getNewParam(), {}};
  if (auto m = dyn_cast<sgraph::MomentumUpdateOp>(op))
    return Update{op,
                  m.getParam(),
                  m.getNewParam(),
                  {{m.getMomentumBuffer(), m.getNewMomentumBuffer()}}};
  if (auto adam = dyn_cast<sgraph::AdamUpdateOp>(op))
    return Update{op,
                  adam.getParam(),
                  adam.getNewParam(),
                  {{adam.getExpAvg(), adam.getNewExpAvg()},
                   {adam.getExpAvgSq(), adam.getNewExpAvgSq()}}};
  return std::nullopt;
}

class VerifyTrainingGraphPass
    : public sinter::impl::VerifyTrainingGraphPassBase<VerifyTrainingGraphPass> {
public:
  void runOnOperation() override {
    if (failed(verify(getOperation())))
      signalPassFailure();
  }

private:
  static LogicalResult verify(ModuleOp module) {
    auto fn = module.lookupSymbol<func::FuncOp>("train_step");
    if (!fn || fn.isExternal())
      return module.emitError("the training phase must produce @train_step");

    WalkResult stopGradient = module.walk([](Operation *op) {
      if (!isa<sgraph::StopGradientOp, sgraph::TrainEvalOp>(op))
        return WalkResult::advance();
      op->emitOpError("is left after the training phase");
      return WalkResult::interrupt();
    });
    if (stopGradient.wasInterrupted())
      return failure();

    Block &body = fn.front();
    bool hasStep = false;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      hasStep |= bool(fn.getArgAttr(i, sgraph::attr::kStep));
    if (!hasStep)
      return fn.emitError("@train_step has no step argument (sgraph.step)");

    // Returned values by name. With loss scaling a new value is returned
    // through the skipped-step guard `select(finite, new, old)`, old being
    // the argument itself; the guarded value is what is checked.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    llvm::StringMap<Value> returned;
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto guard = v.getDefiningOp<sgraph::SelectOp>();
      std::string name = sgraph::resultName(fn, i);
      if (guard && isa<BlockArgument>(guard.getOnFalse()) &&
          sgraph::argumentName(fn, cast<BlockArgument>(guard.getOnFalse())
                                       .getArgNumber()) == name)
        v = guard.getOnTrue();
      returned[name] = v;
    }

    llvm::DenseMap<Value, Update> updateOf;
    llvm::DenseMap<Value, Update> stateUser;
    for (Operation &op : body.without_terminator()) {
      std::optional<Update> update = asUpdate(&op);
      if (!update)
        continue;
      auto arg = dyn_cast<BlockArgument>(update->param);
      if (!arg || arg.getOwner() != &body ||
          !fn.getArgAttr(arg.getArgNumber(), sgraph::attr::kParam))
        return op.emitOpError("updates a value that is not a parameter "
                              "argument of @train_step");
      if (!updateOf.try_emplace(update->param, *update).second)
        return op.emitOpError("updates parameter '")
               << sgraph::argumentName(fn, arg.getArgNumber())
               << "', which another update op updates too";
      for (auto [state, newState] : update->state) {
        auto stateArg = dyn_cast<BlockArgument>(state);
        if (!stateArg || stateArg.getOwner() != &body ||
            !fn.getArgAttr(stateArg.getArgNumber(), sgraph::attr::kOptState))
          return op.emitOpError(
              "takes optimizer state that is not an optimizer-state argument");
        if (!stateUser.try_emplace(state, *update).second)
          return op.emitOpError("shares optimizer state '")
                 << sgraph::argumentName(fn, stateArg.getArgNumber())
                 << "' with another update";
      }
    }

    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      Value arg = body.getArgument(i);
      std::string name = sgraph::argumentName(fn, i);
      if (fn.getArgAttr(i, sgraph::attr::kParam)) {
        bool frozen = bool(fn.getArgAttr(i, sgraph::attr::kFrozen));
        auto it = updateOf.find(arg);
        if (frozen && it != updateOf.end())
          return it->second.op->emitOpError("updates frozen parameter '")
                 << name << "'";
        if (fn.getArgAttr(i, sgraph::attr::kBuffer) && !frozen)
          return emitError(arg.getLoc())
                 << "buffer '" << name << "' is not frozen";
        if (frozen)
          continue;
        if (it == updateOf.end())
          return emitError(arg.getLoc())
                 << "trainable parameter '" << name
                 << "' has no optimizer update in @train_step";
        if (returned.lookup(name) != it->second.newParam)
          return it->second.op->emitOpError("the new value of parameter '")
                 << name << "' is not returned under its name";
      }
      // The optimizer's own step count (loss scaling) feeds no single
      // update; it must be returned.
      if (fn.getArgAttr(i, sgraph::attr::kOptState) &&
          name == sinter::abi::kOptimizerStepState) {
        if (!returned.count(name))
          return emitError(arg.getLoc())
                 << "optimizer state '" << name << "' is not returned";
        continue;
      }
      if (fn.getArgAttr(i, sgraph::attr::kOptState)) {
        auto it = stateUser.find(arg);
        if (it == stateUser.end())
          return emitError(arg.getLoc()) << "optimizer state '" << name
                                         << "' is not used by any update";
        for (auto [state, newState] : it->second.state)
          if (state == arg && returned.lookup(name) != newState)
            return it->second.op->emitOpError("the new optimizer state '")
                   << name << "' is not returned under its name";
      }
    }
    return verifyEvalStep(module);
  }

  static LogicalResult verifyEvalStep(ModuleOp module) {
    auto fn = module.lookupSymbol<func::FuncOp>("eval_step");
    if (!fn)
      return success();
    if (fn.isExternal())
      return fn.emitError("@eval_step has no body");
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (!fn.getArgAttr(i, sgraph::attr::kParam) &&
          !fn.getArgAttr(i, sgraph::attr::kInput))
        return emitError(fn.getArgument(i).getLoc())
               << "argument #" << i << " of @eval_step ('"
               << sgraph::argumentName(fn, i)
               << "') is neither a parameter nor a model input";
    if (!sgraph::bufferUpdateResults(fn).empty())
      return fn.emitError("@eval_step returns a new value of buffer '")
             << sgraph::resultName(fn, sgraph::bufferUpdateResults(fn).front())
             << "'; evaluation must update nothing";
    WalkResult walk = fn.walk([](Operation *op) {
      if (isa<sgraph::DropoutOp>(op) || asUpdate(op)) {
        op->emitOpError("is in @eval_step, which must run in eval mode");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }
};

} // namespace
