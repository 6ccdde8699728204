//===- NumericsTest.cpp - runtime/Exec/Numerics ---------------------------===//
//
// Scans of every float type, and findFault's walk from the first NaN back
// to the step that made it: through the buffers steps share, past views,
// to an argument that held it already, past a masked attention's -inf
// that reaches no result, and to the member of a merged launch.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/Numerics.h"

#include "abi/HalfFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace sinter;
using namespace sinter::exec;
namespace sabi = sinter::abi;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// A program of `n` arena buffers of 4 f32 each, at consecutive offsets,
/// buffer 0 an input argument "x" and the last a metric "loss".
StepProgram program(int n) {
  StepProgram p;
  p.function = "train_step";
  for (int i = 0; i < n; ++i) {
    Buffer b;
    b.id = i;
    b.slab = i == 0 ? sabi::Slab::io : sabi::Slab::arena;
    b.offset = 64 * i;
    b.shape = {4};
    b.bytes = 16;
    b.numElements = 4;
    p.buffers.push_back(b);
  }
  p.arguments.push_back({"x", sabi::Argument::input, 0});
  p.results.push_back({"loss", sabi::Result::metric, n - 1});
  return p;
}

/// A kernel step reading `in` and writing `out`, computing `op` of layer
/// "l<step>".
void kernel(StepProgram &p, std::vector<int64_t> in, std::vector<int64_t> out,
            std::string op) {
  Step s;
  s.kind = sabi::Step::kKernel;
  s.kernel = static_cast<int64_t>(p.kernels.size());
  s.inputs = std::move(in);
  s.outputs = std::move(out);
  s.origins.push_back({std::move(op), "l" + std::to_string(p.steps.size()),
                       "m.pbtxt", int64_t(p.steps.size()) + 1, 1});
  p.kernels.push_back({"k" + std::to_string(p.steps.size())});
  p.steps.push_back(s);
}

BufferScan scan(int64_t buffer, int64_t nan, int64_t posInf, int64_t negInf) {
  BufferScan s;
  s.buffer = buffer;
  s.nan = nan;
  s.posInf = posInf;
  s.negInf = negInf;
  s.elements = 4;
  s.firstBad = nan + posInf + negInf ? 0 : -1;
  return s;
}

TEST(Numerics, ScansEveryFloatType) {
  StepProgram p = program(1);
  float f32[4] = {1, -2, NAN, INFINITY};
  BufferScan s;
  ASSERT_TRUE(scanBuffer(p, 0, f32, s));
  EXPECT_EQ(s.nan, 1);
  EXPECT_EQ(s.posInf, 1);
  EXPECT_EQ(s.firstBad, 2);
  EXPECT_EQ(s.min, -2);
  EXPECT_EQ(s.max, 1);
  p.buffers[0].type = sabi::ElementType::bf16;
  p.buffers[0].bytes = 8;
  uint16_t bf16[4] = {half::floatToBf16Bits(3), half::floatToBf16Bits(-kInf),
                      half::floatToBf16Bits(0), half::floatToBf16Bits(0.5)};
  ASSERT_TRUE(scanBuffer(p, 0, bf16, s));
  EXPECT_EQ(s.negInf, 1);
  EXPECT_EQ(s.firstBad, 1);
  EXPECT_EQ(s.max, 3);
  p.buffers[0].type = sabi::ElementType::f16;
  uint16_t f16[4] = {0x7e00, 0, 0, 0}; // NaN
  ASSERT_TRUE(scanBuffer(p, 0, f16, s));
  EXPECT_EQ(s.nan, 1);
  p.buffers[0].type = sabi::ElementType::i64;
  EXPECT_FALSE(scanBuffer(p, 0, f16, s));
}

