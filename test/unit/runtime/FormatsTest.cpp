//===- FormatsTest.cpp - tests of the .npy / .safetensors / JSON code -----===//
//
// Round trips for every dtype, one case per malformed-input rule (checking
// the one-line "<file>: byte offset N: why" message), JSON grammar edge
// cases, atomic-write failure paths, cross-checks against numpy (and the
// safetensors Python package when it is installed), and two randomized
// tests: random tensors round-trip bit for bit, and randomly mutated files
// never crash the readers.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Formats/HostTensor.h"
#include "runtime/Formats/Json.h"
#include "runtime/Formats/Npy.h"
#include "runtime/Formats/SafeTensors.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "test/unit/runtime/TestFiles.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

#ifndef SINTER_TEST_PYTHON
#define SINTER_TEST_PYTHON "/usr/bin/python3"
#endif

namespace sinter::formats {
namespace {

namespace fs = std::filesystem;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

using sinter::test::readFile;
using sinter::test::writeFile;

struct TempDir : sinter::test::TempDir {
  TempDir() : sinter::test::TempDir("sinter-formats") {}
};



std::string_view asBytes(const std::vector<uint8_t> &data) {
  return std::string_view(reinterpret_cast<const char *>(data.data()),
                          data.size());
}

/// Checks the error contract: failed, one line, starts with `name: `, and
/// contains `substring`.
void expectError(const absl::Status &status, std::string_view name,
                 std::string_view substring) {
  ASSERT_FALSE(status.ok())
      << "expected an error containing '" << substring << "'";
  std::string_view message = toStd(status.message());
  EXPECT_EQ(message.substr(0, name.size() + 2),
            absl::StrCat(toAbsl(name), ": "))
      << message;
  EXPECT_NE(message.find(substring), std::string_view::npos)
      << "message: " << message << "\nexpected to contain: " << substring;
  EXPECT_EQ(message.find('\n'), std::string_view::npos) << message;
}

/// A tensor of `dtype` and `shape` with random bytes (0/1 for Bool).
HostTensor randomTensor(DType dtype, std::vector<int64_t> shape,
                        std::mt19937_64 &rng) {
  absl::StatusOr<HostTensor> tensor = HostTensor::zeros(dtype, shape);
  EXPECT_TRUE(tensor.ok()) << tensor.status();
  for (uint8_t &byte : tensor->data)
    byte = dtype == DType::Bool ? rng() & 1 : static_cast<uint8_t>(rng());
  return *tensor;
}

std::string littleEndian(uint64_t value, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xFF);
  return out;
}

/// A .npy file with the given header dict text (no padding) and data.
std::string rawNpy(std::string_view dict, std::string_view data,
                   int major = 1) {
  std::string header = absl::StrCat(toAbsl(dict), "\n");
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  out += littleEndian(header.size(), major == 1 ? 2 : 4);
  return absl::StrCat(out, header, toAbsl(data));
}

/// A .safetensors file with the given header text and data section.
std::string rawSafeTensors(std::string_view header, std::string_view data) {
  return absl::StrCat(littleEndian(header.size(), 8), toAbsl(header),
                      toAbsl(data));
}

/// Runs `script` with the test Python and `args`; returns its exit status.
int runPython(const TempDir &dir, std::string_view script,
              const std::string &args) {
  std::string scriptPath = dir.file("check.py");
  writeFile(scriptPath, script);
  std::string command =
      absl::StrCat(SINTER_TEST_PYTHON, " ", scriptPath, " ", args, " 2>&1");
  return std::system(command.c_str());
}

bool havePythonModule(std::string_view module) {
  std::string command = absl::StrCat(SINTER_TEST_PYTHON, " -c 'import ",
                                     toAbsl(module), "' >/dev/null 2>&1");
  return std::system(command.c_str()) == 0;
}

//===----------------------------------------------------------------------===//
// HostTensor
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

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

TEST(JsonTest, IsValidUtf8) {
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

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

const std::vector<std::vector<int64_t>> kShapes = {
    {}, {0}, {1}, {7}, {2, 3}, {3, 0, 2}, {2, 1, 3, 2}};

TEST(NpyTest, RoundTripsEveryDType) {
  TempDir dir;
  std::mt19937_64 rng(1);
  for (DType dtype : kAllDTypes) {
    if (dtype == DType::BF16)
      continue;
    for (const std::vector<int64_t> &shape : kShapes) {
      SCOPED_TRACE(absl::StrCat(toAbsl(dtypeName(dtype)), " [",
                                absl::StrJoin(shape, ","), "]"));
      HostTensor tensor = randomTensor(dtype, shape, rng);
      absl::StatusOr<std::string> bytes = serializeNpy(tensor);
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      absl::StatusOr<HostTensor> back = parseNpy(*bytes, "mem.npy");
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(*back, tensor);

      std::string path = dir.file("t.npy");
      ASSERT_TRUE(writeNpy(path, tensor).ok());
      EXPECT_EQ(readFile(path), *bytes);
      absl::StatusOr<HostTensor> fromFile = readNpy(path);
      ASSERT_TRUE(fromFile.ok()) << fromFile.status();
      EXPECT_EQ(*fromFile, tensor);
    }
  }
}

TEST(NpyTest, HeaderIsAlignedLikeNumpy) {
  HostTensor tensor = *HostTensor::zeros(DType::F32, {2, 3});
  std::string bytes = *serializeNpy(tensor);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t headerSize = static_cast<unsigned char>(bytes[8]) |
                      static_cast<unsigned char>(bytes[9]) << 8;
  EXPECT_EQ((10 + headerSize) % 64, 0u);
  EXPECT_EQ(bytes.size(), 10 + headerSize + 24);
  std::string header = bytes.substr(10, headerSize);
  std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(header.substr(0, dict.size()), dict);
  // Then numpy's growth-axis spare room, the alignment padding and '\n'.
  EXPECT_EQ(header.find_first_not_of(' ', dict.size()), header.size() - 1);
  EXPECT_EQ(header.back(), '\n');
  // 1-d shapes are written as Python 1-tuples.
  std::string oneD = *serializeNpy(*HostTensor::zeros(DType::U8, {5}));
  EXPECT_NE(oneD.find("'shape': (5,), }"), std::string::npos);
  std::string scalar = *serializeNpy(*HostTensor::zeros(DType::I64, {}));
  EXPECT_NE(scalar.find("'shape': (), }"), std::string::npos);
}

TEST(NpyTest, RefusesToWriteBF16) {
  TempDir dir;
  HostTensor tensor = *HostTensor::zeros(DType::BF16, {2});
  std::string path = dir.file("bf16.npy");
  absl::Status status = writeNpy(path, tensor);
  expectError(status, path, "numpy has no BF16 dtype");
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(serializeNpy(tensor).ok());
}

TEST(NpyTest, RefusesToWriteInconsistentTensor) {
  TempDir dir;
  HostTensor tensor = *HostTensor::zeros(DType::F32, {2});
  tensor.data.push_back(0);
  std::string path = dir.file("bad.npy");
  expectError(writeNpy(path, tensor), path,
              "needs 8 bytes but the tensor "
              "holds 9");
  EXPECT_FALSE(fs::exists(path));
}

TEST(NpyTest, ReadsVersions2And3) {
  std::string data = littleEndian(0x3F800000, 4) + littleEndian(0x40000000, 4);
  for (int major : {1, 2, 3}) {
    SCOPED_TRACE(major);
    absl::StatusOr<HostTensor> tensor = parseNpy(
        rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
               data, major),
        "v.npy");
    ASSERT_TRUE(tensor.ok()) << tensor.status();
    EXPECT_EQ(tensor->dtype, DType::F32);
    EXPECT_EQ(tensor->shape, std::vector<int64_t>{2});
    EXPECT_EQ(asBytes(tensor->data), data);
  }
  // Other writers' spellings: double quotes, no trailing comma, any key
  // order, '<' on a one-byte type.
  absl::StatusOr<HostTensor> tensor = parseNpy(
      rawNpy(R"({"shape": (1, 2), "fortran_order": False, "descr": "<u1"})",
             "ab"),
      "cnpy.npy");
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_EQ(tensor->dtype, DType::U8);
  EXPECT_EQ(tensor->shape, (std::vector<int64_t>{1, 2}));
}

TEST(NpyTest, AcceptsPython2LongSuffixOnlyBeforeV3) {
  std::string dict = "{'descr': '|u1', 'fortran_order': False, 'shape': "
                     "(2L, 1L), }";
  absl::StatusOr<HostTensor> v1 = parseNpy(rawNpy(dict, "ab", 1), "py2.npy");
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_EQ(v1->shape, (std::vector<int64_t>{2, 1}));
  expectError(parseNpy(rawNpy(dict, "ab", 3), "py2.npy").status(), "py2.npy",
              "expected ',' or ')'");
}

/// One malformed .npy file and the message it must produce.
struct BadFile {
  const char *what;
  std::string bytes;
  std::string expected;
};

std::string npyDict(std::string_view descr, std::string_view shape,
                    std::string_view fortran = "False") {
  return absl::StrCat("{'descr': '", toAbsl(descr),
                      "', 'fortran_order': ", toAbsl(fortran),
                      ", 'shape': ", toAbsl(shape), ", }");
}

TEST(NpyTest, RejectsMalformedFiles) {
  std::string f4x2 = npyDict("<f4", "(2,)");
  std::string rank33 = "(";
  for (int i = 0; i < 33; ++i)
    rank33 += "1, ";
  rank33 += ")";
  std::string longHeader = rawNpy(f4x2, std::string(8, '\0'), 2);
  longHeader.replace(8, 4, littleEndian(20000, 4));

  std::vector<BadFile> cases = {
      {"empty", "", "byte offset 0: file is too short to be .npy (0 bytes"},
      {"short", "\x93NUMPY\x01", "too short"},
      {"bad magic", std::string("\x93NUMPZ\x01\x00\x00\x00", 10),
       "byte offset 0: not a .npy file (bad magic"},
      {"text file", "hello world, not numpy", "bad magic"},
      {"version 4.0", std::string("\x93NUMPY\x04\x00\x00\x00", 10),
       "byte offset 6: unsupported .npy version 4.0"},
      {"version 1.1", std::string("\x93NUMPY\x01\x01\x00\x00", 10),
       "unsupported .npy version 1.1"},
      {"v2 cut in length", std::string("\x93NUMPY\x02\x00\x05\x00", 10),
       "byte offset 8: file ends inside the header length"},
      {"header past end", rawNpy(f4x2, "").substr(0, 40),
       "byte offset 8: header length 58 runs past the end of the file (40 "
       "bytes)"},
      {"header over cap", longHeader,
       "byte offset 8: header length 20000 exceeds the limit of 10000"},
      {"not a dict", rawNpy("[1, 2]", ""),
       "byte offset 10: header is not a Python dict"},
      {"missing shape", rawNpy("{'descr': '<f4', 'fortran_order': False}", ""),
       "byte offset 10: header has no 'shape' key"},
      {"extra key",
       rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}",
              ""),
       "byte offset 64: unexpected header key 'x'"},
      {"duplicate key",
       rawNpy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
              "'shape': ()}",
              ""),
       "byte offset 27: duplicate header key 'descr'"},
      {"trailing text", rawNpy(f4x2 + " junk", std::string(8, '\0')),
       "unexpected text after the header dict"},
      {"unterminated string", rawNpy("{'descr': '<f4", ""),
       "byte offset 24: unterminated string in the header"},
      {"escape in string", rawNpy("{'descr': '<f\\4'}", ""),
       "byte offset 23: escapes are not supported in header strings"},
      {"fortran order", rawNpy(npyDict("<f4", "(2, 2)", "True"), ""),
       "byte offset 44: Fortran-order arrays are not supported"},
      {"fortran as int", rawNpy(npyDict("<f4", "(2,)", "1"), ""),
       "fortran_order must be True or False"},
      {"big endian", rawNpy(npyDict(">f4", "(2,)"), std::string(8, '\0')),
       "byte offset 20: descr '>f4': big-endian data is not supported"},
      {"object array", rawNpy(npyDict("|O", "(2,)"), std::string(16, '\0')),
       "descr '|O': object arrays are not supported"},
      {"unicode strings", rawNpy(npyDict("<U10", "(2,)"), ""),
       "descr '<U10': unsupported dtype"},
      {"uint32", rawNpy(npyDict("<u4", "(2,)"), ""),
       "descr '<u4': unsupported dtype"},
      {"structured",
       rawNpy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': "
              "(1,), }",
              ""),
       "byte offset 20: structured dtypes are not supported"},
      {"int shape", rawNpy(npyDict("<f4", "3"), ""),
       "shape must be a tuple of integers"},
      {"shape (3)", rawNpy(npyDict("<f4", "(3)"), ""),
       "shape must be a tuple; a 1-d shape is written (n,)"},
      {"negative dim", rawNpy(npyDict("<f4", "(2, -1)"), ""),
       "shape dimensions must not be negative"},
      {"float dim", rawNpy(npyDict("<f4", "(2.5,)"), ""),
       "expected ',' or ')'"},
      {"leading zeros", rawNpy(npyDict("<f4", "(02,)"), ""),
       "leading zeros are not allowed"},
      {"huge dim", rawNpy(npyDict("<f4", "(99999999999999999999,)"), ""),
       "byte offset 61: shape dimension 99999999999999999999 does not fit"},
      {"rank 33", rawNpy(npyDict("<f4", rank33), ""),
       "shape has more than 32 dimensions"},
      {"element overflow",
       rawNpy(npyDict("<f4", "(4611686018427387904, 4)"), ""),
       "byte offset 60: element count of shape [4611686018427387904,4] "
       "overflows"},
      {"byte overflow", rawNpy(npyDict("<f8", "(2305843009213693952,)"), ""),
       "byte size of F64 shape [2305843009213693952] overflows"},
      // A terabyte claim must fail on the size check, not on allocation.
      {"huge claim", rawNpy(npyDict("<f4", "(1099511627776,)"), "abcd"),
       "truncated: F32 shape (1099511627776) needs 4398046511104 bytes of "
       "data but the file has 4"},
      {"truncated data", rawNpy(f4x2, std::string(7, '\0')),
       "truncated: F32 shape (2) needs 8 bytes of data but the file has 7"},
      {"trailing data", rawNpy(f4x2, std::string(9, '\0')),
       "1 unexpected bytes after the 8 bytes of array data"},
      {"bool not 0/1", rawNpy(npyDict("|b1", "(3,)"), std::string("\1\0\2", 3)),
       "bool element 2 is 2, not 0 or 1"},
  };
  for (const BadFile &bad : cases) {
    SCOPED_TRACE(bad.what);
    expectError(parseNpy(bad.bytes, "bad.npy").status(), "bad.npy",
                bad.expected);
  }

  // The same checks through the file reader, which reports the path.
  TempDir dir;
  std::string path = dir.file("trunc.npy");
  writeFile(path, rawNpy(f4x2, std::string(7, '\0')));
  expectError(readNpy(path).status(), path, "truncated");
}

