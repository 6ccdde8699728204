//===- Target.h - what differs between the machines sinterc compiles for -*- C++ -*-===//
//
// Everything in the compiler that depends on the machine the training binary
// runs on sits behind this interface: how kernels are cut (the sizes fusion
// and kernel emission agree on), which epilogues the matmul library applies
// in the same call, when a small kernel should run right after its big
// input, the passes that turn kernels into code (the lowered phase) and
// then into the target's LLVM IR with the step programs as the ABI's symbols
// (the binary phase), how the object file is written, and how it is linked
// with the runtime. The passes before the lowered phase are target
// independent and take the target's numbers as options
// (compiler/Pipelines/Pipelines.cpp).
//
// `sinterc --target=<name>` selects one; `cpu` (the default, CpuTarget.cpp)
// compiles for the host CPU with LLVM and oneDNN, `cuda` (Cuda/CudaTarget.cpp)
// for NVIDIA GPUs through NVVM, cuBLASLt and NCCL.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_CODEGEN_TARGET_H
#define SINTER_COMPILER_CODEGEN_TARGET_H

#include "passes/Analysis/KernelChunks.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include <string>
#include <vector>

namespace sinter::codegen {

class Target {
public:
  virtual ~Target() = default;

  /// `--target=` name, e.g. "cpu".
  virtual llvm::StringRef name() const = 0;
  /// One line for --help.
  virtual llvm::StringRef description() const = 0;

  /// How kernels are cut over threads and into chunks of rows.
  virtual analysis::KernelLimits kernelLimits() const = 0;
  /// What the matmul library applies in the same call: a subset of
  /// "scale", "bias", "activation" (every activation), or of the
  /// activations only "relu", "gelu_tanh", "gelu_erf".
  virtual std::vector<std::string> matmulEpilogues() const = 0;
  /// Scratch bytes the matmul library wants for each call, placed by the
  /// memory plan in the arena at the matmul's step (0: none).
  virtual int64_t matmulWorkspaceBytes() const { return 0; }
  /// The byte multiple the matmul library's fast kernels want every row
  /// stride to be (0: none); sinter-align-matmuls pads to it.
  virtual int64_t matmulAlignBytes() const { return 0; }
  /// The matmul library, as the fusion report names it.
  virtual llvm::StringRef matmulLibrary() const { return "oneDNN"; }
  /// sinter-schedule-kernels: a kernel that reads an input of
  /// bigOperandBytes or more into results of at most smallResultBytes runs
  /// right after the input is written.
  virtual int64_t smallResultBytes() const = 0;
  virtual int64_t bigOperandBytes() const = 0;

  /// The dialects and translations the target's passes create.
  virtual void registerDialects(mlir::DialectRegistry &registry) const = 0;
  /// Scheduled -> lowered: every kernel of the module's programs becomes
  /// the target's code (for the CPU: linalg on memref views of the slabs).
  virtual void buildLoweredPipeline(mlir::OpPassManager &pm) const = 0;
  /// Lowered -> binary: the kernels in the LLVM dialect, and each program
  /// as the ABI's symbols (sinter-lower-step).
  virtual void buildBinaryPipeline(mlir::OpPassManager &pm) const = 0;

  /// Writes the object file of a binary-phase module; `timing` receives
  /// where the time went.
  virtual mlir::LogicalResult emitObject(mlir::ModuleOp module,
                                         llvm::StringRef path,
                                         mlir::TimingScope &timing) const = 0;
  /// Links `object` with the runtime into the executable `output`.
  virtual mlir::LogicalResult linkExecutable(mlir::Location loc,
                                             llvm::StringRef object,
                                             llvm::StringRef output) const = 0;
};

/// The target called `name`, or null.
const Target *lookupTarget(llvm::StringRef name);
/// The target used when none is named: "cpu".
const Target &defaultTarget();
/// "cpu" (the names --target accepts), comma-separated.
std::string targetNames();
/// Registers every target's dialects.
void registerTargetDialects(mlir::DialectRegistry &registry);

/// The CPU target (CpuTarget.cpp).
const Target &cpuTarget();

/// What sinterc's --cuda-* flags set for the CUDA target.
struct CudaOptions {
  /// The architectures the kernels are compiled for, "sm_90" style.
  std::vector<std::string> chips = {"sm_90"};
  /// The toolkit (ptxas, libdevice); empty: $CUDA_HOME, then the one
  /// found when sinterc was built.
  std::string toolkit;
  /// Where to keep each chip's PTX and ptxas's report; empty: nowhere.
  std::string ptxDir;
  /// Elements of a row each thread of a row kernel keeps in registers
  /// across the row's phases (CudaKernels.cpp); 0 recomputes them.
  int64_t rowSlots = 8;
  /// Whether neighbouring independent kernels run as one launch
  /// (Cuda/MergeLaunches.cpp).
  bool mergeLaunches = true;
};
/// The CUDA target (Cuda/CudaTarget.cpp), with `options`.
void setCudaOptions(CudaOptions options);
const Target &cudaTarget();
/// The CUDA target's kernels run on the host CPU (tests with no GPU).
const Target &cudaHostTarget();

/// Links `object` into the executable `output` with the system C++
/// compiler and the linker arguments in `linkFile` (one line, written when
/// the runtime was built); the linker's first complaint becomes the error.
mlir::LogicalResult linkWithRuntime(mlir::Location loc, llvm::StringRef object,
                                    llvm::StringRef output,
                                    llvm::StringRef linkFile);

} // namespace sinter::codegen

#endif // SINTER_COMPILER_CODEGEN_TARGET_H
