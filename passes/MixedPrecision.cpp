//===- MixedPrecision.cpp - matmuls in bf16 or f16 ------------------------===//
//
// `training.precision: BF16_MIXED | FP16_MIXED` (docs/MixedPrecision.md).
// Runs on @forward before autodiff, so the backward graph is derived from
// the casts and inherits the same precision:
//
//   %y = sgraph.matmul %a, %b : (f32, f32) -> f32
//
// becomes
//
//   %a16 = sgraph.cast %a : f32 to bf16
//   %b16 = sgraph.cast %b : f32 to bf16
//   %y16 = sgraph.matmul %a16, %b16 : (bf16, bf16) -> bf16
//   %y   = sgraph.cast %y16 : bf16 to f32
//
// A matmul whose only reader adds a bias (one value per output column) is
// a linear layer, and rounds once after the bias, as PyTorch autocast's
// `linear` and the matmul libraries' bias epilogues (oneDNN, cuBLASLt)
// compute it:
//
//   %p   = sgraph.matmul %a16, %b16 {f32_result = true} : (bf16, bf16) -> f32
//   %c16 = sgraph.cast %c : f32 to bf16            (the bias, as autocast)
//   %c32 = sgraph.cast %c16 : bf16 to f32
//   %q   = sgraph.add %p, %c32 : f32
//   %q16 = sgraph.cast %q : f32 to bf16            (the one rounding)
//   %y   = sgraph.cast %q16 : bf16 to f32
//
// Fusion makes the four a single library call with a bf16 bias and a bf16
// out (passes/FuseKernels.cpp).
//
// With `gelu-epilogues` (a target whose matmul library applies the tanh
// GELU and writes its input for the backward pass: cuBLASLt), a linear
// layer whose one reader is a tanh GELU is not rounded after the bias: the
// GELU reads the f32 sum %q, and its result is rounded where a matmul
// reads it, as GELU_AUX_BIAS computes under bf16 (measured on an H200,
// docs/Cuda.md). Its gradient is taken at %q rounded to half, the aux
// matrix the library writes (GeluOp's gradient rule).
//
// Every other op keeps computing in f32: the statistics of layer_norm and
// softmax, the loss, the global norm and the optimizer, and the parameters
// (the master weights) themselves. Autodiff turns the casts into their
// transposes, so each backward matmul reads half-precision operands too
// (the incoming gradient cast down, the saved operand as stored) and its
// gradient is widened back to f32 before it is summed into a parameter's.
// Fusion then stores the cast-down operands straight from the kernels that
// produce them: the activations the backward pass keeps are the half ones.
//
// An f64 model's matmuls are cast the same way (f64 to bf16 and back),
// which gives the checks an exact evaluation with the same rounding points
// (test/e2e/compare_compiled.py). A matmul of integers, or of operands
// already in half precision, is left as it is.
//
//===----------------------------------------------------------------------===//

#include "passes/OptimizerStep.h"
#include "passes/Passes.h"

namespace sinter {
#define GEN_PASS_DEF_MIXEDPRECISIONPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter;

namespace {

class MixedPrecisionPass
    : public sinter::impl::MixedPrecisionPassBase<MixedPrecisionPass> {
public:
  using MixedPrecisionPassBase::MixedPrecisionPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string precision = this->precision;
    if (precision.empty()) {
      // The model's own setting, when it has a training section.
      if (module->getAttr(sgraph::attr::kTraining)) {
        FailureOr<TrainingConfig> config =
            readTrainingConfig(module, module.getLoc());
        if (failed(config))
          return signalPassFailure();
        precision = config->precision;
      }
    }
    Type half;
    if (precision == "bf16_mixed")
      half = BFloat16Type::get(&getContext());
    else if (precision == "fp16_mixed")
      half = Float16Type::get(&getContext());
    else if (precision.empty() || precision == "fp32")
      return;
    else {
      module.emitError() << "precision '" << precision
                         << "' is not one of fp32, bf16_mixed, fp16_mixed";
      return signalPassFailure();
    }
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward)
      return;
    forward.walk([&](sgraph::MatmulOp op) { rewrite(op, half); });
  }

private:
  /// Whether `add`'s sum goes on to the library's GELU epilogue unrounded:
  /// its one reader is a tanh GELU whose one reader is a matmul (which
  /// reads it rounded to half), so that the library writes the GELU in
  /// half. A GELU read otherwise (a dropout, a residual) keeps the rounding
  /// after the bias, and the bias stays the library's epilogue.
  bool roundsAfterGelu(sgraph::AddOp add) const {
    if (!geluEpilogues || !add.getResult().hasOneUse())
      return false;
    auto gelu = dyn_cast<sgraph::GeluOp>(*add.getResult().getUsers().begin());
    if (!gelu || gelu.getApproximate() != "tanh" ||
        !gelu.getResult().hasOneUse())
      return false;
    Operation *reader = *gelu.getResult().getUsers().begin();
    return isa<sgraph::MatmulOp, sgraph::CastOp>(reader);
  }

