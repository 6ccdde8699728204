//===- Utf8Test.cpp - runtime/Formats/Utf8.h ------------------------------===//
//
// Well-formed UTF-8 by Unicode's table (no overlong forms, no surrogates,
// nothing above U+10FFFF), and encoding code points.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/Utf8.h"

#include <gtest/gtest.h>

namespace sinter::formats {
namespace {

TEST(Utf8Test, IsValidUtf8) {
  EXPECT_TRUE(isValidUtf8(""));
  EXPECT_TRUE(isValidUtf8("plain"));
  EXPECT_TRUE(isValidUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
  EXPECT_TRUE(isValidUtf8("\xF4\x8F\xBF\xBF")); // U+10FFFF
  EXPECT_FALSE(isValidUtf8("\x80"));
  EXPECT_FALSE(isValidUtf8("\xC1\xBF"));         // overlong
  EXPECT_FALSE(isValidUtf8("\xE0\x80\xAF"));     // overlong
  EXPECT_FALSE(isValidUtf8("\xED\xBF\xBF"));     // surrogate
  EXPECT_FALSE(isValidUtf8("\xF8\x88\x80\x80")); // 5-byte form
  EXPECT_FALSE(isValidUtf8("\xE2\x82"));         // truncated
}

TEST(Utf8Test, SequenceLengths) {
  EXPECT_EQ(utf8SequenceLength(""), 0u);
  EXPECT_EQ(utf8SequenceLength("a\xC3"), 1u);
  EXPECT_EQ(utf8SequenceLength("\xC3\xA9!"), 2u);
  EXPECT_EQ(utf8SequenceLength("\xE2\x82\xAC"), 3u);
  EXPECT_EQ(utf8SequenceLength("\xF0\x9F\x98\x80"), 4u);
  EXPECT_EQ(utf8SequenceLength("\xE2\x82"), 0u); // truncated
  EXPECT_EQ(utf8SequenceLength("\xBF"), 0u);     // continuation byte
}

TEST(Utf8Test, AppendsEncodings) {
  std::string out;
  for (uint32_t code : {0x41u, 0xE9u, 0x20ACu, 0x1F600u, 0x10FFFFu})
    appendUtf8(out, code);
  EXPECT_EQ(out, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF");
  EXPECT_TRUE(isValidUtf8(out));
}

} // namespace
} // namespace sinter::formats
