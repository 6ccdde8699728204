//===- LowerCpuKernels.cpp - kernel launches to CPU kernel functions -----===//
//
// The lowered phase of the CPU target. Each program's launches, in order:
// the `sched.kernel` a launch names, with the places of the buffers the
// launch passes (slab and offset of each view), is emitted by
// KernelEmitter.h as an entry `<prefix><kernel>` with the uniform kernel
// signature and a body `<prefix><kernel>_body`; the launch then names the
// entry and records what the step program needs (extent, bytes moved, its
// profile label, the C-interface symbol the runtime calls, and the ops it
// computes with their places in the model: sched.origins), and the words
// the entry reads at run time (`args`: each place's byte offset, then each
// dropout key).
//
// Kernel bodies take one byte buffer per place and know nothing of offsets,
// so the same kernel in every layer of a transformer has the same body.
// Those are emitted once: bodies are compared by their printed form (types,
// ops, attributes; not locations), the first of each kind is kept and
// marked `sinter.shared_body` when several entries call it, and the copies
// are erased. Kernels with a reassociable sum take part only from
// kMinSharedElements elements on (see lowerLaunch). Entries are then shared
// the same way: an entry knows its body, the slab and size of each place
// and how many dropout keys it reads, not the offsets or the keys, so the
// launches of one kernel in every layer name one entry. char-GPT (batch 8)
// has 417 launches of 183 bodies; a thousand-block model's 60,000 launches
// name a few hundred entries, and LLVM compiles each body and each entry
// once (sinter-convert-cpu-to-llvm keeps shared bodies out of line).
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/KernelEmitter.h"
#include "compiler/CodeGen/Cpu/Passes.h"
#include "compiler/CodeGen/Cuda/Passes.h"

#include "dialects/Schedule/ScheduleOps.h"
#include "passes/KernelGrouper.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AsmState.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

namespace sinter::codegen {
#define GEN_PASS_DEF_LOWERCPUKERNELSPASS
#include "compiler/CodeGen/Cpu/Passes.h.inc"
#define GEN_PASS_DEF_LOWERCUDAKERNELSPASS
#include "compiler/CodeGen/Cuda/Passes.h.inc"
} // namespace sinter::codegen

using namespace mlir;
using namespace sinter;
using namespace sinter::codegen;

namespace sinter::codegen {

/// The ops of `block` (in `scope`), one a line, without locations.
static void printOps(llvm::raw_ostream &os, Operation *scope, Block &block) {
  OpPrintingFlags flags;
  flags.enableDebugInfo(false);
  AsmState state(scope, flags);
  for (Operation &op : block) {
    op.print(os, state);
    os << "\n";
  }
}

std::string bodyText(func::FuncOp fn) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << fn.getFunctionType();
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (DictionaryAttr attrs = fn.getArgAttrDict(i))
      os << i << attrs;
  printOps(os, fn, fn.getBody().front());
  return text;
}

} // namespace sinter::codegen

