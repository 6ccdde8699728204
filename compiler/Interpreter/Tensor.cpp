//===- Tensor.cpp - host tensors of the reference interpreter ------------===//

#include "compiler/Interpreter/Tensor.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <cstring>

using namespace sinter::interp;

bool sinter::interp::isFloat(ElementKind kind) {
  return kind == ElementKind::F16 || kind == ElementKind::BF16 ||
         kind == ElementKind::F32 || kind == ElementKind::F64;
}

std::string sinter::interp::kindName(ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
    return "f16";
  case ElementKind::BF16:
    return "bf16";
  case ElementKind::F32:
    return "f32";
  case ElementKind::F64:
    return "f64";
  case ElementKind::I1:
    return "i1";
  case ElementKind::I32:
    return "i32";
  case ElementKind::I64:
    return "i64";
  }
  return "?";
}

std::optional<ElementKind> sinter::interp::kindOf(mlir::Type type) {
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isInteger(1))
    return ElementKind::I1;
  if (type.isInteger(32))
    return ElementKind::I32;
  if (type.isInteger(64))
    return ElementKind::I64;
  return std::nullopt;
}

uint16_t sinter::interp::floatToBf16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (std::isnan(value))
    return static_cast<uint16_t>((bits >> 16) | 0x40); // quiet NaN
  // Round to nearest even on the 16 bits that are dropped.
  uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float sinter::interp::bf16BitsToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

uint16_t sinter::interp::floatToF16Bits(float value) {
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

float sinter::interp::f16BitsToFloat(uint16_t bits) {
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

double sinter::interp::roundTo(ElementKind kind, double value) {
  switch (kind) {
  case ElementKind::F64:
    return value;
  case ElementKind::F32:
    return static_cast<float>(value);
  case ElementKind::BF16:
    return bf16BitsToFloat(floatToBf16Bits(static_cast<float>(value)));
  case ElementKind::F16:
    return f16BitsToFloat(floatToF16Bits(static_cast<float>(value)));
  default:
    return value;
  }
}

int64_t sinter::interp::wrapTo(ElementKind kind, int64_t value) {
  switch (kind) {
  case ElementKind::I1:
    return value != 0;
  case ElementKind::I32:
    return static_cast<int32_t>(static_cast<uint32_t>(value));
  default:
    return value;
  }
}

Tensor::Tensor(ElementKind kind, std::vector<int64_t> shape)
    : kind(kind), shape(std::move(shape)) {
  if (isFloat())
    f.assign(numElements(), 0.0);
  else
    i.assign(numElements(), 0);
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string Tensor::describe() const {
  std::string text = kindName(kind) + "[";
  for (size_t k = 0; k < shape.size(); ++k)
    text += (k ? ", " : "") + std::to_string(shape[k]);
  return text + "]";
}

std::vector<int64_t> sinter::interp::stridesOf(
    const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t k = static_cast<int64_t>(shape.size()) - 2; k >= 0; --k)
    strides[k] = strides[k + 1] * shape[k + 1];
  return strides;
}
