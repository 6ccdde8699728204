//===- StepMain.cpp - main() of the binary `sinterc -o` links -------------===//
//
// The object file sinterc writes defines the step program and the kernel
// table (runtime/Abi/KernelAbi.h); this main() runs them:
//
//   train [--inputs=in.safetensors] [--outputs=out.safetensors]
//         [--steps=N] [--threads=N] [--profile]
//
//   --inputs    argument values by name. Params not given are initialized
//               from their `init` (as the reference interpreter does);
//               opt_state not given starts at zero; the step counter starts
//               at the given `step` or 0. Every model input must be given.
//   --outputs   after the last step, every result by name (param/opt_state
//               results read from their argument buffers: the state
//               contract of docs/StepProgram.md).
//   --steps     steps to run (default 1); step i sees counter start + i.
//   --threads   threads for kernels and oneDNN (default: all cores).
//   --profile   print where the time went (total, matmul, kernels, copies,
//               top kernels).
//
// After the run every metric prints as `name = value`, like
// `sinterc --run`. A bad flag is one line "error: ..." and exit code 2;
// any other failure is one line "error: ..." and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/Abi/HalfFloat.h"
#include "runtime/Abi/KernelAbi.h"
#include "runtime/Exec/Executor.h"
#include "runtime/Exec/StepProgram.h"
#include "runtime/Formats/SafeTensors.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <string_view>

extern "C" const char sinter_program_json[];
extern "C" const SinterKernelFn sinter_kernels[];

using namespace sinter;
using namespace sinter::exec;

namespace {

struct Flags {
  std::string inputs, outputs;
  int64_t steps = 1;
  int threads = 0;
  bool profile = false;
};

constexpr const char *kUsage =
    "usage: %s [--inputs=FILE.safetensors] [--outputs=FILE.safetensors] "
    "[--steps=N] [--threads=N] [--profile]\n";

[[noreturn]] void fail(int code, std::string_view message) {
  std::fprintf(stderr, "error: %.*s\n", static_cast<int>(message.size()),
               message.data());
  std::exit(code);
}

[[noreturn]] void failStatus(const absl::Status &status) {
  std::string text(status.message());
  fail(1, text);
}

Flags parseFlags(int argc, char **argv) {
  Flags flags;
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
    };
    auto positive = [&](int64_t max) {
      needValue();
      int64_t n;
      if (!absl::SimpleAtoi(absl::string_view(value.data(), value.size()),
                            &n) ||
          n < 1 || n > max)
        fail(2, absl::StrFormat("%s: '%s' is not an integer in [1, %d]", name,
                                value, max));
      return n;
    };
    if (name == "--inputs") {
      needValue();
      flags.inputs = value;
    } else if (name == "--outputs") {
      needValue();
      flags.outputs = value;
    } else if (name == "--steps") {
      flags.steps = positive(std::numeric_limits<int64_t>::max());
    } else if (name == "--threads") {
      flags.threads = static_cast<int>(positive(4096));
    } else if (name == "--profile" && !hasValue) {
      flags.profile = true;
    } else if (name == "--help" || name == "-h") {
      std::printf(kUsage, argv[0]);
      std::exit(0);
    } else {
      fail(2, absl::StrFormat("unknown flag '%s' (try --help)", arg));
    }
  }
  return flags;
}

/// `value` of a 0-d buffer, with enough digits to read the exact value
/// back (9 for f32, 17 for f64), as `sinterc --run` prints it.
std::string formatScalar(ElementType type, const void *data) {
  auto load = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, data, sizeof(v));
    return v;
  };
  switch (type) {
  case ElementType::F32:
    return absl::StrFormat("%.9g", load(0.0f));
  case ElementType::F64:
    return absl::StrFormat("%.17g", load(0.0));
  case ElementType::F16:
    return absl::StrFormat("%.9g", half::f16BitsToFloat(load(uint16_t(0))));
  case ElementType::BF16:
    return absl::StrFormat("%.9g", half::bf16BitsToFloat(load(uint16_t(0))));
  case ElementType::I64:
    return absl::StrFormat("%d", load(int64_t(0)));
  case ElementType::I32:
    return absl::StrFormat("%d", load(int32_t(0)));
  case ElementType::I8:
    return absl::StrFormat("%d", load(int8_t(0)));
  case ElementType::I1:
    return absl::StrFormat("%d", load(uint8_t(0)));
  }
  return "?";
}

} // namespace

int main(int argc, char **argv) {
  Flags flags = parseFlags(argc, argv);

  absl::StatusOr<StepProgram> program = parseStepProgram(sinter_program_json);
  if (!program.ok())
    failStatus(program.status());
  ExecutorOptions options;
  options.threads = flags.threads;
  options.profile = flags.profile;
  absl::StatusOr<std::unique_ptr<Executor>> created =
      Executor::create(std::move(*program), sinter_kernels, options);
  if (!created.ok())
    failStatus(created.status());
  Executor &ex = **created;
  const StepProgram &prog = ex.program();

  // Arguments: given ones from --inputs, the rest by kind.
  std::set<std::string> given;
  if (!flags.inputs.empty()) {
    absl::StatusOr<formats::SafeTensorsFile> file =
        formats::readSafeTensors(flags.inputs);
    if (!file.ok())
      failStatus(file.status());
    absl::StatusOr<std::vector<std::string>> unused = ex.setArguments(*file);
    if (!unused.ok())
      failStatus(unused.status());
    if (!unused->empty())
      std::fprintf(stderr,
                   "warning: %zu tensor(s) in %s match no argument of @%s: "
                   "%s\n",
                   unused->size(), flags.inputs.c_str(), prog.function.c_str(),
                   absl::StrJoin(*unused, ", ").c_str());
    for (const auto &[name, tensor] : file->tensors)
      given.insert(name);
  }
  for (const Argument &a : prog.arguments) {
    if (given.count(a.name))
      continue;
    switch (a.kind) {
    case ArgumentKind::Param:
      if (absl::Status s = ex.initializeParameter(a); !s.ok())
        failStatus(s);
      break;
    case ArgumentKind::Input:
      fail(1, absl::StrFormat("input '%s' is not given (pass --inputs=FILE "
                              "with a tensor of that name)",
                              a.name));
    case ArgumentKind::OptState: // the slab starts zero-filled
    case ArgumentKind::Step:     // 0 unless given
      break;
    }
  }

  int64_t start = ex.step();
  for (int64_t i = 0; i < flags.steps; ++i) {
    ex.setStep(start + i);
    if (absl::Status s = ex.run(); !s.ok())
      failStatus(s);
  }

  for (const Result &r : prog.results)
    if (r.kind == ResultKind::Metric)
      std::printf(
          "%s = %s\n", r.name.c_str(),
          formatScalar(prog.buffers[r.buffer].type, ex.bufferData(r.buffer))
              .c_str());
  if (flags.profile)
    std::printf("%s", ex.formatProfile(std::getenv("SINTER_PROFILE_ALL")
                                           ? 1 << 30
                                           : 10)
                          .c_str());
  std::fflush(stdout);

  if (!flags.outputs.empty())
    if (absl::Status s =
            formats::writeSafeTensors(flags.outputs, ex.readResults());
        !s.ok())
      failStatus(s);
  return 0;
}
