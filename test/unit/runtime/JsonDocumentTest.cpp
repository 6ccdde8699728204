//===- JsonDocumentTest.cpp - runtime/Formats/JsonDocument.h --------------===//
//
// What the runtime adds to nlohmann::json for untrusted input: the offset of
// every value, duplicate keys, exact 64-bit integers, no byte-order mark and
// no NUL byte, depth and value limits, and one-line errors with the offset
// where reading stopped; and that the writer is compact, keeps member order
// and escapes as RFC 8259 asks.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/JsonDocument.h"

#include "runtime/Formats/AbslCompat.h"

#include "absl/strings/str_cat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace sinter::formats {
namespace {

/// Parses `text` expecting failure at `offset` with a reason containing
/// `substring`, reported in one printable line.
void expectJsonError(std::string_view text, uint64_t offset,
                     std::string_view substring,
                     const JsonLimits &limits = {}) {
  SCOPED_TRACE(std::string(text.substr(0, 60)));
  JsonError error;
  absl::StatusOr<JsonDocument> document =
      JsonDocument::parse(text, limits, &error);
  ASSERT_FALSE(document.ok());
  EXPECT_EQ(error.offset, offset) << error.message;
  EXPECT_NE(error.message.find(substring), std::string::npos) << error.message;
  EXPECT_EQ(document.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(toStd(document.status().message()),
            absl::StrCat("byte offset ", offset, ": ", error.message));
  for (char c : error.message)
    EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 && c != 0x7F)
        << error.message;
}

TEST(JsonDocumentTest, ParsesValuesWithTheirOffsets) {
  absl::StatusOr<JsonDocument> document = JsonDocument::parse(
      R"( {"a": [1, -2.5, true, false, null, "s"], "b": {}, "c": []} )");
  ASSERT_TRUE(document.ok()) << document.status();
  const Json &root = document->root();
  ASSERT_TRUE(root.is_object());
  EXPECT_EQ(document->offsetOf(root), 1u);
  // File order is kept.
  std::vector<std::string> keys;
  for (const auto &[key, value] : root.items())
    keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "b", "c"}));
  const Json *a = findMember(root, "a");
  ASSERT_TRUE(a && a->is_array());
  ASSERT_EQ(a->size(), 6u);
  EXPECT_EQ(document->offsetOf(*a), 7u);
  EXPECT_EQ(document->offsetOf((*a)[0]), 8u);
  EXPECT_EQ(document->offsetOf((*a)[1]), 11u);
  EXPECT_EQ(document->offsetOf((*a)[2]), 17u);
  EXPECT_EQ(document->offsetOf((*a)[4]), 30u);
  EXPECT_EQ(document->offsetOf((*a)[5]), 36u);
  EXPECT_EQ(document->offsetOf(*findMember(root, "b")), 47u);
  EXPECT_EQ(document->offsetOf(*findMember(root, "c")), 56u);
  EXPECT_TRUE((*a)[0].is_number_integer());
  EXPECT_EQ((*a)[0].get<int64_t>(), 1);
  EXPECT_TRUE((*a)[1].is_number_float());
  EXPECT_EQ((*a)[1].get<double>(), -2.5);
  EXPECT_TRUE((*a)[4].is_null());
  EXPECT_EQ((*a)[5].get<std::string>(), "s");
  EXPECT_EQ(findMember(root, "zzz"), nullptr);
  EXPECT_EQ(findMember(*a, "a"), nullptr); // not an object
  // A value from elsewhere has no offset here.
  Json other = 1;
  EXPECT_EQ(document->offsetOf(other), 0u);
  // Any value may be the top level; offsets survive moving the document.
  absl::StatusOr<JsonDocument> scalar = JsonDocument::parse("  42");
  ASSERT_TRUE(scalar.ok());
  JsonDocument moved = *std::move(scalar);
  EXPECT_EQ(moved.root().get<int64_t>(), 42);
  EXPECT_EQ(moved.offsetOf(moved.root()), 2u);
}

