#!/usr/bin/env python3
"""Compile time and peak memory of sinterc against model depth.

A benchmark driver, not a test (docs/Benchmarks.md, "Compile time against
depth"). It writes one model per depth: the same transformer block repeated
(`repeat: N`, a char-GPT block at 128 wide, 4 heads, a 128-token context,
batch 1: every kernel of a block has 16K elements or more, so the blocks
share their kernel bodies as a real model's do), or with --block=linear a
chain of N dense + ReLU layers. For each depth it runs

  import   sinterc MODEL --compile-to=import -o /dev/null
  compile  sinterc MODEL -o MODEL.o   (every phase, and the kernels'
           machine code: the training binary but for the final link)

under /usr/bin/time, --repeats times each (the fastest run counts, and its
peak resident memory), and prints a table of seconds and peak RSS with the
ratio of each row to the one before: linear growth shows as a time ratio
near the depth ratio (10 for 10, 100, 1000). With --timings it also prints
the passes that grew fastest between the two largest depths (sinterc
--timings of the largest two).

Usage: /usr/bin/python3 bench/compile_scaling.py [--sinterc=build/bin/sinterc]
           [--depths=10,100,1000] [--block=transformer|linear]
           [--repeats=1] [--import-only] [--timings] [--work-dir=DIR]
           [--out=FILE.json]

Python 3 standard library only. Expect minutes at depth 1000: the kernels'
machine code is most of the time (docs/Benchmarks.md gives measured
figures).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIME = "/usr/bin/time"


def transformer_model(depth):
    return f"""# {depth} char-GPT blocks, 128 wide (bench/compile_scaling.py).
