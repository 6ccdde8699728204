//===- RunFunction.cpp - run a function on tensors from files ------------===//

#include "compiler/Interpreter/RunFunction.h"

#include "compiler/Support/Diagnostics.h"
#include "compiler/Interpreter/Initializers.h"
#include "compiler/Interpreter/Interpreter.h"
#include "dialects/Graph/GraphOps.h"
#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/Npy.h"
#include "runtime/Formats/SafeTensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;
using namespace sinter;
using namespace sinter::interp;
using formats::DType;
using formats::HostTensor;

namespace {

/// A tensor from a file, with where it came from.
struct Provided {
  HostTensor tensor;
  std::string file;
  bool used = false;
};

/// Reports a file error at the file it is about: the formats' messages
/// start with "<path>: ".
LogicalResult fail(MLIRContext *context, const std::string &path,
                   const absl::Status &status) {
  std::string_view message = formats::toStd(status.message());
  if (message.substr(0, path.size() + 2) == path + ": ")
    message.remove_prefix(path.size() + 2);
  return emitError(FileLineColLoc::get(context, path, 0, 0)) << message;
}

template <typename T> T load(const uint8_t *bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

template <typename T> void store(uint8_t *bytes, T value) {
  std::memcpy(bytes, &value, sizeof(T));
}

std::optional<ElementKind> kindOfDType(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return ElementKind::F64;
  case DType::F32:
    return ElementKind::F32;
  case DType::F16:
    return ElementKind::F16;
  case DType::BF16:
    return ElementKind::BF16;
  case DType::I64:
    return ElementKind::I64;
  case DType::I32:
    return ElementKind::I32;
  case DType::Bool:
    return ElementKind::I1;
  default:
    return std::nullopt;
  }
}

DType dtypeOfKind(ElementKind kind) {
  switch (kind) {
  case ElementKind::F64:
    return DType::F64;
  case ElementKind::F32:
    return DType::F32;
  case ElementKind::F16:
    return DType::F16;
  case ElementKind::BF16:
    return DType::BF16;
  case ElementKind::I64:
    return DType::I64;
  case ElementKind::I32:
    return DType::I32;
  case ElementKind::I1:
    return DType::Bool;
  }
  return DType::F32;
}

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
  Tensor t = zerosOf(type);
  const uint8_t *bytes = host.data.data();
  for (int64_t k = 0, n = t.numElements(); k < n; ++k) {
    switch (t.kind) {
    case ElementKind::F64:
      t.f[k] = load<double>(bytes + 8 * k);
      break;
    case ElementKind::F32:
      t.f[k] = load<float>(bytes + 4 * k);
      break;
    case ElementKind::BF16:
      t.f[k] = bf16BitsToFloat(load<uint16_t>(bytes + 2 * k));
      break;
    case ElementKind::F16:
      t.f[k] = f16BitsToFloat(load<uint16_t>(bytes + 2 * k));
      break;
    case ElementKind::I64:
      t.i[k] = load<int64_t>(bytes + 8 * k);
      break;
    case ElementKind::I32:
      t.i[k] = load<int32_t>(bytes + 4 * k);
      break;
    case ElementKind::I1:
      t.i[k] = bytes[k] != 0;
      break;
    }
  }
  return t;
}

HostTensor toHost(const Tensor &t) {
  HostTensor host;
  host.dtype = dtypeOfKind(t.kind);
  host.shape = t.shape;
  int64_t n = t.numElements();
  host.data.resize(n * formats::dtypeByteSize(host.dtype));
  uint8_t *bytes = host.data.data();
  for (int64_t k = 0; k < n; ++k) {
    switch (t.kind) {
    case ElementKind::F64:
      store<double>(bytes + 8 * k, t.f[k]);
      break;
    case ElementKind::F32:
      store<float>(bytes + 4 * k, static_cast<float>(t.f[k]));
      break;
    case ElementKind::BF16:
      store<uint16_t>(bytes + 2 * k,
                      floatToBf16Bits(static_cast<float>(t.f[k])));
      break;
    case ElementKind::F16:
      store<uint16_t>(bytes + 2 * k, floatToF16Bits(static_cast<float>(t.f[k])));
      break;
    case ElementKind::I64:
      store<int64_t>(bytes + 8 * k, t.i[k]);
      break;
    case ElementKind::I32:
      store<int32_t>(bytes + 4 * k, static_cast<int32_t>(t.i[k]));
      break;
    case ElementKind::I1:
      bytes[k] = t.i[k] != 0;
      break;
    }
  }
  return host;
}

