//===- StepProgram.h - the step program as plain structs ------------------===//
//
// The step program sinterc embeds in its object file (docs/StepProgram.md,
// schema abi/StepProgram.proto), read once into plain structs.
// Reading validates everything the executor will rely on, so that running a
// program can never read or write outside a slab:
//
//   - every id (buffer, kernel) is in range, every enum value one of the
//     schema's;
//   - offset + bytes fit the slab; offsets are 64-aligned, except for views
//     (a buffer with `view_of` lies inside the bytes of that buffer);
//   - bytes = product(shape) x element size, overflow-checked;
//   - matmul operands are f32 and their shapes agree (analyzeMatmul), and
//     out does not overlap an input; copies move equal byte counts;
//   - arguments and results have unique names, the step argument is an i64
//     scalar, a hyper argument an f32/f64 scalar with a finite default,
//     metrics are scalars, and each param/opt_state result has an
//     argument of the same name, kind, dtype and shape (the state contract);
//   - constants are constants-slab buffers with exactly their bytes;
//   - each collective works on an f32 or f64 arena buffer, starts exactly
//     once and is done exactly once after its start, and none is in flight
//     at the end; no matmul or copy between a start and its done touches
//     its bytes (kernels carry their offsets in code: the compiler's
//     sched verifier proves those).
//
// Every error is one line naming the place: "step 4 (matmul): ...",
// "buffer 3 'wte': ...". Malformed input never crashes.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_EXEC_STEPPROGRAM_H
#define SINTER_RUNTIME_EXEC_STEPPROGRAM_H

#include "abi/Abi.h"
#include "abi/KernelAbi.h"
#include "runtime/Exec/Matmul.h"
#include "runtime/Formats/HostTensor.h"

#include "absl/status/statusor.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sinter::exec {

/// The safetensors dtype used when a buffer is read or written by name.
formats::DType toDType(abi::DType type);

struct Buffer {
  int64_t id = 0;
  std::string name; // may be empty
  abi::SlabKind slab = abi::Slab::arena;
  int64_t offset = 0; // bytes into the slab
  abi::DType type = abi::ElementType::f32;
  std::vector<int64_t> shape;
  std::string category; // for reports; may be empty
  int64_t bytes = 0;    // product(shape) x element size
  int64_t numElements = 0;
};

/// A parameter initializer (the sgraph.init attribute).
struct Initializer {
  using Dist = abi::Initializer::Dist;
  Dist dist = abi::Initializer::constant;
  double value = 0; // std, bound or value
};

struct Argument {
  std::string name;
  abi::ArgumentKind kind = abi::Argument::input;
  int64_t buffer = 0;
  std::optional<Initializer> init; // params only
  /// Params only: other names of a tied parameter ("lm_head.weight");
  /// findArgument matches them too.
  std::vector<std::string> aliases;
  /// Integer inputs only: every value must lie in [0, bound) (the rows of
  /// the embedding tables the input indexes, the classes of the
  /// cross-entropies it labels: the smallest), when the compiler knows one.
  std::optional<int64_t> bound;
  /// With a bound: one more value the input may hold (a cross-entropy's
  /// ignore_index), inside [0, bound) or not.
  std::optional<int64_t> ignore;
  /// Hyper only (and always there): the value the compiler built the step
  /// with, which the executor sets at creation (e.g. the peak lr).
  std::optional<double> defaultValue;
};

struct Result {
  std::string name;
  abi::ResultKind kind = abi::Result::tensor;
  int64_t buffer = 0;
  /// Metrics only: a fraction of the labels the input of this name holds
  /// (accuracy), where `ignore` does not count; empty otherwise.
  std::string labels;
  int64_t ignore = 0;
};

struct Constant {
  int64_t buffer = 0;
  std::vector<uint8_t> bytes; // decoded from hex, exactly the buffer's bytes
};

struct Kernel {
  std::string name;
  std::string symbol; // the object's symbol, for messages (optional)
  int64_t extent = 1; // >= 1
  int64_t bytes = 0;  // bytes moved per call, for GB/s in profiles (optional)
  std::vector<int64_t> args; // the words its function reads (abi/KernelAbi.h)
  /// CUDA: threads per block (extent is then the grid's blocks); 0 for a
  /// CPU kernel.
  int64_t cudaBlock = 0;
};

