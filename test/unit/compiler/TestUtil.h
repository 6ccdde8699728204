//===- TestUtil.h - helpers for the compiler's unit tests ------*- C++ -*-===//

#ifndef SINTER_TEST_UNIT_COMPILER_TESTUTIL_H
#define SINTER_TEST_UNIT_COMPILER_TESTUTIL_H

#include "compiler/Interpreter/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace sinter::test {

/// An MLIR context with the dialects the compiler uses, whose diagnostics
/// are collected in `diagnostics` instead of printed.
class TestContext {
public:
  TestContext();
  ~TestContext();
  mlir::MLIRContext &get() { return context; }

  /// Parses a module; fails the current test (and returns null) on error.
  mlir::OwningOpRef<mlir::ModuleOp> parse(const std::string &text);

  /// Runs @name with the interpreter; fails the test on error.
  std::vector<interp::Tensor> run(mlir::ModuleOp module,
                                  const std::string &name,
                                  std::vector<interp::Tensor> args);

  std::string diagnostics;

private:
  mlir::MLIRContext context;
  uint64_t handlerId;
};

/// Tensors from literal values.
interp::Tensor floats(interp::ElementKind kind, std::vector<int64_t> shape,
                      std::vector<double> values);
interp::Tensor ints(interp::ElementKind kind, std::vector<int64_t> shape,
                    std::vector<int64_t> values);
inline interp::Tensor f32(std::vector<int64_t> shape,
                          std::vector<double> values) {
  return floats(interp::ElementKind::F32, std::move(shape), std::move(values));
}
inline interp::Tensor f64(std::vector<int64_t> shape,
                          std::vector<double> values) {
  return floats(interp::ElementKind::F64, std::move(shape), std::move(values));
}
inline interp::Tensor i64(std::vector<int64_t> shape,
                          std::vector<int64_t> values) {
  return ints(interp::ElementKind::I64, std::move(shape), std::move(values));
}

} // namespace sinter::test

#endif // SINTER_TEST_UNIT_COMPILER_TESTUTIL_H
