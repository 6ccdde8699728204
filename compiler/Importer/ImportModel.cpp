//===- ImportModel.cpp - model description to sgraph ---------------------===//
//
// Parsing, locations, scopes, names and parameters. A model is imported in
// one pass over its layers:
//
//   1. The text is parsed with protobuf's TextFormat, recording where every
//      field is written (ParseInfoTree), so each op and each diagnostic can
//      point at model.pbtxt:line:col.
//   2. Inputs become arguments of @forward; each scope (the model's layers,
//      or a block's) is sorted by the names its layers read, which reports
//      dangling names, duplicates and cycles, and is emitted in that order.
//      Blocks and `repeat` expand in place with their own parameter-name
//      prefixes, under limits on depth and total size.
//   3. Parameters become arguments in front of the inputs, named after
//      PyTorch's state_dict; loss and metrics become the results.
//
// Layer kinds live in ImportLayers.cpp, raw ops in ImportRawOp.cpp, the loss,
// metrics and training section in ImportTraining.cpp.
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer/ModelImporter.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <google/protobuf/io/tokenizer.h>

using namespace mlir;
using namespace sinter;
using namespace sinter::importer;

namespace {

/// Forwards protobuf's parse errors as MLIR diagnostics; keeps only the
/// first (later ones are usually consequences of it).
class ParseErrorCollector : public google::protobuf::io::ErrorCollector {
public:
  explicit ParseErrorCollector(ModelImporter &importer) : importer(importer) {}

  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string &message) override {
    if (reported)
      return;
    reported = true;
    // protobuf counts from 0; line -1 means "no position".
    importer.error(importer.fileLoc(std::max(line, 0) + 1,
                                    std::max(column, 0) + 1))
        << message;
  }

  void AddWarning(int, google::protobuf::io::ColumnNumber,
                  const std::string &) override {}

  bool reported = false;

private:
  ModelImporter &importer;
};

/// A name users write for a layer, block or input: letters, digits, '_',
/// '-' and dots between non-empty parts.
bool isValidName(StringRef name) {
  if (name.empty() || name.front() == '.' || name.back() == '.' ||
      name.contains(".."))
    return false;
  return llvm::all_of(name, [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '.' || c == '-';
  });
}

} // namespace

std::string sinter::importer::formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

std::string sinter::importer::closestName(StringRef name,
                                          ArrayRef<std::string> known) {
  std::string best;
  unsigned bestDistance = std::max<unsigned>(3, name.size() / 3) + 1;
  for (const std::string &candidate : known) {
    unsigned d = name.edit_distance(candidate, true, bestDistance);
    if (d < bestDistance) {
      bestDistance = d;
      best = candidate;
    }
  }
  return best;
}

void sinter::importer::addHint(InFlightDiagnostic &diag, StringRef name,
                               ArrayRef<std::string> known) {
  std::string hint = closestName(name, known);
  if (!hint.empty())
    diag << "; did you mean '" << hint << "'?";
}

ModelImporter::ModelImporter(MLIRContext &context, StringRef filename,
                             const ImportOptions &options)
    : context(context), builder(&context), filename(filename.str()),
      options(options), root{nullptr, nullptr, UnknownLoc::get(&context)} {
  context.loadDialect<sgraph::SGraphDialect, func::FuncDialect>();
}

//===----------------------------------------------------------------------===//
// Diagnostics and locations
//===----------------------------------------------------------------------===//

InFlightDiagnostic ModelImporter::error(Location loc) {
  return mlir::emitError(loc);
}

Location ModelImporter::fileLoc(int line, int column) const {
  return FileLineColLoc::get(&context, filename, line, column);
}

