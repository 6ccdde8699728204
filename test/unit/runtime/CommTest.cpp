//===- CommTest.cpp - jobs of real processes on 127.0.0.1 -----------------===//
//
// Each multi-rank test forks one child process per rank; every child calls
// connect() with its own DistEnv (a free port picked here, or a fresh store
// directory), runs the test's body and sends back one line: "ok" or what
// went wrong. The parent asserts on those lines, so a child never runs a
// gtest assertion, and a child that hangs is killed at a deadline and
// reported as such. Timeouts are a few seconds at most.
//
// Also here: the single-process communicator and CommQueue's order and
// sticky errors, in-process.
//
//===----------------------------------------------------------------------===//

#include "abi/HalfFloat.h"
#include "runtime/Comm/CommQueue.h"
#include "runtime/Comm/Communicator.h"
#include "test/unit/runtime/CommHarness.h"

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace sinter::comm {
namespace {

using namespace harness;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class CommJob : public ::testing::TestWithParam<RanksAndTransport> {};

TEST_P(CommJob, EveryCollectiveGivesTheSameResultOnEveryRank) {
  const auto [n, transport] = GetParam();
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks(allRanks(n), [&](int r) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, n, port), transportOptions(transport));
    if (!comm.ok())
      return "connect: " + statusText(comm.status());
    if ((*comm)->rank() != r || (*comm)->size() != n)
      return std::string("wrong rank or size");
    if (std::string wrong = checkTransport(**comm, transport); !wrong.empty())
      return wrong;
    // Once connected, the segment's name is gone: nothing is left in
    // /dev/shm, however the job ends.
    const std::string mine = "sinter-" + std::to_string(::getpid()) + "-";
    if (r == 0 && !shmNamesStartingWith(mine).empty())
      return "left in /dev/shm: " + shmNamesStartingWith(mine).front();
    return collectivesBody(**comm);
  });
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(outcomes[r].report, "ok") << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, CommJob,
    ::testing::Combine(::testing::Values(2, 3),
                       ::testing::Values(Transport::tcp, Transport::shm)),
    ranksAndTransportName);

//===- Shared memory ------------------------------------------------------===//

/// Rank r's contribution to SumOrderIsFixed: values of every magnitude, so
/// that the order of the additions shows in the result.
// Over shared memory every element is summed in rank order, by one rank, so
// the result is bitwise the same on every rank, equals ((x0 + x1) + x2) as
// computed here, and does not depend on how the data is split into
// all-reduces (a gradient bucketed or not).
TEST(CommSharedMemory, SumOrderIsFixed) {
  const int n = 3;
  const size_t count = 100003; // pieces and chunks that do not divide it
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks(allRanks(n), [&](int r) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, n, port), transportOptions(Transport::shm));
    if (!comm.ok())
      return "connect: " + statusText(comm.status());
    if (std::string wrong = checkTransport(**comm, Transport::shm);
        !wrong.empty())
      return wrong;
    std::vector<float> whole = noisyValues(r, count), split = whole;
    absl::Status status = sumWholeAndSplit(**comm, whole, split);
    if (!status.ok())
      return statusText(status);
    std::vector<std::vector<float>> each;
    for (int q = 0; q < n; ++q)
      each.push_back(noisyValues(q, count));
    size_t differentFromOrder = 0;
    for (size_t i = 0; i < count; ++i) {
      float expected = (each[0][i] + each[1][i]) + each[2][i];
      if (std::memcmp(&whole[i], &expected, 4) != 0)
        ++differentFromOrder;
      if (std::memcmp(&whole[i], &split[i], 4) != 0)
        return "split differs at " + std::to_string(i);
    }
    if (differentFromOrder)
      return std::to_string(differentFromOrder) +
             " elements are not summed in rank order";
    // The rank order matters for these values: another order differs.
    size_t orderShows = 0;
    for (size_t i = 0; i < count; ++i)
      orderShows += (each[0][i] + each[1][i]) + each[2][i] !=
                    (each[2][i] + each[1][i]) + each[0][i];
    return orderShows > 0 ? std::string("ok") : "the values cannot show order";
  });
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(outcomes[r].report, "ok") << "rank " << r;
}

