//===- Bisect.cpp - a binary's step-by-step trace against the interpreter -===//

#include "compiler/Interpreter/Bisect.h"

#include "compiler/Interpreter/Files.h"

#include "abi/Abi.h"
#include "dialects/Schedule/ScheduleOps.h"
#include "runtime/Formats/AbslCompat.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace mlir;
using namespace sinter;
using namespace sinter::interp;
using formats::DType;

namespace {

std::string typeText(sched::BufferType type) {
  std::string shape;
  for (int64_t d : type.getShape())
    shape += (shape.empty() ? "" : "x") + std::to_string(d);
  std::string element;
  llvm::raw_string_ostream os(element);
  os << type.getElementType();
  return element + " [" + shape + "]";
}

} // namespace

FailureOr<std::unique_ptr<Bisection>>
Bisection::open(const std::string &path, double rtol, MLIRContext *context) {
  Location at = FileLineColLoc::get(context, path, 0, 0);
  absl::StatusOr<formats::SafeTensorsFile> file =
      formats::readSafeTensors(path);
  if (!file.ok())
    return fileError(context, path, file.status());
  auto marker = file->metadata.find(std::string(sinter::abi::kTraceMarker));
  auto steps = file->metadata.find(std::string(sinter::abi::kTraceSteps));
  int64_t count = 0;
  if (marker == file->metadata.end() || marker->second != "1" ||
      steps == file->metadata.end() ||
      !llvm::to_integer(steps->second, count, 10) || count < 0)
    return emitError(at) << "is not a step trace (make one with the "
                            "binary's --inputs=FILE --trace=TRACE)";
  std::unique_ptr<Bisection> b(new Bisection(*std::move(file), path, rtol));
  b->traceSteps = count;
  return b;
}

LogicalResult Bisection::matches(sched::ProgramOp program) {
  int64_t count = 0;
  for (Operation &op : program.getBlock())
    count += isa<sched::LaunchOp, sched::MatmulOp, sched::CopyOp,
                 sched::AllReduceStartOp, sched::AllReduceDoneOp>(op);
  std::string missing;
  for (auto arg : program.getBlock().getOps<sched::ArgumentOp>()) {
    bool found = trace.find(arg.getName().str());
    if (auto aliases = arg.getAliases())
      for (auto alias : aliases->getAsRange<StringAttr>())
        found |= trace.find(alias.str()) != nullptr;
    if (!found && missing.empty())
      missing = arg.getName().str();
  }
  if (count == traceSteps && missing.empty())
    return success();
  InFlightDiagnostic diag =
      emitError(FileLineColLoc::get(program.getContext(), path, 0, 0))
      << "is a trace of another program: ";
  if (count != traceSteps)
    diag << "it has " << traceSteps << " steps, @" << program.getSymName()
         << " has " << count;
  else
    diag << "it has no argument '" << missing << "' of @"
         << program.getSymName();
  diag << " (compile with the flags that built the binary)";
  return failure();
}

std::string Bisection::function() const {
  auto it = trace.metadata.find(std::string(sinter::abi::kTraceFunction));
  return it == trace.metadata.end() ? std::string() : it->second;
}

bool Bisection::StepResult::over() const {
  return llvm::any_of(writes, [](const Write &w) { return w.over(); });
}

double Bisection::StepResult::error() const {
  double worst = 0;
  for (const Write &w : writes)
    worst = std::max(worst, w.nonFinite ? INFINITY : w.error / w.tolerance);
  return worst;
}

std::string Bisection::describe(int64_t step) const {
  auto it = trace.metadata.find(std::string(sinter::abi::kTraceStepPrefix) +
                                std::to_string(step));
  return it == trace.metadata.end() ? std::string("?") : it->second;
}