TEST(NpyTest, ReadErrorsNameThePath) {
  TempDir dir;
  std::string missing = dir.file("missing.npy");
  absl::Status status = readNpy(missing).status();
  expectError(status, missing, "No such file or directory");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  expectError(readNpy(dir.path).status(), dir.path, "not a regular file");
}

const char kNumpyWriteScript[] = R"PY(
import os, sys
import numpy as np
out = sys.argv[1]
cases = {
    'f8': np.array([[0.5, -1.25, 3.0], [np.inf, -0.0, 1e300]], dtype='<f8'),
    'f4': np.array([[1.0, -2.5], [np.nan, 3.4e38]], dtype='<f4'),
    'f2': np.array([1.5, -2.0, 65504.0], dtype='<f2'),
    'i8': np.array([-2**63, 2**63 - 1, 0], dtype='<i8'),
    'i4': np.arange(-6, 6, dtype='<i4').reshape(3, 4),
    'i2': np.array([-32768, 32767], dtype='<i2'),
    'i1': np.array([-128, 127, 0], dtype='|i1'),
    'u1': np.arange(256, dtype='|u1'),
    'u2': np.array([0, 65535, 258], dtype='<u2'),
    'b1': np.array([[True, False], [False, True]]),
    'scalar': np.array(3.5, dtype='<f4'),
    'empty': np.zeros((0, 3), dtype='<f4'),
    'big': np.arange(1000, dtype='<i4').reshape(10, 100),
    'wide': np.zeros((123456789012, 0), dtype='<f8'),
}
for name, a in cases.items():
    np.save(os.path.join(out, name + '.npy'), a)
    with open(os.path.join(out, name + '.bin'), 'wb') as f:
        f.write(a.tobytes())
    with open(os.path.join(out, name + '.shape'), 'w') as f:
        f.write(' '.join(map(str, a.shape)))
)PY";

