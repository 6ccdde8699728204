//===- CausalMatmuls.cpp - matmuls that may skip a causal triangle --------===//
//
// Causal attention computes six batched T x T products a layer (the scores,
// the probabilities times V, and four in the backward pass), and in each
// of them a triangle is known before it runs: the probabilities and their
// gradient are exactly 0 above the diagonal (the mask's -inf, through exp),
// and the scores and the probabilities' gradient are read only on and
// below it. A library matmul does not know that and computes all of it.
// This pass proves it and marks the `sgraph.matmul`
// (`sinter.triangle`, lowered to `sched.matmul`'s `triangle`), and the
// executor splits the product into blocks along the diagonal and skips
// those that only add zeros or write what nobody reads: 5/8 of the
// products at T = 256, 9/16 at T = 1024 (runtime/Exec/Matmul.cpp).
//
// What is proved, over the two trailing axes of a square matrix:
//
//   zeros    a value is 0 strictly above (lower) or below (upper) its
//            diagonal: `select(causal_mask, x, 0)`; `exp` of a value that
//            is -inf there (`select(causal_mask, x, -inf)`, minus or plus
//            anything per row, times a positive constant); and products,
//            quotients, casts, negations and dropouts of such values (a
//            transpose of the two axes swaps lower and upper).
//   unread   a matmul's result is read only on and below its diagonal: each
//            of its readers is the kept branch of `select(causal_mask, ..)`,
//            or a product with a value that is 0 above the diagonal, or an
//            elementwise op (add, sub, mul, div as the dividend, neg, cast,
//            dropout, exp) whose own result is unread in the same sense.
//
// A matmul whose op(lhs) or op(rhs) has such zeros gets `lhs_lower`,
// `lhs_upper`, `rhs_lower` or `rhs_upper`; one whose result is unread above
// the diagonal gets `out_lower` (the executor writes 0 there: a reader that
// multiplies by 0 must not meet a stale NaN). The marks are exact for
// finite numbers: the skipped products are 0 * finite, and the skipped
// outputs are never seen. Where the whole product would have held an inf
// or NaN above the diagonal (a run that has already overflowed), the
// skipped form gives what a fused attention kernel gives there: the
// product of the finite part.
//
// Only matmuls with no epilogue yet are marked (fusion adds scale and
// bias later; the executor refuses a triangle with a bias or activation,
// and the fusion of a scale keeps the mark, a scale being elementwise).
//
// sinter-causal-kernel-inputs, after fusion and recompute, uses the same
// proof (passes/CausalProver.h, which follows values into and out of
// fusion regions) to mark the kernel operands that are 0 above the
// diagonal (`sinter.causal_zeros`): the softmax's probabilities, which its
// gradient's kernel reads; a row kernel then need not read them there
// (docs/CodeGen.md, "causal rows").
//
//===----------------------------------------------------------------------===//

#include "passes/CausalProver.h"
#include "passes/Passes.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace sinter {
#define GEN_PASS_DEF_CAUSALMATMULSPASS
#define GEN_PASS_DEF_CAUSALKERNELINPUTSPASS
#include "passes/Passes.h.inc"
} // namespace sinter

using namespace mlir;
using namespace sinter;
using namespace sinter::sgraph;

namespace {

using causal::flip;
using causal::Prover;
using causal::Side;

class CausalMatmulsPass
    : public sinter::impl::CausalMatmulsPassBase<CausalMatmulsPass> {
public:
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      Prover prover;
      func.walk([&](MatmulOp mm) {
        if (StringRef t = triangleOf(prover, mm); !t.empty())
          mm->setAttr("sinter.triangle", StringAttr::get(mm.getContext(), t));
      });
    });
  }

private:
  static StringRef triangleOf(Prover &prover, MatmulOp mm) {
    auto side = [&](Value operand, bool transposed) {
      Side s = prover.zeros(operand);
      return transposed ? flip(s) : s;
    };
    Side lhs = side(mm.getLhs(), mm.getTransposeLhs());
    if (lhs != Side::None)
      return lhs == Side::Lower ? "lhs_lower" : "lhs_upper";
    Side rhs = side(mm.getRhs(), mm.getTransposeRhs());
    if (rhs != Side::None)
      return rhs == Side::Lower ? "rhs_lower" : "rhs_upper";
    if (prover.unreadAbove(mm.getResult()))
      return "out_lower";
    return "";
  }
};

class CausalKernelInputsPass
    : public sinter::impl::CausalKernelInputsPassBase<CausalKernelInputsPass> {
public:
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      Prover prover;
      func.walk([&](FusionOp fusion) {
        if (fusion.getKind() != "loop" && fusion.getKind() != "reduction")
          return;
        SmallVector<int64_t> zeros;
        for (auto [i, input] : llvm::enumerate(fusion.getInputs()))
          if (prover.zeros(input) == Side::Lower)
            zeros.push_back(i);
        if (zeros.empty())
          fusion->removeAttr(causal::kZerosAttr);
        else
          fusion->setAttr(causal::kZerosAttr,
                          DenseI64ArrayAttr::get(fusion.getContext(), zeros));
      });
    });
  }
};

} // namespace
