//===- DataParallel.cpp - one training step on every rank of a job --------===//

#include "runtime/Train/DataParallel.h"

#include "abi/HalfFloat.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <cstring>

using namespace sinter;
using namespace sinter::train;
namespace sabi = sinter::abi;

uint64_t sinter::train::checksum(const void *data, size_t bytes) {
  const auto *p = static_cast<const unsigned char *>(data);
  uint64_t h = 0xcbf29ce484222325ULL;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * 0x100000001b3ULL;
  }
  for (; i < bytes; ++i)
    h = (h ^ p[i]) * 0x100000001b3ULL;
  return h ^ bytes;
}

DataParallel::DataParallel(comm::DistEnv env,
                           const DataParallelOptions &options)
    : env(std::move(env)), options(options) {}

DataParallel::~DataParallel() {
  // The queue drains before the communicator it uses goes away.
  queue.reset();
  comm.reset();
}

absl::StatusOr<std::unique_ptr<DataParallel>>
DataParallel::create(const comm::DistEnv &env,
                     const DataParallelOptions &options) {
  std::unique_ptr<DataParallel> dp(new DataParallel(env, options));
  if (env.worldSize <= 1)
    return dp;
  comm::CommOptions co;
  co.timeout = options.timeout;
  co.fingerprint = options.fingerprint;
  co.hostname = comm::listenHostname(env);
  co.notice.tell = options.notice;
  SINTER_ASSIGN_OR_RETURN(dp->comm, comm::connect(env, co));
  dp->queue = std::make_unique<comm::CommQueue>(*dp->comm);
  return dp;
}

absl::Status
DataParallel::runNow(std::function<absl::Status(comm::Communicator &)> op) {
  if (!queue)
    return absl::OkStatus();
  comm::Communicator *c = comm.get();
  comm::CommQueue::Ticket t = queue->enqueue([c, op]() { return op(*c); });
  return queue->wait(t);
}

namespace {

/// "all-reduce of bucket 2 (12,327,936 bytes: transformer.wte.weight and 23
/// more)".
std::string describeBucket(const exec::Collective &c, int64_t bytes) {
  std::string what = absl::StrFormat("all-reduce of %s (%d bytes", c.name,
                                     bytes);
  if (!c.tensors.empty()) {
    absl::StrAppend(&what, ": ", c.tensors.front());
    if (c.tensors.size() > 1)
      absl::StrAppend(&what, " and ", c.tensors.size() - 1, " more");
  }
  return what + ")";
}

} // namespace

std::string DataParallel::describe(const exec::Collective &collective,
                                   int64_t bytes) const {
  return absl::StrCat(describeBucket(collective, bytes), " at step ",
                      currentStep.load() + 1);
}

