//===- ModelImporter.h - the importer's internal state ---------*- C++ -*-===//
//
// Shared by ImportModel.cpp (scopes, names, parameters, the function),
// ImportLayers.cpp (built-in layers), ImportRawOp.cpp (raw sgraph ops) and
// ImportTraining.cpp (loss, metrics, training section). Not a public header.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_IMPORTER_MODELIMPORTER_H
#define SINTER_COMPILER_IMPORTER_MODELIMPORTER_H

#include "compiler/Importer/BatchAxes.h"
#include "compiler/Importer/ImportModel.h"
#include "compiler/Importer/Model.pb.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"

#include <google/protobuf/text_format.h>
#include <optional>

namespace sinter::importer {

using ParseInfoTree = google::protobuf::TextFormat::ParseInfoTree;

/// A message of the parsed file together with where it is.
struct Node {
  const google::protobuf::Message *msg = nullptr;
  const ParseInfoTree *tree = nullptr;
  mlir::Location loc;
};

/// Where a parameter's initial values come from.
struct InitSpec {
  // one-definition: the model file's initializers (docs/ModelFormat.md).
  enum Kind { Normal, Uniform, Constant } kind = Normal;
  double value = 0.0; // std, bound or the constant
};

/// Everything a layer instance needs to know about where it sits.
struct LayerContext {
  /// Prefix of parameter names: "" at the top, "transformer.h.3." inside.
  std::string prefix;
  /// The layer's parameters are frozen (set by it or an enclosing layer).
  bool frozen = false;
  /// Blocks being expanded, outermost first (recursion and depth checks).
  llvm::SmallVector<std::string, 4> blockStack;
  /// Repeat count of the nearest repeated layer: GPT-2 scales the init of
  /// residual projections by 1/sqrt(2 * n_layer).
  int64_t residualLayers = 1;
  /// Inside a layer instance marked for recomputation: the outer instance
  /// marks all the ops, inner marks are not needed.
  bool recomputed = false;
};

/// A number as users write it ("0.001", "1e+09", "nan"), for messages.
std::string formatNumber(double value);

/// The known name closest to `name` (for "did you mean" hints), or "".
std::string closestName(llvm::StringRef name,
                        llvm::ArrayRef<std::string> known);

/// Appends "; did you mean '<closest>'?" to `diag` when a known name is close.
void addHint(mlir::InFlightDiagnostic &diag, llvm::StringRef name,
             llvm::ArrayRef<std::string> known);

class ModelImporter {
public:
  ModelImporter(mlir::MLIRContext &context, llvm::StringRef filename,
                const ImportOptions &options);

  /// Builds the module; null after the first error (already reported).
  mlir::OwningOpRef<mlir::ModuleOp> run(const model::Model &model,
                                        const ParseInfoTree &tree);

  // --- Locations (ImportModel.cpp) ---------------------------------------
  mlir::Location fileLoc(int line, int column) const;
  /// Location of `field` (element `index` if repeated) of `node`, or the
  /// node's own location when the field is not written in the file.
  mlir::Location fieldLoc(const Node &node, llvm::StringRef field,
                          int index = -1) const;
  /// The message in `field` of `node`, located where it is written.
  Node child(const Node &node, llvm::StringRef field, int index = -1) const;
  /// Marks a location with the name of what it belongs to.
  mlir::Location named(llvm::StringRef name, mlir::Location loc) const;

  // --- Types and shapes (ImportModel.cpp) --------------------------------
  /// The element type of a DType; null (after an error at `loc`) for an
  /// unknown one. `fallback` is used for DTYPE_UNSPECIFIED.
  mlir::Type elementType(model::DType dtype, mlir::Type fallback,
                         mlir::Location loc);
  /// A static tensor type for a user-written shape; -1 entries become the
  /// batch size when `allowBatch`. Checks rank, sizes and overflow.
  mlir::RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape,
                                    mlir::Type elementType, bool allowBatch,
                                    mlir::Location loc);
  mlir::RankedTensorType floatTensor(llvm::ArrayRef<int64_t> shape) const {
    return mlir::RankedTensorType::get(shape, floatType);
  }

