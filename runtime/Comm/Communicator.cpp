//===- Communicator.cpp - collectives over Gloo's TCP transport -----------===//
//
// Two communicators: one for a single process (no network) and one over a
// Gloo context. The Gloo one wraps every call in the same way: refuse at
// once after an earlier error, run the Gloo collective, and turn any
// exception into the one-line Status that Communicator.h promises. Gloo's
// exception types say little (most are gloo::IoException), so the reason
// is read from the message, as measured on Debian's Gloo (the table is in
// classify() below).
//
// The all-reduces of ranks that share a host go through SharedMemory.h; when
// the job has several such hosts, GlooCommunicator::sumAcrossHosts joins
// them (joinSharedMemory decides which ranks form a host).
//
// Gloo's messages name a peer by its address ("Read error
// [127.0.0.1]:41871: Connection reset by peer"). The address of each rank is
// read back from the keys connectFullMesh published, so that the message
// can say "peer rank 1".
//
//===----------------------------------------------------------------------===//

#include "runtime/Comm/Communicator.h"

#include "abi/HalfFloat.h"
#include "runtime/Comm/Rendezvous.h"
#include "runtime/Comm/SharedMemory.h"
#include "runtime/Comm/WaitWatcher.h"
#include "runtime/Support/Status.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

#include "gloo/allgather.h"
#include "gloo/allgatherv.h"
#include "gloo/allreduce.h"
#include "gloo/alltoallv.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/address.h"
#include "gloo/transport/tcp/device.h"
#include "gloo/transport/unbound_buffer.h"
#include "gloo/types.h"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <type_traits>
#include <unistd.h>
#include <vector>

namespace sinter::comm {

Communicator::~Communicator() = default;

namespace {

using ReduceFn = void (*)(void *, const void *, const void *, size_t);

/// The tag of the barrier that ends connect(); no user collective runs yet.
constexpr uint32_t kConnectBarrierTag = 0;

template <typename T> void multiply(T *data, size_t count, double scale) {
  const T by = static_cast<T>(scale);
  for (size_t i = 0; i < count; ++i)
    data[i] *= by;
}

/// Gloo's reduce function for 16-bit floats: c = round(a + b), elementwise.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void sumHalves(void *c, const void *a, const void *b, size_t n) {
  auto *out = static_cast<uint16_t *>(c);
  const auto *x = static_cast<const uint16_t *>(a);
  const auto *y = static_cast<const uint16_t *>(b);
  for (size_t i = 0; i < n; ++i)
    out[i] = Narrow(Widen(x[i]) + Widen(y[i]));
}

//===- One process --------------------------------------------------------===//

class SoloCommunicator final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  absl::Status allReduceSum(float *, size_t, uint32_t,
                            std::string_view) override {
    return absl::OkStatus();
  }
  absl::Status allReduceSum(double *, size_t, uint32_t,
                            std::string_view) override {
    return absl::OkStatus();
  }
  absl::Status allReduceScaledSum(float *data, size_t count, double scale,
                                  uint32_t, std::string_view) override {
    if (scale != 1.0)
      multiply(data, count, scale);
    return absl::OkStatus();
  }
  absl::Status allReduceScaledSum(double *data, size_t count, double scale,
                                  uint32_t, std::string_view) override {
    if (scale != 1.0)
      multiply(data, count, scale);
    return absl::OkStatus();
  }
  absl::Status allReduceSum(uint16_t *, size_t, Half, uint32_t,
                            std::string_view) override {
    return absl::OkStatus();
  }
  absl::Status broadcast(void *, size_t, int root, uint32_t,
                         std::string_view what) override {
    if (root != 0)
      return InvalidArgumentError(
          SINTER_HERE, absl::StrCat(std::string(what), ": root rank ", root,
                                    " is not in a world of size 1"));
    return absl::OkStatus();
  }
  absl::Status allGather(const void *in, size_t bytes, void *out, uint32_t,
                         std::string_view) override {
    if (bytes && in != out)
      std::memmove(out, in, bytes);
    return absl::OkStatus();
  }
  absl::Status barrier(uint32_t, std::string_view) override {
    return absl::OkStatus();
  }
  std::string transport() const override { return "none"; }
  absl::Status shareMemory(void *, size_t, std::string_view) override {
    return absl::OkStatus();
  }
};

//===- Gloo ---------------------------------------------------------------===//

bool contains(const std::string &text, const char *part) {
  return text.find(part) != std::string::npos;
}

