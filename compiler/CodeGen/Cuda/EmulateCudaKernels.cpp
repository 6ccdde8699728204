//===- EmulateCudaKernels.cpp - the CUDA kernels as host functions -------===//
//
// For the `cuda-host` target, which tests the CUDA target's kernels with
// no GPU: each CUDA kernel function runs on the CPU as one block of one
// thread. The kernels take their strides from the launch (grid-stride
// loops over elements, rows and special indices; a row's threads strided
// over its elements), so one thread computes every element with the same
// index arithmetic, the same loads and stores and the same scalar code the
// GPU runs; a block's all-reduce over one thread is its value, a barrier
// nothing. What this cannot test: the all-reduce across threads (MLIR's
// lowering) and races between threads, which the GPU check covers.
//
// Each kernel becomes `<name>_body`, called by an entry `<name>` with the
// CPU kernel signature (abi/KernelAbi.h) that reads the launch's words from
// memory and passes them on; launches lose their CUDA shape and run once
// ([0, 1)), and the CPU target's binary phase takes over. A merged
// kernel (MergeLaunches.cpp) loops over its blocks, each of one thread: a
// member runs only in the blocks of its range.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cuda/Passes.h"

#include "abi/Abi.h"
#include "dialects/Schedule/ScheduleOps.h"

namespace sinter::codegen {
#define GEN_PASS_DEF_EMULATECUDAKERNELSPASS
#include "compiler/CodeGen/Cuda/Passes.h.inc"
} // namespace sinter::codegen

using namespace mlir;
using namespace sinter;

namespace {

/// A merged kernel (MergeLaunches.cpp) runs each member in the blocks of
/// its own range: its body becomes a loop over every block of the grid,
/// the block id the loop's index (each member's block then covers its
/// share of the member's elements or rows, one thread each).
void runEveryBlock(OpBuilder &b, func::FuncOp fn, int64_t total) {
  Block &entry = fn.getBody().front();
  Location loc = fn.getLoc();
  b.setInsertionPointToStart(&entry);
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  Value blocks = b.create<arith::ConstantIndexOp>(loc, total);
  Block::iterator first = std::next(Block::iterator(blocks.getDefiningOp()));
  b.setInsertionPoint(entry.getTerminator());
  auto loop = b.create<scf::ForOp>(loc, zero, blocks, one);
  Block *body = loop.getBody();
  body->getOperations().splice(body->begin(), entry.getOperations(), first,
                               Block::iterator(loop));
  loop.walk([&](gpu::BlockIdOp id) {
    id.replaceAllUsesWith(loop.getInductionVar());
    id.erase();
  });
}

class EmulateCudaKernelsPass
    : public codegen::impl::EmulateCudaKernelsPassBase<EmulateCudaKernelsPass> {
public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(&getContext());
    SmallVector<func::FuncOp> kernels;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("sched.cuda_block"))
        kernels.push_back(fn);
    for (func::FuncOp fn : kernels) {
      // Its grid: the members' grids one after another.
      if (fn->hasAttr(codegen::kMembersAttr))
        runEveryBlock(
            b, fn, fn->getAttrOfType<IntegerAttr>("sched.cuda_grid").getInt());
      WalkResult walked = fn.walk([&](Operation *op) {
        b.setInsertionPoint(op);
        if (isa<gpu::ThreadIdOp, gpu::BlockIdOp>(op)) {
          op->replaceAllUsesWith(ValueRange{
              b.create<arith::ConstantIndexOp>(op->getLoc(), 0)});
          op->erase();
        } else if (isa<gpu::BlockDimOp, gpu::GridDimOp>(op)) {
          op->replaceAllUsesWith(ValueRange{
              b.create<arith::ConstantIndexOp>(op->getLoc(), 1)});
          op->erase();
        } else if (auto reduce = dyn_cast<gpu::AllReduceOp>(op)) {
          if (!reduce.getBody().empty()) {
            reduce.emitOpError("with a body cannot be emulated");
            return WalkResult::interrupt();
          }
          reduce.replaceAllUsesWith(reduce.getValue());
          reduce.erase();
        } else if (isa<gpu::BarrierOp>(op)) {
          op->erase();
        } else if (auto a = dyn_cast<memref::AllocaOp>(op);
                   a && a->hasAttr(codegen::kWorkgroupAttr)) {
          // One thread's block: its shared array is its own.
          MemRefType t = a.getType();
          auto local = b.create<memref::AllocaOp>(
              a.getLoc(), MemRefType::get(t.getShape(), t.getElementType()));
          a.replaceAllUsesWith(local.getResult());
          a.erase();
        }
        return WalkResult::advance();
      });
      if (walked.wasInterrupted())
        return signalPassFailure();

      std::string name = fn.getName().str();
      auto words = fn->getAttrOfType<IntegerAttr>(sched::kKernelArgsAttr);
      fn.setName(name + "_body");
      fn.setPrivate();
      for (StringRef attr :
           {"sched.cuda_block", "sched.cuda_grid",
            sched::kKernelArgsAttr.data(), codegen::kMembersAttr.data()})
        fn->removeAttr(attr);

      Location loc = fn.getLoc();
      auto slabType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
      SmallVector<Type> args(abi::kNumSlabs, slabType);
      args.push_back(MemRefType::get({ShapedType::kDynamic}, b.getI64Type()));
      args.push_back(b.getIndexType());
      args.push_back(b.getIndexType());
      b.setInsertionPoint(fn);
      auto entry =
          b.create<func::FuncOp>(loc, name, b.getFunctionType(args, {}));
      entry->setAttr("llvm.emit_c_interface", b.getUnitAttr());
      entry->setAttr(sched::kKernelArgsAttr, words);
      Block *block = entry.addEntryBlock();
      b.setInsertionPointToStart(block);
      SmallVector<Value> callArgs(block->getArguments().take_front(
          abi::kNumSlabs));
      for (int64_t i = 0; i < words.getInt(); ++i) {
        Value at = b.create<arith::ConstantIndexOp>(loc, i);
        callArgs.push_back(b.create<memref::LoadOp>(
            loc, block->getArgument(abi::kNumSlabs), ValueRange{at}));
      }
      b.create<func::CallOp>(loc, fn, callArgs);
      b.create<func::ReturnOp>(loc);
    }
    Builder attrs(&getContext());
    for (auto program : module.getOps<sched::ProgramOp>())
      for (auto launch : program.getBlock().getOps<sched::LaunchOp>()) {
        launch->removeAttr("sched.cuda_block");
        launch.setExtentAttr(attrs.getI64IntegerAttr(1));
        launch.setSymbolAttr(
            attrs.getStringAttr("_mlir_ciface_" + launch.getKernel()));
      }
  }
};

} // namespace
