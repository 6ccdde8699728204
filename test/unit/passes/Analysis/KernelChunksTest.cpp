//===- KernelChunksTest.cpp - the split and the chunks of kernel spaces ---===//

#include "passes/Analysis/KernelChunks.h"

#include <gtest/gtest.h>

using namespace sinter::analysis;

namespace {

TEST(KernelChunksTest, SplitsTheFirstParallelDimensionOfBigSpaces) {
  // A softmax's scores, reduced over the last axis.
  EXPECT_EQ(splitDimension({8, 6, 256, 256}, {false, false, false, true}, KernelLimits{}), 0);
  // A leading 1 is skipped; a bias gradient splits its columns.
  EXPECT_EQ(splitDimension({1, 1024, 50257}, {false, false, true}, KernelLimits{}), 1);
  EXPECT_EQ(splitDimension({2048, 1536}, {true, false}, KernelLimits{}), 1);
  // Under minElementsToSplit elements: one thread.
  EXPECT_EQ(splitDimension({4, 8}, {false, true}, KernelLimits{}), -1);
  EXPECT_EQ(splitDimension({64, 511}, {false, false}, KernelLimits{}), -1);
  EXPECT_EQ(splitDimension({64, 512}, {false, false}, KernelLimits{}), 0);
}

TEST(KernelChunksTest, ChunksStopAtTheTargetOrTheReducedAxes) {
  // 6x256x256 = 393K elements after the split: fix the head too (64K).
  std::vector<int> softmax =
      chunkDimensions({8, 6, 256, 256}, {false, false, false, true}, 0, KernelLimits{});
  EXPECT_EQ(softmax, (std::vector<int>{0, 1}));
  EXPECT_EQ(chunkElements({8, 6, 256, 256}, softmax), 65536);
  // A layer norm's 256x384 rows per batch index are within the target.
  std::vector<int> norm =
      chunkDimensions({8, 256, 384}, {false, false, true}, 0, KernelLimits{});
  EXPECT_EQ(norm, (std::vector<int>{0}));
  EXPECT_EQ(chunkElements({8, 256, 384}, norm), 98304);
  // GPT-2's logits: a row of 50257 is more than the target, but a reduced
  // axis is never fixed.
  std::vector<int> logits =
      chunkDimensions({1, 1024, 50257}, {false, false, true}, 1, KernelLimits{});
  EXPECT_EQ(logits, (std::vector<int>{1}));
  EXPECT_EQ(chunkElements({1, 1024, 50257}, logits), 50257);
  // Not split: the chunk is the whole space.
  EXPECT_TRUE(chunkDimensions({4, 8}, {false, true}, -1, KernelLimits{}).empty());
  EXPECT_EQ(chunkElements({4, 8}, {}), 32);
}

TEST(KernelChunksTest, FollowsTheTargetsLimits) {
  // A target with smaller caches and cheaper threads cuts finer.
  KernelLimits small;
  small.minElementsToSplit = 16;
  small.chunkElements = 1024;
  EXPECT_EQ(splitDimension({4, 8}, {false, true}, small), 0);
  std::vector<int> norm =
      chunkDimensions({8, 256, 384}, {false, false, true}, 0, small);
  EXPECT_EQ(norm, (std::vector<int>{0, 1}));
  EXPECT_EQ(chunkElements({8, 256, 384}, norm), 384);
}

} // namespace
