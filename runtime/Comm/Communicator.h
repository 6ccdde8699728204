//===- Communicator.h - collectives between the ranks of a job ------------===//
//
// What data-parallel training needs from the network: all-reduce (sum),
// broadcast, all-gather and barrier over every rank, each blocking on the
// calling thread and each returning an absl::Status. The implementation is
// Gloo's TCP transport; no Gloo type appears here, so code that includes
// this header needs neither Gloo nor exceptions.
//
// connect() is where a job comes together:
//
//   1. Rendezvous through a store: rank 0's TcpStore at masterAddr:port, or
//      Gloo's FileStore in storeDir, every key under DistEnv::storePrefix().
//      Each rank publishes its world size and its fingerprint, and reads
//      everyone else's. This is where mismatches are
//      caught, as errors on every rank, because Gloo itself cannot survive
//      them: a collective whose sizes differ between ranks aborts the
//      process from Gloo's I/O thread, where no caller can catch it.
//   2. Gloo's connectFullMesh, then one barrier, so that no rank returns
//      (and rank 0 takes the TCP store down) before every rank is
//      connected.
//   3. Shared memory: the ranks of each host (by listening address and boot
//      id) map one segment; over several hosts, the ranks at the same place
//      on each host also connect to each other, to sum across the hosts.
//
// Gloo's failures are exceptions with a free-text reason; this file turns
// each into one line naming the operation, this rank, the peer when its
// address is in Gloo's message, and what the reason means (the peer died,
// a timeout, a stale store). A Gloo context is dead after any error, so a
// Communicator remembers its first error and refuses every later call at
// once with it.
//
// A collective must be entered by every rank with the same sizes and tag,
// in the same order; `timeout` bounds how long one rank waits for the
// others, and so also how far apart ranks may drift (a checkpoint written
// by rank 0 alone must take less). One thread at a time per communicator.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_COMM_COMMUNICATOR_H
#define SINTER_RUNTIME_COMM_COMMUNICATOR_H

#include "runtime/Comm/DistEnv.h"
#include "runtime/Support/Status.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace sinter::comm {

/// One line at a time about a rendezvous that waits long: first after
/// `after`, then every `every`. It says what it waits for, where, and when
/// it gives up ("rank 0: waited 10 s for rank 1 to join (...); gives up at
/// 300 s"). With no `tell` the wait is silent until it ends.
struct WaitNotice {
  std::function<void(const std::string &)> tell;
  std::chrono::milliseconds after{std::chrono::seconds(10)};
  std::chrono::milliseconds every{std::chrono::seconds(60)};
};

struct CommOptions {
  /// Bounds every collective and the rendezvous.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  /// Identifies binary + program; must be equal on all ranks.
  std::string fingerprint;
  /// The address this rank listens on (see listenHostname() for the value
  /// a launcher's environment implies).
  std::string hostname = "127.0.0.1";
  /// For the ranks on one host: the all-reduces go through a shared-memory
  /// segment instead of TCP (SharedMemory.h; over several hosts of as many
  /// ranks each, within each host, and TCP between the hosts), in pieces of
  /// this many bytes: small enough that a piece's slots stay in the shared
  /// cache while the ranks read them (1 MiB: 43 MB of char-GPT gradients
  /// take 8.5-10 ms on 2 Zen 4 vCPUs, against 15-16 ms with 21 MiB pieces
  /// and ~36 ms over TCP). 0 (or DistEnv::sharedMemory false): TCP only.
  size_t sharedMemoryPieceBytes = size_t(1) << 20;
  /// What the rendezvous says while it waits long for the store or for
  /// ranks to join, and, once connected, what a collective says while it
  /// waits long for the other ranks ("rank 0: waited 10 s in all-reduce of
  /// bucket 1 (...) at step 598 for peer rank 1; gives up after 300 s
  /// without progress").
  WaitNotice notice;
};