TEST(NpyTest, ReadsWhatNumpyWrites) {
  if (!havePythonModule("numpy"))
    GTEST_SKIP() << SINTER_TEST_PYTHON << " cannot import numpy";
  TempDir dir;
  ASSERT_EQ(runPython(dir, kNumpyWriteScript, dir.path), 0);
  std::vector<std::pair<std::string, DType>> cases = {
      {"f8", DType::F64},  {"f4", DType::F32},     {"f2", DType::F16},
      {"i8", DType::I64},  {"i4", DType::I32},     {"i2", DType::I16},
      {"i1", DType::I8},   {"u1", DType::U8},      {"u2", DType::U16},
      {"b1", DType::Bool}, {"scalar", DType::F32}, {"empty", DType::F32},
      {"big", DType::I32}, {"wide", DType::F64}};
  for (const auto &[name, dtype] : cases) {
    SCOPED_TRACE(name);
    std::string path = dir.file(name + ".npy");
    absl::StatusOr<HostTensor> tensor = readNpy(path);
    ASSERT_TRUE(tensor.ok()) << tensor.status();
    EXPECT_EQ(tensor->dtype, dtype);
    EXPECT_EQ(asBytes(tensor->data), readFile(dir.file(name + ".bin")));
    std::vector<int64_t> shape;
    for (absl::string_view dim : absl::StrSplit(
             readFile(dir.file(name + ".shape")), ' ', absl::SkipEmpty()))
      shape.push_back(std::stoll(std::string(dim)));
    EXPECT_EQ(tensor->shape, shape);
    // Our writer reproduces numpy's bytes exactly.
    absl::StatusOr<std::string> ours = serializeNpy(*tensor);
    ASSERT_TRUE(ours.ok()) << ours.status();
    EXPECT_EQ(*ours, readFile(path));
  }
}

