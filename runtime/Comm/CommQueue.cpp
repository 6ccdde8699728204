//===- CommQueue.cpp - collectives in order on a background thread --------===//

#include "runtime/Comm/CommQueue.h"

#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"

namespace sinter::comm {

CommQueue::CommQueue(Communicator &comm)
    : comm_(comm), thread_([this] { work(); }) {}

CommQueue::~CommQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

CommQueue::Ticket CommQueue::enqueue(std::function<absl::Status()> op) {
  std::lock_guard<std::mutex> lock(mu_);
  Ticket ticket = next_++;
  if (failed_ != 0) {
    // Never runs: the queue stopped at its first error.
    done_ = ticket;
    return ticket;
  }
  pending_.emplace_back(ticket, std::move(op));
  changed_.notify_all();
  return ticket;
}

absl::Status CommQueue::wait(Ticket t) {
  std::unique_lock<std::mutex> lock(mu_);
  if (t == 0 || t >= next_)
    return InvalidArgumentError(
        SINTER_HERE, absl::StrCat("CommQueue: no operation has ticket ", t,
                                  " (", next_ - 1, " enqueued)"));
  changed_.wait(lock, [&] { return done_ >= t || failed_ != 0; });
  if (failed_ != 0 && t >= failed_)
    return error_;
  // failed_ == 0 or t < failed_: with failed_ set, every earlier ticket has
  // run, since they run in order.
  return absl::OkStatus();
}

void CommQueue::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty())
      return; // stopping, and drained
    auto [ticket, op] = std::move(pending_.front());
    pending_.pop_front();
    lock.unlock();
    absl::Status status;
    try {
      status = op();
    } catch (const std::exception &e) {
      status = InternalError(SINTER_HERE,
                             absl::StrCat("communication operation ", ticket,
                                          " threw: ", e.what()));
    }
    op = nullptr; // release what it captured outside the lock
    lock.lock();
    done_ = ticket;
    if (!status.ok()) {
      failed_ = ticket;
      error_ = status;
      // Nothing more runs; the dropped tickets fail in wait().
      done_ = next_ - 1;
      pending_.clear();
    }
    changed_.notify_all();
  }
}

} // namespace sinter::comm
