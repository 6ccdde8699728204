//===- Numerics.cpp - where a step's first non-finite value came from ----===//

#include "runtime/Exec/Numerics.h"

#include "abi/HalfFloat.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Formats/HostTensor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

using namespace sinter;
using namespace sinter::exec;
namespace sabi = sinter::abi;

namespace {

/// A parameter this large has diverged: trained weights stay within a few
/// hundred, and f32 overflows from 3.4e38.
constexpr double kDivergedMagnitude = 1e8;

template <typename Load>
void scanElements(int64_t count, Load load, BufferScan &out) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int64_t i = 0; i < count; ++i) {
    double v = load(i);
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      continue;
    }
    if (out.firstBad < 0)
      out.firstBad = i;
    if (std::isnan(v))
      ++out.nan;
    else if (v > 0)
      ++out.posInf;
    else
      ++out.negInf;
  }
  out.min = lo;
  out.max = hi;
}

/// Whether buffers `a` and `b` share bytes.
bool overlaps(const Buffer &a, const Buffer &b) {
  return a.slab == b.slab && a.offset < b.offset + b.bytes &&
         b.offset < a.offset + a.bytes;
}

/// Whether `id` is a result the trainer reads or keeps (the loss, a metric,
/// a parameter, optimizer state): a non-finite value there is a fault even
/// without a NaN.
bool isResult(const StepProgram &program, int64_t id) {
  for (const Result &r : program.results)
    if (overlaps(program.buffers[r.buffer], program.buffers[id]))
      return true;
  return false;
}

/// "'fc1.weight' [256x784] f32" or "[64x10] f32 activations".
std::string bufferText(const StepProgram &program, int64_t id) {
  const Buffer &b = program.buffers[id];
  std::string text = absl::StrFormat("[%s] %s", absl::StrJoin(b.shape, "x"),
                                     std::string(sabi::dtypeName(b.type)));
  for (const Result &r : program.results)
    if (r.buffer == id)
      return absl::StrCat(formats::quoteForMessage(r.name), " ", text);
  if (!b.name.empty())
    return absl::StrCat(formats::quoteForMessage(b.name), " ", text);
  return b.category.empty() ? text : absl::StrCat(text, " ", b.category);
}

std::string badText(const BufferScan &s) {
  std::vector<std::string> parts;
  if (s.nan)
    parts.push_back(absl::StrFormat("%d NaN", s.nan));
  if (s.posInf)
    parts.push_back(absl::StrFormat("%d +inf", s.posInf));
  if (s.negInf)
    parts.push_back(absl::StrFormat("%d -inf", s.negInf));
  return absl::StrFormat("%s of %d values (the first at element %d)",
                         absl::StrJoin(parts, ", "), s.elements, s.firstBad);
}

std::string rangeText(const BufferScan &s) {
  if (s.min > s.max)
    return "no finite values";
  return absl::StrFormat("in [%g, %g]", s.min, s.max);
}

} // namespace

bool sinter::exec::scanBuffer(const StepProgram &program, int64_t buffer,
                              const void *data, BufferScan &out) {
  const Buffer &b = program.buffers[buffer];
  out = BufferScan();
  out.buffer = buffer;
  out.elements = b.numElements;
  const auto *bytes = static_cast<const unsigned char *>(data);
  auto load = [bytes](auto tag, int64_t i) {
    decltype(tag) v;
    std::memcpy(&v, bytes + i * sizeof v, sizeof v);
    return v;
  };
  switch (b.type) {
  case sabi::ElementType::f32:
    scanElements(
        b.numElements, [&](int64_t i) { return double(load(float(), i)); },
        out);
    return true;
  case sabi::ElementType::f64:
    scanElements(
        b.numElements, [&](int64_t i) { return load(double(), i); }, out);
    return true;
  case sabi::ElementType::bf16:
    scanElements(
        b.numElements,
        [&](int64_t i) {
          return double(half::bf16BitsToFloat(load(uint16_t(), i)));
        },
        out);
    return true;
  case sabi::ElementType::f16:
    scanElements(
        b.numElements,
        [&](int64_t i) {
          return double(half::f16BitsToFloat(load(uint16_t(), i)));
        },
        out);
    return true;
  default:
    return false;
  }
}

