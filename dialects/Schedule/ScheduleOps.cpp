//===- ScheduleOps.cpp - the sched dialect's ops and their verifiers -----===//
//
// Each verifier check carries the label of its constraint in
// docs/dialects/sched.md (`// view_c2`); the constraints that need the whole
// program (liveness, tokens in flight) are in ProgramVerifier.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/Schedule/ScheduleOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace sinter;
using namespace sinter::sched;

#define GET_OP_CLASSES
#include "dialects/Schedule/ScheduleOps.cpp.inc"

namespace {

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

BufferType bufferOf(Value v) { return cast<BufferType>(v.getType()); }

} // namespace

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

bool sinter::sched::isStep(Operation *op) {
  return isa<LaunchOp, MatmulOp, CopyOp, AllReduceStartOp, AllReduceDoneOp,
             AllGatherStartOp, AllGatherDoneOp, ReduceScatterStartOp,
             ReduceScatterDoneOp, BroadcastStartOp, BroadcastDoneOp>(op);
}

SmallVector<Value> sinter::sched::stepBuffers(Operation *op) {
  if (isa<AllReduceDoneOp, AllGatherDoneOp, ReduceScatterDoneOp,
          BroadcastDoneOp>(op)) {
    Operation *start = op->getOperand(0).getDefiningOp();
    return start ? stepBuffers(start) : SmallVector<Value>();
  }
  SmallVector<Value> buffers;
  for (Value v : op->getOperands())
    if (isa<BufferType>(v.getType()))
      buffers.push_back(v);
  return buffers;
}

//===----------------------------------------------------------------------===//
// sched.program
//===----------------------------------------------------------------------===//

SlabOp ProgramOp::lookupSlab(abi::SlabKind kind) {
  for (auto slab : getBlock().getOps<SlabOp>())
    if (slab.is(kind))
      return slab;
  return {};
}

//===----------------------------------------------------------------------===//
// sched.slab
//===----------------------------------------------------------------------===//

void SlabOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getSlab(), getKind());
}

LogicalResult SlabOp::verify() {
  // slab_c1
  if (!abi::parseSlab(getKind().str()))
    return emitOpError("kind '")
           << getKind()
           << "' is not a slab of the ABI (arena, params, opt_state, io, "
              "constants)";
  // slab_c2
  if (getSizeAttr().getInt() < 0)
    return emitOpError("size must be >= 0, got ") << getSizeAttr().getInt();
  return success();
}

//===----------------------------------------------------------------------===//
// sched.view
//===----------------------------------------------------------------------===//

void ViewOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  // Dumps read better with the argument's name than with a number.
  setNameFn(getResult(), getName() && !getName()->empty() ? *getName() : "v");
}

SlabOp ViewOp::getSlabOp() { return getSlab().getDefiningOp<SlabOp>(); }

ViewOp ViewOp::getRoot() {
  ViewOp view = *this;
  // A chain of aliases ends at a view that aliases nothing; the bound guards
  // against a cycle in invalid IR (a view cannot alias itself in SSA).
  for (int i = 0; i < 1 << 20; ++i) {
    Value next = view.getAliased();
    if (!next)
      return view;
    auto up = next.getDefiningOp<ViewOp>();
    if (!up)
      return view;
    view = up;
  }
  return view;
}