const char kNumpyReadScript[] = R"PY(
import os, sys
import numpy as np
d = sys.argv[1]
count = 0
for name in sorted(os.listdir(d)):
    if not name.endswith('.npy'):
        continue
    stem = os.path.join(d, name[:-4])
    descr, shape = open(stem + '.meta').read().split(';')
    shape = tuple(int(x) for x in shape.split()) if shape.strip() else ()
    for mmap in (None, 'r'):
        a = np.load(stem + '.npy', mmap_mode=mmap, allow_pickle=False)
        assert a.dtype.str == descr, (name, a.dtype.str, descr)
        assert a.shape == shape, (name, a.shape, shape)
        assert a.tobytes() == open(stem + '.bin', 'rb').read(), name
    count += 1
print('numpy loaded', count, 'files')
sys.exit(0 if count > 0 else 1)
)PY";

TEST(NpyTest, NumpyReadsWhatWeWrite) {
  if (!havePythonModule("numpy"))
    GTEST_SKIP() << SINTER_TEST_PYTHON << " cannot import numpy";
  TempDir dir;
  std::mt19937_64 rng(7);
  int index = 0;
  for (DType dtype : kAllDTypes) {
    if (dtype == DType::BF16)
      continue;
    for (const std::vector<int64_t> &shape : kShapes) {
      HostTensor tensor = randomTensor(dtype, shape, rng);
      std::string stem = dir.file(absl::StrCat("t", index++));
      ASSERT_TRUE(writeNpy(stem + ".npy", tensor).ok());
      writeFile(stem + ".bin", asBytes(tensor.data));
      writeFile(stem + ".meta", absl::StrCat(toAbsl(*npyDescr(dtype)), ";",
                                             absl::StrJoin(shape, " ")));
    }
  }
  EXPECT_EQ(runPython(dir, kNumpyReadScript, dir.path), 0);
}

//===----------------------------------------------------------------------===//
// .safetensors
//===----------------------------------------------------------------------===//

SafeTensorsFile everyDTypeFile(std::mt19937_64 &rng) {
  SafeTensorsFile file;
  int index = 0;
  for (DType dtype : kAllDTypes) {
    const std::vector<int64_t> &shape = kShapes[index % kShapes.size()];
    file.tensors.emplace_back(
        absl::StrCat("layer", index++, ".", toAbsl(dtypeName(dtype))),
        randomTensor(dtype, shape, rng));
    // Odd sizes so later tensors start at unaligned offsets.
    file.tensors.emplace_back(absl::StrCat("odd", index++),
                              randomTensor(dtype, {3}, rng));
  }
  return file;
}

TEST(SafeTensorsTest, RoundTripsEveryDType) {
  TempDir dir;
  std::mt19937_64 rng(3);
  SafeTensorsFile file = everyDTypeFile(rng);
  file.metadata = {{"step", "1200"}, {"note", "caf\xC3\xA9 \"quoted\""}};
  absl::StatusOr<std::string> bytes = serializeSafeTensors(file);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<SafeTensorsFile> back = parseSafeTensors(*bytes, "m");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->tensors, file.tensors);
  std::map<std::string, std::string> expected = file.metadata;
  expected["format"] = "pt";
  EXPECT_EQ(back->metadata, expected);

  std::string path = dir.file("model.safetensors");
  ASSERT_TRUE(writeSafeTensors(path, file).ok());
  EXPECT_EQ(readFile(path), *bytes);
  absl::StatusOr<SafeTensorsFile> fromFile = readSafeTensors(path);
  ASSERT_TRUE(fromFile.ok()) << fromFile.status();
  EXPECT_EQ(fromFile->tensors, file.tensors);
  ASSERT_NE(fromFile->find("layer0.F64"), nullptr);
  EXPECT_EQ(fromFile->find("nope"), nullptr);
}

TEST(SafeTensorsTest, HeaderLayout) {
  SafeTensorsFile file;
  file.tensors.emplace_back("w", *HostTensor::zeros(DType::F32, {2, 2}));
  file.tensors.emplace_back("b", *HostTensor::zeros(DType::U8, {3}));
  std::string bytes = *serializeSafeTensors(file);
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = headerSize << 8 | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ(headerSize % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + headerSize + 19);
  std::string header = bytes.substr(8, headerSize);
  EXPECT_EQ(header.front(), '{');
  std::string json = header.substr(0, header.find_last_not_of(' ') + 1);
  EXPECT_EQ(json, R"({"__metadata__":{"format":"pt"},)"
                  R"("w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                  R"("b":{"dtype":"U8","shape":[3],"data_offsets":[16,19]}})");
  EXPECT_EQ(header.substr(json.size()),
            std::string(headerSize - json.size(), ' '));
}

TEST(SafeTensorsTest, KeepsCallerMetadata) {
  SafeTensorsFile file;
  file.metadata = {{"format", "mlx"}, {"kept", "x"}};
  absl::StatusOr<SafeTensorsFile> back =
      parseSafeTensors(*serializeSafeTensors(file), "m");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->metadata, file.metadata);
  EXPECT_TRUE(back->tensors.empty());
}

