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
  static void rewrite(sgraph::MatmulOp op, Type half) {
    auto wide = [](Value v) {
      Type t = cast<RankedTensorType>(v.getType()).getElementType();
      return t.isF32() || t.isF64();
    };
    if (!wide(op.getLhs()) || !wide(op.getRhs()) || !wide(op.getResult()))
      return;
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto narrow = [&](Value v) -> Value {
      auto type = cast<RankedTensorType>(v.getType()).clone(half);
      return b.create<sgraph::CastOp>(loc, type, v);
    };
    Value lhs = narrow(op.getLhs()), rhs = narrow(op.getRhs());
    auto product = b.create<sgraph::MatmulOp>(loc, lhs, rhs,
                                              op.getTransposeLhsAttr(),
                                              op.getTransposeRhsAttr());
    Value widened =
        b.create<sgraph::CastOp>(loc, op.getResult().getType(), product);
    op.getResult().replaceAllUsesWith(widened);
    op.erase();
  }
};

} // namespace
