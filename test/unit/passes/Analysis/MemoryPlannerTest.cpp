//===- MemoryPlannerTest.cpp - Unit tests of the static memory planner ----===//
//
// Hand-checked placements (exact offsets), input errors, verifyPlan catching
// broken plans, randomized property tests (valid plan, lower bound <= arena
// <= no-reuse size), the same offsets as the O(n^2) scan the planner used to
// do (random and training-like instances), greedy against the exact optimum
// on tiny instances, and a 20k-buffer run to catch complexity blowups.
//
//===----------------------------------------------------------------------===//

#include "passes/Analysis/MemoryPlanner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>

using namespace sinter::analysis;

namespace {

Buffer makeBuffer(
    int64_t id, int64_t bytes, int64_t firstUse, int64_t lastUse,
    sinter::abi::CategoryKind category = sinter::abi::Category::activations) {
  Buffer b;
  b.id = id;
  b.bytes = bytes;
  b.firstUse = firstUse;
  b.lastUse = lastUse;
  b.category = category;
  return b;
}

Buffer makeView(int64_t id, int64_t owner, int64_t bytes, int64_t firstUse,
                int64_t lastUse) {
  Buffer b = makeBuffer(id, bytes, firstUse, lastUse);
  b.aliasOf = owner;
  return b;
}

/// Plans, and checks that planning succeeded and the plan verifies.
MemoryPlan planAndVerify(const std::vector<Buffer> &buffers,
                         int64_t alignment = 64) {
  MemoryPlan plan = planMemory(buffers, PlanOptions{alignment});
  EXPECT_TRUE(plan.ok()) << plan.error;
  EXPECT_EQ(verifyPlan(buffers, plan), "");
  return plan;
}

std::string planError(const std::vector<Buffer> &buffers,
                      int64_t alignment = 64) {
  return planMemory(buffers, PlanOptions{alignment}).error;
}

TEST(MemoryPlannerTest, Empty) {
  MemoryPlan plan = planAndVerify({});
  EXPECT_TRUE(plan.offsets.empty());
  EXPECT_EQ(plan.arenaBytes, 0);
  EXPECT_EQ(plan.lowerBoundBytes, 0);
  EXPECT_EQ(plan.bytesWithoutReuse, 0);
  EXPECT_EQ(plan.fragmentationRatio(), 1.0);
  EXPECT_EQ(plan.savingPercent(), 0.0);
}

TEST(MemoryPlannerTest, Single) {
  std::vector<Buffer> buffers = {makeBuffer(7, 100, 3, 3)};
  MemoryPlan plan = planAndVerify(buffers);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0}));
  EXPECT_EQ(plan.arenaBytes, 100);
  EXPECT_EQ(plan.lowerBoundBytes, 100);
  EXPECT_EQ(plan.peakStep, 3);
  // Without reuse every slot is padded to the alignment.
  EXPECT_EQ(plan.bytesWithoutReuse, 128);
}

TEST(MemoryPlannerTest, DisjointLifetimesShareOffsetZero) {
  // [0, 1] and [2, 3] never live together; [3, 3] starts at B's last use, so
  // it does live together with B.
  std::vector<Buffer> buffers = {makeBuffer(1, 256, 0, 1),
                                 makeBuffer(2, 256, 2, 3),
                                 makeBuffer(3, 256, 3, 3)};
  MemoryPlan plan = planAndVerify(buffers);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 256}));
  EXPECT_EQ(plan.arenaBytes, 512);
  EXPECT_EQ(plan.lowerBoundBytes, 512);
  EXPECT_EQ(plan.peakStep, 3);
  EXPECT_EQ(plan.bytesWithoutReuse, 768);
  EXPECT_EQ(plan.savedBytes(), 256);
}

TEST(MemoryPlannerTest, OverlappingLifetimesDoNotShare) {
  std::vector<Buffer> buffers = {makeBuffer(1, 100, 0, 2),
                                 makeBuffer(2, 50, 1, 3)};
  MemoryPlan plan = planAndVerify(buffers);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 128}));
  EXPECT_EQ(plan.arenaBytes, 178);
  EXPECT_EQ(plan.lowerBoundBytes, 150);
}