/// Whether text names address ("[127.0.0.1]:4187" is not in
/// "[127.0.0.1]:41871").
bool namesAddress(const std::string &text, const std::string &address) {
  for (size_t at = text.find(address); at != std::string::npos;
       at = text.find(address, at + 1)) {
    size_t end = at + address.size();
    if (end == text.size() ||
        !std::isdigit(static_cast<unsigned char>(text[end])))
      return true;
  }
  return false;
}

class GlooCommunicator final : public Communicator {
public:
  GlooCommunicator(int rank, int size, std::chrono::milliseconds timeout,
                   std::shared_ptr<gloo::transport::Device> device,
                   std::shared_ptr<gloo::rendezvous::Context> context)
      : rank_(rank), size_(size), timeout_(timeout), device_(std::move(device)),
        context_(std::move(context)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  /// From now on, a collective that waits `notice.after` is told about,
  /// then every `notice.every` (WaitWatcher.h): what it waits in, for whom
  /// when that can be known (over shared memory, the rank that has not
  /// arrived; Gloo does not say), and when it gives up.
  void watchWaits(WaitNotice notice) {
    if (!notice.tell || watcher_)
      return;
    watcher_ = std::make_unique<WaitWatcher>(
        std::move(notice),
        [this](const std::string &what, std::chrono::milliseconds waited) {
          const int late = shm_ ? shm_->waitingFor() : -1;
          return absl::StrCat("rank ", rank_, ": waited ",
                              formatSeconds(waited), " in ", what, " for ",
                              late >= 0 ? absl::StrCat("peer rank ", late)
                                        : "the other ranks",
                              "; gives up after ", formatSeconds(timeout_),
                              " without progress");
        });
  }

  absl::Status allReduceSum(float *data, size_t count, uint32_t tag,
                            std::string_view what) override {
    return allReduce(data, count, tag, what, &gloo::sum<float>,
                     SharedMemoryReducer::Kind::f32);
  }
  absl::Status allReduceSum(double *data, size_t count, uint32_t tag,
                            std::string_view what) override {
    return allReduce(data, count, tag, what, &gloo::sum<double>,
                     SharedMemoryReducer::Kind::f64);
  }
  absl::Status allReduceScaledSum(float *data, size_t count, double scale,
                                  uint32_t tag,
                                  std::string_view what) override {
    return allReduce(data, count, tag, what, &gloo::sum<float>,
                     SharedMemoryReducer::Kind::f32, scale);
  }
  absl::Status allReduceScaledSum(double *data, size_t count, double scale,
                                  uint32_t tag,
                                  std::string_view what) override {
    return allReduce(data, count, tag, what, &gloo::sum<double>,
                     SharedMemoryReducer::Kind::f64, scale);
  }
  absl::Status allReduceSum(uint16_t *data, size_t count, Half type,
                            uint32_t tag, std::string_view what) override {
    return allReduce(data, count, tag, what,
                     type == Half::bf16 ? &sumHalves<half::bf16BitsToFloat,
                                                     half::floatToBf16Bits>
                                        : &sumHalves<half::f16BitsToFloat,
                                                     half::floatToF16Bits>,
                     type == Half::bf16 ? SharedMemoryReducer::Kind::bf16
                                        : SharedMemoryReducer::Kind::f16);
  }

  absl::Status broadcast(void *data, size_t bytes, int root, uint32_t tag,
                         std::string_view what) override {
    if (root < 0 || root >= size_)
      return InvalidArgumentError(SINTER_HERE,
                                  absl::StrCat(std::string(what), " on rank ",
                                               rank_, ": root rank ", root,
                                               " is not in [0, ", size_, ")"));
    if (bytes == 0)
      return absl::OkStatus();
    return run(what, [&] {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(static_cast<uint8_t *>(data), bytes);
      opts.setRoot(root);
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
    });
  }

  absl::Status allGather(const void *in, size_t bytes, void *out, uint32_t tag,
                         std::string_view what) override {
    if (bytes == 0)
      return absl::OkStatus();
    return run(what, [&] {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(const_cast<uint8_t *>(static_cast<const uint8_t *>(in)),
                    bytes);
      opts.setOutput(static_cast<uint8_t *>(out), bytes * size_);
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::allgather(opts);
    });
  }

  absl::Status barrier(uint32_t tag, std::string_view what) override {
    return run(what, [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

  std::string transport() const override {
    if (!shm_)
      return absl::StrCat("TCP (no shared memory: ", noShmReason_, ")");
    std::string text =
        hosts_ > 1
            ? absl::StrCat("shared memory within each of ", hosts_, " hosts (",
                           hostRanks_.size(), " ranks each), TCP between them")
            : "shared memory";
    if (!sharedRegions_.empty())
      return text + ", buckets read in place";
    if (!noRegionReason_.empty())
      return absl::StrCat(text, ", buckets copied (", noRegionReason_, ")");
    return text;
  }

  absl::Status shareMemory(void *base, size_t bytes,
                           std::string_view what) override;

  /// From now on, all-reduces go through `shm` (connect() made sure every
  /// rank has one); without it, `why` says why not. hostRanks: the ranks
  /// that share this rank's segment, in order.
  void useSharedMemory(std::unique_ptr<SharedMemoryReducer> shm,
                       std::string why, std::vector<int> hostRanks = {}) {
    shm_ = std::move(shm);
    noShmReason_ = std::move(why);
    hostRanks_ = std::move(hostRanks);
  }

  /// Several hosts of hostRanks_.size() ranks each: this rank's host and a
  /// context of its counterparts (the ranks at the same place on every host,
  /// by host, this one among them), which sums each all-reduce's chunk
  /// across the hosts.
  void joinHosts(int host, std::vector<int> counterparts,
                 std::shared_ptr<gloo::rendezvous::Context> across) {
    host_ = host;
    hosts_ = static_cast<int>(counterparts.size());
    counterparts_ = std::move(counterparts);
    acrossHosts_ = std::move(across);
    shm_->joinHosts(hostRanks_, [this](void *chunk, size_t count,
                                       SharedMemoryReducer::Kind kind,
                                       uint32_t tag, std::string_view what) {
      return sumAcrossHosts(chunk, count, kind, tag, what);
    });
  }

  /// The address Gloo names rank r by, for r != rank().
  void setPeerAddress(const std::string &address, int r) {
    peerByAddress_[address] = r;
  }

  /// One line for an exception from a collective or from connecting.
  /// onlyPeer: the rank to name when the message names no known address
  /// (a context of two: the other one), or -1. *named: whether it names a
  /// rank.
  absl::Status classify(std::string_view what, const std::string &raw,
                        int onlyPeer = -1, bool *named = nullptr) const;

  /// Which of the rank's contexts a collective runs in: every rank's, or
  /// (several hosts) that of its counterparts on the other hosts.
  enum class Over { everyRank, theHosts };

  /// Runs fn, a collective in the context `over`, unless an earlier call
  /// failed; makes its exception the communicator's error.
  template <typename Fn>
  absl::Status run(std::string_view what, Fn fn, Over over = Over::everyRank) {
    return guarded(what, [&]() -> absl::Status {
      absl::Status status;
      std::string raw;
      bool named = false;
      try {
        fn();
        return absl::OkStatus();
      } catch (const std::exception &e) {
        raw = e.what();
        // Of two hosts, the peer across is the other host's counterpart.
        const int onlyPeer = over == Over::theHosts && hosts_ == 2
                                 ? counterparts_[1 - host_]
                                 : -1;
        status = classify(what, raw, onlyPeer, &named);
      }
      // A timeout looks for a death among the collective's own peers
      // first, then among every rank's.
      const bool timedOut =
          status.code() == absl::StatusCode::kDeadlineExceeded;
      if (timedOut || (causedByPeer(status) && !named)) {
        std::optional<absl::Status> died = peerThatDied(what, over, raw);
        if (!died && timedOut && over != Over::everyRank)
          died = peerThatDied(what, Over::everyRank, raw);
        if (died)
          status = *died;
      }
      return status;
    });
  }

  /// Runs attempt (returning a Status) unless an earlier call failed; makes
  /// its error the communicator's.
  template <typename Fn>
  absl::Status guarded(std::string_view what, Fn attempt) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_.ok())
        return withMessage(
            SINTER_HERE, error_,
            absl::StrCat(
                std::string(what), " not run on rank ", rank_,
                ": the communicator failed earlier: ", error_.message()));
    }
    WaitWatcher::Scope watched(watcher_.get(), what);
    absl::Status status = attempt();
    if (status.ok())
      return status;
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok())
      error_ = status;
    return status;
  }

private:
  /// After a collective failed: the failure of the peer whose connection
  /// in the context `over` broke, naming it, if one did. Used where Gloo's
  /// error does not name the peer: its wait can miss a failed pair (a send
  /// already handed to a socket whose peer then died is not woken by the
  /// pair's failure, and waits for the whole timeout), and its message
  /// names the socket's far end, which for a connection the peer opened is
  /// no address the store holds. But the failed pair keeps its error, which
  /// posting a receive on it rethrows at once, so the pair, and with it the
  /// rank, is found; of several, the one whose error is the collective's
  /// own (`raw`), else the first. A healthy pair is left with a one-byte
  /// receive on a slot no collective uses, pending; the communicator has
  /// failed by then and runs nothing more. Only a peer's death counts: a
  /// pair that a timeout closed proves nothing.
  std::optional<absl::Status> peerThatDied(std::string_view what, Over over,
                                           const std::string &raw) {
    gloo::rendezvous::Context *context =
        over == Over::theHosts ? acrossHosts_.get() : context_.get();
    std::unique_ptr<gloo::transport::UnboundBuffer> &probe =
        over == Over::theHosts ? acrossProbe_ : probe_;
    std::optional<absl::Status> first;
    for (int c = 0; c < context->size; ++c) {
      if (c == context->rank)
        continue;
      const int r = over == Over::theHosts ? counterparts_[c] : c;
      try {
        if (!probe)
          probe = context->createUnboundBuffer(&probeByte_, 1);
        std::unique_ptr<gloo::transport::Pair> &pair = context->getPair(c);
        if (!pair)
          continue;
        pair->recv(probe.get(), gloo::Slot::build(kProbePrefix, 0), 0, 1);
      } catch (const std::exception &e) {
        absl::Status status = classify(what, e.what(), r);
        if (!causedByPeer(status))
          continue;
        if (e.what() == raw)
          return status;
        if (!first)
          first = std::move(status);
      }
    }
    return first;
  }

