//===- GraphDialect.h - the sgraph dialect ---------------------*- C++ -*-===//

#ifndef SINTER_DIALECTS_GRAPH_GRAPHDIALECT_H
#define SINTER_DIALECTS_GRAPH_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/Graph/GraphDialect.h.inc"

#endif // SINTER_DIALECTS_GRAPH_GRAPHDIALECT_H
