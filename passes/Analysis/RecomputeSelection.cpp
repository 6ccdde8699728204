//===- RecomputeSelection.cpp - Greedy-at-the-peak recompute selection ----===//
//
// See RecomputeSelection.h for the model and the contract. Three pieces:
//   * budgets: parseMemoryBudget, MemoryBudget::resolve/describe,
//     formatBytes;
//   * the model: validateProblem, peakOf (a difference array over the
//     steps: O(candidates + steps)), liveBytesByStep;
//   * selectRecompute: greedy at the peak, exact search on small failures,
//     pruning.
//
//===----------------------------------------------------------------------===//

#include "passes/Analysis/RecomputeSelection.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace sinter::analysis {

//===----------------------------------------------------------------------===//
// Budgets
//===----------------------------------------------------------------------===//

int64_t MemoryBudget::resolve(int64_t unrecomputedBytes) const {
  if (kind == Kind::Bytes)
    return bytes;
  return static_cast<int64_t>(
      std::floor(fraction * static_cast<double>(unrecomputedBytes)));
}

std::string MemoryBudget::describe() const {
  if (kind == Kind::Bytes)
    return formatBytes(bytes);
  char buf[64];
  snprintf(buf, sizeof(buf), "%g%% of the arena without recompute",
           fraction * 100.0);
  return buf;
}