// Ranks in different collectives get an error each, not a sum of unrelated
// buffers (Gloo would abort the process, or wait out the timeout).
TEST(CommSharedMemory, RanksInDifferentCollectivesFail) {
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks({0, 1}, [&](int r) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, 2, port), transportOptions(Transport::shm));
    if (!comm.ok())
      return "connect: " + statusText(comm.status());
    std::vector<float> data(r == 0 ? 100 : 200, 1.0f);
    absl::Status status =
        (*comm)->allReduceSum(data.data(), data.size(), 9, "bucket 4");
    return absl::StatusCodeToString(status.code()) + ": " + statusText(status);
  });
  EXPECT_THAT(outcomes[0].report,
              HasSubstr("FAILED_PRECONDITION: bucket 4 failed on rank 0: rank "
                        "1 is in another collective (tag 9, 200 elements of "
                        "f32 in private memory; rank 0: tag 9, 100 elements "
                        "of f32 in private memory)"));
  EXPECT_THAT(outcomes[1].report,
              HasSubstr("bucket 4 failed on rank 1: rank 0 is in another "
                        "collective (tag 9, 100 elements of f32"));

  const int port2 = freePort();
  outcomes = runRanks({0, 1}, [&](int r) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, 2, port2), transportOptions(Transport::shm));
    if (!comm.ok())
      return "connect: " + statusText(comm.status());
    std::vector<double> data(10, 1.0);
    absl::Status status = (*comm)->allReduceSum(data.data(), data.size(),
                                                r == 0 ? 20 : 21, "metrics");
    return statusText(status);
  });
  EXPECT_THAT(outcomes[0].report,
              HasSubstr("rank 1 is in another collective (tag 21, 10 "
                        "elements of f64 in private memory; rank 0: tag 20"));
}

// Buckets in memory the ranks share (the executor's arena pages): what was
// there stays, the all-reduces inside it read and write every rank's pages
// directly, in rank order, and memory outside it still works.
class CommSharedRegion : public ::testing::TestWithParam<int> {};

TEST_P(CommSharedRegion, BucketsAreReducedInPlace) {
  const int n = GetParam();
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks(allRanks(n), [&](int r)
                                                   -> std::string {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, n, port), transportOptions(Transport::shm));
    if (!comm.ok())
      return "connect: " + statusText(comm.status());
    unsigned char *base = mapPages(40);
    if (!base)
      return "no memory";
    for (size_t i = 0; i < 40 * 4096; ++i)
      base[i] = static_cast<unsigned char>(i * 7 + 3);
    absl::Status status = (*comm)->shareMemory(base, 40 * 4096, "sharing");
    if (!status.ok())
      return statusText(status);
    if ((*comm)->transport() != "shared memory, buckets read in place")
      return "transport: " + (*comm)->transport();
    for (size_t i = 0; i < 40 * 4096; ++i)
      if (base[i] != static_cast<unsigned char>(i * 7 + 3))
        return "contents changed at " + std::to_string(i);
    if (!shmNamesStartingWith("sinter-" + std::to_string(::getpid()) + "-")
             .empty())
      return "left in /dev/shm";
    // A float bucket across pages, as a mean; a double one after it.
    const size_t count = 30001;
    auto *f = reinterpret_cast<float *>(base + 64);
    std::vector<float> mine = noisyValues(r, count);
    std::copy(mine.begin(), mine.end(), f);
    status = (*comm)->allReduceScaledSum(f, count, 1.0 / n, 1, "bucket 0");
    auto *d = reinterpret_cast<double *>(base + 64 + 4 * 30016);
    for (int i = 0; i < 100; ++i)
      d[i] = (r + 1) * 0.25 * i;
    if (status.ok())
      status = (*comm)->allReduceSum(d, 100, 2, "bucket 1");
    // The same floats in private memory, through the slots.
    std::vector<float> copied = mine;
    if (status.ok())
      status = (*comm)->allReduceScaledSum(copied.data(), count, 1.0 / n, 3,
                                           "a private buffer");
    if (!status.ok())
      return statusText(status);
    std::vector<std::vector<float>> each;
    for (int q = 0; q < n; ++q)
      each.push_back(noisyValues(q, count));
    for (size_t i = 0; i < count; ++i) {
      float sum = each[0][i];
      for (int q = 1; q < n; ++q)
        sum += each[q][i];
      float expected = sum * static_cast<float>(1.0 / n);
      if (std::memcmp(&f[i], &expected, 4) != 0 ||
          std::memcmp(&copied[i], &expected, 4) != 0)
        return "float " + std::to_string(i) + ": " + std::to_string(f[i]) +
               " in place, " + std::to_string(copied[i]) + " copied, " +
               std::to_string(expected) + " in rank order";
    }
    for (int i = 0; i < 100; ++i)
      if (d[i] != n * (n + 1) / 2 * 0.25 * i)
        return "double " + std::to_string(i) + ": " + std::to_string(d[i]);
    // The bytes around the buckets are untouched.
    for (size_t i = 0; i < 64; ++i)
      if (base[i] != static_cast<unsigned char>(i * 7 + 3))
        return "byte " + std::to_string(i) + " changed";
    // Ranks at different places in the region are in different
    // collectives: an error, not a sum of unrelated bytes.
    status = (*comm)->allReduceSum(f + (r == 0 ? 0 : 16), 16, 4, "bucket 2");
    if (status.ok())
      return "different offsets were summed";
    if (statusText(status).find("is in another collective") ==
            std::string::npos ||
        statusText(status).find("in shared offset") == std::string::npos)
      return statusText(status);
    return "ok";
  });
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(outcomes[r].report, "ok") << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Ranks, CommSharedRegion, ::testing::Values(2, 3),
                         [](const auto &info) {
                           return std::to_string(info.param) + "Ranks";
                         });

