#!/usr/bin/env python3
"""Checks that recompute never changes results: bitwise, on the CPU.

    recompute_identity.py MODEL.pbtxt --variant=LABEL:FLAGS [--variant=...]
        [--batch-size=N] [--steps=K] [--seed=N] [--sinterc=PATH]
        [--work-dir=DIR] [--no-interpreter]

Compiles MODEL without any recomputation (`--recompute=none`) and once per
variant with that variant's sinterc flags (e.g. `blocks:--recompute=blocks`,
`budget:--memory-budget=60%`, or `annotated:` for the model as written),
requires every variant to recompute something (its dump has a recompute
report with at least one recomputed value), runs every binary for K raw
steps from the same inputs (model inputs drawn at random, parameters from
their initializers, fresh optimizer state, step 0: `--inputs --outputs
--steps=K`), and requires every output tensor (the loss of the last step,
every parameter and optimizer-state tensor after K steps) to be bitwise
equal to the baseline's. Unless --no-interpreter, it also runs one step of
each variant's optimized IR (kernel regions, recomputed ops included) on the
reference interpreter and requires bitwise equality there too.

Recomputed ops are the same ops on the same values, fused into kernels of
their own, so nothing may differ: no tolerance.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402
import step_program  # noqa: E402
from compare_compiled import (find_dump, find_step_program,  # noqa: E402
                              integer_widths, make_arguments)


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        print(f"FAILED ({p.returncode}): {' '.join(cmd)}\n{p.stdout}")
        sys.exit(2)
    return p.stdout


def recomputed_values(dump):
    path = find_dump(dump, "-recompute.txt")
    if not path:
        return 0, None
    text = open(path).read()
    m = re.search(r"recomputed: (\d+) values", text)
    arena = re.search(r"arena with recompute: +([^;]+);", text)
    return (int(m.group(1)) if m else 0), (arena.group(1) if arena else None)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and \
        a.tobytes() == b.tobytes()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--variant", action="append", required=True,
                    help="LABEL:FLAGS (flags separated by spaces)")
    ap.add_argument("--batch-size", type=int)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sinterc", default="sinterc")
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--no-interpreter", action="store_true")
    args = ap.parse_args()

    work = args.work_dir
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    batch = [f"--batch-size={args.batch_size}"] if args.batch_size else []
    variants = [("baseline", ["--recompute=none"])]
    for v in args.variant:
        label, _, flags = v.partition(":")
        variants.append((label, flags.split()))

    # Compile everything.
    for label, flags in variants:
        d = os.path.join(work, label)
        os.makedirs(d)
        run([args.sinterc, args.model, *batch, *flags,
             f"--dump-dir={d}/dump", "-o", f"{d}/bin"])
        if label != "baseline":
            n, arena = recomputed_values(f"{d}/dump")
            if n == 0:
                print(f"FAILED: variant {label} recomputes nothing")
                sys.exit(1)
            print(f"{label}: {n} values recomputed, arena {arena}")

    # Inputs: random model inputs, parameters from their initializers.
    base_dump = os.path.join(work, "baseline", "dump")
    prog = step_program.load(find_step_program(base_dump))
    widths, ignore = integer_widths(find_dump(base_dump, "-import.mlir"))
    ns = types.SimpleNamespace(seed=args.seed, vocab=None, step=0,
                               params="init", state="zero", lr_scale=None)
    given, _ = make_arguments(ns, prog, widths, ignore)
    inp = os.path.join(work, "in.safetensors")
    write_safetensors(inp, given)

    bad = 0
    results = {}
    for label, _ in variants:
        out = os.path.join(work, label, "out.safetensors")
        run([os.path.join(work, label, "bin"), f"--inputs={inp}",
             f"--outputs={out}", f"--steps={args.steps}"])
        results[label], _ = read_safetensors(out)
    base = results["baseline"]
    for label, _ in variants[1:]:
        got = results[label]
        diff = [n for n in base if n not in got or not same(base[n], got[n])]
        diff += [n for n in got if n not in base]
        status = "bitwise identical" if not diff else \
            f"DIFFERS in {len(diff)} tensors: {', '.join(sorted(diff)[:8])}"
        print(f"binary {label} vs baseline, {args.steps} steps, "
              f"{len(base)} tensors (loss {float(got.get('loss', np.nan)):.9g}):"
              f" {status}")
        bad += bool(diff)

    if not args.no_interpreter:
        interp = {}
        for label, flags in variants:
            out = os.path.join(work, label, "interp.safetensors")
            run([args.sinterc, args.model, *batch, *flags,
                 "--compile-to=optimized", "--run=train_step",
                 f"--input={inp}", f"--output={out}"])
            interp[label], _ = read_safetensors(out)
        base = interp["baseline"]
        for label, _ in variants[1:]:
            got = interp[label]
            diff = [n for n in base if n not in got or not same(base[n], got[n])]
            print(f"interpreter {label} vs baseline (optimized IR, 1 step): "
                  + ("bitwise identical" if not diff else
                     f"DIFFERS in {len(diff)} tensors: "
                     f"{', '.join(sorted(diff)[:8])}"))
            bad += bool(diff)
    if bad:
        print("MISMATCH")
        sys.exit(1)
    print("recompute identity ok")


if __name__ == "__main__":
    main()
