//===- ProgramVerifier.cpp - the constraints of a whole program ----------===//
//
// sched.program's region verifier: what no single op can check. Slabs are
// unique (program_c1); no two buffers share a byte while both are live
// unless one aliases the other (program_c2, ProgramLiveness.h); names are
// unique (program_c3); nothing touches a collective's bytes between its
// start and its done (program_c4); state results live in their arguments'
// buffers (program_c5). The overlap check sorts each slab's buffers by
// offset and compares a buffer only with those that start before it ends,
// so it is cheap on programs of thousands of buffers.
//
//===----------------------------------------------------------------------===//

#include "dialects/Schedule/ProgramLiveness.h"
#include "dialects/Schedule/ScheduleOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>

using namespace mlir;
using namespace sinter::sched;
namespace abi = sinter::abi;

namespace {

std::string opText(Operation *op) {
  if (auto launch = dyn_cast<LaunchOp>(op))
    return ("sched.launch @" + launch.getKernel()).str();
  return op->getName().getStringRef().str();
}

} // namespace

LogicalResult ProgramOp::verifyRegions() {
  Block &body = getBlock();

  // program_c6
  if (!abi::programSymbols(getRole().str()))
    return emitOpError("role '") << getRole() << "' is not step or eval";

  // program_c1
  llvm::StringMap<SlabOp> slabs;
  for (auto slab : body.getOps<SlabOp>())
    if (!slabs.try_emplace(slab.getKind(), slab).second)
      return slab.emitOpError("declares slab '")
             << slab.getKind() << "' a second time";

  // program_c3
  llvm::StringMap<ArgumentOp> argByName;
  llvm::StringSet<> names;
  for (auto arg : body.getOps<ArgumentOp>()) {
    if (!names.insert(arg.getName()).second)
      return arg.emitOpError("argument name '")
             << arg.getName() << "' is used twice";
    argByName[arg.getName()] = arg;
  }
  for (auto arg : body.getOps<ArgumentOp>())
    if (auto aliases = arg.getAliases())
      for (auto alias : aliases->getAsRange<StringAttr>())
        if (!names.insert(alias.getValue()).second)
          return arg.emitOpError("alias '")
                 << alias.getValue()
                 << "' repeats an argument name or another alias";
  llvm::StringSet<> resultNames;
  for (auto result : body.getOps<ResultOp>()) {
    if (!resultNames.insert(result.getName()).second)
      return result.emitOpError("result name '")
             << result.getName() << "' is used twice";
    // program_c7
    if (std::optional<StringRef> labels = result.getLabels()) {
      auto it = argByName.find(*labels);
      Type et = it == argByName.end()
                    ? Type()
                    : cast<BufferType>(it->second.getBuffer().getType())
                          .getElementType();
      if (!et ||
          it->second.getKind() !=
              StringRef(abi::argumentKindName(abi::Argument::input)) ||
          !(et.isInteger(64) || et.isInteger(32)))
        return result.emitOpError("counts the labels of '")
               << *labels << "', which is not an i64 or i32 input argument";
    }
    // program_c5
    std::optional<abi::ResultKind> kind =
        abi::parseResultKind(result.getKind().str());
    if (kind != abi::Result::param && kind != abi::Result::opt_state)
      continue;
    auto it = argByName.find(result.getName());
    if (it == argByName.end() || it->second.getKind() != result.getKind())
      return result.emitOpError("is a ")
             << result.getKind() << " result without a " << result.getKind()
             << " argument named '" << result.getName() << "'";
    if (it->second.getBuffer() != result.getBuffer())
      return result.emitOpError("state result '")
             << result.getName()
             << "' is not in its argument's buffer (copy it back first)";
  }

  ProgramLiveness liveness(*this);

  // program_c2
  llvm::DenseMap<Value, std::vector<const RootLife *>> bySlab;
  for (const RootLife &life : liveness.roots())
    if (life.isLive() && life.end > life.begin)
      bySlab[ViewOp(life.root).getSlab()].push_back(&life);
  for (auto &[slab, lives] : bySlab) {
    std::sort(lives.begin(), lives.end(),
              [](const RootLife *a, const RootLife *b) {
                return a->begin < b->begin ||
                       (a->begin == b->begin && a->end < b->end);
              });
    for (size_t i = 0; i < lives.size(); ++i)
      for (size_t j = i + 1;
           j < lives.size() && lives[j]->begin < lives[i]->end; ++j) {
        const RootLife &a = *lives[i], &b = *lives[j];
        ViewOp aRoot = a.root, bRoot = b.root;
        if (!a.overlapsInTime(b))
          continue;
        auto when = [&](const RootLife &l) {
          std::string s = "steps ";
          s += l.first < 0 ? "start" : std::to_string(l.first);
          s += "..";
          s += l.last >= liveness.numSteps() ? "end" : std::to_string(l.last);
          return s;
        };
        InFlightDiagnostic d =
            bRoot.emitOpError("shares bytes [")
            << std::max(a.begin, b.begin) << ", " << std::min(a.end, b.end)
            << ") of slab '" << bRoot.getSlabOp().getKind()
            << "' with another view while both are live (" << when(b) << " and "
            << when(a) << ") and neither aliases the other";
        d.attachNote(aRoot.getLoc()) << "the other view";
        return d;
      }
  }

  // program_c4
  for (auto [s, op] : llvm::enumerate(liveness.steps())) {
    if (!isa<AllReduceStartOp, AllGatherStartOp, ReduceScatterStartOp,
             BroadcastStartOp>(op) ||
        op->getResult(0).use_empty())
      continue;
    Operation *done = *op->getResult(0).getUsers().begin();
    int64_t end = liveness.stepOf(done);
    SmallVector<Value> inFlight = stepBuffers(op);
    for (int64_t k = s + 1; k < end; ++k) {
      Operation *other = liveness.steps()[k];
      for (Value touched : stepBuffers(other)) {
        auto tv = touched.getDefiningOp<ViewOp>();
        if (!tv)
          continue;
        for (Value busy : inFlight) {
          auto bv = busy.getDefiningOp<ViewOp>();
          if (!bv || bv.getSlab() != tv.getSlab())
            continue;
          int64_t a0 = bv.getOffset(), a1 = a0 + bv.getBytes();
          int64_t b0 = tv.getOffset(), b1 = b0 + tv.getBytes();
          if (a0 < b1 && b0 < a1) {
            InFlightDiagnostic d =
                other->emitOpError("touches bytes [")
                << std::max(a0, b0) << ", " << std::min(a1, b1) << ") of "
                << opText(op) << "'s buffer while the collective is in flight "
                << "(started at step " << s << ", done at step " << end << ")";
            d.attachNote(op->getLoc()) << "the collective starts here";
            return d;
          }
        }
      }
    }
  }
  return success();
}
