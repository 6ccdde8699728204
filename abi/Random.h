//===- Random.h - the counter-based generator compiler and runtime share -===//
//
// Parameter initialization and dropout masks must come out the same in the
// reference interpreter, in compiled CPU and CUDA kernels and in the runtime,
// on any number of threads. So randomness here is a pure function of
// (seed, stream, counter): no state, no ordering.
//
//   key(seed, stream) = mix(mix(seed ^ kGolden) ^ stream)
//   bits(key, k)      = mix(key + k * kGolden)          (all mod 2^64)
//   uniform24(key, k) = (bits(key, k) >> 40) * 2^-24    in [0, 1), exact in f32
//   uniform53(key, k) = (bits(key, k) >> 11) * 2^-53    in [0, 1)
//   normal(key, k)    = sqrt(-2 ln(1 - uniform53(key, 2k)))
//                       * cos(2 pi uniform53(key, 2k + 1))      (Box-Muller)
//
// where mix is the splitmix64 finalizer. Dropout keeps element k of the op
// with attribute `seed` at training step `step` when
// uniform24(key(seed, step), shard * N + k') >= rate, k' the element's index
// with the batch axis first (batchMajorIndex). docs/Random.md states the same
// contract; test/unit/runtime/RandomTest.cpp pins known values.
//
// Header-only C++17; part of the ABI both compiler/ and runtime/ include.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_ABI_RANDOM_H
#define SINTER_ABI_RANDOM_H

#include <cmath>
#include <cstdint>

namespace sinter::random {

inline constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

/// The splitmix64 output function: a bijection that scrambles all bits.
inline constexpr uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// The key of one independent stream of a seed.
inline constexpr uint64_t key(uint64_t seed, uint64_t stream) {
  return mix(mix(seed ^ kGolden) ^ stream);
}

/// 64 random bits for counter `k` of a stream.
inline constexpr uint64_t bits(uint64_t key, uint64_t k) {
  return mix(key + k * kGolden);
}

/// Uniform in [0, 1) with 24 bits: exactly representable in f32.
inline float uniform24(uint64_t key, uint64_t k) {
  return static_cast<float>(bits(key, k) >> 40) * 0x1.0p-24f;
}

/// Uniform in [0, 1) with 53 bits.
inline double uniform53(uint64_t key, uint64_t k) {
  return static_cast<double>(bits(key, k) >> 11) * 0x1.0p-53;
}

/// A standard normal sample for counter `k` (uses counters 2k and 2k + 1).
inline double normal(uint64_t key, uint64_t k) {
  double u1 = 1.0 - uniform53(key, 2 * k); // in (0, 1]: log is finite
  double u2 = uniform53(key, 2 * k + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

/// Whether dropout with `rate` keeps element `k`.
inline bool dropoutKeeps(uint64_t key, uint64_t k, double rate) {
  return static_cast<double>(uniform24(key, k)) >= rate;
}

/// Dropout's counter for the element at row-major index `k` of an operand
/// viewed as [outer, batch, inner] (the batch axis with `outer` elements'
/// worth of axes before it and `inner` after): its row-major index once the
/// batch axis is moved to the front, so that the counters of one batch row
/// are one contiguous block, as they are with the batch leading (outer = 1,
/// where the counter is `k`).
inline constexpr uint64_t batchMajorIndex(uint64_t k, uint64_t outer,
                                          uint64_t batch, uint64_t inner) {
  uint64_t rest = k % inner;
  uint64_t row = (k / inner) % batch;
  uint64_t o = k / (inner * batch);
  return (row * outer + o) * inner + rest;
}

/// FNV-1a of a name: gives every parameter its own initializer stream, so
/// values do not depend on the order parameters are declared in.
inline uint64_t nameHash(const char *name) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (; *name; ++name)
    h = (h ^ static_cast<unsigned char>(*name)) * 0x100000001B3ULL;
  return h;
}

} // namespace sinter::random

#endif // SINTER_ABI_RANDOM_H