Location ModelImporter::fieldLoc(const Node &node, StringRef field,
                                 int index) const {
  if (!node.msg || !node.tree)
    return node.loc;
  const auto *descriptor = node.msg->GetDescriptor()->FindFieldByName(
      std::string(field));
  if (!descriptor)
    return node.loc;
  // protobuf aborts on an index outside a repeated field: a repeated field
  // is located at its first element unless an index is given.
  if (descriptor->is_repeated()) {
    int size = node.msg->GetReflection()->FieldSize(*node.msg, descriptor);
    if (index < 0)
      index = 0;
    if (index >= size)
      return node.loc;
  } else {
    index = -1;
  }
  auto where = node.tree->GetLocation(descriptor, index);
  if (where.line < 0)
    return node.loc;
  return fileLoc(where.line + 1, where.column + 1);
}

Node ModelImporter::child(const Node &node, StringRef field, int index) const {
  Node result{nullptr, nullptr, fieldLoc(node, field, index)};
  if (!node.msg)
    return result;
  const auto *descriptor = node.msg->GetDescriptor()->FindFieldByName(
      std::string(field));
  if (!descriptor ||
      descriptor->type() != google::protobuf::FieldDescriptor::TYPE_MESSAGE)
    return result;
  const auto *reflection = node.msg->GetReflection();
  if (descriptor->is_repeated() &&
      (index < 0 || index >= reflection->FieldSize(*node.msg, descriptor)))
    return result;
  result.msg = descriptor->is_repeated()
                   ? &reflection->GetRepeatedMessage(*node.msg, descriptor,
                                                     index)
                   : &reflection->GetMessage(*node.msg, descriptor);
  if (node.tree)
    result.tree = node.tree->GetTreeForNested(
        descriptor, descriptor->is_repeated() ? index : -1);
  return result;
}

Location ModelImporter::named(StringRef name, Location loc) const {
  return NameLoc::get(StringAttr::get(&context, name), loc);
}

