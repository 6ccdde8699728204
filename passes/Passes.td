//===- Passes.td - Sinter's target-independent passes ---------------------===//

#ifndef SINTER_PASSES_PASSES_TD
#define SINTER_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def AutodiffPass : Pass<"sinter-autodiff", "mlir::ModuleOp"> {
  let summary = "Builds the training step (or the gradients) of @forward";
  let description = [{
    Reverse-mode differentiation of `@forward(params..., inputs...[, step])
    -> (loss, metrics...)` with respect to its trainable parameters (arguments
    with `sgraph.param` and no `sgraph.frozen`). Each op's gradient comes from
    its `GradientOpInterface` rule; gradients of values used several times
    are summed; only ops on a path from a trainable parameter to the loss get
    backward work; `stop_gradient`, integer values and frozen parameters cut
    the backward graph; a tied parameter (one argument used twice) gets one
    summed gradient.

    With `mode=train-step` (the default) the module's `sgraph.training`
    configuration becomes ops in the same function:

    ```mlir
    func.func @train_step(%params..., %opt_state..., %inputs..., %step: tensor<i64>)
        -> (loss, metrics..., lr, grad_norm, params'..., opt_state'...)
    ```

    with global-norm clipping, the learning-rate schedule at `step` and one
    `sgd_update` / `momentum_update` / `adam_update` per trainable
    parameter. With `mode=gradients` it builds `@forward_grad(args of
    @forward) -> (loss, metrics..., gradients...)` instead, which the
    finite-difference checks use.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"train-step\"",
           "What to build: train-step or gradients">,
  ];
  let dependentDialects = ["sinter::sgraph::SGraphDialect",
                           "mlir::func::FuncDialect"];
}

def EraseStopGradientPass : Pass<"sinter-erase-stop-gradient",
                                 "mlir::ModuleOp"> {
  let summary = "Replaces every stop_gradient by its operand";
  let description = [{
    `stop_gradient` only matters to autodiff; once the backward graph exists
    it is an identity, and later phases must not see it (the training-phase
    contract forbids it).
  }];
}

def VerifyTrainingGraphPass : Pass<"sinter-verify-training-graph",
                                   "mlir::ModuleOp"> {
  let summary = "Checks the contract of the training phase";
  let description = [{
    `@train_step` exists with a step argument; every trainable parameter is
    updated by exactly one optimizer op whose gradient operand is a single
    value and whose new value is returned under the parameter's name; every
    optimizer-state argument feeds exactly one update and its new value is
    returned; frozen parameters are never updated; no `stop_gradient` is
    left. Fails with a diagnostic at the offending argument or op.
  }];
}

#endif // SINTER_PASSES_PASSES_TD
