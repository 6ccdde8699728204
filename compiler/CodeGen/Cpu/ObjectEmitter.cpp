//===- ObjectEmitter.cpp - an LLVM-dialect module as a host object -------===//
//
// Translates the module to LLVM IR, sets the host's triple and data layout,
// asks for full-width vectors on AVX-512 hosts, runs LLVM's O2 pipeline
// (loop vectorization happens here: llc alone would not vectorize) and
// writes machine code.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/ObjectEmitter.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir;

LogicalResult sinter::codegen::emitHostObject(ModuleOp module, StringRef path,
                                              TimingScope &timing) {
  Location loc = module.getLoc();
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string triple = llvm::sys::getDefaultTargetTriple();
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return emitError(loc, "no LLVM target for ") << triple << ": " << error;
  llvm::SubtargetFeatures features;
  llvm::StringMap<bool> hostFeatures = llvm::sys::getHostCPUFeatures();
  for (auto &f : hostFeatures)
    features.AddFeature(f.first(), f.second);
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(), targetOptions,
      llvm::Reloc::PIC_, llvm::CodeModel::Small,
      llvm::CodeGenOptLevel::Aggressive));

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule;
  {
    TimingScope t = timing.nest("translate to LLVM IR");
    llvmModule = translateModuleToLLVMIR(module, llvmContext, "sinter_kernels");
  }
  if (!llvmModule)
    return emitError(loc, "cannot translate the kernels to LLVM IR");
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(tm->createDataLayout());

  // Full-width vectors: LLVM tunes recent Xeons to prefer 256-bit vectors
  // (older parts lowered their clock for 512-bit code). The kernels that are
  // not memory-bound (erf, exp, dropout's hashing) run ~2x faster at 512.
  if (hostFeatures.lookup("avx512f"))
    for (llvm::Function &f : *llvmModule)
      if (!f.isDeclaration())
        f.addFnAttr("prefer-vector-width", "512");

  {
    TimingScope t = timing.nest("LLVM O2");
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm =
        pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
    mpm.run(*llvmModule, mam);
  }


  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return emitError(loc, "cannot write ") << path << ": " << ec.message();
  {
    TimingScope t = timing.nest("LLVM machine code");
    llvm::legacy::PassManager codegen;
    if (tm->addPassesToEmitFile(codegen, out.os(), nullptr,
                                llvm::CodeGenFileType::ObjectFile))
      return emitError(loc, "the target cannot emit object files");
    codegen.run(*llvmModule);
  }
  out.keep();
  return success();
}
