//===- MemoryPlanner.cpp - Greedy-by-size best-fit arena planning ---------===//
//
// See MemoryPlanner.h for the contract. Four pieces:
//   * resolveBuffers: validates the input and maps every view to its root,
//     widening each root's live interval over its views' uses (shared by the
//     planner and the verifier, so both agree on what "live" means);
//   * Occupancy: the bytes of the roots placed so far, by lifetime, so that
//     one best-fit placement reads the few merged ranges of those live with
//     the new root rather than scanning every root placed before it;
//   * planMemory: the greedy-by-size, best-fit placement of the roots, then
//     the live-bytes sweep that gives the lower bound and category peaks;
//   * verifyPlan: an independent O(n log n) check of a finished plan.
//
//===----------------------------------------------------------------------===//

#include "passes/Analysis/MemoryPlanner.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <limits>
#include <set>
#include <unordered_map>

namespace sinter::analysis {

double MemoryPlan::savingPercent() const {
  if (bytesWithoutReuse == 0)
    return 0.0;
  return 100.0 * static_cast<double>(savedBytes()) /
         static_cast<double>(bytesWithoutReuse);
}

double MemoryPlan::fragmentationRatio() const {
  if (lowerBoundBytes == 0)
    return 1.0;
  return static_cast<double>(arenaBytes) / static_cast<double>(lowerBoundBytes);
}

namespace {

int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  return buf;
}

/// The buffers as the planner sees them: each view mapped to its root, and
/// every root's live interval widened to cover its views.
struct ResolvedBuffers {
  /// root[i] is the index of buffer i's root (i itself for a non-view).
  std::vector<int32_t> root;
  /// Live interval of each root (meaningful for roots only).
  std::vector<int64_t> firstUse, lastUse;
};

/// Validates `buffers` and resolves views; returns an error message or "".
std::string resolveBuffers(const std::vector<Buffer> &buffers,
                           ResolvedBuffers &resolved) {
  size_t n = buffers.size();
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return "too many buffers";
  std::unordered_map<int64_t, int32_t> indexOf;
  indexOf.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Buffer &b = buffers[i];
    if (!indexOf.emplace(b.id, static_cast<int32_t>(i)).second)
      return format("duplicate buffer id %" PRId64, b.id);
    if (b.bytes < 0)
      return format("buffer %" PRId64 " has negative size %" PRId64, b.id,
                    b.bytes);
    if (b.firstUse > b.lastUse)
      return format("buffer %" PRId64 " has empty live interval [%" PRId64
                    ", %" PRId64 "]",
                    b.id, b.firstUse, b.lastUse);
  }

  // Follow each alias chain once; every buffer on a walked path gets the
  // root found at its end, so the whole resolution is O(n).
  enum State : uint8_t { Unvisited, OnPath, Done };
  std::vector<State> state(n, Unvisited);
  resolved.root.assign(n, -1);
  std::vector<int32_t> path;
  for (size_t i = 0; i < n; ++i) {
    path.clear();
    int32_t cur = static_cast<int32_t>(i);
    int32_t root = -1;
    while (root < 0) {
      if (state[cur] == Done) {
        root = resolved.root[cur];
        break;
      }
      if (state[cur] == OnPath)
        return format("alias cycle through buffer %" PRId64, buffers[cur].id);
      state[cur] = OnPath;
      path.push_back(cur);
      const Buffer &b = buffers[cur];
      if (!b.aliasOf) {
        root = cur;
        break;
      }
      auto it = indexOf.find(*b.aliasOf);
      if (it == indexOf.end())
        return format("buffer %" PRId64 " is a view of unknown buffer %" PRId64,
                      b.id, *b.aliasOf);
      cur = it->second;
    }
    for (int32_t p : path) {
      resolved.root[p] = root;
      state[p] = Done;
    }
  }

