//===- Rendezvous.cpp - how the ranks of a job find and check each other --===//
//
// The join protocol of Rendezvous.h. Waiting is a poll of check() every few
// milliseconds rather than one blocking wait, so that a timeout can name
// the ranks that never came and a mismatched world size fails as soon as
// its join key is there, and so that a long wait is not a silent one: the
// timeout is the collectives' (5 minutes by default), and a rank started
// alone, or pointed at the wrong MASTER_ADDR, says what it waits for
// (WaitNotice, Communicator.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/Comm/Rendezvous.h"

#include "runtime/Comm/TcpStore.h"
#include "runtime/Support/Status.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "gloo/rendezvous/file_store.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <random>
#include <thread>

namespace sinter::comm {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPollInterval(5);
constexpr absl::string_view kJoinMagic = "sinter-join 1";

/// Gloo's FileStore with its check() made public.
class CheckableFileStore : public gloo::rendezvous::FileStore {
public:
  using FileStore::FileStore;
  bool has(const std::vector<std::string> &keys) { return check(keys); }
};

/// Tells `notice` about a wait that started at construction once it has
/// lasted notice.after, then every notice.every; the line is only built
/// when one is due.
class WaitNotices {
public:
  explicit WaitNotices(const WaitNotice &notice)
      : notice(notice), start(Clock::now()), due(start + notice.after) {}

  /// `line(waited)` says what is still awaited, `waited` long so far (in
  /// whole seconds from a second on).
  template <typename LineFn> void poll(LineFn &&line) {
    if (!notice.tell)
      return;
    auto now = Clock::now();
    if (now < due)
      return;
    due = now + notice.every;
    notice.tell(line(waitedFor(now - start)));
  }

private:
  const WaitNotice &notice;
  Clock::time_point start, due;
};

absl::Status rendezvousError(std::string message) {
  return makeError(SINTER_HERE, absl::StatusCode::kFailedPrecondition, message);
}

/// "; this rank is torchrun's RANK=0 ...": where another launcher placed
/// this process elsewhere (DistEnv::precedence), the likely reason ranks
/// are missing or doubled; empty otherwise.
std::string otherPlacement(const DistEnv &env) {
  return env.precedence.empty() ? "" : absl::StrCat("; ", env.precedence);
}

/// One rank's join key.
struct Join {
  int worldSize = 0;
  std::string host, pid, nonce, fingerprint;
};

std::vector<char> encode(const Join &join) {
  std::string text =
      absl::StrCat(kJoinMagic, "\n", join.worldSize, "\n", join.host, "\n",
                   join.pid, "\n", join.nonce, "\n", join.fingerprint);
  return std::vector<char>(text.begin(), text.end());
}

std::optional<Join> decode(const std::vector<char> &bytes) {
  std::string text(bytes.begin(), bytes.end());
  std::vector<std::string> parts =
      absl::StrSplit(text, absl::MaxSplits('\n', 5));
  Join join;
  if (parts.size() != 6 || parts[0] != kJoinMagic ||
      !absl::SimpleAtoi(parts[1], &join.worldSize))
    return std::nullopt;
  join.host = parts[2];
  join.pid = parts[3];
  join.nonce = parts[4];
  join.fingerprint = parts[5];
  return join;
}

/// A fingerprint fit for a one-line message: printable, at most 48 chars.
std::string quoted(const std::string &text) {
  std::string out;
  for (char c : text.substr(0, 48))
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return absl::StrCat("'", out, text.size() > 48 ? "...'" : "'");
}

std::string rankList(const std::vector<int> &ranks) {
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ",
                      absl::StrJoin(ranks, ", "));
}

std::string joinKey(int rank) { return absl::StrCat("join/", rank); }
std::string checkedKey(int rank) { return absl::StrCat("checked/", rank); }

/// Where rank 0 cannot listen on its port: the join key of another process
/// that serves it as rank 0 of this very run, if one does within `wait`
/// (two processes started as rank 0: torchrun's variables left in the shell
/// under mpirun, a launcher inside another). Nothing for a port that some
/// other program holds.
std::optional<Join> otherRankZero(const DistEnv &env,
                                  std::chrono::milliseconds wait) {
  absl::StatusOr<std::unique_ptr<TcpStore>> client =
      TcpStore::open(env.masterAddr, env.masterPort, false, wait);
  if (!client.ok())
    return std::nullopt;
  const std::string key = absl::StrCat(env.storePrefix(), "/", joinKey(0));
  const auto deadline = Clock::now() + wait;
  try {
    while (!(*client)->check({key})) {
      if (Clock::now() >= deadline)
        return std::nullopt;
      std::this_thread::sleep_for(10 * kPollInterval);
    }
    return decode((*client)->get(key));
  } catch (const std::exception &) {
    return std::nullopt; // not a store of ours
  }
}

