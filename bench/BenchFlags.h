//===- BenchFlags.h - the --name=value flags the bench executables share --===//

#ifndef SINTER_BENCH_BENCHFLAGS_H
#define SINTER_BENCH_BENCHFLAGS_H

#include <cstdlib>
#include <string_view>

namespace sinter::bench {

/// The text after `flag` (which ends in '=') when `arg` starts with it, else
/// null.
inline const char *flagValue(const char *arg, std::string_view flag) {
  return std::string_view(arg).substr(0, flag.size()) == flag
             ? arg + flag.size()
             : nullptr;
}

/// Parses `text` into `out`; false unless it is an integer >= `min`.
inline bool parseAtLeast(const char *text, long long min, long long &out) {
  char *end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (end == text || *end || v < min)
    return false;
  out = v;
  return true;
}

} // namespace sinter::bench

#endif // SINTER_BENCH_BENCHFLAGS_H
