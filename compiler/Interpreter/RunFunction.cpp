//===- RunFunction.cpp - run a function on tensors from files ------------===//

#include "compiler/Interpreter/RunFunction.h"

#include "compiler/Interpreter/Bisect.h"
#include "compiler/Interpreter/Files.h"
#include "compiler/Interpreter/Runnable.h"
#include "dialects/Schedule/ScheduleOps.h"
#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/Npy.h"
#include "runtime/Formats/SafeTensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace sinter;
using namespace sinter::interp;
namespace sabi = sinter::abi;
using formats::HostTensor;

namespace {

HostTensor toHost(const Tensor &t) {
  HostTensor host;
  host.dtype = dtypeOfKind(t.kind);
  host.shape = t.shape;
  host.data.resize(t.numElements() * formats::dtypeByteSize(host.dtype));
  tensorToBytes(t, host.data.data());
  return host;
}

} // namespace

LogicalResult sinter::runFunction(ModuleOp module, const RunOptions &options) {
  Location loc = module.getLoc();
  std::optional<Runnable> runnable;
  std::unique_ptr<interp::Bisection> bisection;
  if (!options.bisect.empty()) {
    if (!module.lookupSymbol<sched::ProgramOp>(options.function))
      return emitError(loc)
             << "--bisect holds the scheduled phase's @" << options.function
             << " against the trace, and the module has no "
                "such sched.program";
    FailureOr<std::unique_ptr<interp::Bisection>> opened =
        interp::Bisection::open(options.bisect, options.bisectRtol,
                                module.getContext());
    if (failed(opened))
      return failure();
    bisection = std::move(*opened);
    if (bisection->function() != options.function)
      return emitError(
                 FileLineColLoc::get(module.getContext(), options.bisect, 0, 0))
             << "is a trace of @" << bisection->function() << ", not of @"
             << options.function << " (name it with --entry)";
    if (failed(bisection->matches(
            module.lookupSymbol<sched::ProgramOp>(options.function),
            options.bisectProgram)))
      return failure();
  }
  runnable = runnableOf(module, options.function,
                        bisection ? StepHook([&](const StepWrites &w) {
                          return bisection->onStep(w);
                        })
                                  : StepHook());
  if (!runnable)
    return emitError(loc) << "there is no function @" << options.function
                          << " to run (the module has: "
                          << runnableNames(module) << ")";
  ProvidedTensors provided;
  if (failed(readInputs(options.inputs, loc, provided)))
    return failure();
  // A trace starts from the arguments the binary's run began with (moved:
  // the bisection reads only the steps' writes from here on).
  if (bisection)
    for (auto &[name, tensor] : bisection->file().tensors)
      if (sabi::isTraceArgumentName(name) &&
          !provided
               .try_emplace(name, Provided{std::move(tensor), options.bisect})
               .second)
        return emitError(loc)
               << "tensor '" << name
               << "' is given by --input and by the trace " << options.bisect;

  uint64_t seed = modelSeed(module);
  int initialized = 0;
  FailureOr<std::vector<Tensor>> args = assembleArguments(
      *runnable, options.function, provided, seed, initialized);
  if (failed(args))
    return failure();
  if (initialized)
    llvm::errs() << "note: " << initialized
                 << " parameter(s) not given were initialized from their "
                    "initializers (seed "
                 << seed << ")\n";
  warnUnused(provided, loc, options.function);

  auto results = runnable->run(std::move(*args));
  if (failed(results))
    return failure();
  if (bisection) {
    llvm::outs().flush();
    return bisection->finish(llvm::outs());
  }

  formats::SafeTensorsFile out;
  for (auto [i, t] : llvm::enumerate(*results)) {
    const std::string &name = runnable->resultNames[i];
    // Enough digits to read the exact value back (9 for f32, 17 for f64).
    if (t.rank() == 0 && t.isFloat())
      llvm::outs() << name << " = "
                   << llvm::format(
                          t.kind == ElementKind::F64 ? "%.17g" : "%.9g", t.f[0])
                   << "\n";
    else if (t.rank() == 0)
      llvm::outs() << name << " = " << t.i[0] << "\n";
    out.tensors.push_back({name, toHost(t)});
  }
  llvm::outs().flush();
  if (options.output.empty())
    return success();
  if (StringRef(options.output).ends_with(".safetensors")) {
    absl::Status status = formats::writeSafeTensors(options.output, out);
    return status.ok() ? success()
                       : fileError(module.getContext(), options.output, status);
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(options.output))
    return emitError(loc) << options.output
                          << ": cannot create the output directory: "
                          << ec.message();
  for (auto &[name, tensor] : out.tensors) {
    llvm::SmallString<128> path(options.output);
    llvm::sys::path::append(path, name + ".npy");
    absl::Status status = formats::writeNpy(path.str().str(), tensor);
    if (!status.ok())
      return fileError(module.getContext(), path.str().str(), status);
  }
  return success();
}