/// Waits for every join key, failing early on a world size other than ours.
absl::Status collectJoins(JobStore &store, const DistEnv &env,
                          std::vector<std::optional<Join>> &joins,
                          std::chrono::milliseconds timeout,
                          const WaitNotice &notice) {
  const auto deadline = Clock::now() + timeout;
  WaitNotices notices(notice);
  for (;;) {
    std::vector<int> missing;
    for (int r = 0; r < env.worldSize; ++r) {
      if (joins[r])
        continue;
      if (!store.check({joinKey(r)})) {
        missing.push_back(r);
        continue;
      }
      joins[r] = decode(store.get(joinKey(r)));
      if (!joins[r])
        return rendezvousError(absl::StrCat(
            "rendezvous failed on rank ", env.rank, ": the join key of rank ",
            r, " in ", store.where(),
            " is not Sinter's (another job on the same store and run id?)"));
      if (joins[r]->worldSize != env.worldSize)
        return rendezvousError(absl::StrCat(
            "world size mismatch: rank ", r, " claims world size ",
            joins[r]->worldSize, ", rank ", env.rank, " claims ", env.worldSize,
            " (every rank must be started with the same)",
            otherPlacement(env)));
    }
    if (missing.empty())
      return absl::OkStatus();
    std::string precedence = otherPlacement(env);
    if (Clock::now() >= deadline)
      return rendezvousError(absl::StrCat(
          "rendezvous timed out after ", formatSeconds(timeout), ": ",
          rankList(missing), " never joined (", store.where(), ", run '",
          env.storePrefix(), "')", precedence));
    notices.poll([&](std::chrono::milliseconds waited) {
      return absl::StrCat("rank ", env.rank, ": waited ", formatSeconds(waited),
                          " for ", rankList(missing), " to join (",
                          store.where(), ", run '", env.storePrefix(), "')",
                          precedence, "; gives up at ", formatSeconds(timeout));
    });
    std::this_thread::sleep_for(kPollInterval);
  }
}

/// Judges the joins once all are in: one process per rank, one fingerprint.
absl::Status judgeJoins(JobStore &store, const DistEnv &env, const Join &self,
                        const std::vector<std::optional<Join>> &joins) {
  std::optional<Join> mine = decode(store.get(joinKey(env.rank)));
  if (!mine || mine->nonce != self.nonce)
    return rendezvousError(absl::StrCat(
        "rank ", env.rank, " was claimed by two processes: ", self.host,
        " pid ", self.pid, " and ", mine ? mine->host : "?", " pid ",
        mine ? mine->pid : "?", otherPlacement(env)));
  std::vector<int> differ;
  for (int r = 1; r < env.worldSize; ++r)
    if (joins[r]->fingerprint != joins[0]->fingerprint)
      differ.push_back(r);
  if (differ.empty())
    return absl::OkStatus();
  return rendezvousError(absl::StrCat(
      "fingerprint of ", rankList(differ),
      " differs from rank 0's (rank 0: ", quoted(joins[0]->fingerprint),
      ", rank ", differ[0], ": ", quoted(joins[differ[0]]->fingerprint),
      "): every rank must run the same binary and program"));
}

} // namespace

std::string formatSeconds(std::chrono::milliseconds duration) {
  return absl::StrFormat("%g s", duration.count() / 1000.0);
}

std::chrono::milliseconds waitedFor(std::chrono::steady_clock::duration d) {
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(d);
  if (waited >= std::chrono::seconds(1))
    waited = std::chrono::duration_cast<std::chrono::seconds>(waited);
  return waited;
}

//===- JobStore -----------------------------------------------------------===//

JobStore::JobStore(std::shared_ptr<gloo::rendezvous::Store> backend,
                   CheckFn check, std::string prefix, std::string where)
    : backend_(std::move(backend)), check_(std::move(check)),
      prefix_(std::move(prefix)), where_(std::move(where)) {}

std::vector<std::string>
JobStore::prefixed(const std::vector<std::string> &keys) {
  std::vector<std::string> out;
  for (const std::string &key : keys)
    out.push_back(absl::StrCat(prefix_, "/", key));
  return out;
}

void JobStore::set(const std::string &key, const std::vector<char> &data) {
  backend_->set(absl::StrCat(prefix_, "/", key), data);
}

std::vector<char> JobStore::get(const std::string &key) {
  return backend_->get(absl::StrCat(prefix_, "/", key));
}

void JobStore::wait(const std::vector<std::string> &keys) {
  backend_->wait(prefixed(keys));
}

void JobStore::wait(const std::vector<std::string> &keys,
                    const std::chrono::milliseconds &timeout) {
  backend_->wait(prefixed(keys), timeout);
}

bool JobStore::check(const std::vector<std::string> &keys) {
  return check_(prefixed(keys));
}

std::unique_ptr<JobStore> JobStore::sub(const std::string &sub) const {
  return std::make_unique<JobStore>(backend_, check_,
                                    absl::StrCat(prefix_, "/", sub), where_);
}

//===- Opening and joining ------------------------------------------------===//

