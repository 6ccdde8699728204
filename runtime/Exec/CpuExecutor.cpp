//===- CpuExecutor.cpp - the executor whose device is the host ------------===//
//
// Creation does everything that may allocate or fail for reasons other
// than a bug (slab allocation, oneDNN primitive creation); run() is a loop
// over steps that only calls kernels, bound matmuls and memmove. Timing,
// when asked for, wraps each step in two steady_clock reads.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/CpuExecutor.h"

#include "runtime/Support/Status.h"

#include "absl/strings/str_format.h"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

using namespace sinter::exec;
namespace sabi = sinter::abi;
using sinter::abi::SlabRef;

namespace {

constexpr int64_t kPage = 4096;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

//===----------------------------------------------------------------------===//
// Creation
//===----------------------------------------------------------------------===//

CpuExecutor::~CpuExecutor() {
  matmuls.clear(); // before the slabs they point into
  for (int s = 0; s < sinter::abi::kNumSlabs; ++s)
    if (slabs[s] && slabSizes[s])
      ::munmap(slabs[s], slabSizes[s]);
}

absl::StatusOr<std::unique_ptr<CpuExecutor>>
CpuExecutor::create(StepProgram program, const SinterKernelFn *kernels,
                    const ExecutorOptions &options) {
  std::unique_ptr<CpuExecutor> ex(new CpuExecutor(std::move(program)));
  const StepProgram &prog = ex->prog;
  for (size_t i = 0; i < prog.kernels.size(); ++i)
    if (!kernels || !kernels[i])
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrFormat("kernel %d '%s' has no function in the kernel table",
                          i, prog.kernels[i].name));
  ex->kernels = kernels;
  ex->profiling = options.profile;
  ex->numThreads = options.threads > 0 ? options.threads : omp_get_num_procs();
  // oneDNN sizes its primitives for omp_get_max_threads() at creation.
  omp_set_num_threads(ex->numThreads);

  const CpuExecutor *share = nullptr;
  if (options.shareStateWith) {
    share = dynamic_cast<const CpuExecutor *>(options.shareStateWith);
    if (!share)
      return sinter::InvalidArgumentError(
          SINTER_HERE, "the executor to share state with is not a CPU one");
    SINTER_RETURN_IF_ERROR(checkSharedState(prog, share->prog));
  }
  for (int s = 0; s < sinter::abi::kNumSlabs; ++s) {
    int64_t bytes = prog.slabBytes[s];
    if (share && (s == sabi::Slab::params || s == sabi::Slab::opt_state)) {
      int8_t *base = share->slabs[s];
      ex->slabs[s] = base;
      ex->refs[s] = SlabRef{base, base, 0, bytes, 1};
      continue;
    }
    // Anonymous mappings: page-aligned (beyond the 64 bytes buffers need),
    // never 0 bytes, so every slab has a distinct base, and zero-filled by
    // the kernel as pages are first touched. Filling a GPT-sized arena
    // eagerly took most of the binary's start-up time.
    int64_t padded = (std::max<int64_t>(bytes, 1) + kPage - 1) / kPage * kPage;
    if (padded < bytes) // overflow
      return sinter::ResourceExhaustedError(
          SINTER_HERE,
          absl::StrFormat("slab '%s' of %d bytes is too large",
                          sabi::slabName(static_cast<sabi::SlabKind>(s)),
                          bytes));
    void *mapped =
        ::mmap(nullptr, static_cast<size_t>(padded), PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED)
      return sinter::ResourceExhaustedError(
          SINTER_HERE,
          absl::StrFormat("cannot allocate slab '%s' of %d bytes: %s",
                          sabi::slabName(static_cast<sabi::SlabKind>(s)), bytes,
                          std::strerror(errno)));
    // Transparent huge pages where the system allows them on request: a
    // GPT-2-sized arena is millions of 4 KiB first-touch faults otherwise,
    // which cost more than a step's compute in a VM. Advice only; failure
    // is harmless.
    if (padded >= (int64_t(2) << 20))
      ::madvise(mapped, static_cast<size_t>(padded), MADV_HUGEPAGE);
    auto *base = static_cast<int8_t *>(mapped);
    ex->slabSizes[s] = static_cast<size_t>(padded);
    ex->slabs[s] = base;
    ex->refs[s] = SlabRef{base, base, 0, bytes, 1};
  }
  for (const Constant &c : prog.constants)
    std::memcpy(ex->bufferData(c.buffer), c.bytes.data(), c.bytes.size());
  for (const Argument &a : prog.arguments) {
    if (a.kind == sabi::Argument::step)
      ex->stepBuffer = a.buffer;
    if (a.kind == sabi::Argument::hyper)
      SINTER_RETURN_IF_ERROR(ex->setHyper(a.name, *a.defaultValue));
  }

