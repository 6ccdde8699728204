//===- FormatsTestUtil.h - helpers shared by the runtime/Formats tests ----===//
//
// Temp directories, hand-built .npy and .safetensors bytes, the one-line
// error contract every malformed-input message must meet, and running the
// test Python for the numpy / safetensors cross-checks.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_TEST_UNIT_RUNTIME_FORMATSTESTUTIL_H
#define SINTER_TEST_UNIT_RUNTIME_FORMATSTESTUTIL_H

#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/HostTensor.h"

#include "absl/strings/str_cat.h"

#include "test/unit/runtime/TestFiles.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#ifndef SINTER_TEST_PYTHON
#define SINTER_TEST_PYTHON "/usr/bin/python3"
#endif

namespace sinter::formats {

/// A temp directory named after these tests.
struct TempDir : sinter::test::TempDir {
  TempDir() : sinter::test::TempDir("sinter-formats") {}
};

inline std::string_view asBytes(const std::vector<uint8_t> &data) {
  return std::string_view(reinterpret_cast<const char *>(data.data()),
                          data.size());
}

/// Checks the error contract: failed, one line, starts with `name: `, and
/// contains `substring`.
inline void expectError(const absl::Status &status, std::string_view name,
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
inline HostTensor randomTensor(DType dtype, std::vector<int64_t> shape,
                               std::mt19937_64 &rng) {
  absl::StatusOr<HostTensor> tensor = HostTensor::zeros(dtype, shape);
  EXPECT_TRUE(tensor.ok()) << tensor.status();
  for (uint8_t &byte : tensor->data)
    byte = dtype == DType::Bool ? rng() & 1 : static_cast<uint8_t>(rng());
  return *tensor;
}

inline std::string littleEndian(uint64_t value, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xFF);
  return out;
}

/// A .npy file with the given header dict text (no padding) and data.
inline std::string rawNpy(std::string_view dict, std::string_view data,
                          int major = 1) {
  std::string header = absl::StrCat(toAbsl(dict), "\n");
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  out += littleEndian(header.size(), major == 1 ? 2 : 4);
  return absl::StrCat(out, header, toAbsl(data));
}

/// A .safetensors file with the given header text and data section.
inline std::string rawSafeTensors(std::string_view header,
                                  std::string_view data) {
  return absl::StrCat(littleEndian(header.size(), 8), toAbsl(header),
                      toAbsl(data));
}

/// Runs `script` with the test Python and `args`; returns its exit status.
inline int runPython(const TempDir &dir, std::string_view script,
                     const std::string &args) {
  std::string scriptPath = dir.file("check.py");
  sinter::test::writeFile(scriptPath, script);
  std::string command =
      absl::StrCat(SINTER_TEST_PYTHON, " ", scriptPath, " ", args, " 2>&1");
  return std::system(command.c_str());
}

inline bool havePythonModule(std::string_view module) {
  std::string command = absl::StrCat(SINTER_TEST_PYTHON, " -c 'import ",
                                     toAbsl(module), "' >/dev/null 2>&1");
  return std::system(command.c_str()) == 0;
}

/// Shapes every round trip covers: rank 0, empty, 1-d and up to rank 4.
inline const std::vector<std::vector<int64_t>> kShapes = {
    {}, {0}, {1}, {7}, {2, 3}, {3, 0, 2}, {2, 1, 3, 2}};

/// One malformed file and the message it must produce.
struct BadFile {
  const char *what;
  std::string bytes;
  std::string expected;
};

} // namespace sinter::formats

#endif // SINTER_TEST_UNIT_RUNTIME_FORMATSTESTUTIL_H
