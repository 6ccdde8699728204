//===- NpyTest.cpp - reading and writing .npy files -----------------------===//
//
// Round trips for every dtype, numpy's header layout, one case per
// malformed-input rule (checking the one-line "<file>: byte offset N: why"
// message), and cross-checks against numpy.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/Npy.h"

#include "test/unit/runtime/FormatsTestUtil.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include <filesystem>

namespace sinter::formats {
namespace {

namespace fs = std::filesystem;
using sinter::test::readFile;
using sinter::test::writeFile;

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

} // namespace
} // namespace sinter::formats