absl::StatusOr<std::unique_ptr<JobStore>>
openJobStore(const DistEnv &env, std::chrono::milliseconds timeout,
             const WaitNotice &notice) {
  if (!env.storeDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(env.storeDir, ec);
    if (ec)
      return rendezvousError(absl::StrCat("cannot create SINTER_STORE_DIR '",
                                          env.storeDir, "': ", ec.message()));
    std::shared_ptr<CheckableFileStore> files;
    try {
      files = std::make_shared<CheckableFileStore>(env.storeDir);
    } catch (const std::exception &e) {
      return rendezvousError(absl::StrCat("cannot use SINTER_STORE_DIR '",
                                          env.storeDir, "': ", e.what()));
    }
    auto check = [files](const std::vector<std::string> &keys) {
      return files->has(keys);
    };
    return std::make_unique<JobStore>(
        files, check, env.storePrefix(),
        absl::StrCat("the file store in ", env.storeDir));
  }
  const std::string where =
      absl::StrCat("the TCP store at ", env.masterAddr, ":", env.masterPort);
  WaitNotices notices(notice);
  auto retrying = [&](const std::string &why) {
    notices.poll([&](std::chrono::milliseconds waited) {
      return absl::StrCat("rank ", env.rank, ": waited ", formatSeconds(waited),
                          " for ", where, " (rank 0 serves it): ", why,
                          otherPlacement(env), "; gives up at ",
                          formatSeconds(timeout));
    });
  };
  absl::StatusOr<std::unique_ptr<TcpStore>> tcp = TcpStore::open(
      env.masterAddr, env.masterPort, env.rank == 0, timeout, retrying);
  if (!tcp.ok()) {
    std::optional<Join> other;
    if (env.rank == 0 &&
        absl::StrContains(tcp.status().message(), "Address already in use"))
      other = otherRankZero(env, std::min<std::chrono::milliseconds>(
                                     timeout, std::chrono::seconds(2)));
    if (other)
      return rendezvousError(absl::StrCat(
          "rank 0 was claimed by two processes: ", other->host, " pid ",
          other->pid, " serves the rendezvous store on port ", env.masterPort,
          " as rank 0 of run '", env.storePrefix(), "', and this one, ",
          hostName(), " pid ", getpid(),
          ", cannot (if that is another job, give each its own MASTER_PORT)",
          otherPlacement(env)));
    if (env.rank == 0)
      return makeError(
          SINTER_HERE, absl::StatusCode::kUnavailable,
          absl::StrCat("rank 0 cannot serve the rendezvous store on port ",
                       env.masterPort, " (set MASTER_PORT to a free port): ",
                       tcp.status().message(), otherPlacement(env)));
    return rendezvousError(
        absl::StrCat("rendezvous timed out after ", formatSeconds(timeout),
                     ": rank 0 never joined (", tcp.status().message(), ")",
                     otherPlacement(env)));
  }
  std::shared_ptr<TcpStore> shared(std::move(*tcp));
  auto check = [raw = shared.get()](const std::vector<std::string> &keys) {
    return raw->check(keys);
  };
  return std::make_unique<JobStore>(shared, check, env.storePrefix(), where);
}

absl::Status exchangeJoins(JobStore &store, const DistEnv &env,
                           const std::string &fingerprint,
                           std::chrono::milliseconds timeout,
                           const WaitNotice &notice) {
  Join self;
  self.worldSize = env.worldSize;
  self.host = hostName();
  self.pid = std::to_string(getpid());
  self.nonce =
      absl::StrFormat("%016x", std::random_device()() * 0x100000000ull +
                                   std::random_device()());
  self.fingerprint = fingerprint;

  try {
    store.set(joinKey(env.rank), encode(self));
  } catch (const std::exception &e) {
    std::string why = e.what();
    if (why.find("File already exists") != std::string::npos)
      return rendezvousError(absl::StrCat(
          store.where(), " already holds run '", env.storePrefix(),
          "' (an earlier run with the same run id): empty the directory or "
          "set SINTER_RUN_ID to a new id"));
    return makeError(SINTER_HERE, absl::StatusCode::kUnavailable,
                     absl::StrCat("rendezvous failed on rank ", env.rank, ": ",
                                  store.where(), ": ", why));
  }

  std::vector<std::optional<Join>> joins(env.worldSize);
  joins[env.rank] = self;
  absl::Status status;
  try {
    status = collectJoins(store, env, joins, timeout, notice);
    if (status.ok())
      status = judgeJoins(store, env, self, joins);
    store.set(checkedKey(env.rank), {'1'});
  } catch (const std::exception &e) {
    return makeError(SINTER_HERE, absl::StatusCode::kUnavailable,
                     absl::StrCat("rendezvous failed on rank ", env.rank, ": ",
                                  store.where(), ": ", e.what()));
  }
  if (status.ok() || env.rank != 0)
    return status;

  // Rank 0 keeps the store up until the others have judged too, so that
  // they report the same error instead of a store that went away.
  const auto deadline = Clock::now() + timeout;
  try {
    for (int r = 1; r < env.worldSize; ++r)
      while (joins[r] && !store.check({checkedKey(r)}) &&
             Clock::now() < deadline)
        std::this_thread::sleep_for(kPollInterval);
  } catch (const std::exception &) {
    // The store is only kept for the others' sake; the error is ours.
  }
  return status;
}

} // namespace sinter::comm