TEST(SafeTensorsTest, AcceptsWhatTheReferenceAccepts) {
  // Header keys out of offset order, leading whitespace (the reference's
  // test_whitespace_leading_padded_header), trailing padding, zero-size and
  // rank-0 tensors, and no __metadata__.
  std::string header =
      "\t\n{\"b\": {\"dtype\": \"I16\", \"shape\": [], \"data_offsets\": [4, "
      "6]}, \"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": "
      "[0, 4]}, \"z\": {\"dtype\": \"F64\", \"shape\": [0, 3], "
      "\"data_offsets\": [6, 6]}, \"y\": {\"dtype\": \"BOOL\", \"shape\": "
      "[0], \"data_offsets\": [6, 6]}}   ";
  absl::StatusOr<SafeTensorsFile> file =
      parseSafeTensors(rawSafeTensors(header, "abcdef"), "ok.safetensors");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ(file->tensors.size(), 4u);
  EXPECT_EQ(file->tensors[0].first, "b"); // header order, not offset order
  EXPECT_EQ(asBytes(file->tensors[0].second.data), "ef");
  EXPECT_TRUE(file->tensors[0].second.shape.empty());
  EXPECT_EQ(asBytes(file->tensors[1].second.data), "abcd");
  EXPECT_TRUE(file->tensors[2].second.data.empty());
  EXPECT_TRUE(file->metadata.empty());
  // An empty checkpoint, and null metadata (the reference reads it as None).
  EXPECT_TRUE(parseSafeTensors(rawSafeTensors("{}", ""), "e").ok());
  EXPECT_TRUE(
      parseSafeTensors(rawSafeTensors("{\"__metadata__\":null}", ""), "e")
          .ok());
}

std::string entry(std::string_view dtype, std::string_view shape,
                  std::string_view offsets) {
  return absl::StrCat("{\"dtype\":\"", toAbsl(dtype),
                      "\",\"shape\":", toAbsl(shape),
                      ",\"data_offsets\":", toAbsl(offsets), "}");
}