TEST(MemoryPlannerTest, Alignment) {
  std::vector<Buffer> buffers = {makeBuffer(1, 100, 0, 2),
                                 makeBuffer(2, 50, 1, 3)};
  EXPECT_EQ(planAndVerify(buffers, 1).offsets, (std::vector<int64_t>{0, 100}));
  EXPECT_EQ(planAndVerify(buffers, 256).offsets,
            (std::vector<int64_t>{0, 256}));
  // Not a power of two: still multiples of it.
  EXPECT_EQ(planAndVerify(buffers, 24).offsets, (std::vector<int64_t>{0, 120}));
  EXPECT_NE(planError(buffers, 0), "");
}

TEST(MemoryPlannerTest, ViewExtendsOwnerLifetime) {
  // Without the view, B could reuse A's bytes at steps 2..4. The view keeps A
  // alive until step 5, so B must not. The view itself costs nothing.
  std::vector<Buffer> buffers = {makeBuffer(1, 100, 0, 1),
                                 makeView(2, 1, 100, 3, 5),
                                 makeBuffer(3, 100, 2, 4)};
  MemoryPlan plan = planAndVerify(buffers);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 128}));
  EXPECT_EQ(plan.lowerBoundBytes, 200);
  EXPECT_EQ(plan.bytesWithoutReuse, 256);
}

TEST(MemoryPlannerTest, ViewChains) {
  // 4 -> 3 -> 2 -> 1; the last link keeps 1 alive at step 9, where 5 lives.
  // The chain is given out of order to exercise the resolution.
  std::vector<Buffer> buffers = {
      makeView(4, 3, 32, 9, 9), makeBuffer(5, 200, 6, 9),
      makeView(3, 2, 64, 4, 4), makeView(2, 1, 64, 2, 3),
      makeBuffer(1, 64, 0, 1),  makeBuffer(6, 300, 2, 5)};
  MemoryPlan plan = planAndVerify(buffers);
  // 6 (300 bytes, [2,5]) first at 0; 5 ([6,9]) reuses it; 1 (root, live
  // [0,9]) goes above both.
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{320, 0, 320, 320, 320, 0}));
  EXPECT_EQ(plan.arenaBytes, 384);
  EXPECT_EQ(plan.lowerBoundBytes, 364);
}

TEST(MemoryPlannerTest, ZeroByteBuffers) {
  std::vector<Buffer> buffers = {
      makeBuffer(1, 0, 0, 9), makeBuffer(2, 128, 0, 9), makeBuffer(3, 0, 5, 5)};
  MemoryPlan plan = planAndVerify(buffers);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(plan.arenaBytes, 128);
  EXPECT_EQ(plan.bytesWithoutReuse, 128);
  EXPECT_EQ(planAndVerify({makeBuffer(1, 0, 0, 0)}).arenaBytes, 0);
}

TEST(MemoryPlannerTest, BestFitPicksTheTightestGap) {
  // Alignment 1 keeps the arithmetic visible. Placement order is by size:
  // A, B, C, G (ties: longer lifetime first), D, E, F, H.
  //   A 300 [0,9] -> 0           B 200 [0,1] -> 300 (on A)
  //   C 150 [0,9] -> 500 (on B)  G 150 [5,6] -> 300: the only gap that fits
  //   D 100 [0,1] -> 650         E  90 [0,9] -> 750
  //   F  80 [5,6]: gaps [450,500) and [650,750); best fit takes 650.
  //   H  15 [5,6]: gaps [450,500) and [730,750); best fit takes 730, where
  //                first fit would take 450.
  std::vector<Buffer> buffers = {
      makeBuffer('A', 300, 0, 9), makeBuffer('B', 200, 0, 1),
      makeBuffer('C', 150, 0, 9), makeBuffer('D', 100, 0, 1),
      makeBuffer('E', 90, 0, 9),  makeBuffer('F', 80, 5, 6),
      makeBuffer('G', 150, 5, 6), makeBuffer('H', 15, 5, 6)};
  MemoryPlan plan = planAndVerify(buffers, 1);
  EXPECT_EQ(plan.offsets,
            (std::vector<int64_t>{0, 300, 500, 650, 750, 650, 300, 730}));
  EXPECT_EQ(plan.arenaBytes, 840);
  EXPECT_EQ(plan.lowerBoundBytes, 840);
  EXPECT_EQ(plan.peakStep, 0);
}

