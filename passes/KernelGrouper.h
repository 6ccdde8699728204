//===- KernelGrouper.h - how sinter-fuse-kernels groups ops -----*- C++ -*-===//
//
// The state sinter-fuse-kernels builds and its two halves share:
// FuseKernels.cpp decides which ops form each kernel (KernelGrouper::run),
// FuseKernelsRegions.cpp turns the groups into sgraph.fusion regions in a
// schedule (KernelGrouper::buildRegions). Internal to the pass.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_PASSES_KERNELGROUPER_H
#define SINTER_PASSES_KERNELGROUPER_H

#include "dialects/Graph/GraphOps.h"
#include "passes/Analysis/KernelChunks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <string>
#include <vector>

namespace sinter::fusion {

constexpr mlir::StringLiteral kFusionAttr = "sinter.fusion";

enum class OpClass {
  Elementwise,
  Reduction,
  View,
  Alias,
  Library,
  Special,
  SplatConstant,
  /// An op without operands whose elements are a function of their index
  /// (a causal mask read only by elementwise ops): computed in every kernel
  /// that reads it, as a splat constant is cloned, never a buffer.
  Generated,
  Opaque
};

/// The class of an op, which decides how it may fuse.
OpClass classify(mlir::Operation *op);

/// The shape of a tensor value.
inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getShape();
}

/// Whether `op` is the bias gradient of a tanh GELU's derivative taken of
/// a matmul's product: the sum of gelu_grad's result over every axis but
/// the last (a candidate for DGELU_BGRAD, which splitBigReductions leaves
/// whole; FuseKernelsEpilogues.cpp).
bool isBiasGradOfDgelu(mlir::Operation *op);

struct Group {
  int id;
  enum Kind { Loop, Reduction, Library, Special, View } kind;
  llvm::SmallVector<int64_t> space;             // the iteration shape
  llvm::SmallVector<int64_t> reduceAxes;        // for Reduction
  llvm::SmallVector<mlir::Operation *> members; // in program order
  llvm::SmallDenseSet<int, 8> deps;             // groups this one reads from
  llvm::SmallDenseSet<int, 8> users;            // groups that read this one
  /// Position in a topological order of the groups, kept as dependencies
  /// are added: each of `deps` has a smaller one.
  int order = 0;
  /// The values it reads from outside (views and reshapes looked through;
  /// splat constants are cloned in): the buffers its code takes.
  llvm::DenseSet<mlir::Value> inputs;
  int firstPosition = 0;
  /// For Library groups: how far the matmul's epilogue has grown
  /// (0 none, 1 scaled, 2 bias added, 3 activation applied, 4 the f32
  /// result of half operands rounded to their type, 5 gelu's derivative
  /// applied (DGELU), 6 and its bias gradient summed (BGRAD), 7 or that
  /// derivative rounded to half, 8 a rounded result widened for a ReLU,
  /// 9 that ReLU applied; its rounding makes it 4 again).
  int epilogue = 0;
  /// For Library groups: the member whose result is the value the library
  /// writes as it stands (the matmul, then each epilogue that takes it
  /// further). The other members are side values: a half bias or aux
  /// matrix widened for the op that reads it, the aux matrix rounded.
  mlir::Operation *last = nullptr;
};

/// What the target's kernels and matmul library do (FuseKernelsPass's
/// options, filled in by the target).
struct FusionTarget {
  analysis::KernelLimits limits;
  /// The epilogues the matmul library applies in the same call; of the
  /// activations, which ones (cuBLASLt has ReLU and the tanh GELU only).
  bool scaleEpilogue = true, biasEpilogue = true;
  bool reluEpilogue = true, geluTanhEpilogue = true, geluErfEpilogue = true;
  /// cuBLASLt's training forms of the tanh GELU: the activation's input
  /// written too when the backward pass reads it (GELU_AUX); gelu's
  /// derivative applied to a product (DGELU); and with it the sum of the
  /// result's rows, a bias gradient (DGELU_BGRAD). Off unless asked.
  bool geluAuxEpilogue = false, dgeluEpilogue = false,
       biasGradEpilogue = false;
  /// The matmul library's name, for the fusion report.
  std::string matmulLibrary = "oneDNN";
  /// Values one kernel reads from outside at most. Each is an argument of
  /// the kernel's code, and LLVM's work on a function grows with the square
  /// of its arguments: without a bound, the sum of the squared norms of a
  /// thousand-layer model's parameters would be one kernel of thousands of
  /// arguments and take most of the compile time and memory.
  int64_t maxInputs = 256;
};

