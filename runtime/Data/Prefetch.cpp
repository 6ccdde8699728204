//===- Prefetch.cpp - the next training batch on a background thread
//-------===//
//
// prefetching() wraps a loader so that copying windows or examples out of
// the files (page faults on memory-mapped shards included) overlaps with the
// step that uses the previous batch. One worker thread owns the wrapped
// loader while a batch is in flight and is idle otherwise:
//
//   nextTrain   waits for the batch in flight, copies it to the caller and
//               starts the next one (at construction the first is started);
//   state(), epoch()
//               while a batch is in flight, the wrapped loader's values from
//               just before it was started: the position of the batch the
//               caller gets next;
//   restore, evalBatch
//               wait for the batch in flight, then call the wrapped loader;
//               a successful restore discards the prepared batch and starts
//               one at the new position (a rejected state changes nothing,
//               as the wrapped loader must guarantee).
//
// A failed background batch is handed to the nextTrain call that consumes
// it; nothing new is started then, so the next call tries the same batch
// again on the caller's schedule, as the plain loader would (ItemLoader does
// not move its position on an error).
//
//===----------------------------------------------------------------------===//

#include "runtime/Data/DataLoader.h"

#include "runtime/Data/Batching.h"
#include "runtime/Support/Status.h"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

namespace sinter::data {

namespace {

class PrefetchingLoader final : public DataLoader {
public:
  PrefetchingLoader(std::unique_ptr<DataLoader> inner,
                    std::vector<InputSpec> inputs,
                    std::vector<std::vector<unsigned char>> buffers)
      : inner(std::move(inner)), inputs(std::move(inputs)),
        buffers(std::move(buffers)),
        // Fixed at open, so cached rather than read under the lock.
        evalBatches(this->inner->numEvalBatches()),
        batchesPerEpoch(this->inner->trainBatchesPerEpoch()),
        description(this->inner->describe()) {
    for (std::vector<unsigned char> &buffer : this->buffers)
      pointers.push_back(buffer.data());
    worker = std::thread([this] { run(); });
    std::lock_guard<std::mutex> lock(mu);
    startLocked();
  }

  ~PrefetchingLoader() override {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    changed.notify_all();
    worker.join();
  }

  absl::Status nextTrain(const std::vector<void *> &dst) override {
    SINTER_RETURN_IF_ERROR(checkDestinations(dst, inputs));
    std::unique_lock<std::mutex> lock(mu);
    if (!requested)
      startLocked(); // the last batch failed: try it again
    waitLocked(lock);
    requested = false;
    if (!result.ok())
      return result;
    for (size_t i = 0; i < buffers.size(); ++i)
      std::memcpy(dst[i], buffers[i].data(), buffers[i].size());
    startLocked();
    return absl::OkStatus();
  }

  int64_t numEvalBatches() const override { return evalBatches; }

  absl::Status evalBatch(int64_t i, const std::vector<void *> &dst) override {
    std::unique_lock<std::mutex> lock(mu);
    waitLocked(lock); // the prepared batch stays prepared
    return inner->evalBatch(i, dst);
  }

  std::string state() const override {
    std::lock_guard<std::mutex> lock(mu);
    return requested ? stateBefore : inner->state();
  }

  absl::Status restore(std::string_view state) override {
    std::unique_lock<std::mutex> lock(mu);
    waitLocked(lock);
    // A rejected state leaves the wrapped loader where it was (one batch
    // past the prepared one), so the prepared batch stays valid.
    SINTER_RETURN_IF_ERROR(inner->restore(state));
    requested = false;
    startLocked();
    return absl::OkStatus();
  }

  int64_t epoch() const override {
    std::lock_guard<std::mutex> lock(mu);
    return requested ? epochBefore : inner->epoch();
  }

  int64_t trainBatchesPerEpoch() const override { return batchesPerEpoch; }

  std::string describe() const override { return description; }
  /// Reads only what open() fixed, as describeTrainRow.
  bool mayHold(size_t input, int64_t value) const override {
    return inner->mayHold(input, value);
  }

  std::string describeTrainRow(std::string_view state,
                               int64_t row) const override {
    return inner->describeTrainRow(state, row);
  }

private:
  /// Records where the wrapped loader stands and hands it to the worker.
  /// Requires that no batch is in flight.
  void startLocked() {
    stateBefore = inner->state();
    epochBefore = inner->epoch();
    requested = true;
    done = false;
    changed.notify_all();
  }

  /// Waits until the batch in flight (if any) is done.
  void waitLocked(std::unique_lock<std::mutex> &lock) {
    changed.wait(lock, [&] { return !requested || done; });
  }

  void run() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      changed.wait(lock, [&] { return stop || (requested && !done); });
      if (stop)
        return;
      lock.unlock();
      absl::Status status = inner->nextTrain(pointers);
      lock.lock();
      result = std::move(status);
      done = true;
      changed.notify_all();
    }
  }

  std::unique_ptr<DataLoader> inner;
  std::vector<InputSpec> inputs;
  /// The batch being prepared, one buffer per input.
  std::vector<std::vector<unsigned char>> buffers;
  std::vector<void *> pointers;
  const int64_t evalBatches, batchesPerEpoch;
  const std::string description;

  mutable std::mutex mu;
  std::condition_variable changed;
  // requested: a batch was started and not yet consumed; done: the worker
  // finished it, with `result`. stateBefore/epochBefore: the wrapped
  // loader's position when it was started.
  bool requested = false, done = false, stop = false;
  absl::Status result;
  std::string stateBefore;
  int64_t epochBefore = 0;
  std::thread worker;
};

} // namespace

absl::StatusOr<std::unique_ptr<DataLoader>>
prefetching(std::unique_ptr<DataLoader> loader,
            const std::vector<InputSpec> &inputs) {
  if (!loader)
    return sinter::InvalidArgumentError(SINTER_HERE,
                                        "prefetching: the loader is null");
  SINTER_RETURN_IF_ERROR(checkInputs("prefetching", inputs));
  std::vector<std::vector<unsigned char>> buffers;
  for (const InputSpec &input : inputs)
    buffers.emplace_back(
        static_cast<size_t>(*formats::numBytes(input.dtype, input.shape)));
  return std::unique_ptr<DataLoader>(std::make_unique<PrefetchingLoader>(
      std::move(loader), inputs, std::move(buffers)));
}

} // namespace sinter::data