Value ModelImporter::lookup(const Bindings &bindings, StringRef name,
                            Location loc, StringRef what) {
  auto it = bindings.find(name);
  if (it != bindings.end())
    return it->second;
  std::vector<std::string> known;
  for (const auto &entry : bindings)
    known.push_back(entry.first().str());
  llvm::sort(known);
  auto diag = error(loc);
  diag << what << " '" << name << "' is not defined";
  addHint(diag, name, known);
  return {};
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

Type ModelImporter::elementType(model::DType dtype, Type fallback,
                                Location loc) {
  switch (dtype) {
  case model::DTYPE_UNSPECIFIED:
    return fallback;
  case model::FLOAT32:
    return builder.getF32Type();
  case model::FLOAT64:
    return builder.getF64Type();
  case model::BFLOAT16:
    return builder.getBF16Type();
  case model::FLOAT16:
    return builder.getF16Type();
  case model::INT32:
    return builder.getI32Type();
  case model::INT64:
    return builder.getI64Type();
  case model::BOOL:
    return builder.getI1Type();
  }
  error(loc) << "unknown dtype " << static_cast<int>(dtype);
  return {};
}

RankedTensorType ModelImporter::tensorType(ArrayRef<int64_t> shape,
                                           Type elementType, bool allowBatch,
                                           Location loc) {
  if (!elementType)
    return {};
  if (static_cast<int64_t>(shape.size()) > ImportLimits::kMaxRank) {
    error(loc) << "rank " << shape.size() << " exceeds the limit of "
               << ImportLimits::kMaxRank;
    return {};
  }
  SmallVector<int64_t> dims;
  int64_t elements = 1;
  bool sawBatch = false;
  for (int64_t d : shape) {
    if (d == -1 && allowBatch) {
      if (sawBatch) {
        error(loc) << "shape has more than one batch dimension (-1)";
        return {};
      }
      sawBatch = true;
      d = batchSize;
    } else if (d < 1 || d > ImportLimits::kMaxDimSize) {
      error(loc) << "dimension " << d << " is out of range [1, "
                 << ImportLimits::kMaxDimSize << "]"
                 << (allowBatch ? " (use -1 for the batch dimension)" : "");
      return {};
    }
    if (__builtin_mul_overflow(elements, d, &elements) ||
        elements > ImportLimits::kMaxElements) {
      error(loc) << "shape has more than " << ImportLimits::kMaxElements
                 << " elements";
      return {};
    }
    dims.push_back(d);
  }
  return RankedTensorType::get(dims, elementType);
}

Value ModelImporter::zerosConstant(RankedTensorType type, Location loc) {
  ++opCount;
  return builder.create<sgraph::ConstantOp>(
      loc, DenseElementsAttr::get(
               type, builder.getFloatAttr(type.getElementType(), 0.0)));
}

LogicalResult ModelImporter::inferTypes(StringRef opName, Location loc,
                                        function_ref<LogicalResult()> infer) {
  // Inference reports without naming the op; say which op of the layer it
  // was.
  std::string message;
  LogicalResult result = success();
  {
    ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    result = infer();
  }
  if (failed(result))
    error(loc) << opName << ": " << message;
  return result;
}

Value ModelImporter::scalarConstant(Type elementType, double value,
                                    Location loc) {
  ++opCount;
  return sgraph::buildScalarConstant(builder, loc, elementType, value);
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

Value ModelImporter::createParam(const LayerContext &ctx, StringRef localName,
                                 ArrayRef<int64_t> shape, InitSpec init,
                                 Location loc) {
  // An empty local name is the layer's own name (parameter layers).
  std::string name = localName.empty() ? StringRef(ctx.prefix).drop_back().str()
                                       : ctx.prefix + localName.str();
  if (paramIndex.count(name)) {
    error(loc) << "parameter '" << name
               << "' is defined twice (two layers produce the same name)";
    return {};
  }
  RankedTensorType type = tensorType(shape, floatType, false, loc);
  if (!type)
    return {};
  Value arg = body->insertArgument(params.size(), type, loc);
  paramIndex[name] = params.size();
  params.push_back({name, arg, init, ctx.frozen, {}});
  return arg;
}

Value ModelImporter::createBuffer(const LayerContext &ctx, StringRef localName,
                                  ArrayRef<int64_t> shape, InitSpec init,
                                  Location loc) {
  LayerContext frozen = ctx;
  frozen.frozen = true;
  Value arg = createParam(frozen, localName, shape, init, loc);
  if (arg)
    params.back().buffer = true;
  return arg;
}

void ModelImporter::setBufferUpdate(Value buffer, Value update) {
  for (ParamInfo &info : params)
    if (info.value == buffer)
      info.update = update;
}

Value ModelImporter::findParam(StringRef fullName) const {
  auto it = paramIndex.find(fullName);
  return it == paramIndex.end() ? Value() : params[it->second].value;
}

void ModelImporter::addAlias(Value param, StringRef alias) {
  for (ParamInfo &info : params)
    if (info.value == param)
      info.aliases.push_back(alias.str());
}

bool ModelImporter::checkInit(const Node &node, StringRef field, bool isSet,
                              const model::Init &init) {
  if (!isSet)
    return true;
  Location loc = fieldLoc(node, field);
  switch (init.kind_case()) {
  case model::Init::kNormalStd:
    if (!(init.normal_std() >= 0) || !std::isfinite(init.normal_std())) {
      error(loc) << "normal_std must be a finite number >= 0, got "
                 << formatNumber(init.normal_std());
      return false;
    }
    return true;
  case model::Init::kUniformBound:
    if (!(init.uniform_bound() >= 0) || !std::isfinite(init.uniform_bound())) {
      error(loc) << "uniform_bound must be a finite number >= 0, got "
                 << formatNumber(init.uniform_bound());
      return false;
    }
    return true;
  case model::Init::kConstant:
    if (!std::isfinite(init.constant())) {
      error(loc) << "constant must be finite, got " << formatNumber(init.constant());
      return false;
    }
    return true;
  case model::Init::KIND_NOT_SET:
    error(loc) << "init needs one of normal_std, uniform_bound, constant";
    return false;
  }
  return false;
}

InitSpec ModelImporter::initFrom(const model::Init &init, bool isSet,
                                 InitSpec fallback) {
  if (!isSet)
    return fallback;
  switch (init.kind_case()) {
  case model::Init::kNormalStd:
    return {InitSpec::Normal, init.normal_std()};
  case model::Init::kUniformBound:
    return {InitSpec::Uniform, init.uniform_bound()};
  case model::Init::kConstant:
    return {InitSpec::Constant, init.constant()};
  case model::Init::KIND_NOT_SET:
    break;
  }
  return fallback;
}

Value ModelImporter::rankValue() {
  if (!rank)
    rank = body->addArgument(RankedTensorType::get({}, builder.getI64Type()),
                             root.loc);
  return rank;
}

Value ModelImporter::stepValue() {
  if (!step)
    step = body->addArgument(RankedTensorType::get({}, builder.getI64Type()),
                             root.loc);
  return step;
}

//===----------------------------------------------------------------------===//
// Scopes
//===----------------------------------------------------------------------===//

bool ModelImporter::emitScope(const Node &parent, StringRef layerField,
                              Bindings &bindings, const LayerContext &ctx,
                              StringRef scopeWhat) {
  const auto *descriptor = parent.msg->GetDescriptor()->FindFieldByName(
      std::string(layerField));
  int count = parent.msg->GetReflection()->FieldSize(*parent.msg, descriptor);

  // Names and duplicates.
  std::vector<Node> layers;
  llvm::StringMap<int> byName;
  for (int i = 0; i < count; ++i) {
    Node layer = child(parent, layerField, i);
    const auto &spec = static_cast<const model::Layer &>(*layer.msg);
    if (!spec.has_name()) {
      error(layer.loc) << "layer needs a name";
      return false;
    }
    if (!isValidName(spec.name())) {
      error(fieldLoc(layer, "name"))
          << "layer name '" << spec.name()
          << "' is not valid (letters, digits, '_', '-', and '.' between "
             "parts)";
      return false;
    }
    if (bindings.count(spec.name())) {
      error(fieldLoc(layer, "name"))
          << "layer name '" << spec.name() << "' is already used by "
          << scopeWhat;
      return false;
    }
    auto [it, inserted] = byName.try_emplace(spec.name(), i);
    if (!inserted) {
      error(fieldLoc(layer, "name"))
          << "layer name '" << spec.name() << "' is used twice";
      return false;
    }
    layers.push_back(layer);
  }

  // Each layer reads inputs of the scope or other layers; order the layers
  // so that every layer comes after those it reads, keeping file order where
  // the names allow it. A name that is neither is reported here.
  std::vector<SmallVector<int, 2>> deps(layers.size());
  for (auto [i, layer] : llvm::enumerate(layers)) {
    const auto &spec = static_cast<const model::Layer &>(*layer.msg);
    for (int j = 0; j < spec.input_size(); ++j) {
      const std::string &in = spec.input(j);
      auto it = byName.find(in);
      if (it != byName.end()) {
        deps[i].push_back(it->second);
        continue;
      }
      if (!bindings.count(in)) {
        std::vector<std::string> known;
        for (const auto &entry : bindings)
          known.push_back(entry.first().str());
        for (const auto &entry : byName)
          known.push_back(entry.first().str());
        llvm::sort(known);
        auto diag = error(fieldLoc(layer, "input", j));
        diag << "layer '" << spec.name() << "' reads '" << in
             << "', which is neither " << scopeWhat << " nor a layer";
        addHint(diag, in, known);
        return false;
      }
    }
  }

  // Iterative depth-first topological sort; a grey node met again closes a
  // cycle, reported with its path.
  enum class Mark { White, Grey, Black };
  std::vector<Mark> mark(layers.size(), Mark::White);
  std::vector<int> order;
  for (int start = 0; start < static_cast<int>(layers.size()); ++start) {
    if (mark[start] != Mark::White)
      continue;
    SmallVector<std::pair<int, size_t>> stack{{start, 0}};
    mark[start] = Mark::Grey;
    while (!stack.empty()) {
      auto &[node, next] = stack.back();
      if (next < deps[node].size()) {
        int dep = deps[node][next++];
        if (mark[dep] == Mark::Grey) {
          std::string path;
          bool inCycle = false;
          for (auto &frame : stack) {
            inCycle |= frame.first == dep;
            if (inCycle)
              path += static_cast<const model::Layer &>(*layers[frame.first].msg)
                          .name() +
                      " -> ";
          }
          path += static_cast<const model::Layer &>(*layers[dep].msg).name();
          error(layers[dep].loc) << "layers form a cycle: " << path;
          return false;
        }
        if (mark[dep] == Mark::White) {
          mark[dep] = Mark::Grey;
          stack.push_back({dep, 0});
        }
        continue;
      }
      mark[node] = Mark::Black;
      order.push_back(node);
      stack.pop_back();
    }
  }

  for (int i : order) {
    const Node &layer = layers[i];
    const auto &spec = static_cast<const model::Layer &>(*layer.msg);
    SmallVector<Value> ins;
    for (const std::string &in : spec.input()) {
      auto it = bindings.find(in);
      ins.push_back(it->second);
    }
    Value out = emitLayer(layer, ins, ctx);
    if (!out)
      return false;
    bindings[spec.name()] = out;
  }
  return true;
}

Value ModelImporter::emitLayer(const Node &layer, ArrayRef<Value> inputs,
                               const LayerContext &outer) {
  const auto &spec = static_cast<const model::Layer &>(*layer.msg);
  LayerContext ctx = outer;
  ctx.frozen |= spec.frozen();
  // Each instance of a recomputed layer is listed (by the name its ops'
  // locations carry); an enclosing recomputed instance covers inner ones.
  bool recompute = recomputeMarks && !outer.recomputed &&
                   (spec.recompute() || (recomputeRepeats && spec.has_repeat()));
  ctx.recomputed |= recompute;
  auto once = [&](ArrayRef<Value> ins) -> Value {
    Value y = emitLayerOnce(layer, ins, ctx);
    if (y && recompute)
      recomputedInstances.push_back(
          StringRef(ctx.prefix).drop_back().str());
    return y;
  };
  if (!spec.has_repeat()) {
    ctx.prefix = outer.prefix + spec.name() + ".";
    return once(inputs);
  }

  Location loc = fieldLoc(layer, "repeat");
  int64_t repeat = spec.repeat();
  if (repeat < 1 || repeat > ImportLimits::kMaxRepeat) {
    error(loc) << "repeat " << repeat << " is out of range [1, "
               << ImportLimits::kMaxRepeat << "]";
    return {};
  }
  if (inputs.size() != 1) {
    error(loc) << "a repeated layer needs exactly one input, got "
               << inputs.size();
    return {};
  }
  ctx.residualLayers = repeat;
  Value x = inputs.front();
  for (int64_t i = 0; i < repeat; ++i) {
    ctx.prefix = outer.prefix + spec.name() + "." + std::to_string(i) + ".";
    Value y = once(x);
    if (!y)
      return {};
    if (y.getType() != x.getType()) {
      error(loc) << "a repeated layer must keep its input's type "
                 << x.getType() << ", but produces " << y.getType();
      return {};
    }
    x = y;
  }
  return x;
}

Value ModelImporter::emitBlockCall(const Node &layer, StringRef blockName,
                                   ArrayRef<Value> inputs,
                                   const LayerContext &outer) {
  Location loc = fieldLoc(layer, "block");
  auto it = blocks.find(blockName);
  if (it == blocks.end()) {
    std::vector<std::string> known;
    for (const auto &entry : blocks)
      known.push_back(entry.first().str());
    auto diag = error(loc);
    diag << "block '" << blockName << "' is not defined";
    addHint(diag, blockName, known);
    return {};
  }
  if (llvm::is_contained(outer.blockStack, blockName)) {
    error(loc) << "block '" << blockName << "' uses itself (through "
               << llvm::join(outer.blockStack, " -> ") << " -> " << blockName
               << ")";
    return {};
  }
  if (static_cast<int64_t>(outer.blockStack.size()) >=
      ImportLimits::kMaxBlockDepth) {
    error(loc) << "blocks nest more than " << ImportLimits::kMaxBlockDepth
               << " deep";
    return {};
  }
  const Node &blockNode = it->second;
  const auto &block = static_cast<const model::Block &>(*blockNode.msg);
  if (block.input_size() != static_cast<int>(inputs.size())) {
    error(loc) << "block '" << blockName << "' takes " << block.input_size()
               << " inputs, the layer gives it " << inputs.size();
    return {};
  }
  if (block.layer_size() == 0) {
    error(blockNode.loc) << "block '" << blockName << "' has no layers";
    return {};
  }
  Bindings bindings;
  for (auto [i, in] : llvm::enumerate(block.input()))
    bindings[in] = inputs[i];
  LayerContext ctx = outer;
  ctx.blockStack.push_back(blockName.str());
  if (!emitScope(blockNode, "layer", bindings, ctx,
                 "an input of block '" + blockName.str() + "'"))
    return {};
  std::string output =
      block.has_output() ? block.output()
                         : block.layer(block.layer_size() - 1).name();
  return lookup(bindings, output, fieldLoc(blockNode, "output"),
                "block '" + blockName.str() + "' output");
}

//===----------------------------------------------------------------------===//
// The function
//===----------------------------------------------------------------------===//

namespace {

DictionaryAttr initAttr(Builder &b, const InitSpec &init) {
  switch (init.kind) {
  case InitSpec::Normal:
    return b.getDictionaryAttr({b.getNamedAttr("dist", b.getStringAttr("normal")),
                                b.getNamedAttr("std", b.getF64FloatAttr(init.value))});
  case InitSpec::Uniform:
    return b.getDictionaryAttr(
        {b.getNamedAttr("dist", b.getStringAttr("uniform")),
         b.getNamedAttr("bound", b.getF64FloatAttr(init.value))});
  case InitSpec::Constant:
    return b.getDictionaryAttr(
        {b.getNamedAttr("dist", b.getStringAttr("constant")),
         b.getNamedAttr("value", b.getF64FloatAttr(init.value))});
  }
  return {};
}

} // namespace

OwningOpRef<ModuleOp> ModelImporter::run(const model::Model &m,
                                         const ParseInfoTree &tree) {
  model = &m;
  root = Node{&m, &tree, fileLoc(1, 1)};
  OwningOpRef<ModuleOp> module = ModuleOp::create(root.loc);
  builder.setInsertionPointToEnd(module->getBody());

  // Element type, batch size and seed come first: layers need them.
  floatType = elementType(m.dtype(), builder.getF32Type(), fieldLoc(root, "dtype"));
  if (!floatType)
    return nullptr;
  if (!isa<FloatType>(floatType)) {
    error(fieldLoc(root, "dtype")) << "the model dtype must be a float type";
    return nullptr;
  }
  Node training = child(root, "training");
  batchSize = options.batchSize.value_or(m.training().batch_size());
  if (batchSize < 1 || batchSize > (int64_t(1) << 31)) {
    error(options.batchSize ? root.loc : fieldLoc(training, "batch_size"))
        << "batch_size " << batchSize << " is out of range [1, 2^31]";
    return nullptr;
  }
  trainingSeed = m.training().seed();
  // Recomputation marks (docs/Recompute.md): the model's policy, unless the
  // command line overrides it.
  std::string policy = m.training().recompute().policy() ==
                               model::Recompute::BLOCKS
                           ? "blocks"
                           : "model";
  if (options.recompute)
    policy = *options.recompute;
  recomputeRepeats = policy == "blocks";
  recomputeMarks = policy != "none";

  forward = builder.create<func::FuncOp>(root.loc, "forward",
                                         builder.getFunctionType({}, {}));
  body = forward.addEntryBlock();
  builder.setInsertionPointToEnd(body);

  // Inputs.
  Bindings bindings;
  for (int i = 0; i < m.input_size(); ++i) {
    Node node = child(root, "input", i);
    const model::Input &in = m.input(i);
    if (!isValidName(in.name())) {
      error(fieldLoc(node, "name"))
          << "input name '" << in.name() << "' is not valid";
      return nullptr;
    }
    if (bindings.count(in.name())) {
      error(fieldLoc(node, "name"))
          << "input '" << in.name() << "' is defined twice";
      return nullptr;
    }
    if (in.shape_size() == 0) {
      error(node.loc) << "input '" << in.name()
                      << "' needs a shape (-1 marks the batch dimension)";
      return nullptr;
    }
    // The runtime feeds inputs one batch of rows at a time along their
    // first axis (data loaders, micro-batches, data-parallel ranks).
    if (auto d = llvm::find(in.shape(), -1);
        d != in.shape().begin() && d != in.shape().end()) {
      error(fieldLoc(node, "shape", 0))
          << "input '" << in.name()
          << "': the batch dimension (-1) must be the first, along which "
             "batches, micro-batches and data-parallel ranks split the data; "
             "transpose inside the model (a raw transpose op) for another "
             "layout";
      return nullptr;
    }
    Type element = elementType(in.dtype(), builder.getF32Type(),
                               fieldLoc(node, "dtype"));
    SmallVector<int64_t> shape(in.shape().begin(), in.shape().end());
    RankedTensorType type =
        tensorType(shape, element, true, fieldLoc(node, "shape", 0));
    if (!type)
      return nullptr;
    Value arg = body->addArgument(type, node.loc);
    bindings[in.name()] = arg;
    inputs.push_back({in.name(), arg});
    // Without a -1 too: the runtime splits the first axis all the same.
    batchInputs.push_back({arg, 0});
  }

  // Blocks.
  for (int i = 0; i < m.block_size(); ++i) {
    Node node = child(root, "block", i);
    const model::Block &block = m.block(i);
    if (!isValidName(block.name())) {
      error(fieldLoc(node, "name"))
          << "block name '" << block.name() << "' is not valid";
      return nullptr;
    }
    if (!blocks.try_emplace(block.name(), node).second) {
      error(fieldLoc(node, "name"))
          << "block '" << block.name() << "' is defined twice";
      return nullptr;
    }
  }

  // Layers, loss and metrics.
  if (m.layer_size() == 0) {
    error(root.loc) << "the model has no layers";
    return nullptr;
  }
  if (!emitScope(root, "layer", bindings, LayerContext(), "a model input"))
    return nullptr;
  Value loss = emitLoss(root, bindings);
  if (!loss)
    return nullptr;
  SmallVector<Value> results{loss};
  SmallVector<std::string> resultNames{"loss"};
  if (!emitMetrics(root, bindings, results, resultNames))
    return nullptr;
  // Buffers' new values (batch normalization's running statistics) follow
  // the metrics, under the buffers' names.
  for (const ParamInfo &p : params)
    if (p.update) {
      results.push_back(p.update);
      resultNames.push_back(p.name);
    }
  DictionaryAttr trainingAttr = trainingConfig(root);
  if (!trainingAttr)
    return nullptr;
  builder.create<func::ReturnOp>(root.loc, results);
  placeDropoutBatches();
  warnBatchSumLoss(loss);

  // Signature and names.
  forward.setFunctionType(builder.getFunctionType(
      body->getArgumentTypes(), ValueRange(results).getTypes()));
  // Every argument's attributes at once: setting them one at a time makes
  // a new array of all of them each time, which the context keeps (memory
  // quadratic in the number of parameters).
  SmallVector<NamedAttrList> argAttrs(body->getNumArguments());
  for (const ParamInfo &p : params) {
    NamedAttrList &attrs =
        argAttrs[cast<BlockArgument>(p.value).getArgNumber()];
    attrs.append(sgraph::attr::kParam, builder.getStringAttr(p.name));
    attrs.append(sgraph::attr::kInit, initAttr(builder, p.init));
    if (p.frozen)
      attrs.append(sgraph::attr::kFrozen, builder.getUnitAttr());
    if (p.buffer)
      attrs.append(sgraph::attr::kBuffer, builder.getUnitAttr());
    if (!p.aliases.empty()) {
      SmallVector<StringRef> aliases(p.aliases.begin(), p.aliases.end());
      attrs.append(sgraph::attr::kAliases, builder.getStrArrayAttr(aliases));
    }
  }
  for (const auto &[name, value] : inputs)
    argAttrs[cast<BlockArgument>(value).getArgNumber()].append(
        sgraph::attr::kInput, builder.getStringAttr(name));
  if (step)
    argAttrs[cast<BlockArgument>(step).getArgNumber()].append(
        sgraph::attr::kStep, builder.getUnitAttr());
  if (rank)
    argAttrs[cast<BlockArgument>(rank).getArgNumber()].append(
        sgraph::attr::kRank, builder.getUnitAttr());
  SmallVector<DictionaryAttr> argDicts;
  for (NamedAttrList &attrs : argAttrs)
    argDicts.push_back(attrs.getDictionary(&context));
  forward.setAllArgAttrs(argDicts);
  for (auto [i, name] : llvm::enumerate(resultNames))
    forward.setResultAttr(i, sgraph::attr::kName, builder.getStringAttr(name));

  (*module)->setAttr(sgraph::attr::kTraining, trainingAttr);
  // A fraction of labels the step is fed (an input, maybe reshaped or
  // cast): the runtime can count them, so it weights the fraction by them.
  SmallVector<NamedAttribute> labelMetricAttrs;
  for (const LabelMetric &metric : labelMetrics) {
    Value labels = metric.labels;
    while (Operation *def = labels.getDefiningOp()) {
      if (!isa<sgraph::ReshapeOp, sgraph::CastOp>(def))
        break;
      labels = def->getOperand(0);
    }
    const auto *input = llvm::find_if(
        inputs, [&](const auto &in) { return in.second == labels; });
    // The runtime counts i64 and i32 labels (a bool one is left as it is).
    Type labelType = typeOf(labels).getElementType();
    if (input == inputs.end() ||
        !(labelType.isInteger(64) || labelType.isInteger(32)))
      continue;
    labelMetricAttrs.push_back(builder.getNamedAttr(
        metric.name,
        builder.getDictionaryAttr(
            {builder.getNamedAttr("labels",
                                  builder.getStringAttr(input->first)),
             builder.getNamedAttr("ignore",
                                  builder.getI64IntegerAttr(metric.ignore))})));
  }
  if (!labelMetricAttrs.empty())
    (*module)->setAttr(sgraph::attr::kMetricLabels,
                       builder.getDictionaryAttr(labelMetricAttrs));
  if (!recomputedInstances.empty()) {
    SmallVector<Attribute> names;
    for (const std::string &name : recomputedInstances)
      names.push_back(builder.getStringAttr(name));
    (*module)->setAttr("sinter.recompute_layers", builder.getArrayAttr(names));
  }
  if (m.has_name())
    module->setSymName(m.name());
  if (failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> sinter::importModel(StringRef text, StringRef filename,
                                          MLIRContext &context,
                                          const ImportOptions &options) {
  ModelImporter importer(context, filename, options);
  if (static_cast<int64_t>(text.size()) > ImportLimits::kMaxFileBytes) {
    importer.error(importer.fileLoc(1, 1))
        << "file is larger than " << (ImportLimits::kMaxFileBytes >> 20)
        << " MiB";
    return nullptr;
  }
  model::Model model;
  ParseInfoTree tree;
  ParseErrorCollector collector(importer);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  parser.WriteLocationsTo(&tree);
  parser.SetRecursionLimit(ImportLimits::kMaxMessageNesting);
  google::protobuf::io::ArrayInputStream stream(text.data(),
                                                static_cast<int>(text.size()));
  if (!parser.Parse(&stream, &model)) {
    if (!collector.reported)
      importer.error(importer.fileLoc(1, 1)) << "cannot parse the model";
    return nullptr;
  }
  return importer.run(model, tree);
}

OwningOpRef<ModuleOp> sinter::importModelFile(StringRef path,
                                              MLIRContext &context,
                                              const ImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buffer) {
    mlir::emitError(FileLineColLoc::get(&context, path, 0, 0))
        << "cannot read the file: " << buffer.getError().message();
    return nullptr;
  }
  return importModel((*buffer)->getBuffer(), path, context, options);
}