TEST(MemoryPlannerTest, TrainingStepShape) {
  // A forward/backward-like pattern with the default alignment.
  std::vector<Buffer> buffers = {
      makeBuffer(1, 1000, 0, 5, sinter::abi::Category::activations),
      makeBuffer(2, 1000, 1, 4, sinter::abi::Category::activations),
      makeBuffer(3, 100, 1, 1, sinter::abi::Category::workspace),
      makeBuffer(4, 1000, 4, 5, sinter::abi::Category::gradients),
      makeBuffer(5, 100, 5, 5, sinter::abi::Category::workspace)};
  MemoryPlan plan = planAndVerify(buffers);
  // 1 -> 0, 2 -> 1024, 4 -> 2048 (on 1 and 2), 3 -> 2048 (on 1 and 2; 4 is
  // not live at step 1), 5 -> 1024 (2 is dead at step 5).
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 1024, 2048, 2048, 1024}));
  EXPECT_EQ(plan.arenaBytes, 3048);
  EXPECT_EQ(plan.lowerBoundBytes, 3000);
  EXPECT_EQ(plan.peakStep, 4);
  EXPECT_EQ(plan.bytesWithoutReuse, 3 * 1024 + 2 * 128);
  auto at = [&](sinter::abi::CategoryKind c) {
    return plan.peakBytesByCategory[static_cast<int>(c)];
  };
  auto max = [&](sinter::abi::CategoryKind c) {
    return plan.maxLiveBytesByCategory[static_cast<int>(c)];
  };
  EXPECT_EQ(at(sinter::abi::Category::activations), 2000);
  EXPECT_EQ(at(sinter::abi::Category::gradients), 1000);
  EXPECT_EQ(at(sinter::abi::Category::workspace), 0);
  EXPECT_EQ(max(sinter::abi::Category::workspace), 100);

  std::string report = formatPlanReport(buffers, plan, 2);
  EXPECT_NE(report.find("arena"), std::string::npos) << report;
  EXPECT_NE(report.find("(3048)"), std::string::npos) << report;
  EXPECT_NE(report.find("(3000)"), std::string::npos) << report;
  EXPECT_NE(report.find("gradients"), std::string::npos) << report;
  EXPECT_NE(report.find("largest 2 buffers"), std::string::npos) << report;
  EXPECT_NE(report.find("[1, 4]"), std::string::npos) << report;
  EXPECT_EQ(report.find("[5, 5]"), std::string::npos) << report;
}

TEST(MemoryPlannerTest, PinnedBuffers) {
  Buffer pinned = makeBuffer(1, 100, 0, 9, sinter::abi::Category::inputs);
  pinned.fixedOffset = 128;
  std::vector<Buffer> buffers = {pinned, makeBuffer(2, 192, 0, 9),
                                 makeBuffer(3, 64, 0, 9)};
  MemoryPlan plan = planAndVerify(buffers);
  // 2 does not fit below the pin; 3 does.
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{128, 256, 0}));

  buffers[0].fixedOffset = 100;
  EXPECT_NE(planError(buffers), "");
  buffers[0].fixedOffset = 0;
  Buffer clash = makeBuffer(4, 10, 9, 9);
  clash.fixedOffset = 64;
  buffers.push_back(clash);
  EXPECT_NE(planError(buffers).find("collides"), std::string::npos);
  buffers.back().firstUse = buffers.back().lastUse = 10;
  EXPECT_EQ(planError(buffers), "");
}