  // --- Parameters (ImportModel.cpp) --------------------------------------
  /// Creates parameter `ctx.prefix + localName` as a new @forward argument.
  mlir::Value createParam(const LayerContext &ctx, llvm::StringRef localName,
                          llvm::ArrayRef<int64_t> shape, InitSpec init,
                          mlir::Location loc);
  /// Creates buffer `ctx.prefix + localName`: a frozen parameter argument
  /// (`sgraph.buffer`) that the forward pass updates (setBufferUpdate)
  /// rather than the optimizer, saved and loaded with the parameters.
  mlir::Value createBuffer(const LayerContext &ctx, llvm::StringRef localName,
                           llvm::ArrayRef<int64_t> shape, InitSpec init,
                           mlir::Location loc);
  /// The buffer's value after this forward pass (a result of @forward).
  void setBufferUpdate(mlir::Value buffer, mlir::Value update);
  /// An already created parameter, or null.
  mlir::Value findParam(llvm::StringRef fullName) const;
  /// Records that a parameter is also known as `alias` (tied weights).
  void addAlias(mlir::Value param, llvm::StringRef alias);
  /// The init a user wrote, or `fallback` when the field is unset.
  InitSpec initFrom(const model::Init &init, bool isSet, InitSpec fallback);
  bool checkInit(const Node &node, llvm::StringRef field, bool isSet,
                 const model::Init &init);

  /// The step argument (created on first use; dropout needs it).
  mlir::Value stepValue();
  /// The data-parallel rank argument (made on first use, by dropout).
  mlir::Value rankValue();
  /// Seed of the next dropout op: training.seed + the number of dropout ops
  /// emitted before it (docs/ModelFormat.md, "Dropout and seeds").
  int64_t nextDropoutSeed() { return trainingSeed + dropoutCount++; }

  // --- Op building ---------------------------------------------------------
  /// Builds OpTy with inferred result types; on bad operands reports at
  /// `loc` and returns null, and returns null without a report when any
  /// operand is already null (an earlier error), so that a chain of ops
  /// stops at its first problem.
  template <typename OpTy, typename... Args>
  mlir::Value create(mlir::Location loc, Args &&...args);
  /// Builds OpTy with an explicit result type (ops that cannot infer it).
  template <typename OpTy, typename... Args>
  mlir::Value createTyped(mlir::Location loc, mlir::Type type, Args &&...args);
  mlir::Value scalarConstant(mlir::Type elementType, double value,
                             mlir::Location loc);
  mlir::Value zerosConstant(mlir::RankedTensorType type, mlir::Location loc);
  /// Runs a type inference, reporting its error as "<op>: <message>".
  mlir::LogicalResult
  inferTypes(llvm::StringRef opName, mlir::Location loc,
             llvm::function_ref<mlir::LogicalResult()> infer);

  // --- Scopes and layers (ImportModel.cpp, ImportLayers.cpp) ---------------
  using Bindings = llvm::StringMap<mlir::Value>;
  /// Emits `layers` (fields of `parent`) in dependency order; their
  /// outputs are added to `bindings`. False after an error.
  bool emitScope(const Node &parent, llvm::StringRef layerField,
                 Bindings &bindings, const LayerContext &ctx,
                 llvm::StringRef scopeWhat);
  /// Emits one layer (all its repeats); null after an error.
  mlir::Value emitLayer(const Node &layer, llvm::ArrayRef<mlir::Value> inputs,
                        const LayerContext &ctx);
  mlir::Value emitLayerOnce(const Node &layer,
                            llvm::ArrayRef<mlir::Value> inputs,
                            const LayerContext &ctx);
  mlir::Value emitBlockCall(const Node &layer, llvm::StringRef blockName,
                            llvm::ArrayRef<mlir::Value> inputs,
                            const LayerContext &ctx);

