//===- ScheduleOps.td - the sched dialect's ops --------------------------===//
//
// Every op's semantics, operands and numbered constraints are in
// docs/dialects/sched.md; verifiers carry the same labels (`// view_c2`),
// and test/dialects/Schedule/invalid.mlir has one case per label.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_DIALECTS_SCHEDULE_SCHEDULEOPS_TD
#define SINTER_DIALECTS_SCHEDULE_SCHEDULEOPS_TD

include "dialects/Schedule/ScheduleBase.td"

include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Sched_Op<string mnemonic, list<Trait> traits = []>
    : Op<Schedule_Dialect, mnemonic, traits>;

/// An op that is one entry of a program's order.
class Sched_InProgramOp<string mnemonic, list<Trait> traits = []>
    : Sched_Op<mnemonic, !listconcat(traits, [HasParent<"ProgramOp">])>;

//===----------------------------------------------------------------------===//
// Programs and their memory
//===----------------------------------------------------------------------===//

def Sched_ProgramOp : Sched_Op<"program", [Symbol, IsolatedFromAbove,
    SingleBlock, NoTerminator]> {
  let summary = "One step of training (or evaluation) as the runtime runs it";
  let description = [{
    The body declares the slabs, the views of them that hold every buffer,
    the arguments and results by name and the constants, and lists the steps
    in the one order they run. `role` is `step` (the training step, whose
    state results update its arguments in place) or `eval` (the evaluation
    program of the same binary); `seed` is the training seed that keys
    parameter initializers.

    ```mlir
    sched.program @train_step attributes {role = "step", seed = 1337 : i64} {
      %arena = sched.slab "arena" size 256 : !sched.slab
      %params = sched.slab "params" size 64 : !sched.slab
      %w = sched.view %params[0] {name = "w", category = "parameters"}
          : !sched.buffer<4x4xf32>
      %y = sched.view %arena[0] {category = "activations"}
          : !sched.buffer<4x4xf32>
      sched.argument "w" "param" %w : !sched.buffer<4x4xf32>
      sched.matmul %w, %w -> %y : !sched.buffer<4x4xf32>,
          !sched.buffer<4x4xf32> -> !sched.buffer<4x4xf32>
      sched.result "y" "tensor" %y : !sched.buffer<4x4xf32>
    }
    ```

    Constraints: one slab of each kind (program_c1); views whose bytes
    overlap are never live at the same op unless one aliases the other
    (program_c2); argument names are unique, and so are result names
    (program_c3); nothing touches a collective's bytes between its start and
    its done (program_c4); a `param` or `opt_state` result is the buffer of
    the argument of the same name and kind (program_c5); `role` is `step`
    or `eval` (program_c6); a result's `labels` names an i64 or i32 `input`
    argument (program_c7).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       StrAttr:$role,
                       OptionalAttr<I64Attr>:$seed);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    mlir::Block &getBlock() { return getBody().front(); }
    /// The slab of kind `kind`, or null.
    SlabOp lookupSlab(sinter::abi::SlabKind kind);
  }];
}

def Sched_SlabOp : Sched_InProgramOp<"slab",
    [DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "Declares a slab and its size in bytes";
  let description = [{
    `kind` is a slab of the runtime ABI (`abi/KernelAbi.h`):
    `arena` (values reused by liveness), `params`, `opt_state`, `io`
    (inputs, the step, hyperparameters) or `constants`. The runtime
    allocates it once, 64-byte aligned and zero-filled.

    ```mlir
    %arena = sched.slab "arena" size 1048576 : !sched.slab
    ```

    Constraints: `kind` is a slab of the ABI (slab_c1); `size` >= 0
    (slab_c2).
  }];
  let arguments = (ins StrAttr:$kind, I64Attr:$size);
  let results = (outs Sched_SlabType:$slab);
  let assemblyFormat = "$kind `size` $size attr-dict `:` qualified(type($slab))";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The ABI's slab (verified: always there).
    sinter::abi::SlabKind getSlabKind() {
      return *sinter::abi::parseSlab(getKind().str());
    }
    /// Whether this is slab `kind` (also before verification).
    bool is(sinter::abi::SlabKind kind) {
      return getKind() == llvm::StringRef(sinter::abi::slabName(kind));
    }
  }];
}

