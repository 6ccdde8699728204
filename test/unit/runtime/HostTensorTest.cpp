//===- HostTensorTest.cpp - dtype tables and shape arithmetic -------------===//
//
// The dtype name / descr tables and the overflow-checked element and byte
// counts every reader relies on.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/HostTensor.h"
#include "runtime/Formats/Npy.h"
#include "runtime/Formats/SafeTensors.h"

#include "test/unit/runtime/FormatsTestUtil.h"

#include "absl/strings/str_cat.h"

namespace sinter::formats {
namespace {

TEST(HostTensorTest, DTypeTables) {
  EXPECT_EQ(dtypeByteSize(DType::F64), 8);
  EXPECT_EQ(dtypeByteSize(DType::BF16), 2);
  EXPECT_EQ(dtypeByteSize(DType::U16), 2);
  EXPECT_EQ(dtypeByteSize(DType::Bool), 1);
  EXPECT_EQ(dtypeName(DType::Bool), "BOOL");
  for (DType dtype : kAllDTypes) {
    EXPECT_EQ(parseSafeTensorsDType(dtypeName(dtype)), dtype);
    std::optional<std::string_view> descr = npyDescr(dtype);
    EXPECT_EQ(descr.has_value(), dtype != DType::BF16);
    if (descr) {
      EXPECT_EQ(parseNpyDescr(*descr), dtype);
      EXPECT_EQ(descr->back() - '0', dtypeByteSize(dtype)) << *descr;
    }
  }
  EXPECT_EQ(parseSafeTensorsDType("U32"), std::nullopt);
  EXPECT_EQ(parseSafeTensorsDType("f32"), std::nullopt);
  EXPECT_EQ(parseNpyDescr("<u1"), DType::U8); // cnpy's spelling
  EXPECT_EQ(parseNpyDescr("|b1"), DType::Bool);
  EXPECT_EQ(parseNpyDescr(">f4"), std::nullopt);
  EXPECT_EQ(parseNpyDescr("|f4"), std::nullopt);
  EXPECT_EQ(parseNpyDescr("<u4"), std::nullopt);
  EXPECT_EQ(parseNpyDescr("|O"), std::nullopt);
  EXPECT_EQ(parseNpyDescr("<f4 "), std::nullopt);
}

TEST(HostTensorTest, NumElementsChecksOverflow) {
  EXPECT_EQ(*numElements({}), 1);
  EXPECT_EQ(*numElements({2, 0, 5}), 0);
  EXPECT_EQ(*numElements({3, 4}), 12);
  EXPECT_EQ(*numBytes(DType::F64, {3, 4}), 96);
  EXPECT_NE(numElements({2, -1}).status().message().find("negative"),
            std::string_view::npos);
  EXPECT_NE(
      numElements({int64_t(1) << 62, 4}).status().message().find("overflows"),
      std::string_view::npos);
  // The element count fits, the byte count does not.
  EXPECT_TRUE(numElements({int64_t(1) << 61}).ok());
  EXPECT_NE(numBytes(DType::F64, {int64_t(1) << 61})
                .status()
                .message()
                .find("byte size"),
            std::string_view::npos);
}

TEST(HostTensorTest, ValidateAndZeros) {
  absl::StatusOr<HostTensor> zeros = HostTensor::zeros(DType::I32, {2, 3});
  ASSERT_TRUE(zeros.ok());
  EXPECT_EQ(zeros->data.size(), 24u);
  EXPECT_TRUE(zeros->validate().ok());
  zeros->data.pop_back();
  EXPECT_NE(zeros->validate().message().find("needs 24 bytes"),
            std::string_view::npos);
  EXPECT_FALSE(HostTensor::zeros(DType::F32, {-1}).ok());
  HostTensor deep;
  deep.shape.assign(kMaxRank + 1, 1);
  deep.data.resize(4);
  EXPECT_NE(deep.validate().message().find("rank 33"), std::string_view::npos);
}

} // namespace
} // namespace sinter::formats
