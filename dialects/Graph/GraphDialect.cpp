//===- GraphDialect.cpp - the sgraph dialect -----------------------------===//

#include "dialects/Graph/GraphDialect.h"
#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace sinter::sgraph;

#include "dialects/Graph/GraphDialect.cpp.inc"

void SGraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Graph/GraphOps.cpp.inc"
      >();
}
