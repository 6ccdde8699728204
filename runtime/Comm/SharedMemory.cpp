//===- SharedMemory.cpp - all-reduce through memory the ranks of a host share ===//
//
// The segment, in pages:
//
//   header     magic, rank 0's nonce, world size, piece bytes, the bell
//   rank blocks one cache line per rank: the last barrier it arrived at, and
//              the tag, count and kind of the all-reduce it is in
//   slots      one piece per rank
//   result     one piece
//
// A barrier is an epoch: a rank stores the number of barriers it has
// arrived at in its block, then rings the bell (a 32-bit counter that the
// waiters sleep on with FUTEX_WAIT, shared between processes). A waiter
// reads the bell, checks every block, and sleeps only while the bell has
// not moved, so no arrival is missed.
//
//===----------------------------------------------------------------------===//

#include "runtime/Comm/SharedMemory.h"

#include "abi/HalfFloat.h"
#include "runtime/Comm/Rendezvous.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <new>
#include <random>
#include <utility>
#include <vector>

namespace sinter::comm {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kMagic = 0x31746d6873726e73ULL; // "snrshmt1"
constexpr size_t kPage = 4096;
/// How long a waiter sleeps between checks that the late ranks are alive.
constexpr std::chrono::milliseconds kSlice(10);
/// Polls of the bell before the first sleep: a few microseconds, enough
/// when the peer is a moment behind, short enough not to steal a core from
/// compute when it is not.
constexpr int kSpins = 200;
constexpr uint64_t kNotInRegion = ~uint64_t(0);
/// A cache line: the ranks' chunks start on one, so that no two ranks write
/// the same line.
constexpr size_t kCacheLine = 64;

size_t roundDown(size_t n, size_t to) { return n / to * to; }
size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

void futexWait(std::atomic<uint32_t> *word, uint32_t expected,
               std::chrono::nanoseconds within) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(within.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(within.count() % 1000000000);
  ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT,
            expected, &ts, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t> *word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE, INT_MAX,
            nullptr, nullptr, 0);
}

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

const char *kindName(SharedMemoryReducer::Kind kind) {
  switch (kind) {
  case SharedMemoryReducer::Kind::f32:
    return "f32";
  case SharedMemoryReducer::Kind::f64:
    return "f64";
  case SharedMemoryReducer::Kind::bf16:
    return "bf16";
  case SharedMemoryReducer::Kind::f16:
    return "f16";
  }
  return "?";
}

/// Rank r's share [lo, hi) of n elements of `bytes` each, in a world of
/// `size`: consecutive, whole cache lines but the last.
std::pair<size_t, size_t> chunkOf(size_t n, size_t bytes, int rank, int size) {
  const size_t share =
      roundUp((n + size - 1) / size, std::max<size_t>(1, kCacheLine / bytes));
  const size_t lo = std::min(n, share * rank);
  return {lo, std::min(n, lo + share)};
}

size_t elementBytes(SharedMemoryReducer::Kind kind) {
  return kind == SharedMemoryReducer::Kind::f64   ? 8
         : kind == SharedMemoryReducer::Kind::f32 ? 4
                                                  : 2;
}

std::string errnoText(int error) { return std::strerror(error); }

absl::Status unavailable(std::string message) {
  return makeError(SINTER_HERE, absl::StatusCode::kUnavailable,
                   std::move(message));
}

/// out[i] = own[i] = (slots[0][i] + slots[1][i] + ...) * scale, for i in
/// [lo, hi), in blocks that stay in L1 so that each pass vectorizes.
template <typename T>
void sumChunk(T *out, T *own, const unsigned char *const *slots, int n,
              size_t lo, size_t hi, double scale) {
  const T by = static_cast<T>(scale);
  constexpr size_t kBlock = 1024;
  T acc[kBlock];
  for (size_t b = lo; b < hi; b += kBlock) {
    const size_t m = std::min(kBlock, hi - b);
    const T *first = reinterpret_cast<const T *>(slots[0]) + b;
    for (size_t j = 0; j < m; ++j)
      acc[j] = first[j];
    for (int q = 1; q < n; ++q) {
      const T *next = reinterpret_cast<const T *>(slots[q]) + b;
      for (size_t j = 0; j < m; ++j)
        acc[j] += next[j];
    }
    if (scale != 1.0)
      for (size_t j = 0; j < m; ++j)
        acc[j] *= by;
    std::memcpy(out + b, acc, m * sizeof(T));
    std::memcpy(own + b, acc, m * sizeof(T));
  }
}