  /// chunk := the sum of the same chunk on every host, in host order: host
  /// h sums part h of every host's chunk (an all-to-all), then every host
  /// gathers every part, straight into the chunk. Each host sends and
  /// receives 2 (H - 1) / H chunks, as a ring does, and the order of the sum
  /// is fixed, so the result does not depend on where a bucket starts.
  absl::Status sumAcrossHosts(void *chunk, size_t count,
                              SharedMemoryReducer::Kind kind, uint32_t tag,
                              std::string_view what) {
    using Kind = SharedMemoryReducer::Kind;
    switch (kind) {
    case Kind::f32:
      return sumParts(static_cast<float *>(chunk), count, tag, what,
                      [](float a, float b) { return a + b; });
    case Kind::f64:
      return sumParts(static_cast<double *>(chunk), count, tag, what,
                      [](double a, double b) { return a + b; });
    case Kind::bf16:
      return sumParts(static_cast<uint16_t *>(chunk), count, tag, what,
                      [](uint16_t a, uint16_t b) {
                        return half::floatToBf16Bits(half::bf16BitsToFloat(a) +
                                                     half::bf16BitsToFloat(b));
                      });
    case Kind::f16:
      return sumParts(static_cast<uint16_t *>(chunk), count, tag, what,
                      [](uint16_t a, uint16_t b) {
                        return half::floatToF16Bits(half::f16BitsToFloat(a) +
                                                    half::f16BitsToFloat(b));
                      });
    }
    return absl::OkStatus();
  }

