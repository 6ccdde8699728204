//===- StepTrace.cpp - every step's results of one run, for bisection -----===//

#include "runtime/Exec/StepTrace.h"

#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <cstring>

using namespace sinter::exec;
namespace sabi = sinter::abi;

namespace {

/// "kernel k3_exp_sum: exp of layer "fc1" (m.pbtxt:8:1); ..." or
/// "matmul: matmul of layer ...".
std::string describeStep(const StepProgram &program, const Step &step) {
  std::string text = stepKindText(program, step);
  std::vector<std::string> origins;
  for (const Origin &o : step.origins)
    origins.push_back(describeOrigin(o));
  if (!origins.empty())
    absl::StrAppend(&text, ": ", absl::StrJoin(origins, "; "));
  return text;
}

sinter::formats::HostTensor copyBuffer(const StepProgram &program, int64_t id,
                                       const void *bytes) {
  const Buffer &b = program.buffers[static_cast<size_t>(id)];
  sinter::formats::HostTensor t;
  t.dtype = toDType(b.type);
  t.shape = b.shape;
  t.data.resize(static_cast<size_t>(b.bytes));
  if (b.bytes)
    std::memcpy(t.data.data(), bytes, t.data.size());
  return t;
}

} // namespace

absl::Status StepTrace::begin(Executor &executor, std::string_view serialized) {
  const StepProgram &program = executor.program();
  // The interpreter runs a merged launch's kernels one by one: a trace
  // needs the program with one step a kernel.
  for (const Step &step : program.steps)
    if (!step.members.empty())
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          "--trace: this binary runs merged launches (several kernels a "
          "step); build it with sinterc --cuda-merge-launches=false to "
          "trace it");
  ex = &executor;
  file = {};
  file.metadata[std::string(sabi::kTraceMarker)] = "1";
  file.metadata[std::string(sabi::kTraceFunction)] = program.function;
  file.metadata[std::string(sabi::kTraceSteps)] =
      absl::StrCat(program.steps.size());
  formats::HostTensor bytes;
  bytes.dtype = formats::DType::U8;
  bytes.shape = {static_cast<int64_t>(serialized.size())};
  bytes.data.assign(serialized.begin(), serialized.end());
  file.tensors.emplace_back(std::string(sabi::kTraceProgram), std::move(bytes));
  for (const Argument &a : program.arguments) {
    const Buffer &b = program.buffers[static_cast<size_t>(a.buffer)];
    std::vector<unsigned char> host(static_cast<size_t>(b.bytes));
    SINTER_RETURN_IF_ERROR(ex->download(a.buffer, host.data(), host.size()));
    file.tensors.emplace_back(a.name,
                              copyBuffer(program, a.buffer, host.data()));
  }
  ex->setStepObserver([this](int64_t s,
                             const StepScanner::View &view) -> absl::Status {
    const StepProgram &program = ex->program();
    program.stepBuffers(s, reads, writes);
    file.metadata[std::string(sabi::kTraceStepPrefix) + std::to_string(s)] =
        describeStep(program, program.steps[static_cast<size_t>(s)]);
    for (size_t j = 0; j < writes.size(); ++j) {
      const void *bytes = view(writes[j]);
      if (!bytes)
        return sinter::InternalError(
            SINTER_HERE,
            absl::StrFormat("--trace: step %d's buffer %d could not be read", s,
                            writes[j]));
      file.tensors.emplace_back(
          sabi::traceWriteName(s, static_cast<int64_t>(j)),
          copyBuffer(program, writes[j], bytes));
    }
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

absl::Status StepTrace::finish(const std::string &path) {
  if (ex)
    ex->setStepObserver(nullptr);
  ex = nullptr;
  return formats::writeSafeTensors(path, file);
}
