//===- CheckpointTest.cpp - runtime/Train/Checkpoint ----------------------===//
//
// Round trips, the `latest` pointer, re-saving a step, and every way a
// checkpoint on disk can be damaged: each must be one error naming the file.
//
//===----------------------------------------------------------------------===//

#include "runtime/Train/Checkpoint.h"

#include "absl/strings/str_format.h"
#include "runtime/Formats/FileIO.h"
#include "test/unit/runtime/TestFiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/resource.h>

using namespace sinter;
using namespace sinter::train;
namespace fs = std::filesystem;

namespace {

class CheckpointTest : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_FALSE(root.empty()); }

  static formats::HostTensor tensor(std::vector<float> values) {
    formats::HostTensor t;
    t.dtype = formats::DType::F32;
    t.shape = {static_cast<int64_t>(values.size())};
    t.data.resize(values.size() * 4);
    std::memcpy(t.data.data(), values.data(), t.data.size());
    return t;
  }

  static Checkpoint make(int64_t step, float value) {
    Checkpoint c;
    c.model.tensors = {{"fc.weight", tensor({value, 2, 3})},
                       {"fc.bias", tensor({value})}};
    c.optimizer.tensors = {{"optimizer.fc.weight.momentum_buffer",
                            tensor({0.5f, value, 0})}};
    c.state.step = step;
    c.state.seed = 18446744073709551615ull; // beyond int64
    c.state.data = "data/x";
    c.state.dataState = "epoch=1 batch=2";
    c.state.lr = 3e-4;
    c.state.program = "0123456789abcdef";
    c.state.loss = 2.5;
    return c;
  }

  static std::string slurp(const fs::path &p) {
    return sinter::test::readFile(p.string());
  }

  sinter::test::TempDir dir{"sinter-ckpt"};
  std::string root = dir.path;
};

TEST_F(CheckpointTest, RoundTripsThroughLatest) {
  absl::StatusOr<std::string> dir = saveCheckpoint(root, make(100, 1));
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(fs::path(*dir).filename(), "step-00000100");
  EXPECT_EQ(slurp(fs::path(root) / "latest"), "step-00000100\n");
  std::string from;
  absl::StatusOr<Checkpoint> c = loadCheckpoint(root, &from);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(from, *dir);
  Checkpoint want = make(100, 1);
  ASSERT_EQ(c->model.tensors.size(), 2u);
  EXPECT_EQ(c->model.tensors[0].first, "fc.weight");
  EXPECT_EQ(c->model.tensors[0].second, want.model.tensors[0].second);
  EXPECT_EQ(c->optimizer.tensors[0].second, want.optimizer.tensors[0].second);
  EXPECT_EQ(c->state.step, 100);
  EXPECT_EQ(c->state.seed, want.state.seed);
  EXPECT_EQ(c->state.dataState, "epoch=1 batch=2");
  EXPECT_EQ(c->state.lr, 3e-4);
  EXPECT_EQ(c->state.loss, 2.5);
  // A step directory loads directly too.
  EXPECT_TRUE(loadCheckpoint(*dir).ok());
}

// trainer.json and COMPLETE as the first writer spelled them (compact, a
// fixed member order, the seed as a string); values whose shortest spelling
// is unambiguous, so any correct JSON writer must reproduce these bytes.
TEST_F(CheckpointTest, StateAndMarkerBytesArePinned) {
  Checkpoint c = make(100, 1);
  c.state.lr = 0.5;
  c.state.data = "data/\"x\"\\y\tz\xC3\xA9";
  absl::StatusOr<std::string> dir = saveCheckpoint(root, c);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(slurp(fs::path(*dir) / "trainer.json"),
            "{\"step\":100,\"seed\":\"18446744073709551615\",\"data\":"
            "\"data/\\\"x\\\"\\\\y\\tz\xC3\xA9\",\"data_state\":\"epoch=1 "
            "batch=2\",\"program\":\"0123456789abcdef\",\"lr\":0.5,\"loss\":"
            "2.5}\n");
  EXPECT_EQ(slurp(fs::path(*dir) / "COMPLETE"),
            "{\"step\":100,\"files\":{\"model.safetensors\":{\"bytes\":184,"
            "\"hash\":\"f4362745270bd8a8\"},\"optimizer.safetensors\":{"
            "\"bytes\":140,\"hash\":\"fc88700c586b7c45\"},\"trainer.json\":{"
            "\"bytes\":151,\"hash\":\"1d58b272cda3591a\"}}}\n");
}