std::string formatBytes(int64_t bytes) {
  static const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  char buf[64];
  if (bytes < 1024 && bytes > -1024) {
    snprintf(buf, sizeof(buf), "%" PRId64 " B", bytes);
    return buf;
  }
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (std::fabs(value) >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  snprintf(buf, sizeof(buf), "%.2f %s", value, units[unit]);
  return buf;
}

std::optional<MemoryBudget> parseMemoryBudget(std::string_view text,
                                              std::string &error) {
  const std::string forms =
      "write bytes (2GiB, 1500MB, 123456) or a fraction of the arena without "
      "recompute (0.5, 50%)";
  auto fail = [&](const std::string &why) -> std::optional<MemoryBudget> {
    error = why + "; " + forms;
    return std::nullopt;
  };
  while (!text.empty() &&
         std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  if (text.empty())
    return fail("the budget is empty");

  // The number: digits with at most one decimal point.
  size_t end = 0;
  bool point = false, digits = false;
  while (end < text.size()) {
    char c = text[end];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits = true;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
    ++end;
  }
  if (!digits)
    return fail("'" + std::string(text) + "' does not start with a number");
  double value = std::strtod(std::string(text.substr(0, end)).c_str(), nullptr);
  std::string_view rest = text.substr(end);
  while (!rest.empty() &&
         std::isspace(static_cast<unsigned char>(rest.front())))
    rest.remove_prefix(1);
  std::string unit;
  for (char c : rest)
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));

  MemoryBudget budget;
  if (unit == "%") {
    if (!(value > 0.0 && value <= 100.0))
      return fail("a percentage must be in (0, 100], got '" +
                  std::string(text) + "'");
    budget.kind = MemoryBudget::Kind::Fraction;
    budget.fraction = value / 100.0;
    return budget;
  }
  if (unit.empty() && point) {
    if (!(value > 0.0 && value <= 1.0))
      return fail("a fraction must be in (0, 1], got '" + std::string(text) +
                  "' (bytes are a whole number or have a unit)");
    budget.kind = MemoryBudget::Kind::Fraction;
    budget.fraction = value;
    return budget;
  }
  static const std::pair<const char *, double> units[] = {
      {"", 1.0},
      {"b", 1.0},
      {"kb", 1e3},
      {"mb", 1e6},
      {"gb", 1e9},
      {"tb", 1e12},
      {"kib", 1024.0},
      {"mib", 1048576.0},
      {"gib", 1073741824.0},
      {"tib", 1099511627776.0}};
  const double *scale = nullptr;
  for (const auto &[name, s] : units)
    if (unit == name)
      scale = &s;
  if (!scale)
    return fail("unknown unit '" + std::string(rest) + "' in '" +
                std::string(text) + "'");
  double bytes = value * *scale;
  if (!(bytes >= 1.0))
    return fail("the budget must be at least 1 byte, got '" +
                std::string(text) + "'");
  if (bytes > 9.0e18)
    return fail("the budget '" + std::string(text) + "' is too large");
  budget.kind = MemoryBudget::Kind::Bytes;
  budget.bytes = static_cast<int64_t>(std::llround(bytes));
  return budget;
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

std::string validateProblem(const RecomputeProblem &problem) {
  const int64_t steps = static_cast<int64_t>(problem.liveBytes.size());
  char buf[256];
  for (int64_t t = 0; t < steps; ++t)
    if (problem.liveBytes[t] < 0) {
      snprintf(buf, sizeof(buf), "liveBytes[%" PRId64 "] is negative", t);
      return buf;
    }
  std::unordered_map<int64_t, int> seen;
  auto within = [&](int64_t first, int64_t last) {
    return last < first || (first >= 0 && last < steps);
  };
  for (const RecomputeCandidate &c : problem.candidates) {
    if (!seen.emplace(c.id, 1).second) {
      snprintf(buf, sizeof(buf), "candidate id %" PRId64 " is used twice",
               c.id);
      return buf;
    }
    if (c.bytes < 0 || !(c.cost >= 0.0) || !within(c.savedFirst, c.savedLast)) {
      snprintf(buf, sizeof(buf),
               "candidate %" PRId64 " has negative bytes or cost, or a saved "
               "interval outside [0, %" PRId64 ")",
               c.id, steps);
      return buf;
    }
    for (const StepBytes &e : c.extras)
      if (e.bytes < 0 || !within(e.first, e.last)) {
        snprintf(buf, sizeof(buf),
                 "candidate %" PRId64 " has an extra with negative bytes or "
                 "outside [0, %" PRId64 ")",
                 c.id, steps);
        return buf;
      }
  }
  return "";
}

namespace {

/// Adds `sign` times candidate c's effect to a difference array of size
/// steps + 1.
void addEffect(std::vector<int64_t> &delta, const RecomputeCandidate &c,
               int64_t sign) {
  if (c.savedFirst <= c.savedLast) {
    delta[c.savedFirst] -= sign * c.bytes;
    delta[c.savedLast + 1] += sign * c.bytes;
  }
  for (const StepBytes &e : c.extras)
    if (e.first <= e.last) {
      delta[e.first] += sign * e.bytes;
      delta[e.last + 1] -= sign * e.bytes;
    }
}

/// The maximum of `live` and the first step where it is reached.
int64_t maxOf(const std::vector<int64_t> &live, int64_t *step) {
  int64_t peak = 0, at = 0;
  for (size_t t = 0; t < live.size(); ++t)
    if (t == 0 || live[t] > peak) {
      peak = live[t];
      at = static_cast<int64_t>(t);
    }
  if (step)
    *step = at;
  return peak;
}

} // namespace

int64_t peakOf(const RecomputeProblem &problem, const std::vector<bool> &chosen,
               int64_t *peakStep) {
  const size_t steps = problem.liveBytes.size();
  std::vector<int64_t> delta(steps + 1, 0);
  for (size_t i = 0; i < problem.candidates.size(); ++i)
    if (i < chosen.size() && chosen[i])
      addEffect(delta, problem.candidates[i], 1);
  std::vector<int64_t> live(problem.liveBytes);
  int64_t running = 0;
  for (size_t t = 0; t < steps; ++t) {
    running += delta[t];
    live[t] += running;
  }
  return maxOf(live, peakStep);
}

std::vector<int64_t> liveBytesByStep(const std::vector<Buffer> &buffers,
                                     int64_t numSteps) {
  std::unordered_map<int64_t, size_t> indexOf;
  for (size_t i = 0; i < buffers.size(); ++i)
    indexOf[buffers[i].id] = i;
  // Each buffer's root, and the root's interval widened over its views.
  std::vector<int64_t> first(buffers.size()), last(buffers.size());
  std::vector<size_t> root(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    size_t r = i;
    for (size_t hops = 0; buffers[r].aliasOf && hops <= buffers.size(); ++hops)
      r = indexOf.at(*buffers[r].aliasOf);
    root[i] = r;
    first[i] = buffers[i].firstUse;
    last[i] = buffers[i].lastUse;
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    size_t r = root[i];
    first[r] = std::min(first[r], buffers[i].firstUse);
    last[r] = std::max(last[r], buffers[i].lastUse);
  }
  std::vector<int64_t> delta(numSteps + 1, 0);
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (root[i] != i)
      continue;
    int64_t a = std::max<int64_t>(0, first[i]);
    int64_t b = std::min<int64_t>(numSteps - 1, last[i]);
    if (a > b)
      continue;
    delta[a] += buffers[i].bytes;
    delta[b + 1] -= buffers[i].bytes;
  }
  std::vector<int64_t> live(numSteps, 0);
  int64_t running = 0;
  for (int64_t t = 0; t < numSteps; ++t) {
    running += delta[t];
    live[t] = running;
  }
  return live;
}

