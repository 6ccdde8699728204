//===- PlanMemory.h - buffer places shared by planning and lowering -*- C++
//-*-===//
//
// The attributes sinter-plan-memory writes and code generation reads:
// `sinter.buffers` on ops (one dictionary per result), `sinter.buffer` on
// arguments, each {slab, offset, bytes, category}; slab names are those of
// docs/StepProgram.md.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_PASSES_PLANMEMORY_H
#define SINTER_PASSES_PLANMEMORY_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Types.h"

namespace sinter::plan {

/// Bytes of one element in memory (i1 takes a byte).
int64_t elementBytes(mlir::Type elementType);
/// Bytes of a ranked tensor type.
int64_t tensorBytes(mlir::Type tensorType);
/// {slab, offset, bytes, category}.
mlir::DictionaryAttr bufferAttr(mlir::MLIRContext *ctx, llvm::StringRef slab,
                                int64_t offset, int64_t bytes,
                                llvm::StringRef category);

} // namespace sinter::plan

#endif // SINTER_PASSES_PLANMEMORY_H