/// to[q][i] = (at[0][i] + at[1][i] + ...) * scale for q < writers, for i in
/// [lo, hi): the sum in rank order, written to the memory of `writers` ranks
/// (every rank's, or only this rank's while the other hosts' sums are still to
/// come).
template <typename T>
void sumIntoAll(T *const *at, int n, T *const *to, int writers, size_t lo,
                size_t hi, double scale) {
  constexpr size_t kBlock = 1024;
  const T by = static_cast<T>(scale);
  T acc[kBlock];
  for (size_t b = lo; b < hi; b += kBlock) {
    const size_t m = std::min(kBlock, hi - b);
    for (size_t j = 0; j < m; ++j)
      acc[j] = at[0][b + j];
    for (int q = 1; q < n; ++q)
      for (size_t j = 0; j < m; ++j)
        acc[j] += at[q][b + j];
    if (scale != 1.0)
      for (size_t j = 0; j < m; ++j)
        acc[j] *= by;
    for (int q = 0; q < writers; ++q)
      std::memcpy(to[q] + b, acc, m * sizeof(T));
  }
}

/// data[i] *= scale for i in [lo, hi).
template <typename T>
void scaleRange(T *data, size_t lo, size_t hi, double scale) {
  const T by = static_cast<T>(scale);
  for (size_t i = lo; i < hi; ++i)
    data[i] *= by;
}

/// The same for 16-bit floats, every partial sum rounded to the type.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void sumHalfChunk(uint16_t *out, uint16_t *own,
                  const unsigned char *const *slots, int n, size_t lo,
                  size_t hi) {
  for (size_t i = lo; i < hi; ++i) {
    uint16_t acc = reinterpret_cast<const uint16_t *>(slots[0])[i];
    for (int q = 1; q < n; ++q)
      acc = Narrow(Widen(acc) +
                   Widen(reinterpret_cast<const uint16_t *>(slots[q])[i]));
    out[i] = acc;
    own[i] = acc;
  }
}

} // namespace

struct SharedMemoryReducer::Header {
  uint64_t magic;
  uint64_t nonce;
  uint64_t size;
  uint64_t pieceBytes;
  alignas(64) std::atomic<uint32_t> bell;
};

struct alignas(64) SharedMemoryReducer::RankBlock {
  std::atomic<uint64_t> arrived;
  uint64_t count;
  uint64_t offset; // into a shared region, or kNotInRegion
  uint32_t kind;
  uint32_t tag;
};

static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "the barrier's words are shared between processes");
static_assert(sizeof(SharedMemoryReducer::Kind) == 4);

namespace {

size_t blocksOffset() { return kPage; }
size_t slotsOffset(int size) {
  return blocksOffset() + roundUp(size * 64, kPage);
}

} // namespace

unsigned char *SharedMemoryReducer::slot(int rank) const {
  return static_cast<unsigned char *>(base_) + slotsOffset(size_) +
         static_cast<size_t>(rank) * pieceBytes_;
}

unsigned char *SharedMemoryReducer::result() const { return slot(size_); }

uint64_t SharedMemoryReducer::nonce() const { return header_->nonce; }

absl::Status SharedMemoryReducer::map(int fd, size_t bytes) {
  fd_ = fd;
  void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return unavailable(absl::StrCat("cannot map the shared segment ", name_,
                                    " (", bytes, " bytes): ",
                                    errnoText(errno)));
  base_ = p;
  mappedBytes_ = bytes;
  header_ = static_cast<Header *>(base_);
  ranks_ = reinterpret_cast<RankBlock *>(static_cast<unsigned char *>(base_) +
                                         blocksOffset());
  return absl::OkStatus();
}

