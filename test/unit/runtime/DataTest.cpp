//===- DataTest.cpp - tests of the training binary's token data -----------===//
//
// Token data: one case per llm.c header rule and per raw-file rule (checking
// the one-line message names the file), directory and glob discovery, the
// held-out split, windows and their one-token-shifted targets, epoch
// coverage (each window once, the remainder dropped), seeded order (pinned
// against an independent Python reimplementation of the generator), and
// state()/restore() resuming a randomly interrupted run exactly, tokens
// checked against the vocabulary as they are copied. The .npy loader and
// the bundled datasets: NpyLoaderTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "test/unit/runtime/DataTestUtil.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace sinter::data {
namespace {

using namespace datatest;

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

} // namespace
} // namespace sinter::data
