//===- Target.cpp - the targets sinterc knows ----------------------------===//

#include "compiler/CodeGen/Target.h"

using namespace sinter::codegen;

namespace {
const Target *const kTargets[] = {&cpuTarget(), &cudaTarget(),
                                   &cudaHostTarget()};
} // namespace

const Target *sinter::codegen::lookupTarget(llvm::StringRef name) {
  for (const Target *t : kTargets)
    if (t->name() == name)
      return t;
  return nullptr;
}

const Target &sinter::codegen::defaultTarget() { return cpuTarget(); }

std::string sinter::codegen::targetNames() {
  std::string names;
  for (const Target *t : kTargets)
    names += (names.empty() ? "" : ", ") + t->name().str();
  return names;
}

void sinter::codegen::registerTargetDialects(mlir::DialectRegistry &registry) {
  for (const Target *t : kTargets)
    t->registerDialects(registry);
}