def Sched_ViewOp : Sched_InProgramOp<"view",
    [DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "A typed buffer at a static byte offset of a slab";
  let description = [{
    The buffer occupies bytes `[offset, offset + bytes)` of `slab`. A view
    that `aliases` another shares its bytes on purpose (a reshape, a bias
    seen as a vector) and lies within them; it is the same buffer for the
    liveness rule of program_c2. `name` (an argument's name) and `category`
    (`parameters`, `gradients`, `optimizer_state`, `activations`,
    `workspace`, `inputs`, `outputs`, `constants`) are for reports.

    ```mlir
    %v = sched.view %arena[4096] {category = "activations"}
        : !sched.buffer<64x256xf32>
    %r = sched.view %arena[4096] aliases(%v : !sched.buffer<64x256xf32>)
        : !sched.buffer<16384xf32>
    ```

    Constraints: the view lies within its slab (view_c1); its offset is a
    multiple of 64 unless it aliases another view (view_c2); an aliasing
    view lies within the bytes of the view it aliases, in the same slab
    (view_c3); `category` is one of those above (view_c4).
  }];
  let arguments = (ins Sched_SlabType:$slab, I64Attr:$offset,
                       Optional<Sched_Buffer>:$aliased,
                       OptionalAttr<StrAttr>:$name,
                       OptionalAttr<StrAttr>:$category);
  let results = (outs Sched_Buffer:$result);
  let assemblyFormat = [{
    $slab `[` $offset `]` (`aliases` `(` $aliased^ `:` qualified(type($aliased)) `)`)?
    attr-dict `:` qualified(type($result))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    SlabOp getSlabOp();
    int64_t getBytes() { return getResult().getType().getBytes(); }
    /// The view this one aliases, through any chain; itself if none.
    ViewOp getRoot();
  }];
}

def Sched_ArgumentOp : Sched_InProgramOp<"argument"> {
  let summary = "Names a buffer the runtime fills before the step runs";
  let description = [{
    `kind` is `param` (with optional `init`, the initializer dictionary of
    `sgraph.init`, and `aliases`, the other names of a tied parameter),
    `opt_state`, `input` (with optional `bound`: integer values must lie in
    `[0, bound)`, or equal `ignore` when it is set: a cross-entropy's
    ignore_index), `step` (the i64 step counter), `hyper` (a
    hyperparameter the runtime may set between steps, with its
    `default_value`), `rank` (the i64 block of the global batch the run
    computes) or `accumulator` (a gradient accumulator, in the opt_state
    slab).
    Arguments are listed in the entry function's argument order.

    ```mlir
    sched.argument "lr" "hyper" %lr {default_value = 1.0e-03 : f64}
        : !sched.buffer<f64>
    ```

    Constraints: `kind` is one of those above (argument_c1); only a `param`
    has `init` or `aliases`, only an integer `input` has a `bound`, and
    only one with a `bound` has an `ignore` (argument_c2); a `step` is an i64 scalar (argument_c3); a `hyper` is an
    f32 or f64 scalar with a finite `default_value`, and only a `hyper` has one
    (argument_c4).
  }];
  let arguments = (ins StrAttr:$name, StrAttr:$kind, Sched_Buffer:$buffer,
                       OptionalAttr<DictionaryAttr>:$init,
                       OptionalAttr<StrArrayAttr>:$aliases,
                       OptionalAttr<I64Attr>:$bound,
                       OptionalAttr<I64Attr>:$ignore,
                       OptionalAttr<F64Attr>:$default_value);
  let assemblyFormat = "$name $kind $buffer attr-dict `:` qualified(type($buffer))";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The ABI's argument kind (verified: always there).
    sinter::abi::ArgumentKind getArgumentKind() {
      return *sinter::abi::parseArgumentKind(getKind().str());
    }
  }];
}

