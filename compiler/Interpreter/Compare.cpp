//===- Compare.cpp - how far a tensor is from the interpreter's ----------===//

#include "compiler/Interpreter/Compare.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

using namespace sinter::interp;

double Difference::ratio() const {
  if (nonFinite)
    return INFINITY;
  if (tolerance == 0)
    return error > 0 ? INFINITY : 0;
  return error / tolerance;
}

Difference
sinter::interp::compareBytes(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                             const uint8_t *reference, const uint8_t *value,
                             double rtol,
                             const std::function<bool(int64_t)> &skip) {
  std::vector<int64_t> dims(shape.begin(), shape.end());
  Tensor ref = tensorFromBytes(kind, dims, reference);
  Tensor val = tensorFromBytes(kind, dims, value);
  bool half = kind == ElementKind::BF16 || kind == ElementKind::F16;
  Difference out;
  out.tolerance = ref.isFloat() ? (half ? 10 * rtol : rtol) : 0;
  // Units in the last place of a half: bit patterns as ordered integers.
  auto ordered = [](const uint8_t *at) {
    int32_t v = at[0] | (at[1] << 8);
    return (v & 0x8000) ? 0x8000 - v : v;
  };
  if (half)
    out.ulps = 0;
  double diff2 = 0, ref2 = 0, largest = -1;
  int64_t differing = 0, n = ref.numElements(), compared = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (skip && skip(k))
      continue;
    ++compared;
    double r = ref.get(k), v = val.get(k);
    if (!ref.isFloat()) {
      differing += r != v;
      if (r != v && largest < 0) {
        largest = 0;
        out.worst = k, out.value = v, out.reference = r;
      }
      continue;
    }
    if (std::isfinite(r) && std::isfinite(v)) {
      if (half)
        out.ulps =
            std::max<int64_t>(out.ulps, std::abs(ordered(reference + 2 * k) -
                                                 ordered(value + 2 * k)));
      diff2 += (v - r) * (v - r);
      ref2 += r * r;
      if (std::fabs(v - r) > largest) {
        largest = std::fabs(v - r);
        out.worst = k, out.value = v, out.reference = r;
      }
    } else if (!(std::isnan(r) && std::isnan(v)) && r != v) {
      if (out.nonFinite++ == 0)
        out.worst = k, out.value = v, out.reference = r, largest = INFINITY;
    }
  }
  out.counted = !ref.isFloat();
  if (out.counted)
    out.error = compared ? static_cast<double>(differing) / compared : 0;
  else
    out.error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return out;
}

Difference sinter::interp::compareTensors(const Tensor &reference,
                                          const Tensor &value, double rtol) {
  int64_t bytes = reference.numElements() * byteWidth(reference.kind);
  std::vector<uint8_t> r(bytes), v(bytes);
  tensorToBytes(reference, r.data());
  tensorToBytes(value, v.data());
  return compareBytes(reference.kind, reference.shape, r.data(), v.data(),
                      rtol);
}

std::string sinter::interp::describeDifference(const Difference &d,
                                               llvm::StringRef valueName,
                                               llvm::StringRef referenceName) {
  std::string text;
  llvm::raw_string_ostream t(text);
  if (d.nonFinite)
    t << d.nonFinite << " NaN or infinite value(s) where " << valueName
      << " and " << referenceName << " differ";
  else if (d.counted)
    t << llvm::format("%.3g", d.error) << " of the elements differ";
  else if (d.tolerance == 0)
    t << "normwise relative difference " << llvm::format("%.3g", d.error)
      << " (tolerance 0: bit for bit)";
  else
    t << "normwise relative difference " << llvm::format("%.3g", d.error)
      << " (tolerance " << llvm::format("%.0e", d.tolerance) << ")";
  if (d.ulps >= 0)
    t << ", at most " << d.ulps << " unit(s) in the last place";
  if (d.worst >= 0)
    t << "; the largest at element " << d.worst << ": " << valueName << " "
      << llvm::format("%.9g", d.value) << ", " << referenceName << " "
      << llvm::format("%.9g", d.reference);
  return text;
}
