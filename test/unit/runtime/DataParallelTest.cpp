//===- DataParallelTest.cpp - sharded, memory-mapped and prefetched data --===//
//
// Data parallelism: for token and .npy data and W in {2, 3}, the W ranks'
// batches side by side are byte for byte the batches of one process with
// batch W*B, over several epochs, train and eval; every rank prints the same
// state; a state saved at one world size restores at another at the same
// item position (checked against shuffledOrder directly). Memory-mapped
// token files: a directory of 200 MB of shards opens fast and adds almost
// nothing to the resident set. Prefetching: the same batches, states and
// errors as the plain loader, including after restores, with the batch
// actually prepared ahead.
//
//===----------------------------------------------------------------------===//

#include "runtime/Data/Batching.h"
#include "runtime/Data/DataLoader.h"
#include "runtime/Data/TokenFiles.h"
#include "runtime/Formats/Npy.h"

#include "absl/strings/str_cat.h"

#include "test/unit/runtime/TestFiles.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <unistd.h>

namespace sinter::data {
namespace {

namespace fs = std::filesystem;
using formats::DType;
using formats::HostTensor;
using sinter::test::writeFile;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

struct TempDir : sinter::test::TempDir {
  TempDir() : sinter::test::TempDir("sinter-data-parallel") {}
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

/// Tokens begin, ..., begin + count - 1: a token's value is its position.
std::vector<uint16_t> iota(int64_t count, int64_t begin = 0) {
  std::vector<uint16_t> tokens(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    tokens[static_cast<size_t>(i)] = static_cast<uint16_t>(begin + i);
  return tokens;
}

std::vector<InputSpec> tokenInputs(int64_t B, int64_t T) {
  return {{"idx", DType::I64, {B, T}}, {"targets", DType::I64, {B, T}}};
}

std::vector<InputSpec> mlpInputs(int64_t B) {
  return {{"image", DType::F32, {B, 3}}, {"label", DType::I64, {B}}};
}

LoaderOptions shard(int rank, int worldSize, uint64_t seed = 11,
                    double evalFraction = 0.2) {
  LoaderOptions options;
  options.seed = seed;
  options.evalFraction = evalFraction;
  options.rank = rank;
  options.worldSize = worldSize;
  return options;
}

std::unique_ptr<DataLoader> openOk(const std::string &spec,
                                   const std::vector<InputSpec> &inputs,
                                   const LoaderOptions &options) {
  absl::StatusOr<std::unique_ptr<DataLoader>> loader =
      DataLoader::open(spec, inputs, options);
  EXPECT_TRUE(loader.ok()) << loader.status();
  return loader.ok() ? *std::move(loader) : nullptr;
}

std::string openError(const std::string &spec,
                      const std::vector<InputSpec> &inputs,
                      const LoaderOptions &options) {
  absl::StatusOr<std::unique_ptr<DataLoader>> loader =
      DataLoader::open(spec, inputs, options);
  return loader.ok() ? "" : std::string(loader.status().message());
}

/// One batch as raw bytes, one buffer per input.
using Batch = std::vector<std::vector<uint8_t>>;

Batch emptyBatch(const std::vector<InputSpec> &inputs) {
  Batch batch;
  for (const InputSpec &input : inputs)
    batch.emplace_back(
        static_cast<size_t>(*formats::numBytes(input.dtype, input.shape)));
  return batch;
}

std::vector<void *> pointers(Batch &batch) {
  std::vector<void *> out;
  for (std::vector<uint8_t> &buffer : batch)
    out.push_back(buffer.data());
  return out;
}

/// The next training batch (eval batch `evalIndex` when >= 0).
Batch next(DataLoader &loader, const std::vector<InputSpec> &inputs,
           int64_t evalIndex = -1) {
  Batch batch = emptyBatch(inputs);
  absl::Status status = evalIndex >= 0
                            ? loader.evalBatch(evalIndex, pointers(batch))
                            : loader.nextTrain(pointers(batch));
  EXPECT_TRUE(status.ok()) << status;
  return batch;
}

/// The ranks' batches side by side: input k's buffers concatenated in rank
/// order, i.e. the global batch (row-major, batch dimension first).
Batch concat(const std::vector<Batch> &perRank) {
  Batch out(perRank[0].size());
  for (const Batch &batch : perRank)
    for (size_t k = 0; k < batch.size(); ++k)
      out[k].insert(out[k].end(), batch[k].begin(), batch[k].end());
  return out;
}

/// `inputs` with the batch dimension multiplied by `factor`.
std::vector<InputSpec> scaled(std::vector<InputSpec> inputs, int64_t factor) {
  for (InputSpec &input : inputs)
    input.shape[0] *= factor;
  return inputs;
}

/// Opens `spec` at world size W (one loader per rank) and once with batch
/// W*B at world size 1, and checks over `steps` training steps (several
/// epochs) that the ranks' batches side by side are the single process's,
/// that every rank's state is the single process's, and the same for every
/// eval batch.
void expectShardsMatchGlobal(const std::string &spec,
                             const std::vector<InputSpec> &inputs, int W,
                             int64_t epochs) {
  SCOPED_TRACE(absl::StrCat("W = ", W));
  std::vector<InputSpec> globalInputs = scaled(inputs, W);
  std::unique_ptr<DataLoader> single = openOk(spec, globalInputs, shard(0, 1));
  ASSERT_TRUE(single);
  std::vector<std::unique_ptr<DataLoader>> ranks;
  for (int r = 0; r < W; ++r) {
    ranks.push_back(openOk(spec, inputs, shard(r, W)));
    ASSERT_TRUE(ranks.back());
    EXPECT_EQ(ranks.back()->trainBatchesPerEpoch(),
              single->trainBatchesPerEpoch());
    EXPECT_EQ(ranks.back()->numEvalBatches(), single->numEvalBatches());
  }
  int64_t steps = epochs * single->trainBatchesPerEpoch() + 1;
  for (int64_t step = 0; step < steps; ++step) {
    std::vector<Batch> perRank;
    for (int r = 0; r < W; ++r) {
      EXPECT_EQ(ranks[r]->state(), single->state()) << "step " << step;
      EXPECT_EQ(ranks[r]->epoch(), single->epoch());
      perRank.push_back(next(*ranks[r], inputs));
    }
    ASSERT_EQ(concat(perRank), next(*single, globalInputs))
        << "step " << step << ", " << single->state();
  }
  EXPECT_EQ(single->epoch(), epochs);
  ASSERT_GT(single->numEvalBatches(), 0);
  for (int64_t i = 0; i < single->numEvalBatches(); ++i) {
    std::vector<Batch> perRank;
    for (int r = 0; r < W; ++r)
      perRank.push_back(next(*ranks[r], inputs, i));
    EXPECT_EQ(concat(perRank), next(*single, globalInputs, i)) << "eval " << i;
  }
}

/// A directory of two train shards (windows cross the boundary) of token
/// values = stream positions, and a val shard.
std::string writeTokenDir(const TempDir &dir, int64_t tokensPerShard) {
  writeFile(dir.file("d/shard_train_1.bin"), shardBytes(iota(tokensPerShard)));
  writeFile(dir.file("d/shard_train_2.bin"),
            shardBytes(iota(tokensPerShard, tokensPerShard)));
  writeFile(dir.file("d/shard_val_1.bin"), shardBytes(iota(300, 40000)));
  return dir.file("d");
}

/// N examples: image row i = (i, i + 0.5, -i), label i.
std::string writeMlpDir(const TempDir &dir, int64_t N) {
  HostTensor image = *HostTensor::zeros(DType::F32, {N, 3});
  HostTensor label = *HostTensor::zeros(DType::I64, {N});
  for (int64_t i = 0; i < N; ++i) {
    float row[3] = {static_cast<float>(i), static_cast<float>(i) + 0.5f,
                    -static_cast<float>(i)};
    std::memcpy(image.data.data() + 12 * i, row, 12);
    std::memcpy(label.data.data() + 8 * i, &i, 8);
  }
  std::string d = dir.file("m/x");
  d = d.substr(0, d.size() - 2);
  EXPECT_TRUE(formats::writeNpy(d + "/image.npy", image).ok());
  EXPECT_TRUE(formats::writeNpy(d + "/label.npy", label).ok());
  return d;
}

//===----------------------------------------------------------------------===//
// Sharding
//===----------------------------------------------------------------------===//

TEST(DataParallel, TokenShardsAreSlicesOfTheGlobalBatch) {
  TempDir dir;
  // 2 x 257 tokens, the last 20% (102) held out: 412 train tokens, 102
  // windows of 5; with B = 2, W = 3: 17 global batches per epoch.
  std::string spec = writeTokenDir(dir, 257);
  for (int W : {2, 3})
    expectShardsMatchGlobal(spec, tokenInputs(2, 4), W, /*epochs=*/3);
  // The held-out split instead of the val shard.
  fs::remove(dir.file("d/shard_val_1.bin"));
  for (int W : {2, 3})
    expectShardsMatchGlobal(spec, tokenInputs(3, 4), W, /*epochs=*/2);
}

TEST(DataParallel, NpyShardsAreSlicesOfTheGlobalBatch) {
  TempDir dir;
  std::string spec = writeMlpDir(dir, 77); // 62 train, 15 eval examples
  for (int W : {2, 3})
    expectShardsMatchGlobal(spec, mlpInputs(4), W, /*epochs=*/3);
}

TEST(DataParallel, DescribeAndErrorsNameTheGlobalBatch) {
  TempDir dir;
  writeFile(dir.file("t.bin"), shardBytes(iota(1000)));
  std::unique_ptr<DataLoader> loader =
      openOk(dir.file("t.bin"), tokenInputs(8, 4), shard(1, 2, 0, 0.1));
  ASSERT_TRUE(loader);
  // 900 train tokens: 224 windows, 14 global batches of 16; 100 eval
  // tokens: 24 windows, 1 eval batch.
  EXPECT_EQ(loader->describe(),
            dir.file("t.bin") +
                ": 900 train tokens in 1 file, 100 eval tokens held out (the "
                "last 10%); 14 global batches of 16x4 per epoch, 1 eval "
                "batch; rank 1 of 2: rows 8..15 of each global batch of 16");

  writeFile(dir.file("small.bin"), shardBytes(iota(60)));
  EXPECT_EQ(
      openError(dir.file("small.bin"), tokenInputs(2, 16), shard(0, 2, 0, 0)),
      dir.file("small.bin") +
          ": 60 train tokens make 3 windows of 17 tokens, fewer than "
          "one global batch of 2 x 2 windows; a global batch needs at "
          "least 65 train tokens");

  std::string npy = writeMlpDir(dir, 10);
  EXPECT_EQ(openError(npy, mlpInputs(4), shard(2, 3, 0, 0)),
            npy + ": 10 train examples, fewer than one global batch of 3 x 4 "
                  "examples");
  loader = openOk(npy, mlpInputs(2), shard(0, 2, 0, 0.2));
  ASSERT_TRUE(loader);
  EXPECT_EQ(loader->describe(),
            npy + ": 8 train examples, 2 eval examples held out (the last "
                  "20%); 2 global batches of 4 per epoch, 0 eval batches "
                  "(too few eval examples for one); rank 0 of 2: rows 0..1 "
                  "of each global batch of 4");

  EXPECT_NE(openError(npy, mlpInputs(2), shard(2, 2))
                .find("rank 2 is not in [0, 2) (the world size)"),
            std::string::npos);
  EXPECT_NE(openError(npy, mlpInputs(2), shard(-1, 2)).find("rank -1 is not"),
            std::string::npos);
  EXPECT_NE(openError(npy, mlpInputs(2), shard(0, 0))
                .find("the world size 0 is not at least 1"),
            std::string::npos);
}

/// Window indices of the next global batch at world size W: rank r's rows
/// (window = first token / T, tokens being their positions) side by side.
std::vector<int64_t>
nextGlobalWindows(std::vector<std::unique_ptr<DataLoader>> &ranks, int64_t B,
                  int64_t T) {
  std::vector<int64_t> windows;
  for (std::unique_ptr<DataLoader> &rank : ranks) {
    Batch batch = next(*rank, tokenInputs(B, T));
    for (int64_t r = 0; r < B; ++r) {
      int64_t first;
      std::memcpy(&first, batch[0].data() + 8 * r * T, 8);
      windows.push_back(first / T);
    }
  }
  return windows;
}

std::vector<std::unique_ptr<DataLoader>>
openRanks(const std::string &spec, int64_t B, int64_t T, int W) {
  std::vector<std::unique_ptr<DataLoader>> ranks;
  for (int r = 0; r < W; ++r)
    ranks.push_back(openOk(spec, tokenInputs(B, T), shard(r, W, 5, 0)));
  return ranks;
}

TEST(DataParallel, RestoreAtAnotherWorldSizeKeepsTheItemPosition) {
  TempDir dir;
  const int64_t T = 4, numWindows = 50;
  writeFile(dir.file("t.bin"), shardBytes(iota(numWindows * T + 1)));
  std::string spec = dir.file("t.bin");
  std::mt19937 pick(7);
  // (W, B) saved -> (W', B') restored, including to and from one process.
  const int64_t shapes[][4] = {
      {2, 2, 3, 2}, {3, 2, 2, 2}, {2, 3, 1, 6}, {1, 4, 3, 4}, {3, 3, 2, 5}};
  for (const auto &shape : shapes) {
    int W = static_cast<int>(shape[0]), W2 = static_cast<int>(shape[2]);
    int64_t B = shape[1], B2 = shape[3], G2 = W2 * B2;
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<std::unique_ptr<DataLoader>> before =
          openRanks(spec, B, T, W);
      int64_t steps = std::uniform_int_distribution<int64_t>(0, 40)(pick);
      for (int64_t s = 0; s < steps; ++s)
        nextGlobalWindows(before, B, T);
      std::string state = before[0]->state();
      SCOPED_TRACE(absl::StrCat(W, "x", B, " -> ", W2, "x", B2, " at ", state));

      // The position in items: epoch E, K items of its order consumed.
      int64_t E = before[0]->epoch(), K = 0;
      ASSERT_EQ(sscanf(state.c_str(), "epoch=%*d batch=%*d items=%ld", &K), 1);
      EXPECT_EQ(K % (W * B), 0);

      std::vector<std::unique_ptr<DataLoader>> after =
          openRanks(spec, B2, T, W2);
      for (std::unique_ptr<DataLoader> &rank : after)
        ASSERT_TRUE(rank->restore(state).ok());
      // Expected: the items after K in epoch E's order, in global batches
      // of W' * B'; a rest that cannot fill one is dropped.
      for (int step = 0; step < 25; ++step) {
        if (K + G2 > numWindows) {
          ++E;
          K = 0;
        }
        for (std::unique_ptr<DataLoader> &rank : after) {
          EXPECT_EQ(rank->epoch(), E);
          EXPECT_EQ(rank->state(), after[0]->state());
        }
        EXPECT_EQ(after[0]->state(),
                  absl::StrCat("epoch=", E, " batch=", K / G2, " items=", K));
        std::vector<int64_t> order = shuffledOrder(5, E, numWindows);
        std::vector<int64_t> want(order.begin() + K, order.begin() + K + G2);
        ASSERT_EQ(nextGlobalWindows(after, B2, T), want) << "step " << step;
        K += G2;
      }
    }
  }
}

TEST(DataParallel, OldStatesCountPerRankBatches) {
  TempDir dir;
  writeFile(dir.file("t.bin"), shardBytes(iota(50 * 4 + 1)));
  // A single-process run with B = 2 saved "epoch=1 batch=5": 10 items in.
  std::vector<std::unique_ptr<DataLoader>> ranks =
      openRanks(dir.file("t.bin"), 2, 4, 2);
  for (std::unique_ptr<DataLoader> &rank : ranks)
    ASSERT_TRUE(rank->restore("epoch=1 batch=5").ok());
  EXPECT_EQ(ranks[1]->state(), "epoch=1 batch=2 items=10");
  std::vector<int64_t> order = shuffledOrder(5, 1, 50);
  EXPECT_EQ(nextGlobalWindows(ranks, 2, 4),
            std::vector<int64_t>(order.begin() + 10, order.begin() + 14));
}

TEST(DataParallel, NpyRestoreAtAnotherWorldSize) {
  TempDir dir;
  std::string spec = writeMlpDir(dir, 40);
  auto open = [&](int64_t B, int W) {
    std::vector<std::unique_ptr<DataLoader>> ranks;
    for (int r = 0; r < W; ++r)
      ranks.push_back(openOk(spec, mlpInputs(B), shard(r, W, 3, 0)));
    return ranks;
  };
  auto labels = [&](std::vector<std::unique_ptr<DataLoader>> &ranks,
                    int64_t B) {
    std::vector<int64_t> out;
    for (std::unique_ptr<DataLoader> &rank : ranks) {
      Batch batch = next(*rank, mlpInputs(B));
      for (int64_t r = 0; r < B; ++r) {
        int64_t label;
        std::memcpy(&label, batch[1].data() + 8 * r, 8);
        out.push_back(label);
      }
    }
    return out;
  };
  std::vector<std::unique_ptr<DataLoader>> two = open(4, 2);
  for (int s = 0; s < 3; ++s)
    labels(two, 4); // 24 of 40 examples of epoch 0
  std::string state = two[0]->state();
  EXPECT_EQ(state, "epoch=0 batch=3 items=24");
  std::vector<std::unique_ptr<DataLoader>> three = open(2, 3);
  for (std::unique_ptr<DataLoader> &rank : three)
    ASSERT_TRUE(rank->restore(state).ok());
  std::vector<int64_t> order = shuffledOrder(3, 0, 40);
  EXPECT_EQ(labels(three, 2),
            std::vector<int64_t>(order.begin() + 24, order.begin() + 30));
  EXPECT_EQ(labels(three, 2),
            std::vector<int64_t>(order.begin() + 30, order.begin() + 36));
  // 4 items are left, fewer than 6: the next batch starts epoch 1.
  EXPECT_EQ(three[2]->state(), "epoch=1 batch=0 items=0");
  order = shuffledOrder(3, 1, 40);
  EXPECT_EQ(labels(three, 2),
            std::vector<int64_t>(order.begin(), order.begin() + 6));
}

//===----------------------------------------------------------------------===//
// Memory-mapped token files
//===----------------------------------------------------------------------===//

/// Resident set size of this process, from /proc/self/statm.
int64_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

TEST(MappedTokens, LargeShardsOpenFastWithoutResidentMemory) {
  TempDir dir;
  // 4 llm.c shards of 50 MB: a real header, then a hole (tokens 0), so the
  // files cost no disk.
  const int64_t tokensPerShard = 25 * 1000 * 1000;
  for (int i = 0; i < 4; ++i) {
    std::string path = dir.file(absl::StrCat("d/shard_train_", i, ".bin"));
    std::string header = shardBytes({});
    int32_t count = static_cast<int32_t>(tokensPerShard);
    std::memcpy(header.data() + 8, &count, 4);
    writeFile(path, header);
    fs::resize_file(path, 1024 + 2 * tokensPerShard);
  }
  const int64_t fileBytes = 4 * (1024 + 2 * tokensPerShard);
  LoaderOptions options = shard(0, 1, 0, 0.01);
  options.vocabSize = 50257;

  int64_t rssBefore = residentBytes();
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<DataLoader> loader =
      openOk(dir.file("d"), tokenInputs(4, 1024), options);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  int64_t rssAfter = residentBytes();
  ASSERT_TRUE(loader);
  EXPECT_LT(seconds, 0.5);
  // Reading the files in would add 200 MB; a mapping adds page tables and
  // the four header pages.
  EXPECT_LT(rssAfter - rssBefore, fileBytes / 20)
      << "resident set grew by " << (rssAfter - rssBefore) << " bytes";
  EXPECT_EQ(loader->describe().rfind(
                dir.file("d") + ": 99,000,000 train tokens in 4 files", 0),
            0u)
      << loader->describe();

  // Batches read through the mapping (the holes read as token 0), across
  // the whole stream, and eval from the held-out tail.
  std::vector<InputSpec> inputs = tokenInputs(4, 1024);
  for (int step = 0; step < 20; ++step) {
    Batch batch = next(*loader, inputs);
    for (const std::vector<uint8_t> &buffer : batch)
      for (uint8_t byte : buffer)
        ASSERT_EQ(byte, 0);
  }
  next(*loader, inputs, loader->numEvalBatches() - 1);
  EXPECT_LT(residentBytes() - rssBefore, fileBytes / 10);
}

//===----------------------------------------------------------------------===//
// Prefetching
//===----------------------------------------------------------------------===//

std::unique_ptr<DataLoader> prefetched(std::unique_ptr<DataLoader> loader,
                                       const std::vector<InputSpec> &inputs) {
  absl::StatusOr<std::unique_ptr<DataLoader>> wrapped =
      prefetching(std::move(loader), inputs);
  EXPECT_TRUE(wrapped.ok()) << wrapped.status();
  return wrapped.ok() ? *std::move(wrapped) : nullptr;
}

/// Steps `plain` and `fetched` side by side, comparing states, epochs,
/// batches and (every few steps) an eval batch, with restores to random
/// earlier states in between.
void expectSameAsPlain(DataLoader &plain, DataLoader &fetched,
                       const std::vector<InputSpec> &inputs) {
  EXPECT_EQ(fetched.describe(), plain.describe());
  EXPECT_EQ(fetched.trainBatchesPerEpoch(), plain.trainBatchesPerEpoch());
  EXPECT_EQ(fetched.numEvalBatches(), plain.numEvalBatches());
  std::mt19937 pick(99);
  std::vector<std::string> seen;
  int64_t steps = 3 * plain.trainBatchesPerEpoch();
  for (int64_t step = 0; step < steps; ++step) {
    ASSERT_EQ(fetched.state(), plain.state()) << "step " << step;
    EXPECT_EQ(fetched.epoch(), plain.epoch());
    seen.push_back(plain.state());
    ASSERT_EQ(next(fetched, inputs), next(plain, inputs)) << "step " << step;
    if (step % 5 == 2 && plain.numEvalBatches() > 0) {
      int64_t i = step % plain.numEvalBatches();
      EXPECT_EQ(next(fetched, inputs, i), next(plain, inputs, i));
    }
    if (step % 11 == 10) {
      std::string back =
          seen[std::uniform_int_distribution<size_t>(0, seen.size() - 1)(pick)];
      ASSERT_TRUE(plain.restore(back).ok());
      ASSERT_TRUE(fetched.restore(back).ok());
      EXPECT_EQ(fetched.state(), back);
    }
  }
  // A rejected state changes nothing.
  EXPECT_EQ(fetched.restore("epoch=x").message(),
            plain.restore("epoch=x").message());
  EXPECT_EQ(fetched.state(), plain.state());
  EXPECT_EQ(next(fetched, inputs), next(plain, inputs));
}

TEST(Prefetch, SameBatchesAndStatesAsPlain) {
  TempDir dir;
  std::string tokens = writeTokenDir(dir, 257);
  std::vector<InputSpec> inputs = tokenInputs(2, 4);
  for (int rank : {0, 1}) {
    std::unique_ptr<DataLoader> plain = openOk(tokens, inputs, shard(rank, 2));
    std::unique_ptr<DataLoader> fetched =
        prefetched(openOk(tokens, inputs, shard(rank, 2)), inputs);
    ASSERT_TRUE(plain && fetched);
    expectSameAsPlain(*plain, *fetched, inputs);
  }
  // Through the option, on .npy data.
  std::string npy = writeMlpDir(dir, 60);
  LoaderOptions options = shard(0, 1);
  std::unique_ptr<DataLoader> plain = openOk(npy, mlpInputs(4), options);
  options.prefetch = true;
  std::unique_ptr<DataLoader> fetched = openOk(npy, mlpInputs(4), options);
  ASSERT_TRUE(plain && fetched);
  expectSameAsPlain(*plain, *fetched, mlpInputs(4));
}

TEST(Prefetch, ErrorsSurfaceOnTheCallThatWouldHaveMadeThem) {
  TempDir dir;
  std::vector<uint16_t> tokens = iota(400);
  for (uint16_t &token : tokens)
    token %= 50;
  tokens[203] = 77;
  writeFile(dir.file("bad.bin"), shardBytes(tokens));
  LoaderOptions options = shard(0, 1, 4, 0);
  options.vocabSize = 50;
  std::vector<InputSpec> inputs = tokenInputs(2, 4);
  std::unique_ptr<DataLoader> plain =
      openOk(dir.file("bad.bin"), inputs, options);
  options.prefetch = true;
  std::unique_ptr<DataLoader> fetched =
      openOk(dir.file("bad.bin"), inputs, options);
  ASSERT_TRUE(plain && fetched);
  int errors = 0;
  for (int step = 0; step < 2 * plain->trainBatchesPerEpoch(); ++step) {
    ASSERT_EQ(fetched->state(), plain->state()) << "step " << step;
    Batch a = emptyBatch(inputs), b = emptyBatch(inputs);
    absl::Status plainStatus = plain->nextTrain(pointers(a));
    absl::Status fetchedStatus = fetched->nextTrain(pointers(b));
    ASSERT_EQ(fetchedStatus, plainStatus) << "step " << step;
    if (!plainStatus.ok()) {
      ++errors;
      EXPECT_EQ(plainStatus.message(),
                dir.file("bad.bin") + ": byte offset 1430: token 203 is 77, "
                                      "not below the vocabulary size 50");
      // Stuck on the bad batch, as the plain loader is, until restored
      // past it.
      ASSERT_EQ(fetched->nextTrain(pointers(b)), plain->nextTrain(pointers(a)));
      std::string past =
          absl::StrCat("epoch=", plain->epoch() + 1, " batch=0 items=0");
      ASSERT_TRUE(plain->restore(past).ok());
      ASSERT_TRUE(fetched->restore(past).ok());
    } else {
      ASSERT_EQ(b, a);
    }
  }
  EXPECT_GE(errors, 1);
}

/// Counts nextTrain calls; batch i holds the byte i; fails at batch
/// `failAt`.
class CountingLoader final : public DataLoader {
public:
  explicit CountingLoader(int failAt) : failAt(failAt) {}
  absl::Status nextTrain(const std::vector<void *> &dst) override {
    int i = calls++;
    if (i == failAt)
      return absl::DataLossError("batch " + std::to_string(i));
    std::memset(dst[0], i, 4);
    ++position;
    return absl::OkStatus();
  }
  int64_t numEvalBatches() const override { return 0; }
  absl::Status evalBatch(int64_t, const std::vector<void *> &) override {
    return absl::OutOfRangeError("none");
  }
  std::string state() const override { return std::to_string(position); }
  absl::Status restore(std::string_view) override { return absl::OkStatus(); }
  int64_t epoch() const override { return 0; }
  int64_t trainBatchesPerEpoch() const override { return 100; }
  std::string describe() const override { return "counting"; }