namespace {

/// CUDA: threads per block of a lowered launch (its extent is the grid).
constexpr llvm::StringLiteral kCudaBlockAttr = "sched.cuda_block";

/// Kernels with a reassociable sum over fewer elements keep a body of their
/// own (see lowerLaunch). LLVM fully unrolls loops of a few hundred
/// iterations, and vectorized by 16 a few thousand elements.
constexpr int64_t kMinSharedElements = 1 << 14;

/// Whether `fn` has a floating-point operation LLVM may reassociate.
bool reassociates(func::FuncOp fn) {
  return fn
      .walk([](arith::ArithFastMathInterface op) {
        arith::FastMathFlagsAttr flags = op.getFastMathFlagsAttr();
        return flags && bitEnumContainsAll(flags.getValue(),
                                           arith::FastMathFlags::reassoc)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// A sched.kernel as text without locations or its name: its kind, types
/// and ops. The fusion pass's notes (why each op is in its kernel, which
/// name the kernel) are dropped first: they are for the optimized phase's
/// readers, the code does not depend on them, and the kernel is erased
/// once lowered.
std::string kernelText(sched::KernelOp kernel) {
  kernel.walk([](Operation *op) { op->removeAttr(fusion::kFusionAttr); });
  std::string text;
  llvm::raw_string_ostream os(text);
  os << kernel.getKind();
  for (Type t : kernel.getArgumentTypes())
    os << " " << t;
  os << " ->";
  for (Type t : kernel.getResultTypes())
    os << " " << t;
  os << "\n";
  printOps(os, kernel, kernel.getBlock());
  return text;
}

/// The kernel lowering both targets share: the CPU's functions
/// (emitKernel) or the CUDA target's (emitCudaKernel), emitted once per
/// kernel code and pattern of places.
class KernelLowering {
public:
  KernelLowering(ModuleOp module, analysis::KernelLimits limits, bool cuda)
      : module(module), limits(limits), cuda(cuda) {}

  LogicalResult run();

private:
  MLIRContext &getContext() { return *module.getContext(); }
  LogicalResult lowerLaunch(sched::LaunchOp launch, StringRef prefix,
                            const SymbolTable &symbolTable,
                            llvm::StringMap<int> &launches);
  void shareBodies();
  void shareEntries();
  void shareCudaKernels();

  ModuleOp module;
  analysis::KernelLimits limits;
  bool cuda;
  SmallVector<func::FuncOp> bodies;
  /// Each launch whose entry was emitted for it, and that entry.
  SmallVector<std::pair<sched::LaunchOp, func::FuncOp>> entries;
  /// What was emitted for a kernel's code on a pattern of places (see
  /// lowerLaunch), and the launches that reuse it with their entry.
  struct Emitted {
    func::FuncOp entry;
    std::string symbol, kinds;
    int64_t extent, bytes, block;
  };
  llvm::StringMap<Emitted> emitted;
  llvm::DenseMap<Operation *, std::string> kernelTexts;
  SmallVector<std::pair<sched::LaunchOp, func::FuncOp>> reusers;
};

KernelOperand operandOf(Value buffer, Type tensorType) {
  auto view = buffer.getDefiningOp<sched::ViewOp>();
  KernelOperand o;
  o.type = cast<RankedTensorType>(tensorType);
  o.place.slab = view.getSlabOp().getSlabKind();
  o.place.offset = view.getOffsetAttr().getInt();
  return o;
}

LogicalResult KernelLowering::lowerLaunch(sched::LaunchOp launch,
                                          StringRef prefix,
                                          const SymbolTable &symbolTable,
                                          llvm::StringMap<int> &launches) {
  auto kernel = symbolTable.lookup<sched::KernelOp>(launch.getKernel());
  if (!kernel)
    return launch.emitOpError("launches @")
           << launch.getKernel() << ", which is not a sched.kernel";
  for (ValueRange buffers : {launch.getInputs(), launch.getOutputs()})
    for (Value v : buffers)
      if (!v.getDefiningOp<sched::ViewOp>())
        return launch.emitOpError("buffer is not a sched.view");
  KernelSource source;
  source.op = kernel;
  source.body = &kernel.getBlock();
  source.name = kernel.getSymName().str();
  source.kind = kernel.getKind().str();
  for (auto [v, t] : llvm::zip(launch.getInputs(), kernel.getArgumentTypes()))
    source.inputs.push_back(operandOf(v, t));
  for (auto [v, t] : llvm::zip(launch.getOutputs(), kernel.getResultTypes()))
    source.results.push_back(operandOf(v, t));
  Builder b(&getContext());
  // The ops the kernel computes, each as a location named by the op
  // ("log" at the layer's place), in order and once each: the step
  // program's origins, what the runtime names when the kernel's outputs go
  // non-finite. The kernel's body is erased below.
  SmallVector<Attribute> origins;
  llvm::SmallDenseSet<Attribute, 16> seen;
  bool dropout = false;
  kernel.walk([&](Operation *op) {
    if (op == kernel.getOperation() || op->hasTrait<OpTrait::IsTerminator>())
      return;
    dropout |= isa<sgraph::DropoutOp>(op);
    auto origin = NameLoc::get(
        b.getStringAttr(op->getName().stripDialect()), op->getLoc());
    if (seen.insert(origin).second)
      origins.push_back(origin);
  });
  launch->setAttr(sched::kOriginsAttr, b.getArrayAttr(origins));

  // The emitted code depends on the kernel's ops and on which of its
  // buffers share a place and in which slab, not on where the places are:
  // a kernel of the same code on the same pattern as one emitted before
  // (the same layer's kernel in the next block) reuses that entry, and its
  // words are its places' offsets in the emitter's order (distinct places
  // as inputs, then results, first name them). A dropout's key is in its
  // code (the op's seed), so those kernels are always emitted; the copies
  // are shared afterwards.
  std::string key;
  SmallVector<std::pair<abi::SlabKind, int64_t>> places;
  if (!dropout) {
    auto [text, fresh] = kernelTexts.try_emplace(kernel, "");
    if (fresh)
      text->second = kernelText(kernel);
    key = prefix.str() + "\n" + text->second;
    for (const KernelOperand &o :
         llvm::concat<const KernelOperand>(source.inputs, source.results)) {
      auto place = std::make_pair(o.place.slab, o.place.offset);
      auto it = llvm::find(places, place);
      key += " " + std::to_string(static_cast<int>(o.place.slab)) + ":" +
             std::to_string(it - places.begin());
      if (it == places.end())
        places.push_back(place);
    }
  }
  if (auto it = emitted.find(key); !key.empty() && it != emitted.end()) {
    Emitted &e = it->second;
    SmallVector<int64_t> args;
    for (auto &[slab, offset] : places)
      args.push_back(offset);
    launch.setKernel(e.entry.getSymName());
    launch.setExtentAttr(b.getI64IntegerAttr(e.extent));
    launch.setBytesAttr(b.getI64IntegerAttr(e.bytes));
    launch.setLabelAttr(b.getStringAttr(kernel.getSymName() + e.kinds));
    launch.setSymbolAttr(b.getStringAttr(e.symbol));
    launch.setArgsAttr(b.getDenseI64ArrayAttr(args));
    if (cuda)
      launch->setAttr(kCudaBlockAttr, b.getI64IntegerAttr(e.block));
    reusers.push_back({launch, e.entry});
    return success();
  }

  std::string symbol = (prefix + kernel.getSymName()).str();
  if (int n = launches[symbol]++)
    symbol += "_" + std::to_string(n);
  FailureOr<EmittedKernel> k =
      cuda ? emitCudaKernel(source, module, symbol, limits)
           : emitKernel(source, module, symbol, limits);
  if (failed(k))
    return failure();
  launch.setKernel(symbol);
  launch.setExtentAttr(b.getI64IntegerAttr(k->extent));
  launch.setBytesAttr(b.getI64IntegerAttr(k->bytes));
  launch.setLabelAttr(b.getStringAttr(k->name));
  launch.setSymbolAttr(b.getStringAttr(k->symbol));
  launch.setArgsAttr(b.getDenseI64ArrayAttr(k->args));
  if (cuda)
    launch->setAttr(kCudaBlockAttr, b.getI64IntegerAttr(k->block));
  entries.push_back({launch, k->entry});
  if (!key.empty())
    emitted[key] = Emitted{k->entry, k->symbol,
                           k->name.substr(kernel.getSymName().size()),
                           k->extent, k->bytes, k->block};
  if (cuda)
    return success();
  // A small kernel with a reassociable sum keeps a body of its own: LLVM
  // unrolls its loops completely and then orders the additions of the
  // straight-line code differently inlined and out of line, so sharing it
  // would change results in the last bit. Elementwise code computes the same
  // bits however it is compiled.
  if (k->elements >= kMinSharedElements || !reassociates(k->body))
    bodies.push_back(k->body);
  return success();
}

void KernelLowering::shareBodies() {
  llvm::StringMap<func::FuncOp> first;
  SmallVector<std::pair<func::FuncOp, func::FuncOp>> copies;
  for (func::FuncOp body : bodies) {
    auto [it, inserted] = first.try_emplace(bodyText(body), body);
    if (!inserted)
      copies.push_back({body, it->second});
  }
  // Each entry calls its body once; point the copies' callers at the kept
  // body in one walk.
  llvm::DenseMap<StringAttr, func::FuncOp> keptFor;
  for (auto [copy, kept] : copies)
    keptFor[copy.getSymNameAttr()] = kept;
  module.walk([&](func::CallOp call) {
    if (func::FuncOp kept = keptFor.lookup(call.getCalleeAttr().getAttr()))
      call.setCalleeAttr(FlatSymbolRefAttr::get(kept.getSymNameAttr()));
  });
  for (auto [copy, kept] : copies)
    copy.erase();
}

void KernelLowering::shareEntries() {
  // After shareBodies; each launch has an entry of its own. Two entries are the same code when they print alike
  // but for the name of the body they call and their bodies print alike:
  // the launches of one kernel on the same slabs. A body kept of its own (a
  // small reassociable sum) goes with its entry, so it is still inlined
  // into the one entry that calls it, as it was before sharing.
  SymbolTable symbolTable(module);
  llvm::DenseMap<Operation *, std::string> textOf;
  auto calleeOf = [&](func::FuncOp entry) {
    func::CallOp call;
    entry.walk([&](func::CallOp c) { call = c; });
    return symbolTable.lookup<func::FuncOp>(call.getCallee());
  };
  llvm::StringMap<std::pair<func::FuncOp, func::FuncOp>> first;
  llvm::DenseMap<Operation *, func::FuncOp> keptFor;
  SmallVector<func::FuncOp> unusedBodies;
  for (auto &[launch, entry] : entries) {
    func::FuncOp body = calleeOf(entry);
    std::string key = bodyText(entry);
    std::string callee = ("@" + body.getSymName() + "(").str();
    for (size_t at = key.find(callee); at != std::string::npos;
         at = key.find(callee, at))
      key.replace(at, callee.size(), "@body(");
    auto [text, fresh] = textOf.try_emplace(body, "");
    if (fresh)
      text->second = bodyText(body);
    key += text->second;
    auto [it, inserted] = first.try_emplace(key, entry, body);
    if (inserted)
      continue;
    auto [keptEntry, keptBody] = it->second;
    keptFor[entry] = keptEntry;
    if (body != keptBody)
      unusedBodies.push_back(body);
    launch.setKernel(keptEntry.getSymName());
    launch.setSymbolAttr(StringAttr::get(
        &getContext(), "_mlir_ciface_" + keptEntry.getSymName()));
  }
  for (auto &[launch, entry] : reusers) {
    if (func::FuncOp kept = keptFor.lookup(entry)) {
      launch.setKernel(kept.getSymName());
      launch.setSymbolAttr(StringAttr::get(
          &getContext(), "_mlir_ciface_" + kept.getSymName()));
    }
  }
  for (auto &[copy, kept] : keptFor)
    symbolTable.erase(copy);
  for (func::FuncOp body : unusedBodies)
    symbolTable.erase(body);
  // The bodies several of the remaining entries call stay out of line.
  llvm::DenseMap<StringAttr, int> callers;
  module.walk([&](func::CallOp call) {
    ++callers[call.getCalleeAttr().getAttr()];
  });
  Builder b(&getContext());
  for (auto &[name, n] : callers)
    if (n > 1)
      if (auto body = symbolTable.lookup<func::FuncOp>(name))
        body->setAttr("sinter.shared_body", b.getUnitAttr());
}

void KernelLowering::shareCudaKernels() {
  // A CUDA kernel is one function (no body apart); those that print alike
  // but for their names (dropout kernels of different layers, whose keys
  // are words) are one kernel.
  SymbolTable symbolTable(module);
  llvm::StringMap<func::FuncOp> first;
  llvm::DenseMap<Operation *, func::FuncOp> keptFor;
  for (auto &[launch, entry] : entries) {
    auto [it, inserted] = first.try_emplace(bodyText(entry), entry);
    if (inserted)
      continue;
    keptFor[entry] = it->second;
  }
  for (auto *list : {&entries, &reusers})
    for (auto &[launch, entry] : *list)
      if (func::FuncOp kept = keptFor.lookup(entry)) {
        launch.setKernel(kept.getSymName());
        launch.setSymbolAttr(kept.getSymNameAttr());
      }
  for (auto &[copy, kept] : keptFor)
    symbolTable.erase(copy);
}

LogicalResult KernelLowering::run() {
  llvm::StringMap<int> launches;
  // The kernels by name, looked up once per launch: ModuleOp::lookupSymbol
  // scans the module, which grows by two functions per launch.
  SymbolTable symbolTable(module);
  for (auto program : module.getOps<sched::ProgramOp>()) {
    const abi::ProgramSymbols *symbols =
        abi::programSymbols(program.getRole().str());
    if (!symbols)
      return program.emitOpError("role '")
             << program.getRole() << "' has no symbols";
    for (auto launch : program.getBlock().getOps<sched::LaunchOp>())
      if (failed(lowerLaunch(launch, symbols->kernelPrefix, symbolTable,
                             launches)))
        return failure();
    // Both matmul libraries (oneDNN, cuBLASLt) are called with f32, bf16 or
    // f16 buffers, one type per matmul.
    for (auto mm : program.getBlock().getOps<sched::MatmulOp>()) {
      Type et = cast<sched::BufferType>(mm.getOut().getType()).getElementType();
      if (!et.isF32() && !et.isBF16() && !et.isF16())
        return mm.emitOpError(cuda ? "CUDA" : "CPU")
               << " matmuls are f32, bf16 or f16, got " << et;
    }
  }
  for (auto kernel :
       llvm::make_early_inc_range(module.getOps<sched::KernelOp>()))
    kernel.erase();
  if (cuda) {
    shareCudaKernels();
    return success();
  }
  shareBodies();
  shareEntries();
  return success();
}

analysis::KernelLimits limitsOf(int64_t minElementsToSplit,
                                int64_t chunkElements,
                                int64_t maxScratchBytes) {
  analysis::KernelLimits limits;
  limits.minElementsToSplit = minElementsToSplit;
  limits.chunkElements = chunkElements;
  limits.maxScratchBytes = maxScratchBytes;
  return limits;
}

class LowerCpuKernelsPass
    : public codegen::impl::LowerCpuKernelsPassBase<LowerCpuKernelsPass> {
public:
  using LowerCpuKernelsPassBase::LowerCpuKernelsPassBase;

  void runOnOperation() override {
    KernelLowering lowering(
        getOperation(),
        limitsOf(minElementsToSplit, chunkElements, maxScratchBytes),
        /*cuda=*/false);
    if (failed(lowering.run()))
      signalPassFailure();
  }
};

class LowerCudaKernelsPass
    : public codegen::impl::LowerCudaKernelsPassBase<LowerCudaKernelsPass> {
public:
  using LowerCudaKernelsPassBase::LowerCudaKernelsPassBase;

  void runOnOperation() override {
    // Special kernels split wherever they can: a thread per index.
    analysis::KernelLimits limits = limitsOf(1, 1 << 17, /*maxScratchBytes=*/0);
    limits.cudaRowSlots = rowSlots;
    KernelLowering lowering(getOperation(), limits, /*cuda=*/true);
    if (failed(lowering.run()))
      signalPassFailure();
  }
};

} // namespace
