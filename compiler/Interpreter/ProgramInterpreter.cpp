//===- ProgramInterpreter.cpp - running a sched.program on bytes ---------===//
//
// One walk over the program's body (see ProgramInterpreter.h). Buffers are
// read into interpreter tensors where a step needs them and written back
// right after, so a step sees exactly the bytes the binary's step would.
//
//===----------------------------------------------------------------------===//

#include "compiler/Interpreter/ProgramInterpreter.h"

#include "compiler/Interpreter/Interpreter.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstring>

using namespace mlir;
using namespace sinter;
using namespace sinter::interp;
namespace sabi = sinter::abi;

namespace {

class ProgramRun {
public:
  ProgramRun(sched::ProgramOp program, const StepHook &hook)
      : program(program), hook(hook) {}

  FailureOr<std::vector<Tensor>> run(std::vector<Tensor> args);

private:
  /// The first byte of `buffer` (a sched.view).
  uint8_t *bytesOf(Value buffer);
  FailureOr<Tensor> load(Value buffer, Operation *at);
  LogicalResult store(Value buffer, const Tensor &tensor, Operation *at);

  LogicalResult launch(sched::LaunchOp op);
  LogicalResult matmul(sched::MatmulOp op);
  /// A collective's input copied to its output, as on one rank.
  LogicalResult copyAsOneRank(Operation *op, Value input, Value output);

  /// Calls the hook after `op`, a step of the step program, with `writes`.
  LogicalResult afterStep(Operation *op, ArrayRef<Value> writes);