// Over TCP, sharing memory changes nothing and costs nothing.
TEST(CommSharedRegion, TcpLeavesMemoryAlone) {
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks({0, 1}, [&](int r)
                                                   -> std::string {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, 2, port), transportOptions(Transport::tcp));
    if (!comm.ok())
      return "connect: " + statusText(comm.status());
    unsigned char *base = mapPages(2);
    auto *f = reinterpret_cast<float *>(base);
    for (int i = 0; i < 100; ++i)
      f[i] = static_cast<float>(r + i);
    absl::Status status = (*comm)->shareMemory(base, 2 * 4096, "sharing");
    if (status.ok())
      status = (*comm)->allReduceSum(f, 100, 1, "bucket");
    if (!status.ok())
      return statusText(status);
    if ((*comm)->transport().rfind("TCP", 0) != 0)
      return "transport: " + (*comm)->transport();
    for (int i = 0; i < 100; ++i)
      if (f[i] != static_cast<float>(1 + 2 * i))
        return "wrong sum";
    return "ok";
  });
  EXPECT_EQ(outcomes[0].report, "ok");
  EXPECT_EQ(outcomes[1].report, "ok");
}

// One rank that cannot (here: will not) use shared memory keeps the whole
// job on TCP, and every rank says why.
TEST(CommSharedMemory, OneRankWithoutItKeepsTheJobOnTcp) {
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks(allRanks(3), [&](int r) {
    DistEnv env = tcpEnv(r, 3, port);
    env.sharedMemory = r != 1;
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(env, transportOptions(Transport::shm));
    if (!comm.ok())
      return "connect: " + statusText(comm.status());
    std::string report = (*comm)->transport();
    std::string body = collectivesBody(**comm);
    return report + " | " + body;
  });
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(outcomes[r].report,
              "TCP (no shared memory: rank 1: disabled "
              "(SINTER_SHM_DISABLE=1)) | ok")
        << "rank " << r;
}

TEST(CommSharedMemory, StalledPeerTimesOut) {
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks({0, 1}, [&](int r) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, 2, port), transportOptions(Transport::shm, 1s));
    if (!comm.ok())
      return "connect: " + statusText(comm.status());
    if (r == 1)
      std::this_thread::sleep_for(2500ms); // longer than the timeout
    std::vector<float> data(1000, 1.0f);
    auto start = Clock::now();
    absl::Status status = (*comm)->allReduceSum(
        data.data(), data.size(), 1, "all-reduce of bucket 0 at step 3");
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    return absl::StatusCodeToString(status.code()) + ": " + statusText(status) +
           " | took " + std::to_string(seconds);
  });
  const std::string &report = outcomes[0].report;
  EXPECT_THAT(report, HasSubstr("DEADLINE_EXCEEDED: all-reduce of bucket 0 at "
                                "step 3 failed on rank 0: timed out after 1 s "
                                "waiting for peer rank 1"));
  EXPECT_GE(tookSeconds(report, "| took "), 0.9) << report;
  EXPECT_LT(tookSeconds(report, "| took "), 2.0) << report;
  // The late rank finds rank 0 gone, at once.
  EXPECT_THAT(outcomes[1].report,
              HasSubstr("UNAVAILABLE: all-reduce of bucket 0 at step 3 failed "
                        "on rank 1: peer rank 0 died"));
  EXPECT_LT(tookSeconds(outcomes[1].report, "| took "), 0.5)
      << outcomes[1].report;
}

TEST(CommFileStore, TwoRanksRendezvousThroughADirectory) {
  const std::string dir = freshDir("sinter-comm-store");
  auto body = [&](int r) {
    DistEnv env = tcpEnv(r, 2, 0);
    env.masterAddr = "";
    env.storeDir = dir;
    env.runId = "run-a";
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(env, shortOptions());
    if (!comm.ok())
      return "connect: " + statusText(comm.status());
    return collectivesBody(**comm);
  };
  std::vector<RankOutcome> outcomes = runRanks({0, 1}, body);
  EXPECT_EQ(outcomes[0].report, "ok");
  EXPECT_EQ(outcomes[1].report, "ok");

  // The same run id again in the same directory: Gloo's FileStore refuses
  // keys that exist; the message says what to do.
  outcomes = runRanks({0, 1}, body);
  for (const RankOutcome &outcome : outcomes) {
    EXPECT_THAT(outcome.report, HasSubstr("already holds run 'run-a'"));
    EXPECT_THAT(outcome.report, HasSubstr("SINTER_RUN_ID"));
  }
  std::filesystem::remove_all(dir);
}

