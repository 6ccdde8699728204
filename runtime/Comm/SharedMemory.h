//===- SharedMemory.h - all-reduce through a host's shared memory ---------===//
//
// When every rank of a job runs on one host, an all-reduce over TCP
// loopback copies each byte through the kernel twice each way, and on a
// machine whose cores all compute that CPU comes straight out of the
// training step (about 0.55 ms per MB per rank, docs/Distributed.md). Here
// the ranks instead share one segment of memory (POSIX shm):
//
//   per piece of at most pieceBytes:
//     1. each rank copies its piece into its own slot;      barrier
//     2. rank r sums chunk r of every slot, in rank order, into the result
//        area and its own data;                              barrier
//     3. each rank copies the other chunks of the result into its data.
//
// About a quarter of TCP's CPU per byte, and every element is summed in the
// same order (rank 0 + rank 1 + ...) whatever the bucketing, so the result
// is the same on every rank and for any split into buckets.
//
// Memory the ranks share (regions: the executor's gradient buckets, backed
// by segments of their own that every rank maps) needs no slots: rank r sums
// chunk r straight from every rank's region and writes it into all of them,
// between two barriers. That moves 2 bytes per byte reduced instead of 5.
//
// When the job's ranks are on several hosts, one segment serves each host's
// ranks, and a hook (joinHosts' `across`) joins the hosts between the two
// halves of every all-reduce: after rank r has summed chunk r of its host's
// ranks, it sums that chunk with the same chunk of every other host
// (Communicator.cpp, over TCP), and only then hands it back to its host's
// ranks: NCCL's and Open MPI's hierarchical all-reduce, where each byte
// crosses the network once per host instead of once per rank.
//
// Gloo (Debian's) has no shared-memory transport and Open MPI's needs
// mpirun; this is the one part of the collectives written by hand, and only
// the all-reduce: broadcast, all-gather and barrier are rare and stay on
// Gloo. Communicator.cpp decides at connect() whether every rank could map
// the segment; if one cannot, the whole job stays on TCP.
//
// Waiting never hangs: a barrier sleeps on a futex in the segment in slices
// of a few milliseconds, and between slices checks that the ranks it waits
// for are alive: each rank holds an open-file-description lock on one byte
// of the segment's file, which the kernel drops when the process dies,
// however it dies. A dead peer is an error within milliseconds, a stalled
// one at the timeout, and a peer in another collective (tag, size or
// element type differ) is an error on every rank instead of a wrong sum.
//
// Internal to runtime/Comm.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_COMM_SHAREDMEMORY_H
#define SINTER_RUNTIME_COMM_SHAREDMEMORY_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sinter::comm {

class SharedMemoryReducer {
public:
  enum class Kind : uint32_t { f32 = 1, f64 = 2, bf16 = 3, f16 = 4 };

  /// Rank 0: creates a segment for `size` ranks of (size + 1) pieces of
  /// pieceBytes (rounded down to pages, at least one), reserving its memory
  /// (a full /dev/shm is an error here, not a SIGBUS later). Its name (for
  /// open()) is name().
  static absl::StatusOr<std::unique_ptr<SharedMemoryReducer>>
  create(int size, size_t pieceBytes, std::chrono::milliseconds timeout);
  /// The other ranks: opens rank 0's segment and checks that it is the one
  /// rank 0 made (`nonce`) for a job of `size`.
  static absl::StatusOr<std::unique_ptr<SharedMemoryReducer>>
  open(const std::string &name, uint64_t nonce, int rank, int size,
       std::chrono::milliseconds timeout);
  ~SharedMemoryReducer();

  const std::string &name() const { return name_; }
  uint64_t nonce() const;
  size_t pieceBytes() const { return pieceBytes_; }
  /// Removes the segment's name (rank 0, once every rank has opened it); the
  /// memory lives on until the last rank unmaps it.
  void unlinkName();

  /// Where the ranks of this segment are one host of a job on several: their
  /// ranks in the job, by rank in the segment, for messages (default: the
  /// same numbers), and `across`, which sums `count` elements of `kind` at
  /// `chunk` with the same chunk of every other host, in place, unscaled, in
  /// host order (16-bit kinds rounding every partial sum). Set before the
  /// first all-reduce.
  using Across =
      std::function<absl::Status(void *chunk, size_t count, Kind kind,
                                 uint32_t tag, std::string_view what)>;
  void joinHosts(std::vector<int> jobRanks, Across across);

