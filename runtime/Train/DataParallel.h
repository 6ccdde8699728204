//===- DataParallel.h - one training step on every rank of a job ----------===//
//
// The trainer's side of data parallelism (docs/Distributed.md). Every rank
// runs the same binary at the compiled per-rank batch B on its own rows of
// the global batch of W·B; the step program's collectives (one all-reduce
// per gradient bucket, compiled in, placed to overlap the backward pass)
// make every rank step with the same gradient. This class
//
//   - joins the job (runtime/Comm: the launcher's environment, a rendezvous
//     that compares the ranks' program fingerprints and world sizes, Gloo);
//   - runs the program's collectives (exec::CollectiveRunner) on one
//     communication thread in program order, so that a bucket's all-reduce
//     overlaps the kernels the program places between its start and done;
//     a `mean` is the sum divided by W, here, after the sum;
//   - gives the trainer the checks that turn silent divergence into errors
//     naming ranks: parameters equal on every rank (after rank 0's are
//     broadcast at the start, and every --check-every steps), ranks that
//     read the same data (checksums of the first batch), and metrics
//     averaged over ranks.
//
// With one rank (no launcher variables) nothing connects, the program's
// collectives are skipped by the executor and every check returns at once:
// world size 1 costs nothing.
//
// Every collective goes through the communication thread, in one order
// that is the same on every rank (the program's, then the trainer's calls,
// which every rank makes at the same points), so the tags are a running
// count. An error names the collective, the step, the bucket's first
// parameter and the peer, and the communicator stays failed: the trainer
// exits non-zero, the launcher stops the others.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_TRAIN_DATAPARALLEL_H
#define SINTER_RUNTIME_TRAIN_DATAPARALLEL_H

#include "runtime/Comm/Comm.h"
#include "runtime/Exec/Executor.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sinter::train {

struct DataParallelOptions {
  /// How long one rank waits for the others in any collective or at the
  /// rendezvous (--collective-timeout).
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  /// Identifies the binary and its program; must be equal on every rank.
  std::string fingerprint;
  /// Debugging and benchmarks only (--debug-skip-allreduce[=even]): the
  /// gradient all-reduces do nothing, on every step or on the even ones
  /// (1-based), so every rank steps with its own gradient. The numbers are
  /// wrong; the time is the step's compute floor, and with `evenSteps` one
  /// run times the steps with and without communication side by side.
  enum class Skip { never, always, evenSteps };
  Skip skipAllReduce = Skip::never;
  /// Where the rendezvous says that it is still waiting (CommOptions::notice).
  std::function<void(const std::string &)> notice;
};

class DataParallel : public exec::CollectiveRunner {
public:
  /// Reads the environment and joins the job (one rank: nothing to join).
  static absl::StatusOr<std::unique_ptr<DataParallel>>
  create(const comm::DistEnv &env, const DataParallelOptions &options);
  ~DataParallel() override;

  int rank() const { return env.rank; }
  int worldSize() const { return env.worldSize; }
  const comm::DistEnv &environment() const { return env; }
  /// --debug-skip-allreduce, on any step.
  bool skipsAllReduces() const {
    return options.skipAllReduce != DataParallelOptions::Skip::never;
  }
  /// How the gradients travel (Communicator::transport()).
  std::string transport() const { return comm ? comm->transport() : "none"; }
  bool distributed() const { return env.worldSize > 1; }

  /// The step in flight, for messages.
  void setStep(int64_t step) { currentStep = step; }

  // exec::CollectiveRunner: the program's bucket all-reduces.
  absl::Status start(int64_t index, const exec::Collective &collective,
                     void *data, int64_t count, abi::DType type) override;
  absl::Status done(int64_t index, const exec::Collective &collective) override;
  // For a device executor's own communicator (NCCL).
  Job job() const override {
    return {env.rank, env.worldSize, options.timeout};
  }
  absl::Status shareBytes(void *data, size_t bytes,
                          std::string_view what) override {
    return broadcast(data, bytes, what);
  }
  std::string describe(const exec::Collective &collective,
                       int64_t bytes) const override;
  absl::Status shareHostMemory(void *base, size_t bytes) override;

  /// Every rank's `values` replaced by their sum over the ranks.
  absl::Status sumOverRanks(std::vector<double> &values, std::string_view what);
  /// Every rank's `values` replaced by their mean over the ranks (metrics:
  /// loss, accuracy, ...).
  absl::Status averageOverRanks(std::vector<double> &values,
                                std::string_view what);
  /// Rank 0's bytes in `data` on every rank.
  absl::Status broadcast(void *data, size_t bytes, std::string_view what);
  absl::Status barrier(std::string_view what);

  /// The parameters (and optimizer state) of rank 0, in every rank's
  /// executor: the start of every data-parallel run.
  absl::Status broadcastState(exec::Executor &ex);
  /// Compares a checksum of every parameter and optimizer-state tensor
  /// across ranks; a difference is an error naming the first tensor that
  /// differs and the ranks that disagree with rank 0. `when` says where
  /// ("at step 0", "after step 200").
  absl::Status checkStateEqual(const exec::Executor &ex,
                               std::string_view when);
  /// Checksums of this rank's first batch against every other rank's:
  /// identical batches on two ranks is an error (every rank training on
  /// the same data).
  absl::Status checkDistinctData(
      const std::vector<std::vector<unsigned char>> &batch);

private:
  DataParallel(comm::DistEnv env, const DataParallelOptions &options);
  /// Runs `op` on the communication thread and waits for it.
  absl::Status runNow(std::function<absl::Status(comm::Communicator &)> op);
  uint32_t nextTag() { return tag++; }

  comm::DistEnv env;
  DataParallelOptions options;
  std::unique_ptr<comm::Communicator> comm;
  std::unique_ptr<comm::CommQueue> queue;
  /// The ticket of each collective in flight, by index.
  std::map<int64_t, comm::CommQueue::Ticket> inFlight;
  /// A collective's bytes as they travel (comm_dtype bf16 or f16), by
  /// index; used by the communication thread while it is in flight.
  std::map<int64_t, std::vector<uint16_t>> wireBuffers;
  uint32_t tag = 1;
  std::atomic<int64_t> currentStep{0};
};

/// A 64-bit checksum of `bytes` (FNV-1a over 8-byte words): equal bytes,
/// equal sums; one flipped bit changes it.
uint64_t checksum(const void *data, size_t bytes);

} // namespace sinter::train

#endif // SINTER_RUNTIME_TRAIN_DATAPARALLEL_H