  SINTER_ASSIGN_OR_RETURN(std::unique_ptr<MatmulBackend> backend,
                          MatmulBackend::create(options.matmul));
  ex->backend = std::move(backend);
  ex->matmuls.resize(prog.steps.size());
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    const Step &step = prog.steps[i];
    if (step.kind != sabi::Step::kMatmul)
      continue;
    const MatmulStep &m = step.matmul;
    auto ptr = [&](int64_t id) {
      return id < 0 ? nullptr : ex->bufferData(id);
    };
    absl::StatusOr<std::unique_ptr<BoundMatmul>> bound = ex->backend->bind(
        prog.matmulDesc(m), ptr(m.lhs), ptr(m.rhs), ptr(m.bias), ptr(m.out));
    if (!bound.ok())
      return sinter::withMessage(
          SINTER_HERE, bound.status(),
          absl::StrFormat("step %d (matmul): %s", i, bound.status().message()));
    ex->matmuls[i] = std::move(*bound);
  }
  return ex;
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

void CpuExecutor::runKernel(int64_t index) {
  SinterKernelFn fn = kernels[index];
  const SlabRef *r = refs.data();
  const Kernel &k = prog.kernels[index];
  const int64_t *words = k.args.data();
  const sabi::WordsRef args{words, words, 0,
                            static_cast<int64_t>(k.args.size()), 1};
  int64_t extent = k.extent;
  int64_t chunks = std::min<int64_t>(numThreads, extent);
  if (chunks <= 1) {
    fn(&r[0], &r[1], &r[2], &r[3], &r[4], &args, 0, extent);
    return;
  }
  // Contiguous chunks whose sizes differ by at most one; computed without
  // extent * c, which could overflow for a huge extent.
  int64_t base = extent / chunks, rest = extent % chunks;
#pragma omp parallel for num_threads(static_cast <int>(chunks))                \
    schedule(static, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = c * base + std::min(c, rest);
    int64_t end = begin + base + (c < rest ? 1 : 0);
    fn(&r[0], &r[1], &r[2], &r[3], &r[4], &args, begin, end);
  }
}

absl::Status CpuExecutor::run() {
  using Clock = std::chrono::steady_clock;
  // Another caller may have changed the calling thread's OpenMP setting.
  omp_set_num_threads(numThreads);
  Clock::time_point runStart;
  if (profiling)
    runStart = Clock::now();
  if (checkNumerics)
    numericsLog.steps.clear();
  StepScanner scanner;
  const StepScanner::View view = [this](int64_t id) -> const void * {
    return bufferData(id);
  };
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    const Step &step = prog.steps[i];
    if (checkNumerics)
      scanner.before(prog, static_cast<int64_t>(i), view);
    Clock::time_point start;
    if (profiling)
      start = Clock::now();
    switch (step.kind) {
    case sabi::Step::kKernel:
      runKernel(step.kernel);
      break;
    case sabi::Step::kMatmul:
      if (absl::Status s = matmuls[i]->run(); !s.ok())
        return sinter::withMessage(
            SINTER_HERE, s,
            absl::StrFormat("step %d (matmul): %s", i, s.message()));
      break;
    case sabi::Step::kCopy:
      // memmove: the parser allows src and dst to overlap.
      std::memmove(bufferData(step.dst), bufferData(step.src),
                   static_cast<size_t>(prog.buffers[step.src].bytes));
      break;
    case sabi::Step::kStart:
    case sabi::Step::kDone: {
      if (!collectives)
        break; // one rank: the buffer is already the reduction
      const Collective &c = prog.collectives[step.collective];
      const Buffer &b = prog.buffers[c.buffer];
      absl::Status s =
          step.kind == sabi::Step::kStart
              ? collectives->start(step.collective, c, bufferData(c.buffer),
                                   b.numElements, b.type)
              : collectives->done(step.collective, c);
      if (!s.ok())
        return s;
      break;
    }
    }
    if (checkNumerics)
      scanner.after(prog, view, numericsLog);
    if (observer)
      SINTER_RETURN_IF_ERROR(observer(static_cast<int64_t>(i), view));
    if (!profiling)
      continue;
    recorder.addStep(prog, static_cast<int64_t>(i), secondsSince(start));
  }
  if (profiling)
    recorder.finishRun(secondsSince(runStart));
  return absl::OkStatus();
}