  /// data (count elements of kind) := the sum over ranks, in rank order
  /// (over several hosts: each host's sum in rank order, then those sums in
  /// host order), times `scale` (converted to the kind; f32 and f64 only)
  /// when it is not 1; 16-bit kinds round every partial sum. `tag` must
  /// match on every rank.
  /// Errors, each one line starting with `what` and naming this rank:
  /// Unavailable (marked as a peer's failure) when a peer died,
  /// DeadlineExceeded when one did not arrive within the timeout,
  /// FailedPrecondition when the ranks are in different collectives.
  absl::Status allReduceSum(void *data, size_t count, Kind kind, uint32_t tag,
                            std::string_view what, double scale = 1.0);

  /// Memory every rank can see (shareRegion): this rank's pages at `base`
  /// and, for each rank q, where this process maps rank q's (this rank's
  /// entry is `base`). An all-reduce of data inside a region, at the same
  /// offset on every rank, needs no copies: each rank sums its chunk
  /// straight from every rank's region and writes the result into all of
  /// them (a fifth of the bytes moved through the slots).
  struct Region {
    unsigned char *base = nullptr;
    size_t bytes = 0;
    std::vector<unsigned char *> ranks;
  };

  /// Step 1 of sharing [base, base + bytes) (page-aligned): backs it with a
  /// new segment of its own, its contents kept, and returns the segment's
  /// name for the other ranks. On an error the pages are as they were,
  /// except when the final remapping itself fails (Internal: the memory is
  /// then gone, and the caller must stop).
  absl::StatusOr<std::string> backRegion(void *base, size_t bytes,
                                         int index);
  /// Step 2, once every rank has backed its own: maps rank q's segment
  /// `name` (bytes long) and returns where.
  absl::StatusOr<unsigned char *> mapPeerRegion(const std::string &name,
                                                size_t bytes);
  /// Step 3, once every rank has mapped every segment (or given up): removes
  /// this rank's segment names; with `use`, all-reduces inside `region` go
  /// without copies from now on, else the peers' mappings are dropped.
  void finishRegion(Region region, bool use);

  /// The job's rank that a barrier of this rank has been waiting for past
  /// its spinning, or -1: read by another thread, to say whom a long wait
  /// waits for.
  int waitingFor() const { return waitingFor_.load(std::memory_order_relaxed); }

private:
  const Region *regionOf(const void *data, size_t bytes) const;
  absl::Status allReduceInRegion(const Region &region, size_t offset,
                                 size_t count, Kind kind, uint32_t tag,
                                 std::string_view what, double scale);
  /// Writes this rank's part of a collective into its block, arrives, and
  /// checks that every rank is in the same one.
  absl::Status enter(size_t count, Kind kind, uint32_t tag, uint64_t offset,
                     std::string_view what);

  struct Header;
  struct RankBlock;
  SharedMemoryReducer(int rank, int size, std::chrono::milliseconds timeout)
      : rank_(rank), size_(size), timeout_(timeout) {}
  absl::Status map(int fd, size_t bytes);
  absl::Status holdLiveness();
  bool alive(int rank) const;
  /// Arrives at the next barrier and waits for every rank (or an error).
  absl::Status barrier(std::string_view what);
  unsigned char *slot(int rank) const;
  unsigned char *result() const;
  /// The job's rank of rank q of this segment.
  int jobRank(int q) const { return jobRanks_.empty() ? q : jobRanks_[q]; }
  /// After the host's sum of [lo, hi) of chunk (elements of kind) is in
  /// place: the hosts' sum (acrossHosts), then the scale.
  absl::Status finishChunk(unsigned char *chunk, size_t lo, size_t hi,
                           Kind kind, uint32_t tag, std::string_view what,
                           double scale);

  const int rank_, size_;
  const std::chrono::milliseconds timeout_;
  std::string name_;
  int fd_ = -1;
  void *base_ = nullptr;
  size_t mappedBytes_ = 0, pieceBytes_ = 0;
  Header *header_ = nullptr;
  RankBlock *ranks_ = nullptr;
  uint64_t epoch_ = 0;
  std::atomic<int> waitingFor_{-1};
  bool linked_ = false;
  std::vector<Region> regions_;
  std::vector<std::string> regionNames_; // this rank's, until finishRegion
  std::vector<int> jobRanks_;
  Across across_;
};

} // namespace sinter::comm

#endif // SINTER_RUNTIME_COMM_SHAREDMEMORY_H
