#!/usr/bin/env python3
"""Two builds of the same training binaries, side by side: the step and its
kernels' time (`--profile`), interleaved rounds, medians. A benchmark, not a
test (docs/Benchmarks.md, "CPU kernels: bf16 loads and bias gradients at
batch 1").

usage: kernels_ab.py ROUNDS NAME:OLD:NEW:STEPS... [--data=DIR]

Each NAME:OLD:NEW:STEPS runs the binaries OLD and NEW (paths, compiled from
the same model by two sinterc builds) for STEPS steps on 2 threads, in
alternating order round by round, and prints the medians of the step time
and of the kernels' time (the part outside matmuls) with each round's
kernels' time.
"""

import collections
import os
import re
import statistics
import subprocess
import sys


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--data=")]
    data = next((a.split("=", 1)[1] for a in sys.argv[1:]
                 if a.startswith("--data=")),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                             "examples", "data", "chargpt"))
    if len(args) < 2:
        sys.exit(__doc__)
    rounds = int(args[0])
    pairs = [a.split(":") for a in args[1:]]
    res = collections.defaultdict(list)
    print(f"load average {os.getloadavg()[0]:.2f}")
    for r in range(rounds):
        for name, old, new, steps in pairs:
            for b in ([old, new] if r % 2 == 0 else [new, old]):
                p = subprocess.run([b, f"--steps={steps}", "--threads=2",
                                    "--profile", f"--data={data}"],
                                   capture_output=True, text=True)
                txt = p.stdout + p.stderr
                step = float(re.search(r"([\d.]+) ms/run", txt).group(1))
                k = float(re.search(r"kernels\s+([\d.]+) ms/run", txt).group(1))
                res[(name, b)].append((step, k))
    for name, old, new, _ in pairs:
        for b in (old, new):
            v = res[(name, b)]
            print(f"{name:16s} {os.path.basename(b):12s} step "
                  f"{statistics.median(x for x, _ in v):8.1f} ms  kernels "
                  f"{statistics.median(y for _, y in v):7.1f} ms  (kernels by "
                  f"round: {', '.join(f'{y:.1f}' for _, y in v)})")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