TEST(CommFileStore, MissingRankIsNamed) {
  const std::string dir = freshDir("sinter-comm-store");
  auto start = Clock::now();
  std::vector<RankOutcome> outcomes = runRanks({0}, [&](int r) {
    DistEnv env = tcpEnv(r, 2, 0);
    env.masterAddr = "";
    env.storeDir = dir;
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(env, shortOptions(1s));
    return comm.ok() ? std::string("connected") : statusText(comm.status());
  });
  EXPECT_THAT(outcomes[0].report,
              HasSubstr("rendezvous timed out after 1 s: rank 1 never joined"));
  EXPECT_LT(Clock::now() - start, 5s);
  std::filesystem::remove_all(dir);
}

//===- Rendezvous checks --------------------------------------------------===//

TEST(CommRendezvous, FingerprintMismatchIsAnErrorOnEveryRank) {
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks(allRanks(3), [&](int r) {
    CommOptions options = shortOptions();
    if (r == 2)
      options.fingerprint = "binary 2, program 1";
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, 3, port), options);
    if (comm.ok())
      return std::string("connected");
    return absl::StatusCodeToString(comm.status().code()) + ": " +
           statusText(comm.status());
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_THAT(outcomes[r].report,
                HasSubstr("FAILED_PRECONDITION: fingerprint of rank 2 "
                          "differs from rank 0's"))
        << "rank " << r;
    EXPECT_THAT(outcomes[r].report, HasSubstr("'binary 2, program 1'"));
  }
}

TEST(CommRendezvous, WorldSizeMismatchIsAnError) {
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks({0, 1}, [&](int r) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, r == 0 ? 2 : 3, port), shortOptions());
    return comm.ok() ? std::string("connected") : statusText(comm.status());
  });
  EXPECT_THAT(outcomes[0].report,
              HasSubstr("world size mismatch: rank 1 claims world size 3, "
                        "rank 0 claims 2"));
  EXPECT_THAT(outcomes[1].report,
              HasSubstr("world size mismatch: rank 0 claims world size 2, "
                        "rank 1 claims 3"));
}

TEST(CommRendezvous, RankThatNeverStartsIsNamed) {
  const int port = freePort();
  auto start = Clock::now();
  std::vector<RankOutcome> outcomes = runRanks({0, 1}, [&](int r) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, 3, port), shortOptions(1s));
    return comm.ok() ? std::string("connected") : statusText(comm.status());
  });
  auto took = Clock::now() - start;
  for (int r = 0; r < 2; ++r)
    EXPECT_THAT(outcomes[r].report,
                HasSubstr("rendezvous timed out after 1 s: rank 2 never "
                          "joined"))
        << "rank " << r;
  EXPECT_LT(took, 5s);
}

TEST(CommRendezvous, MissingRanksAreListed) {
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks({0}, [&](int r) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, 4, port), shortOptions(500ms));
    return comm.ok() ? std::string("connected") : statusText(comm.status());
  });
  EXPECT_THAT(outcomes[0].report,
              HasSubstr("timed out after 0.5 s: ranks 1, 2, 3 never joined"));
}

// A place taken over another launcher's (DistEnv::precedence) is said in
// the timeout: the likely reason the missing ranks were never started.
TEST(CommRendezvous, TimeoutNamesThePlaceItTook) {
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks({0}, [&](int r) {
    DistEnv env = tcpEnv(r, 3, port);
    env.precedence = "this rank is torchrun's RANK=0 of WORLD_SIZE=3, "
                     "taken over Open MPI's OMPI_COMM_WORLD_SIZE=1";
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(env, shortOptions(500ms));
    return comm.ok() ? std::string("connected") : statusText(comm.status());
  });
  EXPECT_THAT(outcomes[0].report,
              HasSubstr("ranks 1, 2 never joined (the TCP store at "));
  // Waiting for a store that rank 0 never serves, the notes say it too.
  std::vector<RankOutcome> noStore = runRanks({1}, [&](int r) {
    DistEnv env = tcpEnv(r, 2, freePort());
    env.precedence = "this rank is torchrun's RANK=1 of WORLD_SIZE=2, taken "
                     "over Open MPI's OMPI_COMM_WORLD_RANK=0";
    CommOptions options = shortOptions(1s);
    std::string told;
    options.notice.tell = [&](const std::string &line) { told = line; };
    options.notice.after = 200ms;
    absl::StatusOr<std::unique_ptr<Communicator>> comm = connect(env, options);
    return told;
  });
  EXPECT_THAT(noStore[0].report,
              HasSubstr("(rank 0 serves it): Connection refused; this rank is "
                        "torchrun's RANK=1 of WORLD_SIZE=2, taken over Open "
                        "MPI's OMPI_COMM_WORLD_RANK=0; gives up at 1 s"));
  EXPECT_THAT(outcomes[0].report,
              HasSubstr("'); this rank is torchrun's RANK=0 of "
                        "WORLD_SIZE=3, taken over Open MPI's "
                        "OMPI_COMM_WORLD_SIZE=1"));
}