  /// The add that puts a bias on `mm`'s result, when that is its only use:
  /// the other operand is one value per output column ([N], or [1.., N]) of
  /// the result's own type.
  static sgraph::AddOp biasAddOf(sgraph::MatmulOp mm) {
    Value y = mm.getResult();
    if (!y.hasOneUse())
      return {};
    auto add = dyn_cast<sgraph::AddOp>(*y.getUsers().begin());
    if (!add || add.getResult().getType() != y.getType())
      return {};
    Value bias = add.getLhs() == y ? add.getRhs() : add.getLhs();
    if (bias == y)
      return {};
    auto bt = cast<RankedTensorType>(bias.getType());
    auto yt = cast<RankedTensorType>(y.getType());
    ArrayRef<int64_t> b = bt.getShape();
    if (bt.getElementType() != yt.getElementType() || b.empty() ||
        b.back() != yt.getShape().back() ||
        llvm::any_of(b.drop_back(), [](int64_t d) { return d != 1; }))
      return {};
    return add;
  }

  void rewrite(sgraph::MatmulOp op, Type half) {
    auto wide = [](Value v) {
      Type t = cast<RankedTensorType>(v.getType()).getElementType();
      return t.isF32() || t.isF64();
    };
    if (!wide(op.getLhs()) || !wide(op.getRhs()) || !wide(op.getResult()))
      return;
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto castTo = [&](Value v, Type element) -> Value {
      auto type = cast<RankedTensorType>(v.getType()).clone(element);
      return b.create<sgraph::CastOp>(loc, type, v);
    };
    Value lhs = castTo(op.getLhs(), half), rhs = castTo(op.getRhs(), half);
    auto wideType = cast<RankedTensorType>(op.getResult().getType());
    if (sgraph::AddOp add = biasAddOf(op)) {
      // A linear layer: its bias, in half precision as the operands, is
      // added to the f32 products before the one rounding, as autocast's
      // `linear` computes and the matmul library's epilogue does.
      unsigned biasIndex = add.getLhs() == op.getResult() ? 1 : 0;
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(add);
        Value bias16 = castTo(add->getOperand(biasIndex), half);
        add->setOperand(biasIndex,
                        castTo(bias16, wideType.getElementType()));
      }
      auto product = b.create<sgraph::MatmulOp>(
          loc, lhs, rhs, op.getTransposeLhsAttr(), op.getTransposeRhsAttr(),
          b.getBoolAttr(true));
      Value sum = product;
      if (!wideType.getElementType().isF32())
        sum = castTo(sum, wideType.getElementType());
      op.getResult().replaceAllUsesWith(sum);
      op.erase();
      if (roundsAfterGelu(add))
        return;
      b.setInsertionPointAfter(add);
      Value rounded = castTo(add.getResult(), half);
      Value widened = castTo(rounded, wideType.getElementType());
      add.getResult().replaceAllUsesExcept(widened,
                                           rounded.getDefiningOp());
      return;
    }
    auto product = b.create<sgraph::MatmulOp>(loc, lhs, rhs,
                                              op.getTransposeLhsAttr(),
                                              op.getTransposeRhsAttr());
    Value widened = castTo(product, wideType.getElementType());
    op.getResult().replaceAllUsesWith(widened);
    op.erase();
  }
};

} // namespace
