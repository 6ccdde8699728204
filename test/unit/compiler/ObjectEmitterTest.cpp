//===- ObjectEmitterTest.cpp - the CPU object emitter's loop hints --------===//
//
// hintBf16StoreLoops (compiler/CodeGen/Cpu/ObjectEmitter.h): an innermost
// loop that rounds f32 to bf16 gets the vectorizer's width hint of 16; a
// loop that also calls a function, or rounds nothing, gets none; one with
// 32 f32 instructions or more also gets an interleave count of 4.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/ObjectEmitter.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

namespace {

// One loop per function: `i` over [0, n), the body storing what `body`
// computes from the loaded f32 `%x`.
std::string loopFunction(const std::string &name, const std::string &type,
                         const std::string &body) {
  return "define void @" + name +
         "(ptr noalias %in, ptr noalias %out, i64 %n) {\n"
         "entry:\n  br label %loop\n"
         "loop:\n  %i = phi i64 [ 0, %entry ], [ %next, %loop ]\n"
         "  %pin = getelementptr float, ptr %in, i64 %i\n"
         "  %x = load float, ptr %pin\n" +
         body + "  %pout = getelementptr " + type +
         ", ptr %out, i64 %i\n"
         "  store " +
         type +
         " %y, ptr %pout\n"
         "  %next = add i64 %i, 1\n"
         "  %done = icmp eq i64 %next, %n\n"
         "  br i1 %done, label %exit, label %loop\n"
         "exit:\n  ret void\n}\n";
}

/// The value of the loop hint `name` the loop of `f` carries (0: none).
int64_t loopHint(llvm::Function &f, llvm::StringRef name) {
  llvm::DominatorTree dominators(f);
  llvm::LoopInfo loops(dominators);
  if (loops.empty())
    return -1;
  llvm::MDNode *id = (*loops.begin())->getLoopID();
  if (!id)
    return 0;
  for (const llvm::MDOperand &op : id->operands()) {
    auto *node = llvm::dyn_cast<llvm::MDNode>(op.get());
    if (!node || node == id || node->getNumOperands() != 2)
      continue;
    auto *key = llvm::dyn_cast<llvm::MDString>(node->getOperand(0));
    if (key && key->getString() == name)
      return llvm::mdconst::extract<llvm::ConstantInt>(node->getOperand(1))
          ->getZExtValue();
  }
  return 0;
}

/// `ir` parsed (an error is a test failure; null then) and hinted.
std::unique_ptr<llvm::Module> hinted(const std::string &ir,
                                     llvm::LLVMContext &ctx) {
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> module =
      llvm::parseAssemblyString(ir, error, ctx);
  if (!module) {
    ADD_FAILURE() << error.getMessage().str();
    return nullptr;
  }
  sinter::codegen::hintBf16StoreLoops(*module);
  return module;
}

int64_t widthHint(llvm::Function &f) {
  return loopHint(f, "llvm.loop.vectorize.width");
}

TEST(ObjectEmitterTest, HintsLoopsThatRoundToBf16) {
  std::string ir =
      loopFunction("rounds", "bfloat", "  %y = fptrunc float %x to bfloat\n") +
      loopFunction("rounds_fma", "bfloat",
                   "  %f = call float @llvm.fma.f32(float %x, float %x, "
                   "float 1.0)\n  %y = fptrunc float %f to bfloat\n") +
      loopFunction("calls", "bfloat",
                   "  %e = call float @expf(float %x)\n"
                   "  %y = fptrunc float %e to bfloat\n") +
      loopFunction("f32_only", "float", "  %y = fmul float %x, 2.0\n") +
      "declare float @expf(float)\ndeclare float @llvm.fma.f32(float, float, "
      "float)\n";
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> module = hinted(ir, ctx);
  ASSERT_TRUE(module);
  EXPECT_EQ(widthHint(*module->getFunction("rounds")), 16);
  EXPECT_EQ(widthHint(*module->getFunction("rounds_fma")), 16);
  EXPECT_EQ(widthHint(*module->getFunction("calls")), 0);
  EXPECT_EQ(widthHint(*module->getFunction("f32_only")), 0);
}

/// A body of `n` dependent f32 multiply-adds on %x, rounded to bf16.
std::string chain(int n) {
  std::string body, last = "%x";
  for (int i = 0; i < n; ++i) {
    std::string v = "%c" + std::to_string(i);
    body += "  " + v + " = call float @llvm.fma.f32(float " + last +
            ", float %x, float 0.5)\n";
    last = v;
  }
  return body + "  %y = fptrunc float " + last + " to bfloat\n";
}

// A loop with a long chain of f32 arithmetic (32 instructions or more, as
// GELU's gradient) is also asked to interleave 4 vectors; a shorter one
// (GELU itself, the softmax) is not.
TEST(ObjectEmitterTest, InterleavesLongChains) {
  std::string ir = loopFunction("long", "bfloat", chain(32)) +
                   loopFunction("short", "bfloat", chain(31)) +
                   "declare float @llvm.fma.f32(float, float, float)\n";
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> module = hinted(ir, ctx);
  ASSERT_TRUE(module);
  EXPECT_EQ(widthHint(*module->getFunction("long")), 16);
  EXPECT_EQ(loopHint(*module->getFunction("long"),
                     "llvm.loop.interleave.count"),
            4);
  EXPECT_EQ(widthHint(*module->getFunction("short")), 16);
  EXPECT_EQ(loopHint(*module->getFunction("short"),
                     "llvm.loop.interleave.count"),
            0);
}

} // namespace