TEST_F(CheckpointTest, LatestMovesAndOldStepsStay) {
  ASSERT_TRUE(saveCheckpoint(root, make(1, 1)).ok());
  ASSERT_TRUE(saveCheckpoint(root, make(2, 2)).ok());
  EXPECT_EQ(slurp(fs::path(root) / "latest"), "step-00000002\n");
  absl::StatusOr<Checkpoint> old =
      loadCheckpoint((fs::path(root) / "step-00000001").string());
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->model.tensors[1].second, tensor({1}));
}

TEST_F(CheckpointTest, ResavingAStepReplacesIt) {
  ASSERT_TRUE(saveCheckpoint(root, make(5, 1)).ok());
  ASSERT_TRUE(saveCheckpoint(root, make(5, 7)).ok());
  absl::StatusOr<Checkpoint> c = loadCheckpoint(root);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model.tensors[1].second, tensor({7}));
  // No temp directory is left behind.
  for (const auto &entry : fs::directory_iterator(root))
    EXPECT_NE(entry.path().filename().string()[0], '.') << entry.path();
}

TEST_F(CheckpointTest, StaleTemporariesAreRemovedAndNeverLoaded) {
  ASSERT_TRUE(saveCheckpoint(root, make(3, 1)).ok());
  fs::create_directory(fs::path(root) / ".step-00000004.tmp-99");
  EXPECT_TRUE(loadCheckpoint(root).ok());
  removeStaleTemporaries(root);
  EXPECT_FALSE(fs::exists(fs::path(root) / ".step-00000004.tmp-99"));
  EXPECT_TRUE(fs::exists(fs::path(root) / "step-00000003"));
}

TEST_F(CheckpointTest, DamageIsOneErrorNamingTheFile) {
  ASSERT_TRUE(saveCheckpoint(root, make(9, 1)).ok());
  fs::path dir = fs::path(root) / "step-00000009";
  auto expectError = [&](const std::string &needle) {
    absl::StatusOr<Checkpoint> c = loadCheckpoint(root);
    ASSERT_FALSE(c.ok());
    std::string message(c.status().message());
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  };
  std::string model = slurp(dir / "model.safetensors");

  // Truncated.
  std::ofstream(dir / "model.safetensors", std::ios::binary)
      << model.substr(0, model.size() - 3);
  expectError("model.safetensors: has " + std::to_string(model.size() - 3) +
              " bytes but the checkpoint was saved with");

  // Same size, one byte flipped.
  std::string flipped = model;
  flipped.back() ^= 0x40;
  std::ofstream(dir / "model.safetensors", std::ios::binary) << flipped;
  expectError("do not match the hash in COMPLETE (corrupt)");
  std::ofstream(dir / "model.safetensors", std::ios::binary) << model;
  ASSERT_TRUE(loadCheckpoint(root).ok());

  // No marker: incomplete.
  fs::rename(dir / "COMPLETE", dir / "COMPLETE.bak");
  expectError("incomplete checkpoint (no COMPLETE marker)");
  fs::rename(dir / "COMPLETE.bak", dir / "COMPLETE");

  // `latest` naming something else.
  std::ofstream(fs::path(root) / "latest") << "../etc\n";
  expectError("does not name a checkpoint");
  std::ofstream(fs::path(root) / "latest") << "step-00000010\n";
  expectError("incomplete checkpoint");

  // Missing directory, and a directory that is no checkpoint.
  absl::StatusOr<Checkpoint> missing = loadCheckpoint(root + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no such checkpoint"),
            std::string::npos);
  fs::create_directory(fs::path(root) / "empty");
  absl::StatusOr<Checkpoint> empty = loadCheckpoint(root + "/empty");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("not a checkpoint"),
            std::string::npos);
}

