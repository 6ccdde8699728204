//===- SafeTensorsTest.cpp - reading and writing .safetensors files -------===//
//
// Round trips for every dtype, the header layout, what the reference
// accepts, one case per malformed-input rule (checking the one-line
// "<file>: byte offset N: why" message), and a cross-check against numpy
// and the safetensors Python package when it is installed.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/SafeTensors.h"

#include "test/unit/runtime/FormatsTestUtil.h"

#include "absl/strings/str_cat.h"

#include <filesystem>

namespace sinter::formats {
namespace {

namespace fs = std::filesystem;
using sinter::test::readFile;
using sinter::test::writeFile;

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

/// A file that exercises every choice the writer makes: metadata order,
/// escapes and UTF-8 in keys and values, every dtype, rank 0, empty
/// tensors, odd byte counts (unaligned offsets), a large dimension, and a
/// header whose length needs padding.
SafeTensorsFile writerGoldenFile() {
  std::mt19937_64 rng(2024);
  SafeTensorsFile file;
  file.metadata = {{"step", "1200"},
                   {"note", "caf\xC3\xA9 \"quoted\" back\\slash \x01\x7F\n\t"},
                   {"\xE2\x82\xAC", "/slash/"}};
  int index = 0;
  for (DType dtype : kAllDTypes) {
    file.tensors.emplace_back(
        absl::StrCat("layer.", index, ".", toAbsl(dtypeName(dtype))),
        randomTensor(dtype, kShapes[index % kShapes.size()], rng));
    file.tensors.emplace_back(absl::StrCat("odd", index),
                              randomTensor(dtype, {3}, rng));
    ++index;
  }
  file.tensors.emplace_back("z\xC3\xA9ro\x1F\"\\",
                            randomTensor(DType::U8, {}, rng));
  file.tensors.emplace_back("wide",
                            randomTensor(DType::I8, {123456789, 0}, rng));
  return file;
}

// The bytes of the writer are pinned: golden/writer.safetensors was
// written by the writer this test was added with (header key order, number
// spelling, escapes, padding), and every later writer must reproduce it.
TEST(SafeTensorsTest, WriterOutputIsPinned) {
  std::string golden = readFile(
      absl::StrCat(SINTER_TEST_SOURCE_DIR, "/golden/writer.safetensors"));
  ASSERT_FALSE(golden.empty());
  SafeTensorsFile file = writerGoldenFile();
  absl::StatusOr<std::string> bytes = serializeSafeTensors(file);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, golden);
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  ASSERT_TRUE(writeSafeTensors(path, file).ok());
  EXPECT_EQ(readFile(path), golden);
  // An empty file: only the added "format", 32 bytes, so no padding.
  EXPECT_EQ(*serializeSafeTensors(SafeTensorsFile()),
            littleEndian(32, 8) + "{\"__metadata__\":{\"format\":\"pt\"}}");
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
       "byte offset 13: header is not valid JSON: syntax error while parsing "
       "object separator - unexpected '{'; expected ':'"},
      {"first byte", rawSafeTensors("xyz", ""),
       "byte offset 8: header is not valid JSON: syntax error while parsing "
       "value - invalid literal; last read: 'x'"},
      {"missing comma",
       rawSafeTensors("{\"w\":" + w + " \"v\":" + w + "}", data16),
       "byte offset 67: header is not valid JSON: syntax error while parsing "
       "object - unexpected string literal; expected '}'"},
      {"invalid UTF-8", rawSafeTensors("{\"\xFF\":" + w + "}", data16),
       "byte offset 10: header is not valid JSON: syntax error while parsing "
       "object key - invalid string: ill-formed UTF-8 byte; last read: "
       "'\"\\xff'"},
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

/// Collects what a streamed write writes, and the size of each write.
class StringSink final : public ByteSink {
public:
  absl::Status write(std::string_view bytes) override {
    out.append(bytes.data(), bytes.size());
    writes.push_back(bytes.size());
    return absl::OkStatus();
  }
  std::string out;
  std::vector<size_t> writes;
};

// A streamed write gives the bytes serializeSafeTensors gives, every dtype
// and odd offset included, and a tensor larger than a piece goes out in
// pieces of kSafeTensorsPieceBytes.
TEST(SafeTensorsTest, StreamedWriteIsTheSerializedFile) {
  std::mt19937_64 rng(11);
  SafeTensorsFile file = everyDTypeFile(rng);
  file.metadata["sinter.step"] = "3";
  file.tensors.emplace_back(
      "large", randomTensor(DType::F32, {(1 << 20) + 3}, rng)); // 4 MiB + 12
  absl::StatusOr<std::string> serialized = serializeSafeTensors(file);
  ASSERT_TRUE(serialized.ok()) << serialized.status();
  StringSink sink;
  std::vector<std::pair<std::string, uint64_t>> seen;
  ASSERT_TRUE(streamSafeTensors(sourcesOf(file), sink,
                                [&](const TensorSource &t, uint64_t offset,
                                    std::string_view) {
                                  seen.push_back({t.name, offset});
                                  return absl::OkStatus();
                                })
                  .ok());
  EXPECT_EQ(sink.out, *serialized);
  EXPECT_EQ(sink.writes.back(), 12u);
  EXPECT_EQ(sink.writes[sink.writes.size() - 2], kSafeTensorsPieceBytes);
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen.back(), (std::pair<std::string, uint64_t>{
                             "large", kSafeTensorsPieceBytes}));

  // The check's error stops the write before the piece it refused.
  StringSink stopped;
  absl::Status s = streamSafeTensors(
      sourcesOf(file), stopped,
      [&](const TensorSource &t, uint64_t, std::string_view) {
        return t.name == "large" ? absl::DataLossError("refused")
                                 : absl::OkStatus();
      });
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(stopped.out.size(),
            serialized->size() - file.tensors.back().second.data.size());

  // A source whose shape is no shape is refused before anything is written.
  SafeTensorsSources bad = sourcesOf(file);
  bad.tensors[0].shape = {-1};
  StringSink none;
  s = streamSafeTensors(bad, none);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cannot write safetensors: tensor 'layer0.F64'"),
            std::string::npos)
      << s;
  EXPECT_TRUE(none.out.empty());
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

} // namespace
} // namespace sinter::formats
