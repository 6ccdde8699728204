// The device queue plan and its checker (runtime/Exec/DeviceQueue.h): a
// program with one bucketed all-reduce is clean as planned, and each
// missing event, and a kernel that touches the bucket while it is being
// reduced, is reported as a race naming both steps.

#include "runtime/Exec/DeviceQueue.h"

#include <gtest/gtest.h>

namespace {

using namespace sinter::exec;
namespace sabi = sinter::abi;

Buffer buffer(int64_t id, int64_t offset, int64_t bytes) {
  Buffer b;
  b.id = id;
  b.slab = sabi::Slab::arena;
  b.offset = offset;
  b.bytes = bytes;
  b.numElements = bytes / 4;
  b.shape = {bytes / 4};
  return b;
}

Step kernel(int64_t k, std::vector<int64_t> in, std::vector<int64_t> out) {
  Step s;
  s.kind = sabi::Step::kKernel;
  s.kernel = k;
  s.inputs = std::move(in);
  s.outputs = std::move(out);
  return s;
}

Step collective(sabi::Step::OpCase kind) {
  Step s;
  s.kind = kind;
  s.collective = 0;
  return s;
}

/// grad (bytes [0, 64)) written by the backward kernel, all-reduced while
/// an unrelated kernel runs, then read by the optimizer.
StepProgram program(bool touchBucketWhileReducing = false) {
  StepProgram p;
  p.buffers = {buffer(0, 0, 64), buffer(1, 64, 64), buffer(2, 128, 64)};
  for (const char *name : {"backward", "other", "adamw"}) {
    Kernel k;
    k.name = name;
    p.kernels.push_back(k);
  }
  Collective c;
  c.buffer = 0;
  c.name = "bucket 0";
  p.collectives.push_back(c);
  p.steps = {kernel(0, {1}, {0}), collective(sabi::Step::kStart),
             touchBucketWhileReducing ? kernel(1, {1}, {0})
                                      : kernel(1, {1}, {2}),
             collective(sabi::Step::kDone), kernel(2, {0}, {2})};
  return p;
}

/// `plan` without the first wait on `stream`.
QueuePlan withoutWait(QueuePlan plan, int stream) {
  for (auto it = plan.ops.begin(); it != plan.ops.end(); ++it)
    if (it->kind == QueueOp::kWaitEvent && it->stream == stream) {
      plan.ops.erase(it);
      break;
    }
  return plan;
}

TEST(DeviceQueue, PlannedEventsOrderTheCollective) {
  StepProgram p = program();
  auto plan = planDeviceQueue(p);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->numEvents, 2);
  // kernel, record, wait, all-reduce, kernel, record, wait, kernel.
  ASSERT_EQ(plan->ops.size(), 8u);
  EXPECT_EQ(plan->ops[3].kind, QueueOp::kCollective);
  EXPECT_EQ(plan->ops[3].stream, kCommStream);
  EXPECT_TRUE(checkDeviceQueue(p, *plan).ok());
}

TEST(DeviceQueue, AllReduceBeforeItsProducerIsARace) {
  StepProgram p = program();
  auto plan = planDeviceQueue(p);
  ASSERT_TRUE(plan.ok());
  absl::Status st = checkDeviceQueue(p, withoutWait(*plan, kCommStream));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "device queue race: step 1 (all-reduce 'bucket 0', communication "
            "stream) reads arena[0, 64), which step 0 (kernel 'backward', "
            "compute stream) writes, and no event orders them");
}

TEST(DeviceQueue, ReaderBeforeTheCollectiveIsDoneIsARace) {
  StepProgram p = program();
  auto plan = planDeviceQueue(p);
  ASSERT_TRUE(plan.ok());
  QueuePlan broken = *plan;
  // Drop the compute stream's wait after the done (the second wait).
  int waits = 0;
  for (auto it = broken.ops.begin(); it != broken.ops.end(); ++it)
    if (it->kind == QueueOp::kWaitEvent && ++waits == 2) {
      broken.ops.erase(it);
      break;
    }
  absl::Status st = checkDeviceQueue(p, broken);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("step 4 (kernel 'adamw', compute stream) reads "
                              "arena[0, 64), which step 1 (all-reduce"),
            std::string::npos)
      << st;
}

TEST(DeviceQueue, TouchingTheBucketBetweenStartAndDoneIsARace) {
  StepProgram p = program(/*touchBucketWhileReducing=*/true);
  auto plan = planDeviceQueue(p);
  ASSERT_TRUE(plan.ok());
  absl::Status st = checkDeviceQueue(p, *plan);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("step 2 (kernel 'other', compute stream) "
                              "writes arena[0, 64)"),
            std::string::npos)
      << st;
}

TEST(DeviceQueue, KernelWithoutBufferListsCannotBePlanned) {
  StepProgram p = program();
  p.steps[0].inputs.clear();
  p.steps[0].outputs.clear();
  auto plan = planDeviceQueue(p);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("kernel 'backward' has no buffer "
                                         "lists"),
            std::string::npos);
}

TEST(DeviceQueue, DoneBeforeStartIsAnError) {
  StepProgram p = program();
  std::swap(p.steps[1], p.steps[3]);
  EXPECT_FALSE(planDeviceQueue(p).ok());
}

} // namespace