absl::Status DataParallel::start(int64_t index,
                                 const exec::Collective &collective,
                                 void *data, int64_t count, abi::DType type) {
  using Skip = DataParallelOptions::Skip;
  if (!queue || options.skipAllReduce == Skip::always ||
      (options.skipAllReduce == Skip::evenSteps &&
       (currentStep.load() + 1) % 2 == 0))
    return absl::OkStatus();
  if (collective.op != sabi::Collective::all_reduce ||
      (collective.reduction != sabi::Collective::sum &&
       collective.reduction != sabi::Collective::mean) ||
      (type != sabi::ElementType::f32 && type != sabi::ElementType::f64))
    return sinter::UnimplementedError(
        SINTER_HERE,
        absl::StrFormat("%s: only sum and mean all-reduces of f32 or f64 "
                        "buffers run across ranks",
                        collective.name));
  int64_t elementBytes = type == sabi::ElementType::f32 ? 4 : 8;
  std::string what = describe(collective, count * elementBytes);
  bool mean = collective.reduction == sabi::Collective::mean;
  double inverse = 1.0 / env.worldSize;
  uint32_t t = nextTag();
  comm::Communicator *c = comm.get();
  if (collective.commType && type == sabi::ElementType::f32) {
    // Half the bytes: rounded on the communication thread, summed in the
    // half type, widened back (with the mean's division).
    std::vector<uint16_t> &wire = wireBuffers[index];
    wire.resize(static_cast<size_t>(count));
    bool bf16 = *collective.commType == sabi::ElementType::bf16;
    inFlight[index] = queue->enqueue([=, &wire]() -> absl::Status {
      auto *p = static_cast<float *>(data);
      for (int64_t i = 0; i < count; ++i)
        wire[i] = bf16 ? half::floatToBf16Bits(p[i]) : half::floatToF16Bits(p[i]);
      absl::Status s = c->allReduceSum(
          wire.data(), wire.size(),
          bf16 ? comm::Communicator::Half::bf16 : comm::Communicator::Half::f16,
          t, what + (bf16 ? " in bf16" : " in f16"));
      if (!s.ok())
        return s;
      float by = mean ? static_cast<float>(inverse) : 1.0f;
      for (int64_t i = 0; i < count; ++i)
        p[i] = (bf16 ? half::bf16BitsToFloat(wire[i])
                     : half::f16BitsToFloat(wire[i])) *
               by;
      return s;
    });
    return absl::OkStatus();
  }
  inFlight[index] = queue->enqueue([=]() -> absl::Status {
    absl::Status s;
    // The mean's division rides along with the sum (one pass fewer over
    // the bucket where the transport passes through memory anyway).
    const double by = mean ? inverse : 1.0;
    if (type == sabi::ElementType::f32)
      s = c->allReduceScaledSum(static_cast<float *>(data),
                                static_cast<size_t>(count), by, t, what);
    else
      s = c->allReduceScaledSum(static_cast<double *>(data),
                                static_cast<size_t>(count), by, t, what);
    return s;
  });
  return absl::OkStatus();
}

absl::Status DataParallel::shareHostMemory(void *base, size_t bytes) {
  // With the all-reduces skipped (a benchmark's floor) nothing is shared,
  // so that the floor's buckets are ordinary memory like the rest.
  if (!queue || options.skipAllReduce == DataParallelOptions::Skip::always)
    return absl::OkStatus();
  return runNow([=](comm::Communicator &c) {
    return c.shareMemory(base, bytes, "sharing the gradient buckets' memory");
  });
}

absl::Status DataParallel::done(int64_t index,
                                const exec::Collective &collective) {
  auto it = inFlight.find(index);
  if (it == inFlight.end())
    return absl::OkStatus();
  comm::CommQueue::Ticket t = it->second;
  inFlight.erase(it);
  return queue->wait(t);
}

absl::Status DataParallel::sumOverRanks(std::vector<double> &values,
                                        std::string_view what) {
  if (!queue || values.empty())
    return absl::OkStatus();
  uint32_t t = nextTag();
  std::string label = absl::StrCat(std::string(what), " at step ", currentStep.load() + 1);
  double *p = values.data();
  size_t n = values.size();
  return runNow(
      [=](comm::Communicator &c) { return c.allReduceSum(p, n, t, label); });
}

absl::Status DataParallel::averageOverRanks(std::vector<double> &values,
                                            std::string_view what) {
  SINTER_RETURN_IF_ERROR(sumOverRanks(values, what));
  if (queue)
    for (double &v : values)
      v /= env.worldSize;
  return absl::OkStatus();
}

absl::Status DataParallel::broadcast(void *data, size_t bytes,
                                     std::string_view what) {
  uint32_t t = nextTag();
  std::string label(what);
  return runNow([=](comm::Communicator &c) {
    return c.broadcast(data, bytes, 0, t, label);
  });
}

absl::Status DataParallel::barrier(std::string_view what) {
  uint32_t t = nextTag();
  std::string label(what);
  return runNow([=](comm::Communicator &c) { return c.barrier(t, label); });
}

