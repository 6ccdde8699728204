//===- CpuCodeGen.cpp - the scheduled step to kernels, object, binary ----===//
//
// lowerStep walks the planned entry function in order: every sgraph.fusion
// becomes a kernel (KernelEmitter.cpp) and a `kernel` step, every matmul a
// `matmul` step on its planned buffers; reshapes and constants need no
// step. When a new parameter or optimizer-state value could not be written
// in place, a final `copy` step moves it over the argument (the state
// contract of docs/StepProgram.md).
//
// The object is compiled ahead of time for the host CPU (its name and
// features, e.g. znver4 with AVX-512), never JIT-compiled at training time.
// LLVM's O2 pipeline runs before code generation: that is what vectorizes
// the kernels' loops (llc alone would not).
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/CpuCodeGen.h"

#include "compiler/CodeGen/KernelEmitter.h"
#include "dialects/Graph/GraphOps.h"
#include "passes/PlanMemory.h"

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
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir;
using namespace sinter;
using namespace sinter::codegen;
using namespace sinter::sgraph;

void sinter::codegen::registerCpuCodeGenDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, func::FuncDialect, linalg::LinalgDialect,
                  math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
                  cf::ControlFlowDialect, affine::AffineDialect,
                  LLVM::LLVMDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

namespace {

int slabIndex(StringRef slab) {
  return llvm::StringSwitch<int>(slab)
      .Case("arena", 0)
      .Case("params", 1)
      .Case("opt_state", 2)
      .Case("io", 3)
      .Case("constants", 4)
      .Default(-1);
}

std::string dtypeName(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isF64())
    return "f64";
  if (t.isF16())
    return "f16";
  if (t.isBF16())
    return "bf16";
  if (t.isInteger(1))
    return "i1";
  return "i" + std::to_string(t.getIntOrFloatBitWidth());
}

/// The little-endian bytes of a constant, i1 as one byte per element.
std::string constantHex(DenseElementsAttr value) {
  std::string bytes;
  Type et = value.getElementType();
  if (et.isInteger(1)) {
    for (bool v : value.getValues<bool>())
      bytes.push_back(v ? 1 : 0);
  } else {
    int64_t width = plan::elementBytes(et);
    auto append = [&](const APInt &bits) {
      for (int64_t k = 0; k < width; ++k)
        bytes.push_back(
            static_cast<char>(bits.extractBitsAsZExtValue(8, 8 * k)));
    };
    if (isa<FloatType>(et)) {
      for (const APFloat &v : value.getValues<APFloat>())
        append(v.bitcastToAPInt());
    } else {
      for (const APInt &v : value.getValues<APInt>())
        append(v);
    }
  }
  static const char *digits = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : bytes) {
    hex.push_back(digits[c >> 4]);
    hex.push_back(digits[c & 15]);
  }
  return hex;
}

class StepLowering {
public:
  StepLowering(func::FuncOp fn, ModuleOp kernels, StringRef symbolPrefix)
      : fn(fn), kernels(kernels), symbolPrefix(symbolPrefix) {}
  LogicalResult run();
  llvm::json::Object program;

private:
  DictionaryAttr placeAttr(Value v);
  Place placeOf(Value v);
  /// The program's buffer id for `v`, added on first use.
  int64_t bufferId(Value v);
  /// A matmul with its epilogue (scale, bias, activation) as one library
  /// step.
  LogicalResult lowerMatmulRegion(FusionOp fusion);

  func::FuncOp fn;
  ModuleOp kernels;
  StringRef symbolPrefix;
  llvm::json::Array buffers, steps, kernelList;
  DenseMap<Value, int64_t> ids;
};

DictionaryAttr StepLowering::placeAttr(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return fn.getArgAttrOfType<DictionaryAttr>(arg.getArgNumber(),
                                               "sinter.buffer");
  Operation *def = v.getDefiningOp();
  auto list = def->getAttrOfType<ArrayAttr>("sinter.buffers");
  if (!list)
    return {};
  return dyn_cast<DictionaryAttr>(list[cast<OpResult>(v).getResultNumber()]);
}

Place StepLowering::placeOf(Value v) {
  DictionaryAttr d = placeAttr(v);
  return Place{slabIndex(d.getAs<StringAttr>("slab").getValue()),
               d.getAs<IntegerAttr>("offset").getInt()};
}

