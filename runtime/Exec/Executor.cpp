//===- Executor.cpp - what every executor does through upload/download ----===//
//
// The device-independent half of the executor: host-side views of buffers
// (HostTensor in and out, metric values), parameter initializers and the
// checks every device's transfers share. Nothing here touches device
// memory except through upload() and download(), so it serves the CPU
// executor and any other alike.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/Executor.h"

#include "abi/HalfFloat.h"
#include "abi/Random.h"
#include "runtime/Exec/CpuExecutor.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <tuple>

using namespace sinter::exec;
namespace sabi = sinter::abi;
namespace formats = sinter::formats;
using sinter::formats::HostTensor;

namespace {

/// Stores `value` rounded to `type` (a float type) at element `k`.
void storeFloat(unsigned char *data, sabi::DType type, int64_t k,
                double value) {
  auto store = [&](auto element) {
    std::memcpy(data + k * sizeof(element), &element, sizeof(element));
  };
  switch (type) {
  case sabi::ElementType::f64:
    store(value);
    return;
  case sabi::ElementType::f32:
    store(static_cast<float>(value));
    return;
  case sabi::ElementType::bf16:
    store(sinter::half::floatToBf16Bits(static_cast<float>(value)));
    return;
  case sabi::ElementType::f16:
    store(sinter::half::floatToF16Bits(static_cast<float>(value)));
    return;
  default:
    return; // the parser only lets float params have an init
  }
}

std::string shapeText(const std::vector<int64_t> &shape) {
  return absl::StrFormat("[%s]", absl::StrJoin(shape, ","));
}

/// Element 0 of `data` (of `type`) as a double.
double firstElement(const void *data, sabi::DType type) {
  auto load = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, data, sizeof(v));
    return v;
  };
  switch (type) {
  case sabi::ElementType::f32:
    return load(0.0f);
  case sabi::ElementType::f64:
    return load(0.0);
  case sabi::ElementType::f16:
    return sinter::half::f16BitsToFloat(load(uint16_t(0)));
  case sabi::ElementType::bf16:
    return sinter::half::bf16BitsToFloat(load(uint16_t(0)));
  case sabi::ElementType::i64:
    return static_cast<double>(load(int64_t(0)));
  case sabi::ElementType::i32:
    return load(int32_t(0));
  case sabi::ElementType::i8:
    return load(int8_t(0));
  case sabi::ElementType::i1:
    return load(uint8_t(0));
  }
  return NAN;
}

} // namespace

namespace sinter::exec {
// CudaExecutor.cpp, in the CUDA runtime library that only CUDA binaries
// link: weak, so a CPU binary links without it.
__attribute__((weak)) absl::StatusOr<std::unique_ptr<Executor>>
createCudaExecutor(StepProgram program, std::string_view cudaModule,
                   const ExecutorOptions &options);
} // namespace sinter::exec

absl::StatusOr<std::unique_ptr<Executor>>
Executor::create(StepProgram program, const SinterKernelFn *kernels,
                 const ExecutorOptions &options) {
  if (!options.cudaModule.empty()) {
    if (!createCudaExecutor)
      return sinter::FailedPreconditionError(
          SINTER_HERE, "this binary holds CUDA kernels but was linked "
                       "without the CUDA runtime");
    return createCudaExecutor(std::move(program), options.cudaModule, options);
  }
  SINTER_ASSIGN_OR_RETURN(
      std::unique_ptr<CpuExecutor> cpu,
      CpuExecutor::create(std::move(program), kernels, options));
  return std::unique_ptr<Executor>(std::move(cpu));
}

Executor::Executor(StepProgram program) : prog(std::move(program)) {}

CollectiveRunner::~CollectiveRunner() = default;

absl::Status CollectiveRunner::shareBytes(void *, size_t,
                                          std::string_view what) {
  return sinter::UnimplementedError(
      SINTER_HERE,
      absl::StrCat("this collective runner cannot share ", std::string(what)));
}

absl::Status CollectiveRunner::shareHostMemory(void *, size_t) {
  return absl::OkStatus();
}