namespace {

/// The write lock on byte `rank` of the segment's file: rank `rank` holds
/// it while it lives.
struct flock livenessLock(int rank) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = rank;
  lock.l_len = 1;
  return lock;
}

} // namespace

absl::Status SharedMemoryReducer::holdLiveness() {
  struct flock lock = livenessLock(rank_);
  if (::fcntl(fd_, F_OFD_SETLK, &lock) != 0)
    return unavailable(absl::StrCat("cannot lock byte ", rank_,
                                    " of the shared segment ", name_, ": ",
                                    errnoText(errno)));
  return absl::OkStatus();
}

bool SharedMemoryReducer::alive(int rank) const {
  struct flock lock = livenessLock(rank);
  if (::fcntl(fd_, F_OFD_GETLK, &lock) != 0)
    return true; // cannot tell: the timeout still bounds the wait
  return lock.l_type != F_UNLCK;
}

absl::StatusOr<std::unique_ptr<SharedMemoryReducer>>
SharedMemoryReducer::create(int size, size_t pieceBytes,
                            std::chrono::milliseconds timeout) {
  std::unique_ptr<SharedMemoryReducer> r(
      new SharedMemoryReducer(0, size, timeout));
  const size_t piece = std::max(kPage, roundDown(pieceBytes, kPage));
  const size_t bytes =
      slotsOffset(size) + static_cast<size_t>(size + 1) * piece;
  std::random_device random;
  const uint64_t nonce = (uint64_t(random()) << 32) ^ random();
  r->name_ = absl::StrFormat("/sinter-%d-%016x", ::getpid(), nonce);
  int fd = ::shm_open(r->name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
                      0600);
  if (fd < 0)
    return unavailable(absl::StrCat("cannot create the shared segment ",
                                    r->name_, ": ", errnoText(errno)));
  r->linked_ = true;
  r->fd_ = fd;
  // Reserved now: a tmpfs that runs out later raises SIGBUS on a write.
  if (int error = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)))
    return unavailable(absl::StrCat("cannot reserve ", bytes,
                                    " bytes for the shared segment ",
                                    r->name_, ": ", errnoText(error)));
  SINTER_RETURN_IF_ERROR(r->map(fd, bytes));
  r->pieceBytes_ = piece;
  auto *header = new (r->base_) Header{};
  header->nonce = nonce;
  header->size = static_cast<uint64_t>(size);
  header->pieceBytes = piece;
  for (int q = 0; q < size; ++q)
    new (&r->ranks_[q]) RankBlock{};
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = kMagic;
  SINTER_RETURN_IF_ERROR(r->holdLiveness());
  return r;
}

absl::StatusOr<std::unique_ptr<SharedMemoryReducer>>
SharedMemoryReducer::open(const std::string &name, uint64_t nonce, int rank,
                          int size, std::chrono::milliseconds timeout) {
  std::unique_ptr<SharedMemoryReducer> r(
      new SharedMemoryReducer(rank, size, timeout));
  r->name_ = name;
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    return unavailable(absl::StrCat("cannot open the shared segment ", name,
                                    ": ", errnoText(errno)));
  r->fd_ = fd;
  struct stat st;
  if (::fstat(fd, &st) != 0 ||
      static_cast<size_t>(st.st_size) < slotsOffset(size))
    return unavailable(absl::StrCat("the shared segment ", name,
                                    " is too small to be rank 0's"));
  SINTER_RETURN_IF_ERROR(r->map(fd, static_cast<size_t>(st.st_size)));
  const Header &h = *r->header_;
  if (h.magic != kMagic || h.nonce != nonce ||
      h.size != static_cast<uint64_t>(size) || h.pieceBytes == 0 ||
      slotsOffset(size) + (size + 1) * h.pieceBytes > r->mappedBytes_)
    return unavailable(absl::StrCat("the shared segment ", name,
                                    " is not the one rank 0 made"));
  r->pieceBytes_ = h.pieceBytes;
  SINTER_RETURN_IF_ERROR(r->holdLiveness());
  return r;
}

void SharedMemoryReducer::unlinkName() {
  if (linked_)
    ::shm_unlink(name_.c_str());
  linked_ = false;
}

