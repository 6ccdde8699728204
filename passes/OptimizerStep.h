//===- OptimizerStep.h - clipping, schedule and updates ---------*- C++ -*-===//
//
// The part of the training step after the gradients: reads the module's
// `sgraph.training` dictionary and emits global-norm clipping, the learning
// rate at the current step and one update op per trainable parameter, with
// PyTorch's semantics. Used by the autodiff pass (passes/Autodiff.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_PASSES_OPTIMIZERSTEP_H
#define SINTER_PASSES_OPTIMIZERSTEP_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace sinter {

/// The training section as the passes use it.
struct TrainingConfig {
  std::string optimizer; // "sgd", "adam" or "adamw"
  double lr = 1e-3;
  double momentum = 0, dampening = 0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  double weightDecay = 0;
  bool decayMatricesOnly = false;
  std::string schedule = "constant";
  int64_t warmupSteps = 0, decaySteps = 0;
  double minLr = 0;
  double gradClip = 0;
  /// data_parallel.gradients_mean: the all-reduce of every gradient is a
  /// mean over ranks (true) or a sum.
  bool gradientsMean = true;
  /// What f32 gradients travel as between ranks: "bf16", "f16" or "" (f32).
  std::string gradCommDtype;
  std::string precision = "fp32";
  /// Loss scaling (training.loss_scale): "none", "static" or "dynamic";
  /// the scale the step starts from. With scaling, a step whose global
  /// norm is not finite updates nothing (emitOptimizerStep).
  std::string lossScale = "none";
  double initScale = 65536;
  int64_t gradAccumulationSteps = 1;
  std::string recompute = "none";
};

/// Reads `sgraph.training` from the module; reports at `loc` and fails when
/// it is missing or has no optimizer.
mlir::FailureOr<TrainingConfig> readTrainingConfig(mlir::ModuleOp module,
                                                   mlir::Location loc);

struct ParamGradient {
  std::string name;
  mlir::Value param;
  mlir::Value grad;
};

struct OptimizerStepValues {
  mlir::Value lr;
  mlir::Value gradNorm;
  /// One per ParamGradient, in order.
  llvm::SmallVector<mlir::Value> newParams;
  /// Optimizer-state arguments created through `addState`, their new
  /// values, in the same order.
  llvm::SmallVector<mlir::Value> stateArgs;
  llvm::SmallVector<mlir::Value> newState;
};

/// Creates one optimizer-state argument of `type` named `name` (e.g.
/// "optimizer.h.0.attn.c_attn.weight.exp_avg").
using AddStateFn = llvm::function_ref<mlir::Value(mlir::Type type,
                                                  llvm::StringRef name)>;

/// Emits clipping, the learning rate and the updates at the builder's
/// insertion point. With `peakLr` (a 0-d float tensor, e.g. the training
/// step's `lr` argument) the schedule takes its peak from that value
/// instead of `config.lr` (lr_schedule's `peak_lr`). With loss scaling
/// (config.lossScale != "none") the updates are kept only where the
/// global norm is finite: otherwise every parameter and state tensor is
/// returned as it came, and the optimizer's own step count (an f32 state
/// tensor "optimizer.step", which Adam and momentum then use instead of
/// `step`, as torch.optim's state["step"]) does not advance.
OptimizerStepValues emitOptimizerStep(mlir::OpBuilder &builder,
                                      mlir::Location loc,
                                      const TrainingConfig &config,
                                      llvm::ArrayRef<ParamGradient> params,
                                      mlir::Value step, AddStateFn addState,
                                      mlir::Value peakLr = {});

} // namespace sinter

#endif // SINTER_PASSES_OPTIMIZERSTEP_H
