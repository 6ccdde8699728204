//===- StepMain.cpp - main() of the binary `sinterc -o` links -------------===//
//
// The object file sinterc writes defines the step program, its kernel table
// (abi/KernelAbi.h), the eval program and the bundled dataset's
// path; this main() runs them in one of two modes.
//
// Training (the default; runtime/Train/Trainer.h, flags in --help and
// docs/Runtime.md):
//
//   train [--data=SPEC] [--steps=N] [--lr=X] [--seed=N] [--init=FILE]
//         [--save=DIR] [--save-every=N] [--resume[=DIR]] [--eval-every=N]
//         [--log-jsonl=FILE] [--tensorboard=DIR] [--threads=N] [--quiet] ...
//
// Raw steps (when --inputs or --outputs is given; what the numerical tests
// compare against the reference interpreter):
//
//   train --inputs=in.safetensors [--outputs=out.safetensors]
//         [--steps=N] [--threads=N] [--profile]
//
//   --inputs    argument values by name. Params not given are initialized
//               from their `init` (as the reference interpreter does);
//               opt_state not given starts at zero; the step counter starts
//               at the given `step` or 0. Every model input must be given.
//   --outputs   after the last step, every result by name (param/opt_state
//               results read from their argument buffers: the state
//               contract of docs/StepProgram.md).
//   After the run every metric prints as `name = value`, like
//   `sinterc --run`.
//
// A bad flag is one line "error: ..." and exit code 2; any other failure is
// one line "error: ..." and exit code 1 (with SINTER_ERROR_LOCATIONS=1,
// followed by " (at FILE:LINE <- ...)", where the error was made and
// returned from); Ctrl-C during training saves (with --save) and exits 130.
//
//===----------------------------------------------------------------------===//

#include "abi/KernelAbi.h"
#include "runtime/Comm/Communicator.h"
#include "runtime/Exec/DeviceQueue.h"
#include "runtime/Exec/Executor.h"
#include "runtime/Exec/StepProgram.h"
#include "runtime/Exec/StepTrace.h"
#include "runtime/Formats/SafeTensors.h"
#include "runtime/Support/Status.h"
#include "runtime/Train/Checkpoint.h"
#include "runtime/Train/DataParallel.h"
#include "runtime/Train/Interrupts.h"
#include "runtime/Train/Trainer.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <string>
#include <string_view>

// The symbols of the object sinterc writes (abi/Abi.h spells them).
extern "C" const unsigned char SINTER_ABI_STEP_PROGRAM[];
extern "C" const uint64_t SINTER_ABI_STEP_PROGRAM_SIZE;
// Weak: a CUDA binary has no kernel tables (its kernels are in the CUDA
// module) and a CPU binary no CUDA module.
extern "C" __attribute__((weak)) const SinterKernelFn SINTER_ABI_STEP_KERNELS[];
extern "C" __attribute__((weak)) const unsigned char SINTER_ABI_CUDA_MODULE[];
extern "C" __attribute__((weak)) const uint64_t SINTER_ABI_CUDA_MODULE_SIZE;
// Weak: an object without an evaluation program (--entry=forward_grad, a
// .mlir without @forward) lacks them, as hand-written test objects may lack
// the data folder.
extern "C" __attribute__((weak)) const unsigned char SINTER_ABI_EVAL_PROGRAM[];
extern "C" __attribute__((weak)) const uint64_t SINTER_ABI_EVAL_PROGRAM_SIZE;
extern "C" __attribute__((weak)) const SinterKernelFn SINTER_ABI_EVAL_KERNELS[];
extern "C" __attribute__((weak)) const char SINTER_ABI_DEFAULT_DATA[];
// Only with gradient accumulation.
extern "C" __attribute__((weak)) const unsigned char
    SINTER_ABI_ACCUMULATE_PROGRAM[];
extern "C" __attribute__((weak)) const uint64_t
    SINTER_ABI_ACCUMULATE_PROGRAM_SIZE;
