//===- ScalarOps.h - one element of an sgraph op, in arith/math ---*- C++
//-*-===//
//
// Inside a kernel's loop body every elementwise sgraph op is one scalar
// computation. emitScalar builds it from the scalars of its operands: the
// semantics of docs/dialects/sgraph.md, op by op (numbers as the reference
// interpreter computes them, up to rounding: see the f64 notes below).
// Ops that depend on where the element is (dropout's counter, one_hot,
// iota, causal_mask) ask the kernel for iteration indices through
// ScalarContext.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_CODEGEN_CPU_SCALAROPS_H
#define SINTER_COMPILER_CODEGEN_CPU_SCALAROPS_H

#include "mlir/IR/Builders.h"

#include <functional>

namespace sinter::codegen {

/// What an op may ask of the loop it is emitted in.
struct ScalarContext {
  /// Rank of the iteration space.
  size_t rank = 0;
  /// The iteration space's shape (`rank` sizes).
  llvm::ArrayRef<int64_t> space;
  /// The (absolute) index of the element along iteration dimension `dim`.
  std::function<mlir::Value(mlir::OpBuilder &, mlir::Location, int)> index;
  /// The element's row-major index in the iteration space.
  std::function<mlir::Value(mlir::OpBuilder &, mlir::Location)> linearIndex;
  /// The i64 key of a dropout op (its mixed seed). A kernel passes keys to
  /// its body as arguments, so that the same kernel in every layer, which
  /// differs in nothing but its keys, has one body; unset, the key is a
  /// constant.
  std::function<mlir::Value(mlir::Operation *)> dropoutKey;
  /// The target computes f32 math functions as polynomials (the CPU,
  /// sinter-approximate-math; CUDA calls libdevice): GELU's gradient then
  /// builds the normal CDF from an approximation of erfc that shares its
  /// exp with the density (ScalarOps.cpp, normalCdf).
  bool polynomialMath = false;
};

/// The key of a dropout op's mask: its seed, mixed (docs/Random.md).
uint64_t dropoutKeyOf(mlir::Operation *dropout);

/// The results of `op` for one element, from its operands' scalars `in`.
/// Fails (with a diagnostic at the op) for ops with no scalar form.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
emitScalar(mlir::OpBuilder &builder, mlir::Location loc, mlir::Operation *op,
           llvm::ArrayRef<mlir::Value> in, const ScalarContext &ctx);

/// A float constant of `type`.
mlir::Value fconst(mlir::OpBuilder &builder, mlir::Location loc,
                   mlir::Type type, double value);

} // namespace sinter::codegen

#endif // SINTER_COMPILER_CODEGEN_CPU_SCALAROPS_H
