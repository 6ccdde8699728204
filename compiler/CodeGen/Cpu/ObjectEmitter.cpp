//===- ObjectEmitter.cpp - an LLVM-dialect module as a host object -------===//
//
// Translates the module to LLVM IR, sets the host's triple and data layout,
// asks for full-width vectors on AVX-512 hosts, runs LLVM's O2 pipeline
// (loop vectorization happens here: llc alone would not vectorize) and
// writes machine code.
//
// Kernels are independent, so the optimization and the machine code, most
// of sinterc's time, run on every core. The module is cut into parts, at
// least one per thread and none much above kPartInstructions (LLVM's
// interprocedural passes, CalledValuePropagation, IPSCCP and function-attrs,
// take time superlinear in the size of a module: one module of a
// thousand-layer model's kernels would take minutes in them alone).
// Functions that call one another (an entry and its body, the entries
// sharing a body) stay in one part, so the inliner sees what it saw in one
// module, and the parts are balanced by instruction count; the globals (the
// step programs, the kernel tables, the data folder) go with the first part.
// A part declares only the functions and globals it refers to, so the parts
// together are the size of the module. Each part is handed over as bitcode,
// optimized and compiled in an LLVMContext and TargetMachine of its own,
// and the objects are merged into one by the system linker (`ld -r`). The
// machine code is what one module gives: O2 does no work across kernels.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/ObjectEmitter.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <algorithm>
#include <mutex>

using namespace mlir;

namespace {

/// The instructions a part aims at: enough that the fixed cost of a part
/// (a context, a target machine, the pass pipeline) is small beside its
/// work, few enough that LLVM's module-wide passes stay near linear.
constexpr size_t kPartInstructions = 40000;
/// f32 instructions (loads aside) per iteration from which a bf16 loop of
/// hintBf16StoreLoops is also asked to interleave 4 vectors (ObjectEmitter.h).
constexpr int64_t kInterleaveArithmetic = 32;

/// The host's target machine; one per thread (they are not shared).
struct HostTarget {
  const llvm::Target *target = nullptr;
  std::string triple, cpu, features;
  bool avx512 = false;

  std::unique_ptr<llvm::TargetMachine> machine() const {
    llvm::TargetOptions options;
    return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
        triple, cpu, features, options, llvm::Reloc::PIC_,
        llvm::CodeModel::Small, llvm::CodeGenOptLevel::Aggressive));
  }
};

/// O2, then machine code, of `module` into `object`.
bool compile(llvm::Module &module, llvm::TargetMachine &tm,
             llvm::SmallVectorImpl<char> &object) {
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(&tm);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm =
        pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
    mpm.run(module, mam);
  }
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager codegen;
  if (tm.addPassesToEmitFile(codegen, os, nullptr,
                             llvm::CodeGenFileType::ObjectFile))
    return false;
  codegen.run(module);
  return true;
}

/// The module's functions in groups, at least `minParts` and enough that
/// each holds about kPartInstructions: connected by calls within a group,
/// groups balanced by instruction count, each in module order.
/// Declarations belong to none.
std::vector<std::vector<const llvm::Function *>>
splitModule(const llvm::Module &module, unsigned minParts) {
  llvm::EquivalenceClasses<const llvm::Function *> linked;
  for (const llvm::Function &f : module) {
    if (f.isDeclaration())
      continue;
    linked.insert(&f);
    for (const llvm::BasicBlock &block : f)
      for (const llvm::Instruction &inst : block)
        if (auto *call = llvm::dyn_cast<llvm::CallBase>(&inst))
          if (const llvm::Function *callee = call->getCalledFunction())
            if (!callee->isDeclaration())
              linked.unionSets(&f, callee);
  }
  struct Cluster {
    std::vector<const llvm::Function *> functions;
    size_t cost = 0;
  };
  std::vector<Cluster> clusters;
  for (auto it = linked.begin(); it != linked.end(); ++it) {
    if (!it->isLeader())
      continue;
    Cluster c;
    for (auto m = linked.member_begin(it); m != linked.member_end(); ++m) {
      c.functions.push_back(*m);
      c.cost += (*m)->getInstructionCount();
    }
    clusters.push_back(std::move(c));
  }
  size_t total = 0;
  for (const Cluster &c : clusters)
    total += c.cost;
  size_t parts = std::max<size_t>(minParts, (total + kPartInstructions - 1) /
                                                kPartInstructions);
  // Largest first into the lightest part (ties to the first, so that the
  // parts do not depend on anything but the module and the thread count).
  std::stable_sort(
      clusters.begin(), clusters.end(),
      [](const Cluster &a, const Cluster &b) { return a.cost > b.cost; });
  std::vector<std::vector<const llvm::Function *>> out(parts);
  std::vector<size_t> load(parts, 0);
  for (Cluster &c : clusters) {
    size_t p = std::min_element(load.begin(), load.end()) - load.begin();
    load[p] += c.cost;
    out[p].insert(out[p].end(), c.functions.begin(), c.functions.end());
  }
  out.erase(std::remove_if(out.begin(), out.end(),
                           [](const auto &p) { return p.empty(); }),
            out.end());
  // Module order within a part, as in one module.
  llvm::DenseMap<const llvm::Function *, size_t> position;
  for (const llvm::Function &f : module)
    position[&f] = position.size();
  for (auto &part : out)
    llvm::sort(part, [&](const llvm::Function *a, const llvm::Function *b) {
      return position.lookup(a) < position.lookup(b);
    });
  return out;
}