name: "scaling_transformer"
input {{ name: "idx" shape: [-1, 128] dtype: INT64 }}
input {{ name: "targets" shape: [-1, 128] dtype: INT64 }}
layer {{ name: "wte" input: "idx" embedding {{ num_embeddings: 65 dim: 128 }} }}
layer {{ name: "wpe" input: "idx" positional_embedding {{ max_positions: 128 dim: 128 }} }}
layer {{ name: "embed" input: ["wte", "wpe"] add {{}} }}
layer {{ name: "h" input: "embed" repeat: {depth} transformer_block {{ num_heads: 4 }} }}
layer {{ name: "ln_f" input: "h" layer_norm {{}} }}
layer {{ name: "lm_head" input: "ln_f" dense {{ units: 65 bias: false }} }}
loss {{ softmax_cross_entropy {{ logits: "lm_head" labels: "targets" }} }}
training {{
  batch_size: 1
  optimizer {{ adamw {{ lr: 1e-3 }} }}
  grad_clip: 1.0
}}
"""


def linear_model(depth):
    lines = [f"# {depth} dense + ReLU layers (bench/compile_scaling.py).",
             'name: "scaling_linear"',
             'input { name: "x" shape: [-1, 128] dtype: FLOAT32 }',
             'input { name: "y" shape: [-1, 128] dtype: FLOAT32 }']
    prev = "x"
    for i in range(depth):
        lines.append(f'layer {{ name: "fc{i}" input: "{prev}" '
                     f'dense {{ units: 128 }} }}')
        lines.append(f'layer {{ name: "relu{i}" input: "fc{i}" '
                     f'activation {{ kind: RELU }} }}')
        prev = f"relu{i}"
    lines.append(f'loss {{ mean_squared_error {{ prediction: "{prev}" '
                 f'target: "y" }} }}')
    lines.append("training { batch_size: 128 optimizer { sgd { lr: 0.01 } } }")
    return "\n".join(lines) + "\n"


BLOCKS = {"transformer": transformer_model, "linear": linear_model}


def timed(cmd):
    """Seconds (wall, user + system) and peak RSS in bytes of `cmd`."""
    fd, report = tempfile.mkstemp(suffix=".time")
    os.close(fd)
    try:
        p = subprocess.run([TIME, "-o", report, "-f", "%e %U %S %M", *cmd],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        if p.returncode != 0:
            sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n"
                     f"{p.stdout[-2000:]}{p.stderr[-2000:]}")
        with open(report) as f:
            wall, user, system, rss_kb = f.read().split()[-4:]
    finally:
        os.remove(report)
    return {"wall_s": float(wall), "cpu_s": float(user) + float(system),
            "peak_rss_bytes": int(rss_kb) * 1024,
            "output": p.stdout + p.stderr}


def best(runs):
    return min(runs, key=lambda r: r["wall_s"])


def pass_times(text):
    """sinterc --timings: {name: wall seconds}, nested names joined by '/'."""
    out, stack = {}, []
    for line in text.splitlines():
        m = re.match(r"\s+[\d.]+ \(\s*[\d.]+%\)\s+([\d.]+) \(\s*[\d.]+%\)"
                     r"(\s+)(.*)$", line)
        if not m or m.group(3) in ("Total", "Rest"):
            continue
        depth = (len(m.group(2)) - 2) // 2
        stack[depth:] = [m.group(3).strip()]
        out["/".join(stack)] = out.get("/".join(stack), 0.0) + \
            float(m.group(1))
    return out


def mib(n):
    return f"{n / 2**20:.0f}"


def ratio(a, b):
    return f"{a / b:.1f}x" if b > 0 else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sinterc",
                    default=os.path.join(ROOT, "build", "bin", "sinterc"))
    ap.add_argument("--depths", default="10,100,1000")
    ap.add_argument("--block", choices=sorted(BLOCKS), default="transformer")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--import-only", action="store_true")
    ap.add_argument("--timings", action="store_true",
                    help="the passes that grew fastest between the two "
                         "largest depths")
    ap.add_argument("--work-dir", help="keep the models and objects here")
    ap.add_argument("--out", help="write every figure to this JSON file")
    args = ap.parse_args()
    depths = [int(d) for d in args.depths.split(",")]
    if not os.path.exists(TIME):
        sys.exit(f"{TIME} is needed (GNU time: apt-get install time)")
    work = args.work_dir or tempfile.mkdtemp(prefix="sinter-scaling-")
    os.makedirs(work, exist_ok=True)

    rows = []
    for depth in depths:
        model = os.path.join(work, f"{args.block}-{depth}.pbtxt")
        with open(model, "w") as f:
            f.write(BLOCKS[args.block](depth))
        row = {"depth": depth}
        row["import"] = best([timed([args.sinterc, model,
                                     "--compile-to=import", "-o", os.devnull])
                              for _ in range(args.repeats)])
        if not args.import_only:
            obj = os.path.join(work, f"{args.block}-{depth}.o")
            flags = ["--timings"] if args.timings else []
            row["compile"] = best([timed([args.sinterc, model, *flags,
                                          "-o", obj])
                                   for _ in range(args.repeats)])
        rows.append(row)
        done = [f"import {row['import']['wall_s']:.2f} s"]
        if "compile" in row:
            done.append(f"compile {row['compile']['wall_s']:.2f} s, "
                        f"{mib(row['compile']['peak_rss_bytes'])} MiB")
        print(f"depth {depth}: " + "; ".join(done), file=sys.stderr)

    phases = ["import"] + ([] if args.import_only else ["compile"])
    head = "| depth |"
    rule = "|---:|"
    for p in phases:
        head += f" {p} s | {p} CPU s | {p} peak MiB | {p} time ratio | " \
                f"{p} memory ratio |"
        rule += "---:|---:|---:|---:|---:|"
    print(f"\n{args.block} block, {args.sinterc}; load average "
          f"{open('/proc/loadavg').read().split()[0]}\n")
    print(head)
    print(rule)
    for i, row in enumerate(rows):
        line = f"| {row['depth']} |"
        for p in phases:
            r = row[p]
            prev = rows[i - 1][p] if i else None
            line += (f" {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
                     f"{mib(r['peak_rss_bytes'])} | "
                     f"{ratio(r['wall_s'], prev['wall_s']) if prev else '-'} | "
                     f"{ratio(r['peak_rss_bytes'], prev['peak_rss_bytes']) if prev else '-'} |")
        print(line)
    if len(rows) > 1:
        print(f"\n(depth ratio between rows: "
              f"{', '.join(ratio(b['depth'], a['depth']) for a, b in zip(rows, rows[1:]))})")

    if args.timings and not args.import_only and len(rows) > 1:
        small = pass_times(rows[-2]["compile"]["output"])
        large = pass_times(rows[-1]["compile"]["output"])
        grow = sorted(((large[k] / small[k], k) for k in large
                       if small.get(k, 0) > 0.01 and large[k] > 0.1),
                      reverse=True)
        print(f"\nFastest-growing passes, depth {rows[-2]['depth']} -> "
              f"{rows[-1]['depth']} (seconds):")
        for g, k in grow[:10]:
            print(f"  {k}: {small[k]:.2f} -> {large[k]:.2f} ({g:.1f}x)")

    if args.out:
        for row in rows:
            for p in phases:
                row[p].pop("output", None)
        with open(args.out, "w") as f:
            json.dump({"block": args.block, "sinterc": args.sinterc,
                       "rows": rows}, f, indent=1)
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
