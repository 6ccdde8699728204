//===- CommQueue.h - collectives in order on a background thread ----------===//
//
// Gloo has no asynchronous collectives: gloo::allreduce blocks its caller.
// Overlapping communication with compute (all-reducing one gradient bucket
// while backward computes the next) therefore needs a thread of its own,
// as in PyTorch's ProcessGroupGloo. A CommQueue is that thread: operations
// are enqueued from the training thread, run one at a time in enqueue
// order, and waited for by ticket.
//
// The order is the contract that keeps ranks in step: every rank must
// enqueue the same collectives in the same order. Errors are sticky, as
// the Gloo context under them is: after the first failed operation,
// nothing more runs, and every later ticket's wait() returns that same
// error at once (earlier tickets still return OK, since they ran).
//
// An operation is any callable returning a Status; it usually calls the
// communicator the queue was made for, and must not call wait() itself.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_COMM_COMMQUEUE_H
#define SINTER_RUNTIME_COMM_COMMQUEUE_H

#include "runtime/Comm/Communicator.h"

#include "absl/status/status.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace sinter::comm {

class CommQueue {
public:
  explicit CommQueue(Communicator &comm);
  /// Runs what is still queued (unless an error stopped the queue), then
  /// joins the thread.
  ~CommQueue();
  CommQueue(const CommQueue &) = delete;
  CommQueue &operator=(const CommQueue &) = delete;

  using Ticket = uint64_t;
  /// Queues op; tickets count up from 1.
  Ticket enqueue(std::function<absl::Status()> op);
  /// Blocks until op t has run and returns its status (or the queue's
  /// first error, for t at or after the failed one). InvalidArgument for a
  /// ticket this queue never gave.
  absl::Status wait(Ticket t);

  Communicator &communicator() { return comm_; }

private:
  void work();

  Communicator &comm_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::pair<Ticket, std::function<absl::Status()>>> pending_;
  Ticket next_ = 1;   // the ticket enqueue() gives next
  Ticket done_ = 0;   // every ticket <= done_ has run (or been dropped)
  Ticket failed_ = 0; // the first ticket that failed, 0 if none
  absl::Status error_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace sinter::comm

#endif // SINTER_RUNTIME_COMM_COMMQUEUE_H