int64_t StepLowering::bufferId(Value v) {
  if (auto it = ids.find(v); it != ids.end())
    return it->second;
  DictionaryAttr d = placeAttr(v);
  auto type = cast<RankedTensorType>(v.getType());
  llvm::json::Array shape;
  for (int64_t s : type.getShape())
    shape.push_back(s);
  std::string name;
  if (auto arg = dyn_cast<BlockArgument>(v))
    name = argumentName(fn, arg.getArgNumber());
  int64_t id = buffers.size();
  buffers.push_back(llvm::json::Object{
      {"id", id},
      {"name", name},
      {"slab", d.getAs<StringAttr>("slab").getValue()},
      {"offset", d.getAs<IntegerAttr>("offset").getInt()},
      {"dtype", dtypeName(type.getElementType())},
      {"shape", std::move(shape)},
      {"category", d.getAs<StringAttr>("category").getValue()},
  });
  ids[v] = id;
  return id;
}

LogicalResult StepLowering::lowerMatmulRegion(FusionOp fusion) {
  Block &body = fusion.getBody().front();
  auto outer = [&](Value inner) -> Value {
    auto arg = dyn_cast<BlockArgument>(inner);
    return arg ? fusion.getInputs()[arg.getArgNumber()] : Value();
  };
  MatmulOp mm;
  double alpha = 1.0;
  Value bias;
  std::string activation = "none";
  for (Operation &op : body.without_terminator()) {
    if (isa<ConstantOp>(op))
      continue;
    if (auto m = dyn_cast<MatmulOp>(op)) {
      mm = m;
      continue;
    }
    if (auto mul = dyn_cast<MulOp>(op)) {
      Value c = mul.getLhs().getDefiningOp<ConstantOp>() ? mul.getLhs()
                                                         : mul.getRhs();
      alpha = cast<DenseElementsAttr>(c.getDefiningOp<ConstantOp>().getValue())
                  .getSplatValue<APFloat>()
                  .convertToDouble();
      continue;
    }
    if (auto add = dyn_cast<AddOp>(op)) {
      Value b = isa<BlockArgument>(add.getLhs()) ? add.getLhs() : add.getRhs();
      if (!isa<BlockArgument>(b))
        return add.emitOpError("matmul bias must be a kernel input");
      bias = outer(b);
      continue;
    }
    if (isa<ReluOp>(op)) {
      activation = "relu";
      continue;
    }
    if (auto g = dyn_cast<GeluOp>(op)) {
      activation = g.getApproximate() == "tanh" ? "gelu_tanh" : "gelu_erf";
      continue;
    }
    return op.emitOpError("is not a matmul epilogue the library applies");
  }
  if (!mm || !outer(mm.getLhs()) || !outer(mm.getRhs()))
    return fusion.emitOpError("matmul region without a matmul of its inputs");
  llvm::json::Object s{{"op", "matmul"},
                       {"lhs", bufferId(outer(mm.getLhs()))},
                       {"rhs", bufferId(outer(mm.getRhs()))},
                       {"out", bufferId(fusion.getResult(0))},
                       {"transpose_lhs", mm.getTransposeLhs()},
                       {"transpose_rhs", mm.getTransposeRhs()},
                       {"alpha", alpha},
                       {"activation", activation}};
  if (bias) {
    int64_t id = bufferId(bias);
    auto type = cast<RankedTensorType>(bias.getType());
    if (type.getRank() != 1) {
      // The runtime wants the bias as [N]: a view of the same bytes.
      llvm::json::Object view = *buffers[id].getAsObject();
      id = buffers.size();
      view["id"] = id;
      view["name"] = "";
      view["shape"] = llvm::json::Array{type.getShape().back()};
      buffers.push_back(std::move(view));
    }
    s["bias"] = id;
  }
  steps.push_back(std::move(s));
  return success();
}

llvm::json::Value initJson(DictionaryAttr init) {
  llvm::json::Object o;
  if (!init)
    return o;
  for (NamedAttribute a : init) {
    if (auto s = dyn_cast<StringAttr>(a.getValue()))
      o[a.getName().strref()] = s.getValue();
    else if (auto f = dyn_cast<FloatAttr>(a.getValue()))
      o[a.getName().strref()] = f.getValueAsDouble();
    else if (auto i = dyn_cast<IntegerAttr>(a.getValue()))
      o[a.getName().strref()] = i.getInt();
  }
  return o;
}