TEST(MemoryPlannerTest, InvalidInput) {
  EXPECT_NE(planError({makeBuffer(1, 8, 0, 0), makeBuffer(1, 8, 0, 0)})
                .find("duplicate"),
            std::string::npos);
  EXPECT_NE(planError({makeBuffer(1, -8, 0, 0)}), "");
  EXPECT_NE(planError({makeBuffer(1, 8, 2, 1)}), "");
  EXPECT_NE(planError({makeView(1, 9, 8, 0, 0)}).find("unknown"),
            std::string::npos);
  EXPECT_NE(planError({makeView(1, 2, 8, 0, 0), makeView(2, 3, 8, 0, 0),
                       makeView(3, 1, 8, 0, 0)})
                .find("cycle"),
            std::string::npos);
  EXPECT_NE(planError({makeView(1, 1, 8, 0, 0)}).find("cycle"),
            std::string::npos);
  EXPECT_NE(planError({makeBuffer(1, 8, 0, 0), makeView(2, 1, 16, 0, 0)}), "");
  Buffer pinnedView = makeView(2, 1, 8, 0, 0);
  pinnedView.fixedOffset = 0;
  EXPECT_NE(planError({makeBuffer(1, 8, 0, 0), pinnedView}), "");
}

TEST(MemoryPlannerTest, VerifyCatchesBrokenPlans) {
  std::vector<Buffer> buffers = {
      makeBuffer(1, 100, 0, 3), makeBuffer(2, 100, 2, 5),
      makeBuffer(3, 100, 4, 6), makeView(4, 1, 100, 3, 3)};
  MemoryPlan good = planAndVerify(buffers);
  ASSERT_EQ(good.offsets, (std::vector<int64_t>{0, 128, 0, 0}));

  MemoryPlan bad = good;
  bad.offsets[1] = bad.offsets[0]; // Move 2 onto 1: both live at 2..3.
  bad.offsets[3] = bad.offsets[0];
  EXPECT_NE(verifyPlan(buffers, bad).find("overlaps"), std::string::npos);
  bad = good;
  bad.offsets[1] = 64; // Partial overlap from above.
  EXPECT_NE(verifyPlan(buffers, bad).find("overlaps"), std::string::npos);
  bad = good;
  bad.offsets[1] = 100; // No overlap, but misaligned.
  EXPECT_NE(verifyPlan(buffers, bad).find("multiple"), std::string::npos);
  bad = good;
  bad.arenaBytes = 200;
  EXPECT_NE(verifyPlan(buffers, bad).find("exceeds"), std::string::npos);
  bad = good;
  bad.offsets[3] = 256; // The view must sit on its owner.
  bad.arenaBytes = 356;
  EXPECT_NE(verifyPlan(buffers, bad).find("view"), std::string::npos);
  bad = good;
  bad.offsets.pop_back();
  EXPECT_NE(verifyPlan(buffers, bad), "");
}

//===----------------------------------------------------------------------===//
// Randomized properties
//===----------------------------------------------------------------------===//

/// A random instance: `n` buffers over `steps` steps; about `viewPercent`% of
/// them views of an earlier buffer (chains included); some zero-sized.
std::vector<Buffer> randomBuffers(std::mt19937_64 &rng, int n, int64_t steps,
                                  int viewPercent) {
  std::uniform_int_distribution<int64_t> stepDist(0, steps - 1);
  std::uniform_int_distribution<int> percent(0, 99);
  std::uniform_int_distribution<int> logSize(0, 12);
  std::vector<Buffer> buffers;
  for (int i = 0; i < n; ++i) {
    int64_t a = stepDist(rng), b = stepDist(rng);
    int64_t bytes =
        percent(rng) < 5 ? 0 : (int64_t{1} << logSize(rng)) + percent(rng) * 7;
    Buffer buffer = makeBuffer(1000 + i, bytes, std::min(a, b), std::max(a, b),
                               static_cast<sinter::abi::CategoryKind>(
                                   i % sinter::abi::kNumCategories));
    if (i > 0 && percent(rng) < viewPercent) {
      const Buffer &owner =
          buffers[std::uniform_int_distribution<int>(0, i - 1)(rng)];
      buffer.aliasOf = owner.id;
      // At most the owner's size, which is at most its root's size.
      buffer.bytes = std::min(buffer.bytes, owner.bytes);
    }
    buffers.push_back(buffer);
  }
  // Shuffle so that views also come before their owners.
  std::shuffle(buffers.begin(), buffers.end(), rng);
  return buffers;
}

