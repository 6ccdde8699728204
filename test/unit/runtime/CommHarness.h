//===- CommHarness.h - jobs of real processes for the Comm tests
//-----------===//
//
// Shared by CommTest.cpp and CommHostsTest.cpp: each multi-rank test forks
// one child process per rank (runRanks); every child calls connect() with
// its own DistEnv, runs the test's body and sends back one line, "ok" or
// what went wrong, so that no child runs a gtest assertion and a child that
// hangs is killed at a deadline.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_TEST_UNIT_RUNTIME_COMMHARNESS_H
#define SINTER_TEST_UNIT_RUNTIME_COMMHARNESS_H

#include "abi/HalfFloat.h"
#include "runtime/Comm/CommQueue.h"
#include "runtime/Comm/Communicator.h"

#include "gtest/gtest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

namespace sinter::comm::harness {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

//===- Harness ------------------------------------------------------------===//

/// A TCP port that was free a moment ago.
inline int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

/// The DistEnv of rank r in a job of n on 127.0.0.1:port.
inline DistEnv tcpEnv(int r, int n, int port) {
  DistEnv env;
  env.rank = r;
  env.worldSize = n;
  env.localRank = r;
  env.localWorldSize = n;
  env.masterAddr = "127.0.0.1";
  env.masterPort = port;
  env.runId = "test";
  env.source = "test";
  return env;
}

inline CommOptions shortOptions(std::chrono::milliseconds timeout = 5s) {
  CommOptions options;
  options.timeout = timeout;
  options.fingerprint = "binary 1, program 1";
  return options;
}

/// How a job's all-reduces travel: Gloo's TCP, or the shared-memory segment
/// of ranks on one host.
enum class Transport { tcp, shm };

inline std::string transportName(Transport t) {
  return t == Transport::tcp ? "TCP" : "SharedMemory";
}

/// shortOptions for a transport. The pieces are small, so that the tests'
/// larger all-reduces (300,000 floats) take many.
inline CommOptions transportOptions(Transport t,
                                    std::chrono::milliseconds timeout = 5s) {
  CommOptions options = shortOptions(timeout);
  options.sharedMemoryPieceBytes = t == Transport::shm ? 64 << 10 : 0;
  return options;
}

/// "" when comm's transport is t, else what it is.
inline std::string checkTransport(const Communicator &comm, Transport t) {
  std::string used = comm.transport();
  bool ok =
      t == Transport::shm ? used == "shared memory" : used.rfind("TCP", 0) == 0;
  return ok ? "" : "transport is '" + used + "'";
}

/// The names in /dev/shm that start with `prefix`.
inline std::vector<std::string>
shmNamesStartingWith(const std::string &prefix) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto &entry :
       std::filesystem::directory_iterator("/dev/shm", error))
    if (entry.path().filename().string().rfind(prefix, 0) == 0)
      names.push_back(entry.path().filename().string());
  return names;
}

struct RankOutcome {
  std::string report; // what the body returned; empty if it did not
  int waitStatus = 0;
  bool killedAtDeadline = false;
};

/// Runs body(rank) in one child process per entry of `ranks`; returns each
/// child's outcome, in the order of `ranks`.
inline std::vector<RankOutcome>
runRanks(const std::vector<int> &ranks,
         const std::function<std::string(int rank)> &body,
         std::chrono::milliseconds deadline = 30s) {
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  std::vector<int> fds;
  for (int rank : ranks) {
    int pipeFds[2];
    if (::pipe(pipeFds) != 0)
      std::abort();
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(pipeFds[0]);
      std::string report = body(rank);
      if (report.empty())
        report = "(empty report)";
      (void)!::write(pipeFds[1], report.data(), report.size());
      ::close(pipeFds[1]);
      ::_exit(0);
    }
    ::close(pipeFds[1]);
    pids.push_back(pid);
    fds.push_back(pipeFds[0]);
  }
  std::vector<RankOutcome> outcomes(ranks.size());
  std::vector<bool> open(ranks.size(), true);
  const auto end = Clock::now() + deadline;
  for (;;) {
    std::vector<pollfd> polled;
    std::vector<size_t> which;
    for (size_t i = 0; i < fds.size(); ++i)
      if (open[i]) {
        polled.push_back({fds[i], POLLIN, 0});
        which.push_back(i);
      }
    if (polled.empty())
      break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - Clock::now());
    if (left.count() <= 0)
      break;
    ::poll(polled.data(), polled.size(), static_cast<int>(left.count()));
    for (size_t k = 0; k < polled.size(); ++k) {
      if (!polled[k].revents)
        continue;
      size_t i = which[k];
      char buffer[4096];
      ssize_t n = ::read(fds[i], buffer, sizeof(buffer));
      if (n > 0)
        outcomes[i].report.append(buffer, n);
      else
        open[i] = false;
    }
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    if (open[i]) {
      ::kill(pids[i], SIGKILL);
      outcomes[i].killedAtDeadline = true;
    }
    ::waitpid(pids[i], &outcomes[i].waitStatus, 0);
    ::close(fds[i]);
  }
  return outcomes;
}

