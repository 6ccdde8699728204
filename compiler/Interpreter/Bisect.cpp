//===- Bisect.cpp - a binary's step-by-step trace against the interpreter -===//

#include "compiler/Interpreter/Bisect.h"

#include "compiler/Interpreter/Compare.h"
#include "compiler/Interpreter/Files.h"

#include "abi/Abi.h"
#include "dialects/Schedule/ScheduleOps.h"
#include "runtime/Formats/AbslCompat.h"

#include "google/protobuf/util/message_differencer.h"
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

namespace {

/// The first place where the binary's step program and the one this
/// compilation builds differ, as "step 37: modified: matmul.triangle: ...".
std::string firstDifference(const sinter::abi::StepProgram &binary,
                            const sinter::abi::StepProgram &compiled) {
  using google::protobuf::util::MessageDifferencer;
  auto differences = [](const google::protobuf::Message &a,
                        const google::protobuf::Message &b) {
    std::string text;
    MessageDifferencer d;
    d.ReportDifferencesToString(&text);
    d.Compare(a, b);
    // The first line, without its newline.
    return text.substr(0, text.find('\n'));
  };
  // Steps first (where other flags show), then buffers, then the rest.
  if (binary.steps_size() != compiled.steps_size())
    return "it has " + std::to_string(binary.steps_size()) + " steps, @" +
           compiled.function() + " has " +
           std::to_string(compiled.steps_size());
  auto differ = [&](const std::string &what, const google::protobuf::Message &a,
                    const google::protobuf::Message &b) {
    return what + " differs (from the binary's to this compilation's: " +
           differences(a, b) + ")";
  };
  for (int i = 0; i < binary.steps_size(); ++i)
    if (!MessageDifferencer::Equals(binary.steps(i), compiled.steps(i)))
      return differ("step " + std::to_string(i), binary.steps(i),
                    compiled.steps(i));
  if (binary.buffers_size() == compiled.buffers_size())
    for (int i = 0; i < binary.buffers_size(); ++i)
      if (!MessageDifferencer::Equals(binary.buffers(i), compiled.buffers(i)))
        return differ("buffer " + std::to_string(i), binary.buffers(i),
                      compiled.buffers(i));
  return differ("the program", binary, compiled);
}

} // namespace

LogicalResult Bisection::matches(sched::ProgramOp program,
                                 const sinter::abi::StepProgram *lowered) {
  Location at = FileLineColLoc::get(program.getContext(), path, 0, 0);
  if (lowered) {
    const formats::HostTensor *bytes =
        trace.find(std::string(sinter::abi::kTraceProgram));
    sinter::abi::StepProgram ran;
    if (!bytes)
      emitWarning(at) << "does not hold the program the binary ran (a trace "
                         "from an older binary): a binary built with other "
                         "flags would show as wrong numbers";
    else if (bytes->dtype != DType::U8 ||
             !ran.ParseFromArray(bytes->data.data(),
                                 static_cast<int>(bytes->data.size())))
      return emitError(at) << "its tensor '" << sinter::abi::kTraceProgram
                           << "' is not a step program";
    else {
      sinter::abi::StepProgram compiled = *lowered;
      ran.clear_seed();
      compiled.clear_seed();
      if (!google::protobuf::util::MessageDifferencer::Equals(ran, compiled))
        return emitError(at)
               << "is a trace of another program: "
               << firstDifference(ran, compiled)
               << " (compile with the flags that built the binary)";
    }
  }
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
  return llvm::any_of(writes,
                      [](const Write &w) { return w.difference.over(); });
}

double Bisection::StepResult::error() const {
  double worst = 0;
  for (const Write &w : writes)
    worst = std::max(worst, w.difference.ratio());
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
      out.difference.counted = true;
      out.difference.error =
          std::memcmp(theirs->data.data(), bytes.data(), bytes.size()) == 0 ? 0
                                                                            : 1;
    } else {
      std::vector<int64_t> shape(type.getShape());
      // Above the diagonal of an out_lower product: 0s nothing reads.
      std::function<bool(int64_t)> skip;
      if (side && j == 0)
        skip = [side](int64_t k) { return k % side > (k / side) % side; };
      out.difference = compareBytes(*kind, shape, bytes.data(),
                                    theirs->data.data(), rtol, skip);
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
    return "write " + std::to_string(w.index) + ", " + w.type + ": " +
           describeDifference(w.difference, "binary", "interpreter");
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
        if (w.difference.error > 0)
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