TEST_F(CheckpointTest, MalformedTrainerStateIsAnError) {
  ASSERT_TRUE(saveCheckpoint(root, make(2, 1)).ok());
  fs::path dir = fs::path(root) / "step-00000002";
  // Rewrite trainer.json and its COMPLETE entry consistently, so that only
  // the state parser can object.
  std::string bad = R"({"step":-4,"seed":"1","data":"","data_state":"","program":""})";
  std::string marker = slurp(dir / "COMPLETE");
  std::string good = slurp(dir / "trainer.json");
  size_t at = marker.find("\"trainer.json\"");
  ASSERT_NE(at, std::string::npos);
  std::string entry = "\"trainer.json\":{\"bytes\":" +
                      std::to_string(bad.size()) + ",\"hash\":\"" +
                      [&] {
                        char buf[17];
                        std::snprintf(buf, sizeof buf, "%016llx",
                                      (unsigned long long)hashBytes(bad));
                        return std::string(buf);
                      }() +
                      "\"}";
  size_t end = marker.find('}', at) + 1;
  marker.replace(at, end - at, entry);
  std::ofstream(dir / "COMPLETE") << marker;
  std::ofstream(dir / "trainer.json") << bad;
  absl::StatusOr<Checkpoint> c = loadCheckpoint(root);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("trainer.json: 'step' is negative"),
            std::string::npos)
      << c.status();
}

/// Replaces trainer.json of the checkpoint in `dir` with `state` and its
/// COMPLETE entry to match, so that only the state reader can object.
void replaceState(const fs::path &dir, const std::string &state) {
  std::string marker = sinter::test::readFile((dir / "COMPLETE").string());
  size_t at = marker.find("\"trainer.json\"");
  ASSERT_NE(at, std::string::npos);
  size_t end = marker.find('}', at) + 1;
  marker.replace(at, end - at,
                 absl::StrFormat("\"trainer.json\":{\"bytes\":%d,\"hash\":"
                                 "\"%016x\"}",
                                 state.size(), hashBytes(state)));
  sinter::test::writeFile((dir / "COMPLETE").string(), marker);
  sinter::test::writeFile((dir / "trainer.json").string(), state);
}

// world_size and grad_accumulation_steps are written only when not 1 (so a
// single-process checkpoint is what it always was), read back, and below 1
// refused by name.
TEST_F(CheckpointTest, WorldSizeAndMicroBatchesRoundTrip) {
  Checkpoint c = make(3, 1);
  c.state.worldSize = 2;
  c.state.gradAccumulationSteps = 40;
  absl::StatusOr<std::string> dir = saveCheckpoint(root, c);
  ASSERT_TRUE(dir.ok()) << dir.status();
  std::string state = slurp(fs::path(*dir) / "trainer.json");
  EXPECT_NE(state.find("\"world_size\":2"), std::string::npos) << state;
  EXPECT_NE(state.find("\"grad_accumulation_steps\":40"), std::string::npos)
      << state;
  absl::StatusOr<Checkpoint> back = loadCheckpoint(root);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->state.worldSize, 2);
  EXPECT_EQ(back->state.gradAccumulationSteps, 40);

  replaceState(*dir, R"({"step":3,"seed":"1","data":"","data_state":"",)"
                     R"("program":"","grad_accumulation_steps":0})");
  back = loadCheckpoint(root);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find(
                "trainer.json: 'grad_accumulation_steps' must be at least 1"),
            std::string::npos)
      << back.status();
  ASSERT_TRUE(saveCheckpoint(root, make(4, 1)).ok());
  EXPECT_EQ(slurp(fs::path(root) / "step-00000004" / "trainer.json")
                .find("grad_accumulation_steps"),
            std::string::npos);
}