class KernelGrouper {
public:
  KernelGrouper(mlir::func::FuncOp fn, const FusionTarget &target)
      : fn(fn), target(target) {}

  void run();

private:
  /// The groups a value comes from and whether it is a member result
  /// (readable as a scalar inside that group).
  void sourcesOf(mlir::Value v, llvm::SmallVectorImpl<int> &groups,
                 bool &isMember);
  /// Whether group `from` reads `target`, directly or through others.
  bool dependsOn(int from, int target);
  /// Records that `g` reads group `s`, keeping the topological order.
  void addDep(Group &g, int s);
  /// The value `v` is read as by a kernel: through views and reshapes;
  /// null for a splat constant (cloned into the kernel).
  mlir::Value inputOf(mlir::Value v);
  /// The values `op` would add to `g`'s inputs.
  llvm::SmallVector<mlir::Value> newInputs(mlir::Operation *op, const Group &g);
  /// Why `op` may not join `g`, or empty when it may.
  std::string whyNotJoin(mlir::Operation *op, Group &g);
  /// Whether `op` pads, with nothing low or between, only the last axis
  /// of a value loop kernel `g` computes over its whole space (of a row
  /// kernel, only when that axis is the one reduced): on a
  /// memory-bound target the kernel writes the padded buffer itself, the
  /// padding included (the logits' gradient padded for the next matmul),
  /// instead of its value for a pad kernel to copy.
  bool paddedRowOutput(mlir::Operation *op, const Group &g);
  /// Whether `op` reads a per-row value of group `gId` (a reduction result
  /// or a row op): joining makes it a later phase.
  bool readsRowsOf(mlir::Operation *op, int gId);
  /// The row phase `op` would run in as a member of `g`.
  int phaseIn(mlir::Operation *op, const Group &g);
  /// A transcendental op (exp, log, erf, ...) of an earlier phase of `g`
  /// that `op` would have to recompute, because its value is not written
  /// to memory anyway; null when there is none.
  mlir::Operation *costlyRecompute(mlir::Operation *op, const Group &g);
  int newGroup(mlir::Operation *op, Group::Kind kind,
               mlir::ArrayRef<int64_t> space);
  /// The matmul group `op` can join as an epilogue the matmul library
  /// applies itself, or -1; `what` names the epilogue.
  int epilogueGroup(mlir::Operation *op, std::string &what);
  void addMember(Group &g, mlir::Operation *op);
  /// Merges into `op`'s kernel every producer kernel of the same shape
  /// whose values only `op`'s kernel reads (the other pads of a sum of pads;
  /// the two halves of GELU's gradient): one loop instead of two, and the
  /// producer's values never reach memory.
  void absorbLoneProducers(mlir::Operation *op);
  /// Lets `op`'s kernel recompute a cheap elementwise chain of another
  /// kernel (arithmetic, selects, casts, one_hot: no transcendental
  /// functions or random numbers) instead of reading its result from
  /// memory, when that reads no more full-size tensors than the result
  /// itself (a softmax's masked scores): the producer then need not write
  /// it. On a memory-bound target (`memoryBound`) the chain may hold an
  /// exp and a division too, if it reads fewer bytes than the result (a
  /// softmax's f32 probabilities from bf16 scores).
  /// Called for each op as it joins a kernel, then for every op once the
  /// kernels are final (`groupsFinal`), when a value some other kernel
  /// reads from memory can end a chain too.
  void planRecompute(mlir::Operation *op, bool groupsFinal);
  void buildRegions();

  mlir::func::FuncOp fn;
  const FusionTarget &target;
  /// Per group: values it recomputes (results of other groups' ops).
  llvm::DenseMap<int, llvm::DenseSet<mlir::Value>> recompute;
  /// Member results exported even though no other kernel reads them
  /// directly (per-row leaves of chains another kernel recomputes).
  llvm::DenseSet<mlir::Value> forceExport;
  std::vector<Group> groups;
  int nextOrder = 0;
  llvm::DenseMap<mlir::Operation *, int> groupOf;
  llvm::DenseMap<mlir::Operation *, int>
      phase; // row phase of a member (0 mostly)
  llvm::DenseMap<mlir::Operation *, int> position;
  llvm::DenseMap<mlir::Operation *, std::string> reason;
};

} // namespace sinter::fusion

#endif // SINTER_PASSES_KERNELGROUPER_H
