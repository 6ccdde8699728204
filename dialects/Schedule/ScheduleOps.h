//===- ScheduleOps.h - the sched dialect's ops -----------------*- C++ -*-===//
//
// The scheduled step (docs/dialects/sched.md), and how its element types map
// to the ABI's (abi/Abi.h).
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_DIALECTS_SCHEDULE_SCHEDULEOPS_H
#define SINTER_DIALECTS_SCHEDULE_SCHEDULEOPS_H

#include "dialects/Schedule/ScheduleDialect.h"
#include "abi/Abi.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

#define GET_OP_CLASSES
#include "dialects/Schedule/ScheduleOps.h.inc"

namespace sinter::sched {

/// The ABI element type of an MLIR element type (nullopt for one the step
/// program cannot hold).
std::optional<abi::DType> dtypeOf(mlir::Type elementType);
/// The MLIR element type of an ABI element type.
mlir::Type elementTypeOf(mlir::MLIRContext *ctx, abi::DType type);
/// Bytes of one element of an MLIR element type (i1 takes a byte); 0 for
/// one the ABI lacks.
int64_t elementBytes(mlir::Type elementType);
/// Bytes of a statically shaped tensor or buffer type.
int64_t typeBytes(mlir::Type shapedOrBuffer);

/// Whether `op` is one entry of a program's order: a launch, a library call,
/// a copy, or a collective's start or done.
bool isStep(mlir::Operation *op);
/// The buffers a step reads or writes (for a collective's done: those of its
/// start).
llvm::SmallVector<mlir::Value> stepBuffers(mlir::Operation *op);

/// On a lowered sched.launch: the ops its kernel computes, in order, each a
/// NameLoc named by the op ("log") around the op's own location (the
/// layer's NameLoc at its place in the model file). The step program's
/// origins (abi/StepProgram.proto), for messages about non-finite values.
inline constexpr llvm::StringLiteral kOriginsAttr = "sched.origins";

/// On a kernel function (a lowered launch's `kernel`): how many words each
/// launch of it passes in its `args`.
inline constexpr llvm::StringLiteral kKernelArgsAttr = "sched.kernel_args";

/// On a merged CUDA launch (compiler/CodeGen/Cuda/MergeLaunches.cpp): one
/// dictionary a member kernel, in the order its blocks run: `inputs` and
/// `outputs` (array<i64>, indices into the launch's), and `origins` (how
/// many of the launch's sched.origins, in order, are the member's). The
/// step program's KernelMember.
inline constexpr llvm::StringLiteral kMembersAttr = "sched.members";

} // namespace sinter::sched

#endif // SINTER_DIALECTS_SCHEDULE_SCHEDULEOPS_H