TEST(SafeTensorsTest, RejectsMalformedFiles) {
  std::string w = entry("F32", "[2,2]", "[0,16]");
  std::string data16(16, '\0');
  std::string tooLong = littleEndian(100'000'001, 8) + "{}";
  std::string pastEnd = littleEndian(1000, 8) + "{}";
  std::string rank33 = "[";
  for (int i = 0; i < 33; ++i)
    rank33 += i ? ",1" : "1";
  rank33 += "]";
  // Ten tensors all claiming the same bytes: the reference's test_json_attack.
  std::string attack = "{";
  for (int i = 0; i < 10; ++i)
    attack += absl::StrCat(i ? "," : "", "\"weight_", i, "\":", w);
  attack += "}";

  std::vector<BadFile> cases = {
      {"empty", "",
       "byte offset 0: file is too short for a safetensors header length (0 "
       "bytes; need 8)"},
      {"7 bytes", "\x02\0\0\0\0\0\0", "too short"},
      {"header over cap", tooLong,
       "byte offset 0: header length 100000001 exceeds the limit of "
       "100000000 bytes"},
      {"header past end", pastEnd,
       "byte offset 0: header length 1000 runs past the end of the file (10 "
       "bytes)"},
      {"all ones length", std::string(8, '\xFF'), "exceeds the limit"},
      {"not JSON", rawSafeTensors("{\"w\" " + w + "}", data16),
       "byte offset 13: header is not valid JSON: expected ':' after an "
       "object key"},
      {"first byte", rawSafeTensors("xyz", ""),
       "byte offset 8: header is not valid JSON: unexpected 'x', expected a "
       "value"},
      {"missing comma",
       rawSafeTensors("{\"w\":" + w + " \"v\":" + w + "}", data16),
       "header is not valid JSON: expected ',' or '}'"},
      {"invalid UTF-8", rawSafeTensors("{\"\xFF\":" + w + "}", data16),
       "byte offset 10: header is not valid JSON: invalid UTF-8"},
      {"duplicate tensor",
       rawSafeTensors("{\"w\":" + w + ",\"w\":" + w + "}", data16),
       "header is not valid JSON: duplicate key \"w\""},
      {"NUL padding", rawSafeTensors(std::string("{}\0\0\0\0\0\0", 8), ""),
       "byte offset 10: header is not valid JSON: unexpected byte 0x00"},
      {"array header", rawSafeTensors("[]", ""),
       "byte offset 8: header is not a JSON object"},
      {"metadata not object", rawSafeTensors("{\"__metadata__\":[\"pt\"]}", ""),
       "byte offset 24: __metadata__ must be an object"},
      {"metadata nested",
       rawSafeTensors("{\"__metadata__\":{\"format\":{\"x\":1}}}", ""),
       "byte offset 34: __metadata__ value of 'format' must be a string"},
      {"entry not object", rawSafeTensors("{\"w\":[0,16]}", data16),
       "byte offset 13: tensor 'w': entry must be an object"},
      {"missing dtype",
       rawSafeTensors("{\"w\":{\"shape\":[4],\"data_offsets\":[0,16]}}",
                      data16),
       "tensor 'w': entry has no dtype"},
      {"missing offsets",
       rawSafeTensors("{\"w\":{\"dtype\":\"F32\",\"shape\":[4]}}", data16),
       "tensor 'w': entry has no data_offsets"},
      {"unknown key",
       rawSafeTensors("{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_"
                      "offsets\":[0,16],\"extra\":1}}",
                      data16),
       "tensor 'w': unexpected key 'extra'"},
      {"unsupported dtype",
       rawSafeTensors("{\"w\":" + entry("U32", "[4]", "[0,16]") + "}", data16),
       "byte offset 22: tensor 'w': unsupported dtype 'U32' (supported: F64, "
       "F32, F16, BF16"},
      {"dtype not string",
       rawSafeTensors("{\"w\":{\"dtype\":4,\"shape\":[4],\"data_offsets\":[0,"
                      "16]}}",
                      data16),
       "dtype must be a string"},
      {"negative dim",
       rawSafeTensors("{\"w\":" + entry("F32", "[-4]", "[0,16]") + "}", data16),
       "tensor 'w': shape must be an array of non-negative integers"},
      {"fractional dim",
       rawSafeTensors("{\"w\":" + entry("F32", "[4.0]", "[0,16]") + "}",
                      data16),
       "shape must be an array of non-negative integers"},
      {"rank 33",
       rawSafeTensors("{\"w\":" + entry("F32", rank33, "[0,4]") + "}",
                      std::string(4, '\0')),
       "tensor 'w': rank 33 exceeds the maximum of 32"},
      // The reference's test_validation_overflow.
      {"element overflow",
       rawSafeTensors(
           "{\"w\":" + entry("F32", "[4611686018427387904,4]", "[0,16]") + "}",
           data16),
       "tensor 'w': element count of shape [4611686018427387904,4] "
       "overflows"},
      {"byte overflow",
       rawSafeTensors(
           "{\"w\":" + entry("I64", "[2305843009213693952]", "[0,16]") + "}",
           data16),
       "tensor 'w': byte size of I64 shape [2305843009213693952] overflows"},
      {"offset beyond int64",
       rawSafeTensors(
           "{\"w\":" + entry("F32", "[4]", "[0,18446744073709551615]") + "}",
           data16),
       "header is not valid JSON: integer 18446744073709551615 does not fit"},
      {"offsets not pair",
       rawSafeTensors("{\"w\":" + entry("F32", "[4]", "[0,16,32]") + "}",
                      data16),
       "data_offsets must be [begin, end]"},
      {"negative offset",
       rawSafeTensors("{\"w\":" + entry("F32", "[0]", "[-4,-4]") + "}", ""),
       "data_offsets must be [begin, end]"},
      {"end before begin",
       rawSafeTensors("{\"w\":" + entry("F32", "[0]", "[16,0]") + "}", data16),
       "tensor 'w': data_offsets [16, 0] end before begin"},
      // The reference's test_invalid_info.
      {"size mismatch",
       rawSafeTensors("{\"w\":" + entry("F32", "[2,2]", "[0,4]") + "}",
                      std::string(4, '\0')),
       "tensor 'w': F32 shape [2, 2] needs 16 bytes but data_offsets [0, 4] "
       "span 4"},
      {"truncated data", rawSafeTensors("{\"w\":" + w + "}", data16.substr(8)),
       "tensor 'w': data_offsets [0, 16] run past the end of the data section "
       "(8 bytes; file truncated?)"},
      {"json attack", rawSafeTensors(attack, data16),
       "(data_offsets [0, 16]) overlaps tensor 'weight_0'"},
      {"partial overlap",
       rawSafeTensors("{\"a\":" + entry("F32", "[2]", "[0,8]") +
                          ",\"b\":" + entry("F32", "[2]", "[4,12]") + "}",
                      std::string(12, '\0')),
       "tensor 'b' (data_offsets [4, 12]) overlaps tensor 'a'"},
      {"hole",
       rawSafeTensors("{\"a\":" + entry("F32", "[1]", "[0,4]") +
                          ",\"b\":" + entry("F32", "[1]", "[8,12]") + "}",
                      std::string(12, '\0')),
       "data section bytes [4, 8) before tensor 'b' belong to no tensor"},
      {"hole at start",
       rawSafeTensors("{\"a\":" + entry("F32", "[1]", "[4,8]") + "}",
                      std::string(8, '\0')),
       "data section bytes [0, 4) before tensor 'a'"},
      // The reference's test_metadata_incomplete_buffer.
      {"trailing bytes", rawSafeTensors("{\"w\":" + w + "}", data16 + "xx"),
       "byte offset 81: 2 trailing bytes after the last tensor (the data "
       "section has 18 bytes, tensors cover 16)"},
      {"data without tensors", rawSafeTensors("{}", "x"),
       "1 trailing bytes after the last tensor"},
      {"bool not 0/1",
       rawSafeTensors("{\"m\":" + entry("BOOL", "[3]", "[0,3]") + "}",
                      std::string("\0\1\7", 3)),
       "tensor 'm': bool element 2 is 7, not 0 or 1"},
      {"control chars in name",
       rawSafeTensors("{\"a\\nb\":" + entry("U8", "[1]", "[0,2]") + "}", "xx"),
       "tensor 'a\\x0ab': U8 shape [1] needs 1 bytes"},
  };
  for (const BadFile &bad : cases) {
    SCOPED_TRACE(bad.what);
    expectError(parseSafeTensors(bad.bytes, "model.safetensors").status(),
                "model.safetensors", bad.expected);
  }

  TempDir dir;
  std::string path = dir.file("short.safetensors");
  writeFile(path, "abc");
  expectError(readSafeTensors(path).status(), path, "too short");
  std::string missing = dir.file("missing.safetensors");
  expectError(readSafeTensors(missing).status(), missing,
              "No such file or directory");
}

TEST(SafeTensorsTest, RejectsBadTensorsOnWrite) {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  auto expectWriteError = [&](const SafeTensorsFile &file,
                              std::string_view expected) {
    expectError(writeSafeTensors(path, file), path, expected);
    EXPECT_FALSE(fs::exists(path));
    EXPECT_FALSE(serializeSafeTensors(file).ok());
  };
  HostTensor good = *HostTensor::zeros(DType::F32, {2});
  HostTensor bad = good;
  bad.data.resize(5);

  SafeTensorsFile file;
  file.tensors = {{"w", bad}};
  expectWriteError(file, "tensor 'w': F32 shape [2] needs 8 bytes but the "
                         "tensor holds 5");
  file.tensors = {{"w", good}, {"w", good}};
  expectWriteError(file, "tensor name 'w' appears twice");
  file.tensors = {{"__metadata__", good}};
  expectWriteError(file, "cannot be named '__metadata__'");
  file.tensors = {{"bad\xFF", good}};
  expectWriteError(file, "tensor name 'bad\\xff' is not valid UTF-8");
  file.tensors = {};
  file.metadata = {{"k", "\xC0"}};
  expectWriteError(file, "metadata entry 'k' is not valid UTF-8");
}