  resolved.firstUse.resize(n);
  resolved.lastUse.resize(n);
  for (size_t i = 0; i < n; ++i) {
    resolved.firstUse[i] = buffers[i].firstUse;
    resolved.lastUse[i] = buffers[i].lastUse;
  }
  for (size_t i = 0; i < n; ++i) {
    int32_t r = resolved.root[i];
    if (r == static_cast<int32_t>(i))
      continue;
    const Buffer &view = buffers[i];
    if (view.fixedOffset)
      return format("view %" PRId64 " cannot be pinned; pin its owner %" PRId64,
                    view.id, buffers[r].id);
    if (view.bytes > buffers[r].bytes)
      return format("view %" PRId64 " (%" PRId64 " bytes) is larger than its "
                    "owner %" PRId64 " (%" PRId64 " bytes)",
                    view.id, view.bytes, buffers[r].id, buffers[r].bytes);
    // The owner's bytes must stay put from its definition to the last use of
    // any view of it, so its interval becomes the hull of both.
    resolved.firstUse[r] = std::min(resolved.firstUse[r], view.firstUse);
    resolved.lastUse[r] = std::max(resolved.lastUse[r], view.lastUse);
  }
  return "";
}

/// A root buffer with memory, in the order a live-interval sweep visits it.
/// At equal steps starts come before ends: a buffer whose lastUse is t is
/// still live while the buffers whose firstUse is t start.
struct Event {
  int64_t step;
  bool isEnd;
  int32_t index;
  bool operator<(const Event &o) const {
    if (step != o.step)
      return step < o.step;
    if (isEnd != o.isEnd)
      return !isEnd;
    return index < o.index;
  }
};

std::vector<Event> makeEvents(const std::vector<Buffer> &buffers,
                              const ResolvedBuffers &resolved) {
  std::vector<Event> events;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (resolved.root[i] != static_cast<int32_t>(i) || buffers[i].bytes == 0)
      continue;
    events.push_back({resolved.firstUse[i], false, static_cast<int32_t>(i)});
    events.push_back({resolved.lastUse[i], true, static_cast<int32_t>(i)});
  }
  std::sort(events.begin(), events.end());
  return events;
}

/// Fills in the lower bound, the peak step and the category peaks.
void computeLiveBytes(const std::vector<Buffer> &buffers,
                      const ResolvedBuffers &resolved, MemoryPlan &plan) {
  std::array<int64_t, abi::kNumCategories> live{};
  int64_t total = 0;
  for (const Event &e : makeEvents(buffers, resolved)) {
    const Buffer &b = buffers[e.index];
    int c = static_cast<int>(b.category);
    if (e.isEnd) {
      live[c] -= b.bytes;
      total -= b.bytes;
      continue;
    }
    live[c] += b.bytes;
    total += b.bytes;
    plan.maxLiveBytesByCategory[c] =
        std::max(plan.maxLiveBytesByCategory[c], live[c]);
    if (total > plan.lowerBoundBytes) {
      plan.lowerBoundBytes = total;
      plan.peakStep = e.step;
      plan.peakBytesByCategory = live;
    }
  }
}

/// A placed root: its bytes [offset, end) during steps [firstUse, lastUse].
struct Slot {
  int64_t offset, end, firstUse, lastUse;
  bool livesDuring(int64_t first, int64_t last) const {
    return firstUse <= last && first <= lastUse;
  }
};

/// Bytes in use, as disjoint ranges [begin, end) in offset order; ranges that
/// overlap or touch are one. Best fit looks only at aligned gaps, so the
/// caller rounds each end up to the alignment: the gap after a buffer,
/// [alignUp(end), next offset), is then the gap after its range here.
class TakenBytes {
public:
  struct Range {
    int64_t begin, end;
    bool operator<(const Range &o) const { return begin < o.begin; }
  };

  bool empty() const { return ranges.empty(); }
  void clear() { ranges.clear(); }

