//===- ProgramLiveness.cpp - when each buffer of a program is live -------===//

#include "dialects/Schedule/ProgramLiveness.h"

using namespace mlir;
using namespace sinter::sched;
namespace abi = sinter::abi;

ProgramLiveness::ProgramLiveness(ProgramOp program) {
  Block &body = program.getBlock();
  for (Operation &op : body)
    if (isStep(&op)) {
      stepIndex[&op] = stepOps.size();
      stepOps.push_back(&op);
    }
  const int64_t end = stepOps.size();
  for (auto view : body.getOps<ViewOp>()) {
    if (view.getAliased())
      continue;
    RootLife life;
    life.root = view;
    life.begin = view.getOffset();
    life.end = view.getOffset() + view.getBytes();
    SlabOp slab = view.getSlabOp();
    if (slab && !slab.is(abi::Slab::arena)) {
      life.first = -1;
      life.last = end;
    } else {
      life.first = end + 1;
      life.last = -1;
    }
    rootIndex[view] = lives.size();
    lives.push_back(life);
  }
  auto use = [&](Value v, int64_t from, int64_t to) {
    auto view = v.getDefiningOp<ViewOp>();
    if (!view)
      return;
    auto it = rootIndex.find(view.getRoot());
    if (it == rootIndex.end())
      return;
    RootLife &life = lives[it->second];
    life.first = std::min(life.first, from);
    life.last = std::max(life.last, to);
  };
  for (Operation &op : body) {
    if (auto arg = dyn_cast<ArgumentOp>(op))
      use(arg.getBuffer(), -1, -1);
    else if (auto fill = dyn_cast<FillOp>(op))
      use(fill.getBuffer(), -1, -1);
    else if (auto result = dyn_cast<ResultOp>(op))
      use(result.getBuffer(), end, end);
    else if (auto it = stepIndex.find(&op); it != stepIndex.end())
      for (Value v : stepBuffers(&op))
        use(v, it->second, it->second);
  }
}

int64_t ProgramLiveness::stepOf(Operation *op) const {
  auto it = stepIndex.find(op);
  return it == stepIndex.end() ? -1 : it->second;
}

const RootLife &ProgramLiveness::lifeOf(ViewOp view) const {
  return lives[rootIndex.lookup(view.getRoot())];
}