// Two processes that both think they are rank 0 (torchrun's variables left
// in the shell under mpirun): the one that cannot listen on the port finds
// the other's join key there and says so, instead of asking for a free
// port; the other waits for the rank 1 nobody started.
TEST(CommRendezvous, TwoRankZerosAreNamed) {
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks({0, 1}, [&](int) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(0, 2, port), shortOptions(3s));
    return comm.ok() ? std::string("connected") : statusText(comm.status());
  });
  int named = 0;
  for (const RankOutcome &outcome : outcomes) {
    if (absl::StrContains(outcome.report,
                          "rank 0 was claimed by two processes: ")) {
      ++named;
      EXPECT_THAT(
          outcome.report,
          ::testing::ContainsRegex(
              "pid [0-9]+ serves the rendezvous store on port " +
              std::to_string(port) +
              " as rank 0 of run '.*', and "
              "this one, .* pid [0-9]+, cannot \\(if that is another job, "
              "give each its own MASTER_PORT\\)"));
    } else {
      EXPECT_THAT(outcome.report, HasSubstr("rank 1 never joined"));
    }
  }
  EXPECT_EQ(named, 1) << outcomes[0].report << "\n" << outcomes[1].report;
}

TEST(CommRendezvous, RankZeroThatNeverStartsIsNamed) {
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks({1}, [&](int r) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, 2, port), shortOptions(1s));
    return comm.ok() ? std::string("connected") : statusText(comm.status());
  });
  EXPECT_THAT(outcomes[0].report,
              HasSubstr("rendezvous timed out after 1 s: rank 0 never joined"));
}

/// Connects as rank r of `world` with notices due after 200 ms and every
/// 300 ms; reports "N notices: line | line ... => outcome".
std::string connectTelling(int r, int world, int port,
                           std::chrono::milliseconds timeout,
                           std::chrono::milliseconds after = 200ms) {
  CommOptions options = shortOptions(timeout);
  std::vector<std::string> told;
  options.notice.tell = [&](const std::string &line) { told.push_back(line); };
  options.notice.after = after;
  options.notice.every = 300ms;
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      connect(tcpEnv(r, world, port), options);
  std::string report = std::to_string(told.size()) + " notices:";
  for (const std::string &line : told)
    report += " " + line + " |";
  return report + " => " +
         (comm.ok() ? std::string("connected") : statusText(comm.status()));
}

// A long rendezvous says what it waits for (CommOptions::notice), instead of
// sitting silent for the whole timeout: here after 200 ms and every 300 ms
// of a 1 s one, so 3 notices (fewer on a busy host). Rank 0 alone names
// the ranks that have not joined; rank 1 alone, the store it cannot reach
// and why.
TEST(CommRendezvous, LongWaitsSayWhatTheyWaitFor) {
  const int port = freePort();
  std::vector<RankOutcome> alone =
      runRanks({0}, [&](int r) { return connectTelling(r, 3, port, 1s); });
  const std::string &zero = alone[0].report;
  EXPECT_THAT(zero, ::testing::ContainsRegex("^[1-4] notices: rank 0: waited "
                                             "0\\.[0-9]+ s for ranks 1, 2 to "
                                             "join \\(the TCP store at "
                                             "127\\.0\\.0\\.1:"));
  EXPECT_THAT(zero, HasSubstr("); gives up at 1 s |"));
  EXPECT_THAT(zero, HasSubstr("=> rendezvous timed out after 1 s: ranks 1, 2 "
                              "never joined"));

  std::vector<RankOutcome> noStore = runRanks(
      {1}, [&](int r) { return connectTelling(r, 2, freePort(), 1s); });
  EXPECT_THAT(noStore[0].report,
              ::testing::ContainsRegex(
                  "^[1-4] notices: rank 1: waited 0\\.[0-9]+ s for the TCP "
                  "store at 127\\.0\\.0\\.1:[0-9]+ \\(rank 0 serves "
                  "it\\): Connection refused; gives up at 1 s \\|"));
  EXPECT_THAT(noStore[0].report, HasSubstr("rank 0 never joined"));
}

