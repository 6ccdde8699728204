//===- FuseKernelsEpilogues.cpp - what a matmul library applies itself ---===//
//
// The part of sinter-fuse-kernels (FuseKernels.cpp) that decides which ops
// join a matmul group as its library's epilogue instead of a kernel of
// their own: a splat scale, a bias along the last axis (under mixed
// precision the half bias widened, the add and the one rounding to half),
// an activation the target's library has; and, where the target asks
// (cuBLASLt), the tanh GELU's training forms: a GELU whose input the
// backward pass also reads (GELU_AUX), gelu_grad of a bare product (DGELU)
// and the sum of its rows, a bias gradient (DGELU_BGRAD). Each form's
// conditions are stated where it is matched.
//
//===----------------------------------------------------------------------===//

#include "passes/KernelGrouper.h"

using namespace mlir;
using namespace sinter::sgraph;
using namespace sinter::fusion;

/// The half type of a matmul group's operands when its product is their f32
/// sum (`f32_result`, a linear layer under mixed precision); null otherwise.
static Type halfOperandsOf(const Group &g) {
  auto mm = dyn_cast<MatmulOp>(g.members.front());
  if (!mm || !mm.getF32Result())
    return {};
  return cast<RankedTensorType>(mm.getLhs().getType()).getElementType();
}

/// Whether `add` is a bias epilogue for `v`, the last value of a matmul
/// group `g` that has grown no further than a scale: the other operand is
/// one value per output column. Under mixed precision the bias is a half
/// value widened (`widened`, in this group by then, or about to join it)
/// and the sum is rounded back to half by its one reader, so that the
/// library reads a half bias and writes a half out (MixedPrecision.cpp).
static bool isBiasEpilogue(AddOp add, Value v, const Group &g,
                           Operation *&widened) {
  Value other = add.getLhs() == v ? add.getRhs() : add.getLhs();
  ArrayRef<int64_t> bias = shapeOf(other), out = shapeOf(v);
  if (g.epilogue >= 2 || other == v || bias.empty() ||
      bias.back() != out.back() ||
      llvm::any_of(bias.drop_back(), [](int64_t d) { return d != 1; }))
    return false;
  widened = nullptr;
  Type half = halfOperandsOf(g);
  if (!half)
    return true;
  auto widen = other.getDefiningOp<CastOp>();
  if (!widen || !other.hasOneUse() ||
      cast<RankedTensorType>(widen.getOperand().getType()).getElementType() !=
          half ||
      !add.getResult().hasOneUse())
    return false;
  auto round = dyn_cast<CastOp>(*add.getResult().getUsers().begin());
  if (!round || round.getType().getElementType() != half)
    return false;
  widened = widen;
  return true;
}

/// Whether cuBLASLt's aux and bias-gradient forms fit the product `v` of a
/// matmul group `g`: f32 throughout (under mixed precision the IR rounds
/// the product before the activation, where the library would not); one
/// matrix once the batch is folded into rows (a rank-2 rhs and an lhs not
/// transposed), as the bias gradient sums every row; and a row length
/// that is a multiple of 8, the leading dimension cuBLASLt wants of an
/// aux matrix (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD).
static bool auxFits(Value v, const Group &g) {
  auto mm = dyn_cast<MatmulOp>(g.members.front());
  if (!mm || mm.getF32Result() || mm.getTransposeLhs() ||
      cast<RankedTensorType>(mm.getRhs().getType()).getRank() != 2)
    return false;
  auto type = cast<RankedTensorType>(v.getType());
  return type.getElementType().isF32() &&
         cast<RankedTensorType>(mm.getLhs().getType())
             .getElementType()
             .isF32() &&
         type.getShape().back() % 8 == 0;
}

// (KernelGrouper.h)
bool sinter::fusion::isBiasGradOfDgelu(Operation *op) {
  auto r = dyn_cast<ReduceSumOp>(op);
  if (!r)
    return false;
  auto g = r.getOperand().getDefiningOp<GeluGradOp>();
  if (!g || g.getApproximate() != "tanh" ||
      !g.getGrad().getDefiningOp<MatmulOp>())
    return false;
  int64_t rank = cast<RankedTensorType>(r.getOperand().getType()).getRank();
  ArrayRef<int64_t> axes = r.getAxes();
  if (rank < 2 || static_cast<int64_t>(axes.size()) != rank - 1)
    return false;
  for (int64_t i = 0; i < rank - 1; ++i)
    if (axes[i] != i)
      return false;
  return true;
}

