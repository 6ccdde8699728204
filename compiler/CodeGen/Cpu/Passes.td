//===- Passes.td - the CPU target's code generation passes ----------------===//

#ifndef SINTER_COMPILER_CODEGEN_CPU_PASSES_TD
#define SINTER_COMPILER_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerCpuKernelsPass : Pass<"sinter-lower-cpu-kernels", "mlir::ModuleOp"> {
  let summary = "Turns every kernel launch into a CPU kernel function";
  let description = [{
    For each `sched.launch` of each program, emits the kernel it launches
    as a function with the kernel signature of `abi/KernelAbi.h`
    (`compiler/CodeGen/Cpu/KernelEmitter.h`): an entry `<prefix><kernel>`
    that cuts the launch's buffers out of the slabs at their offsets and
    calls a body `<prefix><kernel>_body` of linalg on memref views, one
    `noalias` buffer per place. The prefix is the program role's
    (`sinter_`, `sinter_eval_`). The launch then names the entry and gets
    its `extent`, `bytes`, `label` and `symbol`
    (`_mlir_ciface_<prefix><kernel>`); the `sched.kernel`s go.

    Bodies that come out identical (the same kernel in every layer of a
    transformer; a dropout's key is an argument, not part of the body) are
    emitted once: every entry calls the first, which is marked
    `sinter.shared_body`, so LLVM compiles it once. A body with a
    reassociable sum over fewer than 16K elements is not shared: LLVM
    unrolls it completely and may order the additions differently inlined
    and out of line, and a shared body must compute the bits its own copy
    would. The limits say how kernels are cut over threads and into chunks
    of rows.
  }];
  let options = [
    Option<"minElementsToSplit", "min-elements-to-split", "int64_t",
           /*default=*/"sinter::analysis::KernelLimits().minElementsToSplit",
           "Kernels with fewer elements run on one thread">,
    Option<"chunkElements", "chunk-elements", "int64_t",
           /*default=*/"sinter::analysis::KernelLimits().chunkElements",
           "Elements of one chunk of rows of a row-phased kernel">,
    Option<"maxScratchBytes", "max-scratch-bytes", "int64_t",
           /*default=*/"sinter::analysis::KernelLimits().maxScratchBytes",
           "Stack bytes a row-phased kernel may keep values in">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::math::MathDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def ApproximateMathPass : Pass<"sinter-approximate-math",
                               "mlir::func::FuncOp"> {
  let summary = "Polynomial approximations of f32 exp, log, tanh, erf, ...";
  let description = [{
    MLIR's polynomial approximations of the math functions: unlike libm
    calls they vectorize.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::math::MathDialect"];
}

def ConvertCpuToLLVMPass : Pass<"sinter-convert-cpu-to-llvm",
                                "mlir::ModuleOp"> {
  let summary = "Lowers CPU kernel functions to the LLVM dialect";
  let description = [{
    linalg to loops, the math approximations, SCF to CF, memref views to
    explicit offset arithmetic, then memref, arith, math, func and CF to
    the LLVM dialect. Kernel bodies become internal with every pointer
    `noalias` (each is one planned buffer: without the promise LLVM
    vectorizes no loop that stores into the arena while loading from it);
    a body several entries share is also `noinline`, so that it is compiled
    once. Entries become internal too: only their C-interface wrappers
    (`_mlir_ciface_*`, what the kernel tables hold) are called, and they
    inline them. Programs are left as they are for sinter-lower-step.

    bf16 to f32 extensions always become integer code (the 16 bits
    shifted into an f32, exactly the instructions LLVM would emit): LLVM
    19's x86 cost model prices the vector `fpext bfloat` so high on AVX-512
    BF16 hosts that a loop reading two bf16 operands is vectorized 4 wide,
    not 16. With `expand-bf16`, f32 to bf16 truncations also
    become integer code (round to nearest even; a NaN becomes the quiet
    NaN 0x7fc0) before LLVM sees them: on a CPU without AVX-512 BF16, LLVM
    would call `__truncsfbf2`, which Debian 12's libgcc lacks, once per
    element. The CPU target sets it from the host's features.
  }];
  let options = [
    Option<"expandBf16", "expand-bf16", "bool", /*default=*/"false",
           "Lower bf16 conversions to integer code (no native instruction)">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // SINTER_COMPILER_CODEGEN_CPU_PASSES_TD