TEST(JsonDocumentTest, OffsetsAfterEscapesNumbersAndNesting) {
  std::string text = R"({"k\"ey": "v\\\"", "n": [[1e3, -0], {"x": 12}], )"
                     R"("t":true})";
  absl::StatusOr<JsonDocument> document = JsonDocument::parse(text);
  ASSERT_TRUE(document.ok()) << document.status();
  const Json &root = document->root();
  EXPECT_EQ(document->offsetOf(root["k\"ey"]), text.find("\"v"));
  const Json &n = root["n"];
  EXPECT_EQ(document->offsetOf(n), text.find("[["));
  EXPECT_EQ(document->offsetOf(n[0][0]), text.find("1e3"));
  EXPECT_EQ(document->offsetOf(n[0][1]), text.find("-0"));
  EXPECT_EQ(document->offsetOf(n[1]), text.find("{\"x"));
  EXPECT_EQ(document->offsetOf(n[1]["x"]), text.find("12"));
  EXPECT_EQ(document->offsetOf(root["t"]), text.find("true"));
  EXPECT_EQ(root["k\"ey"].get<std::string>(), "v\\\"");
}

TEST(JsonDocumentTest, IntegersAreExactInt64) {
  EXPECT_EQ(JsonDocument::parse("9223372036854775807")->root().get<int64_t>(),
            INT64_MAX);
  EXPECT_EQ(JsonDocument::parse("-9223372036854775808")->root().get<int64_t>(),
            INT64_MIN);
  // 2^53 + 1 would round as a double.
  absl::StatusOr<JsonDocument> document =
      JsonDocument::parse("9007199254740993");
  ASSERT_TRUE(document.ok()) << document.status();
  const Json &exact = document->root();
  EXPECT_TRUE(exact.is_number_integer());
  EXPECT_FALSE(exact.is_number_unsigned());
  EXPECT_EQ(exact.get<int64_t>(), 9007199254740993);
  expectJsonError("[9223372036854775808]", 1,
                  "integer 9223372036854775808 does not fit in 64 bits");
  expectJsonError("[18446744073709551615]", 1, "does not fit in 64 bits");
  expectJsonError("-9223372036854775809", 0, "does not fit in 64 bits");
  expectJsonError(
      "123456789012345678901234567890123456789012345678901234567890", 0,
      "integer 1234567890123456789012345678901234567890... does not fit");
  expectJsonError("[1, 1e400]", 4, "number 1e400 is out of the range");
  EXPECT_EQ(JsonDocument::parse("1.5e3")->root().get<double>(), 1500.0);
}

TEST(JsonDocumentTest, RejectsDuplicateKeys) {
  expectJsonError(R"({"a": 1, "a": 2})", 9, "duplicate key \"a\"");
  // Keys compare after escape decoding.
  expectJsonError(R"({"a": 1, "\u0061": 2})", 9, "duplicate key \"a\"");
  expectJsonError(R"({"x": {"k": 1, "k": 1}})", 15, "duplicate key \"k\"");
  expectJsonError("{\"\\n\": 1, \"\\n\": 2}", 10, "duplicate key \"\\u000a\"");
  // The same key in different objects is fine.
  EXPECT_TRUE(JsonDocument::parse(R"({"x": {"k": 1}, "y": {"k": 1}})").ok());
}

