//===- BatchAxes.h - which axis of each forward value holds the batch -----===//
//
// Dropout keys its masks by the element's place in the global batch
// (docs/Distributed.md, "Dropout"), so it must know which axis of its
// operand the batch is on. findBatchAxes follows the batch from the model's
// inputs (their first axis) through the forward function, op by op. No library
// does this: it is a dataflow over our own dialect's shapes. batchSumOf uses
// it to find a loss that sums over the batch instead of averaging.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_IMPORTER_BATCHAXES_H
#define SINTER_COMPILER_IMPORTER_BATCHAXES_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include <utility>

namespace sinter::importer {

/// Where the batch is in one value.
///
/// `Axis a`: viewed as [outer, size(a), inner], the value one process
/// computes at W times the batch is this value's [outer, W * size(a), inner]
/// counterpart, and rank r's part of it is block [r * size(a), (r + 1) *
/// size(a)) of the middle axis. The batch rows may be merged into the axis
/// with others after them ([B * T, D] from [B, T, D]), never before.
struct BatchAxis {
  enum Kind {
    None,    // no batch rows: the same at any batch (parameters, constants)
    Axis,    // the batch is on `axis`
    Unknown, // depends on the batch in a way this analysis cannot place
  };
  Kind kind = None;
  int64_t axis = 0;
  /// Unknown: the op whose result it could not place.
  mlir::Operation *lostAt = nullptr;
};

/// The batch axes of the values of `body`, given the block arguments that
/// hold the batch and the axis of each (every other argument holds none),
/// and reshapes whose result's batch axis is known (the model file marks it
/// -1). Values not in the map hold no batch.
llvm::DenseMap<mlir::Value, BatchAxis>
findBatchAxes(mlir::Block &body,
              llvm::ArrayRef<std::pair<mlir::Value, int64_t>> batchInputs,
              const llvm::DenseMap<mlir::Operation *, int64_t> &reshapeAxes);

/// The reduce_sum through which a 0-d `loss` of `body` adds up the batch's
/// rows, where it does: the loss is such a sum (or a sum-reduced
/// cross-entropy), or sums and differences of them, each maybe negated,
/// cast, or multiplied or divided by values that depend on no batch row.
/// Averaged over ranks, such a loss's gradients are 1/W of one process's at
/// the whole batch (docs/Distributed.md, "Gradients"). Null where the loss
/// averages the rows (reduce_mean, a mean cross-entropy, a sum divided by
/// `batch`, the rows a rank computes a step, times the extents of some of
/// the other axes it adds up), adds averages to sums, or combines the rows
/// otherwise. `axes` is findBatchAxes' answer.
mlir::Operation *batchSumOf(mlir::Block &body, mlir::Value loss,
                            const llvm::DenseMap<mlir::Value, BatchAxis> &axes,
                            int64_t batch);

} // namespace sinter::importer

#endif // SINTER_COMPILER_IMPORTER_BATCHAXES_H