  void add(int64_t begin, int64_t end) {
    // The first range that ends at or above `begin` and the first that
    // begins above `end`: those in between merge with [begin, end).
    auto first = std::lower_bound(
        ranges.begin(), ranges.end(), begin,
        [](const Range &r, int64_t offset) { return r.end < offset; });
    auto last = std::upper_bound(
        first, ranges.end(), end,
        [](int64_t offset, const Range &r) { return offset < r.begin; });
    if (first == last) {
      ranges.insert(first, Range{begin, end});
      return;
    }
    first->begin = std::min(first->begin, begin);
    first->end = std::max(std::prev(last)->end, end);
    ranges.erase(std::next(first), last);
  }

  void appendTo(std::vector<Range> &out) const {
    out.insert(out.end(), ranges.begin(), ranges.end());
  }

private:
  /// A sorted vector rather than a tree: best fit packs the buffers that
  /// live together tightly, so each set merges into few ranges.
  std::vector<Range> ranges;
};

/// The placed roots by lifetime, so that best fit sees the bytes of those
/// live during [first, last] without a visit of each placed root.
///
/// A segment tree over the steps at which roots start or end. Its node sets
/// split the roots live during [first, last] into O(log n) parts, each root
/// in exactly one: those live at `first`, and those that start within
/// (first, last]. A root is in `cover` of the O(log n) nodes that tile its
/// lifetime, so the roots live at a step are those in `cover` of the nodes
/// on the path from the top to the step's leaf; and it is in `starting` of
/// the nodes on the path to the leaf of its first step, so the roots that
/// start within (first, last] are those in `starting` of the nodes that
/// tile (first, last]. Best fit then makes the scan it always made, over the
/// sets' ranges merged in offset order instead of every placed root: the
/// same gaps, as the ranges' union is the live roots' bytes.
class Occupancy {
public:
  /// `steps`: sorted and unique, every firstUse and lastUse to come.
  Occupancy(std::vector<int64_t> steps, int64_t alignment)
      : steps(std::move(steps)), alignment(alignment) {
    leaves = std::max<int64_t>(1, static_cast<int64_t>(this->steps.size()));
    cover.resize(4 * leaves);
    starting.resize(4 * leaves);
  }

  void clear() {
    for (TakenBytes &set : cover)
      set.clear();
    for (TakenBytes &set : starting)
      set.clear();
  }

  /// Marks [offset, offset + bytes) in use during [first, last].
  void add(int64_t offset, int64_t bytes, int64_t first, int64_t last) {
    int64_t begin = offset, end = alignUp(offset + bytes, alignment);
    addCover(1, 0, leaves - 1, leafOf(first), leafOf(last), begin, end);
    forEachOnPath(leafOf(first),
                  [&](int64_t node) { starting[node].add(begin, end); });
  }

  /// Where best fit puts `bytes` (> 0) live during [first, last]: the lowest
  /// of the smallest aligned gaps between the roots live at any of those
  /// steps that holds them, or on top of those roots if none does.
  int64_t bestFit(int64_t bytes, int64_t first, int64_t last) {
    ranges.clear();
    runs.clear();
    forEachOnPath(leafOf(first), [&](int64_t node) { collect(cover[node]); });
    if (first < last)
      collectStarting(1, 0, leaves - 1, leafOf(first) + 1, leafOf(last));
    mergeRuns();
    // `prevEnd` is the highest byte in use below the current range, so
    // [prevEnd, range.begin) is free. Best fit: the smallest gap that holds
    // `bytes`, which keeps the big gaps for later buffers.
    int64_t prevEnd = 0;
    int64_t bestOffset = -1;
    int64_t bestGap = std::numeric_limits<int64_t>::max();
    for (const TakenBytes::Range &range : ranges) {
      int64_t gap = range.begin - prevEnd;
      if (gap >= bytes && gap < bestGap) {
        bestGap = gap;
        bestOffset = prevEnd;
        // Every offset is aligned, so gaps are multiples of the alignment
        // and this one (alignUp(bytes)) cannot be beaten.
        if (gap - bytes < alignment)
          break;
      }
      prevEnd = std::max(prevEnd, range.end);
    }
    return bestOffset >= 0 ? bestOffset : prevEnd;
  }

private:
  int64_t leafOf(int64_t step) const {
    return std::lower_bound(steps.begin(), steps.end(), step) - steps.begin();
  }

