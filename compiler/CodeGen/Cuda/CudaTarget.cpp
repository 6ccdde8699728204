//===- CudaTarget.cpp - NVIDIA GPUs: NVVM kernels, cuBLASLt matmuls ------===//
//
// The CUDA target compiles, ahead of time and with no GPU, for the
// architectures `--cuda-arch` names (default sm_90):
//
//   lowered:  sinter-lower-cuda-kernels (the same fused regions as the
//             CPU's, as GPU loops: Cuda/CudaKernels.cpp),
//             sinter-merge-cuda-launches (neighbouring independent kernels
//             as one launch: Cuda/MergeLaunches.cpp; not with
//             --cuda-merge-launches=false), sinter-verify-lowered;
//   binary:   sinter-lower-step without kernel tables (the runtime finds
//             kernels by name), sinter-outline-cuda-kernels, MLIR's
//             lowering of the gpu.module to NVVM and then to PTX for each
//             chip (libdevice from the toolkit for exp, log, tanh, erf),
//             sinter-embed-cuda-images (ptxas: a cubin per chip, kept with
//             its PTX), sinter-verify-binary;
//   object:   the host object holding the programs and the CUDA module
//             (no host code of its own);
//   link:     the runtime with the CUDA executor
//             (build/lib/SinterCudaRuntimeLink.txt), which loads the
//             driver with dlopen when the binary starts.
//
// Fusion cuts kernels as on the CPU, except that a row-phased kernel never
// keeps values in per-chunk buffers (a GPU thread recomputes them), so no
// later phase is refused for the size of its chunks. cuBLASLt applies a
// matmul's scale, bias and a ReLU or tanh GELU; an erf GELU runs in the
// next elementwise kernel (cuBLASLt's GELU is the tanh form only).
//
// `cuda-host` is the same target with its kernels run on the host CPU as
// one thread each (EmulateCudaKernels.cpp): how the CUDA kernels' numbers
// are checked against the reference interpreter on a machine with no GPU.
//
//===----------------------------------------------------------------------===//

#include "abi/Abi.h"
#include "compiler/CodeGen/Cpu/ObjectEmitter.h"
#include "compiler/CodeGen/Cpu/Passes.h"
#include "compiler/CodeGen/Cuda/Passes.h"
#include "compiler/CodeGen/Passes.h"
#include "compiler/CodeGen/Target.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

using namespace mlir;
using namespace sinter;
using namespace sinter::codegen;

#ifndef SINTER_CUDA_RUNTIME_LINK_FILE
#define SINTER_CUDA_RUNTIME_LINK_FILE ""
#endif
#ifndef SINTER_CUDA_TOOLKIT
#define SINTER_CUDA_TOOLKIT ""
#endif

namespace {

CudaOptions &cudaOptions() {
  static CudaOptions options;
  return options;
}

/// The toolkit: --cuda-toolkit, $CUDA_HOME, or the one CMake found.
std::string toolkitPath() {
  if (!cudaOptions().toolkit.empty())
    return cudaOptions().toolkit;
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    return home;
  return SINTER_CUDA_TOOLKIT;
}

/// The kernels' lowering with --cuda-row-slots.
LowerCudaKernelsPassOptions lowerKernelsOptions() {
  LowerCudaKernelsPassOptions options;
  options.rowSlots = cudaOptions().rowSlots;
  return options;
}

class CudaTarget : public Target {
public:
  StringRef name() const override { return "cuda"; }
  StringRef description() const override {
    return "NVIDIA GPUs (--cuda-arch): kernels through NVVM to PTX and "
           "cubins, matmuls through cuBLASLt";
  }
  analysis::KernelLimits kernelLimits() const override {
    analysis::KernelLimits limits;
    limits.maxScratchBytes = int64_t(1) << 40;
    limits.memoryBound = true;
    return limits;
  }
  // cuBLASLt's epilogues: ReLU and the tanh GELU (CUBLASLT_EPILOGUE_RELU,
  // _GELU, with or without _BIAS). It has no erf GELU, which stays in an
  // elementwise kernel (with its neighbours), exact. And the tanh GELU's
  // training forms: a GELU whose input the backward pass keeps writes it
  // too (GELU_AUX), and the backward's derivative and bias gradient are
  // the epilogue of the matmul that brings the gradient (DGELU_BGRAD).
  std::vector<std::string> matmulEpilogues() const override {
    return {"scale",
            "bias",
            std::string(abi::activationName(abi::MatmulStep::relu)),
            std::string(abi::activationName(abi::MatmulStep::gelu_tanh)),
            "gelu_aux",
            "dgelu",
            "dgelu_bgrad"};
  }
  // cuBLASLt's workspace: 32 MiB, what NVIDIA suggests for Hopper, and the
  // 192 bytes the executor may skip to align it to 256; part of the arena
  // plan, live at each matmul's step only.
  int64_t matmulWorkspaceBytes() const override {
    return (int64_t(32) << 20) + 192;
  }
  StringRef matmulLibrary() const override { return "cuBLASLt"; }
  // Its fast kernels read and write 16-byte aligned rows: GPT-2's logits
  // (50257 wide) ran 4-6x slower than the aligned layers on an H200.
  int64_t matmulAlignBytes() const override { return 16; }
  // A block's worth of results stays in L2 for the next kernel.
  int64_t smallResultBytes() const override { return 64 << 10; }
  int64_t bigOperandBytes() const override { return 256 << 10; }

