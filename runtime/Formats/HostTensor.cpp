//===- HostTensor.cpp - dtype tables and overflow-checked sizes -----------===//
//
// The dtype tables for both file formats and the checked size arithmetic
// every reader relies on before it allocates.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/HostTensor.h"

#include "abi/HalfFloat.h"

#include "runtime/Formats/AbslCompat.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <cmath>
#include <cstring>

namespace sinter::formats {

int64_t dtypeByteSize(DType dtype) {
  switch (dtype) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
  case DType::U16:
    return 2;
  case DType::I8:
  case DType::U8:
  case DType::Bool:
    return 1;
  }
  return 1; // Unreachable for valid enumerators; keeps -Wreturn-type quiet.
}

std::string_view dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return "F64";
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::I64:
    return "I64";
  case DType::I32:
    return "I32";
  case DType::I16:
    return "I16";
  case DType::I8:
    return "I8";
  case DType::U8:
    return "U8";
  case DType::U16:
    return "U16";
  case DType::Bool:
    return "BOOL";
  }
  return "?";
}

std::optional<DType> parseSafeTensorsDType(std::string_view name) {
  for (DType dtype : kAllDTypes)
    if (dtypeName(dtype) == name)
      return dtype;
  return std::nullopt;
}

std::optional<std::string_view> npyDescr(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return "<f8";
  case DType::F32:
    return "<f4";
  case DType::F16:
    return "<f2";
  case DType::BF16:
    return std::nullopt;
  case DType::I64:
    return "<i8";
  case DType::I32:
    return "<i4";
  case DType::I16:
    return "<i2";
  case DType::I8:
    return "|i1";
  case DType::U8:
    return "|u1";
  case DType::U16:
    return "<u2";
  case DType::Bool:
    return "|b1";
  }
  return std::nullopt;
}

std::optional<DType> parseNpyDescr(std::string_view descr) {
  if (descr.size() != 3)
    return std::nullopt;
  char order = descr[0];
  std::string_view kind = descr.substr(1);
  // One-byte types: byte order is meaningless, so any mark is accepted.
  if (order == '|' || order == '<' || order == '>') {
    if (kind == "i1")
      return DType::I8;
    if (kind == "u1")
      return DType::U8;
    if (kind == "b1")
      return DType::Bool;
  }
  if (order != '<')
    return std::nullopt;
  for (DType dtype : kAllDTypes) {
    std::optional<std::string_view> own = npyDescr(dtype);
    if (own && own->substr(1) == kind)
      return dtype;
  }
  return std::nullopt;
}

absl::StatusOr<int64_t> numElements(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0)
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrCat("dimension ", i, " is negative (", shape[i], ")"));
    if (__builtin_mul_overflow(count, shape[i], &count))
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrCat("element count of shape [", absl::StrJoin(shape, ","),
                       "] overflows a 64-bit integer"));
  }
  return count;
}

absl::StatusOr<int64_t> numBytes(DType dtype,
                                 const std::vector<int64_t> &shape) {
  SINTER_ASSIGN_OR_RETURN(int64_t count, numElements(shape));
  int64_t bytes;
  if (__builtin_mul_overflow(count, dtypeByteSize(dtype), &bytes))
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrCat("byte size of ", toAbsl(dtypeName(dtype)),
                                  " shape [", absl::StrJoin(shape, ","),
                                  "] overflows a 64-bit integer"));
  return bytes;
}

absl::Status HostTensor::validate() const {
  if (shape.size() > static_cast<size_t>(kMaxRank))
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrCat("rank ", shape.size(),
                                  " exceeds the maximum of ", kMaxRank));
  SINTER_ASSIGN_OR_RETURN(int64_t bytes, numBytes(dtype, shape));
  if (static_cast<uint64_t>(bytes) != data.size())
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrCat(toAbsl(dtypeName(dtype)), " shape [",
                                  absl::StrJoin(shape, ","), "] needs ", bytes,
                                  " bytes but the tensor holds ", data.size()));
  return absl::OkStatus();
}

absl::StatusOr<HostTensor> HostTensor::zeros(DType dtype,
                                             std::vector<int64_t> shape) {
  SINTER_ASSIGN_OR_RETURN(int64_t bytes, numBytes(dtype, shape));
  HostTensor tensor;
  tensor.dtype = dtype;
  tensor.shape = std::move(shape);
  tensor.data.assign(static_cast<size_t>(bytes), 0);
  return tensor;
}

int64_t countNonFinite(DType dtype, std::string_view bytes, int64_t *first) {
  if (first)
    *first = -1;
  size_t width = static_cast<size_t>(dtypeByteSize(dtype));
  auto value = [&](size_t i) -> double {
    const char *p = bytes.data() + i * width;
    switch (dtype) {
    case DType::F64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::F32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      return dtype == DType::F16 ? half::f16BitsToFloat(bits)
                                 : half::bf16BitsToFloat(bits);
    }
    }
  };
  if (dtype != DType::F64 && dtype != DType::F32 && dtype != DType::F16 &&
      dtype != DType::BF16)
    return 0;
  int64_t count = 0;
  for (size_t i = 0, n = bytes.size() / width; i < n; ++i)
    if (!std::isfinite(value(i)) && count++ == 0 && first)
      *first = static_cast<int64_t>(i);
  return count;
}

int64_t countNonFinite(const HostTensor &tensor, int64_t *first) {
  return countNonFinite(
      tensor.dtype,
      std::string_view(reinterpret_cast<const char *>(tensor.data.data()),
                       tensor.data.size()),
      first);
}

bool operator==(const HostTensor &lhs, const HostTensor &rhs) {
  return lhs.dtype == rhs.dtype && lhs.shape == rhs.shape &&
         lhs.data == rhs.data;
}

} // namespace sinter::formats