extern "C" __attribute__((weak)) const SinterKernelFn
    SINTER_ABI_ACCUMULATE_KERNELS[];

using namespace sinter;
using namespace sinter::exec;
namespace sabi = sinter::abi;

namespace {

struct Flags {
  // Raw steps.
  std::string inputs, outputs, trace;
  // Training.
  train::TrainOptions train;
  bool stepsGiven = false;
  std::optional<uint64_t> seed;
  bool resumeAuto = false; // bare --resume: from --save, if it has one
  // Both.
  int threads = 0;
  bool profile = false;
  bool checkQueue = false; // --check-queue: check the device queue plans
  // Data parallelism.
  int64_t collectiveTimeoutSeconds = 300;
  train::DataParallelOptions::Skip skipAllReduce =
      train::DataParallelOptions::Skip::never;
};

/// This process's rank in a data-parallel job, for error lines (-1: one
/// process).
int errorRank = -1;

constexpr const char *kUsage = R"(usage: %1$s [flags]

Trains the model compiled into this binary.

  --data=SPEC        training data: a token file (llm.c shard or nanoGPT
                     uint16 .bin), a directory or glob of them, or .npy
                     arrays (DIR with <input>.npy, or name=FILE.npy,...);
                     see docs/Data.md (default: %2$s)
  --steps=N          train until step N, counted from the start of training
                     (default 1000; a resumed run continues to N)
  --batch-size=N     must equal the compiled batch size (%3$s)
  --grad-accum=K     micro-batches of that size per optimizer step (default:
                     the model's grad_accumulation_steps; a binary compiled
                     with 1 takes only 1)
  --lr=X             peak learning rate of the compiled schedule (default:
                     the model file's; min_lr keeps its ratio to it)
  --seed=N           seed for parameter initialization and data shuffling
                     (default: the model file's; dropout masks stay as
                     compiled)
  --init=FILE        start from these parameters (.safetensors with
                     state_dict names, e.g. saved from PyTorch); parameters
                     missing from the file use their initializers
  --save=DIR         write checkpoints to DIR (at the end, and every
                     --save-every steps); DIR/latest names the newest
  --save-every=N     checkpoint every N steps (needs --save)
  --keep-last=N      keep only the newest N checkpoints in --save's DIR
                     (default: all)
  --keep-every=M     with --keep-last, also keep every checkpoint whose step
                     is a multiple of M
  --resume[=DIR]     continue from DIR's latest checkpoint (bit-exact); bare
                     --resume continues from --save's DIR if it has one
  --eval-every=N     evaluate on held-out batches every N steps and at the end
  --eval-batches=N   held-out batches per evaluation (default 20)
  --log-jsonl=FILE   append one JSON object per step and per evaluation
  --tensorboard=DIR  also write the step and evaluation metrics as a
                     TensorBoard event file in DIR (tensorboard --logdir=DIR)
  --log-every=N      progress line every N steps when not on a terminal
                     (default 10)
  --threads=N        threads for kernels and matmuls (default: the cores
                     divided by the ranks on this machine, or the CPUs
                     sinter-launch bound this rank to)
  --quiet            print only warnings, errors and the summary line
  --profile          print where the step time went at the end
  --check-numerics   check every step's values; the first op that makes a
                     NaN or infinity stops the run, named with its layer and
                     model-file line (steps run about 2x slower)

Data parallelism (docs/Distributed.md): started by sinter-launch -n N,
torchrun, mpirun or srun, every rank trains on its own rows of a global
batch of ranks x the compiled batch, with gradients averaged.
  --collective-timeout=S  seconds one rank waits for the others in any
                     collective or at the start (default 300); also the
                     longest rank 0 may spend alone, e.g. saving
  --check-every=N    compare a checksum of the parameters across ranks every
                     N steps (default 100; 0: only at the start)
  --debug-skip-allreduce[=even]  skip the gradient all-reduces, on every
                     step or on even steps (wrong numbers: the compute
                     floor, for benchmarks)

Raw steps (numerical checks): --inputs=FILE.safetensors
  [--outputs=FILE.safetensors] [--steps=N] [--threads=N] [--profile]

  --trace=FILE       record the first step's arguments and every program
                     step's results in FILE (.safetensors), for
                     `sinterc MODEL --bisect=FILE` (docs/Testing.md)

  --check-queue      check, with no device, that the programs' steps as a
                     GPU runs them (compute and communication streams,
                     ordered by events) have no race; see docs/Cuda.md
)";

[[noreturn]] void fail(int code, std::string_view message) {
  if (errorRank >= 0)
    std::fprintf(stderr, "error: rank %d: %.*s\n", errorRank,
                 static_cast<int>(message.size()), message.data());
  else
    std::fprintf(stderr, "error: %.*s\n", static_cast<int>(message.size()),
                 message.data());
  std::exit(code);
}

/// The error line of a failed status; with SINTER_ERROR_LOCATIONS=1 in the
/// environment it ends with where the error was made and every place it was
/// returned from: " (at runtime/Formats/FileIO.cpp:92 <- ...)".
[[noreturn]] void failStatus(const absl::Status &status) {
  std::string text(status.message());
  const char *locations = std::getenv("SINTER_ERROR_LOCATIONS");
  std::string chain = statusLocation(status);
  if (locations && std::string_view(locations) == "1" && !chain.empty())
    absl::StrAppend(&text, " (at ", chain, ")");
  int code = 1;
  if (status.code() == absl::StatusCode::kCancelled)
    code = 130;
  else if (comm::causedByPeer(status))
    code = comm::kExitPeerFailed;
  fail(code, text);
}

/// The compiled batch size, for --help.
std::string compiledBatch() {
  absl::StatusOr<StepProgram> program =
      parseStepProgram(SINTER_ABI_STEP_PROGRAM, SINTER_ABI_STEP_PROGRAM_SIZE);
  if (program.ok())
    for (const Argument &a : program->arguments)
      if (a.kind == sabi::Argument::input &&
          !program->buffers[a.buffer].shape.empty())
        return absl::StrCat(program->buffers[a.buffer].shape.front());
  return "?";
}

Flags parseFlags(int argc, char **argv) {
  Flags flags;
  bool trainingFlag = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view name = arg, value;
    bool hasValue = false;
    if (size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasValue = true;
    }
    auto needValue = [&] {
      if (!hasValue || value.empty())
        fail(2, absl::StrFormat("%s needs a value (%s=...)", name, name));
      return std::string(value);
    };
    auto noValue = [&] {
      if (hasValue)
        fail(2, absl::StrFormat("%s takes no value", name));
    };
    auto integer = [&](int64_t min, int64_t max) {
      needValue();
      int64_t n;
      if (!absl::SimpleAtoi(absl::string_view(value.data(), value.size()),
                            &n) ||
          n < min || n > max)
        fail(2, absl::StrFormat("%s: '%s' is not an integer in [%d, %d]", name,
                                value, min, max));
      return n;
    };
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    auto training = [&] { trainingFlag = true; };
    if (name == "--inputs") {
      flags.inputs = needValue();
    } else if (name == "--outputs") {
      flags.outputs = needValue();
    } else if (name == "--trace") {
      flags.trace = needValue();
    } else if (name == "--steps") {
      flags.train.steps = integer(1, kMax);
      flags.stepsGiven = true;
    } else if (name == "--threads") {
      flags.threads = static_cast<int>(integer(1, 4096));
    } else if (name == "--profile") {
      noValue();
      flags.profile = true;
    } else if (name == "--data") {
      training();
      flags.train.data = needValue();
    } else if (name == "--batch-size") {
      training();
      flags.train.batchSize = integer(1, kMax);
    } else if (name == "--grad-accum") {
      training();
      flags.train.gradAccum = integer(1, sabi::kMaxGradAccumulationSteps);
    } else if (name == "--lr") {
      training();
      // The model file's range for lr (ImportTraining.cpp), so that the
      // flag cannot ask for what the model may not.
      double lr;
      if (!absl::SimpleAtod(needValue(), &lr) || !(lr >= 0) ||
          !(lr <= sabi::kMaxHyperparameter))
        fail(2, absl::StrFormat("--lr: '%s' is not a learning rate in [0, %g] "
                                "(the range a model file's lr must lie in)",
                                value, sabi::kMaxHyperparameter));
      flags.train.lr = lr;
    } else if (name == "--seed") {
      training();
      uint64_t seed;
      if (!absl::SimpleAtoi(needValue(), &seed))
        fail(2,
             absl::StrFormat("--seed: '%s' is not an unsigned integer", value));
      flags.seed = seed;
    } else if (name == "--init") {
      training();
      flags.train.init = needValue();
    } else if (name == "--save") {
      training();
      flags.train.save = needValue();
    } else if (name == "--save-every") {
      training();
      flags.train.saveEvery = integer(1, kMax);
    } else if (name == "--keep-last") {
      training();
      flags.train.keepLast = integer(1, kMax);
    } else if (name == "--keep-every") {
      training();
      flags.train.keepEvery = integer(1, kMax);
    } else if (name == "--check-numerics") {
      training();
      noValue();
      flags.train.checkNumerics = true;
    } else if (name == "--resume") {
      training();
      if (hasValue)
        flags.train.resume = needValue();
      else
        flags.resumeAuto = true;
    } else if (name == "--eval-every") {
      training();
      flags.train.evalEvery = integer(1, kMax);
    } else if (name == "--eval-batches") {
      training();
      flags.train.evalBatches = integer(1, kMax);
    } else if (name == "--log-jsonl") {
      training();
      flags.train.logJsonl = needValue();
    } else if (name == "--tensorboard") {
      training();
      flags.train.tensorboard = needValue();
    } else if (name == "--log-every") {
      training();
      flags.train.logEvery = integer(1, kMax);
    } else if (name == "--collective-timeout") {
      training();
      flags.collectiveTimeoutSeconds = integer(1, 7 * 24 * 3600);
    } else if (name == "--check-every") {
      training();
      flags.train.checkEvery = integer(0, kMax);
    } else if (name == "--debug-skip-allreduce") {
      training();
      using Skip = train::DataParallelOptions::Skip;
      if (!hasValue)
        flags.skipAllReduce = Skip::always;
      else if (value == "even")
        flags.skipAllReduce = Skip::evenSteps;
      else
        fail(2, absl::StrFormat("--debug-skip-allreduce: '%s' is not 'even' "
                                "(no value: every step)",
                                value));
    } else if (name == "--debug-fault") {
      // Tests only: same-data (every rank reads rank 0's rows) or drift@N
      // (the last rank changes a parameter after step N).
      training();
      flags.train.debugFault = needValue();
    } else if (name == "--check-queue") {
      noValue();
      flags.checkQueue = true;
    } else if (name == "--quiet") {
      training();
      noValue();
      flags.train.quiet = true;
    } else if (name == "--help" || name == "-h") {
      const char *data =
          &SINTER_ABI_DEFAULT_DATA ? SINTER_ABI_DEFAULT_DATA : "";
      std::printf(kUsage, argv[0], *data ? data : "none bundled",
                  compiledBatch().c_str());
      std::exit(0);
    } else {
      fail(2, absl::StrFormat("unknown flag '%s' (try --help)", arg));
    }
  }
  bool raw =
      !flags.inputs.empty() || !flags.outputs.empty() || !flags.trace.empty();
  if (raw && trainingFlag)
    fail(2, "--inputs/--outputs run raw steps and take no training flags "
            "(--data, --save, ...)");
  if (raw && !flags.stepsGiven)
    flags.train.steps = 1;
  if (!raw && flags.train.saveEvery && flags.train.save.empty())
    fail(2, "--save-every needs --save=DIR");
  if (!raw && flags.train.keepLast && flags.train.save.empty())
    fail(2, "--keep-last needs --save=DIR");
  if (!raw && flags.train.keepEvery && !flags.train.keepLast)
    fail(2, "--keep-every needs --keep-last=N (without it every checkpoint "
            "is kept)");
  if (flags.resumeAuto) {
    if (flags.train.save.empty())
      fail(2, "bare --resume continues from --save's directory; give "
              "--save=DIR or --resume=DIR");
    std::error_code ec;
    if (std::filesystem::exists(
            std::filesystem::path(flags.train.save) / "latest", ec))
      flags.train.resume = flags.train.save;
  }
  return flags;
}