std::string CollectiveRunner::describe(const Collective &collective,
                                       int64_t) const {
  return collective.name;
}

Executor::~Executor() = default;

//===----------------------------------------------------------------------===//
// Checks the devices share
//===----------------------------------------------------------------------===//

absl::Status Executor::checkTransfer(std::string_view direction, int64_t id,
                                     size_t bytes) const {
  if (id < 0 || id >= static_cast<int64_t>(prog.buffers.size()))
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrFormat("%s buffer %d: @%s has no such buffer (it has %d)",
                        direction, id, prog.function, prog.buffers.size()));
  const Buffer &b = prog.buffers[id];
  if (bytes != static_cast<uint64_t>(b.bytes))
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrFormat("%s buffer %d%s: %d bytes given, the buffer holds %d",
                        direction, id,
                        b.name.empty() ? std::string()
                                       : " " + formats::quoteForMessage(b.name),
                        bytes, b.bytes));
  return absl::OkStatus();
}

absl::Status Executor::checkPart(std::string_view direction, int64_t id,
                                 size_t offset, size_t bytes) const {
  if (id < 0 || id >= static_cast<int64_t>(prog.buffers.size()))
    return checkTransfer(direction, id, bytes);
  const Buffer &b = prog.buffers[id];
  uint64_t size = static_cast<uint64_t>(b.bytes);
  if (offset > size || bytes > size - offset)
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrFormat("%s buffer %d%s: bytes [%d, %d) asked for, the buffer "
                        "holds %d",
                        direction, id,
                        b.name.empty() ? std::string()
                                       : " " + formats::quoteForMessage(b.name),
                        offset, uint64_t(offset) + bytes, b.bytes));
  return absl::OkStatus();
}

absl::StatusOr<Executor::HyperValue> Executor::hyperValue(std::string_view name,
                                                          double value) const {
  const Argument *a = prog.findArgument(name);
  if (!a || a->kind != sabi::Argument::hyper)
    return sinter::NotFoundError(
        SINTER_HERE,
        absl::StrFormat("@%s has no hyper argument '%s'", prog.function, name));
  HyperValue out;
  out.buffer = a->buffer;
  // The parser allows f32 and f64 scalars.
  if (prog.buffers[a->buffer].type == sabi::ElementType::f32) {
    auto narrow = static_cast<float>(value);
    if (!std::isfinite(narrow))
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrFormat("hyper argument '%s' must be a finite f32, got %g",
                          name, value));
    std::memcpy(out.bytes, &narrow, sizeof(narrow));
    out.size = sizeof(narrow);
    return out;
  }
  if (!std::isfinite(value))
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrFormat("hyper argument '%s' must be finite, got %g", name,
                        value));
  std::memcpy(out.bytes, &value, sizeof(value));
  out.size = sizeof(value);
  return out;
}

//===----------------------------------------------------------------------===//
// State in and out
//===----------------------------------------------------------------------===//

absl::StatusOr<double> Executor::scalarValue(int64_t id) const {
  if (id < 0 || id >= static_cast<int64_t>(prog.buffers.size()))
    return addFrame(SINTER_HERE, checkTransfer("download from", id, 0));
  const Buffer &b = prog.buffers[id];
  // Metrics are scalars (the parser checks), so the usual case needs no
  // allocation; a larger buffer is read whole for its first element.
  alignas(8) unsigned char small[8];
  if (b.bytes <= static_cast<int64_t>(sizeof(small))) {
    SINTER_RETURN_IF_ERROR(download(id, small, static_cast<size_t>(b.bytes)));
    return firstElement(small, b.type);
  }
  std::vector<unsigned char> whole(static_cast<size_t>(b.bytes));
  SINTER_RETURN_IF_ERROR(download(id, whole.data(), whole.size()));
  return firstElement(whole.data(), b.type);
}

absl::StatusOr<HostTensor> Executor::readBuffer(int64_t id) const {
  if (id < 0 || id >= static_cast<int64_t>(prog.buffers.size()))
    return addFrame(SINTER_HERE, checkTransfer("download from", id, 0));
  const Buffer &b = prog.buffers[id];
  HostTensor t;
  t.dtype = toDType(b.type);
  t.shape = b.shape;
  t.data.resize(static_cast<size_t>(b.bytes));
  SINTER_RETURN_IF_ERROR(download(id, t.data.data(), t.data.size()));
  return t;
}

