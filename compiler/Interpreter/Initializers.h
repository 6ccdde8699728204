//===- Initializers.h - initial parameter values ----------------*- C++ -*-===//
//
// A parameter's `sgraph.init` dictionary ({dist = "normal", std = 0.02},
// {dist = "uniform", bound = b} or {dist = "constant", value = v}) turned
// into values with the shared counter-based generator (abi/Random.h)
// keyed by the training seed and the parameter's name, so the interpreter
// and the training binary start from the same weights.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_INTERPRETER_INITIALIZERS_H
#define SINTER_COMPILER_INTERPRETER_INITIALIZERS_H

#include "compiler/Interpreter/Tensor.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

namespace sinter::interp {

mlir::FailureOr<Tensor> initializeParameter(llvm::StringRef name,
                                            mlir::DictionaryAttr init,
                                            mlir::RankedTensorType type,
                                            uint64_t seed, mlir::Location loc);

} // namespace sinter::interp

#endif // SINTER_COMPILER_INTERPRETER_INITIALIZERS_H
