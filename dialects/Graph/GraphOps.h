//===- GraphOps.h - sgraph ops ---------------------------------*- C++ -*-===//

#ifndef SINTER_DIALECTS_GRAPH_GRAPHOPS_H
#define SINTER_DIALECTS_GRAPH_GRAPHOPS_H

#include "dialects/Graph/GraphDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Graph/GraphInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/Graph/GraphOps.h.inc"

namespace sinter::sgraph {

/// Attribute names the importer puts on @forward's arguments and results and
/// that later phases read. See docs/dialects/sgraph.md, "Function attributes".
namespace attr {
/// On a parameter argument: its PyTorch state_dict name.
inline constexpr llvm::StringLiteral kParam = "sgraph.param";
/// On a parameter argument: other names the same tensor is known by (tied
/// weights), e.g. ["lm_head.weight"] on "transformer.wte.weight".
inline constexpr llvm::StringLiteral kAliases = "sgraph.aliases";
/// On a parameter argument: a dictionary describing its initializer.
inline constexpr llvm::StringLiteral kInit = "sgraph.init";
/// On a parameter argument: unit; the optimizer never updates it.
inline constexpr llvm::StringLiteral kFrozen = "sgraph.frozen";
/// On a parameter argument (with kFrozen): a buffer, state that the
/// forward pass updates rather than the optimizer (batch normalization's
/// running statistics, PyTorch's register_buffer). Where the forward pass
/// updates it, @forward returns its new value under its name, after the
/// metrics.
inline constexpr llvm::StringLiteral kBuffer = "sgraph.buffer";
/// On a data argument: the model input's name.
inline constexpr llvm::StringLiteral kInput = "sgraph.input";
/// On an optimizer-state argument or result: "optimizer.<param name>.<slot>".
inline constexpr llvm::StringLiteral kOptState = "sgraph.opt_state";
/// On a gradient-accumulator argument or result: "grad_accum.<param name>".
/// It holds the sum of the step's earlier micro-batches' gradients
/// (docs/Autodiff.md, "Gradient accumulation").
inline constexpr llvm::StringLiteral kAccumulator = "sgraph.accumulator";
/// On the 0-d integer step argument.
inline constexpr llvm::StringLiteral kStep = "sgraph.step";
/// On the 0-d i64 argument saying which B-row block of the global batch a
/// run computes (rank x K + micro-batch; 0 alone): which rows its dropout
/// masks are for.
inline constexpr llvm::StringLiteral kRank = "sgraph.rank";
/// On a hyperparameter argument the trainer may set at run time (a 0-d
/// float tensor): its name, e.g. "lr".
inline constexpr llvm::StringLiteral kHyper = "sgraph.hyper";
/// On a hyperparameter argument: its default value (an f64 FloatAttr).
inline constexpr llvm::StringLiteral kDefault = "sgraph.default";
/// On a function result: its name ("loss", a metric, a parameter).
inline constexpr llvm::StringLiteral kName = "sgraph.name";
/// On an integer data argument: the rows of the table it indexes, or the
/// classes of the cross-entropy it labels (the smallest if several), as an
/// i64; values must lie in [0, bound) ...
inline constexpr llvm::StringLiteral kIndexBound = "sgraph.index_bound";
/// ... or equal this i64 (the cross-entropy's ignore_index), when set.
inline constexpr llvm::StringLiteral kIndexIgnore = "sgraph.index_ignore";
/// On the module: the metrics that are fractions of the labels a model input
/// holds (accuracy), by name: {labels = the input's name, ignore = the i64
/// label that does not count}. The runtime weights such a metric by the
/// labels that count when it combines micro-batches, ranks and held-out
/// parts (docs/Distributed.md, "Labels that do not count").
inline constexpr llvm::StringLiteral kMetricLabels = "sgraph.metric_labels";
/// On the module: the training configuration dictionary.
inline constexpr llvm::StringLiteral kTraining = "sgraph.training";
} // namespace attr

/// The name an argument of a training function goes by outside the compiler:
/// the parameter's state_dict name, the input's name, the optimizer-state
/// name, the hyperparameter's name, or "step"; empty when it has none.
std::string argumentName(mlir::FunctionOpInterface fn, unsigned index);

/// The name of a result (`sgraph.name`); empty when it has none.
std::string resultName(mlir::FunctionOpInterface fn, unsigned index);

/// Replaces every `train_eval` under `root` by its train value (`training`)
/// or its eval value.
void resolveTrainEval(mlir::Operation *root, bool training);

/// The results of `fn` that are new values of its buffer arguments
/// (`sgraph.buffer`), matched by name.
llvm::SmallVector<unsigned> bufferUpdateResults(mlir::FunctionOpInterface fn);

/// A 0-d constant of `elementType` (float or integer) holding `value`.
mlir::Value buildScalarConstant(mlir::OpBuilder &builder, mlir::Location loc,
                                mlir::Type elementType, double value);

/// Broadcasts two shapes as numpy does. Returns false when they are not
/// compatible.
bool broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs,
                     llvm::SmallVectorImpl<int64_t> &result);

/// True for f16, bf16, f32 and f64.
bool isFloatTensor(mlir::Type type);

/// Whether `cast` widens one float type to another exactly (bf16 or f16 to
/// f32 or f64, f32 to f64): every value survives, so narrowing back gives
/// the original.
bool isExactWidening(CastOp cast);

/// Elementwise ops that cost many instructions per element (a polynomial,
/// a division, dropout's hashing): a fused kernel keeps such a value for
/// a later row phase rather than compute it twice.
bool isCostlyElementwise(mlir::Operation *op);

} // namespace sinter::sgraph

#endif // SINTER_DIALECTS_GRAPH_GRAPHOPS_H