namespace {

/// Whether no element of `words` has every bit of `exponent` set (an
/// infinity or a NaN). Branch-free, so that it vectorizes.
template <typename Word>
bool exponentsFinite(const unsigned char *bytes, int64_t count, Word exponent) {
  bool bad = false;
  for (int64_t i = 0; i < count; ++i) {
    Word w;
    std::memcpy(&w, bytes + i * sizeof(Word), sizeof(Word));
    bad |= (w & exponent) == exponent;
  }
  return !bad;
}

} // namespace

bool sinter::exec::allFinite(const StepProgram &program, int64_t buffer,
                             const void *data) {
  const Buffer &b = program.buffers[buffer];
  const auto *bytes = static_cast<const unsigned char *>(data);
  switch (b.type) {
  case sabi::ElementType::f32:
    return exponentsFinite<uint32_t>(bytes, b.numElements, 0x7f800000u);
  case sabi::ElementType::f64:
    return exponentsFinite<uint64_t>(bytes, b.numElements,
                                     0x7ff0000000000000ull);
  case sabi::ElementType::bf16:
    return exponentsFinite<uint16_t>(bytes, b.numElements, 0x7f80);
  case sabi::ElementType::f16:
    return exponentsFinite<uint16_t>(bytes, b.numElements, 0x7c00);
  default:
    return true;
  }
}

void sinter::exec::StepScanner::before(const StepProgram &program, int64_t step,
                                       const View &view) {
  program.stepBuffers(step, reads, writes);
  scan.step = step;
  scan.reads.clear();
  scan.writes.clear();
  finite = true;
  auto overlapsWrite = [&](int64_t id) {
    const Buffer &r = program.buffers[id];
    for (int64_t w : writes) {
      const Buffer &b = program.buffers[w];
      if (b.slab == r.slab && b.offset < r.offset + r.bytes &&
          r.offset < b.offset + b.bytes)
        return true;
    }
    return false;
  };
  BufferScan b;
  for (int64_t id : reads) {
    const void *data = view(id);
    if (!data)
      return;
    bool ok = allFinite(program, id, data);
    finite &= ok;
    if ((!ok || overlapsWrite(id)) && scanBuffer(program, id, data, b))
      scan.reads.push_back(b);
  }
}

void sinter::exec::StepScanner::after(const StepProgram &program,
                                      const View &view, NumericsLog &log) {
  for (int64_t id : writes) {
    const void *data = view(id);
    if (!data)
      return;
    finite &= allFinite(program, id, data);
  }
  if (finite)
    return;
  // Recorded: every float read and write in full, reads in step order.
  std::vector<BufferScan> scanned = std::move(scan.reads);
  scan.reads.clear();
  BufferScan b;
  for (int64_t id : reads) {
    auto it = std::find_if(scanned.begin(), scanned.end(),
                           [&](const BufferScan &s) { return s.buffer == id; });
    if (it != scanned.end()) {
      scan.reads.push_back(*it);
      continue;
    }
    const void *data = view(id);
    if (!data)
      return;
    if (scanBuffer(program, id, data, b))
      scan.reads.push_back(b);
  }
  for (int64_t id : writes) {
    const void *data = view(id);
    if (!data)
      return;
    if (scanBuffer(program, id, data, b))
      scan.writes.push_back(b);
  }
  log.steps.push_back(scan);
}

absl::Span<const Origin> sinter::exec::originsOf(const Step &step,
                                                 int64_t member) {
  absl::Span<const Origin> all(step.origins);
  if (member < 0 || member >= static_cast<int64_t>(step.members.size()))
    return all;
  size_t first = 0;
  for (int64_t m = 0; m < member; ++m)
    first += static_cast<size_t>(step.members[m].origins);
  return all.subspan(std::min(first, all.size()),
                     static_cast<size_t>(step.members[member].origins));
}