  template <typename T, typename Add>
  absl::Status sumParts(T *chunk, size_t count, uint32_t tag,
                        std::string_view what, Add add) {
    // Part h of the chunk: [count h / H, count (h + 1) / H).
    std::vector<int64_t> parts(hosts_);
    for (int h = 0; h < hosts_; ++h)
      parts[h] =
          static_cast<int64_t>(count * (h + 1) / hosts_ - count * h / hosts_);
    const size_t mine = static_cast<size_t>(parts[host_]);
    // Every host's copy of this host's part, then their sum; kept between
    // calls (a bucket's worth of fresh pages would fault on every call).
    const size_t need = (hosts_ + 1) * mine * sizeof(T);
    if (scratch_.size() < need)
      scratch_.resize(need);
    T *theirs = reinterpret_cast<T *>(scratch_.data());
    T *sum = theirs + hosts_ * mine;
    SINTER_RETURN_IF_ERROR(run(
        what,
        [&] {
          gloo::AlltoallvOptions opts(acrossHosts_);
          opts.setInput(chunk, parts);
          opts.setOutput(theirs, std::vector<int64_t>(hosts_, mine));
          opts.setTag(tag);
          opts.setTimeout(timeout_);
          gloo::alltoallv(opts);
        },
        Over::theHosts));
    std::copy(theirs, theirs + mine, sum);
    for (int h = 1; h < hosts_; ++h)
      for (size_t i = 0; i < mine; ++i)
        sum[i] = add(sum[i], theirs[h * mine + i]);
    SINTER_RETURN_IF_ERROR(run(
        what,
        [&] {
          gloo::AllgathervOptions opts(acrossHosts_);
          opts.setInput(sum, mine);
          opts.setOutput(chunk,
                         std::vector<size_t>(parts.begin(), parts.end()));
          opts.setTag(tag);
          opts.setTimeout(timeout_);
          gloo::allgatherv(opts);
        },
        Over::theHosts));
    return absl::OkStatus();
  }