//===----------------------------------------------------------------------===//
// Selection
//===----------------------------------------------------------------------===//

namespace {

/// Step 1: greedy at the peak. Updates `chosen` and `picks`.
void greedy(const RecomputeProblem &problem, int64_t target,
            std::vector<bool> &chosen, std::vector<RecomputePick> &picks) {
  const auto &cands = problem.candidates;
  std::vector<int64_t> live(problem.liveBytes);
  auto apply = [&](const RecomputeCandidate &c) {
    for (int64_t t = c.savedFirst; t <= c.savedLast; ++t)
      live[t] -= c.bytes;
    for (const StepBytes &e : c.extras)
      for (int64_t t = e.first; t <= e.last; ++t)
        live[t] += e.bytes;
  };
  for (size_t i = 0; i < cands.size(); ++i)
    if (chosen[i])
      apply(cands[i]);

  // The cheapest unchosen candidate that lowers step `at` without raising
  // any step to `peak` or above; -1 if none. `covering` counts the unchosen
  // candidates covering `at`.
  auto bestAt = [&](int64_t at, int64_t peak, int64_t &covering,
                    double &bestScore) {
    int best = -1;
    covering = 0;
    for (size_t i = 0; i < cands.size(); ++i) {
      const RecomputeCandidate &c = cands[i];
      if (chosen[i] || c.bytes <= 0 || at < c.savedFirst || at > c.savedLast)
        continue;
      ++covering;
      // Its extras must not make another step the new peak (or as high as
      // the old one), or the choice would not lower the peak at all.
      bool ok = true;
      for (const StepBytes &e : c.extras) {
        for (int64_t t = e.first; ok && t <= e.last; ++t) {
          int64_t after = live[t];
          if (t >= c.savedFirst && t <= c.savedLast)
            after -= c.bytes;
          for (const StepBytes &f : c.extras)
            if (t >= f.first && t <= f.last)
              after += f.bytes;
          ok = after < peak;
        }
        if (!ok)
          break;
      }
      if (!ok)
        continue;
      double score = c.cost / static_cast<double>(c.bytes);
      if (best < 0 || score < bestScore ||
          (score == bestScore &&
           (c.bytes > cands[best].bytes ||
            (c.bytes == cands[best].bytes && c.id < cands[best].id)))) {
        best = static_cast<int>(i);
        bestScore = score;
      }
    }
    return best;
  };

  while (true) {
    int64_t at = 0;
    int64_t peak = maxOf(live, &at);
    if (live.empty() || peak <= target)
      return;
    int64_t covering = 0;
    double score = 0.0;
    int best = bestAt(at, peak, covering, score);
    std::string how = "greedy";
    if (best < 0)
      return;
    chosen[best] = true;
    RecomputePick pick;
    pick.id = cands[best].id;
    pick.how = how;
    pick.peakStep = at;
    pick.peakBytes = live[at];
    pick.alternatives = covering;
    pick.costPerByte = score;
    apply(cands[best]);
    picks.push_back(pick);
  }
}

double costOf(const RecomputeProblem &problem,
              const std::vector<bool> &chosen) {
  double cost = 0.0;
  for (size_t i = 0; i < problem.candidates.size(); ++i)
    if (chosen[i])
      cost += problem.candidates[i].cost;
  return cost;
}

/// Step 2: the cheapest fitting subset by enumeration; false if none fits.
bool exact(const RecomputeProblem &problem, int64_t target,
           std::vector<bool> &chosen) {
  const size_t n = problem.candidates.size();
  bool found = false;
  double bestCost = 0.0;
  size_t bestCount = 0;
  std::vector<bool> mask(n), best(n);
  for (uint64_t bits = 0; bits < (uint64_t(1) << n); ++bits) {
    size_t count = 0;
    for (size_t i = 0; i < n; ++i) {
      mask[i] = (bits >> i) & 1;
      count += mask[i];
    }
    double cost = costOf(problem, mask);
    if (found && (cost > bestCost || (cost == bestCost && count >= bestCount)))
      continue;
    if (peakOf(problem, mask) > target)
      continue;
    found = true;
    bestCost = cost;
    bestCount = count;
    best = mask;
  }
  if (found)
    chosen = best;
  return found;
}

} // namespace

