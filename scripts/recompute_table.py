#!/usr/bin/env python3
"""The recompute table of docs/Recompute.md: memory and step time, per policy.

    scripts/recompute_table.py [--sinterc=build/bin/sinterc]
        [--model=examples/gpt2_124m.pbtxt] [--batch-size=1] [--steps=3]
        [--repeats=3] [--variant=LABEL:FLAGS ...] [--work-dir=DIR]

For each variant (default: no recompute, every block recomputed, budgets
of 75% and 50% of the arena without recompute) it prints sinterc's
`--memory-report` and builds the training binary; then it runs every binary
--repeats times, round robin, for --steps raw steps on the same random
tokens (`--inputs --steps --profile`, parameters from their initializers),
keeps the fastest time per step from the profiles, checks that each
variant's outputs are byte for byte the first variant's, and prints one
markdown table. Step times depend on the machine and its load; the load
average is printed with the table.
"""

import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import time
import types

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "test", "e2e"))
from chargpt_reference import write_safetensors  # noqa: E402
import step_program  # noqa: E402
from compare_compiled import (find_dump, find_step_program,  # noqa: E402
                              integer_widths, make_arguments)

DEFAULT_VARIANTS = [
    "no recompute:--recompute=none",
    "every block (--recompute=blocks):--recompute=blocks",
    "budget 75%:--memory-budget=75%",
    "budget 50%:--memory-budget=50%",
]


def run(cmd):
    t = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}")
    return p.stdout, time.time() - t


def field(report, pattern):
    m = re.search(pattern, report, re.M)
    return m.group(1).strip() if m else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sinterc", default=os.path.join(root, "build", "bin",
                                                      "sinterc"))
    ap.add_argument("--model", default=os.path.join(root, "examples",
                                                    "gpt2_124m.pbtxt"))
    ap.add_argument("--batch-size", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3,
                    help="time each binary this many times, round robin, "
                    "and keep the fastest (the machine may be shared)")
    ap.add_argument("--variant", action="append")
    ap.add_argument("--work-dir", default="/tmp/sinter-recompute-table")
    args = ap.parse_args()
    variants = [v.split(":", 1) for v in (args.variant or DEFAULT_VARIANTS)]
    work = args.work_dir
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    batch = [f"--batch-size={args.batch_size}"]

    rows = []
    inputs = None
    for i, (label, flags) in enumerate(variants):
        flags = flags.split()
        report, _ = run([args.sinterc, args.model, *batch, *flags,
                         "--memory-report"])
        print(f"== {label}: sinterc {os.path.basename(args.model)} "
              f"{' '.join(batch + flags)} --memory-report\n{report}")
        binary = os.path.join(work, f"train{i}")
        _, compile_s = run([args.sinterc, args.model, *batch, *flags,
                            f"--dump-dir={work}/dump{i}", "-o", binary])
        if inputs is None:
            # Random tokens of the shapes the step program takes, in the
            # range the model reads them with (compare_compiled.py's rule).
            dump = os.path.join(work, f"dump{i}")
            prog = step_program.load(find_step_program(dump))
            widths, ignore = integer_widths(find_dump(dump, "-import.mlir"))
            given, _ = make_arguments(
                types.SimpleNamespace(seed=0, vocab=None, step=0,
                                      params="init", state="zero",
                                      lr_scale=None),
                prog, widths, ignore)
            inputs = os.path.join(work, "in.safetensors")
            write_safetensors(inputs, given)
        rows.append({
            "label": label,
            "arena": field(report, r"^  arena\s+(\S+ \S+)"),
            "gradients": field(report, r"^    gradients\s+(\S+ \S+)"),
            "activations": field(report, r"^    activations\s+(\S+ \S+)"),
            "params": field(report, r"^  parameters\s+(\S+ \S+)"),
            "state": field(report, r"^  optimizer state\s+(\S+ \S+)"),
            "total": field(report, r"^  total\s+(\S+ \S+)"),
            "recompute": field(report, r"^recompute: (.*)"),
            "budget": field(report, r"^budget: (.*)"),
            "compile": f"{compile_s:.0f} s", "binary": binary,
        })

    # Run: every binary once per repeat, round robin, so that a busy moment
    # of a shared machine does not land on one variant only.
    for rep in range(args.repeats):
        for i, r in enumerate(rows):
            outputs = os.path.join(work, f"out{i}.safetensors")
            out, _ = run([r["binary"], f"--inputs={inputs}",
                          f"--steps={args.steps}", f"--outputs={outputs}",
                          "--profile"])
            ms = float(field(out, r"profile: \d+ runs, \d+ threads, "
                                  r"([0-9.]+) ms/run"))
            r["ms"] = min(r.get("ms", ms), ms)
            r["threads"] = field(out, r"profile: \d+ runs, (\d+) threads")
            r["loss"] = field(out, r"^loss = (\S+)")
            # Every result (loss, parameters, optimizer state) bitwise equal
            # to the first variant's: the files are written in one order.
            if i > 0:
                same = filecmp.cmp(outputs, os.path.join(
                    work, "out0.safetensors"), shallow=False)
                r["same"] = "NO" if not same or r.get("same") == "NO" \
                    else "yes"
                os.remove(outputs)
            else:
                r["same"] = "-"
    for r in rows:
        os.remove(r["binary"])

    load = os.getloadavg()
    print(f"\n{os.path.basename(args.model)}, batch {args.batch_size}, "
          f"{args.steps} raw steps, {rows[0]['threads']} threads, the fastest "
          f"of {args.repeats} runs; load average {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f} when done\n")
    print("| variant | arena | at its peak: gradients | activations | "
          "parameters + optimizer state | total | recomputed | budget | "
          "step time | loss | bits = first row |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        m = re.match(r"(\d+) values in \d+ regions \(\d+ kernels, (.*), "
                     r"([0-9.]+)% of the step\)", r["recompute"])
        recomputed = (f"{m.group(1)} values, {m.group(2)} ({m.group(3)}% of "
                      "the step)" if m else r["recompute"])
        b = re.match(r"arena <= (\S+ \S+).*: (fits|does NOT fit)",
                     r["budget"])
        budget = f"{b.group(1)}: {b.group(2)}" if b else r["budget"]
        print(f"| {r['label']} | {r['arena']} | {r['gradients']} | "
              f"{r['activations']} | {r['params']} + {r['state']} | "
              f"{r['total']} | {recomputed} | {budget} | "
              f"{r['ms']:.{0 if r['ms'] >= 100 else 2}f} ms | {r['loss']} | "
              f"{r['same']} |")


if __name__ == "__main__":
    main()
