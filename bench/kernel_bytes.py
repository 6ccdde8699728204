#!/usr/bin/env python3
"""The bytes a step's kernels read and write, counted from its program.

Where nothing can be timed (the CUDA target on a machine with no GPU),
what the fusion leaves to move can still be counted: for each kernel launch
of a scheduled program (`sinterc --dump-dir`'s NN-scheduled.mlir), the
sizes of the buffers it takes and writes. A row kernel that reads its row
in several passes counts it once, and matmuls are left out (they are
compute-bound), so this is a floor on the kernels' traffic, good for
comparing two builds of one model, not a time.

    sinterc examples/gpt2_124m.pbtxt --target=cuda --precision=bf16_mixed \\
        --batch-size=16 --dump-dir=dump -o train
    bench/kernel_bytes.py dump/05-scheduled.mlir [--top=N]

Prints the launches and bytes (decimal units) of the program's first
step program (the training step), then the N kernels that move the most,
grouped by the ops they run.
"""

import argparse
import collections
import re
import sys

BYTES = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "bf16": 2, "f16": 2,
         "i8": 1, "i1": 1}
BUFFER = re.compile(r"!sched\.buffer<([^>]*)>")


def buffer_bytes(spelled):
    """Bytes of a buffer type's contents, e.g. '16x1024xbf16' -> 32768."""
    *dims, element = spelled.split("x")
    if element not in BYTES:
        raise ValueError(f"unknown element type in !sched.buffer<{spelled}>")
    count = 1
    for d in dims:
        count *= int(d)
    return count * BYTES[element]


def human(n):
    """Bytes in decimal units: 65.27 GB, 1.50 MB, 312 B."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def kernel_ops(text):
    """Kernel name -> the sgraph ops it runs, in order, once each."""
    ops = {}
    for m in re.finditer(r"sched\.kernel @(k\w+)\(", text):
        end = text.find("sched.yield", m.end())
        body = text[m.end():end]
        names = re.findall(r"= sgraph\.([a-z_]+)", body)
        ops[m.group(1)] = "_".join(dict.fromkeys(n for n in names
                                                 if n != "constant"))
    return ops


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scheduled", help="an NN-scheduled.mlir dump")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    try:
        text = open(args.scheduled, encoding="utf-8").read()
    except OSError as e:
        sys.exit(f"kernel_bytes.py: {args.scheduled}: {e.strerror}")
    start = text.find("sched.program @")
    if start < 0:
        sys.exit(f"kernel_bytes.py: {args.scheduled}: no sched.program "
                 "(not a scheduled program dump)")
    following = text.find("sched.program @", start + 1)
    program = text[start:following if following > 0 else len(text)]
    names = kernel_ops(text)
    total = collections.Counter()
    launches = collections.Counter()
    for line in program.splitlines():
        m = re.search(r"sched\.launch @(k\w+)", line)
        if not m:
            continue
        try:
            moved = sum(buffer_bytes(b) for b in BUFFER.findall(line))
        except ValueError as e:
            sys.exit(f"kernel_bytes.py: {args.scheduled}: {e}")
        key = names.get(m.group(1), m.group(1))
        total[key] += moved
        launches[key] += 1
    name = program.split()[1]
    print(f"{name}: {sum(launches.values())} kernel launches, "
          f"{human(sum(total.values()))} read and written")
    for key, moved in total.most_common(args.top):
        print(f"  {human(moved):>10}  {launches[key]:4d} x  {key}")


if __name__ == "__main__":
    main()
