//===- VerifyBinary.cpp - the contract of the binary phase ---------------===//
//
// Closes the binary phase: only LLVM-dialect ops are left (what LLVM
// translates), the step program's symbols are defined, each program's
// symbols come together, and the default data folder's symbol is there.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Passes.h"

#include "abi/Abi.h"

namespace sinter::codegen {
#define GEN_PASS_DEF_VERIFYBINARYPASS
#include "compiler/CodeGen/Passes.h.inc"
} // namespace sinter::codegen

using namespace mlir;
using namespace sinter;

namespace {

class VerifyBinaryPass
    : public sinter::codegen::impl::VerifyBinaryPassBase<VerifyBinaryPass> {
public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (Operation &op : *module.getBody())
      if (!isa<LLVM::LLVMDialect>(op.getDialect())) {
        op.emitOpError("is not LLVM dialect after the binary phase");
        return signalPassFailure();
      }
    if (!module.lookupSymbol<LLVM::GlobalOp>(abi::kStepProgram.program)) {
      module.emitError("the step program's symbol @")
          << abi::kStepProgram.program << " is missing";
      return signalPassFailure();
    }
    // A CUDA binary's kernels are in its CUDA module, not in tables.
    bool cuda = bool(module.lookupSymbol<LLVM::GlobalOp>(
        SINTER_ABI_NAME(SINTER_ABI_CUDA_MODULE)));
    for (const abi::ProgramSymbols *p : abi::kPrograms) {
      bool hasProgram = bool(module.lookupSymbol(p->program));
      for (std::string_view name : {p->programSize, p->kernels})
        if (!(cuda && name == p->kernels) &&
            hasProgram != bool(module.lookupSymbol(
                              StringRef(name.data(), name.size())))) {
          module.emitError("@")
              << p->program << " and @" << name << " come together";
          return signalPassFailure();
        }
    }
    if (!module.lookupSymbol(abi::kDefaultDataSymbol)) {
      module.emitError("@") << abi::kDefaultDataSymbol << " is missing";
      return signalPassFailure();
    }
  }
};

} // namespace
