//===- Abi.h - the facts the compiler and the runtime share ---------------===//
//
// The one definition of every fact of the binary interface between what
// sinterc writes and what the training binary runs. The enumerations (slabs,
// element types, buffer categories, argument, result and step kinds) and
// the step program's schema are in StepProgram.proto; this header adds what
// an enumeration cannot say:
//
//   - the size of each element type, and the buffer alignment;
//   - the names the dumps and the IR give the enumerations' values (the
//     proto's own value names, so there is no second table);
//   - the symbols of the object file: each program's serialized bytes, its
//     size and its kernel table, the kernel-symbol prefix of each program,
//     and the default data folder.
//
// The kernels' C signature is in KernelAbi.h. A test
// (test/abi/one-definition.test) checks that no other source file defines
// these facts again.
//
// Plain C++17 over the generated header; part of the ABI both compiler/ and
// runtime/ include.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_ABI_ABI_H
#define SINTER_ABI_ABI_H

#include "abi/StepProgram.pb.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace sinter::abi {

using SlabKind = Slab::Kind;
using DType = ElementType::Kind;
using CategoryKind = Category::Kind;
using ArgumentKind = Argument::Kind;
using ResultKind = Result::Kind;
/// A step's kind is the field number of the op it holds.
using StepKind = Step::OpCase;

/// The format version of StepProgram.version this compiler writes and this
/// runtime reads.
inline constexpr int64_t kStepProgramVersion = 2;

/// The number of slabs; kernels receive one descriptor per slab, in
/// Slab::Kind order.
inline constexpr int kNumSlabs = Slab::Kind_ARRAYSIZE;

/// The number of buffer categories (reports count bytes by category).
inline constexpr int kNumCategories = Category::Kind_ARRAYSIZE;

/// Every buffer's offset in its slab is a multiple of this, except a view
/// inside another buffer; slabs are allocated at least this aligned.
inline constexpr int64_t kBufferAlignment = 64;

/// Bytes of one element (i1 takes a byte).
constexpr int64_t elementBytes(DType type) {
  switch (type) {
  case ElementType::f64:
  case ElementType::i64:
    return 8;
  case ElementType::f32:
  case ElementType::i32:
    return 4;
  case ElementType::f16:
  case ElementType::bf16:
    return 2;
  case ElementType::i8:
  case ElementType::i1:
    return 1;
  default:
    return 0;
  }
}
constexpr bool isFloat(DType type) {
  return type == ElementType::f32 || type == ElementType::f64 ||
         type == ElementType::f16 || type == ElementType::bf16;
}

/// The names the IR and the dumps use: "arena", "f32", "activations",
/// "param", "metric".
std::string_view slabName(SlabKind slab);
std::string_view dtypeName(DType type);
std::string_view categoryName(CategoryKind category);
std::string_view argumentKindName(ArgumentKind kind);
std::string_view resultKindName(ResultKind kind);
/// "kernel", "matmul", "copy".
std::string_view stepKindName(StepKind kind);
/// "none", "relu", "gelu_erf", "gelu_tanh".
std::string_view activationName(MatmulStep::Activation activation);
/// "full", "out_lower", "lhs_lower", ...
std::string_view triangleName(MatmulStep::Triangle triangle);
std::optional<SlabKind> parseSlab(std::string_view name);
std::optional<DType> parseDType(std::string_view name);
std::optional<CategoryKind> parseCategory(std::string_view name);
std::optional<ArgumentKind> parseArgumentKind(std::string_view name);
std::optional<ResultKind> parseResultKind(std::string_view name);
std::optional<MatmulStep::Activation> parseActivation(std::string_view name);
std::optional<MatmulStep::Triangle> parseTriangle(std::string_view name);

// The object's symbols, spelled once: the runtime declares them with these
// identifiers (runtime/Main/StepMain.cpp), the compiler defines them by the
// strings below.
#define SINTER_ABI_STEP_PROGRAM sinter_program
#define SINTER_ABI_STEP_PROGRAM_SIZE sinter_program_size
#define SINTER_ABI_STEP_KERNELS sinter_kernels
#define SINTER_ABI_EVAL_PROGRAM sinter_eval_program
#define SINTER_ABI_EVAL_PROGRAM_SIZE sinter_eval_program_size
#define SINTER_ABI_EVAL_KERNELS sinter_eval_kernels
#define SINTER_ABI_ACCUMULATE_PROGRAM sinter_accumulate_program
#define SINTER_ABI_ACCUMULATE_PROGRAM_SIZE sinter_accumulate_program_size
#define SINTER_ABI_ACCUMULATE_KERNELS sinter_accumulate_kernels
#define SINTER_ABI_DEFAULT_DATA sinter_default_data
// The CUDA target's: the serialized CudaModule and its bytes (absent in a
// CPU binary).
#define SINTER_ABI_CUDA_MODULE sinter_cuda_module
#define SINTER_ABI_CUDA_MODULE_SIZE sinter_cuda_module_size
#define SINTER_ABI_NAME(symbol) SINTER_ABI_NAME_(symbol)
#define SINTER_ABI_NAME_(symbol) #symbol

