//===- VerifyLowered.cpp - the contract of the lowered phase -------------===//
//
// Closes the lowered phase: kernels are code (no sched.kernel, no sgraph op
// anywhere), every launch names a function with the kernel signature of
// abi/KernelAbi.h (one memref<?xi8> per slab, the words, then begin and end)
// and carries what the step program needs, and each role of the ABI has at
// most one program. Names the first op that breaks the contract.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Passes.h"

#include "dialects/Graph/GraphDialect.h"
#include "dialects/Schedule/ScheduleOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/StringSet.h"

namespace sinter::codegen {
#define GEN_PASS_DEF_VERIFYLOWEREDPASS
#include "compiler/CodeGen/Passes.h.inc"
} // namespace sinter::codegen

using namespace mlir;
using namespace sinter;

namespace {

bool hasKernelSignature(func::FuncOp fn) {
  FunctionType type = fn.getFunctionType();
  if (type.getNumInputs() != abi::kNumSlabs + 3 || type.getNumResults())
    return false;
  auto bytes = [&](unsigned width) {
    return MemRefType::get({ShapedType::kDynamic},
                           IntegerType::get(fn.getContext(), width));
  };
  for (int s = 0; s < abi::kNumSlabs; ++s)
    if (type.getInput(s) != bytes(8))
      return false;
  return type.getInput(abi::kNumSlabs) == bytes(64) &&
         type.getInput(abi::kNumSlabs + 1).isIndex() &&
         type.getInput(abi::kNumSlabs + 2).isIndex();
}

/// The CUDA target's: one memref<?xi8> per slab, then the words as i64.
bool hasCudaKernelSignature(func::FuncOp fn) {
  FunctionType type = fn.getFunctionType();
  if (!fn->hasAttr("sched.cuda_block") ||
      type.getNumInputs() < abi::kNumSlabs || type.getNumResults())
    return false;
  auto bytes = MemRefType::get({ShapedType::kDynamic},
                               IntegerType::get(fn.getContext(), 8));
  for (auto [i, t] : llvm::enumerate(type.getInputs()))
    if (i < abi::kNumSlabs ? t != bytes : !t.isInteger(64))
      return false;
  return true;
}

class VerifyLoweredPass
    : public sinter::codegen::impl::VerifyLoweredPassBase<VerifyLoweredPass> {
public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Operation *bad = nullptr;
    module.walk([&](Operation *op) {
      if (isa<sched::KernelOp>(op) || isa<sgraph::SGraphDialect>(op->getDialect())) {
        bad = op;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (bad) {
      bad->emitOpError("is left after the kernels were lowered");
      return signalPassFailure();
    }
    llvm::StringSet<> roles;
    SymbolTable symbols(module);
    for (auto program : module.getOps<sched::ProgramOp>()) {
      if (!roles.insert(program.getRole()).second) {
        program.emitOpError("is a second program of role '")
            << program.getRole() << "'";
        return signalPassFailure();
      }
      for (auto launch : program.getBlock().getOps<sched::LaunchOp>()) {
        auto fn = symbols.lookup<func::FuncOp>(launch.getKernel());
        if (!fn || !(hasKernelSignature(fn) || hasCudaKernelSignature(fn))) {
          launch.emitOpError("kernel @")
              << launch.getKernel()
              << " is not a function with the kernel signature (one "
                 "memref<?xi8> per slab, memref<?xi64> words, begin, end; "
                 "CUDA: one memref<?xi8> per slab, the words as i64)";
          return signalPassFailure();
        }
        if (!launch.getExtentAttr() || !launch.getSymbol() ||
            !launch.getLabel()) {
          launch.emitOpError("lacks its extent, symbol or label");
          return signalPassFailure();
        }
      }
    }
  }
};

} // namespace