def Sched_ResultOp : Sched_InProgramOp<"result"> {
  let summary = "Names a buffer that holds a result once the steps have run";
  let description = [{
    `kind` is `metric` (a scalar), `param` / `opt_state` (the new value of
    the state argument of the same name, in that argument's own buffer) or
    `tensor`. Results are listed in the entry function's result order.

    A metric that is a fraction of the labels an input holds (accuracy)
    names the input as `labels` and the label that does not count as
    `ignore`: the runtime weights it by the labels that count where it
    combines micro-batches, ranks and held-out parts.

    ```mlir
    sched.result "loss" "metric" %loss : !sched.buffer<f32>
    sched.result "accuracy" "metric" %acc {ignore = -1 : i64, labels = "targets"} : !sched.buffer<f32>
    ```

    Constraints: `kind` is one of those above (result_c1); a `metric` is a
    scalar (result_c2); only a `metric` has `labels`, and with `labels`
    always `ignore`, never without (result_c3); `labels` names an i64 or
    i32 `input` argument (program_c7).
  }];
  let arguments = (ins StrAttr:$name, StrAttr:$kind, Sched_Buffer:$buffer,
                       OptionalAttr<StrAttr>:$labels,
                       OptionalAttr<I64Attr>:$ignore);
  let assemblyFormat = "$name $kind $buffer attr-dict `:` qualified(type($buffer))";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The ABI's result kind (verified: always there).
    sinter::abi::ResultKind getResultKind() {
      return *sinter::abi::parseResultKind(getKind().str());
    }
  }];
}

