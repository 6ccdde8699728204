//===- sinter-opt.cpp - run Sinter passes on .mlir files ------------------===//
//
// MlirOptMain with the sgraph dialect, the upstream dialects Sinter lowers
// through, Sinter's passes and named pipelines. Every --mlir-print-ir-* flag
// of mlir-opt works here.
//
//===----------------------------------------------------------------------===//

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
  sinter::registerSinterPasses();
  sinter::registerSinterPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Sinter optimizer driver\n", registry));
}