// Ranks that all come within `after` say nothing.
TEST(CommRendezvous, PromptJobsSayNothing) {
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks({0, 1}, [&](int r) {
    return connectTelling(r, 2, port, 5s, /*after=*/4s);
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(outcomes[r].report, "0 notices: => connected") << "rank " << r;
}

//===- Faults -------------------------------------------------------------===//

/// Runs all-reduces until one fails; rank `victim` SIGKILLs itself 200 ms
/// in. Survivors report the error, how long the failing call took, and what
/// a call after it says.
std::string allReduceUntilFailure(Communicator &comm, int victim) {
  if (comm.rank() == victim)
    std::thread([] {
      std::this_thread::sleep_for(200ms);
      ::kill(::getpid(), SIGKILL);
    }).detach();
  std::vector<float> data(1 << 20, 1.0f);
  for (uint32_t step = 0; step < 100000; ++step) {
    auto start = Clock::now();
    absl::Status status =
        comm.allReduceSum(data.data(), data.size(), step,
                          "all-reduce at step " + std::to_string(step));
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (status.ok())
      continue;
    auto again = Clock::now();
    absl::Status later = comm.allReduceSum(data.data(), data.size(), step + 1,
                                           "the next all-reduce");
    double laterSeconds =
        std::chrono::duration<double>(Clock::now() - again).count();
    return absl::StatusCodeToString(status.code()) + ": " + statusText(status) +
           " | took " + std::to_string(seconds) +
           " | then: " + statusText(later) + " | in " +
           std::to_string(laterSeconds) + " | caused by a peer: " +
           (causedByPeer(status) ? "yes" : "no") + ", then " +
           (causedByPeer(later) ? "yes" : "no");
  }
  return "no error";
}

class CommPeerKilled : public ::testing::TestWithParam<RanksAndTransport> {};

TEST_P(CommPeerKilled, OthersFailWithinTheTimeout) {
  const auto [n, transport] = GetParam();
  const int port = freePort();
  const int victim = n - 1;
  std::vector<RankOutcome> outcomes = runRanks(allRanks(n), [&](int r) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, n, port), transportOptions(transport, 3s));
    if (!comm.ok())
      return "connect: " + statusText(comm.status());
    return allReduceUntilFailure(**comm, victim);
  });
  ASSERT_TRUE(WIFSIGNALED(outcomes[victim].waitStatus));
  EXPECT_EQ(WTERMSIG(outcomes[victim].waitStatus), SIGKILL);
  for (int r = 0; r < n; ++r) {
    if (r == victim)
      continue;
    const std::string &report = outcomes[r].report;
    EXPECT_FALSE(outcomes[r].killedAtDeadline) << "rank " << r << " hung";
    EXPECT_TRUE(WIFEXITED(outcomes[r].waitStatus))
        << "rank " << r << " died: signal "
        << (WIFSIGNALED(outcomes[r].waitStatus)
                ? WTERMSIG(outcomes[r].waitStatus)
                : 0);
    EXPECT_THAT(report, HasSubstr("all-reduce at step "));
    EXPECT_THAT(report, HasSubstr("failed on rank " + std::to_string(r)));
    EXPECT_THAT(report, HasSubstr(transport == Transport::tcp
                                      ? "[gloo: "
                                      : "[shared memory: its lock on the "
                                        "segment is gone]"));
    // Within the 3 s timeout (a peer's death is seen in milliseconds, a
    // rank whose live neighbour gave up at worst at the timeout).
    EXPECT_LT(tookSeconds(report, "| took "), 3.5) << report;
    // The context is dead: the next call fails at once, naming both.
    EXPECT_THAT(report, HasSubstr("then: the next all-reduce not run on rank " +
                                  std::to_string(r) +
                                  ": the communicator failed earlier: "
                                  "all-reduce at step "));
    EXPECT_LT(tookSeconds(report, "| in "), 0.1) << report;
  }
  if (n == 2) {
    EXPECT_THAT(outcomes[0].report,
                HasSubstr("UNAVAILABLE: all-reduce at step"));
    EXPECT_THAT(outcomes[0].report,
                HasSubstr("peer rank 1 died or closed its connection"));
    // Shared memory sees a death at the next check of the lock.
    if (transport == Transport::shm) {
      EXPECT_LT(tookSeconds(outcomes[0].report, "| took "), 0.5);
    }
    // Marked, so the binary exits kExitPeerFailed and a launcher blames
    // rank 1; the refusal after it keeps the mark.
    EXPECT_THAT(outcomes[0].report, HasSubstr("caused by a peer: yes, then yes"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, CommPeerKilled,
    ::testing::Combine(::testing::Values(2, 3),
                       ::testing::Values(Transport::tcp, Transport::shm)),
    ranksAndTransportName);

// A collective that waits long for a late rank says so while it waits,
// after 200 ms and every 300 ms here (10 s and every minute in a training
// binary), naming the collective, the rank it waits for where that can be
// known (shared memory sees who has not arrived; Gloo does not say), and
// the timeout; it finishes normally once the rank comes. Prompt collectives,
// before and after, say nothing.
class CommLateRank : public ::testing::TestWithParam<Transport> {};

TEST_P(CommLateRank, AWaitingRankSaysWhatItWaitsFor) {
  const Transport transport = GetParam();
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks({0, 1}, [&](int r) {
    std::mutex mu;
    std::vector<std::string> told;
    CommOptions options = transportOptions(transport, 3s);
    options.notice.tell = [&](const std::string &line) {
      std::lock_guard<std::mutex> lock(mu);
      told.push_back(line);
    };
    options.notice.after = 200ms;
    options.notice.every = 300ms;
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, 2, port), options);
    if (!comm.ok())
      return "connect: " + statusText(comm.status());
    std::vector<float> data(1000, 1.0f);
    std::string outcome;
    for (uint32_t step = 3; step <= 5; ++step) {
      if (r == 1 && step == 4)
        std::this_thread::sleep_for(1500ms);
      absl::Status status = (*comm)->allReduceSum(
          data.data(), data.size(), step,
          "the all-reduce at step " + std::to_string(step));
      outcome += " " + (status.ok() ? std::string("ok") : statusText(status));
    }
    comm->reset(); // stops the watcher before `told` is read
    std::string report = std::to_string(told.size()) + " notices:";
    for (const std::string &line : told)
      report += " " + line + " |";
    return report + " =>" + outcome;
  });
  const std::string whom =
      transport == Transport::shm ? "peer rank 1" : "the other ranks";
  EXPECT_THAT(outcomes[0].report,
              ::testing::ContainsRegex(
                  "^[1-6] notices: rank 0: waited 0\\.[0-9]+ s in the "
                  "all-reduce at step 4 for " +
                  whom + "; gives up after 3 s without progress \\|"));
  // Every notice is about that one wait, and it ended well.
  EXPECT_THAT(outcomes[0].report, Not(HasSubstr("step 3 for")));
  EXPECT_THAT(outcomes[0].report, Not(HasSubstr("step 5 for")));
  EXPECT_THAT(outcomes[0].report, ::testing::EndsWith("=> ok ok ok"));
  EXPECT_EQ(outcomes[1].report, "0 notices: => ok ok ok");
}

