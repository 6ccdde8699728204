//===- DataTestUtil.h - helpers of the data loaders' tests --------------===//
//
// Token shards and raw files, typed arrays, loaders opened or refused,
// and batches read back, shared by DataTest.cpp (token data) and
// NpyLoaderTest.cpp (.npy data and the bundled datasets).
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_TEST_UNIT_RUNTIME_DATATESTUTIL_H
#define SINTER_TEST_UNIT_RUNTIME_DATATESTUTIL_H

#include "abi/HalfFloat.h"
#include "runtime/Data/Batching.h"
#include "runtime/Data/DataLoader.h"
#include "runtime/Data/TokenFiles.h"
#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/Npy.h"

#include "absl/strings/str_cat.h"

#include "test/unit/runtime/TestFiles.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <unistd.h>

namespace sinter::data::datatest {

namespace fs = std::filesystem;
using formats::DType;
using formats::HostTensor;

using sinter::test::writeFile;

struct TempDir : sinter::test::TempDir {
  TempDir() : sinter::test::TempDir("sinter-data") {}
  /// `name` inside the directory, its parent directories created.
  std::string file(std::string_view name) const {
    std::string full = sinter::test::TempDir::file(name);
    fs::create_directories(fs::path(full).parent_path());
    return full;
  }
};

inline std::string shardBytes(const std::vector<uint16_t> &tokens) {
  absl::StatusOr<std::string> bytes = serializeLlmcShard(tokens);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

inline std::string rawBytes(const std::vector<uint16_t> &tokens) {
  std::string out(tokens.size() * 2, '\0');
  for (size_t i = 0; i < tokens.size(); ++i) {
    out[2 * i] = static_cast<char>(tokens[i] & 0xFF);
    out[2 * i + 1] = static_cast<char>(tokens[i] >> 8);
  }
  return out;
}

/// Tokens begin, begin + 1, ..., begin + count - 1: a token's value is its
/// position in the stream, so batches show where they came from.
inline std::vector<uint16_t> iota(int64_t count, int64_t begin = 0) {
  std::vector<uint16_t> tokens(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    tokens[static_cast<size_t>(i)] = static_cast<uint16_t>(begin + i);
  return tokens;
}

inline std::vector<InputSpec> tokenInputs(int64_t B, int64_t T,
                                          DType dtype = DType::I64) {
  return {{"idx", dtype, {B, T}}, {"targets", dtype, {B, T}}};
}

inline LoaderOptions withSeed(uint64_t seed, double evalFraction = 0.1) {
  LoaderOptions options;
  options.seed = seed;
  options.evalFraction = evalFraction;
  return options;
}

inline std::unique_ptr<DataLoader> openOk(const std::string &spec,
                                          const std::vector<InputSpec> &inputs,
                                          const LoaderOptions &options = {}) {
  absl::StatusOr<std::unique_ptr<DataLoader>> loader =
      DataLoader::open(spec, inputs, options);
  EXPECT_TRUE(loader.ok()) << loader.status();
  return loader.ok() ? *std::move(loader) : nullptr;
}

/// The error message of opening `spec`, or "" when it opened.
inline std::string openError(const std::string &spec,
                             const std::vector<InputSpec> &inputs,
                             const LoaderOptions &options = {}) {
  absl::StatusOr<std::unique_ptr<DataLoader>> loader =
      DataLoader::open(spec, inputs, options);
  return loader.ok() ? "" : std::string(loader.status().message());
}

/// One batch of a two-input token model, as int64 rows.
struct TokenBatch {
  std::vector<int64_t> idx, targets;
  bool operator==(const TokenBatch &other) const {
    return idx == other.idx && targets == other.targets;
  }
};

inline TokenBatch nextTokens(DataLoader &loader, int64_t B, int64_t T) {
  TokenBatch batch{std::vector<int64_t>(B * T), std::vector<int64_t>(B * T)};
  absl::Status status =
      loader.nextTrain({batch.idx.data(), batch.targets.data()});
  EXPECT_TRUE(status.ok()) << status;
  return batch;
}

inline TokenBatch evalTokens(DataLoader &loader, int64_t i, int64_t B,
                             int64_t T) {
  TokenBatch batch{std::vector<int64_t>(B * T), std::vector<int64_t>(B * T)};
  absl::Status status =
      loader.evalBatch(i, {batch.idx.data(), batch.targets.data()});
  EXPECT_TRUE(status.ok()) << status;
  return batch;
}

inline HostTensor tensor(DType dtype, std::vector<int64_t> shape,
                         const std::vector<double> &values) {
  absl::StatusOr<HostTensor> made = HostTensor::zeros(dtype, std::move(shape));
  EXPECT_TRUE(made.ok());
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t *at = made->data.data() + i * formats::dtypeByteSize(dtype);
    auto put = [&](auto value) { std::memcpy(at, &value, sizeof(value)); };
    switch (dtype) {
    case DType::F64:
      put(values[i]);
      break;
    case DType::F32:
      put(static_cast<float>(values[i]));
      break;
    case DType::F16:
      put(half::floatToF16Bits(static_cast<float>(values[i])));
      break;
    case DType::I64:
      put(static_cast<int64_t>(values[i]));
      break;
    case DType::I32:
      put(static_cast<int32_t>(values[i]));
      break;
    case DType::I16:
      put(static_cast<int16_t>(values[i]));
      break;
    case DType::U16:
      put(static_cast<uint16_t>(values[i]));
      break;
    case DType::I8:
      put(static_cast<int8_t>(values[i]));
      break;
    default:
      put(static_cast<uint8_t>(values[i]));
      break; // U8, Bool
    }
  }
  return *made;
}

inline void saveNpy(const std::string &path, const HostTensor &value) {
  absl::Status status = formats::writeNpy(path, value);
  ASSERT_TRUE(status.ok()) << status;
}

//===----------------------------------------------------------------------===//
// Token files
//===----------------------------------------------------------------------===//
} // namespace sinter::data::datatest

#endif // SINTER_TEST_UNIT_RUNTIME_DATATESTUTIL_H