def Sched_FillOp : Sched_InProgramOp<"fill"> {
  let summary = "Contents a constants-slab buffer gets once, at creation";
  let description = [{
    ```mlir
    sched.fill %c, dense<[1.0, 2.0]> : tensor<2xf32> : !sched.buffer<2xf32>
    ```

    Constraints: `value` has the buffer's shape and element type (fill_c1);
    the buffer is a view of the `constants` slab (fill_c2).
  }];
  let arguments = (ins Sched_Buffer:$buffer, ElementsAttr:$value);
  let assemblyFormat = "$buffer `,` $value attr-dict `:` qualified(type($buffer))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

def Sched_KernelOp : Sched_Op<"kernel", [FunctionOpInterface,
    IsolatedFromAbove, SingleBlock]> {
  let summary = "A fused region: the sgraph ops one kernel computes";
  let description = [{
    A kernel of the scheduled step: its arguments are the tensors it reads,
    its results the tensors it writes, and its body the sgraph ops that
    compute them (a fusion region of `sinter-fuse-kernels`), ending in
    `sched.yield`. `kind` says how it is emitted: `loop`, `reduction` or
    `special` (docs/CodeGen.md). A `sched.launch` runs it on buffers.

    ```mlir
    sched.kernel @k7(%a: tensor<8x64xf32>, %b: tensor<8x1xf32>)
        -> tensor<8x64xf32> attributes {kind = "loop"} {
      %q = sgraph.div %a, %b : (tensor<8x64xf32>, tensor<8x1xf32>)
          -> tensor<8x64xf32>
      sched.yield %q : tensor<8x64xf32>
    }
    ```

    Constraints: `kind` is `loop`, `reduction` or `special` (kernel_c1);
    arguments and results are statically shaped tensors (kernel_c2).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       StrAttr:$kind,
                       OptionalAttr<StrAttr>:$sym_visibility,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "llvm::StringRef":$name,
                                 "mlir::FunctionType":$type,
                                 "llvm::StringRef":$kind)>];
  let extraClassDeclaration = [{
    mlir::Region *getCallableRegion() { return &getBody(); }
    llvm::ArrayRef<mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    llvm::ArrayRef<mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    mlir::Block &getBlock() { return getBody().front(); }
  }];
}

def Sched_YieldOp : Sched_Op<"yield", [Pure, Terminator, ReturnLike,
    HasParent<"KernelOp">]> {
  let summary = "The results of a kernel";
  let description = [{
    ```mlir
    sched.yield %q : tensor<8x64xf32>
    ```

    Constraints: the operands have the kernel's result types (yield_c1).
  }];
  let arguments = (ins Variadic<AnyType>:$operands);
  let assemblyFormat = "($operands^ `:` qualified(type($operands)))? attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

def Sched_LaunchOp : Sched_InProgramOp<"launch", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Runs a kernel on buffers";
  let description = [{
    Reads `inputs` and writes `outputs`, buffers that stand for the kernel's
    arguments and results in order. Until the kernels are lowered, `kernel`
    names a `sched.kernel`; the target's kernel lowering (for the CPU,
    `sinter-lower-cpu-kernels`) makes it name the kernel's function and
    sets `extent` (the range of the dimension the runtime may split over
    threads), `bytes` (moved per call, for profiles), `label` (the
    kernel's name in profiles: its region and the ops it holds),
    `symbol` (the function the runtime calls, as the object file names
    it) and `args` (the words the function reads at run time: where its
    buffers are, and its dropout keys; launches of the same code in
    different layers differ only in these, and share one function).

    ```mlir
    sched.launch @k7(%a, %b : !sched.buffer<8x64xf32>, !sched.buffer<8x1xf32>)
        -> (%q : !sched.buffer<8x64xf32>)
    ```

    Constraints: `kernel` names a `sched.kernel`, or a function with
    `extent` and `symbol` set (launch_c1); inputs and outputs have the element types and
    shapes of the kernel's arguments and results (launch_c2); `extent` >= 1
    (launch_c3); a lowered kernel function's `sched.kernel_args` (the
    words it reads) is the size of `args` (launch_c4).
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel,
                       Variadic<Sched_Buffer>:$inputs,
                       Variadic<Sched_Buffer>:$outputs,
                       OptionalAttr<I64Attr>:$extent,
                       OptionalAttr<I64Attr>:$bytes,
                       OptionalAttr<StrAttr>:$label,
                       OptionalAttr<StrAttr>:$symbol,
                       OptionalAttr<DenseI64ArrayAttr>:$args);
  let assemblyFormat = [{
    $kernel `(` ($inputs^ `:` qualified(type($inputs)))? `)`
    `->` `(` ($outputs^ `:` qualified(type($outputs)))? `)` attr-dict
  }];
  let hasVerifier = 1;
}

def Sched_MatmulOp : Sched_InProgramOp<"matmul", [AttrSizedOperandSegments]> {
  let summary = "A matmul library call with its epilogue";
  let description = [{
    `out = activation(alpha * op(lhs) @ op(rhs) + bias)`, where `op`
    transposes the two trailing axes when asked; batch axes broadcast as in
    numpy (ranks aligned by leading 1s). `bias`, if given, is `[N]` and is
    added to every row; `activation` is `none`, `relu`, `gelu_erf`,
    `gelu_tanh` or `dgelu_tanh`. `workspace`, if given, is scratch bytes
    the library may use during the call (cuBLASLt's workspace); the memory
    plan places it in the arena, live at this step only, so it shares
    bytes with values dead here.

    `aux` (out's shape and type) goes with the tanh GELU. With `gelu_tanh`
    the call writes the activation's input there too, for the backward
    pass (cuBLASLt's `GELU_AUX`). `dgelu_tanh` is that backward:
    `out = alpha * op(lhs) @ op(rhs) * gelu_tanh'(aux)`, with `aux` read;
    `bias_grad`, if given, receives the sum of out's rows, the bias
    gradient of aux's layer (cuBLASLt's `DGELU_BGRAD`).

    ```mlir
    sched.matmul %x, %w -> %y bias(%b : !sched.buffer<256xf32>)
        workspace(%ws : !sched.buffer<33554432xi8>)
        {transpose_rhs, activation = "gelu_tanh"}
        : !sched.buffer<64x784xf32>, !sched.buffer<256x784xf32>
          -> !sched.buffer<64x256xf32>
    ```

    Constraints: operands, result and bias have one element type
    (matmul_c1); `op(lhs)` is `[..., M, K]`, `op(rhs)` `[..., K, N]` and
    `out` `[batch..., M, N]` with numpy-broadcast batch axes (matmul_c2);
    `bias` is `[N]` (matmul_c3); `activation` is one of those above
    (matmul_c4); `out` shares no byte with `lhs`, `rhs` or `bias`
    (matmul_c5); `workspace` is a 1-D i8 buffer sharing no byte with
    `lhs`, `rhs`, `out` or `bias` (matmul_c6); `aux` comes only with
    `gelu_tanh` and always with `dgelu_tanh`, has out's shape and type and
    shares no byte with the others (matmul_c7); `bias_grad` comes only with
    `dgelu_tanh`, which has no `bias`, is `[N]` of out's type and shares no
    byte with the others (matmul_c8).

    `triangle` (default `full`) names a triangle of one square matrix the
    call may skip, over its two trailing axes (docs/StepProgram.md, "Causal
    matmuls"): `out_lower`, out is read only on and below its diagonal (the
    call may write 0 above it); `lhs_lower` / `lhs_upper`, op(lhs) is 0
    above / below its diagonal; `rhs_lower` / `rhs_upper`, the same of
    op(rhs). That matrix must be square, and the call has no bias, aux or
    activation (matmul_c9). Computing the whole product is always correct.
  }];
  let arguments = (ins Sched_Buffer:$lhs, Sched_Buffer:$rhs,
                       Sched_Buffer:$out, Optional<Sched_Buffer>:$bias,
                       Optional<Sched_Buffer>:$workspace,
                       Optional<Sched_Buffer>:$aux,
                       Optional<Sched_Buffer>:$bias_grad,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedStrAttr<StrAttr, "none">:$activation,
                       DefaultValuedStrAttr<StrAttr, "full">:$triangle);
  let assemblyFormat = [{
    $lhs `,` $rhs `->` $out (`bias` `(` $bias^ `:` qualified(type($bias)) `)`)?
    (`workspace` `(` $workspace^ `:` qualified(type($workspace)) `)`)?
    (`aux` `(` $aux^ `:` qualified(type($aux)) `)`)?
    (`bias_grad` `(` $bias_grad^ `:` qualified(type($bias_grad)) `)`)?
    attr-dict `:` qualified(type($lhs)) `,` qualified(type($rhs)) `->` qualified(type($out))
  }];
  let hasVerifier = 1;
}

def Sched_CopyOp : Sched_InProgramOp<"copy"> {
  let summary = "Copies a buffer's bytes into another";
  let description = [{
    ```mlir
    sched.copy %new -> %w : !sched.buffer<4x4xf32> -> !sched.buffer<4x4xf32>
    ```

    Constraints: both buffers have the same number of bytes (copy_c1).
  }];
  let arguments = (ins Sched_Buffer:$src, Sched_Buffer:$dst);
  let assemblyFormat = "$src `->` $dst attr-dict `:` qualified(type($src)) `->` qualified(type($dst))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Asynchronous collectives
//===----------------------------------------------------------------------===//

class Sched_StartOp<string mnemonic, list<Trait> traits = []>
    : Sched_InProgramOp<mnemonic, !listconcat(traits,
        [DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>])> {
  let results = (outs Sched_TokenType:$token);
  let hasVerifier = 1;
}

class Sched_DoneOp<string mnemonic, string start>
    : Sched_InProgramOp<mnemonic> {
  let arguments = (ins Sched_TokenType:$token);
  let assemblyFormat = "$token attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The start op whose token this completes.
    using StartOp = }] # start # [{;
    /// The op that made the token (null for a token that is no op's result).
    mlir::Operation *getStart() { return getToken().getDefiningOp(); }
  }];
}