RecomputeSelection selectRecompute(const RecomputeProblem &problem,
                                   const RecomputeOptions &options) {
  RecomputeSelection result;
  result.error = validateProblem(problem);
  if (!result.error.empty())
    return result;
  const auto &cands = problem.candidates;
  const int64_t target = options.targetBytes;
  std::vector<bool> chosen(cands.size(), false);
  result.initialPeakBytes = peakOf(problem, chosen);

  std::vector<RecomputePick> picks;
  greedy(problem, target, chosen, picks);

  if (peakOf(problem, chosen) > target && options.exactLimit >= 0 &&
      cands.size() <= static_cast<size_t>(std::min(options.exactLimit, 30))) {
    std::vector<bool> exactChoice(cands.size(), false);
    if (exact(problem, target, exactChoice)) {
      chosen = exactChoice;
      picks.clear();
      for (size_t i = 0; i < cands.size(); ++i)
        if (chosen[i]) {
          RecomputePick pick;
          pick.id = cands[i].id;
          pick.how = "exact";
          pick.peakBytes = result.initialPeakBytes;
          pick.costPerByte =
              cands[i].bytes ? cands[i].cost / double(cands[i].bytes) : 0.0;
          picks.push_back(pick);
        }
    }
  }

  // Step 3: drop what the budget does not need, most expensive first.
  if (peakOf(problem, chosen) <= target) {
    std::vector<size_t> order;
    for (size_t i = 0; i < cands.size(); ++i)
      if (chosen[i])
        order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (cands[a].cost != cands[b].cost)
        return cands[a].cost > cands[b].cost;
      return cands[a].bytes < cands[b].bytes;
    });
    // Until nothing changes: with extras, dropping one candidate can make
    // another one unnecessary.
    for (bool dropped = true; dropped;) {
      dropped = false;
      for (size_t i : order) {
        if (!chosen[i])
          continue;
        chosen[i] = false;
        if (peakOf(problem, chosen) > target)
          chosen[i] = true;
        else
          dropped = true;
      }
    }
    std::unordered_map<int64_t, size_t> indexOf;
    for (size_t i = 0; i < cands.size(); ++i)
      indexOf[cands[i].id] = i;
    picks.erase(std::remove_if(picks.begin(), picks.end(),
                               [&](const RecomputePick &p) {
                                 return !chosen[indexOf[p.id]];
                               }),
                picks.end());
  }

  result.chosen = std::move(picks);
  result.peakBytes = peakOf(problem, chosen, &result.peakStep);
  result.cost = costOf(problem, chosen);
  result.fits = result.peakBytes <= target;
  return result;
}

} // namespace sinter::analysis