absl::StatusOr<std::string>
SharedMemoryReducer::backRegion(void *base, size_t bytes, int index) {
  const std::string name =
      absl::StrFormat("/sinter-%d-r%d-%d", ::getpid(), rank_, index);
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
                      0600);
  if (fd < 0)
    return unavailable(absl::StrCat("cannot create the shared segment ", name,
                                    ": ", errnoText(errno)));
  auto giveUp = [&](std::string why) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    return unavailable(std::move(why));
  };
  if (int error = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)))
    return giveUp(absl::StrCat("cannot reserve ", bytes, " bytes for ", name,
                               ": ", errnoText(error)));
  void *copy =
      ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (copy == MAP_FAILED)
    return giveUp(
        absl::StrCat("cannot map ", name, ": ", errnoText(errno)));
  std::memcpy(copy, base, bytes);
  void *fixed = ::mmap(base, bytes, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_FIXED, fd, 0);
  const int error = errno;
  ::munmap(copy, bytes);
  ::close(fd);
  if (fixed == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    return makeError(SINTER_HERE, absl::StatusCode::kInternal,
                     absl::StrCat("cannot map ", name, " over ", bytes,
                                  " bytes of the arena, which are lost: ",
                                  errnoText(error)));
  }
  regionNames_.push_back(name);
  return name;
}

absl::StatusOr<unsigned char *>
SharedMemoryReducer::mapPeerRegion(const std::string &name, size_t bytes) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    return unavailable(absl::StrCat("cannot open the shared segment ", name,
                                    ": ", errnoText(errno)));
  struct stat st;
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    ::close(fd);
    return unavailable(
        absl::StrCat("the shared segment ", name, " is not ", bytes, " bytes"));
  }
  void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  ::close(fd);
  if (p == MAP_FAILED)
    return unavailable(
        absl::StrCat("cannot map ", name, ": ", errnoText(error)));
  return static_cast<unsigned char *>(p);
}

void SharedMemoryReducer::finishRegion(Region region, bool use) {
  for (const std::string &name : regionNames_)
    ::shm_unlink(name.c_str());
  regionNames_.clear();
  if (use) {
    regions_.push_back(std::move(region));
    return;
  }
  for (int q = 0; q < static_cast<int>(region.ranks.size()); ++q)
    if (q != rank_ && region.ranks[q])
      ::munmap(region.ranks[q], region.bytes);
}

SharedMemoryReducer::~SharedMemoryReducer() {
  // This rank's own region pages belong to their owner (the executor's
  // arena); only the mappings of the other ranks' go.
  for (const Region &region : regions_)
    for (int q = 0; q < static_cast<int>(region.ranks.size()); ++q)
      if (q != rank_)
        ::munmap(region.ranks[q], region.bytes);
  for (const std::string &name : regionNames_)
    ::shm_unlink(name.c_str());
  unlinkName();
  if (base_)
    ::munmap(base_, mappedBytes_);
  if (fd_ >= 0)
    ::close(fd_);
}

absl::Status SharedMemoryReducer::barrier(std::string_view what) {
  const uint64_t epoch = ++epoch_;
  ranks_[rank_].arrived.store(epoch, std::memory_order_release);
  header_->bell.fetch_add(1, std::memory_order_seq_cst);
  futexWakeAll(&header_->bell);
  const auto start = Clock::now();
  auto lastCheck = start;
  for (int spins = 0;; ++spins) {
    const uint32_t bell = header_->bell.load(std::memory_order_seq_cst);
    int late = -1;
    for (int q = 0; q < size_ && late < 0; ++q)
      if (ranks_[q].arrived.load(std::memory_order_acquire) < epoch)
        late = q;
    if (late < 0) {
      waitingFor_.store(-1, std::memory_order_relaxed);
      return absl::OkStatus();
    }
    if (spins < kSpins) {
      relax();
      continue;
    }
    waitingFor_.store(jobRank(late), std::memory_order_relaxed);
    const auto now = Clock::now();
    if (now - lastCheck >= kSlice) {
      lastCheck = now;
      for (int q = late; q < size_; ++q)
        if (ranks_[q].arrived.load(std::memory_order_acquire) < epoch &&
            !alive(q))
          return markPeerFailure(
              unavailable(absl::StrCat(
                  std::string(what), " failed on rank ", jobRank(rank_),
                  ": peer rank ", jobRank(q),
                  " died or closed its connection [shared memory: its lock "
                  "on the segment is gone]")),
              absl::StrCat("peer rank ", jobRank(q)));
    }
    if (now - start >= timeout_)
      return makeError(
          SINTER_HERE, absl::StatusCode::kDeadlineExceeded,
          absl::StrCat(std::string(what), " failed on rank ", jobRank(rank_),
                       ": timed out after ", formatSeconds(timeout_),
                       " waiting for peer rank ", jobRank(late),
                       " (stalled, slow, or in another collective or tag) "
                       "[shared memory]"));
    futexWait(&header_->bell, bell,
              std::min<Clock::duration>(kSlice, timeout_ - (now - start)));
  }
}

