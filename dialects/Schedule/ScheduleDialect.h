//===- ScheduleDialect.h - the sched dialect -------------------*- C++ -*-===//

#ifndef SINTER_DIALECTS_SCHEDULE_SCHEDULEDIALECT_H
#define SINTER_DIALECTS_SCHEDULE_SCHEDULEDIALECT_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"

#include "dialects/Schedule/ScheduleDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Schedule/ScheduleTypes.h.inc"

#endif // SINTER_DIALECTS_SCHEDULE_SCHEDULEDIALECT_H