int KernelGrouper::epilogueGroup(Operation *op, std::string &what) {
  if (!isa<AddOp, MulOp, ReluOp, GeluOp, CastOp, GeluGradOp, ReduceSumOp>(op))
    return -1;
  Type resultType =
      cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
  if (!resultType.isF32() && !isa<CastOp>(op))
    return -1;
  // The group whose value `v` is, when `op` may be its epilogue: the last
  // op of a matmul group (before the widening of the bias `op` adds, if
  // that joined), read by nothing else: the library writes the epilogue's
  // result instead of the matmul's. -1 when `v` is a value of some other
  // group's, or of a matmul group's that is read elsewhere too; -2 when it
  // is no group's, or is the widened bias itself.
  auto libraryOf = [&](Value v, bool shared = false) -> int {
    Operation *def = v.getDefiningOp();
    auto it = def ? groupOf.find(def) : groupOf.end();
    if (it == groupOf.end())
      return -2;
    Group &g = groups[it->second];
    ArrayRef<Operation *> members = g.members;
    bool biasLast = members.size() >= 2 && isa<CastOp>(members.back()) &&
                    members.back()->getResult(0).hasOneUse() &&
                    *members.back()->getResult(0).user_begin() == op;
    if (g.kind == Group::Library && biasLast && def == members.back())
      return -2;
    if (g.kind != Group::Library || (!shared && !v.hasOneUse()) ||
        def != members[members.size() - (biasLast ? 2 : 1)])
      return -1;
    return g.id;
  };
  // cuBLASLt's training forms of the tanh GELU (FusionTarget).
  if (auto grad = dyn_cast<GeluGradOp>(op)) {
    // DGELU: the derivative applied to a bare product, taken at a value
    // the library reads (the forward pass's activation input).
    int id = libraryOf(grad.getGrad());
    if (!target.dgeluEpilogue || grad.getApproximate() != "tanh" || id < 0 ||
        groups[id].epilogue != 0 || groups[id].members.size() != 1 ||
        !auxFits(grad.getGrad(), groups[id]))
      return -1;
    what = "gelu's derivative at its input, which the library reads (DGELU)";
    groups[id].epilogue = 5;
    return id;
  }
  if (isa<ReduceSumOp>(op)) {
    // BGRAD: the sum of that derivative's rows, the bias gradient of the
    // layer the GELU follows. The derivative is read elsewhere too (the
    // weight's and the input's gradients), and written all the same.
    if (!target.biasGradEpilogue || !isBiasGradOfDgelu(op))
      return -1;
    int id = libraryOf(op->getOperand(0), /*shared=*/true);
    if (id < 0 || groups[id].epilogue != 5)
      return -1;
    what = "bias gradient, the sum of its rows (DGELU_BGRAD)";
    groups[id].epilogue = 6;
    return id;
  }
  if (auto gelu = dyn_cast<GeluOp>(op);
      gelu && gelu.getApproximate() == "tanh" && target.geluAuxEpilogue &&
      !gelu.getOperand().hasOneUse()) {
    // GELU_AUX: the backward pass reads the activation's input, which the
    // library writes too.
    int id = libraryOf(gelu.getOperand(), /*shared=*/true);
    if (id < 0 || groups[id].epilogue >= 3 ||
        !auxFits(gelu.getOperand(), groups[id]))
      return -1;
    what = "activation, its input written too for the backward pass "
           "(GELU_AUX)";
    groups[id].epilogue = 3;
    return id;
  }
  if (auto widen = dyn_cast<CastOp>(op);
      widen && widen.getResult().hasOneUse() && target.biasEpilogue) {
    // A half bias widened for the add that follows (isBiasEpilogue): the
    // library reads the half values.
    if (auto add = dyn_cast<AddOp>(*widen.getResult().getUsers().begin())) {
      Value v = add.getLhs() == widen.getResult() ? add.getRhs() : add.getLhs();
      Operation *widened;
      if (int id = libraryOf(v);
          id >= 0 && isBiasEpilogue(add, v, groups[id], widened) &&
          widened == op) {
        what = "its bias, read as " +
               std::string(isa<BFloat16Type>(widen.getOperand()
                                                  .getType()
                                                  .getElementType())
                               ? "bf16"
                               : "f16");
        return id;
      }
    }
  }
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    Value v = op->getOperand(i);
    int id = libraryOf(v);
    if (id == -2)
      continue;
    if (id == -1 || shapeOf(op->getResult(0)) != shapeOf(v))
      return -1;
    Group &g = groups[id];
    Value other = op->getNumOperands() == 2 ? op->getOperand(1 - i) : Value();
    if (isa<CastOp>(op)) {
      // The one rounding of a linear layer's f32 sum and bias under mixed
      // precision: the library writes its out in the operands' type.
      Type half = halfOperandsOf(g);
      if (!half || g.epilogue != 2 || resultType != half)
        return -1;
      what = "rounding to " + std::string(isa<BFloat16Type>(half) ? "bf16"
                                                                   : "f16");
      g.epilogue = 4;
      return g.id;
    }
    if (isa<MulOp>(op) && g.epilogue < 1 && target.scaleEpilogue) {
      auto c = other.getDefiningOp<ConstantOp>();
      if (!c || !cast<DenseElementsAttr>(c.getValue()).isSplat())
        return -1;
      what = "scale";
      g.epilogue = 1;
      return g.id;
    }
    Operation *widened;
    if (auto add = dyn_cast<AddOp>(op); add && target.biasEpilogue &&
                                        isBiasEpilogue(add, v, g, widened)) {
      // Under mixed precision the bias's widening joined the group first.
      auto joined = widened ? groupOf.find(widened) : groupOf.end();
      if (widened && (joined == groupOf.end() || joined->second != g.id))
        return -1;
      what = "bias";
      g.epilogue = 2;
      return g.id;
    }
    auto gelu = dyn_cast<GeluOp>(op);
    bool applies = isa<ReluOp>(op)
                       ? target.reluEpilogue
                       : gelu && (gelu.getApproximate() == "tanh"
                                      ? target.geluTanhEpilogue
                                      : target.geluErfEpilogue);
    if (applies && g.epilogue < 3) {
      what = "activation";
      g.epilogue = 3;
      return g.id;
    }
    return -1;
  }
  return -1;
}

