//===- PassBisectTest.cpp - the pass bisection finds a planted bad pass ---===//
//
// The real pipeline of a small GPT (training, optimized and scheduled
// phases) with a pass of the test's own planted between the optimized and
// scheduled phases, as a bad pass would sit there: it changes the
// attention's 1/sqrt(head size) constant, erases the function, or does
// nothing to the numbers. The bisection must name the planted pass and only
// it, hold the passes after it against its output (not the reference), and
// say nothing against a healthy pipeline.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "compiler/Importer/ImportModel.h"
#include "compiler/Interpreter/PassBisect.h"
#include "compiler/Pipelines/Pipelines.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Schedule/ScheduleDialect.h"
#include "dialects/Schedule/ScheduleOps.h"
#include "runtime/Formats/Npy.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>

using namespace mlir;
using namespace sinter;

namespace {

constexpr const char *kTinyGpt = R"(
name: "tiny_gpt"
input { name: "idx" shape: [-1, 8] dtype: INT64 }
input { name: "targets" shape: [-1, 8] dtype: INT64 }
layer {
  name: "transformer.wte" input: "idx"
  embedding { num_embeddings: 11 dim: 16 init { normal_std: 0.02 } }
}
layer {
  name: "transformer.wpe" input: "idx"
  positional_embedding { max_positions: 8 dim: 16 init { normal_std: 0.02 } }
}
layer { name: "embed" input: ["transformer.wte", "transformer.wpe"] add {} }
layer { name: "transformer.drop" input: "embed" dropout { rate: 0.2 } }
layer {
  name: "transformer.h" input: "transformer.drop" repeat: 2
  transformer_block { num_heads: 2 dropout: 0.2 }
}
layer { name: "transformer.ln_f" input: "transformer.h" layer_norm {} }
layer {
  name: "lm_head" input: "transformer.ln_f"
  dense { units: 11 bias: false tie_weight: "transformer.wte.weight" }
}
loss { softmax_cross_entropy { logits: "lm_head" labels: "targets" } }
training {
  batch_size: 2
  seed: 1337
  optimizer { adamw { lr: 1e-3 weight_decay: 0.1 } }
  grad_clip: 1.0
}
)";

/// The planted pass: runs `body` on the module under the name `name`.
class PlantedPass : public PassWrapper<PlantedPass, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PlantedPass)
  PlantedPass(std::string name, std::function<void(ModuleOp)> body)
      : name(std::move(name)), body(std::move(body)) {}
  PlantedPass(const PlantedPass &other) = default;
  StringRef getArgument() const override { return name; }
  StringRef getName() const override { return name; }
  void runOnOperation() override { body(getOperation()); }

private:
  std::string name;
  std::function<void(ModuleOp)> body;
};

/// Multiplies every f32 splat constant 1/sqrt(8) (the attention's scale of
/// the tiny GPT's heads of 8) by `factor`; returns how many it changed.
int scaleAttention(ModuleOp module, double factor) {
  int changed = 0;
  module.walk([&](sgraph::ConstantOp op) {
    auto value = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!value || !value.isSplat() || !value.getElementType().isF32())
      return;
    float v = value.getSplatValue<float>();
    if (std::fabs(v - 1 / std::sqrt(8.0f)) > 1e-6f)
      return;
    op.setValueAttr(DenseElementsAttr::get(value.getType(),
                                           static_cast<float>(v * factor)));
    ++changed;
  });
  return changed;
}

class PassBisectTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("pass-bisect", dir));
    folder = dir.str().str();
    // Tokens of the 11-character vocabulary, batch 2 x 8.
    for (const char *name : {"idx", "targets"}) {
      formats::HostTensor t;
      t.dtype = formats::DType::I64;
      t.shape = {2, 8};
      t.data.resize(16 * sizeof(int64_t));
      for (int64_t k = 0; k < 16; ++k) {
        int64_t token = (k * 7 + (name[0] == 't' ? 3 : 0)) % 11;
        std::memcpy(t.data.data() + k * sizeof(int64_t), &token,
                    sizeof(int64_t));
      }
      std::string path = folder + "/" + name + ".npy";
      ASSERT_TRUE(formats::writeNpy(path, t).ok());
      inputs.push_back(path);
    }
  }
  void TearDown() override { llvm::sys::fs::remove_directories(folder); }

  /// Compiles the tiny GPT's @train_step to the scheduled phase with
  /// `planted` (if any) between the optimized and scheduled phases (or
  /// after the scheduled one, `last`), and bisects its passes at `rtol`.
  /// Returns whether every pass held; the report is in `report`.
  bool bisect(std::unique_ptr<Pass> planted, double rtol = 1e-4,
              bool last = false) {
    ctx.get().loadDialect<sched::ScheduleDialect>();
    auto module = importModel(kTinyGpt, "tiny_gpt.pbtxt", ctx.get());
    EXPECT_TRUE(module) << ctx.diagnostics;
    if (!module)
      return false;
    interp::PassBisection bisection(rtol);
    bisection.record("the importer", "import", *module);
    auto runPhase = [&](StringRef phase,
                        const std::function<void(OpPassManager &)> &build) {
      PassManager pm(&ctx.get());
      pm.addInstrumentation(bisection.instrumentation(phase));
      build(pm);
      bool ok = succeeded(pm.run(*module));
      EXPECT_TRUE(ok) << ctx.diagnostics;
      return ok;
    };
    if (!runPhase("training",
                  [](OpPassManager &pm) { buildTrainingPipeline(pm); }))
      return false;
    for (auto fn : llvm::make_early_inc_range(module->getOps<func::FuncOp>()))
      if (fn.getName() != "train_step")
        fn.erase();
    if (!runPhase("optimized",
                  [](OpPassManager &pm) { buildOptimizedPipeline(pm); }))
      return false;
    auto plant = [&] {
      return !planted || runPhase("planted", [&](OpPassManager &pm) {
        pm.addPass(std::move(planted));
      });
    };
    if (!last && !plant())
      return false;
    if (!runPhase("scheduled",
                  [](OpPassManager &pm) { buildScheduledPipeline(pm); }))
      return false;
    if (last && !plant())
      return false;
    passes = bisection.passes();
    report.clear();
    llvm::raw_string_ostream os(report);
    return succeeded(bisection.run(
        "train_step", inputs,
        FileLineColLoc::get(&ctx.get(), "tiny_gpt.pbtxt", 0, 0), os));
  }

  bool reportHas(const std::string &text) const {
    return report.find(text) != std::string::npos;
  }

  test::TestContext ctx;
  std::string folder;
  std::vector<std::string> inputs;
  std::string report;
  std::vector<std::pair<std::string, std::string>> passes;
};