namespace {

std::vector<const exec::Argument *> stateArguments(const exec::Executor &ex) {
  std::vector<const exec::Argument *> out;
  for (const exec::Argument &a : ex.program().arguments)
    if (a.kind == sabi::Argument::param || a.kind == sabi::Argument::opt_state)
      out.push_back(&a);
  return out;
}

} // namespace

absl::Status DataParallel::broadcastState(exec::Executor &ex) {
  if (!queue)
    return absl::OkStatus();
  std::vector<unsigned char> bytes;
  for (const exec::Argument *a : stateArguments(ex)) {
    const exec::Buffer &b = ex.program().buffers[a->buffer];
    bytes.resize(static_cast<size_t>(b.bytes));
    SINTER_RETURN_IF_ERROR(ex.download(a->buffer, bytes.data(), bytes.size()));
    SINTER_RETURN_IF_ERROR(
        broadcast(bytes.data(), bytes.size(),
                  absl::StrCat("broadcast of rank 0's ", a->name)));
    SINTER_RETURN_IF_ERROR(ex.upload(a->buffer, bytes.data(), bytes.size()));
  }
  return absl::OkStatus();
}

absl::Status DataParallel::checkStateEqual(const exec::Executor &ex,
                                           std::string_view when) {
  if (!queue)
    return absl::OkStatus();
  std::vector<const exec::Argument *> state = stateArguments(ex);
  std::vector<uint64_t> mine;
  std::vector<unsigned char> bytes;
  for (const exec::Argument *a : state) {
    const exec::Buffer &b = ex.program().buffers[a->buffer];
    bytes.resize(static_cast<size_t>(b.bytes));
    SINTER_RETURN_IF_ERROR(ex.download(a->buffer, bytes.data(), bytes.size()));
    mine.push_back(checksum(bytes.data(), bytes.size()));
  }
  std::vector<uint64_t> all(mine.size() * env.worldSize);
  uint32_t t = nextTag();
  std::string label = absl::StrCat("parameter check ", std::string(when));
  size_t n = mine.size() * sizeof(uint64_t);
  SINTER_RETURN_IF_ERROR(runNow([&](comm::Communicator &c) {
    return c.allGather(mine.data(), n, all.data(), t, label);
  }));
  for (size_t k = 0; k < state.size(); ++k) {
    std::vector<std::string> differ;
    for (int r = 1; r < env.worldSize; ++r)
      if (all[r * state.size() + k] != all[k])
        differ.push_back(absl::StrCat(r));
    if (!differ.empty())
      return sinter::DataLossError(
          SINTER_HERE,
          absl::StrFormat(
              "ranks drifted apart %s: '%s' on rank%s %s differs from rank "
              "0's (the ranks no longer train one model: a collective was "
              "skipped, the binaries differ, or memory was corrupted)",
              when, state[k]->name, differ.size() > 1 ? "s" : "",
              absl::StrJoin(differ, ", ")));
  }
  return absl::OkStatus();
}

absl::Status DataParallel::checkDistinctData(
    const std::vector<std::vector<unsigned char>> &batch) {
  if (!queue)
    return absl::OkStatus();
  uint64_t mine = 0x9e3779b97f4a7c15ULL;
  for (const std::vector<unsigned char> &input : batch)
    mine = (mine ^ checksum(input.data(), input.size())) * 0x100000001b3ULL;
  std::vector<uint64_t> all(env.worldSize);
  uint32_t t = nextTag();
  SINTER_RETURN_IF_ERROR(runNow([&](comm::Communicator &c) {
    return c.allGather(&mine, sizeof mine, all.data(), t,
                       "check of the first batch");
  }));
  for (int a = 0; a < env.worldSize; ++a)
    for (int b = a + 1; b < env.worldSize; ++b)
      if (all[a] == all[b])
        return sinter::FailedPreconditionError(
            SINTER_HERE,
            absl::StrFormat(
                "ranks %d and %d read the same first batch: every rank would "
                "train on the same data (is each rank given its RANK, and "
                "the same --data?)",
                a, b));
  return absl::OkStatus();
}
