//===- ImportModel.h - model description to sgraph -------------*- C++ -*-===//
//
// The importer turns a model description (model.pbtxt, schema in Model.proto)
// into a module holding `func.func @forward(params..., inputs...[, step])
// -> (loss, metrics...)` in the sgraph dialect, with the training section as
// the module attribute `sgraph.training`. Every op carries a location in the
// model file; every problem with the file is a diagnostic there (never an
// assert or a crash), and import stops at the first one.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_IMPORTER_IMPORTMODEL_H
#define SINTER_COMPILER_IMPORTER_IMPORTMODEL_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace sinter {

struct ImportOptions {
  /// Replaces training.batch_size, the size of every input's -1 dimension.
  std::optional<int64_t> batchSize;
  /// Which layer instances get `sinter.recompute` (their activations are
  /// recomputed, docs/Recompute.md): unset follows the model (layers with
  /// `recompute: true`, plus every instance of a repeated layer with
  /// training.recompute.policy BLOCKS); "none" marks nothing; "blocks"
  /// behaves as policy BLOCKS.
  std::optional<std::string> recompute;
  /// Replaces training.precision: "fp32", "bf16_mixed" or "fp16_mixed"
  /// (docs/MixedPrecision.md).
  std::optional<std::string> precision;
};

/// Limits that keep hostile or mistaken files from exhausting memory.
struct ImportLimits {
  static constexpr int64_t kMaxFileBytes = 64 << 20;
  static constexpr int64_t kMaxRank = 8;
  static constexpr int64_t kMaxDimSize = int64_t(1) << 40;
  static constexpr int64_t kMaxElements = int64_t(1) << 40;
  static constexpr int64_t kMaxRepeat = 10000;
  static constexpr int64_t kMaxLayers = 100000;
  static constexpr int64_t kMaxOps = 1000000;
  static constexpr int64_t kMaxBlockDepth = 16;
  static constexpr int kMaxMessageNesting = 32;
};

/// Imports model text; diagnostics are located in `filename`. Returns null
/// after reporting the first error.
mlir::OwningOpRef<mlir::ModuleOp> importModel(llvm::StringRef text,
                                              llvm::StringRef filename,
                                              mlir::MLIRContext &context,
                                              const ImportOptions &options = {});

/// Reads and imports the file at `path`.
mlir::OwningOpRef<mlir::ModuleOp>
importModelFile(llvm::StringRef path, mlir::MLIRContext &context,
                const ImportOptions &options = {});

} // namespace sinter

#endif // SINTER_COMPILER_IMPORTER_IMPORTMODEL_H
