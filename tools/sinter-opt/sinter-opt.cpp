//===- sinter-opt.cpp - run Sinter passes on .mlir files ------------------===//
//
// MlirOptMain with the sgraph and sched dialects, the dialects the targets
// lower through, Sinter's passes (those of the targets too) and every named
// pipeline. Every --mlir-print-ir-* flag
// of mlir-opt works here.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/Passes.h"
#include "compiler/CodeGen/Cuda/Passes.h"
#include "compiler/CodeGen/Passes.h"
#include "compiler/CodeGen/Target.h"
#include "compiler/Pipelines/Pipelines.h"
#include "dialects/Graph/GraphDialect.h"
#include "dialects/Schedule/ScheduleDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<sinter::sgraph::SGraphDialect, sinter::sched::ScheduleDialect,
                  mlir::func::FuncDialect>();
  // Upstream cleanups the pipelines use.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  // Every target's dialects, so that lowered and binary IR parses.
  sinter::codegen::registerTargetDialects(registry);
  sinter::registerSinterPasses();
  sinter::codegen::registerSinterCodeGenPasses();
  sinter::codegen::registerSinterCpuPasses();
  sinter::codegen::registerSinterCudaPasses();
  sinter::registerSinterPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Sinter optimizer driver\n", registry));
}
