//===- EvalProbe.cpp - runs the evaluation program of a sinterc object ----===//
//
// Linked with the object `sinterc MODEL -o x.o` writes and the runtime
// (lib/SinterRuntimeLink.txt, whose main() this one replaces), through the
// declarations a trainer uses:
//
//   probe                       prints the bundled symbols:
//                                 default_data: <sinter_default_data>
//                                 eval_program: <bytes> bytes [<function>]
//                               (0 bytes when the object has none)
//   probe --inputs=IN.safetensors [--outputs=OUT.safetensors]
//                               runs the evaluation program once: arguments
//                               by name from IN (parameters not given from
//                               their initializers), every result to OUT,
//                               metrics printed as `name = value`.
//
// Used by compare_eval.py and test/compiler/Driver/eval-program.test.
//
//===----------------------------------------------------------------------===//

#include "abi/KernelAbi.h"
#include "runtime/Exec/Executor.h"
#include "runtime/Exec/StepProgram.h"
#include "runtime/Formats/SafeTensors.h"

#include <cstdio>
#include <cstring>
#include <set>
#include <string>

// The object's symbols (abi/Abi.h); an object without an evaluation
// program lacks its three.
extern "C" __attribute__((weak)) const unsigned char SINTER_ABI_EVAL_PROGRAM[];
extern "C" __attribute__((weak)) const uint64_t SINTER_ABI_EVAL_PROGRAM_SIZE;
extern "C" __attribute__((weak)) const SinterKernelFn SINTER_ABI_EVAL_KERNELS[];
extern "C" const char SINTER_ABI_DEFAULT_DATA[];

using namespace sinter;
using namespace sinter::exec;
namespace sabi = sinter::abi;

static int fail(const absl::Status &status) {
  std::fprintf(stderr, "error: %s\n", std::string(status.message()).c_str());
  return 1;
}

int main(int argc, char **argv) {
  std::string inputs, outputs;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--inputs=", 0) == 0) {
      inputs = arg.substr(9);
    } else if (arg.rfind("--outputs=", 0) == 0) {
      outputs = arg.substr(10);
    } else {
      std::fprintf(stderr, "error: unknown flag '%s'\n", arg.c_str());
      return 2;
    }
  }
  std::printf("default_data: %s\n", SINTER_ABI_DEFAULT_DATA);
  size_t bytes =
      &SINTER_ABI_EVAL_PROGRAM_SIZE ? SINTER_ABI_EVAL_PROGRAM_SIZE : 0;
  absl::StatusOr<StepProgram> program =
      parseStepProgram(bytes ? SINTER_ABI_EVAL_PROGRAM : nullptr, bytes);
  std::printf("eval_program: %zu bytes %s\n", bytes,
              program.ok() ? program->function.c_str() : "");
  if (inputs.empty())
    return 0;
  if (!program.ok())
    return fail(program.status());

  absl::StatusOr<std::unique_ptr<Executor>> created =
      Executor::create(std::move(*program), SINTER_ABI_EVAL_KERNELS);
  if (!created.ok())
    return fail(created.status());
  Executor &ex = **created;
  absl::StatusOr<formats::SafeTensorsFile> file =
      formats::readSafeTensors(inputs);
  if (!file.ok())
    return fail(file.status());
  if (absl::StatusOr<std::vector<std::string>> unused = ex.setArguments(*file);
      !unused.ok())
    return fail(unused.status());
  for (const Argument &a : ex.program().arguments) {
    if (file->find(a.name))
      continue;
    if (a.kind != sabi::Argument::param)
      return fail(
          absl::InvalidArgumentError("argument '" + a.name + "' is not given"));
    if (absl::Status s = ex.initializeParameter(a); !s.ok())
      return fail(s);
  }
  if (absl::Status s = ex.run(); !s.ok())
    return fail(s);
  for (const Result &r : ex.program().results)
    if (r.kind == sabi::Result::metric) {
      absl::StatusOr<formats::HostTensor> read = ex.readResult(r);
      if (!read.ok())
        return fail(read.status());
      const formats::HostTensor &t = *read;
      double value = 0;
      if (t.dtype == formats::DType::F64) {
        std::memcpy(&value, t.data.data(), sizeof(value));
      } else if (t.dtype == formats::DType::F32) {
        float narrow;
        std::memcpy(&narrow, t.data.data(), sizeof(narrow));
        value = narrow;
      }
      std::printf("%s = %.17g\n", r.name.c_str(), value);
    }
  if (!outputs.empty()) {
    absl::StatusOr<formats::SafeTensorsFile> results = ex.readResults();
    if (!results.ok())
      return fail(results.status());
    if (absl::Status s = formats::writeSafeTensors(outputs, *results); !s.ok())
      return fail(s);
  }
  return 0;
}
