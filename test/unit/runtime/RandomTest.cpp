//===- RandomTest.cpp - the counter-based generator's contract -----------===//
//
// abi/Random.h is a contract between the compiler (interpreter,
// kernels) and the training binary: these values must never change, or
// checkpoints would no longer resume to the same dropout masks and fresh
// models would no longer start from the same weights.
//
//===----------------------------------------------------------------------===//

#include "abi/Random.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace sinter::random;

TEST(Random, MixIsTheSplitMix64Finalizer) {
  // splitmix64 seeded with 0 returns mix(k * golden) for k = 1, 2, ...;
  // these are its published first outputs.
  EXPECT_EQ(mix(kGolden), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(mix(2 * kGolden), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(mix(3 * kGolden), 0x06C45D188009454FULL);
}

TEST(Random, PinnedStreamValues) {
  // Cross-checked against an independent numpy implementation
  // (test/e2e/chargpt_reference.py).
  EXPECT_EQ(key(1337, 0), 0x19E6B1C841BE1D8DULL);
  EXPECT_EQ(bits(key(1337, 0), 0), 0xD8F5D7E3B163EBC1ULL);
  EXPECT_EQ(nameHash(""), 0xCBF29CE484222325ULL); // FNV-1a offset basis
  EXPECT_EQ(nameHash("a"), 0xAF63DC4C8601EC8CULL); // FNV-1a test vector
}

TEST(Random, StreamsAndCountersAreIndependent) {
  EXPECT_NE(key(1, 0), key(1, 1));
  EXPECT_NE(key(1, 0), key(2, 0));
  EXPECT_NE(bits(key(1, 0), 0), bits(key(1, 0), 1));
}

TEST(Random, UniformAndNormalHaveTheRightMoments) {
  uint64_t k = key(42, 7);
  const int n = 200000;
  double sum = 0, square = 0, nsum = 0, nsquare = 0;
  for (int i = 0; i < n; ++i) {
    float u = uniform24(k, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    square += double(u) * u;
    double z = normal(k, i);
    ASSERT_TRUE(std::isfinite(z));
    nsum += z;
    nsquare += z * z;
  }
  // Means within 5 standard errors.
  EXPECT_NEAR(sum / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(square / n - (sum / n) * (sum / n), 1.0 / 12, 0.002);
  EXPECT_NEAR(nsum / n, 0.0, 5 / std::sqrt(double(n)));
  EXPECT_NEAR(nsquare / n, 1.0, 0.015);
}

TEST(Random, DropoutKeepsTheExpectedFraction) {
  uint64_t k = key(3, 11);
  int kept = 0;
  for (int i = 0; i < 100000; ++i)
    kept += dropoutKeeps(k, i, 0.2);
  EXPECT_NEAR(kept, 80000, 5 * std::sqrt(100000 * 0.2 * 0.8));
  EXPECT_TRUE(dropoutKeeps(k, 0, 0.0));
}

TEST(Random, BatchMajorIndexNumbersEachBatchRowContiguously) {
  // A [T = 3, B = 2, D = 4] operand, batch on axis 1: element (t, b, d) at
  // row-major k = (t * 2 + b) * 4 + d gets counter (b * 3 + t) * 4 + d, its
  // index in the [B, T, D] transpose. So batch row b's counters are the
  // block [12 b, 12 (b + 1)), as with the batch leading: the contract that
  // makes a rank's shard * N + counter those of its rows in the global batch.
  for (uint64_t t = 0; t < 3; ++t)
    for (uint64_t b = 0; b < 2; ++b)
      for (uint64_t d = 0; d < 4; ++d)
        EXPECT_EQ(batchMajorIndex((t * 2 + b) * 4 + d, 3, 2, 4),
                  (b * 3 + t) * 4 + d);
  // The batch leading (outer = 1) or with nothing after it: the identity,
  // and a plain transpose.
  for (uint64_t k = 0; k < 24; ++k) {
    EXPECT_EQ(batchMajorIndex(k, 1, 6, 4), k);
    EXPECT_EQ(batchMajorIndex(k, 6, 4, 1), (k % 4) * 6 + k / 4);
  }
}
