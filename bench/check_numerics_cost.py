#!/usr/bin/env python3
"""The cost of --check-numerics: step time of one training binary with and
without it, interleaved round by round.

A benchmark driver, not a test (docs/Benchmarks.md, "Checked mode"). It
compiles a model (char-GPT by default, batch 8) once, then runs it
--rounds times each way, plain then checked, for --steps steps with
--log-jsonl, and takes the median `step_seconds` of each run after its
first two steps (the first touches every page). It prints each run's
median with the load average when it began, the median of the rounds, and
the checked / plain ratio per round and of the medians.

Usage: /usr/bin/python3 bench/check_numerics_cost.py
           [--sinterc=build/bin/sinterc] [--model=examples/chargpt.pbtxt]
           [--batch-size=8] [--steps=8] [--rounds=4] [--work-dir=DIR]

Python 3 standard library only. Run it alone: the machine is 2 cores.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def median_step(binary, log, extra):
    if os.path.exists(log):
        os.remove(log)
    subprocess.run([binary, f"--steps={ARGS.steps}", "--quiet",
                    f"--log-jsonl={log}"] + extra,
                   check=True, stdout=subprocess.DEVNULL)
    seconds = []
    with open(log) as f:
        for line in f:
            record = json.loads(line)
            if "step_seconds" in record:
                seconds.append(record["step_seconds"])
    if len(seconds) < 3:
        sys.exit(f"{log}: fewer than 3 steps logged")
    return statistics.median(seconds[2:])


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sinterc", default="build/bin/sinterc")
    ap.add_argument("--model", default="examples/chargpt.pbtxt")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--work-dir", default="")
    ARGS = ap.parse_args()
    work = ARGS.work_dir or tempfile.mkdtemp(prefix="check-numerics-")
    os.makedirs(work, exist_ok=True)
    binary = os.path.join(work, "train")
    subprocess.run([ARGS.sinterc, ARGS.model, "-o", binary,
                    f"--batch-size={ARGS.batch_size}"], check=True)
    runs = {"plain": [], "checked": []}
    for r in range(ARGS.rounds):
        for kind, extra in (("plain", []), ("checked", ["--check-numerics"])):
            load = os.getloadavg()[0]
            m = median_step(binary, os.path.join(work, f"{kind}.jsonl"), extra)
            runs[kind].append(m)
            print(f"round {r} {kind:7}: median step {m * 1000:.0f} ms "
                  f"(steps 3-{ARGS.steps}), load {load:.2f}", flush=True)
    for kind, medians in runs.items():
        print(f"{kind:7} median of rounds {statistics.median(medians) * 1000:.0f} ms")
    ratios = [c / p for p, c in zip(runs["plain"], runs["checked"])]
    print("checked / plain per round:", " ".join(f"{x:.2f}" for x in ratios))
    print("checked / plain of the medians: "
          f"{statistics.median(runs['checked']) / statistics.median(runs['plain']):.2f}")


if __name__ == "__main__":
    main()