LogicalResult StepLowering::run() {
  auto memory = fn->getAttrOfType<DictionaryAttr>("sinter.memory");
  if (!memory)
    return fn.emitError("has no memory plan; run sinter-plan-memory first");
  ModuleOp module = fn->getParentOfType<ModuleOp>();
  int64_t seed = 0;
  if (auto training = module->getAttrOfType<DictionaryAttr>(attr::kTraining))
    if (auto s = training.getAs<IntegerAttr>("seed"))
      seed = s.getInt();

  // Index bounds of integer inputs: the rows of every embedding table they
  // index (through the kernel region that reads them), so that the trainer
  // can reject out-of-range token ids in the data instead of training on
  // clamped rows.
  llvm::DenseMap<unsigned, int64_t> bounds;
  fn.walk([&](EmbeddingOp e) {
    Value indices = e.getIndices();
    if (auto inner = dyn_cast<BlockArgument>(indices))
      if (auto fusion = dyn_cast<FusionOp>(inner.getOwner()->getParentOp()))
        indices = fusion.getInputs()[inner.getArgNumber()];
    auto arg = dyn_cast<BlockArgument>(indices);
    if (!arg || arg.getOwner()->getParentOp() != fn)
      return;
    int64_t rows = cast<RankedTensorType>(e.getTable().getType()).getDimSize(0);
    auto [it, inserted] = bounds.try_emplace(arg.getArgNumber(), rows);
    if (!inserted)
      it->second = std::min(it->second, rows);
  });

  // Arguments.
  llvm::json::Array arguments;
  for (BlockArgument arg : fn.getArguments()) {
    unsigned i = arg.getArgNumber();
    llvm::json::Object a{{"name", argumentName(fn, i)},
                         {"buffer", bufferId(arg)}};
    if (fn.getArgAttr(i, attr::kParam)) {
      a["kind"] = "param";
      a["init"] = initJson(fn.getArgAttrOfType<DictionaryAttr>(i, attr::kInit));
      // Other names of a tied parameter (lm_head.weight for
      // transformer.wte.weight): a checkpoint from elsewhere may use them.
      if (auto aliases = fn.getArgAttrOfType<ArrayAttr>(i, attr::kAliases)) {
        llvm::json::Array names;
        for (auto alias : aliases.getAsRange<StringAttr>())
          names.push_back(alias.getValue());
        if (!names.empty())
          a["aliases"] = std::move(names);
      }
    } else if (fn.getArgAttr(i, attr::kOptState)) {
      a["kind"] = "opt_state";
    } else if (fn.getArgAttr(i, attr::kStep)) {
      a["kind"] = "step";
    } else if (fn.getArgAttr(i, attr::kHyper)) {
      // A hyperparameter the runtime sets (to its default unless told
      // otherwise), e.g. the peak learning rate.
      a["kind"] = "hyper";
      auto value = fn.getArgAttrOfType<FloatAttr>(i, attr::kDefault);
      auto type = cast<RankedTensorType>(arg.getType());
      if (!value || type.getRank() != 0 || !type.getElementType().isF64())
        return fn.emitError("hyperparameter argument '")
               << argumentName(fn, i)
               << "' must be a 0-d f64 tensor with an f64 '" << attr::kDefault
               << "'";
      a["default"] = value.getValueAsDouble();
    } else {
      a["kind"] = "input";
      if (auto it = bounds.find(i); it != bounds.end())
        a["bound"] = it->second;
    }
    arguments.push_back(std::move(a));
  }

  // Steps in order.
  llvm::json::Array constants;
  Block &body = fn.getBody().front();
  for (Operation &op : body) {
    if (auto fusion = dyn_cast<FusionOp>(op);
        fusion && fusion.getKind() == "matmul") {
      if (failed(lowerMatmulRegion(fusion)))
        return failure();
      continue;
    }
    if (auto fusion = dyn_cast<FusionOp>(op)) {
      auto k = emitKernel(
          fusion, kernels, [&](Value v) { return placeOf(v); }, symbolPrefix);
      if (failed(k))
        return failure();
      int64_t index = kernelList.size();
      kernelList.push_back(llvm::json::Object{{"name", k->name},
                                              {"symbol", k->symbol},
                                              {"extent", k->extent},
                                              {"bytes", k->bytes}});
      steps.push_back(llvm::json::Object{{"op", "kernel"}, {"kernel", index}});
      continue;
    }
    if (auto mm = dyn_cast<MatmulOp>(op)) {
      if (!mm.getType().getElementType().isF32())
        return mm.emitOpError("CPU matmuls are f32 only for now, got ")
               << mm.getType().getElementType();
      llvm::json::Object s{{"op", "matmul"},
                           {"lhs", bufferId(mm.getLhs())},
                           {"rhs", bufferId(mm.getRhs())},
                           {"out", bufferId(mm.getResult())},
                           {"transpose_lhs", mm.getTransposeLhs()},
                           {"transpose_rhs", mm.getTransposeRhs()}};
      if (auto alpha = op.getAttrOfType<FloatAttr>("sinter.alpha"))
        s["alpha"] = alpha.getValueAsDouble();
      steps.push_back(std::move(s));
      continue;
    }
    if (auto c = dyn_cast<ConstantOp>(op)) {
      constants.push_back(llvm::json::Object{
          {"buffer", bufferId(c.getResult())},
          {"hex", constantHex(cast<DenseElementsAttr>(c.getValue()))}});
      continue;
    }
    if (isa<ReshapeOp, func::ReturnOp>(op))
      continue;
    return op.emitOpError("has no CPU lowering outside a kernel");
  }

  // Results, and copies for state not updated in place.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  DenseMap<StringRef, BlockArgument> stateArgs;
  for (BlockArgument arg : fn.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (auto p = fn.getArgAttrOfType<StringAttr>(i, attr::kParam))
      stateArgs[p.getValue()] = arg;
    if (auto s = fn.getArgAttrOfType<StringAttr>(i, attr::kOptState))
      stateArgs[s.getValue()] = arg;
  }
  llvm::json::Array results;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    std::string name = resultName(fn, i);
    llvm::json::Object r{{"name", name}};
    auto it = stateArgs.find(name);
    if (it != stateArgs.end()) {
      BlockArgument arg = it->second;
      Place from = placeOf(v), to = placeOf(arg);
      if (from.slab != to.slab || from.offset != to.offset)
        steps.push_back(llvm::json::Object{
            {"op", "copy"}, {"src", bufferId(v)}, {"dst", bufferId(arg)}});
      r["kind"] = fn.getArgAttr(arg.getArgNumber(), attr::kParam) ? "param"
                                                                  : "opt_state";
      r["buffer"] = bufferId(arg);
    } else {
      r["kind"] = cast<RankedTensorType>(v.getType()).getRank() == 0 ? "metric"
                                                                     : "tensor";
      r["buffer"] = bufferId(v);
    }
    results.push_back(std::move(r));
  }

  llvm::json::Object slabs;
  for (StringRef s : {"arena", "params", "opt_state", "io", "constants"})
    slabs[s] = memory.getAs<IntegerAttr>(s).getInt();
  program = llvm::json::Object{
      {"version", 1},
      {"function", fn.getName()},
      {"seed", seed},
      {"slabs", std::move(slabs)},
      {"buffers", std::move(buffers)},
      {"arguments", std::move(arguments)},
      {"results", std::move(results)},
      {"constants", std::move(constants)},
      {"kernels", std::move(kernelList)},
      {"steps", std::move(steps)},
  };
  return success();
}

} // namespace