std::optional<Fault> sinter::exec::findFault(const StepProgram &program,
                                             const NumericsLog &log) {
  // The trigger: the first step that wrote a NaN, else the first that
  // wrote a non-finite value into a result; and the buffer it wrote.
  auto firstWrite =
      [&](auto wanted) -> std::optional<std::pair<size_t, const BufferScan *>> {
    for (size_t k = 0; k < log.steps.size(); ++k)
      for (const BufferScan &w : log.steps[k].writes)
        if (wanted(w))
          return std::pair(k, &w);
    return std::nullopt;
  };
  auto at = firstWrite([](const BufferScan &w) { return w.nan > 0; });
  if (!at)
    at = firstWrite([&](const BufferScan &w) {
      return !w.finite() && isResult(program, w.buffer);
    });
  if (!at)
    return std::nullopt;

  // Back through the first non-finite input of each step to the step that
  // wrote it, until a step's inputs are finite. A merged launch's members
  // are steps of their own here: only the member that wrote the value
  // read anything that made it.
  auto [k, wrote] = *at;
  for (;;) {
    const StepScan &s = log.steps[k];
    const Step &step = program.steps[static_cast<size_t>(s.step)];
    int64_t member = -1;
    for (size_t m = 0; m < step.members.size() && member < 0; ++m)
      for (int64_t out : step.members[m].outputs)
        if (out == wrote->buffer)
          member = static_cast<int64_t>(m);
    std::vector<BufferScan> reads;
    for (const BufferScan &r : s.reads)
      if (member < 0 || std::count(step.members[member].inputs.begin(),
                                   step.members[member].inputs.end(), r.buffer))
        reads.push_back(r);
    auto input = std::find_if(reads.begin(), reads.end(),
                              [](const BufferScan &r) { return !r.finite(); });
    if (input == reads.end()) {
      Fault f;
      f.step = s.step;
      f.value =
          member >= 0
              ? *wrote
              : *std::find_if(s.writes.begin(), s.writes.end(),
                              [](const BufferScan &w) { return !w.finite(); });
      f.inputs = std::move(reads);
      f.member = member;
      return f;
    }
    const Buffer &read = program.buffers[input->buffer];
    std::optional<size_t> producer;
    for (size_t j = k; j-- > 0 && !producer;)
      for (const BufferScan &w : log.steps[j].writes)
        if (!w.finite() && overlaps(program.buffers[w.buffer], read)) {
          producer = j;
          wrote = &w;
          break;
        }
    if (!producer) {
      Fault f;
      f.value = *input;
      return f;
    }
    k = *producer;
  }
}

std::vector<const Origin *> sinter::exec::suspects(const StepProgram &program,
                                                   const Fault &fault) {
  std::vector<const Origin *> out;
  if (fault.step < 0)
    return out;
  static const std::set<std::string> domain = {"log", "sqrt", "rsqrt", "pow",
                                               "div"};
  static const std::set<std::string> overflow = {"exp", "log", "rsqrt",
                                                 "pow", "div", "cast"};
  const Step &step = program.steps[static_cast<size_t>(fault.step)];
  auto pick = [&](const std::set<std::string> *kinds) {
    for (const Origin &o : originsOf(step, fault.member))
      if (!kinds || kinds->count(o.op))
        out.push_back(&o);
  };
  // A NaN made inside one step may also be an overflow met by a 0 or
  // another infinity there (exp(x) * 0).
  if (fault.value.nan)
    pick(&domain);
  if (out.empty())
    pick(&overflow);
  if (out.empty())
    pick(nullptr);
  return out;
}

std::optional<std::string>
sinter::exec::receivedFault(const StepProgram &program, const Fault &fault) {
  if (fault.step < 0)
    return std::nullopt;
  const Step &step = program.steps[static_cast<size_t>(fault.step)];
  if (step.kind != sabi::Step::kDone)
    return std::nullopt;
  const Collective &c =
      program.collectives[static_cast<size_t>(step.collective)];
  std::string made = fault.value.nan ? "NaN" : "an infinity";
  std::string what = absl::StrFormat("the all-reduce of %s", c.name);
  // An f32 bucket travelling as f16 overflows past f16's largest value,
  // which this rank's own values may reach.
  if (c.commType == abi::ElementType::f16 && !fault.value.nan)
    for (const BufferScan &in : fault.inputs)
      if (in.min <= in.max &&
          std::max(std::fabs(in.min), std::fabs(in.max)) > 65504)
        return absl::StrFormat(
            "%s overflowed f16 in transit (data_parallel.grad_comm_dtype): "
            "this rank's gradients reach %g, beyond f16's 65504",
            what, std::max(std::fabs(in.min), std::fabs(in.max)));
  return absl::StrFormat(
      "%s returned %s from this rank's finite gradients: another rank sent "
      "it (that rank's error names where it began)",
      what, made);
}

std::string sinter::exec::describeOrigin(const Origin &o) {
  std::string text = o.op;
  if (!o.layer.empty())
    absl::StrAppend(&text, o.op.empty() ? "layer " : " of layer ",
                    formats::quoteForMessage(o.layer));
  if (!o.file.empty())
    absl::StrAppend(&text,
                    absl::StrFormat(" (%s:%d:%d)", o.file, o.line, o.column));
  return text;
}

