//===- Runnable.cpp - a function or program and its arguments ------------===//

#include "compiler/Interpreter/Runnable.h"

#include "compiler/Interpreter/Files.h"
#include "compiler/Interpreter/Initializers.h"
#include "compiler/Interpreter/Interpreter.h"
#include "compiler/Support/Diagnostics.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Schedule/ScheduleOps.h"
#include "runtime/Formats/Npy.h"
#include "runtime/Formats/SafeTensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace sinter;
using namespace sinter::interp;
namespace sabi = sinter::abi;
using formats::DType;
using formats::HostTensor;

namespace {

/// Converts a file tensor to an interpreter tensor of exactly `type`.
FailureOr<Tensor> fromHost(const HostTensor &host, RankedTensorType type,
                           StringRef name, StringRef file, Location argLoc) {
  std::optional<ElementKind> kind = kindOfDType(host.dtype);
  std::optional<ElementKind> want = kindOf(type.getElementType());
  if (!kind || kind != want ||
      ArrayRef<int64_t>(host.shape) != type.getShape()) {
    std::string shape;
    for (int64_t d : host.shape)
      shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    // The file is what is wrong; the argument says what was expected.
    auto diag = emitError(FileLineColLoc::get(argLoc.getContext(), file, 0, 0));
    diag << "tensor '" << name << "' is "
         << std::string(formats::dtypeName(host.dtype)) << "[" << shape
         << "], but the argument needs " << type;
    if (std::string where = formatLocation(argLoc); !where.empty())
      diag << " (" << where << ")";
    return failure();
  }
  return tensorFromBytes(*kind, host.shape, host.data.data());
}

Runnable fromFunction(func::FuncOp fn) {
  Runnable r;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    ArgumentSpec a{sgraph::argumentName(fn, i),
                   {},
                   cast<RankedTensorType>(fn.getArgumentTypes()[i]),
                   fn.getArgument(i).getLoc()};
    if (auto aliases =
            fn.getArgAttrOfType<ArrayAttr>(i, sgraph::attr::kAliases))
      for (auto alias : aliases.getAsRange<StringAttr>())
        a.aliases.push_back(alias.str());
    if (fn.getArgAttr(i, sgraph::attr::kParam))
      a.kind = sabi::Argument::param;
    else if (fn.getArgAttr(i, sgraph::attr::kOptState))
      a.kind = sabi::Argument::opt_state;
    else if (fn.getArgAttr(i, sgraph::attr::kAccumulator))
      a.kind = sabi::Argument::accumulator;
    else if (fn.getArgAttr(i, sgraph::attr::kStep))
      a.kind = sabi::Argument::step;
    else if (fn.getArgAttr(i, sgraph::attr::kRank))
      a.kind = sabi::Argument::rank;
    else if (fn.getArgAttr(i, sgraph::attr::kHyper))
      a.kind = sabi::Argument::hyper;
    a.init = fn.getArgAttrOfType<DictionaryAttr>(i, sgraph::attr::kInit);
    a.defaultValue = fn.getArgAttrOfType<FloatAttr>(i, sgraph::attr::kDefault);
    r.arguments.push_back(std::move(a));
  }
  for (unsigned i = 0; i < fn.getNumResults(); ++i) {
    std::string name = sgraph::resultName(fn, i);
    r.resultNames.push_back(name.empty() ? "result." + std::to_string(i)
                                         : name);
  }
  r.run = [fn](std::vector<Tensor> args) {
    return interp::runFunction(fn, std::move(args));
  };
  return r;
}

Runnable fromProgram(sched::ProgramOp program, StepHook hook) {
  Runnable r;
  for (auto arg : program.getBlock().getOps<sched::ArgumentOp>()) {
    ArgumentSpec a{
        arg.getName().str(),
        {},
        cast<sched::BufferType>(arg.getBuffer().getType()).getTensorType(),
        arg.getLoc()};
    if (auto aliases = arg.getAliases())
      for (auto alias : aliases->getAsRange<StringAttr>())
        a.aliases.push_back(alias.str());
    a.kind = arg.getArgumentKind();
    if (a.kind == sabi::Argument::input)
      a.kind.reset();
    a.init = arg.getInitAttr();
    a.defaultValue = arg.getDefaultValueAttr();
    r.arguments.push_back(std::move(a));
  }
  for (auto result : program.getBlock().getOps<sched::ResultOp>())
    r.resultNames.push_back(result.getName().str());
  r.run = [program, hook](std::vector<Tensor> args) {
    return interp::runProgram(program, std::move(args), hook);
  };
  return r;
}

} // namespace

