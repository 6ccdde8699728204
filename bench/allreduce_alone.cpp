//===- allreduce_alone.cpp - a step's gradient all-reduces, timed alone ---===//
//
// A benchmark, not a test. Run on every rank of a job (sinter-launch -n 2
// ./allreduce_alone ...), it joins the job the way the training binary does
// (runtime/Comm: the launcher's environment, the rendezvous, Gloo's TCP
// transport) and times the all-reduces of one step's gradient buckets back
// to back on the calling thread, with nothing else running: the
// communication a data-parallel step has to hide. bench/data_parallel.py
// passes the bucket sizes of the compiled char-GPT.
//
// Usage: allreduce_alone BYTES[,BYTES...] [--reps=N] [--shm-piece-bytes=N]
//                        [--copy]
// (--shm-piece-bytes: the shared memory's piece, 0 for TCP only; --copy:
// the buckets stay private and travel through the shared slots, as any
// buffer the program did not share does)
// Output (rank 0): allreduce_alone buckets=... bytes=... median_ms=...
//                  min_ms=... cpu_ms=...
//
//===----------------------------------------------------------------------===//

#include "runtime/Comm/Comm.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

using namespace sinter;

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s BYTES[,BYTES...] [--reps=N]\n", argv[0]);
    return 2;
  }
  std::vector<size_t> sizes;
  for (const char *p = argv[1]; *p;) {
    char *end;
    sizes.push_back(std::strtoull(p, &end, 10));
    p = *end == ',' ? end + 1 : end;
    if (end == p && *p)
      break;
  }
  int reps = 20;
  long long shmBytes = -1;
  bool copy = false;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]).rfind("--reps=", 0) == 0)
      reps = std::atoi(argv[i] + 7);
    if (std::string(argv[i]).rfind("--shm-piece-bytes=", 0) == 0)
      shmBytes = std::atoll(argv[i] + 18);
    if (std::string(argv[i]) == "--copy")
      copy = true;
  }
  absl::StatusOr<comm::DistEnv> env = comm::readDistEnv();
  if (!env.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(env.status().message()).c_str());
    return 1;
  }
  comm::CommOptions options;
  options.hostname = comm::listenHostname(*env);
  options.fingerprint = "allreduce_alone";
  if (shmBytes >= 0)
    options.sharedMemoryPieceBytes = static_cast<size_t>(shmBytes);
  auto c = comm::connect(*env, options);
  if (!c.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(c.status().message()).c_str());
    return 1;
  }
  // The buckets side by side in one page-aligned block, as in the
  // training binary's arena, shared with the other ranks as the binary
  // shares its buckets (unless --copy): the same all-reduce it runs.
  size_t total = 0, block = 0;
  for (size_t bytes : sizes) {
    total += bytes;
    block += (bytes + 63) / 64 * 64;
  }
  const size_t page = 4096;
  block = std::max(page, (block + page - 1) / page * page);
  void *base = ::mmap(nullptr, block, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    std::fprintf(stderr, "error: cannot allocate %zu bytes\n", block);
    return 1;
  }
  std::vector<std::pair<float *, size_t>> buffers;
  size_t at = 0;
  for (size_t bytes : sizes) {
    auto *p = reinterpret_cast<float *>(static_cast<char *>(base) + at);
    std::fill(p, p + bytes / sizeof(float), 1.0f);
    buffers.emplace_back(p, bytes / sizeof(float));
    at += (bytes + 63) / 64 * 64;
  }
  if (!copy)
    if (absl::Status s = (*c)->shareMemory(base, block, "sharing the buckets");
        !s.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  std::vector<double> wall, cpu;
  uint32_t tag = 1;
  for (int r = 0; r < reps + 2; ++r) {
    if (!(*c)->barrier(tag++, "barrier").ok())
      return 1;
    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (auto &b : buffers)
      if (absl::Status s = (*c)->allReduceSum(b.first, b.second, tag++, "bucket");
          !s.ok()) {
        std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
        return 1;
      }
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - t0)
                    .count();
    if (r >= 2) {
      wall.push_back(ms);
      cpu.push_back(1e3 * double(std::clock() - c0) / CLOCKS_PER_SEC);
    }
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  if ((*c)->rank() == 0)
    std::printf("allreduce_alone buckets=%zu bytes=%zu median_ms=%.2f "
                "min_ms=%.2f cpu_ms=%.2f transport='%s'\n",
                sizes.size(), total, wall[wall.size() / 2], wall.front(),
                cpu[cpu.size() / 2], (*c)->transport().c_str());
  return 0;
}
