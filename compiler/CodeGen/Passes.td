//===- Passes.td - code generation passes every target shares -------------===//

#ifndef SINTER_COMPILER_CODEGEN_PASSES_TD
#define SINTER_COMPILER_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def VerifyLoweredPass : Pass<"sinter-verify-lowered", "mlir::ModuleOp"> {
  let summary = "Checks the contract of the lowered phase";
  let description = [{
    Every kernel is code: no `sched.kernel` and no sgraph op is left; every
    `sched.launch` names a function with the kernel signature of
    `abi/KernelAbi.h` (one `memref<?xi8>` per slab, then the
    `[begin, end)` range) and has its `extent`, `label` and `symbol`; every
    program has a role the ABI names, at most one program per role. Closes
    the lowered phase.
  }];
}

def LowerStepPass : Pass<"sinter-lower-step", "mlir::ModuleOp"> {
  let summary = "Turns each sched.program into the ABI's symbols";
  let description = [{
    Builds the step program of every `sched.program`
    (`compiler/CodeGen/StepProgramBuilder.h`, schema
    `abi/StepProgram.proto`) and replaces the program by the
    symbols `abi/Abi.h` names for its role: the serialized program,
    its size, and its kernel table (the address of each launch's `symbol`,
    in step order, in rows of `table-row` entries: a struct of pointer
    arrays, laid out as one array, which LLVM builds in linear time). The
    module attribute `sinter.default_data` (the data folder the binary
    reads when given none) becomes `sinter_default_data` (`""` without
    one):

    ```mlir
    llvm.mlir.global external constant @sinter_program("\08\02...")
    llvm.mlir.global external constant @sinter_program_size(1234 : i64) : i64
    llvm.mlir.global external constant @sinter_kernels() : !llvm.struct<(array<2 x ptr>)> {
      ... llvm.mlir.addressof @_mlir_ciface_sinter_k0 ...
    }
    ```

    Precondition: the kernels are the target's LLVM functions (the binary
    phase's conversion has run), unless `kernel-table=false`.
  }];
  let options = [
    Option<"tableRow", "table-row", "int64_t", /*default=*/"256",
           "Entries per row of a kernel table">,
    Option<"kernelTable", "kernel-table", "bool", /*default=*/"true",
           "Emit the kernel table (false for the CUDA target, whose "
           "kernels the runtime finds by name in the CUDA module)">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def VerifyBinaryPass : Pass<"sinter-verify-binary", "mlir::ModuleOp"> {
  let summary = "Checks the contract of the binary phase";
  let description = [{
    The module is what LLVM translates: only LLVM-dialect ops, the step
    program's symbols there (and the evaluation program's with each other),
    and every kernel table entry defined; a CUDA binary has the CUDA module
    (`sinter_cuda_module`) instead of kernel tables. Closes the binary
    phase.
  }];
}

#endif // SINTER_COMPILER_CODEGEN_PASSES_TD
