//===- WaitWatcher.h - says so while a collective waits long --------------===//
//
// A collective blocks its thread (in Gloo, or in a shared-memory barrier)
// until every rank has come or the timeout ends it; with one rank stalled,
// the others would sit silent for the whole timeout. A WaitWatcher is a
// thread that tells a WaitNotice about the collective under way once it
// has waited notice.after, then every notice.every, until it ends.
//
// Collectives mark themselves with a Scope; scopes nest (an all-reduce over
// several hosts runs Gloo's collectives inside the shared-memory one), and
// the outermost is the one told about. Scopes that begin and end between
// the watcher's looks do not wake it: it looks when the collective it last
// saw was due, at whichever is under way then, so a training loop wakes it
// about once per notice.after, not once per collective.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_COMM_WAITWATCHER_H
#define SINTER_RUNTIME_COMM_WAITWATCHER_H

#include "runtime/Comm/Communicator.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace sinter::comm {

class WaitWatcher {
public:
  /// line(what, waited): the notice for collective `what`, under way for
  /// `waited` (rounded as waitedFor() rounds). Called on the watcher's
  /// thread, while `what` is still under way.
  using LineFn = std::function<std::string(const std::string &what,
                                           std::chrono::milliseconds waited)>;

  /// Starts the thread; notice.tell must be set.
  WaitWatcher(WaitNotice notice, LineFn line);
  /// Stops and joins the thread.
  ~WaitWatcher();
  WaitWatcher(const WaitWatcher &) = delete;
  WaitWatcher &operator=(const WaitWatcher &) = delete;

  /// A collective under way, from construction to destruction; a null
  /// watcher watches nothing.
  class Scope {
  public:
    Scope(WaitWatcher *watcher, std::string_view what);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    WaitWatcher *watcher_;
  };

private:
  using Clock = std::chrono::steady_clock;
  void watch();

  const WaitNotice notice_;
  const LineFn line_;
  std::mutex mu_;
  std::condition_variable changed_;
  int depth_ = 0;       // scopes open
  uint64_t serial_ = 0; // outermost scopes begun
  std::string what_;
  Clock::time_point start_, due_;
  bool stop_ = false, idle_ = false;
  std::thread thread_; // last: started after the members it reads
};

} // namespace sinter::comm

#endif // SINTER_RUNTIME_COMM_WAITWATCHER_H