// The loss scaler's state (LossScaler.h) is written only with loss
// scaling, comes back exactly, and a malformed one is refused by name.
TEST_F(CheckpointTest, LossScaleRoundTrips) {
  Checkpoint c = make(5, 1);
  c.state.lossScale = LossScaleState{0x1p-3, 7, 12, 2};
  absl::StatusOr<std::string> dir = saveCheckpoint(root, c);
  ASSERT_TRUE(dir.ok()) << dir.status();
  absl::StatusOr<Checkpoint> back = loadCheckpoint(root);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->state.lossScale.has_value());
  EXPECT_EQ(back->state.lossScale->scale, 0x1p-3);
  EXPECT_EQ(back->state.lossScale->growthTracker, 7);
  EXPECT_EQ(back->state.lossScale->skippedSteps, 12);
  EXPECT_EQ(back->state.lossScale->consecutiveOverflows, 2);

  replaceState(*dir, R"({"step":5,"seed":"1","data":"","data_state":"",)"
                     R"("program":"","loss_scale":{"scale":-1,)"
                     R"("growth_tracker":0,"skipped_steps":0,)"
                     R"("consecutive_overflows":0}})");
  back = loadCheckpoint(root);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("'loss_scale' needs a positive "
                                         "'scale'"),
            std::string::npos)
      << back.status();
  ASSERT_TRUE(saveCheckpoint(root, make(6, 1)).ok());
  EXPECT_EQ(slurp(fs::path(root) / "step-00000006" / "trainer.json")
                .find("loss_scale"),
            std::string::npos);
}

// GradScaler's update rule: an overflow halves the scale (dynamic) and
// restarts the clean count; growth_interval clean steps in a row double it;
// a static policy only counts; the N-th overflow in a row asks to stop.
TEST(LossScalerTest, MovesAsGradScaler) {
  sinter::exec::LossScaling policy;
  policy.dynamic = true;
  policy.initScale = 1024;
  policy.growthInterval = 3;
  policy.maxConsecutiveOverflows = 3;
  LossScaler s(policy);
  EXPECT_FALSE(s.record(false));
  EXPECT_FALSE(s.record(false));
  EXPECT_EQ(s.state.scale, 1024);
  EXPECT_FALSE(s.record(false)); // third clean step: doubles
  EXPECT_EQ(s.state.scale, 2048);
  EXPECT_FALSE(s.record(false));
  EXPECT_FALSE(s.record(true)); // overflow: halves, clean count restarts
  EXPECT_EQ(s.state.scale, 1024);
  EXPECT_EQ(s.state.growthTracker, 0);
  EXPECT_FALSE(s.record(false));
  EXPECT_FALSE(s.record(false));
  EXPECT_EQ(s.state.scale, 1024);
  EXPECT_FALSE(s.record(true));
  EXPECT_FALSE(s.record(true));
  EXPECT_TRUE(s.record(true)); // three in a row
  EXPECT_EQ(s.state.scale, 128);
  EXPECT_EQ(s.state.skippedSteps, 4);
  EXPECT_EQ(s.state.consecutiveOverflows, 3);

  policy.dynamic = false;
  LossScaler fixed(policy);
  for (int i = 0; i < 5; ++i)
    fixed.record(false);
  fixed.record(true);
  EXPECT_EQ(fixed.state.scale, 1024);
  EXPECT_EQ(fixed.state.skippedSteps, 1);
}

// lr and loss come back bit for bit, however the writer spells them, and a
// trainer.json in the first writer's spelling ("3e-04") still loads.
TEST_F(CheckpointTest, NumbersRoundTripExactly) {
  for (double lr : {3e-4, 0.1 + 0.2, 6e-4, 1e-300, 123456789.01234567,
                    4.9406564584124654e-324}) {
    Checkpoint c = make(5, 1);
    c.state.lr = lr;
    c.state.loss = lr / 3;
    ASSERT_TRUE(saveCheckpoint(root, c).ok());
    absl::StatusOr<Checkpoint> back = loadCheckpoint(root);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->state.lr, lr);
    EXPECT_EQ(back->state.loss, lr / 3);
  }
  fs::path dir = fs::path(root) / "step-00000005";
  replaceState(dir, R"({"step":5,"seed":"7","data":"d","data_state":"",)"
                    R"("program":"p","lr":3e-04,"loss":2.5})");
  absl::StatusOr<Checkpoint> old = loadCheckpoint(root);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->state.lr, 3e-4);
  EXPECT_EQ(old->state.seed, 7u);
}

