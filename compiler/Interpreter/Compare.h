//===- Compare.h - how far a tensor is from the interpreter's ---*- C++ -*-===//
//
// What the two bisections (a binary's trace against the interpreter,
// Bisect.h; the pipeline's passes against one another, PassBisect.h) agree
// a wrong number is. Normwise: ||value - reference|| / ||reference|| over
// the elements, with a tolerance `rtol` for f32 and f64; bf16 and f16 take
// 10 x rtol, and a half tensor over it passes still when no element is more
// than one unit in the last place away (a rounding that landed on the other
// side of a tie, which in a small tensor weighs much). Integers and booleans
// must be equal (the error is the share of elements that differ), and a NaN
// or infinity must be where the reference has one.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_INTERPRETER_COMPARE_H
#define SINTER_COMPILER_INTERPRETER_COMPARE_H

#include "compiler/Interpreter/Tensor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <string>

namespace sinter::interp {

struct Difference {
  double error = 0; // normwise relative; integers: the share differing
  /// The error is the share of elements that differ (integers, booleans,
  /// bytes), not a normwise one.
  bool counted = false;
  double tolerance = 0;
  int64_t nonFinite = 0; // NaN or inf where the other side differs
  int64_t worst = -1;    // element of the largest |difference|
  double value = 0, reference = 0;
  /// bf16 and f16: the most units in the last place an element is off
  /// (-1 for other types).
  int64_t ulps = -1;
  /// Over the tolerance; at a tolerance of 0 (bit for bit) a half's unit
  /// in the last place is a difference too.
  bool over() const {
    return nonFinite > 0 ||
           (error > tolerance && (ulps < 0 || ulps > 1 || tolerance == 0));
  }
  /// error / tolerance (infinite with a stray NaN or infinity; 0 for equal
  /// tensors at a tolerance of 0).
  double ratio() const;
};

/// Compares two tensors of `kind` and `shape` held as bytes (row-major,
/// little-endian). `skip(k)`, when given, leaves element k out.
Difference compareBytes(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                        const uint8_t *reference, const uint8_t *value,
                        double rtol,
                        const std::function<bool(int64_t)> &skip = nullptr);

/// The same for interpreter tensors of one kind and shape.
Difference compareTensors(const Tensor &reference, const Tensor &value,
                          double rtol);

/// "normwise relative difference 0.00045 (tolerance 1e-04); the largest at
/// element 7: <valueName> 1.5, <referenceName> 1.25".
std::string describeDifference(const Difference &d, llvm::StringRef valueName,
                               llvm::StringRef referenceName);

} // namespace sinter::interp

#endif // SINTER_COMPILER_INTERPRETER_COMPARE_H
