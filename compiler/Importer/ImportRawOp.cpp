//===- ImportRawOp.cpp - raw sgraph ops in a model description -----------===//
//
// A layer `op { type: "matmul" attr { name: "transpose_rhs" b: true } }`
// applies any single-result sgraph op to the layer's inputs. Nothing here is
// specific to one op: the op is looked up among the registered sgraph ops,
// its operand count is read from its traits, the attributes are converted
// by the kind of value the user wrote and stored through the op's own
// property conversion, and the result type comes from the op's type
// inference (or from `result` for the few ops that cannot infer it). The op
// is then verified, so every constraint of docs/dialects/sgraph.md applies.
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer/ModelImporter.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace sinter;
using namespace sinter::importer;

namespace {

/// The fixed operand count of an op, or nullopt when it is variadic.
std::optional<unsigned> fixedOperandCount(RegisteredOperationName name) {
  if (name.hasTrait<OpTrait::ZeroOperands>())
    return 0;
  if (name.hasTrait<OpTrait::OneOperand>())
    return 1;
#define SINTER_N_OPERANDS(N)                                                   \
  if (name.hasTrait<OpTrait::NOperands<N>::Impl>())                            \
    return N;
  SINTER_N_OPERANDS(2)
  SINTER_N_OPERANDS(3)
  SINTER_N_OPERANDS(4)
  SINTER_N_OPERANDS(5)
  SINTER_N_OPERANDS(6)
#undef SINTER_N_OPERANDS
  return std::nullopt;
}

/// Owns a properties buffer of an op that does not exist yet.
class PropertiesStorage {
public:
  explicit PropertiesStorage(OperationName name)
      : name(name), storage((name.getOpPropertyByteSize() + 7) / 8 + 1) {
    name.initOpProperties(get(), OpaqueProperties(nullptr));
  }
  ~PropertiesStorage() { name.destroyOpProperties(get()); }
  OpaqueProperties get() { return OpaqueProperties(storage.data()); }

private:
  OperationName name;
  std::vector<uint64_t> storage;
};

} // namespace