/// Metric `id` as `sinterc --run` prints it: enough digits to read the
/// exact value back (9 for f32, 17 for f64), integers as integers.
absl::StatusOr<std::string> formatScalar(const Executor &ex, int64_t id) {
  SINTER_ASSIGN_OR_RETURN(double value, ex.scalarValue(id));
  switch (ex.program().buffers[id].type) {
  case sabi::ElementType::f64:
    return absl::StrFormat("%.17g", value);
  case sabi::ElementType::f32:
  case sabi::ElementType::f16:
  case sabi::ElementType::bf16:
    return absl::StrFormat("%.9g", value);
  default:
    return absl::StrFormat("%d", static_cast<int64_t>(value));
  }
}

/// Raw steps: arguments from --inputs, results to --outputs.
absl::Status runRawSteps(Executor &ex, const Flags &flags) {
  const StepProgram &prog = ex.program();
  std::set<std::string> given;
  if (!flags.inputs.empty()) {
    SINTER_ASSIGN_OR_RETURN(formats::SafeTensorsFile file,
                            formats::readSafeTensors(flags.inputs));
    SINTER_ASSIGN_OR_RETURN(std::vector<std::string> unused,
                            ex.setArguments(file));
    if (!unused.empty())
      std::fprintf(stderr,
                   "warning: %zu tensor(s) in %s match no argument of @%s: "
                   "%s\n",
                   unused.size(), flags.inputs.c_str(), prog.function.c_str(),
                   absl::StrJoin(unused, ", ").c_str());
    for (const auto &[name, tensor] : file.tensors)
      given.insert(name);
  }
  for (const Argument &a : prog.arguments) {
    if (given.count(a.name))
      continue;
    switch (a.kind) {
    case sabi::Argument::param:
      SINTER_RETURN_IF_ERROR(ex.initializeParameter(a));
      break;
    case sabi::Argument::input:
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrFormat("input '%s' is not given (pass --inputs=FILE "
                          "with a tensor of that name)",
                          a.name));
    default: // optimizer state starts zero-filled, the step at 0, hyper-
      break; // parameters at their compiled defaults
    }
  }

  SINTER_ASSIGN_OR_RETURN(int64_t start, ex.step());
  exec::StepTrace trace;
  for (int64_t i = 0; i < flags.train.steps; ++i) {
    SINTER_RETURN_IF_ERROR(ex.setStep(start + i));
    if (i == 0 && !flags.trace.empty())
      SINTER_RETURN_IF_ERROR(
          trace.begin(ex, std::string_view(reinterpret_cast<const char *>(
                                               SINTER_ABI_STEP_PROGRAM),
                                           SINTER_ABI_STEP_PROGRAM_SIZE)));
    SINTER_RETURN_IF_ERROR(ex.run());
    if (i == 0 && !flags.trace.empty())
      SINTER_RETURN_IF_ERROR(trace.finish(flags.trace));
  }

  for (const Result &r : prog.results)
    if (r.kind == sabi::Result::metric) {
      SINTER_ASSIGN_OR_RETURN(std::string value, formatScalar(ex, r.buffer));
      std::printf("%s = %s\n", r.name.c_str(), value.c_str());
    }
  if (flags.profile)
    std::printf(
        "%s", ex.formatProfile(std::getenv("SINTER_PROFILE_ALL") ? 1 << 30 : 10)
                  .c_str());
  std::fflush(stdout);

  if (!flags.outputs.empty()) {
    SINTER_ASSIGN_OR_RETURN(formats::SafeTensorsFile results, ex.readResults());
    SINTER_RETURN_IF_ERROR(formats::writeSafeTensors(flags.outputs, results));
  }
  return absl::OkStatus();
}