// Each malformed trainer.json or COMPLETE is one line naming the file and,
// where there is one, the byte offset.
TEST_F(CheckpointTest, MalformedJsonNamesFileAndOffset) {
  ASSERT_TRUE(saveCheckpoint(root, make(3, 1)).ok());
  fs::path dir = fs::path(root) / "step-00000003";
  std::string statePath = (dir / "trainer.json").string();
  auto expectError = [&](const std::string &needle) {
    absl::StatusOr<Checkpoint> c = loadCheckpoint(root);
    ASSERT_FALSE(c.ok());
    std::string message(c.status().message());
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  };
  replaceState(dir, R"({"step":"3","seed":"1","data":"","data_state":"",)"
                    R"("program":""})");
  expectError(statePath + ": byte offset 8: 'step' has the wrong type");
  replaceState(dir, R"({"step":3,"seed":"1","data":"","data_state":""})");
  expectError(statePath + ": missing member 'program'");
  replaceState(dir, R"({"step":3,"step":4})");
  expectError(statePath + ": byte offset 10: duplicate key \"step\"");
  replaceState(dir, R"({"step":3,)");
  expectError(statePath + ": byte offset 10: syntax error");
  replaceState(dir, "[]");
  expectError(statePath + ": not a JSON object");
  std::string markerPath = (dir / "COMPLETE").string();
  sinter::test::writeFile(markerPath, "{\"step\":3,\"files\":{\x01}}");
  expectError(markerPath + ": byte offset 19: syntax error while parsing "
                           "object key - invalid literal");
}

// trainer.json is JSON text: a --data path that is not UTF-8 cannot be
// saved in it, and the save says so before writing anything.
TEST_F(CheckpointTest, NonUtf8DataSpecIsAnErrorOnSave) {
  Checkpoint c = make(4, 1);
  c.state.data = "caf\xE9.bin";
  absl::StatusOr<std::string> dir = saveCheckpoint(root, c);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().message(),
            root + ": cannot save a checkpoint: the data spec 'caf\\xe9.bin' "
                   "is not valid UTF-8 (trainer.json holds it as JSON text)");
  EXPECT_FALSE(fs::exists(fs::path(root) / "latest"));
  EXPECT_FALSE(fs::exists(fs::path(root) / "step-00000004"));
}

TEST(HashBytes, DependsOnEveryByteAndTheLength) {
  std::string a(37, 'x');
  uint64_t h = hashBytes(a);
  for (size_t i = 0; i < a.size(); ++i) {
    std::string b = a;
    b[i] ^= 1;
    EXPECT_NE(hashBytes(b), h) << i;
  }
  EXPECT_NE(hashBytes(std::string(36, 'x')), h);
  EXPECT_NE(hashBytes(""), hashBytes(std::string(1, '\0')));
}

/// Replaces file `name` of the checkpoint in `dir` with `bytes` and its
/// COMPLETE entry to match, so that only what reads the file can object.
void replaceFile(const fs::path &dir, const std::string &name,
                 const std::string &bytes) {
  std::string marker = sinter::test::readFile((dir / "COMPLETE").string());
  size_t at = marker.find("\"" + name + "\"");
  ASSERT_NE(at, std::string::npos);
  size_t end = marker.find('}', at) + 1;
  marker.replace(at, end - at,
                 absl::StrFormat("\"%s\":{\"bytes\":%d,\"hash\":\"%016x\"}",
                                 name, bytes.size(), hashBytes(bytes)));
  sinter::test::writeFile((dir / "COMPLETE").string(), marker);
  sinter::test::writeFile((dir / name).string(), bytes);
}

