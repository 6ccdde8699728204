//===- DeviceQueue.cpp - a program's steps as device stream work, checked -===//
//
// See DeviceQueue.h. The checker compares every operation with every
// earlier one that touches a common slab (quadratic in the operations of a
// run, a few thousand for a GPT: a test and --check-queue cost, never the
// executor's).
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/DeviceQueue.h"

#include "runtime/Support/Status.h"

#include "absl/strings/str_format.h"

#include <algorithm>
#include <array>

namespace sinter::exec {

namespace sabi = sinter::abi;

namespace {

QueueAccess accessOf(const StepProgram &program, int64_t buffer, bool write) {
  const Buffer &b = program.buffers[buffer];
  return QueueAccess{b.slab, b.offset, b.offset + b.bytes, write};
}

} // namespace

absl::StatusOr<QueuePlan> planDeviceQueue(const StepProgram &program) {
  QueuePlan plan;
  std::vector<int> started(program.collectives.size(), -1);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const Step &step = program.steps[s];
    QueueOp op;
    op.step = static_cast<int64_t>(s);
    switch (step.kind) {
    case sabi::Step::kKernel:
      if (step.inputs.empty() && step.outputs.empty())
        return sinter::InvalidArgumentError(
            SINTER_HERE,
            absl::StrFormat("step %d: kernel '%s' has no buffer lists (a "
                            "program compiled before they were recorded); "
                            "recompile it for a device",
                            s, program.kernels[step.kernel].name));
      op.kind = QueueOp::kComputeStep;
      for (int64_t b : step.inputs)
        op.accesses.push_back(accessOf(program, b, false));
      for (int64_t b : step.outputs)
        op.accesses.push_back(accessOf(program, b, true));
      plan.ops.push_back(std::move(op));
      break;
    case sabi::Step::kMatmul: {
      const MatmulStep &mm = step.matmul;
      op.kind = QueueOp::kComputeStep;
      op.accesses.push_back(accessOf(program, mm.lhs, false));
      op.accesses.push_back(accessOf(program, mm.rhs, false));
      if (mm.bias >= 0)
        op.accesses.push_back(accessOf(program, mm.bias, false));
      op.accesses.push_back(accessOf(program, mm.out, true));
      // The library writes its scratch, too.
      if (mm.workspace >= 0)
        op.accesses.push_back(accessOf(program, mm.workspace, true));
      // The activation's input: written by GELU_AUX, read by DGELU; and
      // DGELU_BGRAD's bias gradient.
      if (mm.aux >= 0)
        op.accesses.push_back(accessOf(
            program, mm.aux, mm.activation != sabi::MatmulStep::dgelu_tanh));
      if (mm.biasGrad >= 0)
        op.accesses.push_back(accessOf(program, mm.biasGrad, true));
      plan.ops.push_back(std::move(op));
      break;
    }
    case sabi::Step::kCopy:
      op.kind = QueueOp::kComputeStep;
      op.accesses.push_back(accessOf(program, step.src, false));
      op.accesses.push_back(accessOf(program, step.dst, true));
      plan.ops.push_back(std::move(op));
      break;
    case sabi::Step::kStart: {
      int event = plan.numEvents++;
      started[step.collective] = event;
      QueueOp record{QueueOp::kRecordEvent, kComputeStream, op.step, event, {}};
      QueueOp wait{QueueOp::kWaitEvent, kCommStream, op.step, event, {}};
      QueueOp reduce{QueueOp::kCollective, kCommStream, op.step, -1, {}};
      int64_t bucket = program.collectives[step.collective].buffer;
      reduce.accesses.push_back(accessOf(program, bucket, false));
      reduce.accesses.push_back(accessOf(program, bucket, true));
      plan.ops.push_back(std::move(record));
      plan.ops.push_back(std::move(wait));
      plan.ops.push_back(std::move(reduce));
      break;
    }
    case sabi::Step::kDone: {
      if (started[step.collective] < 0)
        return sinter::InvalidArgumentError(
            SINTER_HERE,
            absl::StrFormat("step %d: collective '%s' is done before it "
                            "starts",
                            s, program.collectives[step.collective].name));
      int event = plan.numEvents++;
      plan.ops.push_back(
          {QueueOp::kRecordEvent, kCommStream, op.step, event, {}});
      plan.ops.push_back(
          {QueueOp::kWaitEvent, kComputeStream, op.step, event, {}});
      started[step.collective] = -1;
      break;
    }
    default:
      return sinter::InvalidArgumentError(
          SINTER_HERE, absl::StrFormat("step %d has an unknown kind", s));
    }
  }
  return plan;
}

