//===- Rendezvous.h - how the ranks of a job find and check each other ----===//
//
// The first half of connect() (Communicator.h), apart so that it reads as
// one protocol. Every rank, under the job's key prefix:
//
//   join/<rank>     its world size, process (host, pid, a nonce), fingerprint
//   checked/<rank>  once it has read every join key and judged them
//
// and then Gloo's own keys (under "gloo/"). A rank waits for all join keys,
// naming the missing ranks at the timeout; a join key that claims another
// world size fails at once. Rank 0, before it returns an error, waits
// (bounded) for every checked key, so that its TCP store outlives the other
// ranks' reads and they see the same error rather than a lost store.
//
// Internal to runtime/Comm.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_COMM_RENDEZVOUS_H
#define SINTER_RUNTIME_COMM_RENDEZVOUS_H

#include "runtime/Comm/Communicator.h"
#include "runtime/Comm/DistEnv.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "gloo/rendezvous/store.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sinter::comm {

/// A store for one job: every key under a prefix, and check() (which Gloo's
/// Store lacks) so that waiting can say which keys are missing.
class JobStore : public gloo::rendezvous::Store {
public:
  using CheckFn = std::function<bool(const std::vector<std::string> &)>;
  JobStore(std::shared_ptr<gloo::rendezvous::Store> backend, CheckFn check,
           std::string prefix, std::string where);

  void set(const std::string &key, const std::vector<char> &data) override;
  std::vector<char> get(const std::string &key) override;
  void wait(const std::vector<std::string> &keys) override;
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override;
  bool check(const std::vector<std::string> &keys);

  /// "the TCP store at host:port" or "the file store in DIR".
  const std::string &where() const { return where_; }
  /// The same store under prefix/sub.
  std::unique_ptr<JobStore> sub(const std::string &sub) const;

private:
  std::vector<std::string> prefixed(const std::vector<std::string> &keys);

  std::shared_ptr<gloo::rendezvous::Store> backend_;
  CheckFn check_;
  std::string prefix_, where_;
};

/// The store env names (TCP, or files when storeDir is set), opened: rank 0
/// serves the TCP one, the others connect within the timeout, telling
/// `notice` when the store has been out of reach for a while.
absl::StatusOr<std::unique_ptr<JobStore>>
openJobStore(const DistEnv &env, std::chrono::milliseconds timeout,
             const WaitNotice &notice = {});

/// Publishes this rank's join key and checks everyone's, as the file comment
/// says, telling `notice` which ranks it still waits for when the
/// wait is long. Errors are FailedPrecondition, one line naming ranks.
absl::Status exchangeJoins(JobStore &store, const DistEnv &env,
                           const std::string &fingerprint,
                           std::chrono::milliseconds timeout,
                           const WaitNotice &notice = {});

/// "30 s", "1.5 s".
std::string formatSeconds(std::chrono::milliseconds duration);

/// A wait's length as the notices say it: in milliseconds under a second,
/// in whole seconds from one on ("waited 0.2 s", "waited 10 s").
std::chrono::milliseconds waitedFor(std::chrono::steady_clock::duration d);

} // namespace sinter::comm

#endif // SINTER_RUNTIME_COMM_RENDEZVOUS_H
