//===- stream_triad.cpp - the machine's memory bandwidth, STREAM-style ----===//
//
// A benchmark, not a test: the bandwidth a memory-bound kernel can hope for
// on this machine, the yardstick bench/kernels.py measures fused kernels
// against.
//
//   a[i] = b[i] + s * c[i]      a, b, c: f64, each --mib MiB (default 128)
//
// The arrays are far larger than the last-level cache, first-touched by the
// threads that later use them (static schedule, same split), and the triad
// runs --reps times (default 20) per thread count; the best time counts, as
// in STREAM. Bandwidth follows STREAM's convention: 3 x 8 bytes per element
// (2 reads + 1 write). With ordinary stores the core also reads each line of
// `a` before writing it (write-allocate), so the traffic the memory really
// sees is 4 x 8 bytes per element; that figure is printed alongside
// ("with write-allocate"). The compiler's kernel byte counts
// (KernelEmitter's bytesMoved) follow STREAM's convention, so that is the
// number to compare them with.
//
// Usage: stream_triad [--threads=1,2] [--mib=128] [--reps=20]
// Output: one line per thread count, machine-readable:
//   triad threads=2 best_ms=... gbs=... gbs_write_allocate=... median_ms=...
//
//===----------------------------------------------------------------------===//

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  std::vector<int> threads{1, 2};
  int64_t mib = 128;
  int reps = 20;
};

bool parseIntList(const char *text, std::vector<int> &out) {
  out.clear();
  while (*text) {
    char *end = nullptr;
    long v = std::strtol(text, &end, 10);
    if (end == text || v < 1)
      return false;
    out.push_back(static_cast<int>(v));
    text = *end == ',' ? end + 1 : end;
    if (*end && *end != ',')
      return false;
  }
  return !out.empty();
}

bool parseOptions(int argc, char **argv, Options &opts) {
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    if (!std::strncmp(arg, "--threads=", 10)) {
      if (!parseIntList(arg + 10, opts.threads))
        return false;
    } else if (!std::strncmp(arg, "--mib=", 6)) {
      opts.mib = std::atoll(arg + 6);
      if (opts.mib < 1)
        return false;
    } else if (!std::strncmp(arg, "--reps=", 7)) {
      opts.reps = std::atoi(arg + 7);
      if (opts.reps < 1)
        return false;
    } else {
      return false;
    }
  }
  return true;
}

/// One triad over [0, n) on `threads` threads; returns seconds.
double triad(double *__restrict a, const double *__restrict b,
             const double *__restrict c, double s, int64_t n, int threads) {
  auto start = std::chrono::steady_clock::now();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    a[i] = b[i] + s * c[i];
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  if (!parseOptions(argc, argv, opts)) {
    std::fprintf(
        stderr,
        "usage: stream_triad [--threads=1,2] [--mib=128] [--reps=20]\n");
    return 2;
  }
  const int64_t n =
      opts.mib * 1024 * 1024 / static_cast<int64_t>(sizeof(double));
  const size_t bytes = static_cast<size_t>(n) * sizeof(double);
  auto *a = static_cast<double *>(std::aligned_alloc(64, bytes));
  auto *b = static_cast<double *>(std::aligned_alloc(64, bytes));
  auto *c = static_cast<double *>(std::aligned_alloc(64, bytes));
  if (!a || !b || !c) {
    std::fprintf(stderr, "error: cannot allocate 3 x %lld MiB\n",
                 static_cast<long long>(opts.mib));
    return 1;
  }
  int maxThreads = *std::max_element(opts.threads.begin(), opts.threads.end());
  // First touch with the widest split, so pages spread like the runs use them.
#pragma omp parallel for num_threads(maxThreads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 0.0;
    b[i] = 1.0;
    c[i] = 2.0;
  }

  std::printf("# triad: a = b + s*c, 3 arrays x %lld MiB (f64), best of %d\n",
              static_cast<long long>(opts.mib), opts.reps);
  for (int threads : opts.threads) {
    std::vector<double> times;
    triad(a, b, c, 3.0, n, threads); // warm-up: wakes the thread pool
    for (int r = 0; r < opts.reps; ++r)
      times.push_back(triad(a, b, c, 3.0, n, threads));
    std::sort(times.begin(), times.end());
    double best = times.front(), median = times[times.size() / 2];
    double stream = 3.0 * static_cast<double>(bytes) / best * 1e-9;
    double allocate = 4.0 * static_cast<double>(bytes) / best * 1e-9;
    std::printf("triad threads=%d best_ms=%.3f gbs=%.2f "
                "gbs_write_allocate=%.2f median_ms=%.3f\n",
                threads, best * 1e3, stream, allocate, median * 1e3);
  }
  // Keeps the stores observable.
  volatile double sink = a[n / 2];
  (void)sink;
  std::free(a);
  std::free(b);
  std::free(c);
  return 0;
}
