//===- KernelEmitter.h - one sgraph.fusion region to one CPU kernel -*- C++
//-*-===//
//
// Each kernel region of the planned step becomes a function with the
// uniform kernel signature of runtime/Abi/KernelAbi.h:
//
//   func.func @sinter_kN(%arena, %params, %opt_state, %io, %constants:
//                        memref<?xi8>, %begin: index, %end: index)
//
// Buffers are `memref.view`s of the slabs at their planned offsets. A loop
// or reduction region becomes one `linalg.generic` over its iteration shape
// whose body computes every member op's scalar (the fusion itself: nothing
// between members touches memory); views (transpose, broadcast, slice) fold
// into the indexing of the buffers they read. [begin, end) selects a slice
// of one parallel dimension, so the runtime can split a kernel over threads.
// Special regions (pad, concat, embedding_grad, argmax) get loops of their
// own.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_CODEGEN_KERNELEMITTER_H
#define SINTER_COMPILER_CODEGEN_KERNELEMITTER_H

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <string>

namespace sinter::codegen {

/// Where a value lives: slab index (abi::SlabId) and byte offset.
struct Place {
  int slab = 0;
  int64_t offset = 0;
};

struct EmittedKernel {
  std::string symbol; // the C-interface symbol, _mlir_ciface_<name>
  std::string name;   // k7 and the op names it holds, for profiles
  int64_t extent = 1; // [0, extent) of the split dimension
  int64_t bytes = 0;  // bytes read and written once per call (for GB/s)
};

/// Emits `fusion` as a kernel function at the end of `kernels`, named
/// `<symbolPrefix><region name>` (e.g. sinter_k7; another prefix keeps two
/// step programs' kernels apart in one object). `placeOf` gives the planned
/// place of any value outside the region (an input or a result of
/// `fusion`).
mlir::FailureOr<EmittedKernel>
emitKernel(sgraph::FusionOp fusion, mlir::ModuleOp kernels,
           const std::function<Place(mlir::Value)> &placeOf,
           llvm::StringRef symbolPrefix = "sinter_");

} // namespace sinter::codegen

#endif // SINTER_COMPILER_CODEGEN_KERNELEMITTER_H
