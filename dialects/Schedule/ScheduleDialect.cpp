//===- ScheduleDialect.cpp - the sched dialect and its types -------------===//

#include "dialects/Schedule/ScheduleDialect.h"

#include "dialects/Graph/GraphDialect.h"
#include "dialects/Schedule/ScheduleOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace sinter;
using namespace sinter::sched;

#include "dialects/Schedule/ScheduleDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Schedule/ScheduleTypes.cpp.inc"

void ScheduleDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Schedule/ScheduleOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/Schedule/ScheduleTypes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

std::optional<abi::DType> sinter::sched::dtypeOf(Type t) {
  if (t.isF32())
    return abi::ElementType::f32;
  if (t.isF64())
    return abi::ElementType::f64;
  if (t.isF16())
    return abi::ElementType::f16;
  if (t.isBF16())
    return abi::ElementType::bf16;
  if (t.isInteger(64))
    return abi::ElementType::i64;
  if (t.isInteger(32))
    return abi::ElementType::i32;
  if (t.isInteger(8))
    return abi::ElementType::i8;
  if (t.isInteger(1))
    return abi::ElementType::i1;
  return std::nullopt;
}

Type sinter::sched::elementTypeOf(MLIRContext *ctx, abi::DType type) {
  Builder b(ctx);
  switch (type) {
  case abi::ElementType::f32:
    return b.getF32Type();
  case abi::ElementType::f64:
    return b.getF64Type();
  case abi::ElementType::f16:
    return b.getF16Type();
  case abi::ElementType::bf16:
    return b.getBF16Type();
  case abi::ElementType::i64:
    return b.getI64Type();
  case abi::ElementType::i32:
    return b.getI32Type();
  case abi::ElementType::i8:
    return b.getI8Type();
  case abi::ElementType::i1:
    return b.getI1Type();
  default:
    return {};
  }
}

int64_t sinter::sched::elementBytes(Type elementType) {
  std::optional<abi::DType> d = dtypeOf(elementType);
  return d ? abi::elementBytes(*d) : 0;
}

int64_t sinter::sched::typeBytes(Type type) {
  if (auto buffer = dyn_cast<BufferType>(type))
    return buffer.getBytes();
  auto shaped = cast<ShapedType>(type);
  return shaped.getNumElements() * elementBytes(shaped.getElementType());
}

//===----------------------------------------------------------------------===//
// !sched.buffer
//===----------------------------------------------------------------------===//

int64_t BufferType::getNumElements() const {
  int64_t n = 1;
  for (int64_t d : getShape())
    n *= d;
  return n;
}

int64_t BufferType::getBytes() const {
  return getNumElements() * sched::elementBytes(getElementType());
}

RankedTensorType BufferType::getTensorType() const {
  return RankedTensorType::get(getShape(), getElementType());
}

BufferType BufferType::get(RankedTensorType tensor) {
  return BufferType::get(tensor.getContext(), tensor.getShape(),
                         tensor.getElementType());
}

LogicalResult
BufferType::verify(function_ref<InFlightDiagnostic()> emitError,
                   ArrayRef<int64_t> shape, Type elementType) {
  for (int64_t d : shape)
    if (d < 0)
      return emitError() << "buffer dimensions must be static and >= 0";
  if (!dtypeOf(elementType))
    return emitError() << "buffer element type " << elementType
                       << " is not one of the step program's (f32, f64, "
                          "f16, bf16, i64, i32, i8, i1)";
  return success();
}

Type BufferType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType) || parser.parseGreater())
    return {};
  return parser.getChecked<BufferType>(parser.getContext(), shape,
                                       elementType);
}

void BufferType::print(AsmPrinter &printer) const {
  printer << "<";
  for (int64_t d : getShape())
    printer << d << "x";
  printer << getElementType() << ">";
}