/// Declares, in a part, the functions and globals it refers to but does not
/// define, on first reference, as llvm::CloneModule declares them.
class Declarer final : public llvm::ValueMaterializer {
public:
  explicit Declarer(llvm::Module &part) : part(part) {}

  llvm::Value *materialize(llvm::Value *v) override {
    if (auto *f = llvm::dyn_cast<llvm::Function>(v)) {
      llvm::Function *decl =
          llvm::Function::Create(f->getFunctionType(), f->getLinkage(),
                                 f->getAddressSpace(), f->getName(), &part);
      decl->copyAttributesFrom(f);
      if (!f->isDeclaration()) {
        decl->setLinkage(llvm::GlobalValue::ExternalLinkage);
        decl->setPersonalityFn(nullptr);
      }
      return decl;
    }
    if (auto *g = llvm::dyn_cast<llvm::GlobalVariable>(v)) {
      auto *decl = new llvm::GlobalVariable(
          part, g->getValueType(), g->isConstant(), g->getLinkage(),
          /*Initializer=*/nullptr, g->getName(), /*InsertBefore=*/nullptr,
          g->getThreadLocalMode(), g->getAddressSpace());
      decl->copyAttributesFrom(g);
      if (!g->isDeclaration())
        decl->setLinkage(llvm::GlobalValue::ExternalLinkage);
      return decl;
    }
    return nullptr;
  }

private:
  llvm::Module &part;
};

/// A module of `functions` (and, with `globals`, every global variable) of
/// `module`, declaring only what they refer to: llvm::CloneModule declares
/// every global value of the module in each part, which for a part per
/// kPartInstructions would be quadratic in the module.
std::unique_ptr<llvm::Module>
clonePart(const llvm::Module &module,
          llvm::ArrayRef<const llvm::Function *> functions, bool globals) {
  auto part = std::make_unique<llvm::Module>(module.getModuleIdentifier(),
                                             module.getContext());
  part->setSourceFileName(module.getSourceFileName());
  part->setDataLayout(module.getDataLayout());
  part->setTargetTriple(module.getTargetTriple());
  part->setModuleInlineAsm(module.getModuleInlineAsm());
  part->IsNewDbgInfoFormat = module.IsNewDbgInfoFormat;
  llvm::ValueToValueMapTy map;
  Declarer declarer(*part);
  // Definitions first, so that references among them are not declared.
  for (const llvm::Function *f : functions) {
    llvm::Function *nf =
        llvm::Function::Create(f->getFunctionType(), f->getLinkage(),
                               f->getAddressSpace(), f->getName(), part.get());
    nf->copyAttributesFrom(f);
    map[f] = nf;
  }
  SmallVector<std::pair<const llvm::GlobalVariable *, llvm::GlobalVariable *>>
      variables;
  if (globals)
    for (const llvm::GlobalVariable &g : module.globals()) {
      auto *ng = llvm::cast<llvm::GlobalVariable>(
          declarer.materialize(const_cast<llvm::GlobalVariable *>(&g)));
      ng->setLinkage(g.getLinkage());
      map[&g] = ng;
      variables.push_back({&g, ng});
    }
  for (auto [g, ng] : variables) {
    SmallVector<std::pair<unsigned, llvm::MDNode *>, 1> metadata;
    g->getAllMetadata(metadata);
    for (auto [kind, node] : metadata)
      ng->addMetadata(kind, *llvm::MapMetadata(node, map, llvm::RF_None,
                                               nullptr, &declarer));
    if (g->hasInitializer())
      ng->setInitializer(llvm::MapValue(g->getInitializer(), map, llvm::RF_None,
                                        nullptr, &declarer));
  }
  for (const llvm::Function *f : functions) {
    auto *nf = llvm::cast<llvm::Function>(map[f]);
    auto arg = nf->arg_begin();
    for (const llvm::Argument &a : f->args()) {
      arg->setName(a.getName());
      map[&a] = &*arg++;
    }
    SmallVector<llvm::ReturnInst *, 8> returns;
    llvm::CloneFunctionInto(nf, f, map,
                            llvm::CloneFunctionChangeType::ClonedModule,
                            returns, "", nullptr, nullptr, &declarer);
    if (f->hasPersonalityFn())
      nf->setPersonalityFn(llvm::MapValue(f->getPersonalityFn(), map,
                                          llvm::RF_None, nullptr, &declarer));
  }
  for (const llvm::NamedMDNode &named : module.named_metadata()) {
    llvm::NamedMDNode *copy = part->getOrInsertNamedMetadata(named.getName());
    for (const llvm::MDNode *node : named.operands())
      copy->addOperand(
          llvm::MapMetadata(node, map, llvm::RF_None, nullptr, &declarer));
  }
  return part;
}

