//===- matmul_alone.cpp - a step program's matmuls, each timed alone ------===//
//
// A benchmark, not a test. Reads a step program (the NN-step-program.json
// that `sinterc --dump-dir` writes; docs/StepProgram.md), parses it with the
// runtime's own parser, and times every `matmul` step on its own through the
// runtime's MatmulBackend: same shapes, transposes, alpha, bias and
// activation, same thread count (omp_set_num_threads before the backend
// exists, as the Executor does), random operands in freshly allocated
// 64-byte-aligned buffers. Comparing the sum with the profile's in-step
// matmul time shows what the step's surroundings cost the matmuls (cold
// caches, thread wake-ups, interference from the kernels between them).
//
// Each step is timed two ways, best of --reps each:
//
//   hot:  back to back, so the operands stay in cache as far as they fit;
//   cold: before each run, every thread writes a --flush-mib (default 64)
//         buffer, larger than the last-level cache, evicting the operands
//         as the kernels between matmuls would.
//
// Usage: matmul_alone PROGRAM.json [--threads=T] [--reps=N]
//                                  [--flush-mib=M] [--quiet]
// Output: one line per matmul step (unless --quiet), then
//   matmuls_alone steps=... threads=... hot_ms=... cold_ms=... gflop=...
//
//===----------------------------------------------------------------------===//

#include "bench/BenchFlags.h"
#include "runtime/Exec/Matmul.h"
#include "runtime/Exec/StepProgram.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace sinter::exec;
namespace sabi = sinter::abi;

namespace {

struct Options {
  std::string program;
  int threads = 0; // 0: all cores, like the training binary
  int reps = 10;
  int64_t flushMib = 64;
  bool quiet = false;
};

bool parseOptions(int argc, char **argv, Options &opts) {
  using sinter::bench::flagValue;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    long long n;
    if (const char *v = flagValue(argv[i], "--threads=")) {
      if (!sinter::bench::parseAtLeast(v, 1, n))
        return false;
      opts.threads = static_cast<int>(n);
    } else if (const char *v = flagValue(argv[i], "--reps=")) {
      if (!sinter::bench::parseAtLeast(v, 1, n))
        return false;
      opts.reps = static_cast<int>(n);
    } else if (const char *v = flagValue(argv[i], "--flush-mib=")) {
      if (!sinter::bench::parseAtLeast(v, 0, n))
        return false;
      opts.flushMib = n;
    } else if (arg == "--quiet") {
      opts.quiet = true;
    } else if (!arg.empty() && arg[0] != '-' && opts.program.empty()) {
      opts.program = std::string(arg);
    } else {
      return false;
    }
  }
  return !opts.program.empty();
}

absl::StatusOr<std::string> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrFormat("cannot open '%s'", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A 64-byte-aligned f32 array filled with uniform values in [-1, 1) from a
/// fixed xorshift stream (the values only need to be ordinary numbers).
struct FloatBuffer {
  explicit FloatBuffer(int64_t count, uint64_t seed) {
    size_t bytes =
        (static_cast<size_t>(std::max<int64_t>(count, 1)) * 4 + 63) / 64 * 64;
    data = static_cast<float *>(std::aligned_alloc(64, bytes));
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < count; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      data[i] = static_cast<float>(x >> 40) * (2.0f / 16777216.0f) - 1.0f;
    }
  }
  ~FloatBuffer() { std::free(data); }
  FloatBuffer(const FloatBuffer &) = delete;
  FloatBuffer &operator=(const FloatBuffer &) = delete;
  float *data = nullptr;
};

double seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Evicts the caches: every OpenMP thread writes its share of `flush`.
void flushCaches(std::vector<char> &flush, int round) {
  if (flush.empty())
    return;
  char *p = flush.data();
  int64_t n = static_cast<int64_t>(flush.size());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i += 64)
    p[i] = static_cast<char>(round + i);
}

struct StepTiming {
  double hot = std::numeric_limits<double>::infinity();
  double cold = std::numeric_limits<double>::infinity();
};