/// Whether a program's kernels are in the binary: its own table on the
/// CPU; on a GPU every program's kernels are in the one CUDA module.
bool haveKernels(const SinterKernelFn *table) {
  return table || (SINTER_ABI_CUDA_MODULE && &SINTER_ABI_CUDA_MODULE_SIZE);
}

std::unique_ptr<Executor> createExecutor(const unsigned char *bytes,
                                         uint64_t size,
                                         const SinterKernelFn *kernels,
                                         const Flags &flags, bool profile,
                                         const Executor *shareStateWith = nullptr) {
  absl::StatusOr<StepProgram> program = parseStepProgram(bytes, size);
  if (!program.ok())
    failStatus(program.status());
  if (flags.seed)
    program->seed = *flags.seed;
  ExecutorOptions options;
  options.threads = flags.threads;
  options.profile = profile;
  options.shareStateWith = shareStateWith;
  // A testing knob: blocks of this many rows for the matmuls that skip a
  // causal triangle, so that small models split as large ones do.
  if (const char *rows = std::getenv("SINTER_TRIANGLE_BLOCK_ROWS")) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(rows, &n) || n < 1)
      fail(2, absl::StrFormat("SINTER_TRIANGLE_BLOCK_ROWS='%s' is not a "
                              "positive number of rows",
                              rows));
    options.matmul.triangleBlockRows = n;
  }
  if (SINTER_ABI_CUDA_MODULE && &SINTER_ABI_CUDA_MODULE_SIZE)
    options.cudaModule = std::string_view(
        reinterpret_cast<const char *>(SINTER_ABI_CUDA_MODULE),
        SINTER_ABI_CUDA_MODULE_SIZE);
  absl::StatusOr<std::unique_ptr<Executor>> created =
      Executor::create(std::move(*program), kernels, options);
  if (!created.ok())
    failStatus(created.status());
  return *std::move(created);
}

} // namespace

