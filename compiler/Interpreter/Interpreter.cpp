//===- Interpreter.cpp - running a function of sgraph ops ----------------===//
//
// A straight walk over the function's (or kernel's) single block: operands are
// looked up, the op is evaluated (OpKernels.cpp), and each value is dropped
// after its last use so that a training step needs about as much memory as its
// live activations.
//
//===----------------------------------------------------------------------===//

#include "compiler/Interpreter/Interpreter.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Schedule/ScheduleOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"

#include <memory>

using namespace mlir;
using namespace sinter::interp;

namespace {

/// Checks that a tensor matches the type a value of the function has.
LogicalResult checkType(const Tensor &tensor, Type type, Location loc,
                        StringRef what) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  std::optional<ElementKind> kind =
      ranked ? kindOf(ranked.getElementType()) : std::nullopt;
  if (!ranked || !kind)
    return emitError(loc) << "the interpreter cannot hold " << what
                          << " of type " << type;
  if (tensor.kind != *kind ||
      ArrayRef<int64_t>(tensor.shape) != ranked.getShape())
    return emitError(loc) << what << " is " << tensor.describe()
                          << ", expected " << type;
  return success();
}

} // namespace

Tensor sinter::interp::zerosOf(RankedTensorType type) {
  return Tensor(*kindOf(type.getElementType()),
                std::vector<int64_t>(type.getShape()));
}

FailureOr<Tensor> sinter::interp::tensorFromAttr(ElementsAttr attr,
                                                 Location loc) {
  auto type = cast<RankedTensorType>(attr.getType());
  std::optional<ElementKind> kind = kindOf(type.getElementType());
  if (!kind)
    return emitError(loc) << "the interpreter cannot hold constants of type "
                          << type;
  Tensor t = zerosOf(type);
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return emitError(loc) << "the interpreter needs dense constants";
  int64_t n = t.numElements();
  if (t.isFloat()) {
    auto values = dense.getValues<APFloat>();
    for (int64_t k = 0; k < n; ++k)
      t.f[k] =
          roundTo(t.kind, values[dense.isSplat() ? 0 : k].convertToDouble());
  } else {
    auto values = dense.getValues<APInt>();
    for (int64_t k = 0; k < n; ++k) {
      const APInt &v = values[dense.isSplat() ? 0 : k];
      t.i[k] = t.kind == ElementKind::I1 ? v.getZExtValue() : v.getSExtValue();
    }
  }
  return t;
}

FailureOr<std::vector<Tensor>>
sinter::interp::runBlock(Block &body, Location loc, std::vector<Tensor> args) {
  // Last use of every value, so that it can be freed.
  llvm::DenseMap<Operation *, unsigned> position;
  for (auto [k, op] : llvm::enumerate(body))
    position[&op] = k;
  llvm::DenseMap<Value, unsigned> lastUse;
  for (Operation &op : body)
    for (Value operand : op.getOperands())
      lastUse[operand] = std::max(lastUse.lookup(operand), position[&op]);

  llvm::DenseMap<Value, std::shared_ptr<Tensor>> env;
  for (auto [k, arg] : llvm::enumerate(body.getArguments())) {
    if (failed(checkType(args[k], arg.getType(), arg.getLoc(),
                         "argument #" + std::to_string(k))))
      return failure();
    env[arg] = std::make_shared<Tensor>(std::move(args[k]));
  }

  for (Operation &op : body) {
    SmallVector<const Tensor *> operands;
    for (Value operand : op.getOperands())
      operands.push_back(env.lookup(operand).get());
    if (isa<func::ReturnOp, sinter::sgraph::YieldOp, sinter::sched::YieldOp>(
            op)) {
      std::vector<Tensor> results;
      for (const Tensor *t : operands)
        results.push_back(*t);
      return results;
    }
    std::vector<Tensor> results;
    if (auto fusion = dyn_cast<sinter::sgraph::FusionOp>(op)) {
      // A kernel region computes what its ops compute: run them.
      std::vector<Tensor> inputs;
      for (const Tensor *t : operands)
        inputs.push_back(*t);
      auto out = runBlock(fusion.getBody().front(), fusion.getLoc(),
                          std::move(inputs));
      if (failed(out))
        return failure();
      results = std::move(*out);
    } else if (failed(evaluateOp(&op, operands, results))) {
      return failure();
    }
    for (auto [value, tensor] : llvm::zip(op.getResults(), results))
      env[value] = std::make_shared<Tensor>(std::move(tensor));
    // Free operands used for the last time here.
    for (Value operand : op.getOperands())
      if (lastUse.lookup(operand) == position[&op] &&
          !isa<BlockArgument>(operand))
        env.erase(operand);
  }
  return emitError(loc, "the block has no terminator");
}

FailureOr<std::vector<Tensor>>
sinter::interp::runFunction(func::FuncOp fn, std::vector<Tensor> args) {
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return fn.emitError("the interpreter runs functions with one block");
  Block &body = fn.front();
  if (args.size() != body.getNumArguments())
    return fn.emitError("expected ")
           << body.getNumArguments() << " arguments, got " << args.size();
  return runBlock(body, fn.getLoc(), std::move(args));
}
