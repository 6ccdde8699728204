#!/usr/bin/env python3
"""Compares two training runs' loss curves (--log-jsonl files).

    loss_curves.py CPU.jsonl CUDA.jsonl [--tolerance=0.05]

The CUDA and CPU targets compute the same steps in f32 with different
rounding (reassociated sums, another matmul library), so their losses
drift apart slowly but stay close: every step's loss must be within
`tolerance` (absolute) and the mean difference over the last 20 steps
within tolerance / 2. Prints the curves side by side every 20 steps and
exits 1 when a bound fails or a run is missing steps.
"""
import json
import sys


def losses(path):
    out = {}
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if "loss" in rec and "step" in rec and not rec.get("eval"):
                out[int(rec["step"])] = float(rec["loss"])
    return out


def main():
    tol = 0.05
    paths = []
    for a in sys.argv[1:]:
        if a.startswith("--tolerance="):
            tol = float(a.split("=", 1)[1])
        else:
            paths.append(a)
    cpu, cuda = losses(paths[0]), losses(paths[1])
    steps = sorted(cpu)
    if not steps or sorted(cuda) != steps:
        print(f"loss curves: the runs logged different steps "
              f"(cpu {len(cpu)}, cuda {len(cuda)})")
        sys.exit(1)
    worst = max(abs(cpu[s] - cuda[s]) for s in steps)
    tail = steps[-20:]
    mean_tail = sum(abs(cpu[s] - cuda[s]) for s in tail) / len(tail)
    for s in steps:
        if s % 20 == 0 or s == steps[-1]:
            print(f"  step {s:4d}  cpu {cpu[s]:.4f}  cuda {cuda[s]:.4f}  "
                  f"diff {cuda[s] - cpu[s]:+.4f}")
    ok = worst <= tol and mean_tail <= tol / 2
    print(f"loss curves over {len(steps)} steps: worst |diff| {worst:.4f} "
          f"(bound {tol}), mean of the last 20 {mean_tail:.4f} (bound "
          f"{tol / 2}): {'PASS' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