absl::StatusOr<formats::TensorSource>
Executor::bufferSource(int64_t id, std::string name) const {
  if (id < 0 || id >= static_cast<int64_t>(prog.buffers.size()))
    return addFrame(SINTER_HERE, checkTransfer("download from", id, 0));
  const Buffer &b = prog.buffers[id];
  formats::TensorSource source;
  source.name = std::move(name);
  source.dtype = toDType(b.type);
  source.shape = b.shape;
  source.read = [this, id](uint64_t offset, uint64_t count, void *dst) {
    return downloadPart(id, static_cast<size_t>(offset), dst,
                        static_cast<size_t>(count));
  };
  return source;
}

absl::Status Executor::writeBuffer(int64_t id, const HostTensor &tensor,
                                   std::string_view what) {
  if (id < 0 || id >= static_cast<int64_t>(prog.buffers.size()))
    return addFrame(SINTER_HERE,
                    checkTransfer("upload to", id, tensor.data.size()));
  const Buffer &b = prog.buffers[id];
  if (tensor.dtype != toDType(b.type) || tensor.shape != b.shape)
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrFormat("%s: given %s %s, expected %s %s", what,
                                     formats::dtypeName(tensor.dtype),
                                     shapeText(tensor.shape),
                                     formats::dtypeName(toDType(b.type)),
                                     shapeText(b.shape)));
  if (static_cast<int64_t>(tensor.data.size()) != b.bytes)
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrFormat("%s: given %d bytes, expected %d", what,
                                     tensor.data.size(), b.bytes));
  SINTER_RETURN_IF_ERROR(upload(id, tensor.data.data(), tensor.data.size()));
  return absl::OkStatus();
}

absl::Status Executor::initializeParameter(const Argument &argument) {
  if (!argument.init)
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrFormat("parameter '%s' has no initializer and no given value",
                        argument.name));
  const Buffer &b = prog.buffers[argument.buffer];
  const Initializer &init = *argument.init;
  // The stream is the FNV-1a hash of the name (docs/Random.md), so values
  // do not depend on the order parameters are declared in.
  uint64_t key =
      random::key(prog.seed, random::nameHash(argument.name.c_str()));
  // Computed on the host, then uploaded: the same bits on every device.
  // Each element is a function of (key, k) alone, so the host's threads
  // split them with no effect on the values (a normal draw is a log and a
  // cos: GPT-2's 124M parameters take seconds on one core).
  std::vector<unsigned char> host(static_cast<size_t>(b.bytes));
#pragma omp parallel for schedule(static) if (b.numElements >= (1 << 16))
  for (int64_t k = 0; k < b.numElements; ++k) {
    double value = 0;
    switch (init.dist) {
    case sabi::Initializer::normal:
      value = init.value * random::normal(key, k);
      break;
    case sabi::Initializer::uniform:
      value = init.value * (2.0 * random::uniform53(key, k) - 1.0);
      break;
    case sabi::Initializer::constant:
      value = init.value;
      break;
    }
    storeFloat(host.data(), b.type, k, value);
  }
  SINTER_RETURN_IF_ERROR(upload(argument.buffer, host.data(), host.size()));
  return absl::OkStatus();
}

absl::Status sinter::exec::checkSharedState(const StepProgram &program,
                                            const StepProgram &state) {
  for (sabi::SlabKind slab : {sabi::Slab::params, sabi::Slab::opt_state})
    if (program.slabBytes[slab] > state.slabBytes[slab])
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrFormat("program '%s' cannot share the '%s' slab of '%s': "
                          "it needs %d bytes, that one has %d",
                          program.function, sabi::slabName(slab),
                          state.function, program.slabBytes[slab],
                          state.slabBytes[slab]));
  for (const Argument &a : program.arguments) {
    if (a.kind != sabi::Argument::param &&
        a.kind != sabi::Argument::accumulator)
      continue;
    const Buffer &mine = program.buffers[a.buffer];
    const Argument *other = state.findArgument(a.name);
    const Buffer *theirs = other ? &state.buffers[other->buffer] : nullptr;
    if (!theirs || other->kind != a.kind || theirs->slab != mine.slab ||
        theirs->offset != mine.offset || theirs->type != mine.type ||
        theirs->shape != mine.shape)
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrFormat("program '%s' cannot share state with '%s': its %s "
                          "%s is not laid out there as it is here",
                          program.function, state.function,
                          sabi::argumentKindName(a.kind),
                          formats::quoteForMessage(a.name)));
  }
  return absl::OkStatus();
}