Value ModelImporter::emitRawOp(const Node &layer, const Node &opNode,
                               ArrayRef<Value> inputs,
                               const LayerContext &ctx) {
  const auto &spec = static_cast<const model::Op &>(*opNode.msg);
  Location typeLoc = fieldLoc(opNode, "type");
  Location loc = layerLoc(layer, ctx);

  // The op.
  std::string opName = spec.type();
  if (!StringRef(opName).starts_with("sgraph."))
    opName = "sgraph." + opName;
  std::optional<RegisteredOperationName> name =
      RegisteredOperationName::lookup(opName, &context);
  if (!name) {
    std::vector<std::string> known;
    for (RegisteredOperationName op : context.getRegisteredOperations())
      if (op.getDialectNamespace() == "sgraph")
        known.push_back(op.stripDialect().str());
    auto diag = error(typeLoc);
    diag << "unknown op type '" << spec.type() << "'";
    StringRef typed(spec.type());
    typed.consume_front("sgraph.");
    addHint(diag, typed, known);
    return {};
  }
  if (!name->hasTrait<OpTrait::OneResult>()) {
    error(typeLoc) << opName
                   << " has several results; a layer can apply only ops with "
                      "one result";
    return {};
  }
  if (opName == "sgraph.dropout") {
    error(typeLoc) << "use a dropout layer rather than a raw sgraph.dropout "
                      "(it needs the step and a seed)";
    return {};
  }
  std::optional<unsigned> arity = fixedOperandCount(*name);
  if (arity && *arity != inputs.size()) {
    error(loc) << opName << " takes " << *arity << " operand"
               << (*arity == 1 ? "" : "s") << ", the layer gives it "
               << inputs.size();
    return {};
  }

  // The result type, when the user gives one.
  RankedTensorType resultType;
  if (spec.has_result()) {
    Node resultNode = child(opNode, "result");
    Type element = elementType(spec.result().dtype(), floatType,
                               fieldLoc(resultNode, "dtype"));
    SmallVector<int64_t> shape(spec.result().shape().begin(),
                               spec.result().shape().end());
    resultType = tensorType(shape, element, true, resultNode.loc);
    if (!resultType)
      return {};
  }

  // Attributes, by the kind of value written.
  NamedAttrList attrs;
  ArrayRef<StringAttr> known = name->getAttributeNames();
  for (int i = 0; i < spec.attr_size(); ++i) {
    const model::Attr &a = spec.attr(i);
    Location attrLoc = fieldLoc(opNode, "attr", i);
    bool isKnown = llvm::any_of(
        known, [&](StringAttr k) { return k.getValue() == a.name(); });
    if (!isKnown || a.name() == "value") {
      auto diag = error(attrLoc);
      diag << opName << " has no attribute '" << a.name() << "'";
      SmallVector<StringRef> names;
      for (StringAttr k : known)
        if (k.getValue() != "value")
          names.push_back(k.getValue());
      if (!names.empty())
        diag << "; it has: " << llvm::join(names, ", ");
      return {};
    }
    int set = a.has_i() + a.has_f() + a.has_b() + a.has_s() +
              (a.ints_size() > 0);
    if (set != 1) {
      error(attrLoc) << "attribute '" << a.name()
                     << "' needs exactly one of i, f, b, s, ints";
      return {};
    }
    if (attrs.get(a.name())) {
      error(attrLoc) << "attribute '" << a.name() << "' is given twice";
      return {};
    }
    Attribute value;
    if (a.has_i())
      value = builder.getI64IntegerAttr(a.i());
    else if (a.has_f())
      value = builder.getF64FloatAttr(a.f());
    else if (a.has_b())
      value = builder.getBoolAttr(a.b());
    else if (a.has_s())
      value = builder.getStringAttr(a.s());
    else
      value = builder.getDenseI64ArrayAttr(
          SmallVector<int64_t>(a.ints().begin(), a.ints().end()));
    attrs.set(a.name(), value);
  }

  // A constant's elements.
  if (opName == "sgraph.constant") {
    if (!resultType) {
      error(opNode.loc) << "a constant needs `result { shape: [...] dtype: ... }`";
      return {};
    }
    int64_t count = resultType.getNumElements();
    if (spec.value_size() != 1 && spec.value_size() != count) {
      error(opNode.loc) << "a constant of type " << resultType << " needs 1 or "
                        << count << " values, got " << spec.value_size();
      return {};
    }
    Type element = resultType.getElementType();
    SmallVector<Attribute> elements;
    for (auto [index, v] : llvm::enumerate(spec.value())) {
      // The value's own place when the parser kept one, else the field's.
      Location valueLoc = fieldLoc(opNode, "value", static_cast<int>(index));
      if (valueLoc == opNode.loc)
        valueLoc = fieldLoc(opNode, "value");
      if (auto floatType = dyn_cast<FloatType>(element)) {
        // A finite value that rounds to an infinity in the element type
        // would be a silently different constant (70000 in FLOAT16).
        APFloat rounded(v);
        bool lost;
        rounded.convert(floatType.getFloatSemantics(),
                        APFloat::rmNearestTiesToEven, &lost);
        if (std::isfinite(v) && rounded.isInfinity()) {
          APFloat largest = APFloat::getLargest(floatType.getFloatSemantics());
          error(valueLoc) << "value " << v << " overflows " << element
                          << " (its largest finite value is "
                          << largest.convertToDouble() << ")";
          return {};
        }
        elements.push_back(builder.getFloatAttr(element, v));
        continue;
      }
      if (v != std::trunc(v) || !(std::abs(v) < 9.0e15)) {
        error(valueLoc) << "value " << v << " is not an integer";
        return {};
      }
      if (element.isInteger(1)) {
        if (v != 0 && v != 1) {
          error(valueLoc) << "value " << int64_t(v) << " is not a BOOL (0 or 1)";
          return {};
        }
        elements.push_back(builder.getBoolAttr(v != 0));
        continue;
      }
      // A value the element type cannot hold would wrap (3000000000 in
      // INT32 is -1294967296).
      unsigned width = element.getIntOrFloatBitWidth();
      auto value = static_cast<int64_t>(v);
      if (width < 64 && (value < -(int64_t(1) << (width - 1)) ||
                         value >= (int64_t(1) << (width - 1)))) {
        error(valueLoc) << "value " << value << " does not fit " << element
                        << " (its range is [" << -(int64_t(1) << (width - 1))
                        << ", " << (int64_t(1) << (width - 1)) - 1 << "])";
        return {};
      }
      elements.push_back(builder.getIntegerAttr(element, value));
    }
    attrs.set("value", elements.size() == 1
                           ? DenseElementsAttr::get(resultType, elements[0])
                           : DenseElementsAttr::get(resultType, elements));
  } else if (spec.value_size() > 0) {
    error(fieldLoc(opNode, "value")) << "only a constant takes values";
    return {};
  }

  // Store the attributes through the op's property conversion, which checks
  // their kinds, then infer the result type from operands and properties.
  DictionaryAttr dict = attrs.getDictionary(&context);
  PropertiesStorage properties(*name);
  // Ops without attributes have no properties to convert into.
  if (name->getOpPropertyByteSize() > 0 &&
      failed(name->setOpPropertiesFromAttribute(
          *name, properties.get(), dict, [&]() {
            auto diag = error(loc);
            diag << "an attribute of " << opName << " has the wrong kind: ";
            return diag;
          })))
    return {};

  Type type = resultType;
  if (auto *infer = name->getInterface<InferTypeOpInterface>()) {
    SmallVector<Type, 1> inferred;
    if (failed(inferTypes(opName, loc, [&]() {
          return infer->inferReturnTypes(&context, loc, inputs, dict,
                                         properties.get(), {}, inferred);
        })))
      return {};
    if (resultType && inferred.front() != resultType) {
      error(fieldLoc(opNode, "result"))
          << "result is given as " << resultType << " but " << opName
          << " produces " << inferred.front();
      return {};
    }
    type = inferred.front();
  } else if (!resultType) {
    error(opNode.loc) << opName
                      << " cannot infer its result type; give `result { "
                         "shape: [...] dtype: ... }`";
    return {};
  }

  OperationState state(loc, *name);
  state.addOperands(inputs);
  state.addTypes(type);
  if (name->getOpPropertyByteSize() > 0)
    state.propertiesAttr = dict;
  Operation *op = builder.create(state);
  ++opCount;
  if (failed(mlir::verify(op))) {
    op->erase();
    return {};
  }
  // Where a reshape puts the batch: the -1 the file wrote (BatchAxes.h).
  if (isa<sgraph::ReshapeOp>(op) && spec.has_result())
    if (auto d = llvm::find(spec.result().shape(), -1);
        d != spec.result().shape().end())
      reshapeBatchAxes[op] = std::distance(spec.result().shape().begin(), d);
  return op->getResult(0);
}