LogicalResult ViewOp::verify() {
  SlabOp slab = getSlabOp();
  if (!slab)
    return emitOpError("slab operand must be a sched.slab");
  int64_t bytes = getBytes(), offset = getOffsetAttr().getInt();
  int64_t size = slab.getSizeAttr().getInt();
  // view_c1
  if (offset < 0 || offset + bytes > size)
    return emitOpError("bytes [")
           << offset << ", " << offset + bytes << ") lie outside slab '"
           << slab.getKind() << "' of " << size << " bytes";
  if (Value aliased = getAliased()) {
    auto target = aliased.getDefiningOp<ViewOp>();
    if (!target)
      return emitOpError("aliases a value that is not a sched.view");
    // view_c3
    if (target.getSlab() != getSlab())
      return emitOpError("aliases a view of slab '")
             << target.getSlabOp().getKind() << "', not of its own slab '"
             << slab.getKind() << "'";
    int64_t targetOffset = target.getOffsetAttr().getInt();
    if (offset < targetOffset ||
        offset + bytes > targetOffset + target.getBytes())
      return emitOpError("bytes [")
             << offset << ", " << offset + bytes << ") lie outside the bytes ["
             << targetOffset << ", " << targetOffset + target.getBytes()
             << ") of the view it aliases";
  } else if (offset % abi::kBufferAlignment != 0) {
    // view_c2
    return emitOpError("offset ")
           << offset << " is not a multiple of " << abi::kBufferAlignment
           << " (only a view that aliases another "
           << "may be unaligned)";
  }
  // view_c4
  if (auto category = getCategory())
    if (!abi::parseCategory(category->str()))
      return emitOpError("category '")
             << *category
             << "' is not one of parameters, gradients, optimizer_state, "
                "activations, workspace, inputs, outputs, constants";
  return success();
}

//===----------------------------------------------------------------------===//
// sched.argument, sched.result, sched.fill
//===----------------------------------------------------------------------===//

LogicalResult ArgumentOp::verify() {
  std::optional<abi::ArgumentKind> kind =
      abi::parseArgumentKind(getKind().str());
  // argument_c1
  if (!kind)
    return emitOpError("kind '")
           << getKind()
           << "' is not one of param, opt_state, input, step, hyper";
  BufferType type = bufferOf(getBuffer());
  Type et = type.getElementType();
  // argument_c2
  if ((getInit() || getAliases()) && *kind != abi::Argument::param)
    return emitOpError("only a param has an init or aliases");
  if (getInit() && !isa<FloatType>(et))
    return emitOpError("init on a param of element type ")
           << et << "; only float params are initialized";
  if (getBound() && (*kind != abi::Argument::input || !isa<IntegerType>(et)))
    return emitOpError("only an integer input has a bound");
  if (getBoundAttr() && getBoundAttr().getInt() < 1)
    return emitOpError("bound must be >= 1, got ") << getBoundAttr().getInt();
  if (getIgnore() && !getBound())
    return emitOpError("only an input with a bound has an ignore value");
  // argument_c3
  if (*kind == abi::Argument::step &&
      (type.getRank() != 0 || !et.isInteger(64)))
    return emitOpError("a step argument is an i64 scalar, got ") << type;
  // argument_c4
  if (*kind == abi::Argument::hyper) {
    if (type.getRank() != 0 || !(et.isF32() || et.isF64()))
      return emitOpError("a hyper argument is an f32 or f64 scalar, got ")
             << type;
    if (!getDefaultValue())
      return emitOpError("a hyper argument needs a default");
    double v = getDefaultValue()->convertToDouble();
    if (!std::isfinite(v) ||
        (et.isF32() && !std::isfinite(static_cast<float>(v))))
      return emitOpError("default ") << v << " is not a finite " << et;
  } else if (getDefaultValue()) {
    return emitOpError("only a hyper argument has a default");
  }
  return success();
}

LogicalResult ResultOp::verify() {
  std::optional<abi::ResultKind> kind = abi::parseResultKind(getKind().str());
  // result_c1
  if (!kind)
    return emitOpError("kind '")
           << getKind() << "' is not one of metric, param, opt_state, tensor";
  // result_c2
  if (*kind == abi::Result::metric && bufferOf(getBuffer()).getRank() != 0)
    return emitOpError("a metric is a scalar, got ") << getBuffer().getType();
  // result_c3
  if (getLabels() && *kind != abi::Result::metric)
    return emitOpError("only a metric has labels, this is a ") << getKind();
  if (getLabels().has_value() != getIgnore().has_value())
    return emitOpError(getLabels() ? "has labels without an ignore"
                                   : "has an ignore without labels");
  return success();
}

LogicalResult FillOp::verify() {
  BufferType type = bufferOf(getBuffer());
  auto valueType = cast<ShapedType>(getValue().getType());
  // fill_c1
  if (valueType.getShape() != type.getShape() ||
      valueType.getElementType() != type.getElementType())
    return emitOpError("value of type ")
           << valueType << " does not fill a " << type;
  // fill_c2
  auto view = getBuffer().getDefiningOp<ViewOp>();
  if (!view || !view.getSlabOp() || !view.getSlabOp().is(abi::Slab::constants))
    return emitOpError("fills a buffer outside the constants slab");
  return success();
}