FailureOr<OwningOpRef<ModuleOp>>
sinter::codegen::lowerStep(ModuleOp planned, StringRef entry,
                           StringRef symbolPrefix) {
  auto fn = planned.lookupSymbol<func::FuncOp>(entry);
  if (!fn)
    return planned.emitError("no function @") << entry << " to lower";
  MLIRContext *ctx = planned.getContext();
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(planned.getLoc());
  StepLowering lowering(fn, *kernels, symbolPrefix);
  if (failed(lowering.run()))
    return failure();
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::json::Value(std::move(lowering.program));
  (*kernels)->setAttr(kProgramAttr, StringAttr::get(ctx, json));
  return kernels;
}

LogicalResult sinter::codegen::addEvalProgram(ModuleOp kernels,
                                              ModuleOp eval) {
  auto program = eval->getAttrOfType<StringAttr>(kProgramAttr);
  if (!program)
    return eval.emitError("the evaluation module has no step program");
  if (kernels->hasAttr(kEvalProgramAttr))
    return kernels.emitError("the module already has an evaluation program");
  // Both programs' kernels end up in one object: their names must differ
  // (lowerStep's symbol prefix).
  SymbolTable symbols(kernels);
  for (Operation &op : llvm::make_early_inc_range(*eval.getBody())) {
    if (auto name = op.getAttrOfType<StringAttr>(
            SymbolTable::getSymbolAttrName()))
      if (symbols.lookup(name))
        return op.emitError("symbol @")
               << name.getValue()
               << " of the evaluation program is also a kernel of the "
                  "training program";
    op.moveBefore(kernels.getBody(), kernels.getBody()->end());
  }
  kernels->setAttr(kEvalProgramAttr, program);
  return success();
}

