//===- ApproximateMath.cpp - polynomial math for vectorizable kernels ----===//
//
// f32 exp, log, tanh, erf, ... become MLIR's polynomial approximations: unlike
// libm calls, LLVM vectorizes them, and the kernels that are not
// memory-bound (GELU's erf, softmax's exp) spend their time there. Runs in
// sinter-convert-cpu-to-llvm, after linalg has become loops.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sinter::codegen {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "compiler/CodeGen/Cpu/Passes.h.inc"
} // namespace sinter::codegen

using namespace mlir;

namespace {

class ApproximateMathPass
    : public sinter::codegen::impl::ApproximateMathPassBase<
          ApproximateMathPass> {
public:
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