/// The largest live total over all steps, the slow way, for cross-checking.
int64_t naiveLowerBound(const std::vector<Buffer> &buffers, int64_t steps) {
  std::vector<int64_t> live(steps, 0);
  for (const Buffer &b : buffers) {
    if (b.aliasOf)
      continue;
    int64_t first = b.firstUse, last = b.lastUse;
    // Widen over every view whose chain ends at b.
    for (const Buffer &v : buffers) {
      const Buffer *cur = &v;
      while (cur->aliasOf)
        cur = &*std::find_if(
            buffers.begin(), buffers.end(),
            [&](const Buffer &o) { return o.id == *cur->aliasOf; });
      if (cur->id == b.id) {
        first = std::min(first, v.firstUse);
        last = std::max(last, v.lastUse);
      }
    }
    for (int64_t s = first; s <= last; ++s)
      live[s] += b.bytes;
  }
  return *std::max_element(live.begin(), live.end());
}

TEST(MemoryPlannerTest, RandomPlansAreValidAndBounded) {
  const int64_t alignments[] = {1, 8, 64, 256};
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 3000; ++trial) {
    int n = std::uniform_int_distribution<int>(1, 60)(rng);
    int64_t steps = std::uniform_int_distribution<int64_t>(1, 40)(rng);
    std::vector<Buffer> buffers = randomBuffers(rng, n, steps, 20);
    int64_t alignment = alignments[trial % 4];
    MemoryPlan plan = planMemory(buffers, PlanOptions{alignment});
    ASSERT_TRUE(plan.ok()) << "trial " << trial << ": " << plan.error;
    ASSERT_EQ(verifyPlan(buffers, plan), "") << "trial " << trial;
    EXPECT_LE(plan.lowerBoundBytes, plan.arenaBytes) << "trial " << trial;
    EXPECT_LE(plan.arenaBytes, plan.bytesWithoutReuse) << "trial " << trial;
    EXPECT_EQ(plan.lowerBoundBytes, naiveLowerBound(buffers, steps))
        << "trial " << trial;
    EXPECT_EQ(std::accumulate(plan.peakBytesByCategory.begin(),
                              plan.peakBytesByCategory.end(), int64_t{0}),
              plan.lowerBoundBytes)
        << "trial " << trial;
  }
}

TEST(MemoryPlannerTest, RandomPlansWithPinsAreValid) {
  std::mt19937_64 rng(777);
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<Buffer> buffers = randomBuffers(rng, 40, 30, 10);
    // Pin a few roots in disjoint 8 KiB slots (all sizes are below that).
    int64_t slot = 0;
    for (Buffer &b : buffers)
      if (!b.aliasOf && rng() % 8 == 0)
        b.fixedOffset = 8192 * slot++;
    MemoryPlan plan = planMemory(buffers);
    ASSERT_TRUE(plan.ok()) << "trial " << trial << ": " << plan.error;
    ASSERT_EQ(verifyPlan(buffers, plan), "") << "trial " << trial;
    EXPECT_LE(plan.lowerBoundBytes, plan.arenaBytes);
  }
}

TEST(MemoryPlannerTest, RandomCorruptionIsCaught) {
  std::mt19937_64 rng(99);
  int caught = 0;
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<Buffer> buffers = randomBuffers(rng, 30, 20, 0);
    MemoryPlan plan = planAndVerify(buffers);
    // Move the first buffer that has a partner live at the same time (at
    // another offset) onto that partner.
    auto corruptOne = [&]() {
      for (size_t i = 0; i < buffers.size(); ++i) {
        for (size_t j = 0; j < buffers.size(); ++j) {
          const Buffer &a = buffers[i], &b = buffers[j];
          if (i == j || a.bytes == 0 || b.bytes == 0 ||
              plan.offsets[i] == plan.offsets[j] || a.lastUse < b.firstUse ||
              b.lastUse < a.firstUse)
            continue;
          MemoryPlan bad = plan;
          bad.offsets[i] = bad.offsets[j];
          bad.arenaBytes = std::max(bad.arenaBytes, bad.offsets[i] + a.bytes);
          EXPECT_NE(verifyPlan(buffers, bad), "") << "trial " << trial;
          return true;
        }
      }
      return false;
    };
    caught += corruptOne();
  }
  EXPECT_GT(caught, 400);
}

//===----------------------------------------------------------------------===//
// The same offsets as the scan the occupancy tree replaced
//===----------------------------------------------------------------------===//

