#!/usr/bin/env python3
"""Holds two training runs' JSONL logs (--log-jsonl) to the same numbers.

    same_losses.py A.jsonl B.jsonl [--rtol=1e-4]

Every numeric field that is not a time or a rate (loss, accuracy, lr,
grad_norm, eval_loss, ...) of every line, matched by step and kind (a step's
line, an evaluation's line), must agree within rtol relative to the larger
magnitude (1e-4: two programs computing the same f32 step with different
summation orders over a few steps; see compare_compiled.py's tolerances).
Both logs must have the same lines. Prints one line per mismatch and exits
1 on any; prints "same: N values" otherwise.
"""

import argparse
import json
import sys

TIMES = ("seconds", "per_second")


def lines(path):
    out = {}
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            kind = "eval" if any(k.startswith("eval_") for k in rec) else "step"
            out[(rec.get("step"), kind)] = {
                k: v for k, v in rec.items()
                if isinstance(v, (int, float)) and not k.endswith(TIMES)}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rtol", type=float, default=1e-4)
    args = ap.parse_args()
    a, b = lines(args.a), lines(args.b)
    if a.keys() != b.keys():
        print(f"the logs differ in their lines: {sorted(a)} vs {sorted(b)}")
        return 1
    bad, n = 0, 0
    for key in sorted(a, key=str):
        for name in sorted(set(a[key]) | set(b[key])):
            x, y = a[key].get(name), b[key].get(name)
            n += 1
            if x is None or y is None:
                print(f"step {key[0]} ({key[1]}): {name} only in one log")
                bad += 1
            elif abs(x - y) > args.rtol * max(abs(x), abs(y), 1e-30):
                print(f"step {key[0]} ({key[1]}): {name} {x!r} vs {y!r}")
                bad += 1
    if bad:
        return 1
    print(f"same: {n} values")
    return 0


if __name__ == "__main__":
    sys.exit(main())