namespace {
/// Polynomial approximations of f32 exp, log, tanh, erf, ...: unlike libm
/// calls they vectorize.
struct ApproximateMathPass
    : public PassWrapper<ApproximateMathPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ApproximateMathPass)
  StringRef getArgument() const final { return "sinter-approximate-math"; }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

LogicalResult sinter::codegen::lowerToLLVM(ModuleOp kernels) {
  PassManager pm(kernels.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // linalg.generic -> scf.for nests over the memref views.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addNestedPass<func::FuncOp>(std::make_unique<ApproximateMathPass>());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertSCFToCFPass());
  // Subviews become explicit offset/stride arithmetic.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(kernels)))
    return failure();
  // Kernel bodies: internal (so LLVM inlines each into its entry) and every
  // pointer `noalias` (each is one planned buffer; the inliner turns this
  // into alias scopes, without which no loop storing into the arena would
  // vectorize). FuncToLLVM in MLIR 19 drops both from func.func.
  Builder b(kernels.getContext());
  kernels.walk([&](LLVM::LLVMFuncOp fn) {
    if (!fn.getName().ends_with("_body") || fn.isExternal())
      return;
    fn.setLinkage(LLVM::Linkage::Internal);
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (isa<LLVM::LLVMPointerType>(fn.getArgument(i).getType()))
        fn.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                      b.getUnitAttr());
  });
  return success();
}

