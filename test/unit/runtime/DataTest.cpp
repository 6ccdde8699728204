//===- DataTest.cpp - tests of the training binary's data loaders ---------===//
//
// Token data: one case per llm.c header rule and per raw-file rule (checking
// the one-line message names the file), directory and glob discovery, the
// held-out split, windows and their one-token-shifted targets, epoch
// coverage (each window once, the remainder dropped), seeded order (pinned
// against an independent Python reimplementation of the generator), and
// state()/restore() resuming a randomly interrupted run exactly, tokens
// checked against the vocabulary as they are copied. .npy data:
// the three spec forms, every dtype conversion rule, shape and count
// mismatches. Finally the bundled datasets open with their examples' inputs.
//
//===----------------------------------------------------------------------===//

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

#ifndef SINTER_SOURCE_DIR
#define SINTER_SOURCE_DIR "."
#endif

namespace sinter::data {
namespace {

namespace fs = std::filesystem;
using formats::DType;
using formats::HostTensor;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

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

std::string shardBytes(const std::vector<uint16_t> &tokens) {
  absl::StatusOr<std::string> bytes = serializeLlmcShard(tokens);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

std::string rawBytes(const std::vector<uint16_t> &tokens) {
  std::string out(tokens.size() * 2, '\0');
  for (size_t i = 0; i < tokens.size(); ++i) {
    out[2 * i] = static_cast<char>(tokens[i] & 0xFF);
    out[2 * i + 1] = static_cast<char>(tokens[i] >> 8);
  }
  return out;
}

/// Tokens begin, begin + 1, ..., begin + count - 1: a token's value is its
/// position in the stream, so batches show where they came from.
std::vector<uint16_t> iota(int64_t count, int64_t begin = 0) {
  std::vector<uint16_t> tokens(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    tokens[static_cast<size_t>(i)] = static_cast<uint16_t>(begin + i);
  return tokens;
}

std::vector<InputSpec> tokenInputs(int64_t B, int64_t T,
                                   DType dtype = DType::I64) {
  return {{"idx", dtype, {B, T}}, {"targets", dtype, {B, T}}};
}

LoaderOptions withSeed(uint64_t seed, double evalFraction = 0.1) {
  LoaderOptions options;
  options.seed = seed;
  options.evalFraction = evalFraction;
  return options;
}

std::unique_ptr<DataLoader> openOk(const std::string &spec,
                                   const std::vector<InputSpec> &inputs,
                                   const LoaderOptions &options = {}) {
  absl::StatusOr<std::unique_ptr<DataLoader>> loader =
      DataLoader::open(spec, inputs, options);
  EXPECT_TRUE(loader.ok()) << loader.status();
  return loader.ok() ? *std::move(loader) : nullptr;
}

/// The error message of opening `spec`, or "" when it opened.
std::string openError(const std::string &spec,
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

TokenBatch nextTokens(DataLoader &loader, int64_t B, int64_t T) {
  TokenBatch batch{std::vector<int64_t>(B * T), std::vector<int64_t>(B * T)};
  absl::Status status =
      loader.nextTrain({batch.idx.data(), batch.targets.data()});
  EXPECT_TRUE(status.ok()) << status;
  return batch;
}

TokenBatch evalTokens(DataLoader &loader, int64_t i, int64_t B, int64_t T) {
  TokenBatch batch{std::vector<int64_t>(B * T), std::vector<int64_t>(B * T)};
  absl::Status status =
      loader.evalBatch(i, {batch.idx.data(), batch.targets.data()});
  EXPECT_TRUE(status.ok()) << status;
  return batch;
}

HostTensor tensor(DType dtype, std::vector<int64_t> shape,
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

void saveNpy(const std::string &path, const HostTensor &value) {
  absl::Status status = formats::writeNpy(path, value);
  ASSERT_TRUE(status.ok()) << status;
}

//===----------------------------------------------------------------------===//
// Token files
//===----------------------------------------------------------------------===//

TEST(TokenFiles, ShardRoundTrip) {
  TempDir dir;
  std::vector<uint16_t> tokens = {0, 1, 65535, 220, 198};
  ASSERT_TRUE(writeLlmcShard(dir.file("a.bin"), tokens).ok());
  absl::StatusOr<TokenFile> file = readTokenFile(dir.file("a.bin"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->kind, TokenFileKind::Llmc);
  EXPECT_EQ(file->tokens, tokens);
  EXPECT_EQ(fs::file_size(dir.file("a.bin")), 1024u + 2 * tokens.size());
}

TEST(TokenFiles, RawFile) {
  TempDir dir;
  std::vector<uint16_t> tokens = {7, 300, 65535};
  writeFile(dir.file("r.bin"), rawBytes(tokens));
  absl::StatusOr<TokenFile> file = readTokenFile(dir.file("r.bin"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->kind, TokenFileKind::Raw);
  EXPECT_EQ(file->tokens, tokens);
}

TEST(TokenFiles, RawFileOddSize) {
  TempDir dir;
  writeFile(dir.file("odd.bin"), "abc");
  absl::StatusOr<TokenFile> file = readTokenFile(dir.file("odd.bin"));
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message(),
            dir.file("odd.bin") +
                ": byte offset 2: a raw token file holds "
                "uint16 tokens, but its size (3 bytes) is odd");
}

TEST(TokenFiles, BadVersion) {
  TempDir dir;
  std::string bytes = shardBytes(iota(10));
  bytes[4] = 2;
  writeFile(dir.file("v.bin"), bytes);
  absl::StatusOr<TokenFile> file = readTokenFile(dir.file("v.bin"));
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message(),
            dir.file("v.bin") + ": byte offset 4: llm.c shard version 2 is "
                                "not supported (expected 1)");
}

TEST(TokenFiles, SizeMismatch) {
  TempDir dir;
  writeFile(dir.file("s.bin"), shardBytes(iota(10)) + "xy");
  absl::StatusOr<TokenFile> file = readTokenFile(dir.file("s.bin"));
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message(),
            dir.file("s.bin") +
                ": byte offset 8: llm.c shard header says 10 tokens, so the "
                "file should have 1024 + 2 * 10 = 1044 bytes, but it has 1046");
}

TEST(TokenFiles, TruncatedHeader) {
  TempDir dir;
  writeFile(dir.file("t.bin"), shardBytes(iota(10)).substr(0, 100));
  absl::StatusOr<TokenFile> file = readTokenFile(dir.file("t.bin"));
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find(
                "t.bin: byte offset 100: llm.c shard (magic 20240520) is "
                "truncated"),
            absl::string_view::npos)
      << file.status();
}

TEST(TokenFiles, BadMagic) {
  TempDir dir;
  std::string bytes = shardBytes(iota(10));
  bytes[0] ^= 1; // 20240521: a header in every respect but the magic
  writeFile(dir.file("m.bin"), bytes);
  absl::StatusOr<TokenFile> file = readTokenFile(dir.file("m.bin"));
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message(),
            dir.file("m.bin") +
                ": byte offset 0: bad magic 20240521: the file has an llm.c "
                "shard header (its token count matches the file size), but "
                "llm.c's magic is 20240520");
}

TEST(TokenFiles, Llama3MagicRefused) {
  TempDir dir;
  std::string bytes = shardBytes(iota(10));
  int32_t magic = kLlmcLlama3Magic;
  std::memcpy(bytes.data(), &magic, 4);
  writeFile(dir.file("l3.bin"), bytes);
  absl::StatusOr<TokenFile> file = readTokenFile(dir.file("l3.bin"));
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find(
                "l3.bin: byte offset 0: magic 20240801 is llm.c's LLaMA-3"),
            absl::string_view::npos)
      << file.status();
}

TEST(TokenFiles, ClassifyByName) {
  absl::StatusOr<TokenFileSets> sets = classifyTokenFiles(
      "d", {"d/fineweb_val_000000.bin", "d/fineweb_train_000002.bin",
            "d/fineweb_train_000001.bin"});
  ASSERT_TRUE(sets.ok()) << sets.status();
  EXPECT_EQ(sets->train,
            (std::vector<std::string>{"d/fineweb_train_000001.bin",
                                      "d/fineweb_train_000002.bin"}));
  EXPECT_EQ(sets->val, (std::vector<std::string>{"d/fineweb_val_000000.bin"}));

  sets = classifyTokenFiles("d", {"d/b.bin", "d/a.bin"});
  ASSERT_TRUE(sets.ok());
  EXPECT_EQ(sets->train, (std::vector<std::string>{"d/a.bin", "d/b.bin"}));
  EXPECT_TRUE(sets->val.empty());

  sets = classifyTokenFiles("d", {"d/train.bin", "d/extra.bin"});
  ASSERT_FALSE(sets.ok());
  EXPECT_EQ(sets.status().message(),
            "d: 'd/extra.bin' is neither a train nor a val file (when some "
            ".bin names contain 'train' or 'val', all must)");

  sets = classifyTokenFiles("d", {"d/val.bin"});
  ASSERT_FALSE(sets.ok());
  EXPECT_NE(sets.status().message().find("has val files (d/val.bin) but no "
                                         "train file"),
            absl::string_view::npos);
}

//===----------------------------------------------------------------------===//
// Shuffling and state
//===----------------------------------------------------------------------===//

TEST(Shuffle, PinnedOrder) {
  // From an independent Python reimplementation of Random.h's generator
  // and the Fisher-Yates loop documented in Batching.h.
  EXPECT_EQ(shuffledOrder(0, 0, 10),
            (std::vector<int64_t>{9, 7, 1, 0, 5, 6, 3, 2, 8, 4}));
  EXPECT_EQ(shuffledOrder(1337, 3, 10),
            (std::vector<int64_t>{9, 7, 8, 4, 1, 0, 6, 5, 2, 3}));
  EXPECT_TRUE(shuffledOrder(5, 0, 0).empty());
  EXPECT_EQ(shuffledOrder(5, 0, 1), (std::vector<int64_t>{0}));
}

TEST(Shuffle, IsAPermutation) {
  for (int64_t count : {2, 3, 17, 1000}) {
    std::vector<int64_t> order = shuffledOrder(42, 7, count);
    std::set<int64_t> seen(order.begin(), order.end());
    EXPECT_EQ(static_cast<int64_t>(seen.size()), count);
    EXPECT_EQ(*seen.begin(), 0);
    EXPECT_EQ(*seen.rbegin(), count - 1);
  }
}

TEST(EpochCursor, MalformedStatesRejected) {
  EpochCursor cursor(100, 10, 0); // 10 batches per epoch
  for (std::string_view state :
       {"", "epoch=1", "epoch=1 batch=", "epoch=-1 batch=0", "epoch=1  batch=0",
        "epoch=1 batch=0 ", " epoch=1 batch=0", "epoch=1 batch=0x1",
        "batch=0 epoch=1", "epoch=+1 batch=0", "epoch=1\tbatch=0",
        "epoch=9999999999999999999 batch=0", "epoch=1 batch=3\n",
        "epoch=1 batch=0 items=", "epoch=1 batch=0 items=-1",
        "epoch=1 batch=0 items=0 ", "epoch=1 items=0 batch=0",
        "epoch=1 batch=0  items=0", "epoch=1 batch=0 items=0x0"}) {
    absl::Status status = cursor.restore(state);
    EXPECT_FALSE(status.ok()) << "'" << state << "'";
    EXPECT_NE(status.message().find("expected 'epoch=E batch=N items=K' (or "
                                    "the older 'epoch=E batch=N')"),
              absl::string_view::npos)
        << status;
  }
  absl::Status status = cursor.restore("epoch=2 batch=10");
  EXPECT_EQ(status.message(),
            "data state 'epoch=2 batch=10': batch 10 is out of range: an "
            "epoch has 10 batches (was the data or the batch size changed?)");
  EXPECT_TRUE(cursor.restore("epoch=123456 batch=9").ok());
  EXPECT_EQ(cursor.state(), "epoch=123456 batch=9 items=90");
  EXPECT_TRUE(cursor.restore("epoch=3 batch=4 items=40").ok());
  EXPECT_EQ(cursor.state(), "epoch=3 batch=4 items=40");
  // Item offsets: within the epoch's 100 items; the batch cannot start
  // after more items than there are.
  EXPECT_EQ(cursor.restore("epoch=3 batch=4 items=100").message(),
            "data state 'epoch=3 batch=4 items=100': item offset 100 is out "
            "of range: an epoch has 100 items (was the data changed?)");
  EXPECT_EQ(cursor.restore("epoch=3 batch=4 items=3").message(),
            "data state 'epoch=3 batch=4 items=3': batch 4 cannot start "
            "after 3 items");
  EXPECT_EQ(cursor.state(), "epoch=3 batch=4 items=40"); // unchanged
  // Saved with another batch size: the item position is kept, the batch
  // index is counted in this cursor's batches.
  EXPECT_TRUE(cursor.restore("epoch=3 batch=5 items=35").ok());
  EXPECT_EQ(cursor.state(), "epoch=3 batch=3 items=35");
  // What is left of the epoch (5 items) does not fill a batch of 10: the
  // next batch is the next epoch's first.
  EXPECT_TRUE(cursor.restore("epoch=3 batch=19 items=95").ok());
  EXPECT_EQ(cursor.state(), "epoch=4 batch=0 items=0");

  // An old state counts batches of the per-rank batch (legacyBatchSize).
  EpochCursor global(100, 20, 0, /*legacyBatchSize=*/10);
  EXPECT_TRUE(global.restore("epoch=1 batch=3").ok());
  EXPECT_EQ(global.state(), "epoch=1 batch=1 items=30");
  EXPECT_TRUE(global.restore("epoch=1 batch=9").ok()); // 90 + 20 > 100
  EXPECT_EQ(global.state(), "epoch=2 batch=0 items=0");
  EXPECT_FALSE(global.restore("epoch=1 batch=10").ok());
}

TEST(Batching, WithCommas) {
  EXPECT_EQ(withCommas(0), "0");
  EXPECT_EQ(withCommas(999), "999");
  EXPECT_EQ(withCommas(1000), "1,000");
  EXPECT_EQ(withCommas(1003854), "1,003,854");
  EXPECT_EQ(withCommas(-1234567), "-1,234,567");
}

//===----------------------------------------------------------------------===//
// Token loader
//===----------------------------------------------------------------------===//

TEST(TokenLoader, TargetsAreInputsShiftedByOne) {
  TempDir dir;
  const int64_t B = 3, T = 8;
  writeFile(dir.file("train.bin"), shardBytes(iota(200)));
  std::unique_ptr<DataLoader> loader =
      openOk(dir.file("train.bin"), tokenInputs(B, T), withSeed(1, 0));
  ASSERT_TRUE(loader);
  for (int step = 0; step < 10; ++step) {
    TokenBatch batch = nextTokens(*loader, B, T);
    for (int64_t r = 0; r < B; ++r) {
      // A window starts at a multiple of T and is contiguous.
      EXPECT_EQ(batch.idx[r * T] % T, 0);
      for (int64_t t = 0; t < T; ++t) {
        EXPECT_EQ(batch.idx[r * T + t], batch.idx[r * T] + t);
        EXPECT_EQ(batch.targets[r * T + t], batch.idx[r * T + t] + 1);
      }
    }
  }
}

TEST(TokenLoader, EachWindowOncePerEpochRemainderDropped) {
  TempDir dir;
  const int64_t B = 4, T = 5;
  // 118 tokens: windows need k*5 + 6 <= 118, so 23 windows; 5 batches of 4
  // per epoch, 3 windows dropped each epoch.
  writeFile(dir.file("x.bin"), shardBytes(iota(118)));
  std::unique_ptr<DataLoader> loader =
      openOk(dir.file("x.bin"), tokenInputs(B, T), withSeed(9, 0));
  ASSERT_TRUE(loader);
  EXPECT_EQ(loader->trainBatchesPerEpoch(), 5);
  EXPECT_EQ(loader->numEvalBatches(), 0);
  std::set<std::vector<int64_t>> epochSets;
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    EXPECT_EQ(loader->epoch(), epoch);
    std::map<int64_t, int> seen;
    for (int64_t b = 0; b < 5; ++b) {
      TokenBatch batch = nextTokens(*loader, B, T);
      for (int64_t r = 0; r < B; ++r)
        ++seen[batch.idx[r * T] / T];
    }
    EXPECT_EQ(seen.size(), 20u);
    std::vector<int64_t> windows;
    for (auto [window, count] : seen) {
      EXPECT_EQ(count, 1) << "window " << window << " in epoch " << epoch;
      EXPECT_LT(window, 23);
      windows.push_back(window);
    }
    epochSets.insert(windows);
  }
  EXPECT_EQ(loader->epoch(), 4);
  // Which 3 windows are dropped changes with the epoch's order.
  EXPECT_GT(epochSets.size(), 1u);
}

TEST(TokenLoader, SeedsChangeTheOrder) {
  TempDir dir;
  writeFile(dir.file("x.bin"), shardBytes(iota(2000)));
  auto firstBatches = [&](uint64_t seed) {
    std::unique_ptr<DataLoader> loader =
        openOk(dir.file("x.bin"), tokenInputs(4, 16), withSeed(seed));
    std::vector<TokenBatch> batches;
    for (int i = 0; i < 5; ++i)
      batches.push_back(nextTokens(*loader, 4, 16));
    return batches;
  };
  std::vector<TokenBatch> a = firstBatches(1), b = firstBatches(1),
                          c = firstBatches(2);
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
}

TEST(TokenLoader, RestoreContinuesIdentically) {
  TempDir dir;
  const int64_t B = 2, T = 7;
  // 7 batches per epoch, so 20 batches cross two epoch boundaries.
  writeFile(dir.file("train.bin"), shardBytes(iota(7 * B * T + 3)));
  std::mt19937 pick(20240520);
  for (int trial = 0; trial < 8; ++trial) {
    std::unique_ptr<DataLoader> run =
        openOk(dir.file("train.bin"), tokenInputs(B, T), withSeed(77, 0));
    ASSERT_TRUE(run);
    ASSERT_EQ(run->trainBatchesPerEpoch(), 7);
    int64_t stopAt = std::uniform_int_distribution<int64_t>(0, 30)(pick);
    for (int64_t i = 0; i < stopAt; ++i)
      nextTokens(*run, B, T);
    std::string state = run->state();
    EXPECT_EQ(state, absl::StrCat("epoch=", stopAt / 7, " batch=", stopAt % 7,
                                  " items=", stopAt % 7 * B));
    std::unique_ptr<DataLoader> resumed =
        openOk(dir.file("train.bin"), tokenInputs(B, T), withSeed(77, 0));
    ASSERT_TRUE(resumed->restore(state).ok());
    EXPECT_EQ(resumed->epoch(), run->epoch());
    for (int i = 0; i < 20; ++i)
      EXPECT_TRUE(nextTokens(*run, B, T) == nextTokens(*resumed, B, T))
          << "stopped at " << stopAt << ", batch " << i << " after";
    EXPECT_EQ(resumed->state(), run->state());
  }
  std::unique_ptr<DataLoader> loader =
      openOk(dir.file("train.bin"), tokenInputs(B, T), withSeed(77, 0));
  EXPECT_FALSE(loader->restore("epoch=0 batch=7").ok());
  EXPECT_FALSE(loader->restore("epoch=0").ok());
}

TEST(TokenLoader, HeldOutSplitWhenNoVal) {
  TempDir dir;
  const int64_t B = 2, T = 4;
  writeFile(dir.file("data.bin"), rawBytes(iota(1000)));
  std::unique_ptr<DataLoader> loader =
      openOk(dir.file("data.bin"), tokenInputs(B, T), withSeed(0, 0.25));
  ASSERT_TRUE(loader);
  // 250 eval tokens, tokens 750..999: 62 windows, 31 batches.
  EXPECT_EQ(loader->numEvalBatches(), 31);
  TokenBatch first = evalTokens(*loader, 0, B, T);
  EXPECT_EQ(first.idx,
            (std::vector<int64_t>{750, 751, 752, 753, 754, 755, 756, 757}));
  EXPECT_EQ(first.targets[7], 758);
  TokenBatch last = evalTokens(*loader, 30, B, T);
  EXPECT_EQ(last.idx[0], 750 + 60 * T);
  EXPECT_TRUE(evalTokens(*loader, 0, B, T) == first); // deterministic
  // Train: tokens 0..749 only, so 187 windows, 93 batches.
  EXPECT_EQ(loader->trainBatchesPerEpoch(), 93);
  for (int i = 0; i < 93; ++i) {
    TokenBatch batch = nextTokens(*loader, B, T);
    for (int64_t v : batch.targets)
      EXPECT_LT(v, 750);
  }
  EXPECT_EQ(loader->describe(),
            dir.file("data.bin") +
                ": 750 train tokens in 1 file, 250 eval tokens held out (the "
                "last 25%); 93 batches of 2x4 per epoch, 31 eval batches");
  std::vector<int64_t> idx(B * T), targets(B * T);
  EXPECT_EQ(loader->evalBatch(31, {idx.data(), targets.data()}).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_FALSE(loader->nextTrain({idx.data()}).ok());
  EXPECT_FALSE(loader->nextTrain({idx.data(), nullptr}).ok());
}

TEST(TokenLoader, DirectoryTrainAndValShards) {
  TempDir dir;
  const int64_t B = 2, T = 10;
  writeFile(dir.file("d/fineweb_train_000002.bin"), shardBytes(iota(100, 100)));
  writeFile(dir.file("d/fineweb_train_000001.bin"), shardBytes(iota(100, 0)));
  writeFile(dir.file("d/fineweb_val_000000.bin"), rawBytes(iota(50, 5000)));
  writeFile(dir.file("d/notes.txt"), "ignored");
  std::unique_ptr<DataLoader> loader =
      openOk(dir.file("d"), tokenInputs(B, T), withSeed(3));
  ASSERT_TRUE(loader);
  // The train stream is shard 1 then shard 2: 0..199, 19 windows.
  EXPECT_EQ(loader->trainBatchesPerEpoch(), 9);
  for (int i = 0; i < 9; ++i) {
    TokenBatch batch = nextTokens(*loader, B, T);
    for (int64_t r = 0; r < B; ++r)
      for (int64_t t = 0; t < T; ++t)
        EXPECT_EQ(batch.targets[r * T + t], batch.idx[r * T] + t + 1);
  }
  // Eval is the val shard alone: 4 windows, 2 batches, in order.
  EXPECT_EQ(loader->numEvalBatches(), 2);
  EXPECT_EQ(evalTokens(*loader, 1, B, T).idx[0], 5020);
  EXPECT_EQ(loader->describe(),
            dir.file("d") + ": 200 train tokens in 2 files, 50 eval tokens in "
                            "1 file; 9 batches of 2x10 per epoch, 2 eval "
                            "batches");
}

TEST(TokenLoader, DirectoryWithoutNamesIsAllTrain) {
  TempDir dir;
  writeFile(dir.file("d/a.bin"), shardBytes(iota(100)));
  writeFile(dir.file("d/b.bin"), shardBytes(iota(100, 100)));
  std::unique_ptr<DataLoader> loader =
      openOk(dir.file("d"), tokenInputs(1, 10), withSeed(0, 0.1));
  ASSERT_TRUE(loader);
  // 200 tokens, the last 20 held out: 180 train tokens, 17 windows.
  EXPECT_EQ(loader->trainBatchesPerEpoch(), 17);
  EXPECT_EQ(loader->numEvalBatches(), 1);
  EXPECT_EQ(evalTokens(*loader, 0, 1, 10).idx[0], 180);
}

TEST(TokenLoader, GlobPattern) {
  TempDir dir;
  writeFile(dir.file("d/shard_train_1.bin"), shardBytes(iota(100)));
  writeFile(dir.file("d/shard_train_2.bin"), shardBytes(iota(100, 100)));
  writeFile(dir.file("d/shard_val_1.bin"), shardBytes(iota(100, 1000)));
  std::unique_ptr<DataLoader> loader = openOk(
      dir.file("d") + "/shard_train_*.bin", tokenInputs(1, 10), withSeed(0));
  ASSERT_TRUE(loader);
  EXPECT_EQ(loader->trainBatchesPerEpoch(), 17); // 180 of 200 tokens
  EXPECT_EQ(evalTokens(*loader, 0, 1, 10).idx[0], 180);

  absl::StatusOr<std::unique_ptr<DataLoader>> none = DataLoader::open(
      dir.file("d") + "/nothing_*.bin", tokenInputs(1, 10), {});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
}

TEST(TokenLoader, I32InputsAndVocabCheck) {
  TempDir dir;
  std::vector<uint16_t> tokens = iota(100);
  for (uint16_t &token : tokens)
    token %= 50;
  writeFile(dir.file("ok.bin"), shardBytes(tokens));
  LoaderOptions options = withSeed(0, 0);
  options.vocabSize = 50;
  std::unique_ptr<DataLoader> loader =
      openOk(dir.file("ok.bin"), tokenInputs(2, 4, DType::I32), options);
  ASSERT_TRUE(loader);
  std::vector<int32_t> idx(8), targets(8);
  ASSERT_TRUE(loader->nextTrain({idx.data(), targets.data()}).ok());
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(targets[i], (idx[i] + 1) % 50);

  // Tokens are checked as windows are copied out, not at open (which reads
  // only headers): the batch holding token 37 fails, naming it, and the
  // position stays at that batch.
  tokens[37] = 50;
  writeFile(dir.file("bad.bin"), shardBytes(tokens));
  loader = openOk(dir.file("bad.bin"), tokenInputs(2, 4, DType::I32), options);
  ASSERT_TRUE(loader);
  std::string error, stateAtError;
  for (int64_t b = 0; b < loader->trainBatchesPerEpoch() && error.empty();
       ++b) {
    std::string before = loader->state();
    absl::Status status = loader->nextTrain({idx.data(), targets.data()});
    if (!status.ok()) {
      error = std::string(status.message());
      EXPECT_EQ(loader->state(), before);
    }
  }
  EXPECT_EQ(error, dir.file("bad.bin") + ": byte offset 1098: token 37 is "
                                         "50, not below the vocabulary size "
                                         "50");
  // The same check on eval batches.
  options.evalFraction = 0.5; // tokens 50..99 are eval; 37 is train
  tokens[37] = 0;
  tokens[77] = 60;
  writeFile(dir.file("bad.bin"), shardBytes(tokens));
  loader = openOk(dir.file("bad.bin"), tokenInputs(2, 4, DType::I32), options);
  ASSERT_TRUE(loader);
  error.clear();
  for (int64_t i = 0; i < loader->numEvalBatches() && error.empty(); ++i)
    if (absl::Status status =
            loader->evalBatch(i, {idx.data(), targets.data()});
        !status.ok())
      error = std::string(status.message());
  EXPECT_EQ(error, dir.file("bad.bin") + ": byte offset 1178: token 77 is "
                                         "60, not below the vocabulary size "
                                         "50");
}

TEST(TokenLoader, TooFewTokens) {
  TempDir dir;
  writeFile(dir.file("small.bin"), shardBytes(iota(60)));
  EXPECT_EQ(
      openError(dir.file("small.bin"), tokenInputs(8, 16), withSeed(0, 0)),
      dir.file("small.bin") +
          ": 60 train tokens make 3 windows of 17 tokens, fewer than "
          "one batch of 8; a batch needs at least 129 train tokens");
  EXPECT_NE(openError(dir.file("small.bin"), tokenInputs(8, 16))
                .find("54 train tokens (after the eval hold-out) make"),
            std::string::npos);
}

TEST(TokenLoader, ModelMustTakeTokenPairs) {
  TempDir dir;
  writeFile(dir.file("x.bin"), shardBytes(iota(1000)));
  std::string want = "token data needs a model with exactly two inputs";
  EXPECT_NE(openError(dir.file("x.bin"), {{"image", DType::F32, {4, 784}},
                                          {"label", DType::I64, {4}}})
                .find(want),
            std::string::npos);
  EXPECT_NE(openError(dir.file("x.bin"), tokenInputs(2, 8, DType::F32))
                .find("this model has 2: idx F32 [2, 8], targets F32 [2, 8]"),
            std::string::npos);
  EXPECT_NE(openError(dir.file("x.bin"), {{"idx", DType::I64, {2, 8}},
                                          {"targets", DType::I64, {2, 9}}})
                .find(want),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Spec errors
//===----------------------------------------------------------------------===//

TEST(DataSpec, Errors) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<DataLoader>> missing =
      DataLoader::open(dir.file("nope.bin"), tokenInputs(1, 4), {});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            dir.file("nope.bin") + ": no such file or directory");

  fs::create_directories(dir.file("empty"));
  EXPECT_EQ(openError(dir.file("empty"), tokenInputs(1, 4)),
            dir.file("empty") + ": holds no token .bin files, no .npy files "
                                "and no train/ folder");

  writeFile(dir.file("mixed/train.bin"), shardBytes(iota(100)));
  saveNpy(dir.file("mixed/idx.npy"), tensor(DType::I64, {1, 4}, {}));
  EXPECT_NE(openError(dir.file("mixed"), tokenInputs(1, 4))
                .find("holds both token .bin files and .npy data"),
            std::string::npos);

  writeFile(dir.file("notes.txt"), "hello");
  EXPECT_NE(openError(dir.file("notes.txt"), tokenInputs(1, 4))
                .find("is neither a token .bin file nor a .npy file"),
            std::string::npos);

  EXPECT_NE(openError("", tokenInputs(1, 4)).find("--data is empty"),
            std::string::npos);
  EXPECT_NE(openError(dir.file("notes.txt"), {}).find("no inputs"),
            std::string::npos);
  EXPECT_NE(openError(dir.file("notes.txt"),
                      {{"a", DType::F32, {2, 3}}, {"b", DType::F32, {3}}})
                .find("have different batch sizes"),
            std::string::npos);
  LoaderOptions badFraction;
  badFraction.evalFraction = 1;
  EXPECT_NE(openError(dir.file("notes.txt"), tokenInputs(1, 4), badFraction)
                .find("eval fraction 1 is not in [0, 1)"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// .npy loader
//===----------------------------------------------------------------------===//

std::vector<InputSpec> mlpInputs(int64_t B) {
  return {{"image", DType::F32, {B, 3}}, {"label", DType::I64, {B}}};
}

/// N examples: image row i = (i, i + 0.5, -i), label i.
void writeMlpArrays(const std::string &dir, int64_t N, int64_t firstLabel = 0,
                    DType imageType = DType::F32,
                    DType labelType = DType::I64) {
  std::vector<double> image, label;
  for (int64_t i = 0; i < N; ++i) {
    double v = static_cast<double>(firstLabel + i);
    image.insert(image.end(), {v, v + 0.5, -v});
    label.push_back(v);
  }
  saveNpy(dir + "/image.npy", tensor(imageType, {N, 3}, image));
  saveNpy(dir + "/label.npy", tensor(labelType, {N}, label));
}

struct MlpBatch {
  std::vector<float> image;
  std::vector<int64_t> label;
};

MlpBatch nextMlp(DataLoader &loader, int64_t B, bool eval = false,
                 int64_t i = 0) {
  MlpBatch batch{std::vector<float>(B * 3), std::vector<int64_t>(B)};
  std::vector<void *> dst = {batch.image.data(), batch.label.data()};
  absl::Status status = eval ? loader.evalBatch(i, dst) : loader.nextTrain(dst);
  EXPECT_TRUE(status.ok()) << status;
  return batch;
}

TEST(NpyLoader, DirectoryHeldOutAndShuffled) {
  TempDir dir;
  fs::create_directories(dir.file("d"));
  writeMlpArrays(dir.file("d"), 50, 0, DType::F16, DType::U8);
  saveNpy(dir.file("d/unused.npy"), tensor(DType::F32, {1}, {0}));
  std::unique_ptr<DataLoader> loader =
      openOk(dir.file("d"), mlpInputs(4), withSeed(5, 0.2));
  ASSERT_TRUE(loader);
  // 40 train examples (0..39), 10 held out (40..49): 10 batches, 2 eval.
  EXPECT_EQ(loader->trainBatchesPerEpoch(), 10);
  EXPECT_EQ(loader->numEvalBatches(), 2);
  std::set<int64_t> seen;
  for (int b = 0; b < 10; ++b) {
    MlpBatch batch = nextMlp(*loader, 4);
    for (int r = 0; r < 4; ++r) {
      int64_t label = batch.label[r];
      seen.insert(label);
      // f16 -> f32 is exact for these values.
      EXPECT_EQ(batch.image[r * 3 + 0], static_cast<float>(label));
      EXPECT_EQ(batch.image[r * 3 + 1], static_cast<float>(label) + 0.5f);
      EXPECT_EQ(batch.image[r * 3 + 2], -static_cast<float>(label));
    }
  }
  EXPECT_EQ(seen.size(), 40u);
  EXPECT_EQ(*seen.rbegin(), 39);
  MlpBatch eval = nextMlp(*loader, 4, true, 1);
  EXPECT_EQ(eval.label, (std::vector<int64_t>{44, 45, 46, 47}));
  EXPECT_EQ(loader->describe(),
            dir.file("d") + ": 40 train examples, 10 eval examples held out "
                            "(the last 20%); 10 batches of 4 per epoch, 2 "
                            "eval batches");
}

// Each row of a batch is named in the files (for a diverged step's report):
// the label of example i is i, so the name must say the row's label, in
// shuffled order, through the prefetching wrapper, on either rank, and at a
// later epoch.
TEST(NpyLoader, RowsAreNamedInTheFiles) {
  TempDir dir;
  fs::create_directories(dir.file("d"));
  writeMlpArrays(dir.file("d"), 50);
  std::string files = dir.file("d") + "/image.npy, " + dir.file("d") +
                      "/label.npy";
  for (int rank : {0, 1}) {
    LoaderOptions options = withSeed(5, 0.2);
    options.rank = rank;
    options.worldSize = 2;
    std::unique_ptr<DataLoader> loader =
        openOk(dir.file("d"), mlpInputs(4), options);
    ASSERT_TRUE(loader);
    for (int b = 0; b < 12; ++b) { // 5 global batches an epoch
      std::string state = loader->state();
      MlpBatch batch = nextMlp(*loader, 4);
      for (int r = 0; r < 4; ++r)
        EXPECT_EQ(loader->describeTrainRow(state, r),
                  absl::StrCat("example ", batch.label[r], " of ", files))
            << "rank " << rank << " batch " << b << " row " << r;
    }
    EXPECT_EQ(loader->describeTrainRow("epoch=0 batch=0 items=0", 4), "");
    EXPECT_EQ(loader->describeTrainRow("nonsense", 0), "");
  }
}

// A token window is named by its place in the file it starts in.
TEST(TokenLoader, RowsAreNamedInTheFiles) {
  TempDir dir;
  const int64_t B = 3, T = 8;
  fs::create_directories(dir.file("d"));
  writeFile(dir.file("d/a.bin"), shardBytes(iota(100)));
  writeFile(dir.file("d/b.bin"), shardBytes(iota(100, 1000)));
  std::unique_ptr<DataLoader> loader =
      openOk(dir.file("d") + "/*.bin", tokenInputs(B, T), withSeed(2, 0));
  ASSERT_TRUE(loader);
  for (int step = 0; step < 6; ++step) {
    std::string state = loader->state();
    TokenBatch batch = nextTokens(*loader, B, T);
    for (int64_t r = 0; r < B; ++r) {
      int64_t first = batch.idx[r * T];
      // a.bin holds 0..99, b.bin 1000..1099.
      bool inB = first >= 1000;
      int64_t at = inB ? first - 1000 : first;
      EXPECT_EQ(loader->describeTrainRow(state, r),
                absl::StrCat("tokens ", at, "..", at + T, " of ",
                             dir.file(inB ? "d/b.bin" : "d/a.bin")))
          << step << " " << r;
    }
  }
}

TEST(NpyLoader, TrainAndValFolders) {
  TempDir dir;
  fs::create_directories(dir.file("d/train"));
  fs::create_directories(dir.file("d/val"));
  writeMlpArrays(dir.file("d/train"), 10, 0, DType::F64, DType::I32);
  writeMlpArrays(dir.file("d/val"), 6, 100);
  std::unique_ptr<DataLoader> loader =
      openOk(dir.file("d"), mlpInputs(3), withSeed(0));
  ASSERT_TRUE(loader);
  EXPECT_EQ(loader->trainBatchesPerEpoch(), 3); // 10 examples, 1 dropped
  EXPECT_EQ(loader->numEvalBatches(), 2);
  EXPECT_EQ(nextMlp(*loader, 3, true, 1).label,
            (std::vector<int64_t>{103, 104, 105}));
  MlpBatch batch = nextMlp(*loader, 3);
  EXPECT_EQ(batch.image[1], static_cast<float>(batch.label[0]) + 0.5f);

  // A val/ folder missing an input's file.
  fs::remove(dir.file("d/val/label.npy"));
  EXPECT_NE(openError(dir.file("d"), mlpInputs(3))
                .find("val: no label.npy for input label I64 [3] (.npy files "
                      "here: image.npy)"),
            std::string::npos);
}

TEST(NpyLoader, CommaListAndSingleFile) {
  TempDir dir;
  fs::create_directories(dir.file("a"));
  writeMlpArrays(dir.file("a"), 8);
  std::string spec =
      "label=" + dir.file("a/label.npy") + ",image=" + dir.file("a/image.npy");
  std::unique_ptr<DataLoader> loader =
      openOk(spec, mlpInputs(2), withSeed(1, 0));
  ASSERT_TRUE(loader);
  EXPECT_EQ(loader->trainBatchesPerEpoch(), 4);
  EXPECT_EQ(loader->numEvalBatches(), 0);
  std::set<int64_t> seen;
  for (int b = 0; b < 4; ++b)
    for (int64_t label : nextMlp(*loader, 2).label)
      seen.insert(label);
  EXPECT_EQ(seen.size(), 8u);

  EXPECT_NE(openError("image=" + dir.file("a/image.npy"), mlpInputs(2))
                .find("no file for input 'label'"),
            std::string::npos);
  EXPECT_NE(openError(spec + ",other=x.npy", mlpInputs(2))
                .find("the model has no input 'other' (its inputs: image, "
                      "label)"),
            std::string::npos);
  EXPECT_NE(openError(spec + ",label=x.npy", mlpInputs(2))
                .find("input 'label' is given twice"),
            std::string::npos);
  EXPECT_NE(openError(spec + ",junk", mlpInputs(2))
                .find("'junk' is not of the form name=path.npy"),
            std::string::npos);

  std::unique_ptr<DataLoader> single =
      openOk(dir.file("a/label.npy"), {{"y", DType::I64, {4}}}, withSeed(0, 0));
  ASSERT_TRUE(single);
  EXPECT_EQ(single->trainBatchesPerEpoch(), 2);
  EXPECT_NE(openError(dir.file("a/label.npy"), mlpInputs(2))
                .find("one .npy file cannot feed 2 inputs"),
            std::string::npos);
}

/// Opens a loader for one input `x` of `dtype` and array's shape (a single
/// batch holding every example) over `array`, and returns that batch's
/// bytes or the error. The rows come in shuffled order, so callers compare
/// multisets of values.
absl::StatusOr<std::vector<uint8_t>> convertVia(const HostTensor &array,
                                                DType dtype) {
  TempDir dir;
  std::string path = dir.file("x.npy");
  if (absl::Status status = formats::writeNpy(path, array); !status.ok())
    return status;
  absl::StatusOr<std::unique_ptr<DataLoader>> loader =
      DataLoader::open(path, {{"x", dtype, array.shape}}, withSeed(0, 0));
  if (!loader.ok())
    return loader.status();
  absl::StatusOr<int64_t> bytes = formats::numBytes(dtype, array.shape);
  std::vector<uint8_t> out(static_cast<size_t>(*bytes));
  if (absl::Status status = (*loader)->nextTrain({out.data()}); !status.ok())
    return status;
  return out;
}

template <typename T>
std::multiset<T> asSet(const std::vector<uint8_t> &bytes) {
  std::multiset<T> out;
  for (size_t i = 0; i < bytes.size(); i += sizeof(T)) {
    T value;
    std::memcpy(&value, bytes.data() + i, sizeof(T));
    out.insert(value);
  }
  return out;
}

TEST(NpyLoader, AllowedConversions) {
  auto expectInts = [](const HostTensor &array, DType to,
                       std::multiset<int64_t> want) {
    absl::StatusOr<std::vector<uint8_t>> got = convertVia(array, to);
    ASSERT_TRUE(got.ok()) << got.status();
    std::multiset<int64_t> values;
    if (to == DType::I64)
      values = asSet<int64_t>(*got);
    else
      for (int32_t v : asSet<int32_t>(*got))
        values.insert(v);
    EXPECT_EQ(values, want) << formats::dtypeName(array.dtype);
  };
  expectInts(tensor(DType::I32, {3}, {-5, 0, 7}), DType::I64, {-5, 0, 7});
  expectInts(tensor(DType::U8, {3}, {0, 200, 255}), DType::I64, {0, 200, 255});
  expectInts(tensor(DType::U16, {2}, {0, 65535}), DType::I32, {0, 65535});
  expectInts(tensor(DType::Bool, {2}, {0, 1}), DType::I64, {0, 1});
  expectInts(tensor(DType::I64, {3}, {-2147483648.0, 0, 2147483647.0}),
             DType::I32, {-2147483648LL, 0, 2147483647LL});

  auto expectFloats = [](const HostTensor &array, DType to,
                         std::multiset<double> want) {
    absl::StatusOr<std::vector<uint8_t>> got = convertVia(array, to);
    ASSERT_TRUE(got.ok()) << got.status();
    std::multiset<double> values;
    if (to == DType::F64)
      values = asSet<double>(*got);
    else
      for (float v : asSet<float>(*got))
        values.insert(v);
    EXPECT_EQ(values, want) << formats::dtypeName(array.dtype);
  };
  expectFloats(tensor(DType::F16, {2}, {0.5, -1024}), DType::F32, {0.5, -1024});
  expectFloats(tensor(DType::F64, {2}, {0.1, 3}), DType::F32,
               {static_cast<double>(0.1f), 3});
  expectFloats(tensor(DType::F32, {2}, {0.25, 3}), DType::F64, {0.25, 3});
  expectFloats(tensor(DType::I64, {2}, {-3, 1 << 20}), DType::F32,
               {-3, 1 << 20});
  expectFloats(tensor(DType::U8, {2}, {7, 255}), DType::F64, {7, 255});
}

TEST(NpyLoader, RefusedConversions) {
  auto error = [](const HostTensor &array, DType to) {
    absl::StatusOr<std::vector<uint8_t>> got = convertVia(array, to);
    return got.ok() ? std::string() : std::string(got.status().message());
  };
  std::string message = error(tensor(DType::F32, {2}, {1, 2}), DType::I64);
  EXPECT_NE(message.find("x.npy: cannot convert F32 data to input x I64 [2] "
                         "(floats do not convert to integers)"),
            std::string::npos)
      << message;
  EXPECT_NE(error(tensor(DType::F32, {2}, {1, 2}), DType::F16)
                .find("16-bit float inputs need data of the same dtype"),
            std::string::npos);
  EXPECT_NE(error(tensor(DType::I64, {2}, {1, 0}), DType::Bool)
                .find("Bool inputs need Bool data"),
            std::string::npos);
  message = error(tensor(DType::I64, {3, 2}, {0, 1, 2, 3, 3000000000.0, 5}),
                  DType::I32);
  EXPECT_NE(message.find("x.npy: element 4 (example 2) is 3000000000, which "
                         "does not fit input x I32 [3, 2]"),
            std::string::npos)
      << message;
  EXPECT_NE(error(tensor(DType::I16, {2}, {-1, 2}), DType::U16)
                .find("element 0 (example 0) is -1"),
            std::string::npos);
}

TEST(NpyLoader, ShapeAndCountMismatches) {
  TempDir dir;
  fs::create_directories(dir.file("d"));
  saveNpy(dir.file("d/image.npy"), tensor(DType::F32, {4, 4}, {}));
  saveNpy(dir.file("d/label.npy"), tensor(DType::I64, {4}, {}));
  EXPECT_EQ(openError(dir.file("d"), mlpInputs(2)),
            dir.file("d/image.npy") +
                ": shape [4, 4] does not fit input image F32 [2, 3]: expected "
                "[N, 3] (N examples)");
  saveNpy(dir.file("d/image.npy"), tensor(DType::F32, {4}, {}));
  EXPECT_NE(
      openError(dir.file("d"), mlpInputs(2)).find("shape [4] does not fit"),
      std::string::npos);
  saveNpy(dir.file("d/image.npy"), tensor(DType::F32, {5, 3}, {}));
  EXPECT_EQ(openError(dir.file("d"), mlpInputs(2)),
            dir.file("d/label.npy") + ": has 4 examples, but " +
                dir.file("d/image.npy") + " has 5");
  saveNpy(dir.file("d/label.npy"), tensor(DType::I64, {5}, {}));
  EXPECT_EQ(openError(dir.file("d"), mlpInputs(8), withSeed(0, 0)),
            dir.file("d") + ": 5 train examples, fewer than one batch of 8");
}

//===----------------------------------------------------------------------===//
// The bundled datasets
//===----------------------------------------------------------------------===//

TEST(BundledData, CharGpt) {
  std::string dir = std::string(SINTER_SOURCE_DIR) + "/examples/data/chargpt";
  LoaderOptions options;
  options.vocabSize = 65; // examples/chargpt.pbtxt
  std::unique_ptr<DataLoader> loader =
      openOk(dir, tokenInputs(64, 256), options);
  ASSERT_TRUE(loader);
  EXPECT_GT(loader->trainBatchesPerEpoch(), 0);
  EXPECT_GT(loader->numEvalBatches(), 0);
}

TEST(BundledData, Gpt2Bytes) {
  std::string dir = std::string(SINTER_SOURCE_DIR) + "/examples/data/gpt2_124m";
  LoaderOptions options;
  options.vocabSize = 256; // byte tokens only
  std::unique_ptr<DataLoader> loader =
      openOk(dir, tokenInputs(4, 1024), options);
  ASSERT_TRUE(loader);
  EXPECT_GT(loader->numEvalBatches(), 0);
}

TEST(BundledData, MlpClassifier) {
  std::string dir =
      std::string(SINTER_SOURCE_DIR) + "/examples/data/mlp_classifier";
  std::unique_ptr<DataLoader> loader = openOk(
      dir, {{"image", DType::F32, {64, 784}}, {"label", DType::I64, {64}}});
  ASSERT_TRUE(loader);
  EXPECT_EQ(loader->trainBatchesPerEpoch(), 2048 / 64);
  EXPECT_EQ(loader->numEvalBatches(), 512 / 64);
  std::vector<float> image(64 * 784);
  std::vector<int64_t> label(64);
  ASSERT_TRUE(loader->nextTrain({image.data(), label.data()}).ok());
  for (int64_t value : label) {
    EXPECT_GE(value, 0);
    EXPECT_LT(value, 10);
  }
}

} // namespace
} // namespace sinter::data