// A checkpoint is a recovery point: non-finite parameters or optimizer
// state are neither written nor loaded.
TEST_F(CheckpointTest, NonFiniteStateIsNeitherSavedNorLoaded) {
  Checkpoint nan = make(4, NAN);
  absl::StatusOr<std::string> saved = saveCheckpoint(root, nan);
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(saved.status().message().find(
                "not saving the checkpoint of step 4: its model.safetensors "
                "tensor 'fc.weight' holds NaN or infinite values (the first "
                "at element 0)"),
            std::string::npos)
      << saved.status();
  EXPECT_FALSE(fs::exists(fs::path(root) / "step-00000004"));
  EXPECT_TRUE(fs::is_empty(root)); // nor its temp directory
  Checkpoint inf = make(4, 1);
  inf.optimizer.tensors[0].second = tensor({0, 0, INFINITY});
  ASSERT_FALSE(saveCheckpoint(root, inf).ok());

  // One written elsewhere (or by an older version) is refused on load.
  ASSERT_TRUE(saveCheckpoint(root, make(4, 1)).ok());
  formats::SafeTensorsFile bad = make(4, 1).model;
  bad.tensors[1].second = tensor({-INFINITY});
  absl::StatusOr<std::string> bytes = formats::serializeSafeTensors(bad);
  ASSERT_TRUE(bytes.ok());
  replaceFile(fs::path(root) / "step-00000004", "model.safetensors", *bytes);
  absl::StatusOr<Checkpoint> c = loadCheckpoint(root);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(
                "model.safetensors: tensor 'fc.bias' holds 1 NaN or infinite "
                "value(s) (the first at element 0): a checkpoint with "
                "non-finite state is no recovery point"),
            std::string::npos)
      << c.status();
}

// trainer.json, COMPLETE, the directory's name and the model's metadata
// all give the step; files mixed from two checkpoints disagree.
TEST_F(CheckpointTest, StepsThatDisagreeAreAnError) {
  Checkpoint c = make(2, 1);
  c.model.metadata["sinter.step"] = "2";
  ASSERT_TRUE(saveCheckpoint(root, c).ok());
  fs::path dir = fs::path(root) / "step-00000002";
  fs::rename(dir, fs::path(root) / "step-00000007");
  sinter::test::writeFile((fs::path(root) / "latest").string(),
                          "step-00000007\n");
  absl::StatusOr<Checkpoint> renamed = loadCheckpoint(root);
  ASSERT_FALSE(renamed.ok());
  EXPECT_NE(renamed.status().message().find(
                "trainer.json: 'step' is 2, but the directory is "
                "step-00000007: the checkpoint's files do not belong together"),
            std::string::npos)
      << renamed.status();
  fs::rename(fs::path(root) / "step-00000007", dir);
  sinter::test::writeFile((fs::path(root) / "latest").string(),
                          "step-00000002\n");
  ASSERT_TRUE(loadCheckpoint(root).ok());

  // Another checkpoint's model file, with its COMPLETE entry.
  Checkpoint other = make(9, 1);
  other.model.metadata["sinter.step"] = "9";
  absl::StatusOr<std::string> bytes = formats::serializeSafeTensors(other.model);
  ASSERT_TRUE(bytes.ok());
  replaceFile(dir, "model.safetensors", *bytes);
  absl::StatusOr<Checkpoint> mixed = loadCheckpoint(root);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("model.safetensors says 9"),
            std::string::npos)
      << mixed.status();

  // A COMPLETE that names another step.
  ASSERT_TRUE(saveCheckpoint(root, c).ok());
  std::string marker = slurp(dir / "COMPLETE");
  size_t at = marker.find("\"step\":2");
  ASSERT_NE(at, std::string::npos);
  marker.replace(at, 8, "\"step\":3");
  sinter::test::writeFile((dir / "COMPLETE").string(), marker);
  absl::StatusOr<Checkpoint> marked = loadCheckpoint(root);
  ASSERT_FALSE(marked.ok());
  EXPECT_NE(marked.status().message().find("COMPLETE says 3"),
            std::string::npos)
      << marked.status();
}

