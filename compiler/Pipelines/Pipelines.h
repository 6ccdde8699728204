//===- Pipelines.h - Sinter's phases and their pipelines --------*- C++ -*-===//
//
// The compiler runs in named phases (docs/Architecture.md); each ends in a
// verifier. `sinterc --compile-to=<phase>` stops after one; `--dump-dir`
// writes the IR at the end of each.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_PIPELINES_PIPELINES_H
#define SINTER_COMPILER_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace sinter {

enum class Phase { Import, Training, Optimized, Scheduled, Lowered, Binary };

llvm::StringRef phaseName(Phase phase);
/// Parses a phase name; "sgraph" is accepted for "import".
std::optional<Phase> parsePhase(llvm::StringRef name);
/// The comma-separated list of phase names, for help and errors.
std::string phaseNames();
/// The last phase this version of the compiler can produce.
constexpr Phase kLastImplementedPhase = Phase::Binary;

/// Import -> Training: builds @train_step from @forward, or with
/// `gradientsOnly` @forward_grad (loss, metrics and every gradient).
void buildTrainingPipeline(mlir::OpPassManager &pm, bool gradientsOnly = false);

/// Training -> Optimized: composite ops decomposed, cleaned up, and grouped
/// into kernel regions.
void buildOptimizedPipeline(mlir::OpPassManager &pm);

/// Optimized -> Scheduled: every tensor of `entry` gets a slab and offset;
/// the plan is verified. `report` (may be empty) receives the memory report.
void buildScheduledPipeline(mlir::OpPassManager &pm, llvm::StringRef entry,
                            llvm::StringRef report, bool memoryReuse = true);

/// Registers the pipelines by name for sinter-opt
/// (--sinter-training-pipeline).
void registerSinterPipelines();

} // namespace sinter

#endif // SINTER_COMPILER_PIPELINES_PIPELINES_H