  // Built-in layers (ImportLayers.cpp).
  mlir::Value emitDense(const Node &layer, const model::Dense &spec,
                        mlir::Value x, const LayerContext &ctx);
  mlir::Value emitEmbedding(const Node &layer, const model::Embedding &spec,
                            mlir::Value x, const LayerContext &ctx);
  mlir::Value emitPositionalEmbedding(const Node &layer,
                                      const model::PositionalEmbedding &spec,
                                      mlir::Value x, const LayerContext &ctx);
  mlir::Value emitLayerNorm(const Node &layer, double epsilon, bool bias,
                            mlir::Value x, const LayerContext &ctx);
  mlir::Value emitActivation(const Node &layer, model::ActivationKind kind,
                             mlir::Value x, const LayerContext &ctx);
  mlir::Value emitDropout(const Node &layer, double rate, mlir::Value x,
                          const LayerContext &ctx);
  /// Tells each dropout of the finished forward function where its
  /// operand's batch is (BatchAxes.h): sets `batch_axis` where it is not the
  /// leading axis, drops `shard` where there is none, warns where it is
  /// not known.
  void placeDropoutBatches();
  /// Warns where a `loss { value }` sums over the batch (batchSumOf) while
  /// the ranks average their gradients (gradients_mean, the default).
  void warnBatchSumLoss(mlir::Value loss);
  /// The batch axes of the finished forward function (findBatchAxes),
  /// found on first use.
  const llvm::DenseMap<mlir::Value, BatchAxis> &batchAxes();
  mlir::Value emitAttention(const Node &layer,
                            const model::CausalSelfAttention &spec,
                            mlir::Value x, const LayerContext &ctx);
  mlir::Value emitMlp(const Node &layer, const model::Mlp &spec, mlir::Value x,
                      const LayerContext &ctx);
  mlir::Value emitTransformerBlock(const Node &layer,
                                   const model::TransformerBlock &spec,
                                   mlir::Value x, const LayerContext &ctx);
  mlir::Value emitAdd(const Node &layer, llvm::ArrayRef<mlir::Value> inputs,
                      const LayerContext &ctx);
  mlir::Value emitParameterLayer(const Node &layer,
                                 const model::Parameter &spec,
                                 const LayerContext &ctx);
  // Convolution, pooling, flatten (ImportConv.cpp).
  mlir::Value emitConv2d(const Node &layer, const model::Conv2d &spec,
                         mlir::Value x, const LayerContext &ctx);
  mlir::Value emitPool2d(const Node &layer, const model::Pool2d &spec, bool max,
                         mlir::Value x, const LayerContext &ctx);
  mlir::Value emitFlatten(const Node &layer, mlir::Value x,
                          const LayerContext &ctx);
  // Batch normalization (ImportBatchNorm.cpp).
  mlir::Value emitBatchNorm(const Node &layer, const model::BatchNorm &spec,
                            mlir::Value x, const LayerContext &ctx);
  /// Linear map over the last axis with "<name>.weight" [units, in] and
  /// "<name>.bias"; `weight` may be given (tied).
  mlir::Value linear(mlir::Value x, int64_t units, bool bias,
                     const LayerContext &ctx, llvm::StringRef name,
                     InitSpec weightInit, InitSpec biasInit, mlir::Location loc,
                     mlir::Value weight = {});

  // Raw ops (ImportRawOp.cpp).
  mlir::Value emitRawOp(const Node &layer, const Node &opNode,
                        llvm::ArrayRef<mlir::Value> inputs,
                        const LayerContext &ctx);
  /// The location of ops of a layer instance: its name ("transformer.h.3")
  /// around its position in the file.
  mlir::Location layerLoc(const Node &layer, const LayerContext &ctx) const {
    return named(llvm::StringRef(ctx.prefix).drop_back(), layer.loc);
  }

  // Loss, metrics, training section (ImportTraining.cpp).
  mlir::Value emitLoss(const Node &root, const Bindings &bindings);
  bool emitMetrics(const Node &root, const Bindings &bindings,
                   llvm::SmallVectorImpl<mlir::Value> &values,
                   llvm::SmallVectorImpl<std::string> &names);
  /// The training section as a dictionary; null after an error.
  mlir::DictionaryAttr trainingConfig(const Node &root);

  /// Reports an error at `loc`; returns a null value for convenience.
  mlir::InFlightDiagnostic error(mlir::Location loc);
  /// Looks up `name` among `bindings`, reporting an unknown name at `loc`
  /// (with the closest known name as a hint).
  mlir::Value lookup(const Bindings &bindings, llvm::StringRef name,
                     mlir::Location loc, llvm::StringRef what);
  /// A ranked tensor type of a value (every importer value has one).
  static mlir::RankedTensorType typeOf(mlir::Value v) {
    return mlir::cast<mlir::RankedTensorType>(v.getType());
  }