const char kSafeTensorsCheckScript[] = R"PY(
import json, os, struct, sys
import numpy as np
d = sys.argv[1]
descr = {'F64': '<f8', 'F32': '<f4', 'F16': '<f2', 'I64': '<i8',
         'I32': '<i4', 'I16': '<i2', 'I8': '|i1', 'U8': '|u1',
         'U16': '<u2', 'BOOL': '|b1'}
path = os.path.join(d, 'ours.safetensors')
raw = open(path, 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
header = json.loads(raw[8:8 + n])
assert header['__metadata__'] == {'format': 'pt', 'step': '7'}, header
data = raw[8 + n:]
try:
    from safetensors.numpy import load_file, save_file
except ImportError:
    load_file = save_file = None
loaded = load_file(path) if load_file else None
for name, info in header.items():
    if name == '__metadata__' or info['dtype'] not in descr:
        continue
    b, e = info['data_offsets']
    a = np.frombuffer(data[b:e], dtype=descr[info['dtype']])
    a = a.reshape(info['shape'])
    assert a.tobytes() == open(os.path.join(d, name + '.bin'), 'rb').read()
    if loaded is not None:
        assert np.array_equal(loaded[name], a, equal_nan=a.dtype.kind == 'f')
if save_file:
    save_file({'x': np.arange(6, dtype='<f4').reshape(2, 3),
               'mask': np.array([True, False])},
              os.path.join(d, 'theirs.safetensors'), metadata={'k': 'v'})
print('checked', 'with' if loaded is not None else 'without',
      'the safetensors package')
)PY";