  std::atomic<int> calls{0};
  int position = 0;
  const int failAt;
};

TEST(Prefetch, PreparesOneBatchAheadAndShutsDownCleanly) {
  std::vector<InputSpec> inputs = {{"x", DType::U8, {4}}};
  auto counting = std::make_unique<CountingLoader>(3);
  CountingLoader *inner = counting.get();
  std::unique_ptr<DataLoader> loader = prefetched(std::move(counting), inputs);
  ASSERT_TRUE(loader);
  auto waitForCalls = [&](int n) {
    for (int i = 0; i < 2000 && inner->calls < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return inner->calls.load();
  };
  EXPECT_EQ(waitForCalls(1), 1); // the first batch, before anyone asked
  EXPECT_EQ(loader->state(), "0");
  for (int i = 0; i < 3; ++i) {
    Batch batch = emptyBatch(inputs);
    ASSERT_TRUE(loader->nextTrain(pointers(batch)).ok());
    EXPECT_EQ(batch[0], std::vector<uint8_t>(4, static_cast<uint8_t>(i)));
    EXPECT_EQ(loader->state(), std::to_string(i + 1));
    EXPECT_EQ(waitForCalls(i + 2), i + 2); // one ahead, never more
  }
  // Batch 3 failed in the background; the call that asks for it says so.
  Batch batch = emptyBatch(inputs);
  absl::Status status = loader->nextTrain(pointers(batch));
  EXPECT_EQ(status, absl::DataLossError("batch 3"));
  EXPECT_EQ(loader->state(), "3");
  EXPECT_FALSE(loader->nextTrain({nullptr}).ok()); // checked, nothing consumed
  ASSERT_TRUE(loader->nextTrain(pointers(batch)).ok());
  EXPECT_EQ(batch[0], std::vector<uint8_t>(4, 4));
  // Destroyed with a batch in flight (or done): joins the worker.
  loader.reset();

  // A prefetcher destroyed right after it was made.
  prefetched(std::make_unique<CountingLoader>(-1), inputs).reset();
}

} // namespace
} // namespace sinter::data