  void registerDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, func::FuncDialect,
                    gpu::GPUDialect, linalg::LinalgDialect, math::MathDialect,
                    memref::MemRefDialect, scf::SCFDialect,
                    cf::ControlFlowDialect, affine::AffineDialect,
                    LLVM::LLVMDialect, NVVM::NVVMDialect>();
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    registerGPUDialectTranslation(registry);
    registerNVVMDialectTranslation(registry);
    NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  }

  void buildLoweredPipeline(OpPassManager &pm) const override {
    pm.addPass(createLowerCudaKernelsPass(lowerKernelsOptions()));
    if (cudaOptions().mergeLaunches)
      pm.addPass(createMergeCudaLaunchesPass());
    // The CPU's polynomial exp, log, tanh, erf: the same forms on both
    // targets (libdevice keeps what they leave, floor and the like).
    pm.nest<func::FuncOp>().addPass(createApproximateMathPass());
    pm.addPass(createVerifyLoweredPass());
  }

  void buildBinaryPipeline(OpPassManager &pm) const override {
    // The programs first: their launches name the kernel functions, which
    // then move into the gpu.module.
    LowerStepPassOptions step;
    step.kernelTable = false;
    pm.addPass(createLowerStepPass(step));
    std::string toolkit = toolkitPath();
    OutlineCudaKernelsPassOptions outline;
    outline.chips = cudaOptions().chips;
    outline.toolkit = toolkit;
    if (!toolkit.empty()) {
      llvm::SmallString<128> bc(toolkit);
      llvm::sys::path::append(bc, "nvvm", "libdevice", "libdevice.10.bc");
      if (llvm::sys::fs::exists(bc))
        outline.libdevice = bc.str().str();
    }
    pm.addPass(createOutlineCudaKernelsPass(outline));
    OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
    // Special kernels' copies and fills, subviews, then NVVM; bf16 and f16
    // math in f32 (NVVM has no bf16 exp).
    kernels.addPass(createConvertLinalgToLoopsPass());
    kernels.addPass(memref::createExpandStridedMetadataPass());
    kernels.addPass(createLowerAffinePass());
    kernels.addPass(createConvertSCFToCFPass());
    kernels.addPass(math::createMathLegalizeToF32());
    kernels.addPass(createConvertGpuOpsToNVVMOps());
    // The polynomial forms' math.fma (convert-gpu-to-nvvm leaves it).
    kernels.addPass(createConvertMathToLLVMPass());
    kernels.addPass(createCanonicalizerPass());
    kernels.addPass(createCSEPass());
    kernels.addPass(createReconcileUnrealizedCastsPass());
    GpuModuleToBinaryPassOptions binary;
    binary.toolkitPath = toolkit;
    binary.compilationTarget = "isa";
    pm.addPass(createGpuModuleToBinaryPass(binary));
    EmbedCudaImagesPassOptions embed;
    if (!toolkit.empty()) {
      llvm::SmallString<128> ptxas(toolkit);
      llvm::sys::path::append(ptxas, "bin", "ptxas");
      if (llvm::sys::fs::can_execute(ptxas))
        embed.ptxasPath = ptxas.str().str();
    }
    embed.ptxDir = cudaOptions().ptxDir;
    pm.addPass(createEmbedCudaImagesPass(embed));
    pm.addPass(createVerifyBinaryPass());
  }

  LogicalResult emitObject(ModuleOp module, StringRef path,
                           TimingScope &timing) const override {
    return emitHostObject(module, path, timing);
  }

  LogicalResult linkExecutable(Location loc, StringRef object,
                               StringRef output) const override {
    StringRef linkFile = SINTER_CUDA_RUNTIME_LINK_FILE;
    if (linkFile.empty())
      return emitError(loc, "this sinterc was built without the CUDA "
                            "runtime (no CUDA toolkit at configure time); "
                            "--compile-to=binary and -o x.o still work");
    return linkWithRuntime(loc, object, output, linkFile);
  }
};

/// The CUDA target's kernels, emulated on the host: a CPU binary.
class CudaHostTarget final : public CudaTarget {
public:
  StringRef name() const override { return "cuda-host"; }
  // Its matmuls run on the CPU executor.
  StringRef matmulLibrary() const override { return "oneDNN"; }
  StringRef description() const override {
    return "for tests: the CUDA target's kernels on the host CPU, one "
           "thread each (no GPU needed)";
  }
  void registerDialects(DialectRegistry &registry) const override {
    CudaTarget::registerDialects(registry);
    cpuTarget().registerDialects(registry);
  }
  void buildLoweredPipeline(OpPassManager &pm) const override {
    pm.addPass(createLowerCudaKernelsPass(lowerKernelsOptions()));
    if (cudaOptions().mergeLaunches)
      pm.addPass(createMergeCudaLaunchesPass());
    pm.nest<func::FuncOp>().addPass(createApproximateMathPass());
    pm.addPass(createEmulateCudaKernelsPass());
    pm.addPass(createVerifyLoweredPass());
  }
  void buildBinaryPipeline(OpPassManager &pm) const override {
    cpuTarget().buildBinaryPipeline(pm);
  }
  LogicalResult linkExecutable(Location loc, StringRef object,
                               StringRef output) const override {
    return cpuTarget().linkExecutable(loc, object, output);
  }
};

} // namespace

const Target &sinter::codegen::cudaHostTarget() {
  static const CudaHostTarget target;
  return target;
}

void sinter::codegen::setCudaOptions(CudaOptions options) {
  cudaOptions() = std::move(options);
}

const Target &sinter::codegen::cudaTarget() {
  static const CudaTarget target;
  return target;
}