//===----------------------------------------------------------------------===//
// sched.kernel, sched.yield
//===----------------------------------------------------------------------===//

void KernelOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                     FunctionType type, StringRef kind) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name), TypeAttr::get(type));
  state.addAttribute(getKindAttrName(state.name), builder.getStringAttr(kind));
  state.addRegion();
}

ParseResult KernelOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildType = [](Builder &builder, ArrayRef<Type> args,
                      ArrayRef<Type> results,
                      function_interface_impl::VariadicFlag, std::string &) {
    return builder.getFunctionType(args, results);
  };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      getFunctionTypeAttrName(result.name), buildType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void KernelOp::print(OpAsmPrinter &p) {
  function_interface_impl::printFunctionOp(
      p, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
      getArgAttrsAttrName(), getResAttrsAttrName());
}

LogicalResult KernelOp::verify() {
  // kernel_c1
  if (getKind() != "loop" && getKind() != "reduction" && getKind() != "special")
    return emitOpError("kind '")
           << getKind() << "' is not one of loop, reduction, special";
  // kernel_c2
  for (Type t :
       llvm::concat<const Type>(getArgumentTypes(), getResultTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor || !tensor.hasStaticShape() ||
        !dtypeOf(tensor.getElementType()))
      return emitOpError("arguments and results must be statically shaped "
                         "tensors of a step-program element type, got ")
             << t;
  }
  if (getBody().empty() ||
      getBlock().getNumArguments() != getArgumentTypes().size())
    return emitOpError("body must have one block with one argument per "
                       "kernel argument");
  for (auto [arg, type] :
       llvm::zip(getBlock().getArguments(), getArgumentTypes()))
    if (arg.getType() != type)
      return emitOpError("block argument of type ")
             << arg.getType() << " for a kernel argument of type " << type;
  return success();
}

LogicalResult YieldOp::verify() {
  auto kernel = (*this)->getParentOfType<KernelOp>();
  // yield_c1
  if (TypeRange(getOperands().getTypes()) != TypeRange(kernel.getResultTypes()))
    return emitOpError("yields ")
           << getOperands().getTypes() << " but the kernel returns "
           << kernel.getResultTypes();
  return success();
}

//===----------------------------------------------------------------------===//
// sched.launch
//===----------------------------------------------------------------------===//