absl::Status SharedMemoryReducer::enter(size_t count, Kind kind, uint32_t tag,
                                        uint64_t offset,
                                        std::string_view what) {
  RankBlock &mine = ranks_[rank_];
  mine.count = count;
  mine.kind = static_cast<uint32_t>(kind);
  mine.tag = tag;
  mine.offset = offset;
  SINTER_RETURN_IF_ERROR(barrier(what));
  auto where = [](uint64_t at) {
    return at == kNotInRegion ? std::string("private memory")
                              : absl::StrCat("shared offset ", at);
  };
  for (int q = 0; q < size_; ++q) {
    const RankBlock &theirs = ranks_[q];
    if (theirs.count != count || theirs.kind != mine.kind ||
        theirs.tag != tag || theirs.offset != offset)
      return makeError(
          SINTER_HERE, absl::StatusCode::kFailedPrecondition,
          absl::StrFormat(
              "%s failed on rank %d: rank %d is in another collective "
              "(tag %d, %d elements of %s in %s; rank %d: tag %d, %d "
              "elements of %s in %s): every rank must run the same "
              "collectives in the same order",
              std::string(what), jobRank(rank_), jobRank(q), theirs.tag,
              theirs.count, kindName(static_cast<Kind>(theirs.kind)),
              where(theirs.offset), jobRank(rank_), tag, count, kindName(kind),
              where(offset)));
  }
  return absl::OkStatus();
}

const SharedMemoryReducer::Region *
SharedMemoryReducer::regionOf(const void *data, size_t bytes) const {
  const auto *p = static_cast<const unsigned char *>(data);
  for (const Region &region : regions_)
    if (p >= region.base && bytes <= region.bytes &&
        static_cast<size_t>(p - region.base) <= region.bytes - bytes)
      return &region;
  return nullptr;
}

absl::Status SharedMemoryReducer::allReduceInRegion(
    const Region &region, size_t offset, size_t count, Kind kind, uint32_t tag,
    std::string_view what, double scale) {
  SINTER_RETURN_IF_ERROR(enter(count, kind, tag, offset, what));
  const auto [lo, hi] = chunkOf(count, elementBytes(kind), rank_, size_);
  std::vector<unsigned char *> at(size_);
  for (int q = 0; q < size_; ++q)
    at[q] = region.ranks[q] + offset;
  auto sum = [&](unsigned char *const *to, int writers, double by) {
    if (kind == Kind::f32)
      sumIntoAll(reinterpret_cast<float *const *>(at.data()), size_,
                 reinterpret_cast<float *const *>(to), writers, lo, hi, by);
    else
      sumIntoAll(reinterpret_cast<double *const *>(at.data()), size_,
                 reinterpret_cast<double *const *>(to), writers, lo, hi, by);
  };
  if (!across_) {
    sum(at.data(), size_, scale);
    return barrier(what);
  }
  // Several hosts: the host's sum into this rank's memory, the hosts' sum
  // and the scale there, then the result into the host's other ranks.
  unsigned char *own = at[rank_];
  sum(&own, 1, 1.0);
  SINTER_RETURN_IF_ERROR(finishChunk(own, lo, hi, kind, tag, what, scale));
  const size_t bytes = elementBytes(kind);
  for (int q = 0; q < size_; ++q)
    if (q != rank_ && hi > lo)
      std::memcpy(at[q] + lo * bytes, own + lo * bytes, (hi - lo) * bytes);
  return barrier(what);
}