  template <typename T>
  absl::Status allReduce(T *data, size_t count, uint32_t tag,
                         std::string_view what, ReduceFn reduce,
                         SharedMemoryReducer::Kind kind, double scale = 1.0) {
    if (count == 0)
      return absl::OkStatus();
    if (shm_)
      return guarded(what, [&] {
        return shm_->allReduceSum(data, count, kind, tag, what, scale);
      });
    absl::Status status = run(what, [&] {
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(data, count);
      opts.setReduceFunction(reduce);
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
    if constexpr (std::is_floating_point_v<T>)
      if (status.ok() && scale != 1.0)
        multiply(data, count, scale);
    return status;
  }

  /// The slot prefix of peerThatDied's receive; Gloo's collectives use
  /// 0x01 to 0x08 (gloo/types.h).
  static constexpr uint8_t kProbePrefix = 0xff;

  const int rank_, size_;
  const std::chrono::milliseconds timeout_;
  // Declared before the context, so destroyed after it: a pair may hold a
  // pending receive into it to the end.
  char probeByte_ = 0;
  std::unique_ptr<gloo::transport::UnboundBuffer> probe_, acrossProbe_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::map<std::string, int> peerByAddress_;
  std::unique_ptr<SharedMemoryReducer> shm_;
  std::string noShmReason_;
  std::vector<int> hostRanks_; // sharing shm_, in order
  int host_ = 0, hosts_ = 1;
  std::vector<int> counterparts_; // by host
  std::shared_ptr<gloo::rendezvous::Context> acrossHosts_;
  std::vector<unsigned char> scratch_; // sumParts' buffers, kept
  std::vector<std::pair<void *, size_t>> sharedRegions_;
  int regionsTried_ = 0; // names each region's segment
  std::string noRegionReason_;
  mutable std::mutex mu_;
  absl::Status error_;
  // Last, so destroyed first: its thread reads shm_ and the rest.
  std::unique_ptr<WaitWatcher> watcher_;
};

absl::Status GlooCommunicator::classify(std::string_view what,
                                        const std::string &rawText,
                                        int onlyPeer, bool *named) const {
  std::string raw = absl::StrReplaceAll(rawText, {{"\n", " "}, {"\r", " "}});
  int peer = -1;
  for (const auto &[address, r] : peerByAddress_)
    if (namesAddress(raw, address))
      peer = r;
  if (peer < 0 && size_ == 2)
    peer = 1 - rank_;
  if (peer < 0)
    peer = onlyPeer;
  if (named)
    *named = peer >= 0;
  const std::string peerText =
      peer >= 0 ? absl::StrCat("peer rank ", peer) : "a peer rank";

  absl::StatusCode code = absl::StatusCode::kInternal;
  std::string reason;
  bool peerFailed = false;
  if (contains(raw, "Connection reset by peer") ||
      contains(raw, "Connection closed by peer") ||
      contains(raw, "Broken pipe")) {
    code = absl::StatusCode::kUnavailable;
    reason = absl::StrCat(peerText, " died or closed its connection");
    peerFailed = true;
  } else if (contains(raw, "Application timeout caused pair closure")) {
    code = absl::StatusCode::kDeadlineExceeded;
    reason = absl::StrCat("the connection to ", peerText,
                          " was closed by an earlier timeout");
  } else if (contains(raw, "Timed out waiting")) {
    code = absl::StatusCode::kDeadlineExceeded;
    reason = absl::StrCat("timed out after ", formatSeconds(timeout_),
                          " waiting for ", peerText,
                          " (stalled, slow, or in another collective or tag)");
  } else if (contains(raw, "Wait timeout for key")) {
    code = absl::StatusCode::kDeadlineExceeded;
    reason =
        absl::StrCat("rendezvous timed out after ", formatSeconds(timeout_));
  } else if (contains(raw, "Connect timeout") ||
             contains(raw, "Connection refused")) {
    code = absl::StatusCode::kUnavailable;
    reason = absl::StrCat("cannot connect to ", peerText,
                          " (a stale address in the store?)");
  } else {
    reason = "Gloo failed";
  }
  absl::Status status =
      makeError(SINTER_HERE, code,
                absl::StrCat(std::string(what), " failed on rank ", rank_,
                             ": ", reason, " [gloo: ", raw, "]"));
  if (peerFailed)
    status = markPeerFailure(std::move(status), peerText);
  return status;
}

/// The tags of joinSharedMemory's three collectives, run before any of the
/// caller's, and of shareMemory's two.
constexpr uint32_t kShmOfferTag = 0xfffffff0, kShmAgreeTag = 0xfffffff1,
                   kShareNamesTag = 0xfffffff2, kShareAgreeTag = 0xfffffff3,
                   kShmHostsTag = 0xfffffff4;

absl::Status GlooCommunicator::shareMemory(void *base, size_t bytes,
                                           std::string_view what) {
  if (!shm_ || bytes == 0)
    return absl::OkStatus();
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (reinterpret_cast<uintptr_t>(base) % page || bytes % page)
    return InvalidArgumentError(
        SINTER_HERE, absl::StrCat(std::string(what), " on rank ", rank_,
                                  ": the memory to share is not whole pages"));
  // Each rank backs its own pages and says what they are called (or why
  // not); then each maps everyone's; then each says whether it could. The
  // decision is the same on every rank: all of them, or none.
  constexpr size_t kText = 192;
  auto gather = [&](const std::string &text, uint32_t tag,
                    std::vector<std::string> &out) -> absl::Status {
    std::vector<char> mine(kText, '\0'), all(kText * size_);
    std::memcpy(mine.data(), text.data(), std::min(text.size(), kText - 1));
    SINTER_RETURN_IF_ERROR(allGather(mine.data(), kText, all.data(), tag, what));
    out.clear();
    for (int q = 0; q < size_; ++q)
      out.emplace_back(all.data() + q * kText,
                       strnlen(all.data() + q * kText, kText));
    return absl::OkStatus();
  };
  const int index = regionsTried_++;
  std::string mine;
  absl::StatusOr<std::string> backed = shm_->backRegion(base, bytes, index);
  if (backed.ok())
    mine = "+" + *backed;
  else if (backed.status().code() == absl::StatusCode::kInternal)
    return backed.status();
  else
    mine = absl::StrCat("-rank ", rank_, ": ", backed.status().message());
  std::vector<std::string> names;
  SINTER_RETURN_IF_ERROR(gather(mine, kShareNamesTag, names));
  // The region's ranks are the ones on this host, in the segment's order.
  SharedMemoryReducer::Region region;
  region.base = static_cast<unsigned char *>(base);
  region.bytes = bytes;
  region.ranks.assign(hostRanks_.size(), nullptr);
  std::string problem;
  for (int q = 0; q < size_ && problem.empty(); ++q)
    if (names[q].empty() || names[q][0] != '+')
      problem = names[q].empty() ? "?" : names[q].substr(1);
  for (size_t l = 0; l < hostRanks_.size() && problem.empty(); ++l) {
    const int q = hostRanks_[l];
    if (q == rank_) {
      region.ranks[l] = region.base;
      continue;
    }
    absl::StatusOr<unsigned char *> mapped =
        shm_->mapPeerRegion(names[q].substr(1), bytes);
    if (mapped.ok())
      region.ranks[l] = *mapped;
    else
      problem = absl::StrCat("rank ", rank_, ": ", mapped.status().message());
  }
  std::vector<std::string> problems;
  SINTER_RETURN_IF_ERROR(gather(problem, kShareAgreeTag, problems));
  for (const std::string &p : problems)
    if (!p.empty()) {
      problem = p;
      break;
    }
  shm_->finishRegion(std::move(region), problem.empty());
  if (problem.empty())
    sharedRegions_.emplace_back(base, bytes);
  else if (noRegionReason_.empty())
    noRegionReason_ = problem;
  return absl::OkStatus();
}

/// What a rank says about its host: where it listens and the kernel's boot
/// id, so that ranks listening on the same name of two machines (or on two
/// addresses of one) are not taken for one host. Ranks that say the same
/// are tried as one host; the segment then decides.
std::string hostKey(const CommOptions &options) {
  std::string boot;
  if (std::FILE *f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char line[64] = {};
    if (std::fgets(line, sizeof(line), f))
      boot = line;
    std::fclose(f);
    boot.erase(boot.find_last_not_of(" \n") + 1);
  }
  return absl::StrCat(options.hostname, " ", boot);
}

/// Which ranks share memory: the ranks of each host (by hostKey, in rank
/// order) share one segment that the host's first rank makes; each rank
/// maps its host's; an all-gather of what went wrong (nothing, on a rank
/// that could) decides, the same way on every rank: shared memory when
/// every rank has it, else TCP with the first rank's reason. With several
/// hosts, every host must have as many ranks, and the ranks at the same
/// place on each host connect to each other (`store`, under "hosts/<place>")
/// to sum their chunks across the hosts.
absl::Status joinSharedMemory(GlooCommunicator &comm, const DistEnv &env,
                              const CommOptions &options, JobStore &store,
                              std::shared_ptr<gloo::transport::Device> device) {
  struct Offer {
    char host[160];
    char name[64];
    uint64_t nonce;
    char why[192];
  };
  constexpr size_t kWhy = sizeof(Offer::why);
  auto copyText = [](char *to, size_t room, const std::string &text) {
    size_t n = std::min(text.size(), room - 1);
    std::memcpy(to, text.data(), n);
    to[n] = '\0';
  };
  auto text = [](const char *field, size_t room) {
    return std::string(field, strnlen(field, room));
  };
  const int world = env.worldSize;
  const std::string self = absl::StrCat("rank ", env.rank, ": ");

  // Every rank's host, then the hosts' ranks.
  Offer mine{};
  copyText(mine.host, sizeof(mine.host), hostKey(options));
  std::vector<Offer> all(world);
  SINTER_RETURN_IF_ERROR(comm.allGather(&mine, sizeof(Offer), all.data(),
                                        kShmHostsTag, "finding the hosts"));
  std::vector<std::vector<int>> hosts;
  int myHost = 0;
  for (int r = 0; r < world; ++r) {
    const std::string key = text(all[r].host, sizeof(Offer::host));
    int h = 0;
    while (h < static_cast<int>(hosts.size()) &&
           text(all[hosts[h][0]].host, sizeof(Offer::host)) != key)
      ++h;
    if (h == static_cast<int>(hosts.size()))
      hosts.emplace_back();
    hosts[h].push_back(r);
    if (r == env.rank)
      myHost = h;
  }
  const std::vector<int> &mates = hosts[myHost];
  const int place = static_cast<int>(
      std::find(mates.begin(), mates.end(), env.rank) - mates.begin());

  std::unique_ptr<SharedMemoryReducer> shm;
  std::string why;
  for (const std::vector<int> &h : hosts)
    if (why.empty() && h.size() != mates.size())
      why = absl::StrCat("the hosts have different numbers of ranks (",
                         mates.size(), " on rank ", env.rank, "'s, ", h.size(),
                         " on rank ", h[0], "'s)");
  if (why.empty() && (options.sharedMemoryPieceBytes == 0 || !env.sharedMemory))
    why = absl::StrCat(self, "disabled",
                       env.sharedMemory ? "" : " (SINTER_SHM_DISABLE=1)");
  if (why.empty() && mates.size() == 1)
    why = absl::StrCat("one rank on each of ", hosts.size(), " hosts");
  if (why.empty() && place == 0) {
    absl::StatusOr<std::unique_ptr<SharedMemoryReducer>> made =
        SharedMemoryReducer::create(static_cast<int>(mates.size()),
                                    options.sharedMemoryPieceBytes,
                                    options.timeout);
    if (made.ok()) {
      shm = std::move(*made);
      copyText(mine.name, sizeof(mine.name), shm->name());
      mine.nonce = shm->nonce();
    } else {
      why = absl::StrCat(self, made.status().message());
    }
  }
  copyText(mine.why, kWhy, why);
  SINTER_RETURN_IF_ERROR(comm.allGather(&mine, sizeof(Offer), all.data(),
                                        kShmOfferTag,
                                        "offering shared memory"));
  if (place != 0 && why.empty()) {
    const Offer &leader = all[mates[0]];
    if (!leader.name[0]) {
      why = text(leader.why, kWhy);
    } else {
      absl::StatusOr<std::unique_ptr<SharedMemoryReducer>> opened =
          SharedMemoryReducer::open(
              text(leader.name, sizeof(Offer::name)), leader.nonce, place,
              static_cast<int>(mates.size()), options.timeout);
      if (opened.ok())
        shm = std::move(*opened);
      else
        why = absl::StrCat(self, opened.status().message());
    }
  }
  std::vector<char> said(kWhy, '\0'), everyone(kWhy * world);
  copyText(said.data(), kWhy, why);
  SINTER_RETURN_IF_ERROR(comm.allGather(said.data(), kWhy, everyone.data(),
                                        kShmAgreeTag,
                                        "agreeing on shared memory"));
  // Every rank has opened its host's segment or given up: its name can go.
  if (shm && place == 0)
    shm->unlinkName();
  for (int r = 0; r < world; ++r)
    if (const char *theirs = everyone.data() + r * kWhy; theirs[0]) {
      comm.useSharedMemory(nullptr, text(theirs, kWhy));
      return absl::OkStatus();
    }
  comm.useSharedMemory(std::move(shm), "", mates);
  if (hosts.size() == 1)
    return absl::OkStatus();
  auto across = std::make_shared<gloo::rendezvous::Context>(
      myHost, static_cast<int>(hosts.size()));
  across->setTimeout(options.timeout);
  std::unique_ptr<JobStore> acrossStore =
      store.sub(absl::StrCat("hosts/", place));
  SINTER_RETURN_IF_ERROR(comm.run("connecting to the other hosts' ranks", [&] {
    across->connectFullMesh(*acrossStore, device);
  }));
  std::vector<int> counterparts;
  for (const std::vector<int> &h : hosts)
    counterparts.push_back(h[place]);
  comm.joinHosts(myHost, std::move(counterparts), std::move(across));
  // No rank returns (and rank 0 takes the TCP store down) before every
  // rank's counterparts have connected through it.
  return comm.barrier(kShmHostsTag, "the barrier after connecting the hosts");
}

} // namespace

absl::StatusOr<std::unique_ptr<Communicator>>
connect(const DistEnv &env, const CommOptions &options) {
  if (env.worldSize < 1 || env.rank < 0 || env.rank >= env.worldSize)
    return InvalidArgumentError(
        SINTER_HERE, absl::StrCat("rank ", env.rank, " is not in a world of ",
                                  env.worldSize));
  if (env.worldSize == 1)
    return std::unique_ptr<Communicator>(new SoloCommunicator());
  if (options.timeout.count() <= 0)
    return InvalidArgumentError(SINTER_HERE,
                                "the communication timeout must be positive");
  // A write to a peer that died raises SIGPIPE, whose default action ends
  // the process before Gloo can turn EPIPE into an error naming the peer:
  // the survivors must report, not vanish. Only the default is replaced.
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 &&
      current.sa_handler == SIG_DFL)
    ::signal(SIGPIPE, SIG_IGN);