LogicalResult LaunchOp::verify() {
  // launch_c3
  if (getExtentAttr() && getExtentAttr().getInt() < 1)
    return emitOpError("extent must be >= 1, got ") << getExtentAttr().getInt();
  return success();
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &symbols) {
  Operation *target = symbols.lookupNearestSymbolFrom(*this, getKernelAttr());
  auto kernel = dyn_cast_or_null<KernelOp>(target);
  // launch_c1
  if (!kernel) {
    if (target && isa<FunctionOpInterface>(target) && getExtent() &&
        getSymbol()) {
      // A lowered kernel: the target's function, given the words it reads.
      // launch_c4
      auto words = target->getAttrOfType<IntegerAttr>(kKernelArgsAttr);
      int64_t given = getArgs() ? static_cast<int64_t>(getArgs()->size()) : 0;
      if (words && words.getInt() != given)
        return emitOpError("passes ")
               << given << " words (args) to @" << getKernel()
               << ", which reads " << words.getInt();
      return success();
    }
    return emitOpError("kernel @")
           << getKernel()
           << (target ? " is not a sched.kernel (a lowered kernel function "
                        "needs `extent` and `symbol`)"
                      : " does not exist");
  }
  // launch_c2
  auto check = [&](StringRef what, ValueRange buffers,
                   ArrayRef<Type> types) -> LogicalResult {
    if (buffers.size() != types.size())
      return emitOpError("passes ")
             << buffers.size() << " " << what << " to @" << getKernel()
             << ", which takes " << types.size();
    for (auto [i, v, t] : llvm::enumerate(buffers, types)) {
      BufferType b = bufferOf(v);
      auto tensor = cast<RankedTensorType>(t);
      if (b.getShape() != tensor.getShape() ||
          b.getElementType() != tensor.getElementType())
        return emitOpError() << what << " " << i << " is " << b << " but @"
                             << getKernel() << " has " << t;
    }
    return success();
  };
  if (failed(check("inputs", getInputs(), kernel.getArgumentTypes())) ||
      failed(check("outputs", getOutputs(), kernel.getResultTypes())))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// sched.matmul, sched.copy
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  BufferType lhs = bufferOf(getLhs()), rhs = bufferOf(getRhs()),
             out = bufferOf(getOut());
  // matmul_c1
  Type et = lhs.getElementType(), outEt = out.getElementType();
  bool wide = outEt.isF32() && (et.isBF16() || et.isF16());
  if (rhs.getElementType() != et || (outEt != et && !wide) ||
      (getBias() && bufferOf(getBias()).getElementType() != outEt))
    return emitOpError("operands, result and bias must have one element "
                       "type, or bf16/f16 operands an f32 result and bias; "
                       "got lhs ")
           << et << ", rhs " << rhs.getElementType() << ", out " << outEt;
  // matmul_c2
  for (auto [what, b] : {std::pair{"lhs", lhs}, {"rhs", rhs}, {"out", out}})
    if (b.getRank() < 2)
      return emitOpError() << what << " has rank " << b.getRank()
                           << "; a matmul needs rank >= 2";
  ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
  size_t lr = l.size(), rr = r.size();
  int64_t m = getTransposeLhs() ? l[lr - 1] : l[lr - 2];
  int64_t k = getTransposeLhs() ? l[lr - 2] : l[lr - 1];
  int64_t rk = getTransposeRhs() ? r[rr - 1] : r[rr - 2];
  int64_t n = getTransposeRhs() ? r[rr - 2] : r[rr - 1];
  if (k != rk)
    return emitOpError("rhs ")
           << shapeText(r) << " gives K=" << rk << " but lhs " << shapeText(l)
           << " gives K=" << k;
  size_t batchRank = std::max(lr, rr) - 2;
  SmallVector<int64_t> expected;
  for (size_t i = 0; i < batchRank; ++i) {
    int64_t a = i + lr - 2 >= batchRank ? l[i + lr - 2 - batchRank] : 1;
    int64_t c = i + rr - 2 >= batchRank ? r[i + rr - 2 - batchRank] : 1;
    if (a != c && a != 1 && c != 1)
      return emitOpError("batch axis ")
             << i << ": lhs " << shapeText(l) << " and rhs " << shapeText(r)
             << " do not broadcast";
    expected.push_back(a == 1 ? c : a);
  }
  expected.push_back(m);
  expected.push_back(n);
  if (ArrayRef<int64_t>(expected) != out.getShape())
    return emitOpError("out has shape ")
           << shapeText(out.getShape()) << "; expected " << shapeText(expected);
  // matmul_c3
  if (getBias() && bufferOf(getBias()).getShape() != ArrayRef<int64_t>{n})
    return emitOpError("bias has shape ")
           << shapeText(bufferOf(getBias()).getShape()) << "; expected [" << n
           << "]";
  // matmul_c4
  std::optional<abi::MatmulStep::Activation> activation =
      abi::parseActivation(getActivation().str());
  if (!activation)
    return emitOpError("activation '")
           << getActivation()
           << "' is not one of none, relu, gelu_erf, gelu_tanh, dgelu_tanh";
  // matmul_c7
  const bool dgelu = *activation == abi::MatmulStep::dgelu_tanh;
  if (Value aux = getAux()) {
    if (*activation != abi::MatmulStep::gelu_tanh && !dgelu)
      return emitOpError("aux goes with gelu_tanh or dgelu_tanh, not ")
             << getActivation();
    if (bufferOf(aux).getShape() != out.getShape() ||
        bufferOf(aux).getElementType() != outEt)
      return emitOpError("aux is ")
             << bufferOf(aux) << "; expected out's shape and type";
  } else if (dgelu) {
    return emitOpError("dgelu_tanh needs aux, the activation's input");
  }
  // matmul_c8
  if (Value grad = getBiasGrad()) {
    if (!dgelu)
      return emitOpError("bias_grad goes with dgelu_tanh, not ")
             << getActivation();
    if (bufferOf(grad).getShape() != ArrayRef<int64_t>{n} ||
        bufferOf(grad).getElementType() != outEt)
      return emitOpError("bias_grad is ")
             << bufferOf(grad) << "; expected [" << n << "] of out's type";
  }
  if (dgelu && getBias())
    return emitOpError("dgelu_tanh takes no bias");
  // matmul_c9
  std::optional<abi::MatmulStep::Triangle> triangle =
      abi::parseTriangle(getTriangle().str());
  if (!triangle)
    return emitOpError("triangle '")
           << getTriangle()
           << "' is not one of full, out_lower, lhs_lower, lhs_upper, "
              "rhs_lower, rhs_upper";
  if (*triangle != abi::MatmulStep::full) {
    const bool onLhs = getTriangle().starts_with("lhs"),
               onRhs = getTriangle().starts_with("rhs");
    auto [what, rows, cols] = onLhs   ? std::tuple{"op(lhs)", m, k}
                              : onRhs ? std::tuple{"op(rhs)", k, n}
                                      : std::tuple{"out", m, n};
    if (rows != cols)
      return emitOpError("triangle ")
             << getTriangle() << " needs a square " << what << "; it is "
             << rows << "x" << cols;
    if (getBias() || getAux() || *activation != abi::MatmulStep::none)
      return emitOpError("triangle ")
             << getTriangle() << " goes with no bias, aux or activation";
  }
  // matmul_c5
  auto bytesOf = [](Value v) -> std::optional<std::pair<Value, int64_t>> {
    auto view = v.getDefiningOp<ViewOp>();
    if (!view)
      return std::nullopt;
    return std::pair{view.getSlab(), view.getOffsetAttr().getInt()};
  };
  // Whether `a` and `b` (views) share a byte: "" if not, else a message.
  auto overlap = [&](StringRef aWhat, Value a, StringRef bWhat,
                     Value b) -> std::string {
    auto pa = bytesOf(a), pb = bytesOf(b);
    if (!pa || !pb || pa->first != pb->first)
      return "";
    int64_t a0 = pa->second, a1 = a0 + bufferOf(a).getBytes();
    int64_t b0 = pb->second, b1 = b0 + bufferOf(b).getBytes();
    if (!(a0 < b1 && b0 < a1))
      return "";
    return (aWhat + " [" + Twine(a0) + ", " + Twine(a1) + ") overlaps " +
            bWhat + " [" + Twine(b0) + ", " + Twine(b1) + ")")
        .str();
  };
  for (auto [what, v] :
       {std::pair{"lhs", getLhs()}, {"rhs", getRhs()}, {"bias", getBias()}})
    if (v)
      if (std::string text = overlap("out", getOut(), what, v); !text.empty())
        return emitOpError(text);
  // matmul_c7, matmul_c8
  for (auto [name, written] :
       {std::pair{"aux", getAux()}, {"bias_grad", getBiasGrad()}}) {
    if (!written)
      continue;
    for (auto [what, v] : {std::pair{"lhs", getLhs()},
                           {"rhs", getRhs()},
                           {"out", getOut()},
                           {"bias", getBias()},
                           {"aux", getAux()}})
      if (v && StringRef(what) != name)
        if (std::string text = overlap(name, written, what, v); !text.empty())
          return emitOpError(text);
  }
  // matmul_c6
  if (Value ws = getWorkspace()) {
    BufferType w = bufferOf(ws);
    if (w.getRank() != 1 || !w.getElementType().isInteger(8))
      return emitOpError("workspace must be a 1-D i8 buffer; got ") << w;
    for (auto [what, v] : {std::pair{"lhs", getLhs()},
                           {"rhs", getRhs()},
                           {"out", getOut()},
                           {"bias", getBias()},
                           {"aux", getAux()},
                           {"bias_grad", getBiasGrad()}})
      if (v)
        if (std::string text = overlap("workspace", ws, what, v);
            !text.empty())
          return emitOpError(text);
  }
  return success();
}