/// The planner's placement as it was before its occupancy tree: each root,
/// in the planner's order, goes to the best fit found by a scan of every
/// root placed so far in offset order, O(n^2). Kept as the oracle: the
/// offsets decide the fingerprints, so the tree must give the same ones.
/// Takes the lower bound and the peak step from `plan` (checked elsewhere).
std::vector<int64_t> scanOffsets(const std::vector<Buffer> &buffers,
                                 int64_t alignment, const MemoryPlan &plan) {
  size_t n = buffers.size();
  auto alignUp = [&](int64_t v) {
    return (v + alignment - 1) / alignment * alignment;
  };
  // Roots, and their lifetimes widened over their views'.
  std::vector<size_t> root(n);
  std::vector<int64_t> first(n), last(n);
  for (size_t i = 0; i < n; ++i) {
    size_t r = i;
    while (buffers[r].aliasOf)
      r = std::find_if(
              buffers.begin(), buffers.end(),
              [&](const Buffer &o) { return o.id == *buffers[r].aliasOf; }) -
          buffers.begin();
    root[i] = r;
    first[i] = buffers[i].firstUse;
    last[i] = buffers[i].lastUse;
  }
  for (size_t i = 0; i < n; ++i) {
    first[root[i]] = std::min(first[root[i]], buffers[i].firstUse);
    last[root[i]] = std::max(last[root[i]], buffers[i].lastUse);
  }
  std::vector<size_t> pinned, order;
  for (size_t i = 0; i < n; ++i) {
    if (root[i] != i)
      continue;
    if (buffers[i].fixedOffset)
      pinned.push_back(i);
    else if (buffers[i].bytes > 0)
      order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    if (last[a] - first[a] != last[b] - first[b])
      return last[a] - first[a] > last[b] - first[b];
    return a < b;
  });

  struct Slot {
    int64_t offset, end, first, last;
  };
  auto place = [&](const std::vector<size_t> &order,
                   std::vector<int64_t> &offsets) {
    std::vector<Slot> byOffset;
    int64_t arena = 0;
    for (size_t i : pinned) {
      offsets[i] = *buffers[i].fixedOffset;
      if (buffers[i].bytes == 0)
        continue;
      byOffset.push_back(
          {offsets[i], offsets[i] + buffers[i].bytes, first[i], last[i]});
      arena = std::max(arena, offsets[i] + buffers[i].bytes);
    }
    std::stable_sort(
        byOffset.begin(), byOffset.end(),
        [](const Slot &a, const Slot &b) { return a.offset < b.offset; });
    for (size_t i : order) {
      int64_t bytes = buffers[i].bytes, prevEnd = 0, bestOffset = -1;
      int64_t bestGap = std::numeric_limits<int64_t>::max();
      for (const Slot &other : byOffset) {
        if (other.first > last[i] || first[i] > other.last)
          continue;
        int64_t gap = other.offset - alignUp(prevEnd);
        if (gap >= bytes && gap < bestGap) {
          bestGap = gap;
          bestOffset = alignUp(prevEnd);
        }
        prevEnd = std::max(prevEnd, other.end);
      }
      if (bestOffset < 0)
        bestOffset = alignUp(prevEnd);
      offsets[i] = bestOffset;
      arena = std::max(arena, bestOffset + bytes);
      Slot slot{bestOffset, bestOffset + bytes, first[i], last[i]};
      byOffset.insert(std::upper_bound(byOffset.begin(), byOffset.end(), slot,
                                       [](const Slot &a, const Slot &b) {
                                         return a.offset < b.offset;
                                       }),
                      slot);
    }
    return arena;
  };
  std::vector<int64_t> offsets(n, 0);
  int64_t arena = place(order, offsets);
  if (arena > alignUp(plan.lowerBoundBytes)) {
    std::vector<size_t> peakFirst, rest;
    for (size_t i : order)
      (first[i] <= plan.peakStep && plan.peakStep <= last[i] ? peakFirst : rest)
          .push_back(i);
    peakFirst.insert(peakFirst.end(), rest.begin(), rest.end());
    std::vector<int64_t> other(n, 0);
    if (place(peakFirst, other) < arena)
      offsets = other;
  }
  for (size_t i = 0; i < n; ++i)
    offsets[i] = offsets[root[i]];
  return offsets;
}

