//===- TestUtil.cpp - helpers for the compiler's unit tests --------------===//

#include "TestUtil.h"

#include "compiler/Interpreter/Interpreter.h"
#include "dialects/Graph/GraphDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace sinter::test {

TestContext::TestContext() {
  context.loadDialect<sgraph::SGraphDialect, func::FuncDialect>();
  context.printOpOnDiagnostic(false);
  handlerId = context.getDiagEngine().registerHandler([this](Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return success();
  });
}

TestContext::~TestContext() {
  context.getDiagEngine().eraseHandler(handlerId);
}

OwningOpRef<ModuleOp> TestContext::parse(const std::string &text) {
  auto module = parseSourceString<ModuleOp>(text, &context);
  EXPECT_TRUE(module) << "cannot parse:\n" << text << "\n" << diagnostics;
  return module;
}

std::vector<interp::Tensor> TestContext::run(ModuleOp module,
                                             const std::string &name,
                                             std::vector<interp::Tensor> args) {
  auto fn = module.lookupSymbol<func::FuncOp>(name);
  EXPECT_TRUE(fn) << "no function @" << name;
  if (!fn)
    return {};
  auto results = interp::runFunction(fn, std::move(args));
  EXPECT_TRUE(succeeded(results)) << diagnostics;
  if (failed(results))
    return {};
  return std::move(*results);
}

interp::Tensor floats(interp::ElementKind kind, std::vector<int64_t> shape,
                      std::vector<double> values) {
  interp::Tensor t(kind, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numElements());
  for (size_t k = 0; k < values.size() && k < t.f.size(); ++k)
    t.f[k] = interp::roundTo(kind, values[k]);
  return t;
}

interp::Tensor ints(interp::ElementKind kind, std::vector<int64_t> shape,
                    std::vector<int64_t> values) {
  interp::Tensor t(kind, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numElements());
  for (size_t k = 0; k < values.size() && k < t.i.size(); ++k)
    t.i[k] = values[k];
  return t;
}

} // namespace sinter::test
