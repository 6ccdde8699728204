//===- ProgressTest.cpp - runtime/Train/Progress --------------------------===//

#include "runtime/Train/Progress.h"
#include "runtime/Train/TensorBoard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace sinter::train;

namespace {

std::string captured(const std::function<void(FILE *)> &write) {
  char *buffer = nullptr;
  size_t size = 0;
  FILE *out = open_memstream(&buffer, &size);
  write(out);
  std::fclose(out);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

TEST(Progress, Durations) {
  EXPECT_EQ(formatDuration(0.8412), "0.84s");
  EXPECT_EQ(formatDuration(12.34), "12.3s");
  EXPECT_EQ(formatDuration(245), "4m05s");
  EXPECT_EQ(formatDuration(7620), "2h07m");
  EXPECT_EQ(formatDuration(-1), "?");
  EXPECT_EQ(formatDuration(NAN), "?");
}

TEST(Progress, Rates) {
  EXPECT_EQ(formatRate(3.14159), "3.14");
  EXPECT_EQ(formatRate(812.4), "812");
  EXPECT_EQ(formatRate(12400), "12.4k");
  EXPECT_EQ(formatRate(3.1e6), "3.10M");
}

StepReport report(int64_t step) {
  StepReport r;
  r.step = step;
  r.loss = 2.5;
  r.lr = 1e-3;
  r.metrics = {{"accuracy", 0.75}};
  r.stepSeconds = 0.5;
  r.itemsPerSecond = 4096;
  return r;
}

TEST(Progress, PlainLinesEveryNStepsAndTheFirstAndLast) {
  std::string text = captured([](FILE *out) {
    ProgressReporter p(out, /*interactive=*/false, /*quiet=*/false,
                       /*everySteps=*/10, /*startStep=*/4, /*totalSteps=*/25,
                       "tok");
    for (int64_t s = 5; s <= 25; ++s)
      p.step(report(s), 0.5 * double(s - 4));
    p.note("eval at step 25: loss 2.4");
    p.finish();
  });
  EXPECT_EQ(text,
            "step  5/25 | loss 2.5000 | lr 1.000e-03 | accuracy 0.7500 | "
            "4096 tok/s | 0.50s/step | ETA 10.0s\n"
            "step 10/25 | loss 2.5000 | lr 1.000e-03 | accuracy 0.7500 | "
            "4096 tok/s | 0.50s/step | ETA 7.50s\n"
            "step 20/25 | loss 2.5000 | lr 1.000e-03 | accuracy 0.7500 | "
            "4096 tok/s | 0.50s/step | ETA 2.50s\n"
            "step 25/25 | loss 2.5000 | lr 1.000e-03 | accuracy 0.7500 | "
            "4096 tok/s | 0.50s/step\n"
            "eval at step 25: loss 2.4\n");
}

TEST(Progress, TerminalRedrawsOneLineAndNotesGoAbove) {
  std::string text = captured([](FILE *out) {
    ProgressReporter p(out, /*interactive=*/true, /*quiet=*/false, 10, 0, 2,
                       "samples");
    p.step(report(1), 0.5);
    p.note("saved ckpt/step-00000001");
    p.step(report(2), 1.0);
    p.finish();
  });
  // No newline before the note: the status line was redrawn in place.
  EXPECT_GT(text.find('\n'), text.find("saved")) << text;
  EXPECT_NE(text.find("\r\033[Ksaved ckpt/step-00000001\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(text.find("step 2/2"), std::string::npos);
}

TEST(Progress, QuietKeepsOnlyImportantNotes) {
  std::string text = captured([](FILE *out) {
    ProgressReporter p(out, false, /*quiet=*/true, 1, 0, 3, "tok");
    p.step(report(1), 0.5);
    p.note("eval ...", /*important=*/false);
    p.note("done: 3 steps");
    p.finish();
  });
  EXPECT_EQ(text, "done: 3 steps\n");
}

TEST(Progress, MetricsLogAppendsOneObjectPerLine) {
  std::string path =
      (std::filesystem::temp_directory_path() / "sinter-progress-test.jsonl")
          .string();
  std::filesystem::remove(path);
  for (int run = 0; run < 2; ++run) {
    absl::StatusOr<std::unique_ptr<MetricsLog>> log = MetricsLog::open(path);
    ASSERT_TRUE(log.ok()) << log.status();
    ASSERT_TRUE((*log)->write({{"step", 1 + run}, {"loss", 2.25}}).ok());
    ASSERT_TRUE((*log)->write({{"step", 9}, {"eval_loss", NAN}}).ok());
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "{\"step\":1,\"loss\":2.25}\n"
                      "{\"step\":9,\"eval_loss\":null}\n"
                      "{\"step\":2,\"loss\":2.25}\n"
                      "{\"step\":9,\"eval_loss\":null}\n");
  std::filesystem::remove(path);
}

// The log's directory is created, as --save's is; a resume is one record.
TEST(Progress, MetricsLogCreatesItsDirectoryAndRecordsResumes) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "sinter-progress-dir-test";
  std::filesystem::remove_all(dir);
  std::string path = (dir / "a" / "b" / "m.jsonl").string();
  {
    absl::StatusOr<std::unique_ptr<MetricsLog>> log = MetricsLog::open(path);
    ASSERT_TRUE(log.ok()) << log.status();
    ASSERT_TRUE((*log)->writeResume(6, "ck/step-00000006").ok());
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "{\"event\":\"resume\",\"step\":6,"
                      "\"checkpoint\":\"ck/step-00000006\"}\n");
  // Under a regular file no directory can be made.
  std::ofstream((dir / "file").string()) << "x";
  absl::StatusOr<std::unique_ptr<MetricsLog>> bad =
      MetricsLog::open((dir / "file" / "m.jsonl").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--log-jsonl directory"),
            std::string::npos)
      << bad.status();
  std::filesystem::remove_all(dir);
}

// TFRecord's masked CRC-32C, from the standard check value of CRC-32C
// (0xe3069283 for "123456789"), and the framing around a record.
TEST(Progress, TensorBoardRecordsAreFramedWithMaskedCrc32c) {
  auto mask = [](uint32_t crc) {
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
  };
  EXPECT_EQ(maskedCrc32c("123456789"), mask(0xe3069283u));
  // CRC-32C of no bytes is 0.
  EXPECT_EQ(maskedCrc32c(""), mask(0));
  std::string record = tfRecord("abc");
  ASSERT_EQ(record.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(record.substr(0, 8), std::string("\3\0\0\0\0\0\0\0", 8));
  auto little = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i)
      v = (v << 8) | static_cast<unsigned char>(record[at + i]);
    return v;
  };
  EXPECT_EQ(little(8), maskedCrc32c(record.substr(0, 8)));
  EXPECT_EQ(record.substr(12, 3), "abc");
  EXPECT_EQ(little(15), maskedCrc32c("abc"));
}

// Each open makes a new file whose first record is the version stamp; a
// folder under a regular file is an error naming the flag.
TEST(Progress, TensorBoardLogOpensANewFileEachRun) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "sinter-tensorboard-test";
  std::filesystem::remove_all(dir);
  for (int run = 0; run < 2; ++run) {
    absl::StatusOr<std::unique_ptr<TensorBoardLog>> log =
        TensorBoardLog::open((dir / "tb").string());
    ASSERT_TRUE(log.ok()) << log.status();
    EXPECT_NE((*log)->path().find("events.out.tfevents."), std::string::npos);
    ASSERT_TRUE((*log)->write(1, "train", {{"loss", 2.5}}).ok());
  }
  std::vector<std::filesystem::path> files;
  for (const auto &e : std::filesystem::directory_iterator(dir / "tb"))
    files.push_back(e.path());
  ASSERT_EQ(files.size(), 2u);
  std::ifstream in(files[0], std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(bytes.find("brain.Event:2"), std::string::npos);
  EXPECT_NE(bytes.find("train/loss"), std::string::npos);
  std::ofstream((dir / "file").string()) << "x";
  absl::StatusOr<std::unique_ptr<TensorBoardLog>> bad =
      TensorBoardLog::open((dir / "file").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--tensorboard directory"),
            std::string::npos)
      << bad.status();
  std::filesystem::remove_all(dir);
}

} // namespace
