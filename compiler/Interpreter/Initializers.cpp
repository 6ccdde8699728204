//===- Initializers.cpp - initial parameter values -----------------------===//

#include "compiler/Interpreter/Initializers.h"

#include "compiler/Interpreter/Interpreter.h"
#include "abi/Random.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace sinter::interp;

FailureOr<Tensor> sinter::interp::initializeParameter(StringRef name,
                                                      DictionaryAttr init,
                                                      RankedTensorType type,
                                                      uint64_t seed,
                                                      Location loc) {
  Tensor t = zerosOf(type);
  if (!t.isFloat())
    return emitError(loc) << "parameter '" << name << "' is not a float tensor";
  auto dist = init ? init.getAs<StringAttr>("dist") : StringAttr();
  if (!dist)
    return emitError(loc) << "parameter '" << name
                          << "' has no initializer (sgraph.init)";
  auto number = [&](StringRef key) -> std::optional<double> {
    if (auto attr = init.getAs<FloatAttr>(key))
      return attr.getValueAsDouble();
    return std::nullopt;
  };
  std::string nameText = name.str();
  uint64_t key = random::key(seed, random::nameHash(nameText.c_str()));
  int64_t n = t.numElements();
  if (dist.getValue() == "normal") {
    std::optional<double> std = number("std");
    if (!std)
      return emitError(loc) << "normal initializer of '" << name
                            << "' has no std";
    for (int64_t k = 0; k < n; ++k)
      t.f[k] = roundTo(t.kind, *std * random::normal(key, k));
  } else if (dist.getValue() == "uniform") {
    std::optional<double> bound = number("bound");
    if (!bound)
      return emitError(loc) << "uniform initializer of '" << name
                            << "' has no bound";
    for (int64_t k = 0; k < n; ++k)
      t.f[k] = roundTo(t.kind,
                       *bound * (2.0 * random::uniform53(key, k) - 1.0));
  } else if (dist.getValue() == "constant") {
    std::optional<double> value = number("value");
    if (!value)
      return emitError(loc) << "constant initializer of '" << name
                            << "' has no value";
    for (int64_t k = 0; k < n; ++k)
      t.f[k] = roundTo(t.kind, *value);
  } else {
    return emitError(loc) << "unknown initializer '" << dist.getValue()
                          << "' for parameter '" << name << "'";
  }
  return t;
}