/// Merges `objects` into the relocatable object `path` with the system
/// linker.
LogicalResult mergeObjects(Location loc, ArrayRef<std::string> objects,
                           StringRef path) {
  auto ld = llvm::sys::findProgramByName("ld");
  if (!ld)
    return emitError(loc, "no system linker (ld) to merge the kernel objects");
  SmallVector<StringRef> args = {*ld, "-r", "-o", path};
  for (const std::string &o : objects)
    args.push_back(o);
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(*ld, args, std::nullopt, {}, 0, 0, &error);
  if (rc != 0)
    return emitError(loc, "merging the kernel objects into ")
           << path << " failed (ld exit " << rc
           << (error.empty() ? "" : ": " + error) << ")";
  return success();
}

} // namespace

void sinter::codegen::hintBf16StoreLoops(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  for (llvm::Function &f : module) {
    if (f.isDeclaration())
      continue;
    llvm::DominatorTree dominators(f);
    llvm::LoopInfo loops(dominators);
    for (llvm::Loop *loop : loops.getLoopsInPreorder()) {
      if (!loop->isInnermost() || loop->getLoopID())
        continue;
      bool rounds = false, calls = false;
      int64_t arithmetic = 0;
      for (llvm::BasicBlock *block : loop->blocks())
        for (llvm::Instruction &inst : *block) {
          if (auto *trunc = llvm::dyn_cast<llvm::FPTruncInst>(&inst))
            rounds |= trunc->getType()->getScalarType()->isBFloatTy();
          if (llvm::isa<llvm::CallBase>(inst) &&
              !llvm::isa<llvm::IntrinsicInst>(inst))
            calls = true;
          if (inst.getType()->getScalarType()->isFloatTy() &&
              !llvm::isa<llvm::LoadInst, llvm::PHINode>(inst))
            ++arithmetic;
        }
      if (!rounds || calls)
        continue;
      auto hint = [&](const char *name, int32_t value) -> llvm::Metadata * {
        llvm::Metadata *pair[] = {
            llvm::MDString::get(ctx, name),
            llvm::ConstantAsMetadata::get(
                llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), value))};
        return llvm::MDNode::get(ctx, pair);
      };
      llvm::TempMDTuple self = llvm::MDNode::getTemporary(ctx, {});
      llvm::SmallVector<llvm::Metadata *, 3> ops = {
          self.get(), hint("llvm.loop.vectorize.width", 16)};
      if (arithmetic >= kInterleaveArithmetic)
        ops.push_back(hint("llvm.loop.interleave.count", 4));
      llvm::MDNode *id = llvm::MDNode::getDistinct(ctx, ops);
      id->replaceOperandWith(0, id);
      loop->setLoopID(id);
    }
  }
}

