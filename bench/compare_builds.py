#!/usr/bin/env python3
"""Step time of several training binaries of one model, side by side.

A benchmark, not a test. Runs each binary (NAME=PATH) on the same inputs
with `--profile`, interleaved round by round (the order rotates each round,
so that a burst of machine load hits every binary alike), and prints for
each the best and the median ms per step over the rounds and its ratio to
the first binary's best, and the median of the kernels' ms per step (the
profile's time outside matmuls and copies, what a kernel change moves when
matmuls dominate the step). The 1-minute load average is recorded around
the runs. Typical use: a build before a change against the build after it.

  bench/compare_builds.py --inputs=in.safetensors --steps=10 --rounds=7 \\
      before=/tmp/before/train after=/tmp/after/train

--make-inputs=DUMP_DIR writes random inputs for the training step in that
dump (sinterc --dump-dir) to --inputs first.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
from safetensors_io import write_safetensors  # noqa: E402
import step_program  # noqa: E402

PROFILE_TOTAL = re.compile(r"profile: \d+ runs, \d+ threads, ([\d.]+) ms/run")
PROFILE_KERNELS = re.compile(r"\n\s*kernels\s+([\d.]+) ms/run")


def make_inputs(dump_dir, path, seed=0):
    program = step_program.load(step_program.find(dump_dir))
    rng = np.random.default_rng(seed)
    tensors = {}
    for a in program["arguments"]:
        if a.get("kind") != "input":
            continue
        b = program["buffers"][a["buffer"]]
        shape = tuple(b["shape"])
        if b["dtype"] == "i64":
            high = a.get("bound", 2)
            tensors[a["name"]] = rng.integers(0, high, shape).astype(np.int64)
        elif b["dtype"] == "f32":
            tensors[a["name"]] = rng.standard_normal(shape).astype(np.float32)
        else:
            sys.exit(f"error: input {a['name']}: dtype {b['dtype']} "
                     "unsupported")
    write_safetensors(path, tensors)


def step_ms(binary, inputs, steps, threads):
    """(ms per step, of which kernels) from the binary's profile."""
    cmd = [binary, f"--inputs={inputs}", f"--steps={1 + steps}",
           f"--threads={threads}", "--profile"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{out.stderr}")
    m = PROFILE_TOTAL.search(out.stdout + out.stderr)
    k = PROFILE_KERNELS.search(out.stdout + out.stderr)
    if not m or not k:
        sys.exit(f"error: no profile lines from {binary}")
    return float(m.group(1)), float(k.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binaries", nargs="+", help="NAME=PATH")
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--make-inputs", metavar="DUMP_DIR")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    named = []
    for spec in args.binaries:
        name, sep, path = spec.partition("=")
        if not sep or not os.access(path, os.X_OK):
            sys.exit(f"error: {spec}: expected NAME=PATH of an executable")
        named.append((name, path))
    if args.make_inputs:
        make_inputs(args.make_inputs, args.inputs)

    loads = [os.getloadavg()[0]]
    times = {name: [] for name, _ in named}
    for r in range(args.rounds):
        order = named[r % len(named):] + named[:r % len(named)]
        for name, path in order:
            times[name].append(step_ms(path, args.inputs, args.steps,
                                       args.threads))
        loads.append(os.getloadavg()[0])

    first = min(t for t, _ in times[named[0][0]])
    print(f"| binary | best ms/step | median ms/step | best / {named[0][0]}'s "
          f"| median kernels ms/step (rounds) |")
    print("| --- | --- | --- | --- | --- |")
    for name, _ in named:
        t = [step for step, _ in times[name]]
        k = [kernels for _, kernels in times[name]]
        print(f"| {name} | {min(t):.1f} | {statistics.median(t):.1f} | "
              f"{min(t) / first:.3f} | {statistics.median(k):.1f} "
              f"({', '.join(f'{x:.1f}' for x in k)}) |")
    print(f"\n{args.rounds} rounds x {args.steps} steps, {args.threads} "
          f"threads; 1-min load average {min(loads):.2f} .. {max(loads):.2f} "
          f"on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