/// What one program of the object file is called there.
struct ProgramSymbols {
  /// The role of the program in the sched dialect (`sched.program`'s
  /// `role`).
  std::string_view role;
  /// `extern "C" const unsigned char program[]`: the serialized
  /// StepProgram; `extern "C" const uint64_t programSize`: its bytes.
  std::string_view program, programSize;
  /// `extern "C" const SinterKernelFn kernels[]`: the program's kernels.
  std::string_view kernels;
  /// Every kernel function of the program is named `<kernelPrefix><name>`.
  std::string_view kernelPrefix;
};
/// The training step (or whatever function was compiled).
inline constexpr ProgramSymbols kStepProgram{
    "step", SINTER_ABI_NAME(SINTER_ABI_STEP_PROGRAM),
    SINTER_ABI_NAME(SINTER_ABI_STEP_PROGRAM_SIZE),
    SINTER_ABI_NAME(SINTER_ABI_STEP_KERNELS), "sinter_"};
/// The evaluation step; the object may lack it.
inline constexpr ProgramSymbols kEvalProgram{
    "eval", SINTER_ABI_NAME(SINTER_ABI_EVAL_PROGRAM),
    SINTER_ABI_NAME(SINTER_ABI_EVAL_PROGRAM_SIZE),
    SINTER_ABI_NAME(SINTER_ABI_EVAL_KERNELS), "sinter_eval_"};
/// With gradient accumulation, a micro-batch before a step's last; the
/// object may lack it.
inline constexpr ProgramSymbols kAccumulateProgram{
    "accumulate", SINTER_ABI_NAME(SINTER_ABI_ACCUMULATE_PROGRAM),
    SINTER_ABI_NAME(SINTER_ABI_ACCUMULATE_PROGRAM_SIZE),
    SINTER_ABI_NAME(SINTER_ABI_ACCUMULATE_KERNELS), "sinter_acc_"};
inline constexpr const ProgramSymbols *kPrograms[] = {
    &kStepProgram, &kEvalProgram, &kAccumulateProgram};
/// The symbols of a role ("step", "eval", "accumulate"); null for an
/// unknown one.
const ProgramSymbols *programSymbols(std::string_view role);

/// The hyper argument of a training step with gradient accumulation: the
/// micro-batches per step, K (the step divides the summed gradients by it;
/// the trainer sets it for --grad-accum).
inline constexpr std::string_view kGradAccumulationHyper =
    "grad_accumulation_steps";

/// The hyper argument of a training step with loss scaling
/// (docs/MixedPrecision.md): the scale the backward pass starts from; the
/// trainer moves it as StepProgram.loss_scaling says.
inline constexpr std::string_view kLossScaleHyper = "loss_scale";

/// The hyper argument of a training step whose loss is a mean
/// cross-entropy (docs/Distributed.md, "Semantics"): the positions not
/// ignored in the whole step, over every rank and micro-batch, divided by
/// their number; each micro-batch's loss divides its sum by it instead of
/// its own count. 0 (the default): its own count.
inline constexpr std::string_view kLossCountHyper = "loss_count";

/// The largest learning rate, momentum, epsilon, weight decay or gradient
/// clip a model file may give, and the largest --lr the binary takes: one
/// range for both, so that a flag cannot ask for what the model file may
/// not.
inline constexpr double kMaxHyperparameter = 1e9;
/// The most micro-batches a step may have (grad_accumulation_steps,
/// --grad-accum).
inline constexpr int64_t kMaxGradAccumulationSteps = int64_t(1) << 20;

/// The optimizer-state scalar (f32) of a loss-scaled training step: the
/// optimizer's own step count, which skipped steps do not advance.
inline constexpr std::string_view kOptimizerStepState = "optimizer.step";

/// `extern "C" const char sinter_default_data[]`: the absolute data folder
/// the binary reads when given none, or "".
inline constexpr std::string_view kDefaultDataSymbol =
    SINTER_ABI_NAME(SINTER_ABI_DEFAULT_DATA);

/// A binary's step trace (`train --trace`, runtime/Exec/StepTrace.h, read
/// by `sinterc --bisect`, compiler/Interpreter/Bisect.h): a .safetensors
/// file whose metadata hold kTraceMarker = "1", kTraceFunction and
/// kTraceSteps (the program's step count), and kTraceStepPrefix + K (what
/// step K computes); its tensors are the arguments by name, each step's
/// writes under traceWriteName, and the program the binary ran, serialized
/// (a StepProgram message, abi/StepProgram.proto), as the U8 tensor
/// kTraceProgram. Names the trace gives its own start with '@'; no
/// argument's does.
inline constexpr std::string_view kTraceMarker = "sinter.trace";
inline constexpr std::string_view kTraceFunction = "function";
inline constexpr std::string_view kTraceSteps = "steps";
inline constexpr std::string_view kTraceStepPrefix = "step/";
inline constexpr std::string_view kTraceProgram = "@program";
/// "@step/K/J": write J of step K, in StepProgram::stepBuffers' order.
std::string traceWriteName(int64_t step, int64_t write);
/// Whether `name` is a write's (not an argument's).
bool isTraceWriteName(std::string_view name);
/// Whether `name` is an argument's (not one the trace gives its own).
bool isTraceArgumentName(std::string_view name);

} // namespace sinter::abi

#endif // SINTER_ABI_ABI_H
