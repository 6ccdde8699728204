//===- FuseKernelsEpilogues.cpp - what a matmul library applies itself ---===//
//
// The part of sinter-fuse-kernels (FuseKernels.cpp) that decides which ops
// join a matmul group as its library's epilogue instead of a kernel of
// their own: a splat scale, a bias along the last axis (under mixed
// precision the half bias widened, the add and the one rounding to half),
// an activation the target's library has; and, where the target asks
// (cuBLASLt), the tanh GELU's training forms: a GELU whose input the
// backward pass also reads (GELU_AUX), gelu_grad of a bare product (DGELU)
// and the sum of its rows, a bias gradient (DGELU_BGRAD). Under mixed
// precision the library computes in f32 and rounds once to half: a linear
// layer's sum, its GELU and the GELU's input kept for the backward pass
// (the aux matrix, rounded too); the derivative of a product at that aux.
// Each form's conditions are stated where it is matched.
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

/// The cast that rounds `v` to `half`, when that is `v`'s one reader.
static CastOp roundingOf(Value v, Type half) {
  if (!v.hasOneUse())
    return {};
  auto round = dyn_cast<CastOp>(*v.getUsers().begin());
  if (!round || round.getType().getElementType() != half)
    return {};
  return round;
}

/// The tanh GELU a linear layer's f32 sum `q` goes on to unrounded under
/// mixed precision (MixedPrecision.cpp, gelu-epilogues), when the library
/// can apply it: the GELU's result is rounded to half by its one reader,
/// and `q`'s only other reader, in a training step, is its own rounding
/// to half, the aux matrix the GELU's gradient reads (`aux`, null when
/// there is none). Null when `q` is not such a sum.
static GeluOp halfGeluOf(Value q, Type half, const FusionTarget &target,
                         CastOp &aux) {
  GeluOp gelu;
  aux = {};
  for (Operation *user : q.getUsers()) {
    if (auto g = dyn_cast<GeluOp>(user); g && !gelu)
      gelu = g;
    else if (auto c = dyn_cast<CastOp>(user);
             c && !aux && c.getType().getElementType() == half)
      aux = c;
    else
      return {};
  }
  if (!gelu || gelu.getApproximate() != "tanh" ||
      !roundingOf(gelu.getResult(), half) ||
      !(aux ? target.geluAuxEpilogue : target.geluTanhEpilogue))
    return {};
  return gelu;
}

/// Whether cuBLASLt's aux and bias-gradient forms fit the product `v` of a
/// matmul group `g`: one matrix once the batch is folded into rows (a
/// rank-2 rhs and an lhs not transposed), as the bias gradient sums every
/// row; a row length that is a multiple of 8, the leading dimension
/// cuBLASLt wants of an aux matrix (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD);
/// and f32 throughout, or half operands whose f32 sum the library rounds
/// to half after the epilogue (out and aux in half).
static bool auxFits(Value v, const Group &g) {
  auto mm = dyn_cast<MatmulOp>(g.members.front());
  if (!mm || mm.getTransposeLhs() ||
      cast<RankedTensorType>(mm.getRhs().getType()).getRank() != 2)
    return false;
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape().back() % 8 != 0)
    return false;
  if (halfOperandsOf(g))
    return true;
  return !mm.getF32Result() && type.getElementType().isF32() &&
         cast<RankedTensorType>(mm.getLhs().getType())
             .getElementType()
             .isF32();
}

