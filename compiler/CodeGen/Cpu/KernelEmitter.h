//===- KernelEmitter.h - one fused region to one CPU kernel ----*- C++ -*-===//
//
// Each kernel launch of a scheduled program becomes a function with the
// uniform kernel signature of abi/KernelAbi.h:
//
//   func.func @sinter_kN(%arena, %params, %opt_state, %io, %constants:
//                        memref<?xi8>, %args: memref<?xi64>,
//                        %begin: index, %end: index)
//
// Buffers are `memref.view`s of the slabs at the places the launch gives
// them. A loop or reduction kernel becomes one `linalg.generic` over its
// iteration shape whose body computes every member op's scalar (the fusion
// itself: nothing between members touches memory); views (transpose,
// broadcast, slice) fold into the indexing of the buffers they read.
// [begin, end) selects a slice of one parallel dimension, so the runtime can
// split a kernel over threads. `%args` holds the launch's words (each
// place's byte offset, then each dropout key): the entry's code knows the
// slabs and sizes of its places but not where they are, so the launches of
// one kernel in every layer share it. Special kernels (pad, concat,
// embedding_grad, argmax) get loops of their own. The entry cuts the
// buffers out of the slabs and calls a body, `<symbol>_body`, that takes
// one `noalias` buffer per place.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_CODEGEN_CPU_KERNELEMITTER_H
#define SINTER_COMPILER_CODEGEN_CPU_KERNELEMITTER_H

#include "dialects/Graph/GraphOps.h"
#include "passes/Analysis/KernelChunks.h"
#include "abi/Abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace sinter::codegen {

/// Where a buffer lives: its slab and byte offset.
struct Place {
  abi::SlabKind slab = abi::Slab::arena;
  int64_t offset = 0;
};

/// A buffer a kernel reads or writes: its tensor type and its place.
struct KernelOperand {
  mlir::RankedTensorType type;
  Place place;
};

/// What one kernel is emitted from: a fused region (a sched.kernel's body:
/// one block argument per input, a terminator whose operands are the
/// results) and the places of the buffers one launch gives it.
struct KernelSource {
  /// For locations and diagnostics (the sched.kernel).
  mlir::Operation *op = nullptr;
  mlir::Block *body = nullptr;
  std::string name; // k7
  std::string kind; // loop, reduction or special
  llvm::SmallVector<KernelOperand> inputs, results;
};

struct EmittedKernel {
  std::string symbol; // the C-interface symbol, _mlir_ciface_<name>
  std::string name;   // k7 and the op names it holds, for profiles
  int64_t extent = 1; // [0, extent) of the split dimension
  int64_t bytes = 0;  // bytes read and written once per call (for GB/s)
  /// The elements the kernel iterates over (its space, or a special
  /// kernel's largest buffer): how big its loops are.
  int64_t elements = 1;
  /// The entry, `symbol`, and the body function, `<symbol>_body`, which
  /// the entry calls.
  mlir::func::FuncOp entry, body;
  /// The words the launch passes the entry (sched.launch `args`): the byte
  /// offset of each place in its slab, then each dropout op's key.
  std::vector<int64_t> args;
  /// CUDA: threads per block (extent is then the grid's blocks).
  int64_t block = 0;
};

/// Emits `source` as a kernel function `symbol` (and its body
/// `<symbol>_body`) at the end of `kernels`, cut as `limits` says.
mlir::FailureOr<EmittedKernel>
emitKernel(const KernelSource &source, mlir::ModuleOp kernels,
           llvm::StringRef symbol, const analysis::KernelLimits &limits);

/// Emits `source` for the CUDA target as a function `symbol` with the
/// CUDA kernel signature (one memref<?xi8> per slab, then one i64 per
/// word) whose body is GPU code: grid-stride loops over the elements, one
/// block per row of a reduction (compiler/CodeGen/Cuda/CudaKernels.cpp).
mlir::FailureOr<EmittedKernel>
emitCudaKernel(const KernelSource &source, mlir::ModuleOp kernels,
               llvm::StringRef symbol, const analysis::KernelLimits &limits);

/// The body of a kernel function as text, without locations or its own
/// name: equal text, equal code (how launches come to share functions).
std::string bodyText(mlir::func::FuncOp fn);

} // namespace sinter::codegen

#endif // SINTER_COMPILER_CODEGEN_CPU_KERNELEMITTER_H
