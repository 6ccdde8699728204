//===- DeviceQueue.h - a program's steps as device stream work, checked ---===//
//
// A device executor (CudaExecutor.h) does not run steps one after another:
// it enqueues them on streams, compute on one and collectives on another,
// and orders the two with events. planDeviceQueue turns a step program into
// that queue work, once, for every device:
//
//   kernel, matmul, copy   on the compute stream, with the byte ranges each
//                          reads and writes (a kernel's from its step's
//                          buffer lists);
//   collective start       an event recorded on the compute stream after
//                          the bucket's last writer, the communication
//                          stream waiting for it, then the all-reduce there
//                          (the bucket read and written);
//   collective done        an event recorded on the communication stream,
//                          the compute stream waiting for it.
//
// checkDeviceQueue replays a plan on a model of a device with CUDA's
// ordering rules and reports the first race: two operations touching
// overlapping bytes, at least one writing, that nothing orders. The model
// keeps a vector clock per stream: operations on one stream are ordered; an
// event snapshots its stream's clock when recorded, and a stream that waits
// for it joins that snapshot; the end of a run joins every stream into the
// host, which every later operation inherits. So a kernel that reads a
// gradient before the event that orders its producer, or touches a bucket
// between its collective's start and done, is reported with both steps. The
// executor runs exactly the plan it checked (CudaExecutor::run), and
// `train --check-queue` checks a binary's own programs with no device.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_EXEC_DEVICEQUEUE_H
#define SINTER_RUNTIME_EXEC_DEVICEQUEUE_H

#include "runtime/Exec/StepProgram.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sinter::exec {

inline constexpr int kComputeStream = 0;
inline constexpr int kCommStream = 1;

/// Bytes [begin, end) of a slab that an operation reads or writes.
struct QueueAccess {
  abi::SlabKind slab = abi::Slab::arena;
  int64_t begin = 0, end = 0;
  bool write = false;
};

/// One operation on a stream. A compute step (kernel, matmul, copy: which
/// is the step's own kind) and a collective (which is the collective's
/// op) come from the program; events are the plan's.
struct QueueOp {
  enum Kind { kComputeStep, kRecordEvent, kWaitEvent, kCollective };
  Kind kind = kComputeStep;
  int stream = kComputeStream;
  int64_t step = 0; // the program step it comes from
  int event = -1;   // kRecord, kWait
  std::vector<QueueAccess> accesses;
};

struct QueuePlan {
  std::vector<QueueOp> ops;
  int numEvents = 0;
};

/// The queue work of one run of `program`. An error names a step whose
/// kernel has no buffer lists (a program compiled before they were
/// recorded) or a collective done before its start.
absl::StatusOr<QueuePlan> planDeviceQueue(const StepProgram &program);

/// Replays `plan` `runs` times (the end of each run synchronizing every
/// stream, as the executor does) and returns the first race, naming both
/// operations, their steps and the bytes; OK when there is none.
absl::Status checkDeviceQueue(const StepProgram &program, const QueuePlan &plan,
                              int runs = 2);

/// "step 12 (kernel 'k3_softmax', compute stream)", for messages.
std::string describeQueueOp(const StepProgram &program, const QueueOp &op);

} // namespace sinter::exec

#endif // SINTER_RUNTIME_EXEC_DEVICEQUEUE_H
