//===- Gelu.h - GELU and its derivative, the reference definitions -------===//
//
// sgraph.gelu and sgraph.gelu_grad in double: the reference interpreter's
// numbers, and the definitions the CUDA executor holds cuBLASLt's GELU
// training epilogues against (runtime/Exec/CudaGeluForms.cpp), as do the
// stand-in cuBLASLt of the tests and the GPU check's probe.
//
//   gelu(x)       = x/2 (1 + erf(x / sqrt 2))                 (exact form)
//                 = x/2 (1 + tanh(k (x + a x^3)))             (tanh form)
//   gelu'(x)      = Phi(x) + x phi(x)                         (exact form)
//                 = (1 + t)/2 + x/2 (1 - t^2) k (1 + 3 a x^2) (tanh form)
//
// with k = sqrt(2 / pi), a = 0.044715, t = tanh(k (x + a x^3)).
//
// Header-only C++17; part of the ABI both compiler/ and runtime/ include.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_ABI_GELU_H
#define SINTER_ABI_GELU_H

#include <cmath>

namespace sinter::gelu {

inline double value(double x, bool tanhForm) {
  if (tanhForm) {
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2));
}

inline double derivative(double x, bool tanhForm) {
  if (tanhForm) {
    const double k = std::sqrt(2.0 / M_PI), a = 0.044715;
    double t = std::tanh(k * (x + a * x * x * x));
    return 0.5 * (1.0 + t) +
           0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * a * x * x);
  }
  return 0.5 * (1.0 + std::erf(x * M_SQRT1_2)) +
         x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
}

} // namespace sinter::gelu

#endif // SINTER_ABI_GELU_H