absl::StatusOr<StepTiming>
timeStep(MatmulBackend &backend, const StepProgram &prog, const MatmulStep &m,
         int reps, std::vector<char> &flush, std::string &plan) {
  const std::vector<Buffer> &bufs = prog.buffers;
  FloatBuffer lhs(bufs[m.lhs].numElements, 1), rhs(bufs[m.rhs].numElements, 2),
      out(bufs[m.out].numElements, 3),
      bias(m.bias >= 0 ? bufs[m.bias].numElements : 0, 4);
  absl::StatusOr<std::unique_ptr<BoundMatmul>> bound =
      backend.bind(prog.matmulDesc(m), lhs.data, rhs.data,
                   m.bias >= 0 ? bias.data : nullptr, out.data);
  if (!bound.ok())
    return bound.status();
  plan = std::string((*bound)->plan());
  if (absl::Status s = (*bound)->run(); !s.ok()) // warm-up
    return s;
  StepTiming t;
  for (int r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    if (absl::Status s = (*bound)->run(); !s.ok())
      return s;
    t.hot = std::min(t.hot, seconds(start));
  }
  for (int r = 0; r < reps; ++r) {
    flushCaches(flush, r);
    auto start = std::chrono::steady_clock::now();
    if (absl::Status s = (*bound)->run(); !s.ok())
      return s;
    t.cold = std::min(t.cold, seconds(start));
  }
  return t;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  return absl::StrFormat("[%s]", absl::StrJoin(shape, ","));
}

int run(const Options &opts) {
  absl::StatusOr<std::string> json = readFile(opts.program);
  if (!json.ok()) {
    std::fprintf(stderr, "error: %s\n",
                 std::string(json.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<StepProgram> prog = parseStepProgramJson(*json);
  if (!prog.ok()) {
    std::fprintf(stderr, "error: %s: %s\n", opts.program.c_str(),
                 std::string(prog.status().message()).c_str());
    return 1;
  }
  int threads = opts.threads > 0 ? opts.threads : omp_get_num_procs();
  // oneDNN sizes its primitives for omp_get_max_threads() at creation.
  omp_set_num_threads(threads);
  absl::StatusOr<std::unique_ptr<MatmulBackend>> backend =
      MatmulBackend::create();
  if (!backend.ok()) {
    std::fprintf(stderr, "error: %s\n",
                 std::string(backend.status().message()).c_str());
    return 1;
  }
  std::vector<char> flush(static_cast<size_t>(opts.flushMib) << 20);
  flushCaches(flush, 0); // first touch

  double hot = 0, cold = 0, flops = 0;
  int64_t count = 0;
  if (!opts.quiet)
    std::printf("# %-5s %-34s %-28s %9s %9s %8s\n", "step", "out", "plan",
                "hot ms", "cold ms", "GFLOP/s");
  for (size_t i = 0; i < prog->steps.size(); ++i) {
    const Step &step = prog->steps[i];
    if (step.kind != sabi::Step::kMatmul)
      continue;
    const MatmulStep &m = step.matmul;
    std::string plan;
    absl::StatusOr<StepTiming> t =
        timeStep(**backend, *prog, m, opts.reps, flush, plan);
    if (!t.ok()) {
      std::fprintf(stderr, "error: step %zu (matmul): %s\n", i,
                   std::string(t.status().message()).c_str());
      return 1;
    }
    absl::StatusOr<MatmulGeometry> g = analyzeMatmul(prog->matmulDesc(m));
    double stepFlops = g.ok() ? 2.0 * static_cast<double>(g->m) * g->k * g->n *
                                    static_cast<double>(g->batchCount)
                              : 0.0;
    hot += t->hot;
    cold += t->cold;
    flops += stepFlops;
    ++count;
    if (opts.quiet)
      continue;
    const Buffer &out = prog->buffers[m.out];
    std::string what = absl::StrFormat(
        "%s%s%s%s", shapeText(out.shape), m.transposeLhs ? " tA" : "",
        m.transposeRhs ? " tB" : "",
        m.activation != sabi::MatmulStep::none
            ? absl::StrFormat(" %s", sabi::activationName(m.activation))
            : std::string());
    std::printf("  %-5zu %-34s %-28s %9.3f %9.3f %8.1f\n", i, what.c_str(),
                plan.c_str(), t->hot * 1e3, t->cold * 1e3,
                stepFlops / t->hot * 1e-9);
  }
  std::printf("matmuls_alone steps=%lld threads=%d hot_ms=%.3f cold_ms=%.3f "
              "gflop=%.3f\n",
              static_cast<long long>(count), threads, hot * 1e3, cold * 1e3,
              flops * 1e-9);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  if (!parseOptions(argc, argv, opts)) {
    std::fprintf(stderr, "usage: matmul_alone PROGRAM.json [--threads=T] "
                         "[--reps=N] [--flush-mib=M] [--quiet]\n");
    return 2;
  }
  return run(opts);
}