LogicalResult sinter::interp::readInputs(ArrayRef<std::string> inputs,
                                         Location loc,
                                         ProvidedTensors &provided) {
  auto add = [&](const std::string &name, HostTensor tensor,
                 const std::string &file) -> LogicalResult {
    auto [it, inserted] =
        provided.try_emplace(name, Provided{std::move(tensor), file});
    if (!inserted)
      return emitError(FileLineColLoc::get(loc.getContext(), file, 0, 0))
             << "tensor '" << name << "' is also given by " << it->second.file;
    return success();
  };
  for (const std::string &spec : inputs) {
    StringRef text(spec);
    if (text.ends_with(".safetensors")) {
      auto file = formats::readSafeTensors(spec);
      if (!file.ok())
        return fileError(loc.getContext(), spec, file.status());
      for (auto &[name, tensor] : file->tensors)
        if (failed(add(name, std::move(tensor), spec)))
          return failure();
      continue;
    }
    if (text.ends_with(".npy")) {
      // name=path.npy, or the file's stem.
      auto [left, right] = text.split('=');
      std::string path = right.empty() ? left.str() : right.str();
      std::string name =
          right.empty() ? llvm::sys::path::stem(path).str() : left.str();
      auto tensor = formats::readNpy(path);
      if (!tensor.ok())
        return fileError(loc.getContext(), path, tensor.status());
      if (failed(add(name, std::move(*tensor), path)))
        return failure();
      continue;
    }
    return emitError(FileLineColLoc::get(loc.getContext(), spec, 0, 0))
           << "--input takes .safetensors files, x.npy or name=x.npy";
  }
  return success();
}

std::optional<Runnable> sinter::interp::runnableOf(ModuleOp module,
                                                   StringRef function,
                                                   const StepHook &hook) {
  if (auto program = module.lookupSymbol<sched::ProgramOp>(function))
    return fromProgram(program, hook);
  if (auto fn = module.lookupSymbol<func::FuncOp>(function);
      fn && !fn.isExternal())
    return fromFunction(fn);
  return std::nullopt;
}

std::string sinter::interp::runnableNames(ModuleOp module) {
  std::string names;
  for (Operation &op : module.getBody()->getOperations())
    if (isa<func::FuncOp, sched::ProgramOp>(op))
      if (auto name =
              op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
        if (!isa<func::FuncOp>(op) || !cast<func::FuncOp>(op).isExternal())
          names += (names.empty() ? "" : ", ") + name.str();
  return names;
}

uint64_t sinter::interp::modelSeed(ModuleOp module) {
  uint64_t seed = 1337;
  if (auto training =
          module->getAttrOfType<DictionaryAttr>(sgraph::attr::kTraining))
    if (auto s = training.getAs<IntegerAttr>("seed"))
      seed = s.getInt();
  return seed;
}

FailureOr<std::vector<Tensor>>
sinter::interp::assembleArguments(const Runnable &runnable, StringRef function,
                                  ProvidedTensors &provided, uint64_t seed,
                                  int &initialized) {
  std::vector<Tensor> args;
  initialized = 0;
  for (auto [i, spec] : llvm::enumerate(runnable.arguments)) {
    RankedTensorType type = spec.type;
    Location argLoc = spec.loc;
    const std::string &name = spec.name;
    SmallVector<std::string> names{name};
    names.append(spec.aliases.begin(), spec.aliases.end());
    Provided *found = nullptr;
    std::string foundName;
    for (const std::string &candidate : names) {
      auto it = provided.find(candidate);
      if (it == provided.end())
        continue;
      if (found)
        return emitError(argLoc)
               << "both '" << foundName << "' and '" << candidate
               << "' are given for the same tied parameter";
      found = &it->second;
      foundName = candidate;
    }
    if (found) {
      found->used = true;
      auto t = fromHost(found->tensor, type, foundName, found->file, argLoc);
      if (failed(t))
        return failure();
      args.push_back(std::move(*t));
      continue;
    }
    if (spec.kind == sabi::Argument::param) {
      auto t = initializeParameter(name, spec.init, type, seed, argLoc);
      if (failed(t))
        return failure();
      args.push_back(std::move(*t));
      ++initialized;
      continue;
    }
    // The interpreter is one process: rank 0, as the binary run alone.
    if (spec.kind == sabi::Argument::opt_state ||
        spec.kind == sabi::Argument::accumulator ||
        spec.kind == sabi::Argument::step ||
        spec.kind == sabi::Argument::rank) {
      args.push_back(zerosOf(type));
      continue;
    }
    // A hyperparameter not given takes its default, as in the runtime.
    if (spec.defaultValue && spec.kind == sabi::Argument::hyper &&
        type.getRank() == 0 && isa<FloatType>(type.getElementType())) {
      Tensor t = zerosOf(type);
      t.f[0] = spec.defaultValue.getValueAsDouble();
      args.push_back(std::move(t));
      continue;
    }
    return emitError(argLoc) << "no tensor named '"
                             << (name.empty() ? "#" + std::to_string(i) : name)
                             << "' for argument #" << i << " of @" << function
                             << " (" << type << "); give it with --input";
  }
  return args;
}

void sinter::interp::warnUnused(const ProvidedTensors &provided, Location loc,
                                StringRef function) {
  SmallVector<std::string> unused;
  for (auto &entry : provided)
    // A step trace's own tensors (its steps' writes, its program) are no
    // arguments: a trace is also a run's input.
    if (!entry.second.used && abi::isTraceArgumentName(entry.first()))
      unused.push_back(entry.first().str());
  if (!unused.empty()) {
    llvm::sort(unused);
    auto diag = emitWarning(loc);
    diag << unused.size() << " given tensor(s) match no argument of @"
         << function << ": ";
    for (size_t k = 0; k < unused.size() && k < 5; ++k)
      diag << (k ? ", " : "") << unused[k];
    if (unused.size() > 5)
      diag << ", ...";
  }
}
