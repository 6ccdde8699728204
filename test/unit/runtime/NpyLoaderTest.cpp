//===- NpyLoaderTest.cpp - tests of the .npy loader and bundled data ------===//
//
// .npy data: the three spec forms, every dtype conversion rule, shape and
// count mismatches, and rows named in the files' errors (token files' too).
// Finally the bundled datasets open with their examples' inputs. Token data:
// DataTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "test/unit/runtime/DataTestUtil.h"

#include <gtest/gtest.h>

#include <set>

#ifndef SINTER_SOURCE_DIR
#define SINTER_SOURCE_DIR "."
#endif

namespace sinter::data {
namespace {

using namespace datatest;

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
  std::string files =
      dir.file("d") + "/image.npy, " + dir.file("d") + "/label.npy";
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

// Whether a label can be the ignore index decides whether the trainer
// counts labels each step (docs/Distributed.md, "Labels that do not count"):
// .npy arrays are looked through (their train split: labels 0..39 here,
// 40..49 held out), token ids are never negative, and a float input may hold
// anything.
TEST(DataLoaders, SayWhetherAnInputMayHoldAValue) {
  TempDir dir;
  fs::create_directories(dir.file("d"));
  writeMlpArrays(dir.file("d"), 50);
  std::unique_ptr<DataLoader> npy =
      openOk(dir.file("d"), mlpInputs(4), withSeed(5, 0.2));
  ASSERT_TRUE(npy);
  EXPECT_TRUE(npy->mayHold(1, 0));
  EXPECT_TRUE(npy->mayHold(1, 39));
  EXPECT_TRUE(npy->mayHold(1, 45));  // held out: weighted there too
  EXPECT_FALSE(npy->mayHold(1, 50)); // in neither split
  EXPECT_FALSE(npy->mayHold(1, -1));
  EXPECT_TRUE(npy->mayHold(0, -1)); // the float images
  fs::create_directories(dir.file("e"));
  writeMlpArrays(dir.file("e"), 50, -1);
  std::unique_ptr<DataLoader> masked =
      openOk(dir.file("e"), mlpInputs(4), withSeed(5, 0.2));
  ASSERT_TRUE(masked);
  EXPECT_TRUE(masked->mayHold(1, -1));

  writeFile(dir.file("train.bin"), shardBytes(iota(200)));
  std::unique_ptr<DataLoader> tokens =
      openOk(dir.file("train.bin"), tokenInputs(3, 8), withSeed(1, 0));
  ASSERT_TRUE(tokens);
  EXPECT_FALSE(tokens->mayHold(1, -1));
  EXPECT_FALSE(tokens->mayHold(1, -100));
  EXPECT_TRUE(tokens->mayHold(1, 0));
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
  // A label only the held-out folder holds.
  EXPECT_TRUE(loader->mayHold(1, 103));
  EXPECT_FALSE(loader->mayHold(1, 200));

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