/// --check-queue: each program's steps as device stream work
/// (DeviceQueue.h), replayed on the model of a device; no device needed.
int checkQueues() {
  struct Named {
    const char *role;
    const unsigned char *bytes;
    const uint64_t *size;
  };
  const Named programs[] = {
      {"step", SINTER_ABI_STEP_PROGRAM, &SINTER_ABI_STEP_PROGRAM_SIZE},
      {"eval", SINTER_ABI_EVAL_PROGRAM, &SINTER_ABI_EVAL_PROGRAM_SIZE},
      {"accumulate", SINTER_ABI_ACCUMULATE_PROGRAM,
       &SINTER_ABI_ACCUMULATE_PROGRAM_SIZE}};
  for (const Named &p : programs) {
    if (!p.bytes || !p.size)
      continue;
    absl::StatusOr<StepProgram> program = parseStepProgram(p.bytes, *p.size);
    if (!program.ok())
      failStatus(program.status());
    absl::StatusOr<QueuePlan> plan = planDeviceQueue(*program);
    if (!plan.ok())
      failStatus(plan.status());
    if (absl::Status s = checkDeviceQueue(*program, *plan); !s.ok())
      failStatus(absl::Status(s.code(), absl::StrCat(p.role, " program: ",
                                                     s.message())));
    std::printf("%s program: %zu queue operations on 2 streams, %d events, "
                "%zu collectives: no races\n",
                p.role, plan->ops.size(), plan->numEvents,
                program->collectives.size());
  }
  return 0;
}

