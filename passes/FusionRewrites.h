//===- FusionRewrites.h - rewrites around kernel grouping -------*- C++ -*-===//
//
// Parts of sinter-fuse-kernels (FuseKernels.cpp) that rewrite a function
// without knowing its kernel groups.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_PASSES_FUSIONREWRITES_H
#define SINTER_PASSES_FUSIONREWRITES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace sinter {

/// Splits every reduce_sum/reduce_max over all axes of a tensor of 32K
/// elements or more into a reduction of the rows and one of the row
/// results, so that the big part has a dimension to run in parallel; and
/// every one over the leading axes 0..k-1 (k >= 2, trailing axes kept: a
/// bias gradient) into one over axes 1..k-1 and one over axis 0, so that
/// threads split axis 0 and each walks whole rows in order. With
/// `groupRows` (targets whose threads take whole rows: the CPU), a leading
/// reduction neither rule splits (one leading axis, or a first axis of 1)
/// is cut into groups of rows, summed in parallel, then the groups' sums.
/// Reductions `keep` holds are left whole (a matmul library's bias
/// gradient).
void splitBigReductions(
    mlir::func::FuncOp fn,
    llvm::function_ref<bool(mlir::Operation *)> keep = nullptr,
    bool groupRows = false);

/// Rewrites every sum of zero pads whose operands tile one axis (the
/// gradients of slices that split a tensor) into a concat of the operands,
/// padded where they leave the ends of the axis.
void padsToConcats(mlir::func::FuncOp fn);

/// Materializes every view (transpose, broadcast, slice) still read outside
/// a kernel as a copy kernel of its own, the chain of views it reads
/// through cloned in; kernels are named k<firstKernel>, k<firstKernel+1>...
void materializeViews(mlir::func::FuncOp fn, int64_t firstKernel);

} // namespace sinter

#endif // SINTER_PASSES_FUSIONREWRITES_H
