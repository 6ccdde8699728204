//===- StepProgramBuilder.h - a sched.program as the runtime reads it -*- C++ -*-===//
//
// The step program of a lowered `sched.program` (every launch names its
// kernel's symbol and extent), in the schema the compiler and the runtime
// share (abi/StepProgram.proto). sinter-lower-step serializes it
// into the object file; the driver's dumps print it as JSON. One builder
// for both, so the dump is exactly what the binary runs.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_COMPILER_CODEGEN_STEPPROGRAMBUILDER_H
#define SINTER_COMPILER_CODEGEN_STEPPROGRAMBUILDER_H

#include "dialects/Schedule/ScheduleOps.h"
#include "abi/Abi.h"

#include <string>

namespace sinter::codegen {

/// The step program of `program`; fails with a diagnostic on an op it
/// cannot encode (a launch not lowered yet, a collective).
mlir::FailureOr<abi::StepProgram> buildStepProgram(sched::ProgramOp program);

/// The program as the dumps write it: JSON with the schema's field and enum
/// names, every field present (int64 values are strings, as proto3's JSON
/// mapping has them).
std::string stepProgramJson(const abi::StepProgram &program);

} // namespace sinter::codegen

#endif // SINTER_COMPILER_CODEGEN_STEPPROGRAMBUILDER_H