TEST(SafeTensorsTest, PythonReadsWhatWeWrite) {
  if (!havePythonModule("numpy"))
    GTEST_SKIP() << SINTER_TEST_PYTHON << " cannot import numpy";
  TempDir dir;
  std::mt19937_64 rng(11);
  SafeTensorsFile file;
  file.metadata = {{"step", "7"}};
  int index = 0;
  for (DType dtype : kAllDTypes) {
    // safetensors.numpy cannot load BF16 (numpy has no such dtype).
    if (dtype == DType::BF16)
      continue;
    for (const std::vector<int64_t> &shape :
         {std::vector<int64_t>{2, 3}, std::vector<int64_t>{5}}) {
      HostTensor tensor = randomTensor(dtype, shape, rng);
      // NaN payloads compare unequal in numpy; keep floats finite.
      if (dtype == DType::F64 || dtype == DType::F32 || dtype == DType::F16)
        for (size_t i = 0; i < tensor.data.size(); ++i)
          if ((i + 1) % dtypeByteSize(dtype) == 0)
            tensor.data[i] &= 0x3F;
      std::string name = absl::StrCat("t", index++);
      writeFile(dir.file(name + ".bin"), asBytes(tensor.data));
      file.tensors.emplace_back(name, std::move(tensor));
    }
  }
  ASSERT_TRUE(writeSafeTensors(dir.file("ours.safetensors"), file).ok());
  ASSERT_EQ(runPython(dir, kSafeTensorsCheckScript, dir.path), 0);
  if (!fs::exists(dir.file("theirs.safetensors")))
    return; // The safetensors package is not installed.
  absl::StatusOr<SafeTensorsFile> theirs =
      readSafeTensors(dir.file("theirs.safetensors"));
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  EXPECT_EQ(theirs->metadata.at("k"), "v");
  const HostTensor *x = theirs->find("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->dtype, DType::F32);
  EXPECT_EQ(x->shape, (std::vector<int64_t>{2, 3}));
  const HostTensor *mask = theirs->find("mask");
  ASSERT_NE(mask, nullptr);
  EXPECT_EQ(mask->dtype, DType::Bool);
  EXPECT_EQ(mask->data, (std::vector<uint8_t>{1, 0}));
}

//===----------------------------------------------------------------------===//
// Atomic writes
//===----------------------------------------------------------------------===//

/// Names in `dir` that look like our temp files.
std::vector<std::string> tempFiles(const std::string &dir) {
  std::vector<std::string> found;
  for (const auto &item : fs::directory_iterator(dir))
    if (item.path().filename().string().find(".tmp.") != std::string::npos)
      found.push_back(item.path().string());
  return found;
}

TEST(AtomicWriteTest, ReplacesExistingFile) {
  TempDir dir;
  std::string path = dir.file("x.npy");
  writeFile(path, "old contents");
  HostTensor tensor = *HostTensor::zeros(DType::I32, {4});
  ASSERT_TRUE(writeNpy(path, tensor).ok());
  EXPECT_EQ(*readNpy(path), tensor);
  EXPECT_TRUE(tempFiles(dir.path).empty());
  // A relative path (no directory part) fsyncs ".".
  std::string cwd = fs::current_path().string();
  fs::current_path(dir.path);
  EXPECT_TRUE(writeNpy("rel.npy", tensor).ok());
  fs::current_path(cwd);
  EXPECT_TRUE(fs::exists(dir.file("rel.npy")));
}

TEST(AtomicWriteTest, FailedRenameLeavesNoTempFile) {
  TempDir dir;
  // A non-empty directory where the file should go: rename() must fail.
  std::string path = dir.file("occupied.safetensors");
  fs::create_directory(path);
  writeFile(path + "/keep", "x");
  SafeTensorsFile file;
  file.tensors.emplace_back("w", *HostTensor::zeros(DType::F32, {2}));
  absl::Status status = writeSafeTensors(path, file);
  expectError(status, path, "rename from " + path + ".tmp.");
  EXPECT_TRUE(tempFiles(dir.path).empty());
  EXPECT_TRUE(fs::is_directory(path));
}

TEST(AtomicWriteTest, MissingDirectoryNamesPathAndErrno) {
  TempDir dir;
  std::string path = dir.file("no/such/dir/x.npy");
  absl::Status status = writeNpy(path, *HostTensor::zeros(DType::U8, {1}));
  expectError(status, path, "cannot create temporary file " + path + ".tmp.");
  EXPECT_NE(status.message().find("No such file or directory"),
            std::string_view::npos);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
}

TEST(AtomicWriteTest, WritesManyPieces) {
  TempDir dir;
  std::string path = dir.file("pieces");
  ASSERT_TRUE(writeFileAtomic(path, {"ab", "", "cde"}).ok());
  EXPECT_EQ(readFile(path), "abcde");
  ASSERT_TRUE(writeFileAtomic(path, {}).ok());
  EXPECT_EQ(readFile(path), "");
}

//===----------------------------------------------------------------------===//
// Randomized
//===----------------------------------------------------------------------===//

std::vector<int64_t> randomShape(std::mt19937_64 &rng) {
  std::vector<int64_t> shape(rng() % 5);
  for (int64_t &dim : shape)
    dim = static_cast<int64_t>(rng() % 6);
  return shape;
}

TEST(PropertyTest, RandomTensorsRoundTrip) {
  TempDir dir;
  constexpr uint64_t kSeed = 20240611;
  std::mt19937_64 rng(kSeed);
  for (int iteration = 0; iteration < 300; ++iteration) {
    SCOPED_TRACE(absl::StrCat("seed ", kSeed, " iteration ", iteration));
    SafeTensorsFile file;
    int count = static_cast<int>(rng() % 6);
    for (int i = 0; i < count; ++i) {
      DType dtype = kAllDTypes[rng() % std::size(kAllDTypes)];
      HostTensor tensor = randomTensor(dtype, randomShape(rng), rng);
      if (dtype != DType::BF16) {
        absl::StatusOr<std::string> npy = serializeNpy(tensor);
        ASSERT_TRUE(npy.ok()) << npy.status();
        absl::StatusOr<HostTensor> back = parseNpy(*npy, "r.npy");
        ASSERT_TRUE(back.ok()) << back.status();
        ASSERT_EQ(*back, tensor);
      }
      file.tensors.emplace_back(absl::StrCat("t", i, "/", rng() % 1000),
                                std::move(tensor));
    }
    if (rng() % 2)
      file.metadata[absl::StrCat("k", rng() % 10)] = "v";
    absl::StatusOr<std::string> bytes = serializeSafeTensors(file);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    absl::StatusOr<SafeTensorsFile> back = parseSafeTensors(*bytes, "r");
    ASSERT_TRUE(back.ok()) << back.status();
    ASSERT_EQ(back->tensors, file.tensors);
    if (iteration % 50 == 0) {
      std::string path = dir.file("r.safetensors");
      ASSERT_TRUE(writeSafeTensors(path, file).ok());
      absl::StatusOr<SafeTensorsFile> fromFile = readSafeTensors(path);
      ASSERT_TRUE(fromFile.ok()) << fromFile.status();
      ASSERT_EQ(fromFile->tensors, file.tensors);
    }
  }
}

/// Applies one random corruption: flip, overwrite, truncate, insert or
/// poke a length field with an extreme value.
void mutate(std::string &bytes, std::mt19937_64 &rng) {
  switch (rng() % 5) {
  case 0:
    if (!bytes.empty())
      bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
    break;
  case 1:
    if (!bytes.empty())
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    break;
  case 2:
    bytes.resize(bytes.empty() ? 0 : rng() % bytes.size());
    break;
  case 3:
    bytes.insert(bytes.empty() ? 0 : rng() % bytes.size(), 1 + rng() % 4,
                 "{[\",:]} 0123456789-eE"[rng() % 22]);
    break;
  case 4: {
    static const uint64_t extremes[] = {
        0, 1, 0xFFFF, 0xFFFFFFFF, UINT64_MAX, uint64_t(1) << 63};
    std::string value = littleEndian(extremes[rng() % 6], 8);
    size_t at = bytes.empty() ? 0 : rng() % bytes.size();
    bytes.replace(at, std::min<size_t>(8, bytes.size() - at), value);
    break;
  }
  }
}

TEST(PropertyTest, MutatedFilesNeverCrash) {
  constexpr uint64_t kSeed = 99;
  std::mt19937_64 rng(kSeed);
  SafeTensorsFile file;
  file.metadata = {{"a", "b"}};
  file.tensors.emplace_back("w", randomTensor(DType::F32, {2, 3}, rng));
  file.tensors.emplace_back("m", randomTensor(DType::Bool, {4}, rng));
  file.tensors.emplace_back("s", randomTensor(DType::I64, {}, rng));
  std::string safetensors = *serializeSafeTensors(file);
  std::string npy = *serializeNpy(randomTensor(DType::I16, {3, 2}, rng));
  int accepted = 0;
  for (int iteration = 0; iteration < 5000; ++iteration) {
    SCOPED_TRACE(absl::StrCat("seed ", kSeed, " iteration ", iteration));
    std::string a = safetensors, b = npy;
    int rounds = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < rounds; ++i) {
      mutate(a, rng);
      mutate(b, rng);
    }
    absl::StatusOr<SafeTensorsFile> st = parseSafeTensors(a, "fuzz");
    if (st.ok())
      ++accepted;
    else
      expectError(st.status(), "fuzz", "");
    absl::StatusOr<HostTensor> np = parseNpy(b, "fuzz");
    if (np.ok())
      ++accepted;
    else
      expectError(np.status(), "fuzz", "");
    if (HasFailure())
      break;
  }
  // Most mutations must be caught (flips inside float data are not).
  EXPECT_LT(accepted, 5000);
}

} // namespace
} // namespace sinter::formats