LogicalResult CopyOp::verify() {
  // copy_c1
  if (bufferOf(getSrc()).getBytes() != bufferOf(getDst()).getBytes())
    return emitOpError("copies ")
           << bufferOf(getSrc()).getBytes() << " bytes into a buffer of "
           << bufferOf(getDst()).getBytes();
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

namespace {

bool isReduction(StringRef kind) {
  return llvm::is_contained({"sum", "mean", "max", "min"}, kind);
}

/// token_c1: the start's token is used exactly once.
template <typename DoneOp> LogicalResult verifyToken(Operation *start) {
  Value token = start->getResult(0);
  SmallVector<Operation *> users(token.getUsers());
  if (users.empty())
    return start->emitOpError("token is never waited for (no ")
           << DoneOp::getOperationName() << ")";
  if (users.size() > 1)
    return start->emitOpError("token is used ")
           << users.size() << " times; it is waited for exactly once";
  // done_c1 (on the done op) says whether the user is the right kind.
  return success();
}

/// done_c1: the token comes from the matching start op.
template <typename Done> LogicalResult verifyDone(Done done) {
  Operation *start = done.getStart();
  if (!start || !isa<typename Done::StartOp>(start))
    return done.emitOpError("waits for a token that is not made by ")
           << Done::StartOp::getOperationName();
  return success();
}

} // namespace

void AllReduceStartOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getToken(), "token");
}
void AllGatherStartOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getToken(), "token");
}
void ReduceScatterStartOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getToken(), "token");
}
void BroadcastStartOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getToken(), "token");
}