TEST(JsonDocumentTest, RejectsWhatRfc8259Does) {
  // A byte-order mark and NUL bytes, which nlohmann alone would accept.
  expectJsonError("\xEF\xBB\xBF{}", 0, "unexpected byte 0xef");
  expectJsonError(std::string("{}\0", 3), 2,
                  "unexpected byte 0x00 after the JSON value");
  expectJsonError(std::string("{}\0{\"hidden\": 1}", 16), 2, "byte 0x00");
  expectJsonError(std::string("{\"a\": \0}", 8), 6, "unexpected byte 0x00");
  expectJsonError(std::string("[1, \"a\0\"]", 9), 6, "unexpected byte 0x00");
  // nlohmann's grammar: each case names the byte where reading stopped.
  expectJsonError("", 0, "unexpected end of input");
  expectJsonError("{} x", 3, "invalid literal");
  expectJsonError("{}{}", 2, "expected end of input");
  expectJsonError("[1,]", 3, "unexpected ']'");
  expectJsonError("{\"a\" 1}", 5, "expected ':'");
  expectJsonError("{'a': 1}", 1, "invalid literal");
  expectJsonError("[1, 2", 5, "unexpected end of input");
  expectJsonError("01", 1, "expected end of input");
  expectJsonError("NaN", 0, "invalid literal");
  expectJsonError("// c\n1", 0, "invalid literal");
  expectJsonError(R"("\ud800")", 7, "surrogate");
  expectJsonError("\"a\nb\"", 2, "control character");
  // A raw invalid byte is written as \xNN, so the message stays printable.
  expectJsonError("[\"\xFF\"]", 2, "ill-formed UTF-8 byte");
  expectJsonError("\"\xC0\xAF\"", 1, "ill-formed UTF-8 byte"); // overlong '/'
}

TEST(JsonDocumentTest, EnforcesLimits) {
  std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(JsonDocument::parse(ok).ok());
  std::string deep = std::string(65, '[') + std::string(65, ']');
  expectJsonError(deep, 64, "nesting deeper than 64 levels");
  // Far deeper than any stack could recurse: still a clean error.
  expectJsonError(std::string(1000000, '['), 64, "nesting deeper");
  std::string objects;
  for (int i = 0; i < 100; ++i)
    objects += "{\"a\":";
  expectJsonError(objects, 5 * 64, "nesting deeper");
  JsonLimits shallow;
  shallow.maxDepth = 2;
  EXPECT_TRUE(JsonDocument::parse("[[1]]", shallow).ok());
  expectJsonError("[[[1]]]", 2, "nesting deeper than 2 levels", shallow);
  JsonLimits few;
  few.maxValues = 4;
  EXPECT_TRUE(JsonDocument::parse("[1, 2, 3]", few).ok());
  expectJsonError("[1, 2, 3, 4]", 10, "more than 4 values", few);
}

TEST(JsonDocumentTest, WritesCompactOrderedJson) {
  Json value = Json::object();
  value["z"] = INT64_MIN;
  value["a"] = Json::array({Json(nullptr), true, Json::array()});
  value["str"] =
      std::string("q\"\\/\n\t\x01\x1F\x7F\xC3\xA9\0end", 15); // NUL kept
  value["obj"] = Json::object();
  value["big"] = int64_t(9007199254740993);
  std::string text = writeJson(value);
  EXPECT_EQ(text, "{\"z\":-9223372036854775808,\"a\":[null,true,[]],"
                  "\"str\":\"q\\\"\\\\/\\n\\t\\u0001\\u001f\x7F\xC3\xA9"
                  "\\u0000end\",\"obj\":{},\"big\":9007199254740993}");
  absl::StatusOr<JsonDocument> back = JsonDocument::parse(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->root(), value);
  EXPECT_EQ(writeJson(back->root()), text);
  // Doubles read back bit for bit; non-finite ones, which JSON cannot
  // express, are written as null.
  for (double d : {0.1, 3e-4, 2.0, 5e-324, 1e300, -0.0}) {
    std::string written = writeJson(Json(d));
    EXPECT_EQ(JsonDocument::parse(written)->root().get<double>(), d) << written;
  }
  EXPECT_EQ(writeJson(Json(INFINITY)), "null");
  // Invalid UTF-8 cannot be written as JSON; it becomes U+FFFD instead of
  // failing (callers check first).
  EXPECT_EQ(writeJson(Json("a\xFF")), "\"a\xEF\xBF\xBD\"");
}

} // namespace
} // namespace sinter::formats