  /// Calls `f` on each node from the top of the tree down to `leaf`.
  template <typename F> void forEachOnPath(int64_t leaf, F f) {
    int64_t node = 1, lo = 0, hi = leaves - 1;
    for (;;) {
      f(node);
      if (lo == hi)
        return;
      int64_t mid = lo + (hi - lo) / 2;
      if (leaf <= mid) {
        node = 2 * node;
        hi = mid;
      } else {
        node = 2 * node + 1;
        lo = mid + 1;
      }
    }
  }

  void addCover(int64_t node, int64_t lo, int64_t hi, int64_t first,
                int64_t last, int64_t begin, int64_t end) {
    if (last < lo || hi < first)
      return;
    if (first <= lo && hi <= last) {
      cover[node].add(begin, end);
      return;
    }
    int64_t mid = lo + (hi - lo) / 2;
    addCover(2 * node, lo, mid, first, last, begin, end);
    addCover(2 * node + 1, mid + 1, hi, first, last, begin, end);
  }

  void collectStarting(int64_t node, int64_t lo, int64_t hi, int64_t first,
                       int64_t last) {
    if (last < lo || hi < first)
      return;
    if (first <= lo && hi <= last) {
      collect(starting[node]);
      return;
    }
    int64_t mid = lo + (hi - lo) / 2;
    collectStarting(2 * node, lo, mid, first, last);
    collectStarting(2 * node + 1, mid + 1, hi, first, last);
  }

  /// Appends a set's ranges to `ranges`, as one sorted run.
  void collect(const TakenBytes &set) {
    if (set.empty())
      return;
    runs.push_back(ranges.size());
    set.appendTo(ranges);
  }

  /// Sorts `ranges` by merging its runs pairwise, O(r log k) for r ranges
  /// in k runs where a sort would take O(r log r).
  void mergeRuns() {
    runs.push_back(ranges.size());
    while (runs.size() > 2) {
      merged.resize(ranges.size());
      size_t kept = 0;
      for (size_t r = 0; r + 1 < runs.size(); r += 2) {
        auto a = ranges.begin() + runs[r], b = ranges.begin() + runs[r + 1];
        if (r + 2 == runs.size()) { // The odd one out.
          std::copy(a, b, merged.begin() + runs[r]);
          runs[++kept] = runs[r + 1];
          break;
        }
        std::merge(a, b, b, ranges.begin() + runs[r + 2],
                   merged.begin() + runs[r]);
        runs[++kept] = runs[r + 2];
      }
      runs.resize(kept + 1);
      ranges.swap(merged);
    }
  }

  std::vector<int64_t> steps;
  int64_t alignment;
  int64_t leaves;
  /// Indexed by node: the top is 1, the children of k are 2k and 2k + 1.
  std::vector<TakenBytes> cover, starting;
  /// The ranges collected for one placement, where each run of them begins
  /// (and, last, where they end), and room to merge them.
  std::vector<TakenBytes::Range> ranges, merged;
  std::vector<size_t> runs;
};

} // namespace