LogicalResult sinter::codegen::emitHostObject(ModuleOp module, StringRef path,
                                              TimingScope &timing) {
  Location loc = module.getLoc();
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  HostTarget host;
  host.triple = llvm::sys::getDefaultTargetTriple();
  std::string error;
  host.target = llvm::TargetRegistry::lookupTarget(host.triple, error);
  if (!host.target)
    return emitError(loc, "no LLVM target for ")
           << host.triple << ": " << error;
  llvm::SubtargetFeatures features;
  llvm::StringMap<bool> hostFeatures = llvm::sys::getHostCPUFeatures();
  for (auto &f : hostFeatures)
    features.AddFeature(f.first(), f.second);
  host.cpu = llvm::sys::getHostCPUName().str();
  host.features = features.getString();
  host.avx512 = hostFeatures.lookup("avx512f");
  std::unique_ptr<llvm::TargetMachine> tm = host.machine();

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule;
  {
    TimingScope t = timing.nest("translate to LLVM IR");
    llvmModule = translateModuleToLLVMIR(module, llvmContext, "kernels");
  }
  if (!llvmModule)
    return emitError(loc, "cannot translate the kernels to LLVM IR");
  llvmModule->setTargetTriple(host.triple);
  llvmModule->setDataLayout(tm->createDataLayout());

  // Full-width vectors: LLVM tunes recent Xeons to prefer 256-bit vectors
  // (older parts lowered their clock for 512-bit code). The kernels that are
  // not memory-bound (erf, exp, dropout's hashing) run ~2x faster at 512.
  if (host.avx512)
    for (llvm::Function &f : *llvmModule)
      if (!f.isDeclaration())
        f.addFnAttr("prefer-vector-width", "512");
  if (host.avx512)
    codegen::hintBf16StoreLoops(*llvmModule);

  unsigned threads = llvm::hardware_concurrency().compute_thread_count();
  std::vector<std::vector<const llvm::Function *>> parts =
      splitModule(*llvmModule, std::max(1u, threads));
  if (parts.size() <= 1) {
    TimingScope t = timing.nest("LLVM O2 and machine code");
    llvm::SmallVector<char, 0> object;
    if (!compile(*llvmModule, *tm, object))
      return emitError(loc, "the target cannot emit object files");
    std::error_code ec;
    llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
    if (ec)
      return emitError(loc, "cannot write ") << path << ": " << ec.message();
    out.os().write(object.data(), object.size());
    out.keep();
    return success();
  }

  // One module per part, as bitcode: each thread reads its own into a
  // context of its own.
  std::vector<std::string> bitcode(parts.size());
  {
    TimingScope t = timing.nest("split into parts");
    if (!llvmModule->alias_empty() || !llvmModule->ifunc_empty())
      return emitError(loc, "the kernels' LLVM module has aliases or ifuncs, "
                            "which cannot be split into parts");
    for (auto [p, functions] : llvm::enumerate(parts)) {
      // The programs, tables and data folder go with the first part.
      std::unique_ptr<llvm::Module> part =
          clonePart(*llvmModule, functions, /*globals=*/p == 0);
      llvm::raw_string_ostream os(bitcode[p]);
      llvm::WriteBitcodeToFile(*part, os);
    }
    llvmModule.reset();
  }

  std::vector<llvm::SmallVector<char, 0>> objects(parts.size());
  std::vector<std::string> failures;
  std::mutex failureMutex;
  {
    TimingScope t = timing.nest("LLVM O2 and machine code");
    // One thread per core, not per part: there are more parts than cores
    // for a big module, and each part in flight holds a context of its own.
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(
        std::min<size_t>(std::max(1u, threads), parts.size())));
    for (size_t p = 0; p < parts.size(); ++p)
      pool.async([&, p] {
        llvm::LLVMContext context;
        auto part = llvm::parseBitcodeFile(
            llvm::MemoryBufferRef(bitcode[p], "part"), context);
        std::string why;
        if (!part)
          why = llvm::toString(part.takeError());
        else if (!compile(**part, *host.machine(), objects[p]))
          why = "the target cannot emit object files";
        if (!why.empty()) {
          std::lock_guard<std::mutex> lock(failureMutex);
          failures.push_back(why);
        }
      });
    pool.wait();
  }
  if (!failures.empty())
    return emitError(loc, "compiling the kernels failed: ") << failures.front();

  TimingScope t = timing.nest("merge objects");
  std::vector<std::string> files;
  auto removeFiles = llvm::make_scope_exit([&] {
    for (const std::string &f : files)
      llvm::sys::fs::remove(f);
  });
  for (const auto &object : objects) {
    llvm::SmallString<128> file;
    int fd;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("sinter-kernels", "o", fd, file))
      return emitError(loc, "cannot create a temporary file: ") << ec.message();
    files.push_back(file.str().str());
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(object.data(), object.size());
    os.close();
    if (os.has_error())
      return emitError(loc, "cannot write ")
             << file << ": " << os.error().message();
  }
  return mergeObjects(loc, files, path);
}