std::string describeQueueOp(const StepProgram &program, const QueueOp &op) {
  const Step &step = program.steps[op.step];
  std::string what;
  switch (op.kind) {
  case QueueOp::kComputeStep:
    if (step.kind == sabi::Step::kKernel)
      what = absl::StrFormat("kernel '%s'", program.kernels[step.kernel].name);
    else
      what = step.kind == sabi::Step::kMatmul ? "matmul" : "copy";
    break;
  case QueueOp::kRecordEvent:
    what = absl::StrFormat("event %d recorded", op.event);
    break;
  case QueueOp::kWaitEvent:
    what = absl::StrFormat("wait for event %d", op.event);
    break;
  case QueueOp::kCollective: {
    const Collective &c = program.collectives[step.collective];
    what = absl::StrFormat("%s '%s'",
                           c.op == sabi::Collective::all_reduce
                               ? "all-reduce"
                               : sabi::Collective::Op_Name(c.op),
                           c.name);
    break;
  }
  }
  return absl::StrFormat("step %d (%s, %s stream)", op.step, what,
                         op.stream == kComputeStream ? "compute"
                                                     : "communication");
}

absl::Status checkDeviceQueue(const StepProgram &program, const QueuePlan &plan,
                              int runs) {
  constexpr int kStreams = 2;
  using Clock = std::array<int64_t, kStreams>;
  auto join = [](Clock &into, const Clock &from) {
    for (int i = 0; i < kStreams; ++i)
      into[i] = std::max(into[i], from[i]);
  };
  struct Done {
    const QueueOp *op;
    int run;
    Clock clock;
  };
  std::array<Clock, kStreams> streams{};
  Clock host{};
  std::vector<Clock> events(plan.numEvents);
  std::vector<bool> recorded(plan.numEvents, false);
  std::vector<Done> done;
  for (int run = 0; run < runs; ++run) {
    for (const QueueOp &op : plan.ops) {
      if (op.stream < 0 || op.stream >= kStreams)
        return sinter::InvalidArgumentError(
            SINTER_HERE, describeQueueOp(program, op) + " has no stream");
      Clock &clock = streams[op.stream];
      join(clock, host);
      if (op.kind == QueueOp::kRecordEvent) {
        events.at(op.event) = clock;
        recorded[op.event] = true;
        continue;
      }
      if (op.kind == QueueOp::kWaitEvent) {
        if (!recorded.at(op.event))
          return sinter::InvalidArgumentError(
              SINTER_HERE, describeQueueOp(program, op) +
                               " waits for an event never recorded");
        join(clock, events[op.event]);
        continue;
      }
      ++clock[op.stream];
      for (const Done &prev : done) {
        // prev happens before op when op's stream has seen prev's tick.
        if (prev.clock[prev.op->stream] <= clock[prev.op->stream])
          continue;
        for (const QueueAccess &a : prev.op->accesses)
          for (const QueueAccess &b : op.accesses) {
            if (a.slab != b.slab || a.end <= b.begin || b.end <= a.begin ||
                !(a.write || b.write))
              continue;
            int64_t lo = std::max(a.begin, b.begin),
                    hi = std::min(a.end, b.end);
            return sinter::InternalError(
                SINTER_HERE,
                absl::StrFormat(
                    "device queue race: %s %s %s[%d, %d), which %s%s %s, "
                    "and no event orders them",
                    describeQueueOp(program, op), b.write ? "writes" : "reads",
                    sabi::slabName(b.slab), lo, hi,
                    describeQueueOp(program, *prev.op),
                    prev.run < run ? " (previous run)" : "",
                    a.write ? "writes" : "reads"));
          }
      }
      done.push_back({&op, run, clock});
    }
    // The executor synchronizes every stream at the end of a run.
    for (const Clock &clock : streams)
      join(host, clock);
  }
  return absl::OkStatus();
}

} // namespace sinter::exec