class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Blocking, on the calling thread. `what` names the operation for
  /// messages ("all-reduce of bucket 2 (first: h.0.attn.c_proj.weight) at
  /// step 17"). Every error is one line naming `what`, this rank, the peer
  /// rank when it can be known, and Gloo's reason classified (peer died /
  /// timed out after N s / ...): Unavailable for a lost peer,
  /// DeadlineExceeded for a timeout, FailedPrecondition for a call after an
  /// earlier error, InvalidArgument for a bad root. count or bytes 0 is a
  /// no-op on every rank.
  virtual absl::Status allReduceSum(float *data, size_t count, uint32_t tag,
                                    std::string_view what) = 0;
  virtual absl::Status allReduceSum(double *data, size_t count, uint32_t tag,
                                    std::string_view what) = 0;
  /// data := (the sum over ranks) * scale, as allReduceSum followed by a
  /// multiplication by static_cast<T>(scale), bit for bit; where the sum
  /// passes through this rank's memory anyway (shared memory), the
  /// multiplication costs no pass of its own. A mean is scale 1 / size().
  virtual absl::Status allReduceScaledSum(float *data, size_t count,
                                          double scale, uint32_t tag,
                                          std::string_view what) = 0;
  virtual absl::Status allReduceScaledSum(double *data, size_t count,
                                          double scale, uint32_t tag,
                                          std::string_view what) = 0;
  /// `count` 16-bit floats (bf16 or f16 bits, `type`), summed elementwise
  /// with every partial sum rounded to the type (round to nearest even): the
  /// wire format of a gradient sent at half the bytes.
  enum class Half { bf16, f16 };
  virtual absl::Status allReduceSum(uint16_t *data, size_t count, Half type,
                                    uint32_t tag, std::string_view what) = 0;
  /// root's `data` into every rank's `data`.
  virtual absl::Status broadcast(void *data, size_t bytes, int root,
                                 uint32_t tag, std::string_view what) = 0;
  /// out receives size() * bytes: rank r's `in` at offset r * bytes.
  virtual absl::Status allGather(const void *in, size_t bytes, void *out,
                                 uint32_t tag, std::string_view what) = 0;
  virtual absl::Status barrier(uint32_t tag, std::string_view what) = 0;

  /// How the all-reduces travel: "shared memory", "TCP (no shared memory:
  /// why)", or "none" in a world of one.
  virtual std::string transport() const = 0;

  /// Collective (every rank, the same sizes, in the same order): over shared
  /// memory, backs the page-aligned [base, base + bytes) with memory every
  /// rank maps, its contents kept, so that all-reduces of data inside it (at
  /// the same offset on every rank: the executor's gradient buckets) read
  /// and write the ranks' memory directly, without copies. Elsewhere, or if
  /// any rank cannot, nothing changes (and transport() says why). An error
  /// only when the ranks cannot agree, or when the pages were lost.
  virtual absl::Status shareMemory(void *base, size_t bytes,
                                   std::string_view what) = 0;
};

/// The exit status of a rank that stopped because of another rank's
/// failure (an error that sinter::causedByPeer, runtime/Support/Status.h).
inline constexpr int kExitPeerFailed = 3;
using sinter::causedByPeer;

/// World size 1: a communicator whose collectives return at once (the data
/// is already the result). Otherwise: rendezvous through the TCP store at
/// masterAddr:masterPort (rank 0 serves it) or the file store in storeDir
/// (which wins when both are set), all keys prefixed by the run id; checks,
/// each a FailedPrecondition naming ranks: every rank claims the same world
/// size; every rank's fingerprint equals rank 0's ("fingerprint of ranks 1,
/// 3 differs from rank 0's"); ranks that have not arrived within the
/// timeout are named ("rendezvous timed out after 30 s: ranks 2, 3 never
/// joined"). Then a Gloo TCP context (connectFullMesh) with
/// options.timeout.
absl::StatusOr<std::unique_ptr<Communicator>>
connect(const DistEnv &env, const CommOptions &options);

} // namespace sinter::comm

#endif // SINTER_RUNTIME_COMM_COMMUNICATOR_H
