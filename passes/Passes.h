//===- Passes.h - Sinter's target-independent passes ------------*- C++ -*-===//

#ifndef SINTER_PASSES_PASSES_H
#define SINTER_PASSES_PASSES_H

#include "dialects/Graph/GraphOps.h"
#include "dialects/Schedule/ScheduleDialect.h"
#include "passes/Analysis/KernelChunks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace sinter {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace sinter

#endif // SINTER_PASSES_PASSES_H
