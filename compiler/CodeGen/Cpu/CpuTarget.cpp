//===- CpuTarget.cpp - the host CPU: LLVM kernels, oneDNN matmuls --------===//
//
// The CPU target compiles for the machine sinterc runs on (its model and
// features, e.g. znver4 with AVX-512), ahead of time: nothing is
// JIT-compiled at training time, and the binary links no MLIR or LLVM.
//
//   lowered:  sinter-lower-cpu-kernels (linalg on memref views of the
//             slabs), sinter-verify-lowered;
//   binary:   sinter-convert-cpu-to-llvm, sinter-lower-step,
//             sinter-verify-binary;
//   object:   LLVM IR optimized at O2 for the host (O2 vectorizes the same
//             loops as O3 in a fraction of the time: after its extra
//             unrolling O3 spends ~8x longer in the loop vectorizer on a
//             GPT-sized step for ~4% faster kernels), then machine code;
//   link:     the system C++ compiler links the object with the runtime,
//             its main and oneDNN (the line CMake wrote at configure time,
//             build/lib/SinterRuntimeLink.txt).
//
// Its kernel limits are the defaults of analysis::KernelLimits, which were
// measured on CPUs; oneDNN applies a scale, a bias and ReLU/GELU in the
// same call.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/ObjectEmitter.h"
#include "compiler/CodeGen/Cpu/Passes.h"
#include "compiler/CodeGen/Passes.h"
#include "compiler/CodeGen/Target.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace sinter;
using namespace sinter::codegen;

#ifndef SINTER_RUNTIME_LINK_FILE
#define SINTER_RUNTIME_LINK_FILE ""
#endif

namespace {

class CpuTarget final : public Target {
public:
  StringRef name() const override { return "cpu"; }
  StringRef description() const override {
    return "the host CPU: kernels through LLVM, matmuls through oneDNN";
  }
  analysis::KernelLimits kernelLimits() const override { return {}; }
  std::vector<std::string> matmulEpilogues() const override {
    return {"scale", "bias", "activation"};
  }
  // What a kernel may leave in cache without crowding anything out.
  int64_t smallResultBytes() const override { return 64 << 10; }
  int64_t bigOperandBytes() const override { return 256 << 10; }

  void registerDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, func::FuncDialect,
                    linalg::LinalgDialect, math::MathDialect,
                    memref::MemRefDialect, scf::SCFDialect,
                    cf::ControlFlowDialect, affine::AffineDialect,
                    LLVM::LLVMDialect>();
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
  }

  void buildLoweredPipeline(OpPassManager &pm) const override {
    // Each launch's kernel as a function of linalg on memref views, its
    // buffers at the launch's places; identical bodies emitted once.
    analysis::KernelLimits limits = kernelLimits();
    LowerCpuKernelsPassOptions lower;
    lower.minElementsToSplit = limits.minElementsToSplit;
    lower.chunkElements = limits.chunkElements;
    lower.maxScratchBytes = limits.maxScratchBytes;
    pm.addPass(createLowerCpuKernelsPass(lower));
    // Kernels are code; launches name them.
    pm.addPass(createVerifyLoweredPass());
  }

  void buildBinaryPipeline(OpPassManager &pm) const override {
    // Loops, polynomial math, then the LLVM dialect; bf16 conversions as
    // integer code where the host has no instruction for them.
    ConvertCpuToLLVMPassOptions convert;
    convert.expandBf16 = !llvm::sys::getHostCPUFeatures().lookup("avx512bf16");
    pm.addPass(createConvertCpuToLLVMPass(convert));
    // Each program as the ABI's symbols.
    pm.addPass(createLowerStepPass());
    // Only what LLVM translates is left.
    pm.addPass(createVerifyBinaryPass());
  }

  LogicalResult emitObject(ModuleOp module, StringRef path,
                           TimingScope &timing) const override {
    return emitHostObject(module, path, timing);
  }

  LogicalResult linkExecutable(Location loc, StringRef object,
                               StringRef output) const override;
};

LogicalResult CpuTarget::linkExecutable(Location loc, StringRef object,
                                        StringRef output) const {
  return linkWithRuntime(loc, object, output, SINTER_RUNTIME_LINK_FILE);
}

} // namespace

LogicalResult sinter::codegen::linkWithRuntime(Location loc, StringRef object,
                                               StringRef output,
                                               StringRef linkFile) {
  if (!llvm::sys::fs::exists(linkFile))
    return emitError(loc, "the runtime is not built (")
           << linkFile << " is missing)";
  auto cxx = llvm::sys::findProgramByName("c++");
  if (!cxx)
    cxx = llvm::sys::findProgramByName("g++");
  if (!cxx)
    return emitError(loc, "no system C++ compiler (c++ or g++) to link with");
  std::string linkArg = ("@" + linkFile).str();
  SmallVector<StringRef> args = {*cxx, "-o", output, object, linkArg};
  // The linker's own messages go to a file: the user gets one line, with
  // the linker's first line of complaint in it.
  llvm::SmallString<128> log;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("sinter-link", "log", log))
    return emitError(loc, "cannot create a temporary file: ") << ec.message();
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(*cxx, args, std::nullopt, redirects, 0, 0,
                                     &error);
  std::string firstLine;
  if (auto text = llvm::MemoryBuffer::getFile(log)) {
    StringRef all = (*text)->getBuffer();
    // The most specific complaint, e.g. "cannot open output file ...".
    for (StringRef line : llvm::split(all, '\n'))
      if (line.contains("error") || line.contains("cannot")) {
        firstLine = line.trim().str();
        break;
      }
  }
  llvm::sys::fs::remove(log);
  if (rc != 0)
    return emitError(loc, "linking ")
           << output << " failed (" << *cxx << " exit " << rc
           << (firstLine.empty() ? "" : ": " + firstLine)
           << (error.empty() ? "" : "; " + error) << ")";
  return success();
}

const Target &sinter::codegen::cpuTarget() {
  static const CpuTarget target;
  return target;
}
