//===- KernelChunks.cpp - how code generation cuts a kernel's space -------===//

#include "passes/Analysis/KernelChunks.h"

#include <algorithm>

namespace sinter::analysis {

int splitDimension(const std::vector<int64_t> &space,
                   const std::vector<bool> &reduced,
                   const KernelLimits &limits) {
  int64_t numel = 1;
  for (int64_t d : space)
    numel *= d;
  if (numel < limits.minElementsToSplit)
    return -1;
  for (size_t p = 0; p < space.size(); ++p)
    if (!reduced[p] && space[p] > 1)
      return static_cast<int>(p);
  return -1;
}

std::vector<int> chunkDimensions(const std::vector<int64_t> &space,
                                 const std::vector<bool> &reduced, int split,
                                 const KernelLimits &limits) {
  if (split < 0)
    return {};
  std::vector<int> fixed{split};
  for (int p = split + 1; p < static_cast<int>(space.size()) && !reduced[p] &&
                          chunkElements(space, fixed) > limits.chunkElements;
       ++p)
    fixed.push_back(p);
  return fixed;
}

int64_t chunkElements(const std::vector<int64_t> &space,
                      const std::vector<int> &fixed) {
  int64_t n = 1;
  for (size_t p = 0; p < space.size(); ++p)
    if (std::find(fixed.begin(), fixed.end(), static_cast<int>(p)) ==
        fixed.end())
      n *= space[p];
  return n;
}

} // namespace sinter::analysis