def Sched_AllReduceStartOp : Sched_StartOp<"all_reduce_start"> {
  let summary = "Starts reducing a buffer across ranks, in place";
  let description = [{
    Every rank's `buffer` becomes the `reduction` (`sum`, `mean`, `max`,
    `min`) of all ranks' buffers once the matching `sched.all_reduce_done`
    has run. Until then nothing may touch the buffer's bytes. With
    `comm_dtype` (`bf16` or `f16`, for an f32 buffer and `sum` or `mean`)
    the bytes travel between ranks in that type.

    ```mlir
    %t = sched.all_reduce_start "mean" %g : !sched.buffer<1024xf32>
    sched.all_reduce_done %t
    ```

    Constraints: `reduction` is one of those above (all_reduce_start_c1);
    `comm_dtype` as above (all_reduce_start_c2); the token is used exactly
    once, by a `sched.all_reduce_done` (token_c1).
  }];
  let arguments = (ins StrAttr:$reduction, Sched_Buffer:$buffer,
                       OptionalAttr<StrAttr>:$comm_dtype);
  let assemblyFormat = "$reduction $buffer attr-dict `:` qualified(type($buffer))";
}

def Sched_AllReduceDoneOp
    : Sched_DoneOp<"all_reduce_done", "AllReduceStartOp"> {
  let summary = "Waits for an all-reduce";
  let description = [{
    Constraints: the token comes from a `sched.all_reduce_start`
    (done_c1).
  }];
}

