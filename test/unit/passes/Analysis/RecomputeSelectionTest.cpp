//===- RecomputeSelectionTest.cpp - Unit tests of recompute selection -----===//
//
// Budget parsing, the peak model on hand-checked instances, the preference
// for cheap values, loose and impossible budgets, pruning, and randomized
// properties against brute force: without extras the greedy alone finds a
// fitting choice whenever one exists; with extras selectRecompute does on
// small instances; every reported peak is the model's; large instances run
// fast.
//
//===----------------------------------------------------------------------===//

#include "passes/Analysis/RecomputeSelection.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

using namespace sinter::analysis;

namespace {

RecomputeCandidate candidate(int64_t id, int64_t bytes, int64_t first,
                             int64_t last, double cost,
                             std::vector<StepBytes> extras = {}) {
  RecomputeCandidate c;
  c.id = id;
  c.bytes = bytes;
  c.savedFirst = first;
  c.savedLast = last;
  c.cost = cost;
  c.extras = std::move(extras);
  return c;
}

std::vector<bool> maskOf(const RecomputeProblem &problem,
                         const RecomputeSelection &selection) {
  std::vector<bool> mask(problem.candidates.size(), false);
  for (const RecomputePick &p : selection.chosen)
    for (size_t i = 0; i < problem.candidates.size(); ++i)
      if (problem.candidates[i].id == p.id)
        mask[i] = true;
  return mask;
}

/// The smallest peak any subset reaches, and whether a subset fits.
bool bruteForceFits(const RecomputeProblem &problem, int64_t target,
                    int64_t *bestPeak = nullptr) {
  const size_t n = problem.candidates.size();
  bool fits = false;
  int64_t best = std::numeric_limits<int64_t>::max();
  std::vector<bool> mask(n);
  for (uint64_t bits = 0; bits < (uint64_t(1) << n); ++bits) {
    for (size_t i = 0; i < n; ++i)
      mask[i] = (bits >> i) & 1;
    int64_t peak = peakOf(problem, mask);
    best = std::min(best, peak);
    fits |= peak <= target;
  }
  if (bestPeak)
    *bestPeak = best;
  return fits;
}

//===----------------------------------------------------------------------===//
// Budgets
//===----------------------------------------------------------------------===//

TEST(RecomputeBudgetTest, Bytes) {
  std::string error;
  auto b = parseMemoryBudget("123456", error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(b->kind, MemoryBudget::Kind::Bytes);
  EXPECT_EQ(b->bytes, 123456);
  EXPECT_EQ(parseMemoryBudget("2GiB", error)->bytes, 2LL << 30);
  EXPECT_EQ(parseMemoryBudget("1500MB", error)->bytes, 1500000000);
  EXPECT_EQ(parseMemoryBudget("1.5 GiB", error)->bytes, 3LL << 29);
  EXPECT_EQ(parseMemoryBudget(" 64kib ", error)->bytes, 65536);
  EXPECT_EQ(parseMemoryBudget("7B", error)->bytes, 7);
  EXPECT_EQ(parseMemoryBudget("3TB", error)->bytes, 3000000000000);
  EXPECT_EQ(b->resolve(999), 123456);
  EXPECT_EQ(b->describe(), "120.56 KiB");
}

TEST(RecomputeBudgetTest, Fractions) {
  std::string error;
  auto half = parseMemoryBudget("0.5", error);
  ASSERT_TRUE(half) << error;
  EXPECT_EQ(half->kind, MemoryBudget::Kind::Fraction);
  EXPECT_DOUBLE_EQ(half->fraction, 0.5);
  EXPECT_EQ(half->resolve(1000), 500);
  EXPECT_EQ(half->describe(), "50% of the arena without recompute");
  auto pct = parseMemoryBudget("75%", error);
  ASSERT_TRUE(pct) << error;
  EXPECT_DOUBLE_EQ(pct->fraction, 0.75);
  EXPECT_EQ(pct->resolve(1001), 750);
  EXPECT_TRUE(parseMemoryBudget("100%", error));
  EXPECT_TRUE(parseMemoryBudget("1.0", error));
}

TEST(RecomputeBudgetTest, Errors) {
  auto errorOf = [](const char *text) {
    std::string error;
    EXPECT_FALSE(parseMemoryBudget(text, error)) << text;
    return error;
  };
  EXPECT_NE(errorOf("").find("the budget is empty"), std::string::npos);
  EXPECT_NE(errorOf("abc").find("does not start with a number"),
            std::string::npos);
  EXPECT_NE(errorOf("1.5").find("a fraction must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(errorOf("0.0").find("a fraction must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(errorOf("150%").find("a percentage must be in (0, 100]"),
            std::string::npos);
  EXPECT_NE(errorOf("0%").find("a percentage"), std::string::npos);
  EXPECT_NE(errorOf("12 parsecs").find("unknown unit 'parsecs'"),
            std::string::npos);
  EXPECT_NE(errorOf("0").find("at least 1 byte"), std::string::npos);
  EXPECT_NE(errorOf("99999999TiB").find("too large"), std::string::npos);
  // Every message says what would be accepted.
  EXPECT_NE(errorOf("x").find("2GiB, 1500MB, 123456"), std::string::npos);
}

TEST(RecomputeBudgetTest, FormatBytes) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1024), "1.00 KiB");
  EXPECT_EQ(formatBytes(1630270468), "1.52 GiB");
  EXPECT_EQ(formatBytes(3LL << 40), "3.00 TiB");
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

TEST(RecomputeSelectionTest, PeakOfHandChecked) {
  RecomputeProblem p;
  p.liveBytes = {10, 50, 80, 60, 20};
  p.candidates = {candidate(1, 30, 1, 2, 5.0),
                  candidate(2, 25, 2, 3, 1.0, {{40, 4, 4}})};
  int64_t step = -1;
  EXPECT_EQ(peakOf(p, {false, false}, &step), 80);
  EXPECT_EQ(step, 2);
  // 1: {10, 20, 50, 60, 20}.
  EXPECT_EQ(peakOf(p, {true, false}, &step), 60);
  EXPECT_EQ(step, 3);
  // 2: {10, 50, 55, 35, 60}.
  EXPECT_EQ(peakOf(p, {false, true}, &step), 60);
  EXPECT_EQ(step, 4);
  // both: {10, 20, 25, 35, 60}.
  EXPECT_EQ(peakOf(p, {true, true}, &step), 60);
  EXPECT_EQ(step, 4);
}

TEST(RecomputeSelectionTest, InvalidProblems) {
  RecomputeProblem p;
  p.liveBytes = {1, 2};
  p.candidates = {candidate(1, 1, 0, 1, 1.0), candidate(1, 1, 0, 0, 1.0)};
  EXPECT_NE(validateProblem(p).find("used twice"), std::string::npos);
  p.candidates = {candidate(1, 1, 0, 2, 1.0)};
  EXPECT_NE(validateProblem(p).find("outside"), std::string::npos);
  p.candidates = {candidate(1, -1, 0, 1, 1.0)};
  EXPECT_NE(selectRecompute(p, {0}).error, "");
  p.candidates = {candidate(1, 1, 0, 1, 1.0, {{1, 0, 5}})};
  EXPECT_NE(validateProblem(p).find("extra"), std::string::npos);
  // An empty saved interval is fine: the candidate never helps.
  p.candidates = {candidate(1, 1, 1, 0, 1.0)};
  EXPECT_EQ(validateProblem(p), "");
}

TEST(RecomputeSelectionTest, LiveBytesByStepWidensRootsOverViews) {
  std::vector<Buffer> buffers(3);
  buffers[0] = {
      0,           100, 0, 1, sinter::abi::Category::activations, std::nullopt,
      std::nullopt};
  buffers[1] = {
      1,          100,         1, 4, sinter::abi::Category::activations,
      int64_t(0), std::nullopt};
  buffers[2] = {
      2, 7, 2, 2, sinter::abi::Category::gradients, std::nullopt, std::nullopt};
  EXPECT_EQ(liveBytesByStep(buffers, 6),
            (std::vector<int64_t>{100, 100, 107, 100, 100, 0}));
}

//===----------------------------------------------------------------------===//
// Selection
//===----------------------------------------------------------------------===//

/// A GPT-like step: a matmul output and an elementwise output, both kept
/// from the forward (steps 0-4) to the backward (5-9), save the same bytes
/// at the peak; the elementwise one costs far less per byte.
RecomputeProblem matmulAndGelu() {
  RecomputeProblem p;
  p.liveBytes = {10, 20, 30, 40, 50, 50, 40, 30, 20, 10};
  p.candidates = {candidate(/*matmul*/ 1, 10, 3, 6, 400.0 * 10),
                  candidate(/*gelu*/ 2, 10, 3, 6, 6.0 * 10)};
  return p;
}

TEST(RecomputeSelectionTest, PrefersCheapOps) {
  RecomputeProblem p = matmulAndGelu();
  RecomputeSelection s = selectRecompute(p, {45});
  ASSERT_EQ(s.error, "");
  EXPECT_TRUE(s.fits);
  ASSERT_EQ(s.chosen.size(), 1u);
  EXPECT_EQ(s.chosen[0].id, 2);
  EXPECT_EQ(s.chosen[0].how, "greedy");
  EXPECT_EQ(s.chosen[0].peakStep, 4);
  EXPECT_EQ(s.chosen[0].peakBytes, 50);
  EXPECT_EQ(s.chosen[0].alternatives, 2);
  EXPECT_DOUBLE_EQ(s.chosen[0].costPerByte, 6.0);
  EXPECT_EQ(s.peakBytes, 40);
  EXPECT_EQ(s.initialPeakBytes, 50);
  EXPECT_DOUBLE_EQ(s.cost, 60.0);
  // A tighter budget needs both.
  s = selectRecompute(p, {30});
  EXPECT_TRUE(s.fits);
  EXPECT_EQ(s.chosen.size(), 2u);
  EXPECT_EQ(s.peakBytes, 30);
}

TEST(RecomputeSelectionTest, LooseBudgetChoosesNothing) {
  RecomputeProblem p = matmulAndGelu();
  RecomputeSelection s = selectRecompute(p, {50});
  EXPECT_TRUE(s.fits);
  EXPECT_TRUE(s.chosen.empty());
  EXPECT_EQ(s.peakBytes, 50);
  EXPECT_DOUBLE_EQ(s.cost, 0.0);
}

TEST(RecomputeSelectionTest, ImpossibleBudgetReportsTheLowestPeak) {
  RecomputeProblem p = matmulAndGelu();
  RecomputeSelection s = selectRecompute(p, {20});
  EXPECT_FALSE(s.fits);
  // Both are chosen and the peak is what is left: 30 at step 2 (nothing
  // covers it).
  EXPECT_EQ(s.chosen.size(), 2u);
  EXPECT_EQ(s.peakBytes, 30);
  EXPECT_EQ(s.peakStep, 2);
}

TEST(RecomputeSelectionTest, ExtrasThatMakeANewPeakAreSkipped) {
  RecomputeProblem p;
  p.liveBytes = {40, 100, 90};
  // The cheap one would bring 30 bytes back at step 2 (a chain's
  // intermediate): 90 + 30 = 120 > 100, no progress. The dearer one helps.
  p.candidates = {candidate(1, 20, 1, 1, 1.0, {{30, 2, 2}}),
                  candidate(2, 20, 1, 1, 100.0)};
  RecomputeSelection s = selectRecompute(p, {90, /*exactLimit=*/0});
  EXPECT_TRUE(s.fits);
  ASSERT_EQ(s.chosen.size(), 1u);
  EXPECT_EQ(s.chosen[0].id, 2);
}

TEST(RecomputeSelectionTest, ExactSearchRescuesTheGreedy) {
  // The greedy takes the cheap A at step 1, whose extra at step 3 nothing
  // can cover; B alone (dearer) fits.
  RecomputeProblem p;
  p.liveBytes = {0, 100, 0, 90};
  p.candidates = {candidate(/*A*/ 1, 20, 1, 1, 1.0, {{8, 3, 3}}),
                  candidate(/*B*/ 2, 15, 1, 1, 10.0)};
  RecomputeSelection greedyOnly = selectRecompute(p, {90, 0});
  EXPECT_FALSE(greedyOnly.fits);
  RecomputeSelection s = selectRecompute(p, {90});
  EXPECT_TRUE(s.fits);
  ASSERT_EQ(s.chosen.size(), 1u);
  EXPECT_EQ(s.chosen[0].id, 2);
  EXPECT_EQ(s.chosen[0].how, "exact");
}

TEST(RecomputeSelectionTest, PruningDropsWhatTheBudgetDoesNotNeed) {
  // The greedy picks the cheap A at step 1, then C at step 2, which also
  // covers step 1; A is then not needed.
  RecomputeProblem p;
  p.liveBytes = {0, 100, 99};
  p.candidates = {candidate(/*A*/ 1, 10, 1, 1, 1.0),
                  candidate(/*C*/ 2, 30, 1, 2, 90.0)};
  RecomputeSelection s = selectRecompute(p, {95});
  EXPECT_TRUE(s.fits);
  ASSERT_EQ(s.chosen.size(), 1u);
  EXPECT_EQ(s.chosen[0].id, 2);
  EXPECT_EQ(s.peakBytes, 70);
}

//===----------------------------------------------------------------------===//
// Randomized properties
//===----------------------------------------------------------------------===//

RecomputeProblem randomProblem(std::mt19937_64 &rng, int steps, int n,
                               bool withExtras) {
  std::uniform_int_distribution<int64_t> live(0, 1000), size(1, 300),
      extra(1, 200), step(0, steps - 1);
  std::uniform_real_distribution<double> perByte(0.5, 500.0);
  RecomputeProblem p;
  for (int t = 0; t < steps; ++t)
    p.liveBytes.push_back(live(rng));
  for (int i = 0; i < n; ++i) {
    int64_t a = step(rng), b = step(rng);
    if (a > b)
      std::swap(a, b);
    RecomputeCandidate c = candidate(100 + i, size(rng), a, b, 0.0);
    c.cost = perByte(rng) * c.bytes;
    // The saved bytes were live over the saved interval.
    for (int64_t t = a; t <= b; ++t)
      p.liveBytes[t] += c.bytes;
    if (withExtras && rng() % 2) {
      int64_t e = step(rng);
      c.extras.push_back({extra(rng), e, std::min<int64_t>(steps - 1, e + 1)});
    }
    p.candidates.push_back(c);
  }
  return p;
}

void checkSelection(const RecomputeProblem &p, const RecomputeSelection &s,
                    int64_t target) {
  ASSERT_EQ(s.error, "");
  int64_t step = -1;
  EXPECT_EQ(s.peakBytes, peakOf(p, maskOf(p, s), &step));
  EXPECT_EQ(s.peakStep, step);
  EXPECT_EQ(s.fits, s.peakBytes <= target);
  if (s.fits) {
    // Nothing chosen is superfluous.
    std::vector<bool> mask = maskOf(p, s);
    for (size_t i = 0; i < mask.size(); ++i) {
      if (!mask[i])
        continue;
      mask[i] = false;
      EXPECT_GT(peakOf(p, mask), target) << "candidate " << p.candidates[i].id;
      mask[i] = true;
    }
  }
}

TEST(RecomputeSelectionTest, GreedyIsCompleteWithoutExtras) {
  std::mt19937_64 rng(7);
  int fitting = 0;
  for (int round = 0; round < 400; ++round) {
    int steps = 2 + rng() % 12, n = 1 + rng() % 10;
    RecomputeProblem p = randomProblem(rng, steps, n, /*withExtras=*/false);
    int64_t best = 0;
    bruteForceFits(p, 0, &best);
    int64_t initial = peakOf(p, std::vector<bool>(n, false));
    // Targets around the reachable range, including just below it.
    for (int64_t target :
         {best - 1, best, (best + initial) / 2, initial, initial + 1}) {
      RecomputeSelection s = selectRecompute(p, {target, /*exactLimit=*/0});
      checkSelection(p, s, target);
      EXPECT_EQ(s.fits, bruteForceFits(p, target))
          << "round " << round << " target " << target;
      fitting += s.fits;
    }
  }
  EXPECT_GT(fitting, 1000);
}

TEST(RecomputeSelectionTest, FitsWheneverBruteForceDoesWithExtras) {
  std::mt19937_64 rng(11);
  double worstCostRatio = 1.0;
  for (int round = 0; round < 400; ++round) {
    int steps = 2 + rng() % 12, n = 1 + rng() % 10;
    RecomputeProblem p = randomProblem(rng, steps, n, /*withExtras=*/true);
    int64_t best = 0;
    bruteForceFits(p, 0, &best);
    int64_t initial = peakOf(p, std::vector<bool>(n, false));
    for (int64_t target : {best - 1, best, (best + initial) / 2, initial}) {
      RecomputeSelection s = selectRecompute(p, {target});
      checkSelection(p, s, target);
      bool possible = bruteForceFits(p, target);
      EXPECT_EQ(s.fits, possible) << "round " << round << " target " << target;
      if (!s.fits || s.cost == 0.0)
        continue;
      // Compare with the cheapest fitting subset.
      double cheapest = 1e300;
      std::vector<bool> mask(n);
      for (uint64_t bits = 0; bits < (uint64_t(1) << n); ++bits) {
        double cost = 0;
        for (int i = 0; i < n; ++i) {
          mask[i] = (bits >> i) & 1;
          cost += mask[i] ? p.candidates[i].cost : 0.0;
        }
        if (peakOf(p, mask) <= target)
          cheapest = std::min(cheapest, cost);
      }
      worstCostRatio = std::max(worstCostRatio, s.cost / cheapest);
    }
  }
  // Greedy is not optimal in cost; record how far off it gets.
  printf("worst cost / optimal cost on random instances: %.2f\n",
         worstCostRatio);
}

TEST(RecomputeSelectionTest, ThousandsOfCandidatesRunFast) {
  std::mt19937_64 rng(3);
  RecomputeProblem p = randomProblem(rng, 20000, 2000, /*withExtras=*/true);
  int64_t initial = peakOf(p, std::vector<bool>(p.candidates.size(), false));
  auto start = std::chrono::steady_clock::now();
  RecomputeSelection s = selectRecompute(p, {initial / 2});
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  checkSelection(p, s, initial / 2);
  EXPECT_LT(s.peakBytes, initial);
  EXPECT_LT(seconds, 20.0);
  printf("2000 candidates over 20000 steps: %.2f s, %zu chosen\n", seconds,
         s.chosen.size());
}

} // namespace
