//===- ProgramLiveness.h - when each buffer of a program is live -*- C++ -*-===//
//
// The liveness rule of the sched dialect (docs/dialects/sched.md, "Memory"),
// computed from the program alone: the steps run in block order; a view is
// used at every step that has it as an operand (a collective's done uses
// its start's buffers, so a buffer in flight is used from start to done);
// views that alias one another are one buffer, named by its root (the view
// that aliases nothing). A root in the arena lives from the first step that
// uses it to the last, and to the end of the program if it is a result;
// roots of the other slabs hold state, inputs and constants across steps and
// live throughout. The verifier (program_c2), the memory report and the
// interpreter's checks all use this one definition.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_DIALECTS_SCHEDULE_PROGRAMLIVENESS_H
#define SINTER_DIALECTS_SCHEDULE_PROGRAMLIVENESS_H

#include "dialects/Schedule/ScheduleOps.h"

#include "llvm/ADT/DenseMap.h"

#include <vector>

namespace sinter::sched {

/// One buffer: a root view and the steps it is live at.
struct RootLife {
  ViewOp root;
  /// Bytes [begin, end) of the root's slab.
  int64_t begin = 0, end = 0;
  /// Live at steps [first, last]; first = -1 means from before the first
  /// step, last = numSteps to after the last. Never used: last < first.
  int64_t first = 0, last = -1;
  bool isLive() const { return first <= last; }
  bool overlapsInTime(const RootLife &other) const {
    return isLive() && other.isLive() && first <= other.last &&
           other.first <= last;
  }
  bool overlapsInBytes(const RootLife &other) const {
    return begin < other.end && other.begin < end;
  }
};

class ProgramLiveness {
public:
  explicit ProgramLiveness(ProgramOp program);

  /// The ops that run, in order.
  llvm::ArrayRef<mlir::Operation *> steps() const { return stepOps; }
  int64_t numSteps() const { return stepOps.size(); }
  /// The index of a step op; -1 for an op that does not run.
  int64_t stepOf(mlir::Operation *op) const;

  /// Every root view of the program, in program order.
  llvm::ArrayRef<RootLife> roots() const { return lives; }
  /// The life of `view`'s root.
  const RootLife &lifeOf(ViewOp view) const;

private:
  std::vector<mlir::Operation *> stepOps;
  llvm::DenseMap<mlir::Operation *, int64_t> stepIndex;
  std::vector<RootLife> lives;
  llvm::DenseMap<mlir::Operation *, int64_t> rootIndex; // root view -> lives
};

} // namespace sinter::sched

#endif // SINTER_DIALECTS_SCHEDULE_PROGRAMLIVENESS_H
