//===- OptimizerKernels.h - the optimizer updates and the lr schedule -----===//
//
// What the reference interpreter computes for sgraph's optimizer ops
// (docs/dialects/sgraph.md): torch.optim's SGD (with momentum, dampening,
// Nesterov), Adam and AdamW, each element in double and rounded once to its
// dtype, and the learning-rate schedule. Internal to compiler/Interpreter
// (OpKernels.cpp dispatches to them).
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_INTERPRETER_OPTIMIZERKERNELS_H
#define SINTER_COMPILER_INTERPRETER_OPTIMIZERKERNELS_H

#include "compiler/Interpreter/Tensor.h"

#include "dialects/Graph/GraphOps.h"

#include <cstdint>
#include <optional>

namespace sinter::interp {

void sgdUpdate(sgraph::SgdUpdateOp op, const Tensor &p, const Tensor &g,
               const Tensor &lrT, Tensor &out);
void momentumUpdate(sgraph::MomentumUpdateOp op, const Tensor &p,
                    const Tensor &g, const Tensor &buf, const Tensor &lrT,
                    const Tensor &stepT, Tensor &newP, Tensor &newBuf);
void adamUpdate(sgraph::AdamUpdateOp op, const Tensor &p, const Tensor &g,
                const Tensor &m, const Tensor &v, const Tensor &lrT,
                const Tensor &stepT, Tensor &newP, Tensor &newM, Tensor &newV);

/// The schedule at `step`; `peak` (the value of the peak_lr operand, if
/// any) replaces lr, and min_lr keeps its ratio to it. min_lr * (peak / lr)
/// rather than min_lr * peak / lr: with peak == lr the factor is exactly 1,
/// so the result is bit-identical to the op without peak_lr. A min_lr of 0
/// stays 0 (lr may be 0 then).
double lrAt(sgraph::LrScheduleOp op, int64_t step, std::optional<double> peak);

} // namespace sinter::interp

#endif // SINTER_COMPILER_INTERPRETER_OPTIMIZERKERNELS_H