// --keep-last=2 --keep-every=4: the newest two, the multiples of 4 and the
// one `latest` names survive.
TEST_F(CheckpointTest, PruneKeepsTheNewestTheMultiplesAndLatest) {
  for (int64_t step : {1, 2, 3, 4, 5, 6, 7, 8, 9})
    ASSERT_TRUE(saveCheckpoint(root, make(step, 1)).ok());
  sinter::test::writeFile((fs::path(root) / "latest").string(),
                          "step-00000003\n");
  ASSERT_TRUE(pruneCheckpoints(root, 2, 4).ok());
  std::vector<std::string> left;
  for (const auto &e : fs::directory_iterator(root))
    if (e.path().filename() != "latest")
      left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"step-00000003", "step-00000004",
                                            "step-00000008", "step-00000009"}));
  ASSERT_TRUE(pruneCheckpoints(root, 0, 0).ok()); // 0 keeps all
  ASSERT_TRUE(pruneCheckpoints(root, 1, 0).ok());
  left.clear();
  for (const auto &e : fs::directory_iterator(root))
    if (e.path().filename() != "latest")
      left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left,
            (std::vector<std::string>{"step-00000003", "step-00000009"}));
}

// An unwritable --save is found before the work.
TEST_F(CheckpointTest, CheckWritableCreatesTheRootOrSaysWhy) {
  fs::path fresh = fs::path(root) / "a" / "b";
  ASSERT_TRUE(checkWritable(fresh.string()).ok());
  EXPECT_TRUE(fs::is_directory(fresh));
  EXPECT_TRUE(fs::is_empty(fresh)); // the probe is gone
  sinter::test::writeFile((fs::path(root) / "file").string(), "x");
  absl::Status s = checkWritable((fs::path(root) / "file" / "ck").string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot create the checkpoint directory"),
            std::string::npos)
      << s;
}

// The hash COMPLETE holds is the same whether the bytes come at once or in
// pieces of any size (streamed saves; old checkpoints stay loadable).
TEST(StreamHashTest, MatchesHashBytesForAnySplit) {
  std::mt19937 rng(7);
  for (size_t size : {0, 1, 7, 8, 9, 15, 16, 17, 100, 1000}) {
    std::string bytes(size, '\0');
    for (char &c : bytes)
      c = static_cast<char>(rng());
    for (int trial = 0; trial < 20; ++trial) {
      StreamHash hash;
      for (size_t at = 0; at < size;) {
        size_t take = std::min<size_t>(size - at, rng() % 12);
        hash.update(std::string_view(bytes).substr(at, take));
        at += take;
      }
      EXPECT_EQ(hash.size(), size);
      EXPECT_EQ(hash.digest(), hashBytes(bytes)) << size << " " << trial;
    }
  }
}

/// A tensor of `elements` floats that exist nowhere: each piece is made
/// when read (element i is i, or NaN at `nanAt`).
formats::TensorSource generated(std::string name, int64_t elements,
                                int64_t nanAt = -1) {
  formats::TensorSource t;
  t.name = std::move(name);
  t.shape = {elements};
  t.read = [nanAt](uint64_t offset, uint64_t count, void *dst) {
    float *out = static_cast<float *>(dst);
    for (uint64_t i = 0; i < count / 4; ++i) {
      int64_t e = static_cast<int64_t>(offset / 4 + i);
      out[i] = e == nanAt ? NAN : static_cast<float>(e);
    }
    return absl::OkStatus();
  };
  return t;
}