MemoryPlan planMemory(const std::vector<Buffer> &buffers,
                      const PlanOptions &options) {
  MemoryPlan plan;
  int64_t alignment = options.alignment;
  plan.alignment = alignment;
  if (alignment < 1) {
    plan.error = format("alignment must be >= 1, got %" PRId64, alignment);
    return plan;
  }
  ResolvedBuffers resolved;
  plan.error = resolveBuffers(buffers, resolved);
  if (!plan.error.empty())
    return plan;

  size_t n = buffers.size();
  plan.offsets.assign(n, 0);

  // Pinned roots go first, in input order; the others largest first. Ties
  // prefer longer lifetimes (harder to fit later), then the input order, so
  // that the plan is deterministic.
  std::vector<int32_t> pinned, order;
  for (size_t i = 0; i < n; ++i) {
    const Buffer &b = buffers[i];
    if (resolved.root[i] != static_cast<int32_t>(i))
      continue;
    if (b.fixedOffset) {
      if (*b.fixedOffset < 0 || *b.fixedOffset % alignment != 0) {
        plan.error = format("buffer %" PRId64 " is pinned at %" PRId64
                            ", not a non-negative multiple of %" PRId64,
                            b.id, *b.fixedOffset, alignment);
        return plan;
      }
      pinned.push_back(static_cast<int32_t>(i));
    } else if (b.bytes > 0) {
      // Zero-byte buffers occupy nothing and collide with nothing; they keep
      // offset 0.
      order.push_back(static_cast<int32_t>(i));
    }
  }
  auto length = [&](int32_t i) {
    return resolved.lastUse[i] - resolved.firstUse[i];
  };
  auto bySize = [&](int32_t a, int32_t b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    if (length(a) != length(b))
      return length(a) > length(b);
    return a < b;
  };
  std::sort(order.begin(), order.end(), bySize);

  // The lower bound and the step where it is reached (the second ordering
  // below needs them).
  computeLiveBytes(buffers, resolved, plan);

  // The pins, checked against each other; the others are placed around
  // them, so every placement starts from these.
  std::vector<Slot> slots;
  for (int32_t i : pinned) {
    const Buffer &b = buffers[i];
    Slot slot{*b.fixedOffset, *b.fixedOffset + b.bytes, resolved.firstUse[i],
              resolved.lastUse[i]};
    plan.offsets[i] = slot.offset;
    if (b.bytes == 0)
      continue;
    // Pins are few; a scan over the pins placed so far is cheap enough.
    for (const Slot &other : slots) {
      if (other.livesDuring(slot.firstUse, slot.lastUse) &&
          other.offset < slot.end && slot.offset < other.end) {
        plan.error =
            format("pinned buffer %" PRId64 " at [%" PRId64 ", %" PRId64
                   ") collides with another pinned "
                   "buffer at [%" PRId64 ", %" PRId64 ")",
                   b.id, slot.offset, slot.end, other.offset, other.end);
        return plan;
      }
    }
    slots.push_back(slot);
  }

  std::vector<int64_t> steps;
  for (const std::vector<int32_t> *roots : {&pinned, &order})
    for (int32_t i : *roots) {
      steps.push_back(resolved.firstUse[i]);
      steps.push_back(resolved.lastUse[i]);
    }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  Occupancy occupancy(std::move(steps), alignment);

  // Places `order` around the pins; returns the arena it needs.
  auto place = [&](const std::vector<int32_t> &order,
                   std::vector<int64_t> &offsets) {
    occupancy.clear();
    int64_t arena = 0;
    for (const Slot &slot : slots) {
      arena = std::max(arena, slot.end);
      occupancy.add(slot.offset, slot.end - slot.offset, slot.firstUse,
                    slot.lastUse);
    }
    for (int32_t i : order) {
      int64_t bytes = buffers[i].bytes;
      int64_t first = resolved.firstUse[i], last = resolved.lastUse[i];
      // Best fit: the smallest gap that holds `bytes` among the buffers
      // live at the same time as this one, which keeps the big gaps for
      // later buffers; when none does, on top of them all.
      int64_t offset = occupancy.bestFit(bytes, first, last);
      offsets[i] = offset;
      arena = std::max(arena, offset + bytes);
      occupancy.add(offset, bytes, first, last);
    }
    return arena;
  };

  std::vector<int64_t> offsets = plan.offsets;
  int64_t arena = place(order, offsets);
  // Above the lower bound: try again with the buffers live at the peak step
  // first. Those alone need the lower bound; packed first, nothing that
  // lives elsewhere pushes them up. Keep whichever arena is smaller.
  if (arena > alignUp(plan.lowerBoundBytes, alignment)) {
    std::vector<int32_t> peakFirst;
    std::vector<int32_t> rest;
    for (int32_t i : order)
      (resolved.firstUse[i] <= plan.peakStep &&
               plan.peakStep <= resolved.lastUse[i]
           ? peakFirst
           : rest)
          .push_back(i);
    peakFirst.insert(peakFirst.end(), rest.begin(), rest.end());
    std::vector<int64_t> other = plan.offsets;
    int64_t otherArena = place(peakFirst, other);
    if (otherArena < arena)
      offsets = std::move(other);
  }
  plan.offsets = std::move(offsets);

  for (size_t i = 0; i < n; ++i) {
    int32_t r = resolved.root[i];
    plan.offsets[i] = plan.offsets[r];
    plan.arenaBytes =
        std::max(plan.arenaBytes, plan.offsets[i] + buffers[i].bytes);
    if (r == static_cast<int32_t>(i))
      plan.bytesWithoutReuse += alignUp(buffers[i].bytes, alignment);
  }
  return plan;
}