//===----------------------------------------------------------------------===//
// Transfers, the step counter and hyper arguments
//===----------------------------------------------------------------------===//

absl::Status CpuExecutor::shareCollectiveBuffers() {
  if (!collectives || prog.collectives.empty())
    return absl::OkStatus();
  // The pages each bucket touches, merged where they overlap or touch (the
  // buffers are in one slab, so equal offsets on every rank).
  std::vector<std::pair<int64_t, int64_t>> pages;
  int slab = -1;
  for (const Collective &c : prog.collectives) {
    const Buffer &b = prog.buffers[c.buffer];
    if (slab >= 0 && static_cast<int>(b.slab) != slab)
      return absl::OkStatus(); // buckets in several slabs: left as they are
    slab = static_cast<int>(b.slab);
    pages.emplace_back(b.offset / kPage * kPage,
                       (b.offset + b.bytes + kPage - 1) / kPage * kPage);
  }
  std::sort(pages.begin(), pages.end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto &range : pages)
    if (!merged.empty() && range.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, range.second);
    else
      merged.push_back(range);
  for (const auto &[lo, hi] : merged)
    SINTER_RETURN_IF_ERROR(collectives->shareHostMemory(
        slabs[slab] + lo, static_cast<size_t>(hi - lo)));
  return absl::OkStatus();
}

void *CpuExecutor::bufferData(int64_t id) const {
  const Buffer &b = prog.buffers[id];
  return slabs[static_cast<int>(b.slab)] + b.offset;
}

absl::Status CpuExecutor::upload(int64_t bufferId, const void *host,
                                 size_t bytes) {
  SINTER_RETURN_IF_ERROR(checkTransfer("upload to", bufferId, bytes));
  if (bytes)
    std::memcpy(bufferData(bufferId), host, bytes);
  return absl::OkStatus();
}

absl::Status CpuExecutor::download(int64_t bufferId, void *host,
                                   size_t bytes) const {
  SINTER_RETURN_IF_ERROR(checkTransfer("download from", bufferId, bytes));
  if (bytes)
    std::memcpy(host, bufferData(bufferId), bytes);
  return absl::OkStatus();
}

absl::Status CpuExecutor::downloadPart(int64_t bufferId, size_t offset,
                                       void *host, size_t bytes) const {
  SINTER_RETURN_IF_ERROR(checkPart("download from", bufferId, offset, bytes));
  if (bytes)
    std::memcpy(host, static_cast<const char *>(bufferData(bufferId)) + offset,
                bytes);
  return absl::OkStatus();
}

absl::Status CpuExecutor::zeroBuffer(int64_t bufferId) {
  if (bufferId < 0 || bufferId >= static_cast<int64_t>(prog.buffers.size()))
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrFormat("zeroBuffer: no buffer %d", bufferId));
  std::memset(bufferData(bufferId), 0,
              static_cast<size_t>(prog.buffers[bufferId].bytes));
  return absl::OkStatus();
}

absl::Status CpuExecutor::setStep(int64_t step) {
  if (stepBuffer >= 0)
    std::memcpy(bufferData(stepBuffer), &step, sizeof(step));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CpuExecutor::step() const {
  int64_t value = 0;
  if (stepBuffer >= 0)
    std::memcpy(&value, bufferData(stepBuffer), sizeof(value));
  return value;
}

absl::Status CpuExecutor::setHyper(std::string_view name, double value) {
  SINTER_ASSIGN_OR_RETURN(HyperValue hyper, hyperValue(name, value));
  std::memcpy(bufferData(hyper.buffer), hyper.bytes, hyper.size);
  return absl::OkStatus();
}

//===----------------------------------------------------------------------===//
// Profile
//===----------------------------------------------------------------------===//

std::string CpuExecutor::formatProfile(int topKernels) const {
  return formatProfileReport(prog, recorder.profile(), recorder.firstOnly(),
                             absl::StrFormat("%d threads", numThreads),
                             topKernels);
}
