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
#include <numeric>

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
  for (Profile *p : {&ex->prof, &ex->firstRun, &ex->current}) {
    p->perKernelSeconds.assign(prog.kernels.size(), 0);
    p->perKernelCalls.assign(prog.kernels.size(), 0);
    p->perMatmulSeconds.assign(prog.steps.size(), 0);
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
  std::vector<int64_t> reads, writes;
  StepScan scan;
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    const Step &step = prog.steps[i];
    if (checkNumerics)
      scanStep(static_cast<int64_t>(i), /*before=*/true, reads, writes, scan);
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
      scanStep(static_cast<int64_t>(i), /*before=*/false, reads, writes, scan);
    if (!profiling)
      continue;
    double seconds = secondsSince(start);
    switch (step.kind) {
    case sabi::Step::kKernel:
      current.kernelSeconds += seconds;
      current.perKernelSeconds[step.kernel] += seconds;
      ++current.perKernelCalls[step.kernel];
      break;
    case sabi::Step::kMatmul:
      current.matmulSeconds += seconds;
      current.perMatmulSeconds[i] += seconds;
      break;
    case sabi::Step::kCopy:
      current.copySeconds += seconds;
      break;
    case sabi::Step::kStart:
    case sabi::Step::kDone:
      current.collectiveSeconds += seconds;
      break;
    }
  }
  if (profiling)
    finishProfiledRun(secondsSince(runStart));
  return absl::OkStatus();
}

void CpuExecutor::scanStep(int64_t index, bool before,
                           std::vector<int64_t> &reads,
                           std::vector<int64_t> &writes, StepScan &scan) {
  // A healthy step costs one vectorized exponent test per buffer; ranges
  // and counts are computed only for a step that is recorded. A read the
  // step overwrites in place is scanned in full before it runs, while its
  // values are still there.
  auto overlapsWrite = [&](int64_t id) {
    const Buffer &r = prog.buffers[id];
    for (int64_t w : writes) {
      const Buffer &b = prog.buffers[w];
      if (b.slab == r.slab && b.offset < r.offset + r.bytes &&
          r.offset < b.offset + b.bytes)
        return true;
    }
    return false;
  };
  BufferScan b;
  if (before) {
    prog.stepBuffers(index, reads, writes);
    scan.step = index;
    scan.reads.clear();
    scan.writes.clear();
    stepFinite = true;
    for (int64_t id : reads) {
      bool finite = allFinite(prog, id, bufferData(id));
      stepFinite &= finite;
      if ((!finite || overlapsWrite(id)) &&
          scanBuffer(prog, id, bufferData(id), b))
        scan.reads.push_back(b);
    }
    return;
  }
  for (int64_t id : writes)
    stepFinite &= allFinite(prog, id, bufferData(id));
  if (stepFinite)
    return;
  // Recorded: every float read and write in full, reads in step order.
  std::vector<BufferScan> scanned = std::move(scan.reads);
  scan.reads.clear();
  for (int64_t id : reads) {
    auto it = std::find_if(scanned.begin(), scanned.end(),
                           [&](const BufferScan &s) { return s.buffer == id; });
    if (it != scanned.end())
      scan.reads.push_back(*it);
    else if (scanBuffer(prog, id, bufferData(id), b))
      scan.reads.push_back(b);
  }
  for (int64_t id : writes)
    if (scanBuffer(prog, id, bufferData(id), b))
      scan.writes.push_back(b);
  numericsLog.steps.push_back(scan);
}

void CpuExecutor::finishProfiledRun(double seconds) {
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
  for (size_t i = 0; i < current.perMatmulSeconds.size(); ++i)
    into.perMatmulSeconds[i] += current.perMatmulSeconds[i];
  if (first)
    prof.firstRunSeconds = firstRun.firstRunSeconds = seconds;
  size_t n = current.perKernelSeconds.size();
  current = Profile();
  current.perKernelSeconds.assign(n, 0);
  current.perKernelCalls.assign(n, 0);
  current.perMatmulSeconds.assign(prog.steps.size(), 0);
}

//===----------------------------------------------------------------------===//
// Transfers, the step counter and hyper arguments
//===----------------------------------------------------------------------===//

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
  const Profile &p = profile();
  if (p.runs == 0)
    return "profile: no runs recorded\n";
  double perRun = 1e3 / static_cast<double>(p.runs);
  auto pct = [&](double s) {
    return p.totalSeconds > 0 ? 100.0 * s / p.totalSeconds : 0.0;
  };
  std::string out =
      absl::StrFormat("profile: %d runs, %d threads, %.3f ms/run\n", p.runs,
                      numThreads, p.totalSeconds * perRun);
  if (&p == &prof)
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
  for (size_t i = 0; i < p.perMatmulSeconds.size(); ++i)
    if (prog.steps[i].kind == sabi::Step::kMatmul)
      steps.push_back(i);
  steps = slowest(std::move(steps), p.perMatmulSeconds);
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
    std::string where;
    if (!step.origins.empty() && !step.origins.front().layer.empty())
      where = "  " + step.origins.front().layer;
    out += absl::StrFormat(
        "    step %-4d %-28s %-4s %10.3f ms/run %6.2f%% %7.1f GFLOP/s%s\n", i,
        shape, std::string(sabi::dtypeName(d.dtype)),
        p.perMatmulSeconds[i] * perRun, pct(p.perMatmulSeconds[i]),
        gflops(flops[i] * p.runs, p.perMatmulSeconds[i]), where);
  }
  return out;
}
