//===- LowerStep.cpp - each program as the symbols the runtime reads -----===//
//
// The last pass of the binary phase, for every target: each `sched.program`
// becomes the three symbols abi/Abi.h names for its role, as LLVM
// globals (the serialized StepProgram, its size, and the table of kernel
// entry points, in the order of the program's kernel list), and the
// program goes. The default data folder (module attribute
// `sinter.default_data`) becomes `sinter_default_data`, "" when the driver
// set none. A role without a program (no evaluation program) has no
// symbols; the runtime declares them weak.
//
// The kernel table is a struct of rows of `table-row` pointers, laid out
// as one array: LLVM folds each `llvm.insertvalue` of a global's
// initializer into a new constant of the whole aggregate, so filling one
// flat array of N entries would cost N^2 (seconds from ~10,000 kernels
// on); rows of R entries cost N * R + (N / R)^2.
//
// Precondition: each launch's `symbol` names an LLVM function of the
// module (the target's conversion to the LLVM dialect has run).
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Passes.h"

#include "compiler/CodeGen/StepProgramBuilder.h"
#include "dialects/Schedule/ScheduleOps.h"

#include "llvm/ADT/StringSet.h"

namespace sinter::codegen {
#define GEN_PASS_DEF_LOWERSTEPPASS
#include "compiler/CodeGen/Passes.h.inc"
} // namespace sinter::codegen

using namespace mlir;
using namespace sinter;

namespace {

class LowerStepPass
    : public sinter::codegen::impl::LowerStepPassBase<LowerStepPass> {
public:
  using LowerStepPassBase::LowerStepPassBase;

  void runOnOperation() override;

private:
  LogicalResult lower(sched::ProgramOp program, const SymbolTable &functions);
  void addBytes(Location loc, StringRef name, StringRef bytes);

  OpBuilder *b = nullptr;
};

void LowerStepPass::addBytes(Location loc, StringRef name, StringRef bytes) {
  auto type = LLVM::LLVMArrayType::get(b->getI8Type(), bytes.size());
  b->create<LLVM::GlobalOp>(loc, type, /*isConstant=*/true,
                            LLVM::Linkage::External, name,
                            b->getStringAttr(bytes));
}

LogicalResult LowerStepPass::lower(sched::ProgramOp program,
                                   const SymbolTable &functions) {
  const abi::ProgramSymbols *symbols =
      abi::programSymbols(program.getRole().str());
  FailureOr<abi::StepProgram> built = codegen::buildStepProgram(program);
  if (failed(built))
    return failure();
  std::string bytes;
  if (!built->SerializeToString(&bytes))
    return program.emitOpError("cannot serialize its step program");

  Location loc = program.getLoc();
  std::string programName(symbols->program);
  addBytes(loc, programName, bytes);
  b->create<LLVM::GlobalOp>(loc, b->getI64Type(), /*isConstant=*/true,
                            LLVM::Linkage::External,
                            std::string(symbols->programSize),
                            b->getI64IntegerAttr(bytes.size()));

  if (!kernelTable) {
    program.erase();
    return success();
  }
  // The kernel table: kernel i of the program is the i-th launch.
  SmallVector<StringRef> entries;
  for (auto launch : program.getBlock().getOps<sched::LaunchOp>()) {
    StringRef symbol = *launch.getSymbol();
    if (!functions.lookup<LLVM::LLVMFuncOp>(symbol))
      return launch.emitOpError("kernel symbol @")
             << symbol << " is not an LLVM function of the module";
    entries.push_back(symbol);
  }
  auto ptr = LLVM::LLVMPointerType::get(&getContext());
  int64_t rowSize = std::max<int64_t>(1, tableRow);
  SmallVector<ArrayRef<StringRef>> rows;
  for (ArrayRef<StringRef> rest(entries); !rest.empty();
       rest = rest.drop_front(rows.back().size()))
    rows.push_back(rest.take_front(rowSize));
  SmallVector<Type> rowTypes;
  for (ArrayRef<StringRef> row : rows)
    rowTypes.push_back(LLVM::LLVMArrayType::get(ptr, row.size()));
  auto tableType = LLVM::LLVMStructType::getLiteral(&getContext(), rowTypes);
  auto table = b->create<LLVM::GlobalOp>(
      loc, tableType, /*isConstant=*/true, LLVM::Linkage::External,
      std::string(symbols->kernels), Attribute());
  {
    OpBuilder::InsertionGuard guard(*b);
    b->createBlock(&table.getInitializerRegion());
    Value tableValue = b->create<LLVM::UndefOp>(loc, tableType);
    for (auto [r, row] : llvm::enumerate(rows)) {
      Value rowValue = b->create<LLVM::UndefOp>(loc, rowTypes[r]);
      for (auto [i, symbol] : llvm::enumerate(row)) {
        Value address = b->create<LLVM::AddressOfOp>(loc, ptr, symbol);
        rowValue = b->create<LLVM::InsertValueOp>(
            loc, rowValue, address, ArrayRef<int64_t>{(int64_t)i});
      }
      tableValue = b->create<LLVM::InsertValueOp>(
          loc, tableValue, rowValue, ArrayRef<int64_t>{(int64_t)r});
    }
    b->create<LLVM::ReturnOp>(loc, tableValue);
  }
  program.erase();
  return success();
}

void LowerStepPass::runOnOperation() {
  ModuleOp module = getOperation();
  OpBuilder builder(&getContext());
  b = &builder;
  builder.setInsertionPointToEnd(module.getBody());
  // The kernel entry points by name (ModuleOp::lookupSymbol scans the
  // module: once per launch, that would be quadratic).
  SymbolTable functions(module);
  llvm::StringSet<> roles;
  for (auto program :
       llvm::make_early_inc_range(module.getOps<sched::ProgramOp>())) {
    if (!abi::programSymbols(program.getRole().str())) {
      program.emitOpError("role '") << program.getRole() << "' has no symbols";
      return signalPassFailure();
    }
    if (!roles.insert(program.getRole()).second) {
      program.emitOpError("is a second program of role '")
          << program.getRole() << "'";
      return signalPassFailure();
    }
    if (failed(lower(program, functions)))
      return signalPassFailure();
  }
  StringRef data;
  if (auto attr = module->getAttrOfType<StringAttr>(codegen::kDefaultDataAttr))
    data = attr.getValue();
  std::string text = data.str();
  text.push_back('\0');
  addBytes(module.getLoc(), std::string(abi::kDefaultDataSymbol), text);
  module->removeAttr(codegen::kDefaultDataAttr);
}

} // namespace