MemoryPlan measurePlan(const std::vector<Buffer> &buffers,
                       const std::vector<int64_t> &offsets, int64_t alignment) {
  MemoryPlan plan;
  plan.alignment = alignment;
  ResolvedBuffers resolved;
  plan.error = resolveBuffers(buffers, resolved);
  if (!plan.error.empty())
    return plan;
  if (offsets.size() != buffers.size()) {
    plan.error =
        format("%zu offsets for %zu buffers", offsets.size(), buffers.size());
    return plan;
  }
  plan.offsets = offsets;
  computeLiveBytes(buffers, resolved, plan);
  for (size_t i = 0; i < buffers.size(); ++i) {
    plan.arenaBytes = std::max(plan.arenaBytes, offsets[i] + buffers[i].bytes);
    if (resolved.root[i] == static_cast<int32_t>(i))
      plan.bytesWithoutReuse += alignUp(buffers[i].bytes, alignment);
  }
  return plan;
}

std::string verifyPlan(const std::vector<Buffer> &buffers,
                       const MemoryPlan &plan) {
  if (!plan.ok())
    return "plan has an error: " + plan.error;
  if (plan.offsets.size() != buffers.size())
    return format("plan has %zu offsets for %zu buffers", plan.offsets.size(),
                  buffers.size());
  if (plan.alignment < 1)
    return format("plan alignment must be >= 1, got %" PRId64, plan.alignment);
  ResolvedBuffers resolved;
  std::string error = resolveBuffers(buffers, resolved);
  if (!error.empty())
    return error;

  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer &b = buffers[i];
    int64_t offset = plan.offsets[i];
    if (offset < 0 || offset % plan.alignment != 0)
      return format("buffer %" PRId64 " at offset %" PRId64
                    " is not a non-negative multiple of %" PRId64,
                    b.id, offset, plan.alignment);
    if (b.bytes > plan.arenaBytes || offset > plan.arenaBytes - b.bytes)
      return format("buffer %" PRId64 " at [%" PRId64 ", +%" PRId64
                    ") exceeds the arena of %" PRId64 " bytes",
                    b.id, offset, b.bytes, plan.arenaBytes);
    if (b.fixedOffset && *b.fixedOffset != offset)
      return format("buffer %" PRId64 " is pinned at %" PRId64
                    " but placed at %" PRId64,
                    b.id, *b.fixedOffset, offset);
    int32_t r = resolved.root[i];
    if (plan.offsets[r] != offset)
      return format("view %" PRId64 " at %" PRId64
                    " is not at its owner %" PRId64 "'s offset %" PRId64,
                    b.id, offset, buffers[r].id, plan.offsets[r]);
  }

  // Sweep the steps keeping the live roots ordered by offset. While no two
  // live roots overlap, a new one overlaps some live root iff it overlaps its
  // neighbour below or above in that order, so each start is O(log n).
  std::set<std::pair<int64_t, int32_t>> live;
  auto describe = [&](int32_t i) {
    return format("buffer %" PRId64 " at [%" PRId64 ", %" PRId64
                  ") live [%" PRId64 ", %" PRId64 "]",
                  buffers[i].id, plan.offsets[i],
                  plan.offsets[i] + buffers[i].bytes, resolved.firstUse[i],
                  resolved.lastUse[i]);
  };
  for (const Event &e : makeEvents(buffers, resolved)) {
    int64_t offset = plan.offsets[e.index];
    if (e.isEnd) {
      live.erase({offset, e.index});
      continue;
    }
    int64_t end = offset + buffers[e.index].bytes;
    auto above =
        live.lower_bound({offset, std::numeric_limits<int32_t>::min()});
    if (above != live.end() && above->first < end)
      return describe(e.index) + " overlaps " + describe(above->second);
    if (above != live.begin()) {
      int32_t below = std::prev(above)->second;
      if (plan.offsets[below] + buffers[below].bytes > offset)
        return describe(e.index) + " overlaps " + describe(below);
    }
    live.insert({offset, e.index});
  }
  return "";
}

