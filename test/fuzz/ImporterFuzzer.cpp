//===- ImporterFuzzer.cpp - libFuzzer target for the model importer ------===//
//
// Feeds arbitrary bytes to the importer as a model description and, when it
// imports, runs the training phase on the result. Any input must end in a
// module or in diagnostics: a crash, an assert, a hang or a sanitizer report
// is a bug. Build and run: docs/Fuzzing.md.
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer/ImportModel.h"
#include "compiler/Pipelines/Pipelines.h"
#include "dialects/Graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: attributes and types live as long as their
  // context, so a shared one would grow without bound.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.loadDialect<sinter::sgraph::SGraphDialect, mlir::func::FuncDialect>();
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });

  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  sinter::ImportOptions options;
  // Keep tensors small enough that a later phase could not allocate much.
  options.batchSize = 2;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      sinter::importModel(text, "fuzz.pbtxt", context, options);
  if (!module)
    return 0;
  mlir::PassManager pm(&context);
  sinter::buildTrainingPipeline(pm);
  (void)pm.run(*module);
  return 0;
}