def Sched_AllGatherStartOp : Sched_StartOp<"all_gather_start"> {
  let summary = "Starts gathering every rank's buffer into one";
  let description = [{
    `output` becomes the ranks' `input`s concatenated in rank order; its
    element count is the world size times `input`'s.

    ```mlir
    %t = sched.all_gather_start %shard -> %full
        : !sched.buffer<256xf32> -> !sched.buffer<1024xf32>
    sched.all_gather_done %t
    ```

    Constraints: `input` and `output` have one element type and `output`'s
    element count is a multiple of `input`'s (all_gather_start_c1); the
    token is used exactly once, by a `sched.all_gather_done` (token_c1).
  }];
  let arguments = (ins Sched_Buffer:$input, Sched_Buffer:$output);
  let assemblyFormat = [{
    $input `->` $output attr-dict `:` qualified(type($input)) `->` qualified(type($output))
  }];
}

def Sched_AllGatherDoneOp
    : Sched_DoneOp<"all_gather_done", "AllGatherStartOp"> {
  let summary = "Waits for an all-gather";
  let description = [{
    Constraints: the token comes from a `sched.all_gather_start` (done_c1).
  }];
}

def Sched_ReduceScatterStartOp : Sched_StartOp<"reduce_scatter_start"> {
  let summary = "Starts reducing buffers across ranks, each keeping a shard";
  let description = [{
    Rank r's `output` becomes shard r (in element order) of the
    `reduction` of all ranks' `input`s.

    ```mlir
    %t = sched.reduce_scatter_start "sum" %full -> %shard
        : !sched.buffer<1024xf32> -> !sched.buffer<256xf32>
    sched.reduce_scatter_done %t
    ```

    Constraints: `reduction` is `sum`, `mean`, `max` or `min`; `input` and
    `output` have one element type and `input`'s element count is a
    multiple of `output`'s (reduce_scatter_start_c1); the token is used
    exactly once, by a `sched.reduce_scatter_done` (token_c1).
  }];
  let arguments = (ins StrAttr:$reduction, Sched_Buffer:$input,
                       Sched_Buffer:$output);
  let assemblyFormat = [{
    $reduction $input `->` $output attr-dict `:` qualified(type($input)) `->`
    qualified(type($output))
  }];
}

def Sched_ReduceScatterDoneOp
    : Sched_DoneOp<"reduce_scatter_done", "ReduceScatterStartOp"> {
  let summary = "Waits for a reduce-scatter";
  let description = [{
    Constraints: the token comes from a `sched.reduce_scatter_start`
    (done_c1).
  }];
}

def Sched_BroadcastStartOp : Sched_StartOp<"broadcast_start"> {
  let summary = "Starts copying one rank's buffer to every rank";
  let description = [{
    Every rank's `buffer` becomes rank `root`'s.

    ```mlir
    %t = sched.broadcast_start %w root 0 : !sched.buffer<4x4xf32>
    sched.broadcast_done %t
    ```

    Constraints: `root` >= 0 (broadcast_start_c1); the token is used
    exactly once, by a `sched.broadcast_done` (token_c1).
  }];
  let arguments = (ins Sched_Buffer:$buffer, I64Attr:$root);
  let assemblyFormat = "$buffer `root` $root attr-dict `:` qualified(type($buffer))";
}

def Sched_BroadcastDoneOp
    : Sched_DoneOp<"broadcast_done", "BroadcastStartOp"> {
  let summary = "Waits for a broadcast";
  let description = [{
    Constraints: the token comes from a `sched.broadcast_start` (done_c1).
  }];
}

#endif // SINTER_DIALECTS_SCHEDULE_SCHEDULEOPS_TD
