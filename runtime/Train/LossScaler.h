//===- LossScaler.h - the loss scale between steps --------------*- C++ -*-===//
//
// Dynamic loss scaling as PyTorch's torch.amp.GradScaler.update() moves
// its scale (docs/MixedPrecision.md): after a step whose gradients
// overflowed, scale *= backoff_factor and the clean-step count restarts;
// after growth_interval clean steps in a row, scale *= growth_factor. A
// static policy keeps the scale. The step program itself skips the update
// of an overflowed step (its grad_norm is then not finite); this class
// only counts, moves the scale and says when too many steps in a row have
// overflowed. Plain state, checkpointed with the run (trainer.json).
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_TRAIN_LOSSSCALER_H
#define SINTER_RUNTIME_TRAIN_LOSSSCALER_H

#include "runtime/Exec/StepProgram.h"

#include <cstdint>

namespace sinter::train {

/// What survives a checkpoint.
struct LossScaleState {
  double scale = 65536;
  int64_t growthTracker = 0;       // clean steps since the last change
  int64_t skippedSteps = 0;        // in the whole run
  int64_t consecutiveOverflows = 0;
};

class LossScaler {
public:
  explicit LossScaler(const exec::LossScaling &policy) : policy(policy) {
    state.scale = policy.initScale;
  }

  /// Records a step: `overflowed` when its global gradient norm was not
  /// finite (the step updated nothing). Returns whether the run must stop:
  /// policy.maxConsecutiveOverflows overflows in a row.
  bool record(bool overflowed) {
    if (overflowed) {
      ++state.skippedSteps;
      ++state.consecutiveOverflows;
      state.growthTracker = 0;
      if (policy.dynamic)
        state.scale *= policy.backoffFactor;
      return state.consecutiveOverflows >= policy.maxConsecutiveOverflows;
    }
    state.consecutiveOverflows = 0;
    if (policy.dynamic && ++state.growthTracker == policy.growthInterval) {
      state.scale *= policy.growthFactor;
      state.growthTracker = 0;
    }
    return false;
  }

  const exec::LossScaling &policy;
  LossScaleState state;
};

} // namespace sinter::train

#endif // SINTER_RUNTIME_TRAIN_LOSSSCALER_H