LogicalResult Bisection::onStep(const StepWrites &w) {
  if (w.index >= traceSteps)
    return w.op->emitOpError("is step ")
           << w.index << " of the program, and the trace " << path << " has "
           << traceSteps
           << " steps: it was made by another program (compile with the "
              "flags that built the binary)";
  // Which elements of the product a matmul marked out_lower leaves as 0s.
  int64_t side = 0;
  if (auto mm = dyn_cast<sched::MatmulOp>(w.op))
    if (mm.getTriangle() == "out_lower") {
      ArrayRef<int64_t> shape =
          cast<sched::BufferType>(mm.getOut().getType()).getShape();
      side = shape.back();
    }
  StepResult result;
  result.index = w.index;
  for (auto [j, entry] : llvm::enumerate(w.buffers)) {
    auto [buffer, bytes] = entry;
    auto type = cast<sched::BufferType>(buffer.getType());
    std::string name =
        sinter::abi::traceWriteName(w.index, static_cast<int64_t>(j));
    const formats::HostTensor *theirs = trace.find(name);
    std::optional<ElementKind> kind = kindOf(type.getElementType());
    std::optional<DType> dtype =
        kind ? std::optional<DType>(dtypeOfKind(*kind)) : std::nullopt;
    if (!theirs || theirs->data.size() != bytes.size() ||
        (dtype && theirs->dtype != *dtype))
      return w.op->emitOpError("writes ")
             << typeText(type) << " as its write " << j << ", and the trace "
             << path
             << (theirs ? " has another type or size there"
                        : " has no such write")
             << " (step " << w.index
             << "): it was made by another program (compile with the flags "
                "that built the binary)";
    Write out;
    out.index = static_cast<int64_t>(j);
    out.type = typeText(type);
    if (!kind) {
      // No element the interpreter holds: the bytes must match.
      out.tolerance = 0;
      out.error =
          std::memcmp(theirs->data.data(), bytes.data(), bytes.size()) == 0 ? 0
                                                                            : 1;
    } else {
      std::vector<int64_t> shape(type.getShape());
      Tensor ref = tensorFromBytes(*kind, shape, bytes.data());
      Tensor bin = tensorFromBytes(*kind, shape, theirs->data.data());
      bool half = *kind == ElementKind::BF16 || *kind == ElementKind::F16;
      out.tolerance = ref.isFloat() ? (half ? 10 * rtol : rtol) : 0;
      // Units in the last place of a half: bit patterns as ordered
      // integers.
      auto ordered = [](const uint8_t *at) {
        int32_t v = at[0] | (at[1] << 8);
        return (v & 0x8000) ? 0x8000 - v : v;
      };
      if (half)
        out.ulps = 0;
      double diff2 = 0, ref2 = 0, largest = -1;
      int64_t differing = 0, n = ref.numElements();
      for (int64_t k = 0; k < n; ++k) {
        if (side && j == 0 && k % side > (k / side) % side)
          continue; // above the diagonal of an out_lower product
        double r = ref.get(k), b = bin.get(k);
        if (!ref.isFloat()) {
          differing += r != b;
          if (r != b && largest < 0) {
            largest = 0;
            out.worst = k, out.binary = b, out.interpreter = r;
          }
          continue;
        }
        if (std::isfinite(r) && std::isfinite(b)) {
          if (half)
            out.ulps = std::max<int64_t>(
                out.ulps, std::abs(ordered(bytes.data() + 2 * k) -
                                   ordered(theirs->data.data() + 2 * k)));
          diff2 += (b - r) * (b - r);
          ref2 += r * r;
          if (std::fabs(b - r) > largest) {
            largest = std::fabs(b - r);
            out.worst = k, out.binary = b, out.interpreter = r;
          }
        } else if (!(std::isnan(r) && std::isnan(b)) && r != b) {
          if (out.nonFinite++ == 0)
            out.worst = k, out.binary = b, out.interpreter = r,
            largest = INFINITY;
        }
      }
      if (!ref.isFloat())
        out.error = n ? static_cast<double>(differing) / n : 0;
      else
        out.error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    }
    result.writes.push_back(out);
    // The next steps start from what the binary wrote.
    std::memcpy(bytes.data(), theirs->data.data(), bytes.size());
  }
  steps.push_back(std::move(result));
  return success();
}

LogicalResult Bisection::finish(raw_ostream &os) {
  int64_t ran = static_cast<int64_t>(steps.size());
  os << "bisect: @" << function() << ", " << ran
     << " steps, each run by the reference interpreter on the binary's "
        "inputs to it and held against the binary's results ("
     << path << ")\n";
  if (ran != traceSteps) {
    os << "error: the program has " << ran << " steps and the trace "
       << traceSteps << ": it was made by another program\n";
    return failure();
  }
  auto writeText = [&](const Write &w) {
    std::string text;
    llvm::raw_string_ostream t(text);
    t << "write " << w.index << ", " << w.type << ": ";
    if (w.nonFinite)
      t << w.nonFinite << " NaN or infinite value(s) where the interpreter "
        << "has another value";
    else if (w.tolerance == 0)
      t << llvm::format("%.3g", w.error) << " of the elements differ";
    else
      t << "normwise relative difference " << llvm::format("%.3g", w.error)
        << " (tolerance " << llvm::format("%.0e", w.tolerance) << ")";
    if (w.ulps >= 0)
      t << ", at most " << w.ulps << " unit(s) in the last place";
    if (w.worst >= 0)
      t << "; the largest at element " << w.worst << ": binary "
        << llvm::format("%.9g", w.binary) << ", interpreter "
        << llvm::format("%.9g", w.interpreter);
    return text;
  };
  std::vector<const StepResult *> over;
  for (const StepResult &s : steps)
    if (s.over())
      over.push_back(&s);
  std::vector<const StepResult *> ranked;
  for (const StepResult &s : steps)
    ranked.push_back(&s);
  llvm::stable_sort(ranked, [](const StepResult *a, const StepResult *b) {
    return a->error() > b->error();
  });
  if (over.empty()) {
    os << "every step within its tolerance";
    if (!ranked.empty() && ranked.front()->error() > 0) {
      const StepResult &s = *ranked.front();
      os << "; the closest to it: step " << s.index << " (" << describe(s.index)
         << ")";
      for (const Write &w : s.writes)
        if (w.error > 0)
          os << "\n  " << writeText(w);
    }
    os << "\n";
    return success();
  }
  const StepResult &first = *over.front();
  os << "first step over its tolerance: step " << first.index << " ("
     << describe(first.index) << ")\n";
  for (const Write &w : first.writes)
    os << "  " << writeText(w) << "\n";
  os << over.size() << " step(s) over their tolerance:";
  for (size_t k = 0; k < over.size() && k < 20; ++k)
    os << " " << over[k]->index;
  if (over.size() > 20)
    os << " ...";
  os << "\n";
  return failure();
}
