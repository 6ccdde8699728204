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

std::vector<int64_t>
sinter::interp::stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t k = static_cast<int64_t>(shape.size()) - 2; k >= 0; --k)
    strides[k] = strides[k + 1] * shape[k + 1];
  return strides;
}

namespace {
template <typename T> T load(const uint8_t *bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}
template <typename T> void store(uint8_t *bytes, T value) {
  std::memcpy(bytes, &value, sizeof(T));
}
} // namespace

int64_t sinter::interp::byteWidth(ElementKind kind) {
  switch (kind) {
  case ElementKind::F64:
  case ElementKind::I64:
    return 8;
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::F16:
  case ElementKind::BF16:
    return 2;
  case ElementKind::I1:
    return 1;
  }
  return 0;
}

Tensor sinter::interp::tensorFromBytes(ElementKind kind,
                                       std::vector<int64_t> shape,
                                       const uint8_t *bytes) {
  Tensor t(kind, std::move(shape));
  for (int64_t k = 0, n = t.numElements(); k < n; ++k) {
    switch (t.kind) {
    case ElementKind::F64:
      t.f[k] = load<double>(bytes + 8 * k);
      break;
    case ElementKind::F32:
      t.f[k] = load<float>(bytes + 4 * k);
      break;
    case ElementKind::BF16:
      t.f[k] = bf16BitsToFloat(load<uint16_t>(bytes + 2 * k));
      break;
    case ElementKind::F16:
      t.f[k] = f16BitsToFloat(load<uint16_t>(bytes + 2 * k));
      break;
    case ElementKind::I64:
      t.i[k] = load<int64_t>(bytes + 8 * k);
      break;
    case ElementKind::I32:
      t.i[k] = load<int32_t>(bytes + 4 * k);
      break;
    case ElementKind::I1:
      t.i[k] = bytes[k] != 0;
      break;
    }
  }
  return t;
}

void sinter::interp::tensorToBytes(const Tensor &t, uint8_t *bytes) {
  for (int64_t k = 0, n = t.numElements(); k < n; ++k) {
    switch (t.kind) {
    case ElementKind::F64:
      store<double>(bytes + 8 * k, t.f[k]);
      break;
    case ElementKind::F32:
      store<float>(bytes + 4 * k, static_cast<float>(t.f[k]));
      break;
    case ElementKind::BF16:
      store<uint16_t>(bytes + 2 * k,
                      floatToBf16Bits(static_cast<float>(t.f[k])));
      break;
    case ElementKind::F16:
      store<uint16_t>(bytes + 2 * k,
                      floatToF16Bits(static_cast<float>(t.f[k])));
      break;
    case ElementKind::I64:
      store<int64_t>(bytes + 8 * k, t.i[k]);
      break;
    case ElementKind::I32:
      store<int32_t>(bytes + 4 * k, static_cast<int32_t>(t.i[k]));
      break;
    case ElementKind::I1:
      bytes[k] = t.i[k] != 0;
      break;
    }
  }
}