struct MatmulStep {
  int64_t lhs = 0, rhs = 0, out = 0;
  int64_t bias = -1;      // -1: none
  int64_t workspace = -1; // the library's scratch (i8, arena); -1: none
  /// out's shape and type: written with gelu_tanh (the activation's
  /// input), read with dgelu_tanh; -1: none.
  int64_t aux = -1;
  int64_t biasGrad = -1; // [N], written with dgelu_tanh; -1: none
  bool transposeLhs = false, transposeRhs = false;
  double alpha = 1.0;
  Activation activation = abi::MatmulStep::none;
  /// A triangle the product may skip (abi::MatmulStep.triangle).
  abi::MatmulStep::Triangle triangle = abi::MatmulStep::full;
};

/// A collective of data parallelism (abi::Collective): an all-reduce of
/// one bucket, in place.
struct Collective {
  abi::Collective::Op op = abi::Collective::all_reduce;
  abi::Collective::Reduction reduction = abi::Collective::sum;
  int64_t buffer = 0;               // an f32 or f64 arena buffer
  std::string name;                 // "bucket 2"
  std::vector<std::string> tensors; // the gradients it holds, in order
  /// bf16 or f16: what an f32 bucket travels as between ranks.
  std::optional<abi::DType> commType;
};

/// abi::Origin: an op a step computes and its layer's place in the model.
struct Origin {
  std::string op, layer, file;
  int64_t line = 0, column = 0;
};

struct Step {
  abi::StepKind kind = abi::Step::kKernel;
  int64_t kernel = 0;       // Kernel
  MatmulStep matmul;        // Matmul
  int64_t src = 0, dst = 0; // Copy
  int64_t collective = 0;   // Start, Done
  /// Kernel: the buffers it reads and writes (empty in programs compiled
  /// before they were recorded).
  std::vector<int64_t> inputs, outputs;
  std::vector<Origin> origins;
  /// Kernel: a merged launch's members (abi::KernelMember), each with its
  /// buffers and how many of `origins`, in order, are its own; empty for
  /// a launch of one kernel.
  struct Member {
    std::vector<int64_t> inputs, outputs;
    int64_t origins = 0;
  };
  std::vector<Member> members;
};


/// abi::LossScaling: how the trainer moves the loss_scale argument.
struct LossScaling {
  bool dynamic = false;
  double initScale = 65536, growthFactor = 2, backoffFactor = 0.5;
  int64_t growthInterval = 2000, maxConsecutiveOverflows = 20;
};

struct StepProgram {
  int64_t version = 1;
  std::string function;
  uint64_t seed = 0; // the program's int64, reinterpreted like the interpreter
  std::array<int64_t, abi::kNumSlabs> slabBytes{};
  std::vector<Buffer> buffers;
  std::vector<Argument> arguments;
  std::vector<Result> results;
  std::vector<Constant> constants;
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  std::vector<Collective> collectives;
  std::optional<LossScaling> lossScaling;

  /// The MatmulDesc of a (validated) matmul step.
  MatmulDesc matmulDesc(const MatmulStep &step) const;
  /// The argument called `name` (or with `name` among its aliases).
  const Argument *findArgument(std::string_view name) const;
  const Result *findResult(std::string_view name) const;
  /// The buffers step `index` reads and writes: a kernel's inputs and
  /// outputs, a matmul's operands (bias included) and output, a copy's
  /// source and destination, a collective's bucket (read by its start,
  /// written by its done).
  void stepBuffers(int64_t index, std::vector<int64_t> &reads,
                   std::vector<int64_t> &writes) const;
};

/// Reads and validates a serialized StepProgram (the object's bytes).
/// Errors are InvalidArgument, one line, and start with "step program: ".
absl::StatusOr<StepProgram> parseStepProgram(const void *data, size_t size);
/// The same for a program in the JSON form the dumps write.
absl::StatusOr<StepProgram> parseStepProgramJson(std::string_view json);
/// The same for a program message.
absl::StatusOr<StepProgram>
validateStepProgram(const abi::StepProgram &message);

} // namespace sinter::exec

#endif // SINTER_RUNTIME_EXEC_STEPPROGRAM_H