inline std::vector<int> allRanks(int n) {
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r)
    ranks.push_back(r);
  return ranks;
}

inline std::string statusText(const absl::Status &status) {
  return std::string(status.message());
}

/// A fresh directory under the test's temporary directory.
inline std::string freshDir(const std::string &name) {
  const char *base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base && *base ? base : "/tmp") + "/" + name + ".XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!::mkdtemp(buffer.data()))
    std::abort();
  return buffer.data();
}

/// The seconds after marker in a report ("| took 0.25"), or 1e9.
inline double tookSeconds(const std::string &report, const char *marker) {
  size_t at = report.find(marker);
  return at == std::string::npos
             ? 1e9
             : std::atof(report.c_str() + at + std::strlen(marker));
}

//===- Collectives --------------------------------------------------------===//

/// Every collective once, checked inside the child; "ok" when all agree.
inline std::string collectivesBody(Communicator &comm) {
  const int r = comm.rank(), n = comm.size();
  // float and double sums; 300,000 floats are more than one 1 MiB segment.
  std::vector<float> f(300000);
  for (size_t i = 0; i < f.size(); ++i)
    f[i] = static_cast<float>(r + 1) * static_cast<float>(i % 7);
  absl::Status status = comm.allReduceSum(f.data(), f.size(), 1, "float sum");
  if (!status.ok())
    return statusText(status);
  const float ranksSum = n * (n + 1) / 2.0f;
  for (size_t i = 0; i < f.size(); ++i)
    if (f[i] != ranksSum * static_cast<float>(i % 7))
      return "float sum wrong at " + std::to_string(i) + ": " +
             std::to_string(f[i]);
  // A mean: the sum, then one multiplication by the scale as a float.
  std::vector<float> m(5000);
  for (size_t i = 0; i < m.size(); ++i)
    m[i] = static_cast<float>((r + 1) * (i % 13));
  status = comm.allReduceScaledSum(m.data(), m.size(), 1.0 / n, 8, "mean");
  if (!status.ok())
    return statusText(status);
  for (size_t i = 0; i < m.size(); ++i)
    if (m[i] !=
        ranksSum * static_cast<float>(i % 13) * static_cast<float>(1.0 / n))
      return "mean wrong at " + std::to_string(i) + ": " + std::to_string(m[i]);
  std::vector<double> dm = {3.0 * (r + 1), 1.0};
  status = comm.allReduceScaledSum(dm.data(), dm.size(), 0.25, 9, "scaled");
  if (!status.ok())
    return statusText(status);
  if (dm[0] != 3.0 * ranksSum * 0.25 || dm[1] != n * 0.25)
    return "scaled double sum wrong: " + std::to_string(dm[0]);
  std::vector<double> d = {0.5 * r, 1e300 / 8 * (r + 1), -1.0};
  status = comm.allReduceSum(d.data(), d.size(), 2, "double sum");
  if (!status.ok())
    return statusText(status);
  // d[1] is summed in whatever order the transport sums (over several
  // hosts, by host first), so only to rounding; it checks that doubles stay
  // doubles (1e300 is no float).
  if (d[0] != 0.5 * (n * (n - 1) / 2) ||
      std::abs(d[1] / (1e300 / 8 * ranksSum) - 1.0) > 1e-14 || d[2] != -1.0 * n)
    return "double sum wrong: " + std::to_string(d[0]);

  // 16-bit floats (gradients sent at half the bytes): exact sums stay
  // exact, and each partial sum is rounded to the type (two ranks: 256 + 1
  // is 257, a tie between bf16's 256 and 258, so 256; f16's 2048 + 1, 2048).
  for (auto [type, widen, narrow, big] :
       {std::tuple{Communicator::Half::bf16, &half::bf16BitsToFloat,
                   &half::floatToBf16Bits, 256.0f},
        std::tuple{Communicator::Half::f16, &half::f16BitsToFloat,
                   &half::floatToF16Bits, 2048.0f}}) {
    std::vector<uint16_t> h = {narrow(static_cast<float>(r + 1)),
                               narrow(r == 0 ? big : 1.0f), narrow(-0.5f)};
    status = comm.allReduceSum(h.data(), h.size(), type,
                               type == Communicator::Half::bf16 ? 40 : 41,
                               "half sum");
    if (!status.ok())
      return statusText(status);
    float rounded = n == 2 ? big : widen(h[1]);
    if (widen(h[0]) != ranksSum || widen(h[1]) != rounded ||
        widen(h[2]) != -0.5f * n)
      return "half sum wrong: " + std::to_string(widen(h[0])) + " " +
             std::to_string(widen(h[1])) + " " + std::to_string(widen(h[2]));
  }

  // Broadcast from the last rank.
  std::vector<uint8_t> b(1000, static_cast<uint8_t>(r));
  if (r == n - 1)
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = static_cast<uint8_t>(i * 3);
  status = comm.broadcast(b.data(), b.size(), n - 1, 3, "broadcast");
  if (!status.ok())
    return statusText(status);
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i] != static_cast<uint8_t>(i * 3))
      return "broadcast wrong at " + std::to_string(i);

  // All-gather of 7 bytes each.
  char in[7];
  for (int i = 0; i < 7; ++i)
    in[i] = static_cast<char>('a' + r * 7 + i);
  std::vector<char> out(7 * n, '?');
  status = comm.allGather(in, 7, out.data(), 4, "all-gather");
  if (!status.ok())
    return statusText(status);
  for (int i = 0; i < 7 * n; ++i)
    if (out[i] != static_cast<char>('a' + i))
      return "all-gather wrong: " + std::string(out.begin(), out.end());

  status = comm.barrier(5, "barrier");
  if (!status.ok())
    return statusText(status);

  // A bad root is refused before Gloo sees it, without killing the context.
  status = comm.broadcast(b.data(), 1, n, 6, "broadcast from nowhere");
  if (status.code() != absl::StatusCode::kInvalidArgument)
    return "bad root: " + status.ToString();
  status = comm.barrier(7, "barrier after a bad root");
  if (!status.ok())
    return statusText(status);

  // The same collectives through a CommQueue: in order, on its thread.
  CommQueue queue(comm);
  std::vector<std::vector<float>> buckets(4, std::vector<float>(1000, 1.0f));
  std::vector<CommQueue::Ticket> tickets;
  for (uint32_t k = 0; k < buckets.size(); ++k)
    tickets.push_back(queue.enqueue([&, k] {
      return comm.allReduceSum(buckets[k].data(), buckets[k].size(), 10 + k,
                               "queued all-reduce");
    }));
  for (CommQueue::Ticket t : tickets) {
    status = queue.wait(t);
    if (!status.ok())
      return statusText(status);
  }
  for (const std::vector<float> &bucket : buckets)
    if (bucket.front() != n || bucket.back() != n)
      return "queued all-reduce wrong";
  return "ok";
}