  mlir::MLIRContext &context;
  mlir::OpBuilder builder;
  std::string filename;
  ImportOptions options;

  mlir::func::FuncOp forward;
  mlir::Block *body = nullptr;
  mlir::Type floatType;
  int64_t batchSize = 1;
  int64_t trainingSeed = 1337;
  int64_t dropoutCount = 0;
  /// Recompute every instance of a repeated layer (policy BLOCKS); honour
  /// `recompute: true` at all (not with --recompute=none).
  bool recomputeRepeats = false;
  bool recomputeMarks = true;
  /// The layer instances to recompute, in order ("transformer.h.3"): the
  /// module's `sinter.recompute_layers`. Their ops are those located in
  /// them (layerLoc), which CSE and decomposition keep.
  llvm::SmallVector<std::string> recomputedInstances;
  int64_t layerCount = 0;
  /// Ops built so far: composite layers expand to many ops each.
  int64_t opCount = 0;
  const model::Model *model = nullptr;
  Node root;

  struct ParamInfo {
    std::string name;
    mlir::Value value;
    InitSpec init;
    bool frozen = false;
    llvm::SmallVector<std::string, 1> aliases;
    /// A buffer (frozen, `sgraph.buffer`): state rather than a parameter.
    bool buffer = false;
    /// A buffer's value after the forward pass (null: not updated),
    /// returned under its name.
    mlir::Value update;
  };
  std::vector<ParamInfo> params;
  llvm::StringMap<size_t> paramIndex;
  /// Inputs in file order (their arguments follow the parameters).
  llvm::SmallVector<std::pair<std::string, mlir::Value>> inputs;
  /// The inputs with a batch dimension, and its axis (where -1 is).
  llvm::SmallVector<std::pair<mlir::Value, int64_t>> batchInputs;
  /// Raw reshapes whose result shape marks the batch (-1), and its axis.
  llvm::DenseMap<mlir::Operation *, int64_t> reshapeBatchAxes;
  /// batchAxes() once asked for.
  std::optional<llvm::DenseMap<mlir::Value, BatchAxis>> foundBatchAxes;
  /// Metrics that are fractions of labels (accuracy): name, the labels as
  /// the metric reads them, and the label that does not count.
  struct LabelMetric {
    std::string name;
    mlir::Value labels;
    int64_t ignore;
  };
  llvm::SmallVector<LabelMetric> labelMetrics;
  mlir::Value step;
  mlir::Value rank;
  /// Named blocks of the model.
  llvm::StringMap<Node> blocks;
};

template <typename OpTy, typename... Args>
mlir::Value ModelImporter::create(mlir::Location loc, Args &&...args) {
  mlir::OperationState state(loc, OpTy::getOperationName());
  // The explicit-type builder sets operands and properties without
  // inferring (the inferring builder aborts on failure); the placeholder
  // type is replaced below.
  OpTy::build(builder, state, builder.getNoneType(),
              std::forward<Args>(args)...);
  if (!llvm::all_of(state.operands, [](mlir::Value v) { return bool(v); }))
    return {};
  llvm::SmallVector<mlir::Type, 1> types;
  if (mlir::failed(inferTypes(OpTy::getOperationName(), loc, [&]() {
        return OpTy::inferReturnTypes(&context, loc, state.operands,
                                      state.attributes.getDictionary(&context),
                                      state.getRawProperties(), state.regions,
                                      types);
      })))
    return {};
  state.types.assign(types.begin(), types.end());
  ++opCount;
  return builder.create(state)->getResult(0);
}

template <typename OpTy, typename... Args>
mlir::Value ModelImporter::createTyped(mlir::Location loc, mlir::Type type,
                                       Args &&...args) {
  mlir::OperationState state(loc, OpTy::getOperationName());
  OpTy::build(builder, state, type, std::forward<Args>(args)...);
  if (!llvm::all_of(state.operands, [](mlir::Value v) { return bool(v); }))
    return {};
  mlir::Operation *op = builder.create(state);
  ++opCount;
  if (mlir::failed(mlir::verify(op))) {
    op->erase();
    return {};
  }
  return op->getResult(0);
}

} // namespace sinter::importer

#endif // SINTER_COMPILER_IMPORTER_MODELIMPORTER_H