/// Reads every --input into `provided`, by name.
LogicalResult readInputs(ArrayRef<std::string> inputs, Location loc,
                         llvm::StringMap<Provided> &provided) {
  auto add = [&](const std::string &name, HostTensor tensor,
                 const std::string &file) -> LogicalResult {
    auto [it, inserted] =
        provided.try_emplace(name, Provided{std::move(tensor), file});
    if (!inserted)
      return emitError(FileLineColLoc::get(loc.getContext(), file, 0, 0))
             << "tensor '" << name << "' is also given by "
             << it->second.file;
    return success();
  };
  for (const std::string &spec : inputs) {
    StringRef text(spec);
    if (text.ends_with(".safetensors")) {
      auto file = formats::readSafeTensors(spec);
      if (!file.ok())
        return fail(loc.getContext(), spec, file.status());
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
        return fail(loc.getContext(), path, tensor.status());
      if (failed(add(name, std::move(*tensor), path)))
        return failure();
      continue;
    }
    return emitError(FileLineColLoc::get(loc.getContext(), spec, 0, 0))
           << "--input takes .safetensors files, x.npy or name=x.npy";
  }
  return success();
}

} // namespace

LogicalResult sinter::runFunction(ModuleOp module, const RunOptions &options) {
  Location loc = module.getLoc();
  auto fn = module.lookupSymbol<func::FuncOp>(options.function);
  if (!fn || fn.isExternal()) {
    std::string names;
    for (auto f : module.getOps<func::FuncOp>())
      names += (names.empty() ? "" : ", ") + f.getSymName().str();
    return emitError(loc) << "there is no function @" << options.function
                          << " to run (the module has: " << names << ")";
  }
  llvm::StringMap<Provided> provided;
  if (failed(readInputs(options.inputs, loc, provided)))
    return failure();

  uint64_t seed = 1337;
  if (auto training =
          module->getAttrOfType<DictionaryAttr>(sgraph::attr::kTraining))
    if (auto s = training.getAs<IntegerAttr>("seed"))
      seed = s.getInt();

  std::vector<Tensor> args;
  int initialized = 0;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto type = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
    Location argLoc = fn.getArgument(i).getLoc();
    std::string name = sgraph::argumentName(fn, i);
    SmallVector<std::string> names{name};
    if (auto aliases = fn.getArgAttrOfType<ArrayAttr>(i, sgraph::attr::kAliases))
      for (auto alias : aliases.getAsRange<StringAttr>())
        names.push_back(alias.str());
    Provided *found = nullptr;
    std::string foundName;
    for (const std::string &candidate : names) {
      auto it = provided.find(candidate);
      if (it == provided.end())
        continue;
      if (found)
        return emitError(argLoc) << "both '" << foundName << "' and '"
                                 << candidate
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
    if (fn.getArgAttr(i, sgraph::attr::kParam)) {
      auto t = initializeParameter(
          name, fn.getArgAttrOfType<DictionaryAttr>(i, sgraph::attr::kInit),
          type, seed, argLoc);
      if (failed(t))
        return failure();
      args.push_back(std::move(*t));
      ++initialized;
      continue;
    }
    if (fn.getArgAttr(i, sgraph::attr::kOptState) ||
        fn.getArgAttr(i, sgraph::attr::kStep)) {
      args.push_back(zerosOf(type));
      continue;
    }
    // A hyperparameter not given takes its default, as in the runtime.
    if (auto value =
            fn.getArgAttrOfType<FloatAttr>(i, sgraph::attr::kDefault);
        value && fn.getArgAttr(i, sgraph::attr::kHyper) &&
        type.getRank() == 0 && isa<FloatType>(type.getElementType())) {
      Tensor t = zerosOf(type);
      t.f[0] = value.getValueAsDouble();
      args.push_back(std::move(t));
      continue;
    }
    return emitError(argLoc) << "no tensor named '"
                             << (name.empty() ? "#" + std::to_string(i) : name)
                             << "' for argument #" << i << " of @"
                             << options.function << " (" << type
                             << "); give it with --input";
  }
  if (initialized)
    llvm::errs() << "note: " << initialized
                 << " parameter(s) not given were initialized from their "
                    "initializers (seed "
                 << seed << ")\n";
  SmallVector<std::string> unused;
  for (auto &entry : provided)
    if (!entry.second.used)
      unused.push_back(entry.first().str());
  if (!unused.empty()) {
    llvm::sort(unused);
    auto diag = emitWarning(loc);
    diag << unused.size() << " given tensor(s) match no argument of @"
         << options.function << ": ";
    for (size_t k = 0; k < unused.size() && k < 5; ++k)
      diag << (k ? ", " : "") << unused[k];
    if (unused.size() > 5)
      diag << ", ...";
  }

  auto results = interp::runFunction(fn, std::move(args));
  if (failed(results))
    return failure();

  formats::SafeTensorsFile out;
  for (auto [i, t] : llvm::enumerate(*results)) {
    std::string name = sgraph::resultName(fn, i);
    if (name.empty())
      name = "result." + std::to_string(i);
    // Enough digits to read the exact value back (9 for f32, 17 for f64).
    if (t.rank() == 0 && t.isFloat())
      llvm::outs() << name << " = "
                   << llvm::format(t.kind == ElementKind::F64 ? "%.17g" : "%.9g",
                                   t.f[0])
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
                       : fail(module.getContext(), options.output, status);
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
      return fail(module.getContext(), path.str().str(), status);
  }
  return success();
}
