//===- HalfFloat.h - f32 <-> bf16 / f16 bit patterns ----------------------===//
//
// One rounding rule for the 16-bit float types everywhere: the reference
// interpreter rounds its bf16/f16 results with these, and the runtime uses
// them to initialize and print bf16/f16 tensors, so both agree bit for bit.
// f32 -> 16 bits rounds to nearest even and keeps NaN a (quiet) NaN;
// 16 bits -> f32 is exact.
//
// Header-only C++17; part of the ABI both compiler/ and runtime/ include.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_ABI_HALFFLOAT_H
#define SINTER_ABI_HALFFLOAT_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace sinter::half {

inline uint16_t floatToBf16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (std::isnan(value))
    return static_cast<uint16_t>((bits >> 16) | 0x40); // quiet NaN
  // Round to nearest even on the 16 bits that are dropped.
  uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline float bf16BitsToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

inline uint16_t floatToF16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t absBits = bits & 0x7FFFFFFF;
  if (absBits > 0x7F800000) // NaN
    return sign | 0x7E00;
  if (absBits >= 0x47800000) // >= 65536: overflows to infinity
    return sign | 0x7C00;
  if (absBits < 0x33000000) // < 2^-25: rounds to zero
    return sign;
  int exponent = static_cast<int>(absBits >> 23) - 127;
  uint32_t mantissa = (absBits & 0x7FFFFF) | 0x800000; // with hidden bit
  // Normal f16 numbers keep 10 mantissa bits; subnormals fewer.
  int shift = exponent >= -14 ? 13 : 13 + (-14 - exponent);
  uint32_t kept = mantissa >> shift;
  uint32_t rest = mantissa & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1)))
    ++kept;
  if (exponent >= -14) {
    // kept carries the hidden bit at position 10; a carry out bumps the
    // exponent, which the addition below does by itself.
    uint32_t result = (static_cast<uint32_t>(exponent + 15) << 10) +
                      (kept - 0x400);
    if (result >= 0x7C00)
      return sign | 0x7C00;
    return sign | static_cast<uint16_t>(result);
  }
  return sign | static_cast<uint16_t>(kept); // subnormal (or smallest normal)
}

inline float f16BitsToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  int exponent = (bits >> 10) & 0x1F;
  uint32_t mantissa = bits & 0x3FF;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN()
                         : std::numeric_limits<float>::infinity();
  else
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  uint32_t out;
  std::memcpy(&out, &magnitude, 4);
  out |= sign;
  float value;
  std::memcpy(&value, &out, 4);
  return value;
}

} // namespace sinter::half

#endif // SINTER_ABI_HALFFLOAT_H