// exp overflows in step 0 (finite inputs); step 1 turns the infinity into
// NaN; step 2 carries it into the loss. The origin is step 0's exp.
TEST(Numerics, WalksBackFromTheFirstNaNToTheStepThatMadeIt) {
  StepProgram p = program(4);
  kernel(p, {0}, {1}, "exp");
  kernel(p, {1}, {2}, "sub");
  kernel(p, {2}, {3}, "reduce_sum");
  NumericsLog log;
  log.steps.push_back({0, {scan(0, 0, 0, 0)}, {scan(1, 0, 2, 0)}});
  log.steps.push_back({1, {scan(1, 0, 2, 0)}, {scan(2, 2, 0, 0)}});
  log.steps.push_back({2, {scan(2, 2, 0, 0)}, {scan(3, 1, 0, 0)}});
  std::optional<Fault> f = findFault(p, log);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->step, 0);
  EXPECT_EQ(f->value.buffer, 1);
  std::vector<const Origin *> ops = suspects(p, *f);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0]->op, "exp");
  std::string report = describeFault(p, *f);
  EXPECT_NE(report.find("the op: exp of layer 'l0' (m.pbtxt:1:1)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("2 +inf of 4 values"), std::string::npos) << report;
}

// The producer is found by shared bytes, not by buffer id: a view of the
// buffer a step wrote.
TEST(Numerics, FollowsViewsByTheirBytes) {
  StepProgram p = program(4);
  p.buffers[2].offset = p.buffers[1].offset; // 2 is a view of 1
  kernel(p, {0}, {1}, "log");
  kernel(p, {2}, {3}, "mul");
  NumericsLog log;
  log.steps.push_back({0, {scan(0, 0, 0, 0)}, {scan(1, 1, 0, 0)}});
  log.steps.push_back({1, {scan(2, 1, 0, 0)}, {scan(3, 1, 0, 0)}});
  std::optional<Fault> f = findFault(p, log);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->step, 0);
  EXPECT_EQ(suspects(p, *f).front()->op, "log");
}

// A NaN the run's first step read: an argument held it already (the data,
// or a parameter an earlier step broke).
TEST(Numerics, AnArgumentThatHeldItAlready) {
  StepProgram p = program(3);
  kernel(p, {0}, {1}, "relu");
  kernel(p, {1}, {2}, "reduce_sum");
  NumericsLog log;
  log.steps.push_back({0, {scan(0, 1, 0, 0)}, {scan(1, 1, 0, 0)}});
  log.steps.push_back({1, {scan(1, 1, 0, 0)}, {scan(2, 1, 0, 0)}});
  std::optional<Fault> f = findFault(p, log);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->step, -1);
  EXPECT_EQ(f->value.buffer, 0);
  EXPECT_NE(describeFault(p, *f).find("input 'x' already held 1 NaN"),
            std::string::npos)
      << describeFault(p, *f);
}

// A causal mask's -inf, softmaxed to 0, is no fault: no NaN, no result
// reached. An infinite loss with no NaN is.
TEST(Numerics, MaskInfinitiesAreNoFaultButAnInfiniteLossIs) {
  StepProgram p = program(4);
  kernel(p, {0}, {1}, "causal_mask");
  kernel(p, {1}, {2}, "exp");
  kernel(p, {2}, {3}, "reduce_sum");
  NumericsLog log;
  log.steps.push_back({0, {scan(0, 0, 0, 0)}, {scan(1, 0, 0, 2)}});
  log.steps.push_back({1, {scan(1, 0, 0, 2)}, {scan(2, 0, 0, 0)}});
  EXPECT_FALSE(findFault(p, log));
  log.steps.push_back({2, {scan(2, 0, 0, 0)}, {scan(3, 0, 1, 0)}});
  std::optional<Fault> f = findFault(p, log);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->step, 2);
  // No exp, log, div ... in the step: its arithmetic overflowed.
  EXPECT_EQ(suspects(p, *f).front()->op, "reduce_sum");
}

// A NaN from finite inputs names the op that can make one (log), not its
// neighbours in the fused kernel.
TEST(Numerics, AFusedKernelNamesTheOpThatCanMakeTheValue) {
  StepProgram p = program(3);
  kernel(p, {0}, {1}, "mul");
  p.steps[0].origins.push_back({"log", "bad", "m.pbtxt", 9, 3});
  p.steps[0].origins.push_back({"add", "bad", "m.pbtxt", 9, 3});
  NumericsLog log;
  log.steps.push_back({0, {scan(0, 0, 0, 0)}, {scan(1, 2, 0, 0)}});
  std::optional<Fault> f = findFault(p, log);
  ASSERT_TRUE(f);
  std::vector<const Origin *> ops = suspects(p, *f);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0]->layer, "bad");
  EXPECT_NE(describeFault(p, *f).find("the only one of the step's 3 ops that "
                                      "makes NaN from finite values"),
            std::string::npos);
}

