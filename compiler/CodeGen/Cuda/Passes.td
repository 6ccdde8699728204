//===- Passes.td - the CUDA target's code generation passes ---------------===//

#ifndef SINTER_COMPILER_CODEGEN_CUDA_PASSES_TD
#define SINTER_COMPILER_CODEGEN_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerCudaKernelsPass : Pass<"sinter-lower-cuda-kernels", "mlir::ModuleOp"> {
  let summary = "Turns every kernel launch into a CUDA kernel function";
  let description = [{
    For each `sched.launch` of each program, emits the kernel it launches
    as a function with the CUDA kernel signature (one `memref<?xi8>` per
    slab, then one `i64` per word of the launch) whose body is GPU code
    (`compiler/CodeGen/Cuda/CudaKernels.cpp`): grid-stride loops for
    elementwise kernels, one block per row with `gpu.all_reduce` for
    reductions and row-phased kernels, a thread per index of the split
    dimension for special kernels. The launch then names the function and
    gets its `extent` (blocks), `sched.cuda_block` (threads per block),
    `bytes`, `label`, `symbol` (the kernel's name in the CUDA module) and
    `args`; the `sched.kernel`s go. Kernels that come out identical but
    for their names are one function.
  }];
  let options = [
    Option<"rowSlots", "row-slots", "int64_t", /*default=*/"8",
           "Elements of a row each thread of a row kernel keeps in "
           "registers across the row's phases (0: recompute every phase "
           "from memory)">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::math::MathDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def MergeCudaLaunchesPass : Pass<"sinter-merge-cuda-launches",
                                 "mlir::ModuleOp"> {
  let summary = "Runs neighbouring independent CUDA kernels as one launch";
  let description = [{
    Each run of `sched.launch`es of lowered CUDA kernels with no other step
    between them, the same block size, no byte one writes that another
    reads or writes, and no two root views sharing bytes (the liveness
    rule's buffers) among their buffers, becomes one launch of a kernel whose grid is the
    members' grids one after another: block b runs the member whose range
    holds it, as block b - start of that member's grid
    (`compiler/CodeGen/Cuda/MergeLaunches.cpp`). The launch reads and
    writes the members' buffers and passes their words in order; its label
    is the first member's kernel number, `x<members>` and the members' op
    names. At most 64 members, 480 words (4 KB of kernel parameters) and
    16 KB of shared memory a kernel (the members' shared arrays and 32
    elements an all-reduce). `sched.cuda_members` on the function lists
    the members' grids; `sched.merge` on a launch that could have joined
    the run before it says why it did not.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::scf::SCFDialect"];
}

def OutlineCudaKernelsPass : Pass<"sinter-outline-cuda-kernels",
                                  "mlir::ModuleOp"> {
  let summary = "Moves the CUDA kernel functions into a gpu.module";
  let description = [{
    Every function a launch names becomes a `gpu.func` kernel of
    `gpu.module @sinter_cuda` (with its block size as `known_block_size`,
    which NVVM turns into `.maxntid`), targeted at each architecture of
    `chips` through `#nvvm.target`. The launches keep the kernels' names;
    the step program records them, and the runtime looks them up in the
    loaded module.
  }];
  let options = [
    ListOption<"chips", "chips", "std::string",
               "The architectures to compile for (sm_80, sm_90, ...)">,
    Option<"libdevice", "libdevice", "std::string", /*default=*/"\"\"",
           "libdevice.10.bc to link math functions from (required)">,
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "The toolkit libdevice was looked for in (for messages)">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect",
                           "mlir::NVVM::NVVMDialect"];
}

def EmbedCudaImagesPass : Pass<"sinter-embed-cuda-images", "mlir::ModuleOp"> {
  let summary = "Turns the compiled gpu.binary into the ABI's CUDA symbols";
  let description = [{
    Replaces `gpu.binary @sinter_cuda` (one object per architecture) by
    the serialized `CudaModule` (`abi/StepProgram.proto`) as the LLVM
    globals `sinter_cuda_module` and `sinter_cuda_module_size`, and
    checks each object: a PTX that still declares a libdevice function
    (`.extern .func __nv_`) would fail to load on the GPU, so it fails
    here. Each PTX then goes through `ptxas` for its chip, and the image
    holds both (the driver loads the cubin, or JIT-compiles the PTX on a
    newer architecture). `ptx-dir` keeps each chip's PTX and what ptxas
    said about every kernel (registers, spills, shared memory).
  }];
  let options = [
    Option<"ptxasPath", "ptxas", "std::string", /*default=*/"\"\"",
           "ptxas to compile the PTX with (default: found on PATH)">,
    Option<"ptxDir", "ptx-dir", "std::string", /*default=*/"\"\"",
           "Folder to write <chip>.ptx and <chip>.ptxas.txt to">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def EmulateCudaKernelsPass : Pass<"sinter-emulate-cuda-kernels",
                                  "mlir::ModuleOp"> {
  let summary = "The CUDA kernels as host functions, one thread each";
  let description = [{
    For the `cuda-host` target (tests without a GPU): every CUDA kernel
    function runs as one block of one thread on the CPU (thread and block
    ids 0, grid and block sizes 1, an all-reduce its operand, a barrier
    nothing), behind an entry with the CPU kernel signature; launches run
    once. The kernels' own grid-stride loops then cover every element.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect"];
}

#endif // SINTER_COMPILER_CODEGEN_CUDA_PASSES_TD