  // The device first: a rank that cannot listen never joins, and the others
  // say so, instead of waiting in connectFullMesh.
  std::shared_ptr<gloo::transport::Device> device;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception &e) {
    return makeError(SINTER_HERE, absl::StatusCode::kUnavailable,
                     absl::StrCat("rank ", env.rank, " cannot listen on '",
                                  options.hostname,
                                  "' (SINTER_HOST): ", e.what()));
  }

  SINTER_ASSIGN_OR_RETURN(std::unique_ptr<JobStore> store,
                          openJobStore(env, options.timeout, options.notice));
  SINTER_RETURN_IF_ERROR(exchangeJoins(*store, env, options.fingerprint,
                                       options.timeout, options.notice));

  auto context =
      std::make_shared<gloo::rendezvous::Context>(env.rank, env.worldSize);
  context->setTimeout(options.timeout);
  auto comm = std::make_unique<GlooCommunicator>(
      env.rank, env.worldSize, options.timeout, device, context);
  std::unique_ptr<JobStore> glooStore = store->sub("gloo");
  absl::Status connected = comm->run("connecting to the other ranks", [&] {
    context->connectFullMesh(*glooStore, device);
  });
  SINTER_RETURN_IF_ERROR(connected);

  // connectFullMesh published each rank's address under its rank; Gloo's
  // messages name peers by it. Each entry of a rank's list has the same
  // listening address (one per device), so the first will do.
  for (int r = 0; r < env.worldSize; ++r) {
    if (r == env.rank)
      continue;
    try {
      std::vector<char> all = glooStore->get(std::to_string(r));
      size_t entry = all.size() / size_t(env.worldSize - 1);
      gloo::transport::tcp::Address address(
          std::vector<char>(all.begin(), all.begin() + entry));
      comm->setPeerAddress(address.str(), r);
    } catch (const std::exception &) {
      // Only messages lose the peer's rank.
    }
  }
  SINTER_RETURN_IF_ERROR(
      comm->barrier(kConnectBarrierTag, "the barrier after connecting"));
  SINTER_RETURN_IF_ERROR(joinSharedMemory(*comm, env, options, *store, device));
  comm->watchWaits(options.notice);
  return std::unique_ptr<Communicator>(std::move(comm));
}

} // namespace sinter::comm
