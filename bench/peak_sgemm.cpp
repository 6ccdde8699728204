//===- peak_sgemm.cpp - the machine's measured oneDNN matmul peak ---------===//
//
// A benchmark, not a test. Times one large square matmul C = A B (row-major,
// no transposes, no bias: the shape oneDNN's kernels like best) through a
// plain dnnl::matmul primitive, at the given thread count (omp_set_num_threads
// before the primitive exists, as the Executor does). --dtype=f32 (the
// default) has A, B and C in f32; --dtype=bf16 has A and B in bf16 and C in
// f32 (oneDNN's bf16:bf16:f32 matmul, which accumulates in f32). Its GFLOP/s
// are the denominator of bench/peers.py's MFU (f32 for its fp32 rows, bf16
// for its bf16 mixed-precision ones): the most a training step's matmuls
// could reach on this machine with this oneDNN.
//
// Each size is run once to warm up (first touch, JIT), then --reps times;
// the best run counts (on a shared machine the best is the least
// disturbed one). The largest figure over all sizes is the peak.
//
// Usage: peak_sgemm [--sizes=2048,4096] [--threads=T] [--reps=N]
//                   [--dtype=f32|bf16]
// Output: one line per size (with the implementation oneDNN chose for it,
// impl_info_str), then
//   peak_sgemm threads=... n=... best_ms=... gflops=... dtype=... isa=...
// for the best size, where isa is dnnl::get_effective_cpu_isa() as the
// runtime names it (MatmulBackend::isa, runtime/Exec/Matmul.h): the
// widest instruction set oneDNN dispatches to on this machine (e.g.
// avx512_core_amx).
//
//===----------------------------------------------------------------------===//

#include "abi/HalfFloat.h"
#include "bench/BenchFlags.h"
#include "runtime/Exec/Matmul.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct Options {
  std::vector<int64_t> sizes = {2048, 4096};
  int threads = 0; // 0: all cores, like the training binary
  int reps = 5;
  bool bf16 = false; // --dtype=bf16: A and B in bf16, C in f32
};

bool parseSizes(const char *text, std::vector<int64_t> &sizes) {
  sizes.clear();
  for (const char *p = text; *p;) {
    char *end;
    long long n = std::strtoll(p, &end, 10);
    if (end == p || n < 1 || n > 65536)
      return false;
    sizes.push_back(n);
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',')
      return false;
  }
  return !sizes.empty();
}

bool parseOptions(int argc, char **argv, Options &opts) {
  using sinter::bench::flagValue;
  for (int i = 1; i < argc; ++i) {
    long long n;
    if (const char *v = flagValue(argv[i], "--sizes=")) {
      if (!parseSizes(v, opts.sizes))
        return false;
    } else if (const char *v = flagValue(argv[i], "--threads=")) {
      if (!sinter::bench::parseAtLeast(v, 1, n))
        return false;
      opts.threads = static_cast<int>(n);
    } else if (const char *v = flagValue(argv[i], "--reps=")) {
      if (!sinter::bench::parseAtLeast(v, 1, n))
        return false;
      opts.reps = static_cast<int>(n);
    } else if (const char *v = flagValue(argv[i], "--dtype=")) {
      std::string_view dtype(v);
      if (dtype != "f32" && dtype != "bf16")
        return false;
      opts.bf16 = dtype == "bf16";
    } else {
      return false;
    }
  }
  return true;
}

/// Uniform values in [-1, 1) from a fixed xorshift stream; written in
/// parallel so that the pages land where the threads that use them run.
void fill(std::vector<float> &v, uint64_t seed) {
  int64_t n = static_cast<int64_t>(v.size());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    uint64_t x = (seed + static_cast<uint64_t>(i)) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    v[i] = static_cast<float>(x >> 40) * (2.0f / 16777216.0f) - 1.0f;
  }
}

/// `v` rounded to bf16 (to nearest, ties to even; the values are finite).
void toBf16(const std::vector<float> &v, std::vector<uint16_t> &out) {
  int64_t n = static_cast<int64_t>(v.size());
  out.resize(v.size());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    out[i] = sinter::half::floatToBf16Bits(v[i]);
  }
}

/// Best seconds of `reps` runs of an n x n x n matmul (A and B in bf16
/// when `bf16`, C always f32); `impl` gets oneDNN's implementation name.
double timeSize(dnnl::engine &engine, dnnl::stream &stream, int64_t n,
                int reps, bool bf16, std::string &impl) {
  using dnnl::memory;
  memory::desc md({n, n}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc inMd({n, n},
                    bf16 ? memory::data_type::bf16 : memory::data_type::f32,
                    memory::format_tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(inMd, inMd, md),
                                  engine);
  impl = pd.impl_info_str();
  dnnl::matmul mm(pd);
  std::vector<float> a(n * n), b(n * n), c(n * n);
  fill(a, 1);
  fill(b, 2);
  fill(c, 3);
  std::vector<uint16_t> a16, b16;
  if (bf16) {
    toBf16(a, a16);
    toBf16(b, b16);
  }
  memory ma(inMd, engine, bf16 ? static_cast<void *>(a16.data()) : a.data()),
      mb(inMd, engine, bf16 ? static_cast<void *>(b16.data()) : b.data()),
      mc(md, engine, c.data());
  auto once = [&] {
    mm.execute(stream, {{DNNL_ARG_SRC, ma},
                        {DNNL_ARG_WEIGHTS, mb},
                        {DNNL_ARG_DST, mc}});
    stream.wait();
  };
  once(); // warm-up: JIT, first touch of the scratchpad
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    once();
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
  }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  if (!parseOptions(argc, argv, opts)) {
    std::fprintf(stderr,
                 "usage: %s [--sizes=2048,4096] [--threads=T] [--reps=N] "
                 "[--dtype=f32|bf16]\n",
                 argv[0]);
    return 2;
  }
  int threads = opts.threads > 0 ? opts.threads : omp_get_num_procs();
  // oneDNN sizes its primitives for omp_get_max_threads() at creation.
  omp_set_num_threads(threads);
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    double bestGflops = 0, bestMs = 0;
    int64_t bestN = 0;
    for (int64_t n : opts.sizes) {
      std::string impl;
      double s = timeSize(engine, stream, n, opts.reps, opts.bf16, impl);
      double gflops = 2.0 * static_cast<double>(n) * n * n / s * 1e-9;
      std::printf("  n=%-6lld best %10.3f ms %8.1f GFLOP/s  impl %s\n",
                  static_cast<long long>(n), s * 1e3, gflops, impl.c_str());
      if (gflops > bestGflops) {
        bestGflops = gflops;
        bestMs = s * 1e3;
        bestN = n;
      }
    }
    std::printf("peak_sgemm threads=%d n=%lld best_ms=%.3f gflops=%.1f "
                "dtype=%s isa=%s\n",
                threads, static_cast<long long>(bestN), bestMs, bestGflops,
                opts.bf16 ? "bf16" : "f32",
                sinter::exec::MatmulBackend::isa().c_str());
  } catch (const dnnl::error &e) {
    std::fprintf(stderr, "error: oneDNN: %s (status %d)\n", e.what(),
                 static_cast<int>(e.status));
    return 1;
  }
  return 0;
}
