//===- CudaIndexing.h - index helpers of the CUDA kernels -------*- C++ -*-===//
//
// What CudaKernels.cpp and CudaSpecialKernels.cpp both use to lay work out
// over a launch: the block and grid limits, index constants, a linear
// index as row-major indices, and a space's identity read.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_CODEGEN_CUDA_CUDAINDEXING_H
#define SINTER_COMPILER_CODEGEN_CUDA_CUDAINDEXING_H

#include "compiler/CodeGen/Cpu/KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace sinter::codegen::detail {

/// Threads of a block for elementwise and special kernels, and at most for
/// a row.
inline constexpr int64_t kThreads = 256;
/// Blocks at most; grid-stride loops cover the rest.
inline constexpr int64_t kMaxBlocks = 1 << 16;

inline Value constIndex(OpBuilder &b, Location l, int64_t v) {
  return b.create<arith::ConstantIndexOp>(l, v);
}

/// `linear` as row-major indices of `sizes` (linear < their product).
inline SmallVector<Value> delinearize(OpBuilder &b, Location l, Value linear,
                                      ArrayRef<int64_t> sizes) {
  SmallVector<Value> out(sizes.size());
  for (int p = (int)sizes.size() - 1; p > 0; --p) {
    if (sizes[p] == 1) {
      out[p] = constIndex(b, l, 0);
      continue;
    }
    Value size = constIndex(b, l, sizes[p]);
    out[p] = b.create<arith::RemUIOp>(l, linear, size);
    linear = b.create<arith::DivUIOp>(l, linear, size);
  }
  if (!sizes.empty())
    out[0] = linear;
  return out;
}

/// Each dimension of a space of `rank` read as it is.
inline SmallVector<Dim> identityDims(size_t rank) {
  SmallVector<Dim> dims;
  for (size_t p = 0; p < rank; ++p)
    dims.push_back(Dim{(int)p, 1, 0});
  return dims;
}

} // namespace sinter::codegen::detail

#endif // SINTER_COMPILER_CODEGEN_CUDA_CUDAINDEXING_H
