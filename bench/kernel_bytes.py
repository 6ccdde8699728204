#!/usr/bin/env python3
"""The bytes a step's kernels move, from the step program sinterc dumps.

Where nothing can be timed (the CUDA target on a machine with no GPU),
what the fusion leaves to move can still be counted. Every kernel of a
step program carries `bytes`, what code generation counts it reads and
writes per call (the figure behind a profile's GB/s; docs/StepProgram.md):
this adds them up over the step's kernel launches. Matmuls are left out
(they are compute-bound), and a row read in several passes counts once, so
it is a floor, good for comparing two builds of one model, not a time.

    sinterc examples/gpt2_124m.pbtxt --target=cuda --precision=bf16_mixed \\
        --batch-size=16 --dump-dir=dump -o train
    bench/kernel_bytes.py dump [--top=N] [--programs]

Prints the launches and bytes (decimal units) of the training step's
program (NN-step-program.json), then the N kernels that move the most,
grouped by the ops they run (the kernel's name without its number). With
--programs, the launches and bytes of every program in the dump instead
(training, evaluation, accumulation), one line each.
"""

import argparse
import collections
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import step_program  # noqa: E402


def human(n):
    """Bytes in decimal units: 65.27 GB, 1.50 MB, 312 B."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dump", help="a `sinterc --dump-dir` folder")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--programs", action="store_true",
                        help="one line for each program in the dump")
    args = parser.parse_args()
    try:
        path = step_program.find(args.dump)
    except OSError as e:
        sys.exit(f"kernel_bytes.py: {args.dump}: {e.strerror}")
    if path is None:
        sys.exit(f"kernel_bytes.py: {args.dump}: no NN-step-program.json "
                 "(not a sinterc --dump-dir folder)")
    if args.programs:
        for prefix in ("", "eval-", "accumulate-"):
            found = step_program.find(args.dump, prefix)
            if found:
                summarize(step_program.load(found), 0)
        return
    summarize(step_program.load(path), args.top)


def summarize(program, top):
    """The program's launches and bytes, then its `top` kernels."""
    kernels = program["kernels"]
    total = collections.Counter()
    launches = collections.Counter()
    for step in program["steps"]:
        if step["op"] != "kernel":
            continue
        kernel = kernels[step["kernel"]]
        ops = kernel["name"].partition("_")[2] or kernel["name"]
        total[ops] += kernel["bytes"]
        launches[ops] += 1
    print(f"@{program['function']}: {sum(launches.values())} kernel "
          f"launches, {human(sum(total.values()))} read and written")
    for ops, moved in total.most_common(top):
        print(f"  {human(moved):>10}  {launches[ops]:4d} x  {ops}")


if __name__ == "__main__":
    main()