  sched::ProgramOp program;
  const StepHook &hook;
  int64_t nextStep = 0;
  llvm::DenseMap<Value, std::vector<uint8_t>> slabs;
};

LogicalResult ProgramRun::afterStep(Operation *op, ArrayRef<Value> writes) {
  StepWrites w;
  w.op = op;
  w.index = nextStep++;
  for (Value buffer : writes)
    w.buffers.push_back(
        {buffer,
         MutableArrayRef<uint8_t>(
             bytesOf(buffer),
             static_cast<size_t>(
                 cast<sched::BufferType>(buffer.getType()).getBytes()))});
  return hook ? hook(w) : success();
}

uint8_t *ProgramRun::bytesOf(Value buffer) {
  auto view = buffer.getDefiningOp<sched::ViewOp>();
  return slabs[view.getSlab()].data() + view.getOffset();
}

FailureOr<Tensor> ProgramRun::load(Value buffer, Operation *at) {
  auto type = cast<sched::BufferType>(buffer.getType());
  std::optional<ElementKind> kind = kindOf(type.getElementType());
  if (!kind)
    return at->emitOpError("the interpreter cannot hold a buffer of ")
           << type.getElementType();
  return tensorFromBytes(*kind, std::vector<int64_t>(type.getShape()),
                         bytesOf(buffer));
}

LogicalResult ProgramRun::store(Value buffer, const Tensor &tensor,
                                Operation *at) {
  auto type = cast<sched::BufferType>(buffer.getType());
  std::optional<ElementKind> kind = kindOf(type.getElementType());
  if (!kind || tensor.kind != *kind ||
      ArrayRef<int64_t>(tensor.shape) != type.getShape())
    return at->emitOpError("writes ")
           << tensor.describe() << " into a buffer of type " << type;
  tensorToBytes(tensor, bytesOf(buffer));
  return success();
}

LogicalResult ProgramRun::launch(sched::LaunchOp op) {
  auto kernel = SymbolTable::lookupNearestSymbolFrom<sched::KernelOp>(
      op, op.getKernelAttr());
  if (!kernel)
    return op.emitOpError("launches @")
           << op.getKernel()
           << ", which is no sched.kernel: the interpreter runs the "
              "scheduled phase, before the kernels are lowered";
  std::vector<Tensor> inputs;
  for (Value in : op.getInputs()) {
    FailureOr<Tensor> t = load(in, op);
    if (failed(t))
      return failure();
    inputs.push_back(std::move(*t));
  }
  FailureOr<std::vector<Tensor>> results =
      runBlock(kernel.getBody().front(), kernel.getLoc(), std::move(inputs));
  if (failed(results))
    return failure();
  for (auto [out, tensor] : llvm::zip(op.getOutputs(), *results))
    if (failed(store(out, tensor, op)))
      return failure();
  return success();
}

LogicalResult ProgramRun::matmul(sched::MatmulOp op) {
  FailureOr<Tensor> lhs = load(op.getLhs(), op), rhs = load(op.getRhs(), op);
  if (failed(lhs) || failed(rhs))
    return failure();
  auto outType = cast<sched::BufferType>(op.getOut().getType());
  // The epilogue in the order the matmul kernel's ops had it, each result
  // rounded to the element type. A half out is the rounding of an f32
  // product and epilogue (the f32 ops before the rounding cast in the
  // kernel, docs/MixedPrecision.md), so those run in f32 and out is
  // rounded to half once, at the end.
  RankedTensorType type = outType.getTensorType();
  const bool half =
      type.getElementType().isBF16() || type.getElementType().isF16();
  Tensor out = zerosOf(
      half ? type.clone(Float32Type::get(op.getContext())) : type);
  matmulInto(*lhs, *rhs, op.getTransposeLhs(), op.getTransposeRhs(), out);
  double alpha = op.getAlpha().convertToDouble();
  int64_t n = outType.getShape().back();
  // `out` rounded to the buffer's own type (half, or out's).
  auto rounded = [&] {
    Tensor r = zerosOf(type);
    for (int64_t k = 0, e = out.numElements(); k < e; ++k)
      r.f[k] = roundTo(r.kind, out.f[k]);
    return r;
  };
  auto each = [&](auto fn) {
    for (int64_t k = 0, e = out.numElements(); k < e; ++k)
      out.f[k] = roundTo(out.kind, fn(out.f[k], k % n));
  };
  if (alpha != 1.0)
    each([&](double v, int64_t) { return v * alpha; });
  if (Value bias = op.getBias()) {
    FailureOr<Tensor> b = load(bias, op);
    if (failed(b))
      return failure();
    each([&](double v, int64_t j) { return v + b->f[j]; });
  }
  std::optional<sabi::MatmulStep::Activation> activation =
      sabi::parseActivation(op.getActivation().str());
  // GELU_AUX: the activation's input, written too, in out's type (under
  // mixed precision rounded once from the f32 sum, as out).
  if (Value aux = op.getAux();
      aux && activation == sabi::MatmulStep::gelu_tanh)
    if (failed(store(aux, rounded(), op)))
      return failure();
  switch (activation.value_or(sabi::MatmulStep::none)) {
  case sabi::MatmulStep::relu:
    each([](double v, int64_t) { return v > 0.0 ? v : 0.0; });
    break;
  case sabi::MatmulStep::gelu_erf:
    each([](double v, int64_t) { return geluOf(v, /*tanhForm=*/false); });
    break;
  case sabi::MatmulStep::gelu_tanh:
    each([](double v, int64_t) { return geluOf(v, /*tanhForm=*/true); });
    break;
  case sabi::MatmulStep::dgelu_tanh: {
    // out = product * gelu'(aux), as sgraph.gelu_grad; bias_grad the sum
    // of out's rows, in double, rounded once.
    FailureOr<Tensor> aux = load(op.getAux(), op);
    if (failed(aux))
      return failure();
    for (int64_t k = 0, e = out.numElements(); k < e; ++k)
      out.f[k] =
          roundTo(out.kind, out.f[k] * geluGradOf(aux->f[k], /*tanhForm=*/true));
    if (Value grad = op.getBiasGrad()) {
      auto gradType = cast<sched::BufferType>(grad.getType()).getTensorType();
      Tensor sums = zerosOf(gradType);
      std::vector<double> acc(static_cast<size_t>(n), 0.0);
      for (int64_t k = 0, e = out.numElements(); k < e; ++k)
        acc[static_cast<size_t>(k % n)] += out.f[k];
      for (int64_t j = 0; j < n; ++j)
        sums.f[j] = roundTo(sums.kind, acc[static_cast<size_t>(j)]);
      if (failed(store(grad, sums, op)))
        return failure();
    }
    break;
  }
  default:
    break;
  }
  return store(op.getOut(), half ? rounded() : out, op);
}

LogicalResult ProgramRun::copyAsOneRank(Operation *op, Value input,
                                        Value output) {
  int64_t in = cast<sched::BufferType>(input.getType()).getBytes();
  int64_t out = cast<sched::BufferType>(output.getType()).getBytes();
  if (in != out)
    return op->emitOpError("moves ")
           << in << " bytes into " << out
           << ": the interpreter runs collectives as one rank, and this "
              "program was built for several";
  std::memmove(bytesOf(output), bytesOf(input), static_cast<size_t>(in));
  return success();
}

FailureOr<std::vector<Tensor>> ProgramRun::run(std::vector<Tensor> args) {
  Block &body = program.getBlock();
  size_t numArguments = llvm::range_size(body.getOps<sched::ArgumentOp>());
  if (args.size() != numArguments)
    return program.emitOpError("has ")
           << numArguments << " arguments, given " << args.size();
  size_t nextArgument = 0;
  SmallVector<sched::ResultOp> results;
  DenseMap<Value, Value> allReduceBuffer; // start token -> buffer
  for (Operation &op : body) {
    LogicalResult done =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](sched::SlabOp slab) {
              slabs[slab.getSlab()].assign(slab.getSize(), 0);
              return success();
            })
            .Case([&](sched::ViewOp) { return success(); })
            .Case([&](sched::ArgumentOp arg) {
              return store(arg.getBuffer(), args[nextArgument++], arg);
            })
            .Case([&](sched::ResultOp result) {
              results.push_back(result);
              return success();
            })
            .Case([&](sched::FillOp fill) -> LogicalResult {
              FailureOr<Tensor> value =
                  tensorFromAttr(fill.getValue(), fill.getLoc());
              if (failed(value))
                return failure();
              return store(fill.getBuffer(), *value, fill);
            })
            .Case([&](sched::LaunchOp l) -> LogicalResult {
              if (failed(launch(l)))
                return failure();
              return afterStep(l, llvm::to_vector(l.getOutputs()));
            })
            .Case([&](sched::MatmulOp m) -> LogicalResult {
              if (failed(matmul(m)))
                return failure();
              // The writes in the runtime's order: the product, the aux
              // matrix a forward GELU keeps (a DGELU reads it), the bias
              // gradient.
              SmallVector<Value> writes{m.getOut()};
              std::string_view dgelu =
                  sabi::activationName(sabi::MatmulStep::dgelu_tanh);
              if (Value aux = m.getAux();
                  aux &&
                  m.getActivation() != StringRef(dgelu.data(), dgelu.size()))
                writes.push_back(aux);
              if (Value grad = m.getBiasGrad())
                writes.push_back(grad);
              return afterStep(m, writes);
            })
            .Case([&](sched::CopyOp copy) {
              std::memmove(bytesOf(copy.getDst()), bytesOf(copy.getSrc()),
                           static_cast<size_t>(
                               cast<sched::BufferType>(copy.getSrc().getType())
                                   .getBytes()));
              return afterStep(copy, {copy.getDst()});
            })
            .Case([&](sched::AllReduceStartOp start) {
              allReduceBuffer[start.getToken()] = start.getBuffer();
              return afterStep(start, {});
            })
            .Case([&](sched::AllReduceDoneOp done) {
              return afterStep(done, {allReduceBuffer.lookup(done.getToken())});
            })
            .Case([&](sched::AllGatherStartOp g) {
              return copyAsOneRank(g, g.getInput(), g.getOutput());
            })
            .Case([&](sched::ReduceScatterStartOp r) {
              return copyAsOneRank(r, r.getInput(), r.getOutput());
            })
            .Case<sched::AllGatherDoneOp, sched::ReduceScatterDoneOp,
                  sched::BroadcastStartOp, sched::BroadcastDoneOp>(
                [](Operation *) { return success(); })
            .Default([](Operation *other) {
              return other->emitOpError("is not a step the interpreter runs");
            });
    if (failed(done))
      return failure();
  }
  std::vector<Tensor> out;
  for (sched::ResultOp result : results) {
    FailureOr<Tensor> t = load(result.getBuffer(), result);
    if (failed(t))
      return failure();
    out.push_back(std::move(*t));
  }
  return out;
}

} // namespace

FailureOr<std::vector<Tensor>>
sinter::interp::runProgram(sched::ProgramOp program, std::vector<Tensor> args,
                           const StepHook &hook) {
  return ProgramRun(program, hook).run(std::move(args));
}