TEST(MemoryPlannerTest, RandomPlansMatchTheScan) {
  const int64_t alignments[] = {1, 8, 64, 256, 24};
  std::mt19937_64 rng(31337);
  for (int trial = 0; trial < 3000; ++trial) {
    int n = std::uniform_int_distribution<int>(1, 80)(rng);
    int64_t steps = std::uniform_int_distribution<int64_t>(1, 50)(rng);
    std::vector<Buffer> buffers = randomBuffers(rng, n, steps, 15);
    int64_t alignment = alignments[trial % 5];
    if (trial % 3 == 0) {
      // A few pins in disjoint slots, aligned for every alignment above.
      int64_t slot = 0;
      for (Buffer &b : buffers)
        if (!b.aliasOf && rng() % 8 == 0)
          b.fixedOffset = 8192 * 3 * slot++;
    }
    MemoryPlan plan = planMemory(buffers, PlanOptions{alignment});
    ASSERT_TRUE(plan.ok()) << "trial " << trial << ": " << plan.error;
    ASSERT_EQ(plan.offsets, scanOffsets(buffers, alignment, plan))
        << "trial " << trial;
  }
}

TEST(MemoryPlannerTest, TrainingLikePlansMatchTheScan) {
  // Forward/backward lifetimes: activations made in the forward half, a
  // third of them saved until their mirror step in the backward half, the
  // rest read by the next few steps; sizes from a short list, so that many
  // buffers tie and exact fits are common, as in a model of repeated blocks.
  const int64_t sizes[] = {4, 8, 512, 1024, 3072, 65536, 196608, 262144};
  std::mt19937_64 rng(8086);
  for (int trial = 0; trial < 12; ++trial) {
    int n = 400 + 300 * trial;
    int64_t steps = n;
    std::vector<Buffer> buffers;
    std::uniform_int_distribution<int> percent(0, 99);
    std::uniform_int_distribution<int> size(0, 7);
    std::geometric_distribution<int64_t> shortLife(0.3);
    for (int i = 0; i < n; ++i) {
      int64_t first = i * steps / n;
      int64_t last = first + shortLife(rng);
      if (first < steps / 2 && percent(rng) < 33)
        last = steps - 1 - first;
      Buffer b =
          makeBuffer(i, sizes[size(rng)], first, std::min(last, steps - 1));
      if (i > 0 && percent(rng) < 10) {
        const Buffer &owner = buffers[i - 1 - rng() % std::min(i, 4)];
        b.aliasOf = owner.id;
        b.bytes = std::min(b.bytes, owner.bytes);
      }
      buffers.push_back(b);
    }
    int64_t alignment = trial % 2 ? 64 : 256;
    MemoryPlan plan = planMemory(buffers, PlanOptions{alignment});
    ASSERT_TRUE(plan.ok()) << "trial " << trial << ": " << plan.error;
    ASSERT_EQ(verifyPlan(buffers, plan), "") << "trial " << trial;
    ASSERT_EQ(plan.offsets, scanOffsets(buffers, alignment, plan))
        << "trial " << trial;
  }
}

//===----------------------------------------------------------------------===//
// Greedy against the optimum
//===----------------------------------------------------------------------===//

