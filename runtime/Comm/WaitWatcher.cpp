//===- WaitWatcher.cpp - says so while a collective waits long ------------===//

#include "runtime/Comm/WaitWatcher.h"

#include "runtime/Comm/Rendezvous.h"

namespace sinter::comm {

WaitWatcher::WaitWatcher(WaitNotice notice, LineFn line)
    : notice_(std::move(notice)), line_(std::move(line)),
      thread_([this] { watch(); }) {}

WaitWatcher::~WaitWatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

WaitWatcher::Scope::Scope(WaitWatcher *watcher, std::string_view what)
    : watcher_(watcher) {
  if (!watcher_)
    return;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(watcher_->mu_);
    if (watcher_->depth_++ > 0)
      return;
    watcher_->what_ = std::string(what);
    watcher_->start_ = Clock::now();
    watcher_->due_ = watcher_->start_ + watcher_->notice_.after;
    ++watcher_->serial_;
    wake = watcher_->idle_;
  }
  // Only a watcher with nothing to time needs waking: one already timing
  // an earlier collective looks again when that one was due.
  if (wake)
    watcher_->changed_.notify_all();
}

WaitWatcher::Scope::~Scope() {
  if (!watcher_)
    return;
  std::lock_guard<std::mutex> lock(watcher_->mu_);
  --watcher_->depth_;
}

void WaitWatcher::watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (depth_ == 0) {
      idle_ = true;
      changed_.wait(lock, [&] { return stop_ || depth_ > 0; });
      idle_ = false;
      continue;
    }
    const uint64_t serial = serial_;
    if (changed_.wait_until(lock, due_, [&] { return stop_; }) ||
        depth_ == 0 || serial_ != serial)
      continue;
    const auto now = Clock::now();
    due_ = now + notice_.every;
    std::string line = line_(what_, waitedFor(now - start_));
    // Told outside the lock: a collective that begins or ends meanwhile
    // never waits for the line to be written.
    lock.unlock();
    notice_.tell(line);
    lock.lock();
  }
}

} // namespace sinter::comm