TEST_F(PassBisectTest, AHealthyPipelineHolds) {
  EXPECT_TRUE(bisect(nullptr)) << report << ctx.diagnostics;
  EXPECT_TRUE(reportHas("every pass within its tolerance")) << report;
  EXPECT_FALSE(reportHas("over")) << report;
  // The copies kept: the importer's, and each pass that changed the IR,
  // in the order they ran, with their phases.
  ASSERT_GE(passes.size(), 4u);
  EXPECT_EQ(passes.front().first, "the importer");
  EXPECT_EQ(passes[1], std::make_pair(std::string("sinter-autodiff"),
                                      std::string("training")));
  EXPECT_EQ(passes.back(), std::make_pair(std::string("sinter-assign-buffers"),
                                          std::string("scheduled")));
  // The reference is the first IR with @train_step.
  EXPECT_TRUE(reportHas("sinter-autodiff (training)")) << report;
  EXPECT_TRUE(reportHas("the reference")) << report;
}

TEST_F(PassBisectTest, APlantedWrongScaleIsNamed) {
  // (At initialization the attention is near uniform whatever its scale, so
  // the scale must be far off to move the loss itself by 1e-4.)
  int changed = 0;
  EXPECT_FALSE(bisect(std::make_unique<PlantedPass>(
      "test-scale-attention",
      [&](ModuleOp m) { changed = scaleAttention(m, 8); })))
      << report;
  EXPECT_GT(changed, 0) << "the tiny GPT has no attention scale to change";
  EXPECT_TRUE(reportHas(
      "first pass over its tolerance: test-scale-attention (planted phase)"))
      << report;
  // Its results over, the farthest first: the gradients' moments.
  EXPECT_TRUE(reportHas("  result 'optimizer.")) << report;
  EXPECT_TRUE(reportHas("more result(s) over")) << report;
  // Gradients and moments are over too: not the noise of Adam's first step.
  EXPECT_FALSE(reportHas("only updated parameters are over")) << report;
  // The scheduled phase is held against the planted pass's output, so it
  // is within: only the planted pass is over.
  EXPECT_TRUE(reportHas("1 pass(es) over their tolerance: "
                        "test-scale-attention\n"))
      << report;
}

TEST_F(PassBisectTest, AChangeWithinTheToleranceIsNotOne) {
  // One part in 2^20 moves the results, by less than 1e-4.
  EXPECT_TRUE(bisect(std::make_unique<PlantedPass>(
      "test-nudge-attention",
      [](ModuleOp m) { scaleAttention(m, 1 + std::ldexp(1.0, -20)); })))
      << report;
  EXPECT_TRUE(reportHas("every pass within its tolerance")) << report;
  // Bit for bit, it is one.
  EXPECT_FALSE(bisect(
      std::make_unique<PlantedPass>(
          "test-nudge-attention",
          [](ModuleOp m) { scaleAttention(m, 1 + std::ldexp(1.0, -20)); }),
      /*rtol=*/0))
      << report;
  EXPECT_TRUE(reportHas("tolerance 0 (bit for bit)")) << report;
  EXPECT_TRUE(reportHas("test-nudge-attention\n")) << report;
}

TEST_F(PassBisectTest, ANaNIsOverAnyTolerance) {
  EXPECT_FALSE(bisect(std::make_unique<PlantedPass>(
      "test-nan-attention",
      [](ModuleOp m) { scaleAttention(m, std::nan("")); })))
      << report;
  EXPECT_TRUE(reportHas("first pass over its tolerance: test-nan-attention"))
      << report;
  EXPECT_TRUE(reportHas(
      "NaN or infinite value(s) where this pass and its input differ"))
      << report;
}

TEST_F(PassBisectTest, APassThatDropsTheFunctionIsNamed) {
  EXPECT_FALSE(bisect(std::make_unique<PlantedPass>(
                          "test-drop-step",
                          [](ModuleOp m) {
                            if (auto program = m.lookupSymbol<sched::ProgramOp>(
                                    "train_step"))
                              program.erase();
                          }),
                      1e-4, /*last=*/true))
      << report;
  EXPECT_TRUE(reportHas("test-drop-step (planted)")) << report;
  EXPECT_TRUE(reportHas("the IR has no @train_step any more")) << report;
}

TEST_F(PassBisectTest, AMissingInputIsAnErrorAtTheArgument) {
  inputs.pop_back(); // no targets
  EXPECT_FALSE(bisect(nullptr));
  EXPECT_NE(ctx.diagnostics.find("no tensor named 'targets'"),
            std::string::npos)
      << ctx.diagnostics;
}

} // namespace