std::string sinter::exec::stepKindText(const StepProgram &program,
                                       const Step &step) {
  if (step.kind == sabi::Step::kKernel)
    return absl::StrCat("kernel ",
                        program.kernels[static_cast<size_t>(step.kernel)].name);
  return std::string(sabi::stepKindName(step.kind));
}

std::string sinter::exec::describeFault(const StepProgram &program,
                                        const Fault &fault) {
  if (fault.step < 0) {
    const Buffer &b = program.buffers[fault.value.buffer];
    std::string what = "a buffer";
    for (const Argument &a : program.arguments)
      if (overlaps(program.buffers[a.buffer], b))
        what = absl::StrCat(std::string(sabi::argumentKindName(a.kind)), " ",
                            formats::quoteForMessage(a.name));
    return absl::StrFormat(
        "%s already held %s when %s began (so an earlier step, or the data, "
        "made them)",
        what, badText(fault.value), program.function);
  }
  const Step &step = program.steps[static_cast<size_t>(fault.step)];
  if (std::optional<std::string> received = receivedFault(program, fault)) {
    std::string out =
        absl::StrFormat("program step %d of %s: %s (%s into %s)", fault.step,
                        program.function, *received, badText(fault.value),
                        bufferText(program, fault.value.buffer));
    for (const BufferScan &in : fault.inputs)
      absl::StrAppend(&out, absl::StrFormat("\n  this rank's %s %s",
                                            bufferText(program, in.buffer),
                                            rangeText(in)));
    return out;
  }
  std::string kind = stepKindText(program, step);
  if (fault.member >= 0)
    absl::StrAppend(&kind,
                    absl::StrFormat(", member %d of %d", fault.member + 1,
                                    step.members.size()));
  std::string out = absl::StrFormat(
      "program step %d of %s (%s) wrote %s into %s, from finite inputs",
      fault.step, program.function, kind, badText(fault.value),
      bufferText(program, fault.value.buffer));
  for (size_t i = 0; i < fault.inputs.size(); ++i)
    absl::StrAppend(&out,
                    absl::StrFormat("\n  input %s %s",
                                    bufferText(program, fault.inputs[i].buffer),
                                    rangeText(fault.inputs[i])));
  // Parameters far beyond any trained model's: the values did not go bad
  // here, they grew over the steps before (a learning rate too large).
  auto diverged = [&]() -> std::string {
    for (const BufferScan &in : fault.inputs) {
      double magnitude = std::max(std::fabs(in.min), std::fabs(in.max));
      if (in.min > in.max || magnitude <= kDivergedMagnitude)
        continue;
      for (const Argument &a : program.arguments)
        if (a.kind == sabi::Argument::param &&
            overlaps(program.buffers[a.buffer], program.buffers[in.buffer]))
          return absl::StrFormat(
              "\n  the parameters themselves diverged: %s reaches %g in "
              "magnitude (lower --lr, or clip the gradients: "
              "training.grad_clip)",
              formats::quoteForMessage(a.name), magnitude);
    }
    return "";
  };
  absl::StrAppend(&out, diverged());
  absl::Span<const Origin> origins = originsOf(step, fault.member);
  if (origins.empty())
    return out;
  std::vector<const Origin *> candidates = suspects(program, fault);
  std::vector<std::string> all;
  for (const Origin &o : origins)
    all.push_back(describeOrigin(o));
  if (candidates.size() == 1) {
    absl::StrAppend(&out, "\n  the op: ", describeOrigin(*candidates.front()));
    if (origins.size() > 1)
      absl::StrAppend(
          &out, absl::StrFormat(" (the only one of the step's %d ops that "
                                "makes %s from finite values)",
                                origins.size(),
                                fault.value.nan ? "NaN" : "an infinity"));
    return out;
  }
  std::vector<std::string> named;
  for (const Origin *o : candidates)
    named.push_back(describeOrigin(*o));
  absl::StrAppend(&out, "\n  the step computes: ", absl::StrJoin(all, "; "));
  if (!named.empty() && named.size() < all.size())
    absl::StrAppend(&out, "\n  of these, what can make ",
                    fault.value.nan ? "NaN" : "an infinity",
                    " from finite values: ", absl::StrJoin(named, "; "));
  return out;
}