absl::Status Executor::setRank(int64_t rank) {
  for (const Argument &a : prog.arguments)
    if (a.kind == sabi::Argument::rank)
      return upload(a.buffer, &rank, sizeof rank);
  return absl::OkStatus();
}

absl::Status Executor::initializeParameters() {
  for (const Argument &a : prog.arguments)
    if (a.kind == sabi::Argument::param)
      SINTER_RETURN_IF_ERROR(initializeParameter(a));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>>
Executor::setArguments(const formats::SafeTensorsFile &file) {
  std::vector<std::string> unused;
  for (const auto &[name, tensor] : file.tensors) {
    const Argument *a = prog.findArgument(name);
    if (!a) {
      unused.push_back(name);
      continue;
    }
    SINTER_RETURN_IF_ERROR(writeBuffer(
        a->buffer, tensor,
        absl::StrFormat("%s argument %s", sabi::argumentKindName(a->kind),
                        formats::quoteForMessage(name))));
  }
  return unused;
}

absl::StatusOr<HostTensor> Executor::readResult(const Result &result) const {
  if (result.kind == sabi::Result::param ||
      result.kind == sabi::Result::opt_state ||
      result.kind == sabi::Result::accumulator)
    if (const Argument *a = prog.findArgument(result.name))
      return readBuffer(a->buffer);
  return readBuffer(result.buffer);
}

absl::StatusOr<formats::SafeTensorsFile> Executor::readResults() const {
  formats::SafeTensorsFile file;
  for (const Result &r : prog.results) {
    SINTER_ASSIGN_OR_RETURN(HostTensor tensor, readResult(r));
    file.tensors.push_back({r.name, std::move(tensor)});
  }
  return file;
}

//===----------------------------------------------------------------------===//
// Profiles
//===----------------------------------------------------------------------===//

sinter::exec::ProfileRecorder::ProfileRecorder(const StepProgram &program) {
  for (Profile *p : {&prof, &firstRun, &current}) {
    p->perKernelSeconds.assign(program.kernels.size(), 0);
    p->perKernelCalls.assign(program.kernels.size(), 0);
    p->perStepSeconds.assign(program.steps.size(), 0);
  }
}

void sinter::exec::ProfileRecorder::addStep(const StepProgram &program,
                                            int64_t step, double seconds) {
  const Step &s = program.steps[static_cast<size_t>(step)];
  switch (s.kind) {
  case sabi::Step::kKernel:
    current.kernelSeconds += seconds;
    current.perKernelSeconds[s.kernel] += seconds;
    ++current.perKernelCalls[s.kernel];
    break;
  case sabi::Step::kMatmul:
    current.matmulSeconds += seconds;
    current.perStepSeconds[step] += seconds;
    break;
  case sabi::Step::kCopy:
    current.copySeconds += seconds;
    break;
  case sabi::Step::kStart:
  case sabi::Step::kDone:
    addCommWait(step, seconds);
    break;
  }
}

void sinter::exec::ProfileRecorder::finishRun(double seconds) {
  current.totalSeconds = seconds;
  current.runs = 1;
  bool first = firstRun.runs == 0;
  Profile &into = first ? firstRun : prof;
  into.runs += current.runs;
  into.totalSeconds += current.totalSeconds;
  into.kernelSeconds += current.kernelSeconds;
  into.matmulSeconds += current.matmulSeconds;
  into.copySeconds += current.copySeconds;
  into.collectiveSeconds += current.collectiveSeconds;
  for (size_t k = 0; k < current.perKernelSeconds.size(); ++k) {
    into.perKernelSeconds[k] += current.perKernelSeconds[k];
    into.perKernelCalls[k] += current.perKernelCalls[k];
  }
  for (size_t i = 0; i < current.perStepSeconds.size(); ++i)
    into.perStepSeconds[i] += current.perStepSeconds[i];
  if (first)
    prof.firstRunSeconds = firstRun.firstRunSeconds = seconds;
  size_t kernels = current.perKernelSeconds.size();
  size_t steps = current.perStepSeconds.size();
  current = Profile();
  current.perKernelSeconds.assign(kernels, 0);
  current.perKernelCalls.assign(kernels, 0);
  current.perStepSeconds.assign(steps, 0);
}

std::string sinter::exec::formatProfileReport(const StepProgram &prog,
                                              const Profile &p, bool firstOnly,
                                              std::string_view device,
                                              int topKernels) {
  if (p.runs == 0)
    return "profile: no runs recorded\n";
  double perRun = 1e3 / static_cast<double>(p.runs);
  auto pct = [&](double s) {
    return p.totalSeconds > 0 ? 100.0 * s / p.totalSeconds : 0.0;
  };
  std::string out = absl::StrFormat("profile: %d runs, %s, %.3f ms/run\n",
                                    p.runs, device, p.totalSeconds * perRun);
  if (!firstOnly)
    out += absl::StrFormat("  (after the first run, which took %.3f ms and "
                           "is left out: it touches fresh memory)\n",
                           p.firstRunSeconds * 1e3);
  else
    out += "  (the first run only: it includes touching fresh memory)\n";
  double other = p.totalSeconds - p.matmulSeconds - p.kernelSeconds -
                 p.copySeconds - p.collectiveSeconds;
  // Each matmul's FLOPs (2 M N K per product) and products, for its rate
  // and its row.
  std::vector<double> flops(prog.steps.size(), 0);
  std::vector<int64_t> batches(prog.steps.size(), 1);
  double matmulFlops = 0;
  for (size_t i = 0; i < prog.steps.size(); ++i)
    if (prog.steps[i].kind == sabi::Step::kMatmul)
      if (auto g = analyzeMatmul(prog.matmulDesc(prog.steps[i].matmul));
          g.ok()) {
        flops[i] = 2.0 * g->m * g->n * g->k * g->batchCount;
        batches[i] = g->batchCount;
        matmulFlops += flops[i];
      }
  auto gflops = [](double f, double seconds) {
    return seconds > 0 ? f / seconds * 1e-9 : 0.0;
  };
  std::string matmulRate = absl::StrFormat(
      " %7.1f GFLOP/s", gflops(matmulFlops * p.runs, p.matmulSeconds));
  for (auto [name, s, rate] :
       {std::tuple<const char *, double, std::string_view>{
            "matmul", p.matmulSeconds, matmulRate},
        {"kernels", p.kernelSeconds, ""},
        {"copies", p.copySeconds, ""},
        {"comm wait", p.collectiveSeconds, ""},
        {"overhead", std::max(other, 0.0), ""}})
    out += absl::StrFormat("  %-9s %10.3f ms/run %6.2f%%%s\n", name, s * perRun,
                           pct(s), rate);
  out += absl::StrFormat("  outside matmuls: %.2f%%\n",
                         pct(p.totalSeconds - p.matmulSeconds));
  // `indices`, slowest first by `seconds`, at most topKernels of them.
  auto slowest = [&](std::vector<size_t> indices,
                     const std::vector<double> &seconds) {
    std::stable_sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
      return seconds[a] > seconds[b];
    });
    if (indices.size() > static_cast<size_t>(topKernels))
      indices.resize(topKernels);
    return indices;
  };
  std::vector<size_t> order(p.perKernelSeconds.size());
  std::iota(order.begin(), order.end(), 0);
  order = slowest(std::move(order), p.perKernelSeconds);
  if (!order.empty())
    out += "  top kernels:\n";
  for (size_t k : order) {
    double seconds = p.perKernelSeconds[k] / static_cast<double>(p.runs);
    double gbs = seconds > 0 ? prog.kernels[k].bytes / seconds * 1e-9 : 0.0;
    out += absl::StrFormat(
        "    %-40s %10.3f ms/run %6.2f%% %7.1f GB/s (extent %d)\n",
        prog.kernels[k].name, p.perKernelSeconds[k] * perRun,
        pct(p.perKernelSeconds[k]), gbs, prog.kernels[k].extent);
  }
  std::vector<size_t> steps;
  for (size_t i = 0; i < p.perStepSeconds.size(); ++i)
    if (prog.steps[i].kind == sabi::Step::kMatmul)
      steps.push_back(i);
  steps = slowest(std::move(steps), p.perStepSeconds);
  if (!steps.empty())
    out += "  top matmuls:\n";
  for (size_t i : steps) {
    const Step &step = prog.steps[i];
    MatmulDesc d = prog.matmulDesc(step.matmul);
    // As stored: "48 x 256x64 * 256x64^T" is a batch of 48 products of a
    // 256x64 lhs and the transpose of a 256x64 rhs.
    auto last2 = [](const std::vector<int64_t> &shape, bool transposed) {
      size_t r = shape.size();
      return absl::StrFormat("%dx%d%s", shape[r - 2], shape[r - 1],
                             transposed ? "^T" : "");
    };
    std::string shape = last2(d.lhsShape, d.transposeLhs) + " * " +
                        last2(d.rhsShape, d.transposeRhs);
    if (batches[i] > 1)
      shape = absl::StrFormat("%d x %s", batches[i], shape);
    // A skipped triangle: the GFLOP/s still count the whole product.
    if (d.triangle != sabi::MatmulStep::full)
      shape += " " + std::string(sabi::triangleName(d.triangle));
    std::string where;
    if (!step.origins.empty() && !step.origins.front().layer.empty())
      where = "  " + step.origins.front().layer;
    out += absl::StrFormat(
        "    step %-4d %-28s %-4s %10.3f ms/run %6.2f%% %7.1f GFLOP/s%s\n", i,
        shape, std::string(sabi::dtypeName(d.dtype)),
        p.perStepSeconds[i] * perRun, pct(p.perStepSeconds[i]),
        gflops(flops[i] * p.runs, p.perStepSeconds[i]), where);
  }
  // Where the comm wait was: each collective's start (handing it over)
  // and done (waiting for the reduction, and for the ranks behind),
  // slowest first. A done that waits tells which bucket the step could
  // not hide.
  if (prog.collectives.empty() || p.collectiveSeconds <= 0)
    return out;
  std::vector<double> started(prog.collectives.size(), 0),
      waited(prog.collectives.size(), 0), total(prog.collectives.size(), 0);
  for (size_t i = 0; i < p.perStepSeconds.size(); ++i) {
    const Step &step = prog.steps[i];
    if (step.kind != sabi::Step::kStart && step.kind != sabi::Step::kDone)
      continue;
    auto c = static_cast<size_t>(step.collective);
    (step.kind == sabi::Step::kStart ? started : waited)[c] +=
        p.perStepSeconds[i];
    total[c] += p.perStepSeconds[i];
  }
  std::vector<size_t> collectives(prog.collectives.size());
  std::iota(collectives.begin(), collectives.end(), 0);
  collectives = slowest(std::move(collectives), total);
  out += "  collectives (the step's wait at each start and done):\n";
  for (size_t c : collectives) {
    const Collective &coll = prog.collectives[c];
    std::string holds;
    if (!coll.tensors.empty())
      holds = coll.tensors.size() == 1
                  ? "  " + coll.tensors.front()
                  : absl::StrFormat("  %s and %d more", coll.tensors.front(),
                                    coll.tensors.size() - 1);
    out += absl::StrFormat(
        "    %-10s %11d bytes  start %8.3f  done %8.3f ms/run %6.2f%%%s\n",
        coll.name, prog.buffers[coll.buffer].bytes, started[c] * perRun,
        waited[c] * perRun, pct(total[c]), holds);
  }
  return out;
}