int64_t peakResidentKiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// A save streams the state: it holds a piece at a time, not a copy of the
// tensors, let alone a second one as the file's bytes. 256 MiB of state
// saved from sources that hold none of it raise the peak by a few MiB.
TEST_F(CheckpointTest, SavingStreamsTheState) {
  CheckpointSources c;
  c.model.tensors.push_back(generated("big", int64_t(48) << 20)); // 192 MiB
  c.model.tensors.push_back(generated("small", 3));
  c.optimizer.tensors.push_back(generated("optimizer.big", int64_t(16) << 20));
  c.state.step = 5;
  int64_t before = peakResidentKiB();
  absl::StatusOr<std::string> dir = saveCheckpoint(root, c);
  ASSERT_TRUE(dir.ok()) << dir.status();
  int64_t grew = peakResidentKiB() - before;
  EXPECT_LT(grew, 32 << 10) << "a 256 MiB save raised the peak RSS by "
                            << grew << " KiB";
  // What was written is what the tensors hold, and its hash checks.
  absl::StatusOr<Checkpoint> back = loadCheckpoint(*dir);
  ASSERT_TRUE(back.ok()) << back.status();
  const formats::HostTensor *big = back->model.find("big");
  ASSERT_NE(big, nullptr);
  ASSERT_EQ(big->data.size(), size_t(192) << 20);
  for (int64_t e : {int64_t(0), int64_t(1) << 20, (int64_t(48) << 20) - 1}) {
    float v;
    std::memcpy(&v, big->data.data() + 4 * e, 4);
    EXPECT_EQ(v, static_cast<float>(e));
  }
}

// Loading checks each file's hash as it streams from the disk, then parses
// the tensors straight into place: it holds one copy of the state (the
// Checkpoint it returns), not the file's bytes as well.
TEST_F(CheckpointTest, LoadingHoldsOneCopyOfTheState) {
  CheckpointSources c;
  c.model.tensors.push_back(generated("big", int64_t(48) << 20)); // 192 MiB
  c.state.step = 5;
  ASSERT_TRUE(saveCheckpoint(root, c).ok());
  int64_t before = peakResidentKiB();
  absl::StatusOr<Checkpoint> back = loadCheckpoint(root);
  ASSERT_TRUE(back.ok()) << back.status();
  int64_t grew = peakResidentKiB() - before;
  EXPECT_LT(grew, 240 << 10) << "loading 192 MiB raised the peak RSS by "
                             << grew << " KiB";
  const formats::HostTensor *big = back->model.find("big");
  ASSERT_NE(big, nullptr);
  float last;
  std::memcpy(&last, big->data.data() + big->data.size() - 4, 4);
  EXPECT_EQ(last, static_cast<float>((int64_t(48) << 20) - 1));
}

// A NaN deep in a large tensor (in a later piece than the first) is found
// as the save streams, at its element; the save leaves nothing behind and
// `latest` still names the last good checkpoint.
TEST_F(CheckpointTest, NonFiniteInALaterPieceStopsTheSave) {
  ASSERT_TRUE(saveCheckpoint(root, make(1, 1)).ok());
  CheckpointSources c;
  int64_t nanAt = (int64_t(3) << 20) + 5; // in the fourth 4 MiB piece
  c.model.tensors.push_back(generated("w", int64_t(4) << 20));
  c.optimizer.tensors.push_back(generated("optimizer.w", int64_t(4) << 20,
                                          nanAt));
  c.state.step = 2;
  absl::StatusOr<std::string> dir = saveCheckpoint(root, c);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(dir.status().message().find(absl::StrFormat(
                "not saving the checkpoint of step 2: its "
                "optimizer.safetensors tensor 'optimizer.w' holds NaN or "
                "infinite values (the first at element %d)",
                nanAt)),
            std::string::npos)
      << dir.status();
  std::vector<std::string> left;
  for (const auto &e : fs::directory_iterator(root))
    left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"latest", "step-00000001"}));
  EXPECT_EQ(slurp(fs::path(root) / "latest"), "step-00000001\n");
}

// A source that fails mid-save (a device read error) fails the save the
// same way, naming why.
TEST_F(CheckpointTest, AFailingSourceStopsTheSave) {
  CheckpointSources c;
  formats::TensorSource t = generated("w", int64_t(2) << 20);
  t.read = [](uint64_t offset, uint64_t, void *) {
    return offset ? absl::InternalError("the device went away")
                  : absl::OkStatus();
  };
  c.model.tensors.push_back(std::move(t));
  c.state.step = 3;
  absl::StatusOr<std::string> dir = saveCheckpoint(root, c);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("the device went away"),
            std::string::npos)
      << dir.status();
  EXPECT_TRUE(fs::is_empty(root));
}

} // namespace