INSTANTIATE_TEST_SUITE_P(Transports, CommLateRank,
                         ::testing::Values(Transport::tcp, Transport::shm),
                         [](const ::testing::TestParamInfo<Transport> &info) {
                           return std::string(info.param == Transport::tcp
                                                  ? "TCP"
                                                  : "SharedMemory");
                         });

TEST(CommFaults, StalledPeerTimesOut) {
  const int port = freePort();
  std::vector<RankOutcome> outcomes = runRanks({0, 1}, [&](int r) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        connect(tcpEnv(r, 2, port), shortOptions(1s));
    if (!comm.ok())
      return "connect: " + statusText(comm.status());
    if (r == 1)
      std::this_thread::sleep_for(2500ms); // longer than the timeout
    auto start = Clock::now();
    absl::Status status = (*comm)->barrier(1, "the barrier at step 3");
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    return absl::StatusCodeToString(status.code()) + ": " + statusText(status) +
           " | took " + std::to_string(seconds);
  });
  const std::string &report = outcomes[0].report;
  EXPECT_THAT(report,
              HasSubstr("DEADLINE_EXCEEDED: the barrier at step 3 failed on "
                        "rank 0: timed out after 1 s waiting for peer rank 1"));
  EXPECT_GE(tookSeconds(report, "| took "), 0.9) << report;
  EXPECT_LT(tookSeconds(report, "| took "), 2.0) << report;
  // The late rank does not hang either.
  EXPECT_THAT(outcomes[1].report, HasSubstr("failed on rank 1"));
  EXPECT_THAT(outcomes[1].report, Not(HasSubstr("OK")));
}

// A peer that dies while this rank waits on others is still named, whichever
// of the two opened their connection: Gloo names the far end of the socket,
// which for a connection the peer opened is no address the store holds, so
// the name comes from the pair that failed. Four ranks on TCP: the victim
// dies after a barrier, its ring neighbours stay alive outside the all-reduce,
// and the observer (the rank opposite the victim, so never its neighbour in
// the ring) times out waiting for them and then finds the death.
TEST(CommFaults, APeerThatDiedMeanwhileIsNamedAfterATimeout) {
  for (const auto &[victim, observer] : {std::pair{2, 0}, std::pair{1, 3}}) {
    const int port = freePort();
    std::vector<RankOutcome> outcomes = runRanks(allRanks(4), [&](int r) {
      absl::StatusOr<std::unique_ptr<Communicator>> comm =
          connect(tcpEnv(r, 4, port), transportOptions(Transport::tcp, 1s));
      if (!comm.ok())
        return "connect: " + statusText(comm.status());
      if (absl::Status status = (*comm)->barrier(1, "the barrier");
          !status.ok())
        return "barrier: " + statusText(status);
      if (r == victim)
        ::kill(::getpid(), SIGKILL);
      if (r != observer) { // outlive the observer's timeout, then leave
        std::this_thread::sleep_for(3s);
        return std::string("waited");
      }
      std::this_thread::sleep_for(300ms); // the victim is gone by now
      std::vector<float> data(1024, 1.0f);
      absl::Status status = (*comm)->allReduceSum(data.data(), data.size(), 2,
                                                  "the all-reduce at step 5");
      return absl::StatusCodeToString(status.code()) + ": " +
             statusText(status) +
             " | caused by a peer: " + (causedByPeer(status) ? "yes" : "no");
    });
    ASSERT_TRUE(WIFSIGNALED(outcomes[victim].waitStatus));
    EXPECT_THAT(outcomes[observer].report,
                HasSubstr("UNAVAILABLE: the all-reduce at step 5 failed on "
                          "rank " +
                          std::to_string(observer) + ": peer rank " +
                          std::to_string(victim) +
                          " died or closed its connection [gloo: "))
        << "victim " << victim;
    EXPECT_THAT(outcomes[observer].report, HasSubstr("caused by a peer: yes"));
  }
}