void SharedMemoryReducer::joinHosts(std::vector<int> jobRanks, Across across) {
  jobRanks_ = std::move(jobRanks);
  across_ = std::move(across);
}

absl::Status SharedMemoryReducer::finishChunk(unsigned char *chunk, size_t lo,
                                              size_t hi, Kind kind,
                                              uint32_t tag,
                                              std::string_view what,
                                              double scale) {
  if (hi <= lo)
    return absl::OkStatus();
  const size_t bytes = elementBytes(kind);
  SINTER_RETURN_IF_ERROR(across_(chunk + lo * bytes, hi - lo, kind, tag, what));
  if (scale != 1.0) {
    if (kind == Kind::f32)
      scaleRange(reinterpret_cast<float *>(chunk), lo, hi, scale);
    else if (kind == Kind::f64)
      scaleRange(reinterpret_cast<double *>(chunk), lo, hi, scale);
  }
  return absl::OkStatus();
}

absl::Status SharedMemoryReducer::allReduceSum(void *data, size_t count,
                                               Kind kind, uint32_t tag,
                                               std::string_view what,
                                               double scale) {
  if (count == 0)
    return absl::OkStatus();
  const size_t bytes = elementBytes(kind);
  if (kind == Kind::f32 || kind == Kind::f64)
    if (const Region *region = regionOf(data, count * bytes))
      return allReduceInRegion(
          *region,
          static_cast<size_t>(static_cast<unsigned char *>(data) -
                              region->base),
          count, kind, tag, what, scale);

  std::vector<const unsigned char *> slots(size_);
  for (int q = 0; q < size_; ++q)
    slots[q] = slot(q);

  auto *out = static_cast<unsigned char *>(data);
  const size_t perPiece = pieceBytes_ / bytes;
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(perPiece, count - done);
    std::memcpy(slot(rank_), out + done * bytes, n * bytes);
    if (done == 0)
      SINTER_RETURN_IF_ERROR(enter(count, kind, tag, kNotInRegion, what));
    else
      SINTER_RETURN_IF_ERROR(barrier(what));
    const auto [lo, hi] = chunkOf(n, bytes, rank_, size_);
    unsigned char *own = out + done * bytes;
    // Over several hosts the scale waits for the hosts' sum (finishChunk).
    const double by = across_ ? 1.0 : scale;
    switch (kind) {
    case Kind::f32:
      sumChunk(reinterpret_cast<float *>(result()),
               reinterpret_cast<float *>(own), slots.data(), size_, lo, hi, by);
      break;
    case Kind::f64:
      sumChunk(reinterpret_cast<double *>(result()),
               reinterpret_cast<double *>(own), slots.data(), size_, lo, hi,
               by);
      break;
    case Kind::bf16:
      sumHalfChunk<half::bf16BitsToFloat, half::floatToBf16Bits>(
          reinterpret_cast<uint16_t *>(result()),
          reinterpret_cast<uint16_t *>(own), slots.data(), size_, lo, hi);
      break;
    case Kind::f16:
      sumHalfChunk<half::f16BitsToFloat, half::floatToF16Bits>(
          reinterpret_cast<uint16_t *>(result()),
          reinterpret_cast<uint16_t *>(own), slots.data(), size_, lo, hi);
      break;
    }
    if (across_ && hi > lo) {
      SINTER_RETURN_IF_ERROR(
          finishChunk(result(), lo, hi, kind, tag, what, scale));
      std::memcpy(own + lo * bytes, result() + lo * bytes, (hi - lo) * bytes);
    }
    SINTER_RETURN_IF_ERROR(barrier(what));
    if (lo > 0)
      std::memcpy(own, result(), lo * bytes);
    if (hi < n)
      std::memcpy(own + hi * bytes, result() + hi * bytes, (n - hi) * bytes);
    done += n;
  }
  return absl::OkStatus();
}

} // namespace sinter::comm