int main(int argc, char **argv) {
  // Before any thread starts, so that none of them ever runs a signal
  // handler (runtime/Train/Interrupts.h).
  train::interrupts::install();
  Flags flags = parseFlags(argc, argv);
  if (flags.checkQueue)
    return checkQueues();
  bool raw =
      !flags.inputs.empty() || !flags.outputs.empty() || !flags.trace.empty();
  // Where this process sits in a data-parallel job (raw steps run alone).
  comm::DistEnv dist;
  if (!raw) {
    absl::StatusOr<comm::DistEnv> env = comm::readDistEnv();
    if (!env.ok())
      fail(2, std::string(env.status().message()));
    dist = *env;
    if (dist.worldSize > 1)
      errorRank = dist.rank;
  }
  // Ranks on one machine share its cores, unless the launcher gave each
  // its own.
  if (flags.threads == 0 && (dist.localWorldSize > 1 || dist.ownCpus))
    flags.threads = comm::defaultThreads(dist, omp_get_num_procs());
  std::unique_ptr<Executor> ex =
      createExecutor(SINTER_ABI_STEP_PROGRAM, SINTER_ABI_STEP_PROGRAM_SIZE,
                     SINTER_ABI_STEP_KERNELS, flags, flags.profile);
  if (!flags.inputs.empty() || !flags.outputs.empty()) {
    if (absl::Status s = runRawSteps(*ex, flags); !s.ok())
      failStatus(s);
    return 0;
  }

  std::unique_ptr<Executor> eval;
  if (&SINTER_ABI_EVAL_PROGRAM && &SINTER_ABI_EVAL_PROGRAM_SIZE &&
      haveKernels(SINTER_ABI_EVAL_KERNELS))
    eval = createExecutor(SINTER_ABI_EVAL_PROGRAM, SINTER_ABI_EVAL_PROGRAM_SIZE,
                          SINTER_ABI_EVAL_KERNELS, flags, /*profile=*/false);
  std::unique_ptr<Executor> accumulate;
  if (&SINTER_ABI_ACCUMULATE_PROGRAM && &SINTER_ABI_ACCUMULATE_PROGRAM_SIZE &&
      haveKernels(SINTER_ABI_ACCUMULATE_KERNELS))
    accumulate = createExecutor(
        SINTER_ABI_ACCUMULATE_PROGRAM, SINTER_ABI_ACCUMULATE_PROGRAM_SIZE,
        SINTER_ABI_ACCUMULATE_KERNELS, flags, /*profile=*/false, ex.get());
  train::TrainOptions &options = flags.train;
  options.defaultData = &SINTER_ABI_DEFAULT_DATA ? SINTER_ABI_DEFAULT_DATA : "";
  options.seed = ex->program().seed;
  options.seedGiven = flags.seed.has_value();
  options.profile = flags.profile;
  options.program = absl::StrFormat(
      "%016x", train::hashBytes(std::string_view(
                   reinterpret_cast<const char *>(SINTER_ABI_STEP_PROGRAM),
                   SINTER_ABI_STEP_PROGRAM_SIZE)));
  train::DataParallelOptions dpOptions;
  dpOptions.timeout = std::chrono::seconds(flags.collectiveTimeoutSeconds);
  dpOptions.fingerprint = options.program;
  dpOptions.skipAllReduce = flags.skipAllReduce;
  // On every rank and even with --quiet: a rank started alone, or pointed
  // at the wrong MASTER_ADDR, would otherwise sit silent for the whole
  // timeout.
  dpOptions.notice = [](const std::string &line) {
    std::fprintf(stderr, "note: %s (--collective-timeout)\n", line.c_str());
    std::fflush(stderr);
  };
  absl::StatusOr<std::unique_ptr<train::DataParallel>> dp =
      train::DataParallel::create(dist, dpOptions);
  if (!dp.ok())
    failStatus(dp.status());
  if ((*dp)->distributed()) {
    ex->setCollectives(dp->get());
    if (absl::Status s = ex->shareCollectiveBuffers(); !s.ok())
      failStatus(s);
  }
  options.dataParallel = dp->get();
  if (absl::Status s =
          train::train(*ex, eval.get(), accumulate.get(), options);
      !s.ok())
    failStatus(s);
  return 0;
}