namespace {

std::string formatBytes(int64_t bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0)
    return format("%" PRId64 " B", bytes);
  return format("%.2f %s", value, units[unit]);
}

} // namespace

std::string formatPlanReport(const std::vector<Buffer> &buffers,
                             const MemoryPlan &plan, int largestCount) {
  if (!plan.ok())
    return "memory plan failed: " + plan.error + "\n";
  std::string out;
  out += format("memory plan: %zu buffers, alignment %" PRId64 "\n",
                buffers.size(), plan.alignment);
  auto line = [&](const char *label, int64_t bytes) {
    out += format("  %-22s %12s  (%" PRId64 ")\n", label,
                  formatBytes(bytes).c_str(), bytes);
  };
  line("arena", plan.arenaBytes);
  line("lower bound (peak)", plan.lowerBoundBytes);
  line("without reuse", plan.bytesWithoutReuse);
  out += format("  %-22s %11.1f%%\n", "saving", plan.savingPercent());
  out += format("  %-22s %11.3fx\n", "arena / lower bound",
                plan.fragmentationRatio());
  out += format("  peak at step %" PRId64 "; bytes by category "
                "(live at peak / own max):\n",
                plan.peakStep);
  for (int c = 0; c < abi::kNumCategories; ++c) {
    if (plan.maxLiveBytesByCategory[c] == 0)
      continue;
    out +=
        format("    %-16s %12s %12s\n",
               std::string(abi::categoryName(static_cast<abi::CategoryKind>(c)))
                   .c_str(),
               formatBytes(plan.peakBytesByCategory[c]).c_str(),
               formatBytes(plan.maxLiveBytesByCategory[c]).c_str());
  }

  std::vector<int32_t> largest(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i)
    largest[i] = static_cast<int32_t>(i);
  size_t count =
      std::min(largest.size(), static_cast<size_t>(std::max(largestCount, 0)));
  std::partial_sort(largest.begin(), largest.begin() + count, largest.end(),
                    [&](int32_t a, int32_t b) {
                      if (buffers[a].bytes != buffers[b].bytes)
                        return buffers[a].bytes > buffers[b].bytes;
                      return a < b;
                    });
  if (count == 0)
    return out;
  out += format("  largest %zu buffers:\n", count);
  out += format("    %8s  %-14s %12s %12s  %s\n", "id", "category", "bytes",
                "offset", "live");
  for (size_t k = 0; k < count; ++k) {
    const Buffer &b = buffers[largest[k]];
    out += format("    %8" PRId64 "  %-14s %12" PRId64 " %12" PRId64
                  "  [%" PRId64 ", %" PRId64 "]",
                  b.id, std::string(abi::categoryName(b.category)).c_str(),
                  b.bytes, plan.offsets[largest[k]], b.firstUse, b.lastUse);
    if (b.aliasOf)
      out += format(" view of %" PRId64, *b.aliasOf);
    out += "\n";
  }
  return out;
}

} // namespace sinter::analysis
