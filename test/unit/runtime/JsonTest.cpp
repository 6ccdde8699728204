//===- JsonTest.cpp - the step program's JSON reader ----------------------===//
//
// The grammar edge cases of runtime/Formats/Json.h, the step program's own
// parser: escapes, UTF-8, integers, limits, duplicate keys, offsets and
// printing.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/Json.h"

#include "test/unit/runtime/FormatsTestUtil.h"

#include "absl/strings/str_cat.h"

namespace sinter::formats {
namespace {

/// Parses `text` expecting failure whose message contains `substring` and
/// whose offset is `offset`.
void expectJsonError(std::string_view text, uint64_t offset,
                     std::string_view substring,
                     const JsonParseOptions &options = {}) {
  SCOPED_TRACE(std::string(text.substr(0, 60)));
  JsonError error;
  absl::StatusOr<JsonValue> value = parseJson(text, options, &error);
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(error.offset, offset) << error.message;
  EXPECT_NE(error.message.find(substring), std::string::npos) << error.message;
  EXPECT_EQ(value.status().message(),
            absl::StrCat("byte offset ", offset, ": ", error.message));
}

TEST(JsonTest, ParsesScalarsAndContainers) {
  absl::StatusOr<JsonValue> value = parseJson(
      R"( {"a": [1, -2.5, true, false, null, "s"], "b": {}, "c": []} )");
  ASSERT_TRUE(value.ok()) << value.status();
  ASSERT_TRUE(value->isObject());
  EXPECT_EQ(value->offset(), 1u);
  ASSERT_EQ(value->members().size(), 3u);
  EXPECT_EQ(value->members()[0].first, "a"); // file order is kept
  EXPECT_EQ(value->members()[2].first, "c");
  const JsonValue *a = value->find("a");
  ASSERT_TRUE(a && a->isArray());
  ASSERT_EQ(a->items().size(), 6u);
  EXPECT_EQ(a->offset(), 7u);
  EXPECT_TRUE(a->items()[0].isInt());
  EXPECT_EQ(a->items()[0].asInt(), 1);
  EXPECT_EQ(a->items()[0].offset(), 8u);
  EXPECT_EQ(a->items()[1].kind(), JsonKind::Number);
  EXPECT_EQ(a->items()[1].asNumber(), -2.5);
  EXPECT_TRUE(a->items()[2].asBool());
  EXPECT_TRUE(a->items()[3].isBool());
  EXPECT_FALSE(a->items()[3].asBool());
  EXPECT_TRUE(a->items()[4].isNull());
  EXPECT_EQ(a->items()[5].asString(), "s");
  EXPECT_TRUE(value->find("b")->members().empty());
  EXPECT_EQ(value->find("zzz"), nullptr);
  // Wrong-kind accessors give zero values rather than failing.
  EXPECT_EQ(a->asInt(), 0);
  EXPECT_EQ(a->asString(), "");
  // Any value may be the top level.
  EXPECT_EQ(parseJson("42")->asInt(), 42);
  EXPECT_EQ(parseJson("\"x\"")->asString(), "x");
}

TEST(JsonTest, DecodesEscapes) {
  absl::StatusOr<JsonValue> value =
      parseJson(R"("q\" b\\ s\/ \b\f\n\r\t \u0041\u00e9\u20ac\ud83d\ude00")");
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(value->asString(), "q\" b\\ s/ \b\f\n\r\t A\xC3\xA9\xE2\x82\xAC"
                               "\xF0\x9F\x98\x80");
  // \u0000 is a legal escape; the string keeps its NUL.
  EXPECT_EQ(parseJson(R"("a\u0000b")")->asString(), std::string("a\0b", 3));
  // Raw UTF-8 passes through.
  EXPECT_EQ(parseJson("\"\xE2\x82\xAC\"")->asString(), "\xE2\x82\xAC");
}

TEST(JsonTest, RejectsBadEscapesAndSurrogates) {
  expectJsonError(R"("\q")", 1, "invalid escape: backslash followed by 'q'");
  // Found by fuzzing: the raw byte must not reach the one-line message.
  expectJsonError("\"\\\n\"", 1, "backslash followed by byte 0x0a");
  expectJsonError(R"("\u12")", 3, "truncated \\u escape");
  expectJsonError(R"("\u12G4")", 5, "invalid hex digit");
  expectJsonError(R"("\udc00")", 1, "unpaired low surrogate");
  expectJsonError(R"("\ud800")", 1, "unpaired high surrogate");
  expectJsonError(R"("\ud800\u0041")", 1, "unpaired high surrogate");
  expectJsonError("\"a\nb\"", 2, "control character 0x0a");
  expectJsonError("\"abc", 4, "unterminated string");
}

TEST(JsonTest, RejectsInvalidUtf8) {
  expectJsonError("\"\xFF\"", 1, "invalid UTF-8");
  expectJsonError("\"\xC0\xAF\"", 1, "invalid UTF-8");          // overlong '/'
  expectJsonError("\"\xED\xA0\x80\"", 1, "invalid UTF-8");      // surrogate
  expectJsonError("\"ab\xE2\x82\"", 3, "invalid UTF-8");        // truncated
  expectJsonError("\"\xF4\x90\x80\x80\"", 1, "invalid UTF-8");  // > U+10FFFF
  expectJsonError("\xEF\xBB\xBF{}", 0, "unexpected byte 0xef"); // BOM
}

TEST(JsonTest, IntegersAreExactAndOverflowChecked) {
  EXPECT_EQ(parseJson("9223372036854775807")->asInt(), INT64_MAX);
  EXPECT_EQ(parseJson("-9223372036854775808")->asInt(), INT64_MIN);
  EXPECT_EQ(parseJson("-0")->asInt(), 0);
  // 2^53 + 1 would round as a double; as an integer it stays exact.
  EXPECT_EQ(parseJson("9007199254740993")->asInt(), 9007199254740993);
  expectJsonError("[9223372036854775808]", 1, "does not fit in 64 bits");
  expectJsonError("-9223372036854775809", 0, "does not fit in 64 bits");
  expectJsonError(
      "123456789012345678901234567890123456789012345678901234567890", 0, "...");
}

TEST(JsonTest, NumberGrammarIsStrict) {
  EXPECT_EQ(parseJson("1.5e3")->asNumber(), 1500.0);
  EXPECT_EQ(parseJson("-0.25E-2")->asNumber(), -0.0025);
  EXPECT_EQ(parseJson("1e2")->kind(), JsonKind::Number);
  expectJsonError("01", 0, "leading zeros");
  expectJsonError("-01", 1, "leading zeros");
  expectJsonError("1.", 2, "expected a digit after '.'");
  expectJsonError(".5", 0, "unexpected '.'");
  expectJsonError("-", 1, "expected a digit");
  expectJsonError("1e", 2, "exponent");
  expectJsonError("+1", 0, "unexpected '+'");
  expectJsonError("1e400", 0, "out of the range of a double");
  expectJsonError("NaN", 0, "unexpected 'N'");
  expectJsonError("Infinity", 0, "unexpected 'I'");
  expectJsonError("tru", 0, "invalid literal");
  expectJsonError("nul", 0, "invalid literal");
}

TEST(JsonTest, EnforcesDepthLimit) {
  std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(parseJson(ok).ok());
  std::string deep = std::string(65, '[') + std::string(65, ']');
  expectJsonError(deep, 64, "nesting deeper than 64 levels");
  // Far deeper than any stack could recurse: still a clean error.
  std::string hostile(1000000, '[');
  expectJsonError(hostile, 64, "nesting deeper");
  std::string objects;
  for (int i = 0; i < 100; ++i)
    objects += "{\"a\":";
  expectJsonError(objects, 5 * 64, "nesting deeper");
  JsonParseOptions shallow;
  shallow.maxDepth = 2;
  EXPECT_TRUE(parseJson("[[1]]", shallow).ok());
  expectJsonError("[[[1]]]", 2, "nesting deeper than 2 levels", shallow);
  JsonParseOptions huge;
  huge.maxDepth = 1 << 30; // clamped to kJsonMaxDepth
  expectJsonError(hostile, kJsonMaxDepth, "nesting deeper", huge);
}

TEST(JsonTest, RejectsDuplicateKeys) {
  expectJsonError(R"({"a": 1, "a": 2})", 9, "duplicate key \"a\"");
  // Keys compare after escape decoding.
  expectJsonError(R"({"a": 1, "\u0061": 2})", 9, "duplicate key \"a\"");
  expectJsonError(R"({"x": {"k": 1, "k": 1}})", 15, "duplicate key");
  // The same key in different objects is fine.
  EXPECT_TRUE(parseJson(R"({"x": {"k": 1}, "y": {"k": 1}})").ok());
}

TEST(JsonTest, RejectsTrailingGarbage) {
  EXPECT_TRUE(parseJson(" \t\r\n{}  \n").ok());
  expectJsonError("{} x", 3, "unexpected 'x' after the JSON value");
  expectJsonError("{}{}", 2, "after the JSON value");
  expectJsonError(std::string("{}\0", 3), 2, "byte 0x00");
  expectJsonError("[1,]", 3, "unexpected ']'");
  expectJsonError("{\"a\":1,}", 7, "expected '\"' to start an object key");
  expectJsonError("{,}", 1, "expected '\"'");
  expectJsonError("", 0, "unexpected end of input");
  expectJsonError("   ", 3, "unexpected end of input");
  expectJsonError("[1 2]", 3, "expected ',' or ']'");
  expectJsonError("{\"a\" 1}", 5, "expected ':'");
  expectJsonError("{'a': 1}", 1, "expected '\"'");
  expectJsonError("[1, 2", 5, "unexpected end of input");
}

TEST(JsonTest, EnforcesValueLimit) {
  JsonParseOptions options;
  options.maxValues = 4;
  EXPECT_TRUE(parseJson("[1, 2, 3]", options).ok());
  expectJsonError("[1, 2, 3, 4]", 10, "more than 4 values", options);
}

TEST(JsonTest, ErrorsReportByteOffsets) {
  absl::StatusOr<JsonValue> value = parseJson(R"({"a": 1 "b": 2})");
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().message(), "byte offset 8: expected ',' or '}'");
  EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(JsonTest, PrintRoundTrips) {
  JsonValue value = JsonValue::makeObject(
      {{"int", JsonValue::makeInt(INT64_MIN)},
       {"num", JsonValue::makeNumber(0.1)},
       {"whole", JsonValue::makeNumber(2.0)},
       {"tiny", JsonValue::makeNumber(5e-324)},
       {"str", JsonValue::makeString(std::string("q\"\\/\n\x01\x7F\xC3\xA9"
                                                 "\0end",
                                                 14))},
       {"arr", JsonValue::makeArray({JsonValue(), JsonValue::makeBool(true),
                                     JsonValue::makeArray()})},
       {"obj", JsonValue::makeObject()}});
  std::string printed = printJson(value);
  EXPECT_EQ(printed.find(' '), std::string::npos);
  EXPECT_NE(printed.find("\"whole\":2.0"), std::string::npos) << printed;
  EXPECT_NE(printed.find("\\u0001"), std::string::npos) << printed;
  EXPECT_NE(printed.find("\\u0000end"), std::string::npos) << printed;
  absl::StatusOr<JsonValue> reparsed = parseJson(printed);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status() << "\n" << printed;
  EXPECT_EQ(*reparsed, value);
  EXPECT_EQ(printJson(*reparsed), printed);
  EXPECT_EQ(printJson(JsonValue::makeNumber(INFINITY)), "null");
  EXPECT_EQ(printJson(JsonValue::makeNumber(NAN)), "null");
  EXPECT_EQ(printJson(JsonValue::makeNumber(1e300)), "1e+300");
}

} // namespace
} // namespace sinter::formats