using RanksAndTransport = std::tuple<int, Transport>;

inline std::string
ranksAndTransportName(const ::testing::TestParamInfo<RanksAndTransport> &info) {
  return std::to_string(std::get<0>(info.param)) + "Ranks" +
         transportName(std::get<1>(info.param));
}

/// All-reduces `whole` in one call and `split` (the same values) in two,
/// cut at element 777, with tags 1, 2 and 3: a bucketing must not change
/// the sums.
inline absl::Status sumWholeAndSplit(Communicator &comm,
                                     std::vector<float> &whole,
                                     std::vector<float> &split) {
  const size_t count = whole.size(), cut = 777;
  absl::Status status = comm.allReduceSum(whole.data(), count, 1, "whole");
  if (status.ok())
    status = comm.allReduceSum(split.data(), cut, 2, "first part");
  if (status.ok())
    status =
        comm.allReduceSum(split.data() + cut, count - cut, 3, "second part");
  return status;
}

inline std::vector<float> noisyValues(int r, size_t n) {
  std::vector<float> v(n);
  uint32_t state = 12345u + 977u * static_cast<uint32_t>(r);
  for (float &x : v) {
    state = state * 1664525u + 1013904223u;
    x = std::ldexp(static_cast<float>(state >> 8) / 16777216.0f - 0.5f,
                   static_cast<int>(state % 40) - 20);
  }
  return v;
}

/// A page-aligned block of `pages` pages, private to this process.
inline unsigned char *mapPages(size_t pages) {
  void *p = ::mmap(nullptr, pages * 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<unsigned char *>(p);
}

} // namespace sinter::comm::harness

#endif // SINTER_TEST_UNIT_RUNTIME_COMMHARNESS_H
