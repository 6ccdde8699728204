//===- Passes.td - Sinter's target-independent passes ---------------------===//

#ifndef SINTER_PASSES_PASSES_TD
#define SINTER_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def AutodiffPass : Pass<"sinter-autodiff", "mlir::ModuleOp"> {
  let summary = "Builds the training step (or the gradients) of @forward";
  let description = [{
    Reverse-mode differentiation of `@forward(params..., inputs...[, step])
    -> (loss, metrics...)` with respect to its trainable parameters (arguments
    with `sgraph.param` and no `sgraph.frozen`). Each op's gradient comes from
    its `GradientOpInterface` rule; gradients of values used several times
    are summed; only ops on a path from a trainable parameter to the loss get
    backward work; `stop_gradient`, integer values and frozen parameters cut
    the backward graph; a tied parameter (one argument used twice) gets one
    summed gradient.

    With `mode=train-step` (the default) the module's `sgraph.training`
    configuration becomes ops in the same function:

    ```mlir
    func.func @train_step(%params..., %opt_state..., %inputs..., %step: tensor<i64>)
        -> (loss, metrics..., lr, grad_norm, params'..., opt_state'...)
    ```

    with global-norm clipping, the learning-rate schedule at `step` and one
    `sgd_update` / `momentum_update` / `adam_update` per trainable
    parameter. With `mode=gradients` it builds `@forward_grad(args of
    @forward) -> (loss, metrics..., gradients...)` instead, which the
    finite-difference checks use.

    With `runtime-lr`, `@train_step` takes one more, last argument: the
    peak learning rate as a 0-d f64 tensor, `{sgraph.hyper = "lr",
    sgraph.default = <training lr>}`, which the schedule reads
    (`lr_schedule`'s `peak_lr`), so a trainer can change it without
    recompiling.

    With `grad_accumulation_steps` K > 1 in the configuration,
    `@train_step` also takes an accumulator per trained parameter (after
    the parameters) and `grad_accumulation_steps` (a hyper argument, last),
    and steps with (accumulator + gradient) / K; and
    `@accumulate_step(params..., accumulators..., inputs...) -> (loss,
    metrics..., accumulators'...)` adds each gradient to its accumulator.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"train-step\"",
           "What to build: train-step or gradients">,
    Option<"runtimeLr", "runtime-lr", "bool", /*default=*/"false",
           "Give @train_step an `lr` argument (kind hyper) for the peak "
           "learning rate">,
  ];
  let dependentDialects = ["sinter::sgraph::SGraphDialect",
                           "mlir::func::FuncDialect"];
}

def MixedPrecisionPass : Pass<"sinter-mixed-precision", "mlir::ModuleOp"> {
  let summary = "Runs @forward's matmuls in bf16 or f16";
  let description = [{
    With `training.precision` bf16_mixed (fp16_mixed), every f32 matmul of
    `@forward` reads its operands cast to bf16 (f16) and its half result is
    cast back to f32; everything else stays f32. Runs before autodiff, so
    the backward matmuls follow (docs/MixedPrecision.md):

    ```mlir
    %a16 = sgraph.cast %a : tensor<8x64xf32> to tensor<8x64xbf16>
    %w16 = sgraph.cast %w : tensor<64x64xf32> to tensor<64x64xbf16>
    %y16 = sgraph.matmul %a16, %w16 : (...xbf16, ...xbf16) -> tensor<8x64xbf16>
    %y = sgraph.cast %y16 : tensor<8x64xbf16> to tensor<8x64xf32>
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"\"",
           "fp32, bf16_mixed or fp16_mixed; empty: the module's "
           "training.precision">,
    Option<"geluEpilogues", "gelu-epilogues", "bool", /*default=*/"false",
           "A linear layer whose one reader is a tanh GELU rounds after "
           "the GELU, not before: the GELU reads the f32 sum and its "
           "gradient the sum rounded to half, as cuBLASLt's GELU_AUX and "
           "DGELU epilogues compute under bf16 (the CUDA target)">,
  ];
  let dependentDialects = ["sinter::sgraph::SGraphDialect"];
}

def BuildEvalStepPass : Pass<"sinter-build-eval-step", "mlir::ModuleOp"> {
  let summary = "Builds @eval_step: @forward in eval mode";
  let description = [{
    Clones `@forward(params..., inputs...[, step]) -> (loss, metrics...)` as
    `@eval_step`, replaces every `dropout` by its operand and drops the step
    argument when nothing reads it any more:

    ```mlir
    func.func @eval_step(%params..., %inputs...) -> (loss, metrics...)
    ```

    Argument and result attributes are kept, so parameters go by the same
    `state_dict` names as in `@train_step`. The binary runs it as its
    evaluation program (held-out loss and metrics, nothing updated).
  }];
  let dependentDialects = ["sinter::sgraph::SGraphDialect",
                           "mlir::func::FuncDialect"];
}

def EraseStopGradientPass : Pass<"sinter-erase-stop-gradient",
                                 "mlir::ModuleOp"> {
  let summary = "Replaces every stop_gradient by its operand";
  let description = [{
    `stop_gradient` only matters to autodiff; once the backward graph exists
    it is an identity, and later phases must not see it (the training-phase
    contract forbids it). A `train_eval` the training phase left (in
    @forward) becomes its train value.
  }];
}

def VerifyTrainingGraphPass : Pass<"sinter-verify-training-graph",
                                   "mlir::ModuleOp"> {
  let summary = "Checks the contract of the training phase";
  let description = [{
    `@train_step` exists with a step argument; every trainable parameter is
    updated by exactly one optimizer op whose gradient operand is a single
    value and whose new value is returned under the parameter's name; every
    optimizer-state argument feeds exactly one update and its new value is
    returned; frozen parameters are never updated; no `stop_gradient` is
    left; `@eval_step`, if present, has no dropout and no update and takes
    only parameters and inputs. Fails with a diagnostic at the offending
    argument or op.
  }];
}

def DecomposeOpsPass : Pass<"sinter-decompose-ops", "mlir::ModuleOp"> {
  let summary = "Rewrites composite ops into elementwise ops and reductions";
  let description = [{
    Expands `reduce_mean`, `softmax`, `log_softmax`, `layer_norm`,
    `softmax_cross_entropy` and `global_norm` into elementwise ops,
    `reduce_sum` / `reduce_max` and data movement: the only ops fusion and
    code generation handle. Each new op keeps the location of the op it
    replaces; f16 and bf16 expansions compute in f32. Results match the
    composite ops up to rounding, except that an out-of-range label of
    `softmax_cross_entropy` gives a finite value instead of a runtime error.
    Runs after the training phase, before fusion.
  }];
  let dependentDialects = ["sinter::sgraph::SGraphDialect"];
}

def AlignMatmulsPass : Pass<"sinter-align-matmuls", "mlir::ModuleOp"> {
  let summary = "Pads misaligned matmul dimensions with zeros";
  let description = [{
    For each `sgraph.matmul`, pads a dimension whose rows' bytes are not a
    multiple of `align-bytes` (and that is at least `min-size`) with zeros
    up to the next aligned size: M (when the lhs is read transposed), K in
    both operands, N in the rhs; M and N are sliced off the result. The
    results are the same numbers (K's extra products are zeros); the pads
    fuse into the operands' producers, the slices into the result's
    readers. The CUDA target runs it (cuBLASLt's fast kernels need 16-byte
    strides: GPT-2's 50257-word vocabulary runs 4-6x slower unpadded).
  }];
  let options = [
    Option<"alignBytes", "align-bytes", "int64_t", /*default=*/"16",
           "The byte multiple each padded dimension's rows get">,
    Option<"minSize", "min-size", "int64_t", /*default=*/"64",
           "Dimensions smaller than this stay as they are">,
  ];
  let dependentDialects = ["sinter::sgraph::SGraphDialect"];
}

def CausalMatmulsPass : Pass<"sinter-causal-matmuls", "mlir::ModuleOp"> {
  let summary = "Marks the triangles causal attention's matmuls may skip";
  let description = [{
    Sets `sinter.triangle` on each `sgraph.matmul` whose op(lhs) or op(rhs)
    is provably 0 on one side of its diagonal (`lhs_lower`, `lhs_upper`,
    `rhs_lower`, `rhs_upper`: the causal softmax's probabilities and their
    gradient), or whose result is read only on and below it (`out_lower`:
    the scores, the probabilities' gradient). The matmul lowers to a
    `sched.matmul` with that `triangle`, and the CPU executor computes it
    in blocks along the diagonal, skipping the products that are 0 or never
    read (docs/StepProgram.md, "Causal matmuls"). The proof is over the
    two trailing axes of square matrices, from `sgraph.causal_mask`
    selects through elementwise ops.
  }];
  let dependentDialects = ["sinter::sgraph::SGraphDialect"];
}

def CausalKernelInputsPass : Pass<"sinter-causal-kernel-inputs",
                                  "mlir::ModuleOp"> {
  let summary = "Marks kernel inputs that are 0 above a causal diagonal";
  let description = [{
    Sets `sinter.causal_zeros` (the operand indices) on each loop or
    reduction `sgraph.fusion` whose operand is provably 0 strictly above
    the diagonal of its two trailing axes: the causal softmax's
    probabilities, read by the softmax's gradient. The proof is
    sinter-causal-matmuls' (passes/CausalProver.h), across regions. The
    attribute goes with the region to its `sched.kernel`; a row kernel
    that computes only up to each row's diagonal (docs/CodeGen.md, "Causal
    rows") takes such an input as 0 past it, unread.
  }];
  let dependentDialects = ["sinter::sgraph::SGraphDialect"];
}

def FuseKernelsPass : Pass<"sinter-fuse-kernels", "mlir::ModuleOp"> {
  let summary = "Groups each function's ops into kernel regions";
  let description = [{
    Wraps the ops of every function in `sgraph.fusion` regions, one per
    kernel code generation will emit: chains of elementwise ops with numpy
    broadcasting (pads included), reductions with their elementwise
    producers, and special kernels (concat, embedding_grad, argmax).
    Matmuls are library calls, alone or in a `matmul` region with the
    epilogue (scale, bias, activation) the library applies; reshapes are
    aliases. Views (transpose, broadcast, slice) are absorbed into the
    kernels that read them. Every op records why it
    is, or is not, fused in a `sinter.fusion` attribute. How big a chunk
    of rows a row-phased kernel works on, what it may keep on the stack and
    which epilogues the matmul library applies are the target's
    (compiler/CodeGen/Target.h); the defaults are the CPU's. A kernel
    reads at most `max-kernel-inputs` values from outside: the sum of a
    deep model's per-parameter squared norms continues in a new kernel
    rather than taking one argument per parameter.
    Precondition: `sinter-decompose-ops` has run.
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
    ListOption<"matmulEpilogues", "matmul-epilogues", "std::string",
               "What the matmul library applies in the same call: scale, "
               "bias, activation (every one), or of the activations only "
               "relu, gelu_tanh, gelu_erf (default: all); and, only when "
               "named, the training forms of the tanh GELU: gelu_aux (its "
               "input written too), dgelu (gelu_grad of a product), "
               "dgelu_bgrad (with its bias gradient)">,
    Option<"matmulLibrary", "matmul-library", "std::string",
           /*default=*/"\"oneDNN\"",
           "The matmul library's name, for the fusion report">,
    Option<"maxKernelInputs", "max-kernel-inputs", "int64_t",
           /*default=*/"256",
           "Values a kernel reads from outside at most (each is an "
           "argument of its code)">,
    Option<"memoryBound", "memory-bound", "bool",
           /*default=*/"false",
           "The target's kernels are bound by memory (a GPU): recompute "
           "another kernel's chain with an exp or a division (a softmax's "
           "f32 probabilities) where that reads fewer bytes than its "
           "result, and join a kernel that reads the big values before "
           "one that reads nothing of its size">,
  ];
  let dependentDialects = ["sinter::sgraph::SGraphDialect"];
}

def RecomputePass : Pass<"sinter-recompute", "mlir::ModuleOp"> {
  let summary = "Recomputes activations in the backward pass instead of "
                "keeping them";
  let description = [{
    Makes the backward pass of the entry function recompute forward values
    right before it first reads them, from values kept anyway, so that the
    originals die after their last forward use. It clones whole kernels
    (fusion regions, matmul calls), so the copies compile to the same code
    and results stay bitwise identical. What is recomputed:

    * every layer instance listed in the module's `sinter.recompute_layers`
      (layers with `recompute: true`): its values, from the instance's
      inputs; its output stays. An instance's kernels are those whose ops
      are located in it;
    * with a budget (`budget=`, else the model's `training.recompute`
      budget), what the arena needs to fit, cheapest FLOPs per byte first
      (passes/Analysis/RecomputeSelection.h), each round measured with the
      real planner on a copy of the step. If nothing fits, it fails with
      the smallest arena reached and what dominates its peak.

    A copy carries `sinter.recomputed = "r<k>: <why>"`; a region is renamed:

    ```mlir
    %c = sgraph.fusion "k19_r3" kind = "loop"(%h)
        {sinter.recomputed = "r3: annotated layer 'h.0'"}
        : (tensor<8x64xf32>) -> tensor<8x64xf32> { ... }
    ```

    The function gets `sinter.recompute_plan` (arena before and after, the
    budget, values, kernels and FLOPs recomputed); `report=` writes every
    recomputed value with its reason and cost and the memory plans before
    and after. Without annotations or a budget the pass does nothing.
    Place: after sinter-fuse-kernels, before sinter-plan-memory.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"train_step\"",
           "The function to transform">,
    Option<"budget", "budget", "std::string", /*default=*/"\"\"",
           "Arena budget: bytes (2GiB, 1500MB, 123456) or a fraction of the "
           "arena without recompute (0.5, 50%); none: no budget; empty: the "
           "model's training.recompute budget, if any">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write the recompute report to this file">,
  ];
  let dependentDialects = ["sinter::sgraph::SGraphDialect"];
}

def BucketGradientsPass : Pass<"sinter-bucket-gradients", "mlir::ModuleOp"> {
  let summary = "Merges the gradient all-reduces into a few large buckets";
  let description = [{
    Every gradient of a training step has its own `sgraph.all_reduce`; one
    collective per tensor would pay Gloo's (or NCCL's) per-call cost
    hundreds of times. This pass merges them into buckets, as PyTorch DDP
    does: gradients in the order the backward pass finishes them (the op
    that writes each one), a first bucket of `first-bucket-bytes` so that
    communication starts early, then buckets of `bucket-bytes`; one element
    type and one reduction per bucket. Each bucket is one variadic
    `sgraph.all_reduce`, placed right after the op that writes its last
    gradient, and records what it holds. With `last-bucket-bytes`, the
    gradients finished last (up to that many bytes) form a last bucket of
    their own: only it waits for the end of the backward pass, and the
    bucket before it overlaps the pass's last kernels:

    ```mlir
    %a, %b = sgraph.all_reduce %ga, %gb {reduction = "mean", sinter.bucket =
        "bucket 0: 2 gradients, 1,050,624 bytes, ready after k71"} : ...
    ```

    sinter-assign-buffers lays each bucket's gradients side by side in the
    arena, so the kernels write them in place and the collective needs no
    copies. The order of the buckets is the program's, so it is the same on
    every rank. `bucket-bytes=0` makes every gradient a bucket of its own.
    Place: right after sinter-fuse-kernels, before sinter-schedule-kernels.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t",
           /*default=*/"25 << 20",
           "Close a bucket once it holds this many bytes (0: one per gradient)">,
    Option<"firstBucketBytes", "first-bucket-bytes", "int64_t",
           /*default=*/"1 << 20",
           "The first bucket's size, so that the first collective starts "
           "early in the backward pass">,
    Option<"lastBucketBytes", "last-bucket-bytes", "int64_t",
           /*default=*/"0",
           "The gradients finished last, up to this many bytes, are the "
           "last bucket of their own, so that the bucket before them "
           "overlaps the end of the backward pass (0: no such bucket)">,
  ];
  let dependentDialects = ["sinter::sgraph::SGraphDialect"];
}

def ScheduleKernelsPass : Pass<"sinter-schedule-kernels", "mlir::ModuleOp"> {
  let summary = "Chooses the order a fused step's kernels run in";
  let description = [{
    Reorders the kernels and library calls of every fused function (their op
    order is the schedule). A kernel that reads a tensor of
    `big-operand-bytes` or more into results of at most
    `small-result-bytes` (a gradient's sum of squares, a bias gradient's
    final sum) moves up to right after the last op it reads from, so that
    it reads the tensor while it is in cache; the move is recorded in its
    `sinter.fusion`:

    ```mlir
    %n = sgraph.fusion "k12" kind = "reduction"(%g) {sinter.fusion =
        "scheduled right after k11: reads its big operand while it is in
        cache, into small results"} : ...
    ```

    After the last all-reduce, the ops run in the order the collectives
    they wait for were started, so that the readers of the first buckets
    overlap the all-reduces of the last ("scheduled among the readers of
    bucket N"). The sizes come from the target. Place: right after
    sinter-fuse-kernels, before sinter-recompute.
  }];
  let options = [
    Option<"smallResultBytes", "small-result-bytes", "int64_t",
           /*default=*/"64 << 10",
           "A kernel whose results take at most this many bytes is small">,
    Option<"bigOperandBytes", "big-operand-bytes", "int64_t",
           /*default=*/"256 << 10",
           "A small kernel reading an input of this many bytes or more runs "
           "right after the input is written">,
  ];
}

def VerifyOptimizedPass : Pass<"sinter-verify-optimized", "mlir::ModuleOp"> {
  let summary = "Checks the contract of the optimized phase";
  let description = [{
    Every op of the entry function is a kernel region (`sgraph.fusion` of
    kind loop, reduction, special or matmul), a matmul library call, a
    reshape, a constant or the return: the forms sinter-assign-buffers
    turns into a scheduled program. No region nests another, a matmul region
    holds one matmul, and no composite op (softmax, layer_norm, ...) is
    left. Fails with a diagnostic at the offending op. Closes the optimized
    phase.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"train_step\"",
           "The function to check">,
  ];
}

def AssignBuffersPass : Pass<"sinter-assign-buffers", "mlir::ModuleOp"> {
  let summary = "Replaces the fused entry function by its scheduled program";
  let description = [{
    Plans every tensor of the entry function (arguments in the parameter,
    optimizer-state and io slabs; constants in the constants slab; kernel
    and matmul results in one arena, reused by liveness:
    passes/Analysis/MemoryPlanner.h; new state written in place when safe)
    and replaces the function by a `sched.program` of the same name: slabs,
    a typed view per buffer at its offset, the arguments and results, and
    the function's ops in order as kernel launches (each region moved into a
    `sched.kernel`), matmul library calls with their epilogues and copies:

    ```mlir
    sched.kernel @k3(%a: tensor<8x64xf32>) -> tensor<8x64xf32>
        attributes {kind = "loop"} { ... }
    sched.program @train_step attributes {role = "step", seed = 1337 : i64} {
      %arena = sched.slab "arena" size 1048576 : !sched.slab
      %v = sched.view %arena[0] {category = "activations"}
          : !sched.buffer<8x64xf32>
      ...
      sched.launch @k3(%x : !sched.buffer<8x64xf32>)
          -> (%v : !sched.buffer<8x64xf32>)
    }
    ```

    `report=` writes the planner's report (slabs, arena peak by category,
    the saving from reuse, the largest buffers). Precondition: a fused,
    scheduled entry function (sinter-verify-optimized holds).
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"train_step\"",
           "The function to schedule">,
    Option<"role", "role", "std::string", /*default=*/"\"step\"",
           "The program's role: step, or eval for the evaluation program">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write the human-readable memory report to this file">,
    Option<"noReuse", "no-reuse", "bool", /*default=*/"false",
           "Give every arena value bytes of its own (for bisecting)">,
    Option<"matmulWorkspaceBytes", "matmul-workspace-bytes", "int64_t",
           /*default=*/"0",
           "Scratch bytes each matmul library call gets in the arena, live "
           "at its step only (the CUDA target's cuBLASLt workspace)">,
  ];
  let dependentDialects = ["sinter::sched::ScheduleDialect"];
}

def VerifySchedulePass : Pass<"sinter-verify-schedule", "mlir::ModuleOp"> {
  let summary = "Checks the contract of the scheduled phase";
  let description = [{
    The entry's `sched.program` exists and no function of that name is left;
    every `sched.kernel` is launched; and, independently of the dialect's
    own verifier, the planner's checker (passes/Analysis/MemoryPlanner.h,
    verifyPlan) finds no two arena buffers live at the same step sharing a
    byte, every offset aligned and every buffer inside the arena. A plan
    that failed here would make the compiled step silently compute garbage,
    so this runs in every compilation. Closes the scheduled phase.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"train_step\"",
           "The program to check">,
  ];
}

#endif // SINTER_PASSES_PASSES_TD