/// The smallest arena of any valid plan. Some optimal plan is reached by
/// placing the buffers in the order of their offsets in it, each at the
/// lowest aligned offset that fits (by induction, each lands at or below its
/// optimal offset), so trying every order with first fit is exact.
int64_t optimalArena(std::vector<Buffer> buffers, int64_t alignment) {
  std::vector<int> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  int64_t best = std::numeric_limits<int64_t>::max();
  do {
    std::vector<int64_t> offset(buffers.size());
    int64_t arena = 0;
    for (size_t k = 0; k < order.size(); ++k) {
      const Buffer &b = buffers[order[k]];
      auto fits = [&](int64_t at) {
        for (size_t p = 0; p < k; ++p) {
          const Buffer &o = buffers[order[p]];
          if (o.firstUse <= b.lastUse && b.firstUse <= o.lastUse &&
              offset[order[p]] < at + b.bytes &&
              at < offset[order[p]] + o.bytes)
            return false;
        }
        return true;
      };
      int64_t at = 0;
      if (b.bytes > 0 && !fits(0)) {
        at = std::numeric_limits<int64_t>::max();
        for (size_t p = 0; p < k; ++p) {
          const Buffer &o = buffers[order[p]];
          int64_t candidate = (offset[order[p]] + o.bytes + alignment - 1) /
                              alignment * alignment;
          if (candidate < at && fits(candidate))
            at = candidate;
        }
      }
      offset[order[k]] = at;
      arena = std::max(arena, at + b.bytes);
    }
    best = std::min(best, arena);
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

TEST(MemoryPlannerTest, GreedyIsCloseToOptimalOnTinyInstances) {
  std::mt19937_64 rng(4242);
  double worst = 1.0, total = 0.0;
  int optimal = 0, trials = 1500;
  for (int trial = 0; trial < trials; ++trial) {
    int n = std::uniform_int_distribution<int>(1, 6)(rng);
    std::vector<Buffer> buffers = randomBuffers(rng, n, 6, 0);
    int64_t alignment = trial % 2 ? 1 : 64;
    MemoryPlan plan = planAndVerify(buffers, alignment);
    int64_t best = optimalArena(buffers, alignment);
    ASSERT_LE(best, plan.arenaBytes) << "trial " << trial;
    ASSERT_LE(plan.arenaBytes, 2 * best) << "trial " << trial;
    double ratio = best == 0 ? 1.0 : double(plan.arenaBytes) / double(best);
    worst = std::max(worst, ratio);
    total += ratio;
    optimal += plan.arenaBytes == best;
  }
  std::printf("greedy vs optimal on %d tiny instances: %d optimal, mean "
              "ratio %.4f, worst %.4f\n",
              trials, optimal, total / trials, worst);
}

//===----------------------------------------------------------------------===//
// Scale
//===----------------------------------------------------------------------===//

TEST(MemoryPlannerTest, TwentyThousandBuffers) {
  // A schedule-like instance: two buffers defined per step, most dying within
  // a few steps, one in ten living long (saved for the backward pass); sizes
  // log-uniform from 64 B to 64 MiB; one in ten a view of a recent buffer.
  std::mt19937_64 rng(2024);
  const int n = 20000;
  std::vector<Buffer> buffers;
  buffers.reserve(n);
  std::uniform_int_distribution<int> percent(0, 99);
  std::uniform_int_distribution<int> logSize(6, 26);
  std::geometric_distribution<int64_t> shortLife(0.2);
  std::uniform_int_distribution<int64_t> longLife(100, n / 2);
  for (int i = 0; i < n; ++i) {
    int64_t first = i / 2;
    int64_t life = percent(rng) < 10 ? longLife(rng) : shortLife(rng);
    Buffer b =
        makeBuffer(i, int64_t{1} << logSize(rng), first, first + life,
                   static_cast<sinter::abi::CategoryKind>(percent(rng) % 5));
    if (i > 0 && percent(rng) < 10) {
      const Buffer &owner =
          buffers[std::max(0, i - 1 - static_cast<int>(rng() % 8))];
      b.aliasOf = owner.id;
      b.bytes = owner.bytes;
    }
    buffers.push_back(b);
  }
  auto start = std::chrono::steady_clock::now();
  MemoryPlan plan = planMemory(buffers);
  double planSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(plan.ok()) << plan.error;
  start = std::chrono::steady_clock::now();
  EXPECT_EQ(verifyPlan(buffers, plan), "");
  double verifySeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("20k buffers: planMemory %.3f s, verifyPlan %.3f s, arena / "
              "lower bound %.4f, saving %.1f%%\n",
              planSeconds, verifySeconds, plan.fragmentationRatio(),
              plan.savingPercent());
  std::printf("%s", formatPlanReport(buffers, plan, 5).c_str());
  // Only catches complexity blowups; speed is measured in bench/.
  EXPECT_LT(planSeconds, 10.0);
  EXPECT_LE(plan.lowerBoundBytes, plan.arenaBytes);
  EXPECT_LE(plan.arenaBytes, plan.bytesWithoutReuse);
}

} // namespace
