//===- ConvertCpuToLLVM.cpp - CPU kernel functions to the LLVM dialect ---===//
//
// The first half of the CPU target's binary phase: MLIR's standard
// conversions, in the order that works for our kernels (linalg to loops,
// polynomial math, affine and SCF to CF, strided memref metadata to plain
// offset arithmetic, then memref, arith, math, func and CF to the LLVM
// dialect), run as a nested pipeline. The function-level ones run per
// kernel function, which MLIR spreads over the context's threads.
//
// Before them, every bf16 extension becomes integer code (ExtendBf16AsBits:
// LLVM's cost model misprices the vector form), and without AVX-512 BF16 the
// truncations too.
//
// Then what the conversions lose: kernel bodies (`*_body`) become internal,
// so LLVM inlines each into its one entry, and every pointer argument
// `noalias` (each is one planned buffer; the inliner turns the promise into
// alias scopes, and without it LLVM vectorizes no loop that stores into the
// arena while loading from it). FuncToLLVM in MLIR 19 drops both from
// func.func. A body that several entries share (`sinter.shared_body`) is
// also `noinline`: it is compiled once and called, and its own `noalias`
// arguments keep its loops vectorized. Programs are left as they are for
// sinter-lower-step.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/Passes.h"
#include "dialects/Schedule/ScheduleOps.h"

#include "mlir/Pass/PassManager.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSet.h"

namespace sinter::codegen {
#define GEN_PASS_DEF_CONVERTCPUTOLLVMPASS
#include "compiler/CodeGen/Cpu/Passes.h.inc"
} // namespace sinter::codegen

using namespace mlir;

namespace {

void buildConversion(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  // linalg.generic -> scf.for nests over the memref views.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addNestedPass<func::FuncOp>(sinter::codegen::createApproximateMathPass());
  pm.addNestedPass<func::FuncOp>(createLowerAffinePass());
  pm.addNestedPass<func::FuncOp>(createConvertSCFToCFPass());
  // Subviews become explicit offset/stride arithmetic.
  pm.addNestedPass<func::FuncOp>(memref::createExpandStridedMetadataPass());
  pm.addNestedPass<func::FuncOp>(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// bf16 -> f32 as the bits it is: the 16 bits shifted into the top of an
/// f32, exactly what the instructions do (vpmovzxwd, vpslld). LLVM 19's x86
/// cost model prices a vector `fpext bfloat` on AVX-512 BF16 hosts so high
/// that a loop reading two bf16 operands was vectorized 4 wide instead of
/// 16 (the GELU's gradient in GPT-2 at bf16: 2.7 ms a layer instead of
/// 0.9); as integer code it is priced as what it is.
struct ExtendBf16AsBits : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    Type in = getElementTypeOrSelf(op.getIn().getType());
    Type out = getElementTypeOrSelf(op.getType());
    if (!in.isBF16() || !out.isF32())
      return failure();
    auto like = [&](Type element) -> Type {
      if (auto shaped = dyn_cast<ShapedType>(op.getType()))
        return shaped.clone(element);
      return element;
    };
    Location loc = op.getLoc();
    Value bits = rewriter.create<arith::BitcastOp>(
        loc, like(rewriter.getI16Type()), op.getIn());
    Value wide = rewriter.create<arith::ExtUIOp>(
        loc, like(rewriter.getI32Type()), bits);
    TypedAttr sixteen = rewriter.getI32IntegerAttr(16);
    if (auto shaped = dyn_cast<ShapedType>(wide.getType()))
      sixteen = SplatElementsAttr::get(shaped, sixteen);
    Value shift = rewriter.create<arith::ConstantOp>(loc, sixteen);
    Value shifted = rewriter.create<arith::ShLIOp>(loc, wide, shift);
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, op.getType(), shifted);
    return success();
  }
};

class ConvertCpuToLLVMPass
    : public sinter::codegen::impl::ConvertCpuToLLVMPassBase<
          ConvertCpuToLLVMPass> {
public:
  using ConvertCpuToLLVMPassBase::ConvertCpuToLLVMPassBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    ConvertCpuToLLVMPassBase::getDependentDialects(registry);
    registry.insert<affine::AffineDialect, cf::ControlFlowDialect>();
    OpPassManager pm(ModuleOp::getOperationName());
    buildConversion(pm);
    pm.getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringSet<> shared;
    module.walk([&](func::FuncOp fn) {
      if (fn->hasAttr("sinter.shared_body"))
        shared.insert(fn.getName());
    });
    {
      RewritePatternSet patterns(&getContext());
      patterns.add<ExtendBf16AsBits>(&getContext());
      if (expandBf16)
        arith::populateExpandBFloat16Patterns(patterns);
      if (failed(applyPatternsAndFoldGreedily(module, std::move(patterns))))
        return signalPassFailure();
    }
    // The programs stay out of the conversion (and come back first, where
    // the lowering put them): they are not converted, and every pass of the
    // pipeline would walk their launches (60,000 at a thousand blocks, most
    // of the time the pipeline took there).
    OwningOpRef<ModuleOp> programs = ModuleOp::create(module.getLoc());
    for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
      if (isa<sinter::sched::ProgramOp>(op))
        op.moveBefore(programs->getBody(), programs->getBody()->end());
    OpPassManager pm(ModuleOp::getOperationName());
    buildConversion(pm);
    LogicalResult converted = runPipeline(pm, module);
    module.getBody()->getOperations().splice(
        module.getBody()->begin(), programs->getBody()->getOperations());
    if (failed(converted))
      return signalPassFailure();
    Builder b(&getContext());
    llvm::StringSet<> wrapped;
    module.walk([&](LLVM::LLVMFuncOp fn) {
      if (fn.getName().starts_with("_mlir_ciface_"))
        wrapped.insert(fn.getName().drop_front(strlen("_mlir_ciface_")));
    });
    module.walk([&](LLVM::LLVMFuncOp fn) {
      // An entry is called only by its C-interface wrapper, which the
      // runtime calls: internal, it is inlined there and not compiled on
      // its own.
      if (wrapped.contains(fn.getName()) && !fn.isExternal()) {
        fn.setLinkage(LLVM::Linkage::Internal);
        return;
      }
      if (!fn.getName().ends_with("_body") || fn.isExternal())
        return;
      fn.setLinkage(LLVM::Linkage::Internal);
      if (shared.contains(fn.getName()))
        fn.setNoInline(true);
      // All at once: setting one argument's attributes makes a new array
      // of every argument's, which the context keeps.
      SmallVector<DictionaryAttr> argAttrs;
      for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
        NamedAttrList attrs(fn.getArgAttrDict(i));
        if (isa<LLVM::LLVMPointerType>(fn.getArgument(i).getType()))
          attrs.set(LLVM::LLVMDialect::getNoAliasAttrName(), b.getUnitAttr());
        argAttrs.push_back(attrs.getDictionary(&getContext()));
      }
      fn.setAllArgAttrs(argAttrs);
    });
  }
};

} // namespace