// A merged CUDA launch (docs/Cuda.md, "Merged launches") is its members:
// member 0 divides buffer 1 into a NaN (0/0) while member 1 takes the exp
// of a causal mask's -inf in buffer 3 (to 0). The fault is member 0's div,
// from member 0's finite input alone: the step's other input (the mask)
// is not what made the NaN, nor is member 1's log.
TEST(Numerics, AMergedLaunchNamesTheMemberThatMadeTheValue) {
  StepProgram p = program(6);
  kernel(p, {0}, {1, 3}, "causal_mask");
  kernel(p, {1, 3}, {2, 4}, "div");
  p.steps[1].origins.push_back({"log", "other", "m.pbtxt", 7, 1});
  p.steps[1].members = {{{1}, {2}, 1}, {{3}, {4}, 1}};
  kernel(p, {2, 4}, {5}, "reduce_sum");
  NumericsLog log;
  log.steps.push_back(
      {0, {scan(0, 0, 0, 0)}, {scan(1, 0, 0, 0), scan(3, 0, 0, 2)}});
  log.steps.push_back({1,
                       {scan(1, 0, 0, 0), scan(3, 0, 0, 2)},
                       {scan(2, 1, 0, 0), scan(4, 0, 0, 0)}});
  log.steps.push_back(
      {2, {scan(2, 1, 0, 0), scan(4, 0, 0, 0)}, {scan(5, 1, 0, 0)}});
  std::optional<Fault> f = findFault(p, log);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->step, 1);
  EXPECT_EQ(f->member, 0);
  EXPECT_EQ(f->value.buffer, 2);
  ASSERT_EQ(f->inputs.size(), 1u);
  EXPECT_EQ(f->inputs[0].buffer, 1);
  std::vector<const Origin *> ops = suspects(p, *f);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0]->op, "div");
  std::string report = describeFault(p, *f);
  EXPECT_NE(report.find("(kernel k1, member 1 of 2) wrote 1 NaN"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("the op: div of layer 'l1'"), std::string::npos)
      << report;
  EXPECT_EQ(report.find("log"), std::string::npos) << report;

  // Member 1's buffers and ops alone when it wrote the value instead.
  EXPECT_EQ(originsOf(p.steps[1], 1).size(), 1u);
  EXPECT_EQ(originsOf(p.steps[1], 1)[0].op, "log");
  EXPECT_EQ(originsOf(p.steps[1], -1).size(), 2u);
}

// Under data parallelism an all-reduce can bring in another rank's NaN:
// this rank's gradients were finite, so the report says where the values
// came from instead of blaming the collective's arithmetic; and an f32
// bucket sent as f16 overflows in transit past 65504.
TEST(Numerics, AnAllReduceNamesTheOtherRankOrTheTransfer) {
  StepProgram p = program(3);
  Collective c;
  c.buffer = 1;
  c.name = "bucket 0";
  p.collectives.push_back(c);
  kernel(p, {0}, {1}, "mul");
  Step start, done;
  start.kind = sabi::Step::kStart;
  done.kind = sabi::Step::kDone;
  p.steps.push_back(start);
  p.steps.push_back(done);
  kernel(p, {1}, {2}, "sub");
  NumericsLog log;
  BufferScan finite = scan(1, 0, 0, 0);
  finite.min = -3;
  finite.max = 70000;
  log.steps.push_back({2, {finite}, {scan(1, 2, 0, 0)}});
  log.steps.push_back({3, {scan(1, 2, 0, 0)}, {scan(2, 2, 0, 0)}});
  std::optional<Fault> f = findFault(p, log);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->step, 2);
  std::optional<std::string> received = receivedFault(p, *f);
  ASSERT_TRUE(received);
  EXPECT_EQ(*received, "the all-reduce of bucket 0 returned NaN from this "
                       "rank's finite gradients: another rank sent it (that "
                       "rank's error names where it began)");
  EXPECT_NE(describeFault(p, *f).find("program step 2 of train_step: the "
                                      "all-reduce of bucket 0 returned NaN"),
            std::string::npos)
      << describeFault(p, *f);

  // The same values sent as f16: an infinity from 70000 is the transfer's.
  p.collectives[0].commType = sabi::ElementType::f16;
  f->value = scan(1, 0, 1, 0);
  received = receivedFault(p, *f);
  ASSERT_TRUE(received);
  EXPECT_NE(received->find("the all-reduce of bucket 0 overflowed f16 in "
                           "transit (data_parallel.grad_comm_dtype): this "
                           "rank's gradients reach 70000"),
            std::string::npos)
      << *received;
  // A kernel's fault is no collective's.
  f->step = 0;
  EXPECT_FALSE(receivedFault(p, *f));
}

} // namespace
