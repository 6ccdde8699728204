//===- OptimizerKernels.cpp - the optimizer updates and the lr schedule --===//
//
// The reference interpreter's sgd_update, momentum_update, adam_update and
// lr_schedule (OptimizerKernels.h), apart from OpKernels.cpp's other ops:
// they follow torch.optim and nanoGPT's get_lr rather than an elementwise
// formula, and the tests that pin them to PyTorch read them here.
//
//===----------------------------------------------------------------------===//

#include "compiler/Interpreter/OptimizerKernels.h"

#include <cmath>

using namespace sinter;
using namespace sinter::interp;

namespace {

double scalarOf(const Tensor &t) { return t.get(0); }

/// Element k of a float result, rounded once to its element type.
void set(Tensor &t, int64_t k, double v) { t.f[k] = roundTo(t.kind, v); }

} // namespace


void sinter::interp::sgdUpdate(sgraph::SgdUpdateOp op, const Tensor &p, const Tensor &g,
               const Tensor &lrT, Tensor &out) {
  double lr = scalarOf(lrT), wd = op.getWeightDecay().convertToDouble();
  for (int64_t k = 0, n = p.numElements(); k < n; ++k)
    set(out, k, p.f[k] - lr * (g.f[k] + wd * p.f[k]));
}

void sinter::interp::momentumUpdate(sgraph::MomentumUpdateOp op, const Tensor &p,
                    const Tensor &g, const Tensor &buf, const Tensor &lrT,
                    const Tensor &stepT, Tensor &newP, Tensor &newBuf) {
  double lr = scalarOf(lrT), wd = op.getWeightDecay().convertToDouble();
  double mu = op.getMomentum().convertToDouble();
  double damp = op.getDampening().convertToDouble();
  bool first = stepT.i[0] == 0;
  for (int64_t k = 0, n = p.numElements(); k < n; ++k) {
    double grad = g.f[k] + wd * p.f[k];
    // torch.optim.SGD starts the buffer at the first gradient.
    double b = first ? grad : mu * buf.f[k] + (1.0 - damp) * grad;
    double bRounded = roundTo(newBuf.kind, b);
    newBuf.f[k] = bRounded;
    double direction = op.getNesterov() ? grad + mu * bRounded : bRounded;
    set(newP, k, p.f[k] - lr * direction);
  }
}

void sinter::interp::adamUpdate(sgraph::AdamUpdateOp op, const Tensor &p, const Tensor &g,
                const Tensor &m, const Tensor &v, const Tensor &lrT,
                const Tensor &stepT, Tensor &newP, Tensor &newM, Tensor &newV) {
  double lr = scalarOf(lrT);
  double b1 = op.getBeta1().convertToDouble();
  double b2 = op.getBeta2().convertToDouble();
  double eps = op.getEpsilon().convertToDouble();
  double wd = op.getWeightDecay().convertToDouble();
  bool decoupled = op.getDecoupledWeightDecay();
  double t = double(stepT.i[0]) + 1.0;
  double bc1 = 1.0 - std::pow(b1, t), bc2 = 1.0 - std::pow(b2, t);
  for (int64_t k = 0, n = p.numElements(); k < n; ++k) {
    double param = p.f[k], grad = g.f[k];
    if (decoupled)
      param *= 1.0 - lr * wd;
    else
      grad += wd * param;
    double mk = roundTo(newM.kind, b1 * m.f[k] + (1.0 - b1) * grad);
    double vk = roundTo(newV.kind, b2 * v.f[k] + (1.0 - b2) * grad * grad);
    newM.f[k] = mk;
    newV.f[k] = vk;
    double denom = std::sqrt(vk) / std::sqrt(bc2) + eps;
    set(newP, k, param - (lr / bc1) * mk / denom);
  }
}

double sinter::interp::lrAt(sgraph::LrScheduleOp op, int64_t step, std::optional<double> peak) {
  double lr = op.getLr().convertToDouble();
  double minLr = op.getMinLr().convertToDouble();
  if (peak) {
    if (minLr != 0)
      minLr = minLr * (*peak / lr);
    lr = *peak;
  }
  int64_t warmup = op.getWarmupSteps(), decay = op.getDecaySteps();
  if (step < warmup)
    return lr * double(step + 1) / double(warmup + 1);
  if (op.getSchedule() == "constant")
    return lr;
  if (step > decay)
    return minLr;
  double ratio = double(step - warmup) / double(decay - warmup);
  return minLr + 0.5 * (1.0 + std::cos(M_PI * ratio)) * (lr - minLr);
}
