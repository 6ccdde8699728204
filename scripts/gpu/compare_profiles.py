#!/usr/bin/env python3
"""Two `--profile` outputs of one model (SINTER_PROFILE_ALL=1) side by side.

    compare_profiles.py BEFORE AFTER

Kernels are grouped by kind: the label without its `kN_` prefix (every
layer's softmax is one kind), so two builds whose kernel numbers differ
still line up. Prints the step times, then each kind's total ms per run in
both and the difference, largest first. Standard library only: it runs on
the GPU machine.
"""
import collections
import re
import sys

KERNEL = re.compile(r"^\s+k\d+_(\S+)\s+([\d.]+) ms/run")
STEP = re.compile(r"^profile: .*?([\d.]+) ms/run")
PART = re.compile(r"^\s+(matmul|kernels|copies|comm wait|overhead)\s+([\d.]+) ms/run")


def read(path):
    kinds = collections.defaultdict(float)
    counts = collections.Counter()
    parts = {}
    step = None
    with open(path) as f:
        for line in f:
            if step is None and (m := STEP.match(line)):
                step = float(m.group(1))
            elif (m := PART.match(line)) and m.group(1) not in parts:
                parts[m.group(1)] = float(m.group(2))
            elif m := KERNEL.match(line):
                kinds[m.group(1)] += float(m.group(2))
                counts[m.group(1)] += 1
    if step is None:
        sys.exit(f"compare_profiles: {path}: no 'profile:' line (did the run fail?)")
    return step, parts, kinds, counts


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: compare_profiles.py BEFORE AFTER")
    (s0, p0, k0, c0), (s1, p1, k1, c1) = read(sys.argv[1]), read(sys.argv[2])
    print(f"step: {s0:.3f} -> {s1:.3f} ms/run ({s1 - s0:+.3f})")
    for part in ("matmul", "kernels", "copies", "overhead"):
        if part in p0 or part in p1:
            a, b = p0.get(part, 0.0), p1.get(part, 0.0)
            print(f"  {part:9s} {a:9.3f} -> {b:9.3f} ({b - a:+.3f})")
    rows = []
    for kind in set(k0) | set(k1):
        a, b = k0.get(kind, 0.0), k1.get(kind, 0.0)
        rows.append((b - a, kind, a, b, c0.get(kind, 0), c1.get(kind, 0)))
    rows.sort(key=lambda r: -abs(r[0]))
    print("  by kind (ms/run, before -> after, kernels):")
    for diff, kind, a, b, n0, n1 in rows[:20]:
        print(f"  {diff:+8.3f}  {a:8.3f} -> {b:8.3f}  x{n0}->{n1}  {kind}")


if __name__ == "__main__":
    main()