LogicalResult sinter::codegen::emitObject(ModuleOp kernels, StringRef path) {
  Location loc = kernels.getLoc();
  auto programAttr = kernels->getAttrOfType<StringAttr>(kProgramAttr);
  if (!programAttr)
    return emitError(loc, "the lowered module has no step program");

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string triple = llvm::sys::getDefaultTargetTriple();
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return emitError(loc, "no LLVM target for ") << triple << ": " << error;
  llvm::SubtargetFeatures features;
  llvm::StringMap<bool> hostFeatures = llvm::sys::getHostCPUFeatures();
  for (auto &f : hostFeatures)
    features.AddFeature(f.first(), f.second);
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(), targetOptions,
      llvm::Reloc::PIC_, llvm::CodeModel::Small,
      llvm::CodeGenOptLevel::Aggressive));

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(kernels, llvmContext, "sinter_kernels");
  if (!llvmModule)
    return emitError(loc, "cannot translate the kernels to LLVM IR");
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(tm->createDataLayout());

  // The symbols of runtime/Abi/KernelAbi.h: each program's text and kernel
  // table (the evaluation program's are "" and empty when there is none),
  // and the default data folder ("" when none).
  auto addString = [&](StringRef text, StringRef name) {
    auto *value = llvm::ConstantDataArray::getString(llvmContext, text,
                                                     /*AddNull=*/true);
    new llvm::GlobalVariable(*llvmModule, value->getType(),
                             /*isConstant=*/true,
                             llvm::GlobalValue::ExternalLinkage, value, name);
  };
  auto *ptrType = llvm::PointerType::getUnqual(llvmContext);
  auto addProgram = [&](StringRef text, StringRef textName,
                        StringRef tableName) -> LogicalResult {
    addString(text, textName);
    std::vector<llvm::Constant *> fns;
    if (!text.empty()) {
      auto parsed = llvm::json::parse(text);
      if (!parsed) {
        llvm::consumeError(parsed.takeError());
        return emitError(loc, "malformed step program ") << textName;
      }
      if (auto *list = parsed->getAsObject()->getArray("kernels"))
        for (const llvm::json::Value &k : *list) {
          std::string symbol = k.getAsObject()->getString("symbol")->str();
          llvm::Function *f = llvmModule->getFunction(symbol);
          if (!f)
            return emitError(loc, "kernel symbol ") << symbol << " is missing";
          fns.push_back(f);
        }
    }
    auto *tableType = llvm::ArrayType::get(ptrType, fns.size());
    new llvm::GlobalVariable(*llvmModule, tableType, /*isConstant=*/true,
                             llvm::GlobalValue::ExternalLinkage,
                             llvm::ConstantArray::get(tableType, fns),
                             tableName);
    return success();
  };
  StringRef evalProgram;
  if (auto eval = kernels->getAttrOfType<StringAttr>(kEvalProgramAttr))
    evalProgram = eval.getValue();
  StringRef defaultData;
  if (auto data = kernels->getAttrOfType<StringAttr>(kDefaultDataAttr))
    defaultData = data.getValue();
  if (failed(addProgram(programAttr.getValue(), "sinter_program_json",
                        "sinter_kernels")) ||
      failed(addProgram(evalProgram, "sinter_eval_program_json",
                        "sinter_eval_kernels")))
    return failure();
  addString(defaultData, "sinter_default_data");

  // Full-width vectors: LLVM tunes recent Xeons to prefer 256-bit vectors
  // (older parts lowered their clock for 512-bit code). The kernels that are
  // not memory-bound (erf, exp, dropout's hashing) run ~2x faster at 512.
  if (hostFeatures.lookup("avx512f"))
    for (llvm::Function &f : *llvmModule)
      if (!f.isDeclaration())
        f.addFnAttr("prefer-vector-width", "512");

  // O2 for the host: loop vectorization happens here. (O3 vectorizes the
  // same loops but, after its extra unrolling, spends ~8x longer in the
  // loop vectorizer on a GPT-sized step for ~4% faster kernels.)
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm =
        pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
    mpm.run(*llvmModule, mam);
  }

  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return emitError(loc, "cannot write ") << path << ": " << ec.message();
  llvm::legacy::PassManager codegen;
  if (tm->addPassesToEmitFile(codegen, out.os(), nullptr,
                              llvm::CodeGenFileType::ObjectFile))
    return emitError(loc, "the target cannot emit object files");
  codegen.run(*llvmModule);
  out.keep();
  return success();
}

#ifndef SINTER_RUNTIME_LINK_FILE
#define SINTER_RUNTIME_LINK_FILE ""
#endif

LogicalResult sinter::codegen::linkExecutable(Location loc, StringRef object,
                                              StringRef output) {
  StringRef linkFile = SINTER_RUNTIME_LINK_FILE;
  if (!llvm::sys::fs::exists(linkFile))
    return emitError(loc, "the runtime is not built (")
           << linkFile << " is missing)";
  auto cxx = llvm::sys::findProgramByName("c++");
  if (!cxx)
    cxx = llvm::sys::findProgramByName("g++");
  if (!cxx)
    return emitError(loc, "no system C++ compiler (c++ or g++) to link with");
  std::string linkArg = ("@" + linkFile).str();
  SmallVector<StringRef> args = {*cxx, "-o", output, object, linkArg};
  // The linker's own messages go to a file: the user gets one line, with
  // the linker's first line of complaint in it.
  llvm::SmallString<128> log;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("sinter-link", "log", log))
    return emitError(loc, "cannot create a temporary file: ") << ec.message();
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(*cxx, args, std::nullopt, redirects, 0, 0,
                                     &error);
  std::string firstLine;
  if (auto text = llvm::MemoryBuffer::getFile(log)) {
    StringRef all = (*text)->getBuffer();
    // The most specific complaint, e.g. "cannot open output file ...".
    for (StringRef line : llvm::split(all, '\n'))
      if (line.contains("error") || line.contains("cannot")) {
        firstLine = line.trim().str();
        break;
      }
  }
  llvm::sys::fs::remove(log);
  if (rc != 0)
    return emitError(loc, "linking ")
           << output << " failed (" << *cxx << " exit " << rc
           << (firstLine.empty() ? "" : ": " + firstLine)
           << (error.empty() ? "" : "; " + error) << ")";
  return success();
}