LogicalResult AllReduceStartOp::verify() {
  // all_reduce_start_c1
  if (!isReduction(getReduction()))
    return emitOpError("reduction '")
           << getReduction() << "' is not one of sum, mean, max, min";
  // all_reduce_start_c2
  if (auto wire = getCommDtype()) {
    if (*wire != "bf16" && *wire != "f16")
      return emitOpError("comm_dtype '") << *wire << "' is not bf16 or f16";
    if (getReduction() != "sum" && getReduction() != "mean")
      return emitOpError("comm_dtype needs reduction sum or mean");
    if (!bufferOf(getBuffer()).getElementType().isF32())
      return emitOpError("comm_dtype needs an f32 buffer");
  }
  return verifyToken<AllReduceDoneOp>(*this);
}

LogicalResult AllGatherStartOp::verify() {
  BufferType in = bufferOf(getInput()), out = bufferOf(getOutput());
  // all_gather_start_c1
  if (in.getElementType() != out.getElementType() || in.getNumElements() == 0 ||
      out.getNumElements() % in.getNumElements() != 0)
    return emitOpError("output ")
           << out << " is not a whole number of inputs " << in;
  return verifyToken<AllGatherDoneOp>(*this);
}

LogicalResult ReduceScatterStartOp::verify() {
  BufferType in = bufferOf(getInput()), out = bufferOf(getOutput());
  // reduce_scatter_start_c1
  if (!isReduction(getReduction()))
    return emitOpError("reduction '")
           << getReduction() << "' is not one of sum, mean, max, min";
  if (in.getElementType() != out.getElementType() ||
      out.getNumElements() == 0 ||
      in.getNumElements() % out.getNumElements() != 0)
    return emitOpError("input ")
           << in << " is not a whole number of outputs " << out;
  return verifyToken<ReduceScatterDoneOp>(*this);
}

LogicalResult BroadcastStartOp::verify() {
  // broadcast_start_c1
  if (getRootAttr().getInt() < 0)
    return emitOpError("root must be >= 0, got ") << getRootAttr().getInt();
  return verifyToken<BroadcastDoneOp>(*this);
}

LogicalResult AllReduceDoneOp::verify() { return verifyDone(*this); }
LogicalResult AllGatherDoneOp::verify() { return verifyDone(*this); }
LogicalResult ReduceScatterDoneOp::verify() { return verifyDone(*this); }
LogicalResult BroadcastDoneOp::verify() { return verifyDone(*this); }