/// Whether `add` is a bias epilogue for `v`, the value of a matmul group
/// `g` that has grown no further than a scale: the other operand is one
/// value per output column. Under mixed precision the bias is a half
/// value widened (`widened`, in this group by then, or about to join it)
/// and the sum is rounded back to half by its one reader, so that the
/// library reads a half bias and writes a half out (MixedPrecision.cpp);
/// or the sum goes on to a tanh GELU the library applies (halfGeluOf).
static bool isBiasEpilogue(AddOp add, Value v, const Group &g,
                           const FusionTarget &target, Operation *&widened) {
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
          half)
    return false;
  CastOp aux;
  if (!roundingOf(add.getResult(), half) &&
      (!halfGeluOf(add.getResult(), half, target, aux) ||
       (aux && !auxFits(add.getResult(), g))))
    return false;
  widened = widen;
  return true;
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
  // The group whose value `v` is, when `op` may be its epilogue: the value
  // the library writes as it stands (Group::last), read by nothing else
  // unless `shared`: the library writes the epilogue's result instead.
  // -1 when `v` is a value of some other group's, or of a matmul group's
  // that is read elsewhere too; -2 when it is no group's, or a side value
  // of a matmul group's (a widened bias or aux, the aux matrix).
  auto libraryOf = [&](Value v, bool shared = false) -> int {
    Operation *def = v.getDefiningOp();
    auto it = def ? groupOf.find(def) : groupOf.end();
    if (it == groupOf.end())
      return -2;
    Group &g = groups[it->second];
    if (g.kind == Group::Library && def != g.last && isa<CastOp>(def))
      return -2;
    if (g.kind != Group::Library || (!shared && !v.hasOneUse()) ||
        def != g.last)
      return -1;
    return g.id;
  };
  // `op` takes group g's value a stage further (Group::epilogue), named
  // `why` in the fusion report.
  auto grow = [&](Group &g, int stage, std::string why) {
    what = std::move(why);
    g.epilogue = stage;
    g.last = op;
    return g.id;
  };
  auto halfName = [](Type half) {
    return std::string(isa<BFloat16Type>(half) ? "bf16" : "f16");
  };
  // cuBLASLt's training forms of the tanh GELU (FusionTarget).
  if (auto grad = dyn_cast<GeluGradOp>(op)) {
    // DGELU: the derivative applied to a bare product, taken at a value
    // the library reads (the forward pass's activation input). Under mixed
    // precision the product is the f32 sum of half operands, the value the
    // half aux widened (joined already), and the result is rounded to half
    // by its one reader.
    int id = libraryOf(grad.getGrad());
    if (!target.dgeluEpilogue || grad.getApproximate() != "tanh" || id < 0 ||
        groups[id].epilogue != 0 || !auxFits(grad.getGrad(), groups[id]))
      return -1;
    Group &g = groups[id];
    if (Type half = halfOperandsOf(g)) {
      if (g.members.size() != 2 ||
          g.members.back() != grad.getOperand().getDefiningOp() ||
          !roundingOf(grad.getResult(), half))
        return -1;
    } else if (g.members.size() != 1) {
      return -1;
    }
    return grow(g, 5,
                "gelu's derivative at its input, which the library reads "
                "(DGELU)");
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
    // library writes too: under mixed precision, that input rounded to
    // half (joined already), and the activation rounded by its one reader.
    int id = libraryOf(gelu.getOperand(), /*shared=*/true);
    if (id < 0 || groups[id].epilogue >= 3 ||
        !auxFits(gelu.getOperand(), groups[id]))
      return -1;
    Group &g = groups[id];
    if (Type half = halfOperandsOf(g)) {
      CastOp aux;
      if (!halfGeluOf(gelu.getOperand(), half, target, aux) || !aux ||
          !groupOf.count(aux) || groupOf[aux] != id)
        return -1;
    }
    return grow(g, 3,
                "activation, its input written too for the backward pass "
                "(GELU_AUX)");
  }
  if (auto round = dyn_cast<CastOp>(op); round && target.biasEpilogue) {
    // GELU_AUX under mixed precision: the sum rounded to half for the
    // GELU's gradient, before the GELU joins (halfGeluOf).
    Value q = round.getOperand();
    if (int id = libraryOf(q, /*shared=*/true); id >= 0) {
      Group &g = groups[id];
      Type half = halfOperandsOf(g);
      CastOp aux;
      if (half && g.epilogue == 2 && resultType == half &&
          halfGeluOf(q, half, target, aux) && aux == round &&
          auxFits(q, g)) {
        what = "its sum rounded to " + halfName(half) +
               ", the aux matrix, for the backward pass (GELU_AUX)";
        return id;
      }
    }
  }
  if (auto widen = dyn_cast<CastOp>(op);
      widen && widen.getResult().hasOneUse()) {
    // A half value widened for the one op that reads it, which the library
    // applies to the f32 values.
    Operation *user = *widen.getResult().getUsers().begin();
    Type from = getElementTypeOrSelf(widen.getOperand().getType());
    // A ReLU after a linear layer's one rounding under mixed precision:
    // ReLU commutes with rounding (relu(rn(q)) = rn(relu(q)), exactly), so
    // the library applies it to the f32 sum and rounds once. The rounded
    // sum widened for it, the ReLU and the rounding of its result (exact)
    // join; the rounded sum is then no value of its own.
    if (auto relu = dyn_cast<ReluOp>(user); relu && target.reluEpilogue) {
      if (int id = libraryOf(widen.getOperand()); id >= 0) {
        Group &g = groups[id];
        Type half = halfOperandsOf(g);
        if (half && g.epilogue == 4 && from == half &&
            roundingOf(relu.getResult(), half)) {
          return grow(g, 8,
                      "its result widened for a ReLU, which commutes with "
                      "the rounding");
        }
      }
    }
    // A half bias widened for the add that follows (isBiasEpilogue): the
    // library reads the half values.
    if (auto add = dyn_cast<AddOp>(user); add && target.biasEpilogue) {
      Value v = add.getLhs() == widen.getResult() ? add.getRhs() : add.getLhs();
      Operation *widened;
      if (int id = libraryOf(v);
          id >= 0 && isBiasEpilogue(add, v, groups[id], target, widened) &&
          widened == op) {
        what = "its bias, read as " + halfName(from);
        return id;
      }
    }
    // DGELU under mixed precision: the half aux widened for the derivative
    // that follows; the library reads the half values.
    if (auto grad = dyn_cast<GeluGradOp>(user);
        grad && grad.getOperand() == widen.getResult() &&
        target.dgeluEpilogue && grad.getApproximate() == "tanh") {
      if (int id = libraryOf(grad.getGrad()); id >= 0) {
        Group &g = groups[id];
        Type half = halfOperandsOf(g);
        if (half && from == half && g.epilogue == 0 &&
            g.members.size() == 1 && auxFits(grad.getGrad(), g) &&
            roundingOf(grad.getResult(), half)) {
          what = "gelu's derivative's aux, read as " + halfName(half);
          return id;
        }
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
      // The one rounding of a linear layer's f32 sum and bias (and GELU),
      // or of gelu's derivative of a product, under mixed precision: the
      // library writes its out in the operands' type.
      Type half = halfOperandsOf(g);
      if (!half || resultType != half)
        return -1;
      if (g.epilogue != 2 && g.epilogue != 3 && g.epilogue != 5 &&
          g.epilogue != 9)
        return -1;
      return grow(g, g.epilogue == 5 ? 7 : 4,
                  "rounding to " + halfName(half));
    }
    if (isa<MulOp>(op) && g.epilogue < 1 && target.scaleEpilogue) {
      auto c = other.getDefiningOp<ConstantOp>();
      if (!c || !cast<DenseElementsAttr>(c.getValue()).isSplat())
        return -1;
      return grow(g, 1, "scale");
    }
    Operation *widened;
    if (auto add = dyn_cast<AddOp>(op);
        add && target.biasEpilogue &&
        isBiasEpilogue(add, v, g, target, widened)) {
      // Under mixed precision the bias's widening joined the group first.
      auto joined = widened ? groupOf.find(widened) : groupOf.end();
      if (widened && (joined == groupOf.end() || joined->second != g.id))
        return -1;
      return grow(g, 2, "bias");
    }
    auto gelu = dyn_cast<GeluOp>(op);
    bool applies = isa<ReluOp>(op)
                       ? target.reluEpilogue
                       : gelu && (gelu.getApproximate() == "tanh"
                                      ? target.geluTanhEpilogue
                                      : target.geluErfEpilogue);
    // Under mixed precision an activation applies to the f32 sum only
    // when its result is rounded to half next (halfGeluOf).
    if (Type half = halfOperandsOf(g);
        half && !roundingOf(op->getResult(0), half))
      applies = false;
    if (applies && g.epilogue < 3) {
      return grow(g, 3, "activation");
    }
    if (applies && isa<ReluOp>(op) && g.epilogue == 8) {
      return grow(g, 9, "activation, before the rounding");
    }
    return -1;
  }
  return -1;
}
