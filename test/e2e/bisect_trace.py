#!/usr/bin/env python3
"""Checks `sinterc --bisect` end to end on one model:

  1. the binary's trace of one step (`train --inputs=F --trace=T`) holds
     against the scheduled program in the interpreter: exit 0, "every step
     within its tolerance";
  2. the same trace with one step's result changed (each element of its
     first write times 1.01, the step picked by --seed among the steps
     whose first write is an f32 or bf16 buffer of 64 or more elements):
     exit 1, and the first step named is that one. Later steps that read
     it may be named too; the first may not be earlier.

usage: bisect_trace.py MODEL --sinterc=PATH --work-dir=DIR --kind=mlp|tokens
                 [--batch-size=B] [--seq=T --vocab=V] [--seed=S] [flags...]
Flags after the options go to both sinterc commands (--precision=...).
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import write_safetensors  # noqa: E402


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, expect):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != expect:
        fail(f"exit {p.returncode} (wanted {expect}): {' '.join(cmd)}\n"
             f"{p.stdout[-3000:]}{p.stderr[-3000:]}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--sinterc", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--kind", choices=["mlp", "tokens"], required=True)
    ap.add_argument("--batch-size", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=11)
    ap.add_argument("--seed", type=int, default=1)
    a, flags = ap.parse_known_args()
    w = a.work_dir
    os.makedirs(w, exist_ok=True)
    compile_flags = [f"--batch-size={a.batch_size}"] + flags
    binary = os.path.join(w, "train")
    run([a.sinterc, a.model, "-o", binary] + compile_flags, 0)

    rng = np.random.default_rng(a.seed)
    b = a.batch_size
    if a.kind == "mlp":
        inputs = {"image": rng.standard_normal((b, 784)).astype(np.float32),
                  "label": rng.integers(0, 10, b).astype(np.int64)}
    else:
        x = rng.integers(0, a.vocab, (b, a.seq)).astype(np.int64)
        inputs = {"idx": x, "targets": np.roll(x, -1, axis=1)}
    given = os.path.join(w, "inputs.safetensors")
    write_safetensors(given, inputs)
    trace = os.path.join(w, "trace.safetensors")
    run([binary, f"--inputs={given}", f"--trace={trace}"], 0)

    bisect = [a.sinterc, a.model] + compile_flags
    out = run(bisect + [f"--bisect={trace}"], 0)
    if "every step within its tolerance" not in out:
        fail(f"a healthy trace:\n{out}")
    steps = int(re.search(r", (\d+) steps,", out).group(1))
    print(f"ok: {steps} steps within their tolerances")

    # The trace edited in place, byte for byte: one write scaled.
    raw = bytearray(open(trace, "rb").read())
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})

    def elements(info):
        return int(np.prod(info["shape"])) if info["shape"] else 1

    candidates = [s for s in range(steps)
                  if header.get(f"@step/{s}/0", {}).get("dtype")
                  in ("F32", "BF16")
                  and elements(header[f"@step/{s}/0"]) >= 64]
    step = random.Random(a.seed).choice(candidates)
    info = header[f"@step/{step}/0"]
    begin, end = (8 + n + o for o in info["data_offsets"])
    if info["dtype"] == "F32":
        v = np.frombuffer(bytes(raw[begin:end]), np.float32) * np.float32(1.01)
        raw[begin:end] = v.astype(np.float32).tobytes()
    else:
        bits = np.frombuffer(bytes(raw[begin:end]), np.uint16)
        v = (bits.astype(np.uint32) << 16).view(np.float32) * np.float32(1.01)
        raw[begin:end] = (v.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    bad = os.path.join(w, "changed.safetensors")
    open(bad, "wb").write(raw)
    out = run(bisect + [f"--bisect={bad}"], 1)
    m = re.search(r"first step over its tolerance: step (\d+) \((.*)\)", out)
    if not m or int(m.group(1)) != step:
        fail(f"step {step} ({metadata.get(f'step/{step}')}) was changed, "
             f"and bisect said:\n{out}")
    print(f"ok: the changed step {step} is named first ({m.group(2)})")


if __name__ == "__main__":
    main()