//===- One process, and the queue -----------------------------------------===//

std::unique_ptr<Communicator> solo() {
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      connect(DistEnv(), shortOptions());
  EXPECT_TRUE(comm.ok()) << comm.status();
  return comm.ok() ? std::move(*comm) : nullptr;
}

TEST(CommSolo, CollectivesAreTheIdentity) {
  std::unique_ptr<Communicator> comm = solo();
  ASSERT_TRUE(comm);
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  float f[2] = {1.5f, 2.5f};
  EXPECT_TRUE(comm->allReduceSum(f, 2, 0, "sum").ok());
  EXPECT_EQ(f[1], 2.5f);
  EXPECT_TRUE(comm->allReduceScaledSum(f, 2, 0.5, 0, "mean").ok());
  EXPECT_EQ(f[1], 1.25f);
  EXPECT_EQ(comm->transport(), "none");
  const char in[3] = {'x', 'y', 'z'};
  char out[3] = {};
  EXPECT_TRUE(comm->allGather(in, 3, out, 0, "gather").ok());
  EXPECT_EQ(std::string(out, 3), "xyz");
  EXPECT_TRUE(comm->broadcast(out, 3, 0, 0, "broadcast").ok());
  absl::Status bad = comm->broadcast(out, 3, 1, 0, "broadcast from rank 1");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("broadcast from rank 1"));
  EXPECT_TRUE(comm->barrier(0, "barrier").ok());
}

TEST(CommQueue, RunsInOrderOnItsThread) {
  std::unique_ptr<Communicator> comm = solo();
  ASSERT_TRUE(comm);
  CommQueue queue(*comm);
  std::vector<int> order;
  std::atomic<bool> elsewhere{true};
  const auto caller = std::this_thread::get_id();
  std::vector<CommQueue::Ticket> tickets;
  for (int i = 0; i < 20; ++i)
    tickets.push_back(queue.enqueue([&, i] {
      if (i % 5 == 0)
        std::this_thread::sleep_for(2ms); // let later ones pile up
      if (std::this_thread::get_id() == caller)
        elsewhere = false;
      order.push_back(i);
      return absl::OkStatus();
    }));
  EXPECT_EQ(tickets.front(), 1u);
  // Waiting for the last means all before it have run.
  EXPECT_TRUE(queue.wait(tickets.back()).ok());
  ASSERT_EQ(order.size(), 20u);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(order[i], i);
  EXPECT_TRUE(elsewhere);
  EXPECT_TRUE(queue.wait(tickets[3]).ok());
  EXPECT_EQ(queue.wait(999).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(queue.wait(0).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CommQueue, FirstErrorIsStickyAndStopsTheQueue) {
  std::unique_ptr<Communicator> comm = solo();
  ASSERT_TRUE(comm);
  CommQueue queue(*comm);
  std::vector<int> ran;
  auto record = [&](int i) {
    return [&ran, i] {
      ran.push_back(i);
      return absl::OkStatus();
    };
  };
  CommQueue::Ticket first = queue.enqueue(record(1));
  CommQueue::Ticket failing = queue.enqueue([&] {
    ran.push_back(2);
    return absl::UnavailableError("all-reduce of bucket 0 failed on rank 0");
  });
  CommQueue::Ticket after = queue.enqueue(record(3));
  CommQueue::Ticket later = queue.enqueue(record(4));

  EXPECT_TRUE(queue.wait(first).ok());
  absl::Status error = queue.wait(failing);
  EXPECT_EQ(error.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(queue.wait(after), error);
  EXPECT_EQ(queue.wait(later), error);
  // Enqueued after the failure: returns the same error at once, never runs.
  auto start = Clock::now();
  CommQueue::Ticket afterFailure = queue.enqueue(record(5));
  EXPECT_EQ(queue.wait(afterFailure), error);
  EXPECT_LT(Clock::now() - start, 100ms);
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
}

TEST(CommQueue, DestructorDrains) {
  std::unique_ptr<Communicator> comm = solo();
  ASSERT_TRUE(comm);
  std::atomic<int> ran{0};
  {
    CommQueue queue(*comm);
    for (int i = 0; i < 5; ++i)
      queue.enqueue([&] {
        std::this_thread::sleep_for(5ms);
        ++ran;
        return absl::OkStatus();
      });
  }
  EXPECT_EQ(ran, 5);
}

} // namespace
} // namespace sinter::comm
