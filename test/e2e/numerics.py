#!/usr/bin/env python3
"""End-to-end checks that the training binary never trains silently wrong
(docs/Runtime.md, "When values go non-finite" and "Errors").

    numerics.py provenance --sinterc=PATH --launch=PATH --work-dir=DIR
    numerics.py inputs     --sinterc=PATH --launch=PATH --work-dir=DIR
    numerics.py hygiene    --sinterc=PATH --launch=PATH --work-dir=DIR

provenance: small MLPs with an injected fault, each trained until its loss
  is not finite; the error must name the op, the layer and its
  model.pbtxt:line:col (found by re-running from the last checkpoint, or
  the start, with every step checked):
    - log of a negative value (a raw `log` layer after a dense one);
    - an overflowing exp, on data with one outlier example that first
      appears at a later step, with a checkpoint every 2 steps: the re-run
      starts at the last one, and the report names the example in the
      files (the batch row where the values first went bad holds an input
      far beyond the others');
    - a learning rate that diverges: the parameters grow until a matmul
      overflows, and the report says the parameters diverged;
    - --check-numerics finds the same op at the same step as it runs;
    - the same outlier on two ranks (sinter-launch): the rank whose rows
      hold it names the exp, the other that its all-reduce brought the NaN
      in from a peer;
  and no checkpoint the diverging runs wrote holds a non-finite value,
  while the error names the last (good) one.
inputs: data that would train silently wrong is refused at the start with
  the file and the example: a NaN in one example of a .npy feature array;
  a class label outside [0, classes) that is not the ignore index; and a
  batch whose labels are all the ignore index says so instead of
  "training diverged".
hygiene: --save to a place that cannot be written fails before the first
  step; --log-jsonl creates its directory, and a resumed run writes a
  resume record; --keep-last=2 --keep-every=4 keeps the newest two and the
  multiples of 4.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_safetensors  # noqa: E402


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, expect=0):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if expect is not None and p.returncode != expect:
        fail(f"exit {p.returncode} (wanted {expect}): {' '.join(cmd)}\n"
             f"{p.stdout[-3000:]}{p.stderr[-3000:]}")
    return p


MLP = """name: "{name}"
input {{ name: "x" shape: [-1, 8] dtype: FLOAT32 }}
input {{ name: "y" shape: [-1] dtype: INT64 }}
layer {{ name: "fc1" input: "x" dense {{ units: 16 }} }}
layer {{ name: "bad" input: "fc1" op {{ type: "{op}" }} }}
layer {{ name: "fc2" input: "bad" dense {{ units: 4 }} }}
loss {{ softmax_cross_entropy {{ logits: "fc2" labels: "y" }} }}
training {{ batch_size: 16 seed: 1 optimizer {{ sgd {{ lr: 0.01 }} }} }}
"""


def build(a, name, op):
    """Writes and compiles the MLP with `op` as layer "bad" (line 5)."""
    model = os.path.join(a.work_dir, f"{name}.pbtxt")
    with open(model, "w") as f:
        f.write(MLP.format(name=name, op=op))
    binary = os.path.join(a.work_dir, name)
    run([a.sinterc, model, "-o", binary])
    return model, binary


def data(a, name, x, y=None):
    rng = np.random.default_rng(0)
    if y is None:
        y = rng.integers(0, 4, len(x)).astype(np.int64)
    xp = os.path.join(a.work_dir, f"{name}-x.npy")
    yp = os.path.join(a.work_dir, f"{name}-y.npy")
    np.save(xp, x.astype(np.float32))
    np.save(yp, y)
    return f"--data=x={xp},y={yp}"


def normal(n=256):
    return np.random.default_rng(0).standard_normal((n, 8))


def one_error(p, *needles):
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    if len(lines) != 1 or not lines[0].startswith("error: "):
        fail(f"wanted one 'error:' line, got:\n{p.stderr}")
    for n in needles:
        if n not in lines[0]:
            fail(f"the error lacks {n!r}:\n{lines[0]}")
    print(f"ok: {lines[0]}")
    return lines[0]


def checkpoints_finite(root):
    """Every checkpoint under root holds finite tensors only; returns the
    steps found."""
    steps = []
    for d in sorted(os.listdir(root)):
        if not d.startswith("step-"):
            continue
        steps.append(int(d[5:]))
        for f in ("model.safetensors", "optimizer.safetensors"):
            for name, t in read_safetensors(os.path.join(root, d, f))[0].items():
                if t.dtype.kind == "f" and not np.isfinite(t).all():
                    fail(f"{root}/{d}/{f}: {name} is not finite")
    return steps


def cmd_provenance(a):
    # log of a negative value: NaN at step 1, re-run from the start.
    model, train = build(a, "logneg", "log")
    p = run([train, data(a, "logneg", normal()), "--steps=5"], expect=1)
    one_error(p, "the loss is NaN", "training diverged at step 1",
              f"log of layer 'bad' ({model}:5:1) made NaN from finite inputs",
              "the last checkpoint is none")
    if "re-running steps 1 to 1 from the start of this run" not in p.stdout:
        fail(f"no re-run from the start in:\n{p.stdout}")
    if "the op: log of layer 'bad'" not in p.stdout:
        fail(f"no report in:\n{p.stdout}")

    # An overflowing exp on one outlier example: the first step whose
    # batch holds it fails; the re-run starts at the last checkpoint.
    model, train = build(a, "expov", "exp")
    x = normal()
    x[200] *= 1000
    ck = os.path.join(a.work_dir, "expov-ck")
    shutil.rmtree(ck, ignore_errors=True)
    p = run([train, data(a, "expov", x), "--steps=100", f"--save={ck}",
             "--save-every=2"], expect=1)
    xp = os.path.join(a.work_dir, "expov-x.npy")
    yp = os.path.join(a.work_dir, "expov-y.npy")
    outlier = (f"the data: example 200 of {xp}, {yp} (row ",
               "of the batch) holds an outlier: its input 'x' reaches ")
    line = one_error(p, f"exp of layer 'bad' ({model}:5:1) made an infinity "
                        "from finite inputs", *outlier)
    failed = int(line.split("training diverged at step ")[1].split(";")[0])
    steps = checkpoints_finite(ck)
    if failed < 3 or not steps or max(steps) >= failed:
        fail(f"diverged at step {failed}, checkpoints {steps}: wanted a "
             "later step than the first checkpoint, and none after it")
    last = f"{ck}/step-{max(steps):08d}"
    if f"the last checkpoint is {last}" not in line:
        fail(f"the error does not name {last}: {line}")
    if f"from {last} with every step's values checked" not in p.stdout:
        fail(f"the re-run did not start at {last}:\n{p.stdout}")

    # The same run with --check-numerics stops at the same step, itself.
    shutil.rmtree(ck, ignore_errors=True)
    p = run([train, data(a, "expov", x), "--steps=100", "--check-numerics"],
            expect=1)
    one_error(p, f"training diverged at step {failed};",
              f"exp of layer 'bad' ({model}:5:1)", *outlier)
    if "re-running" in p.stdout:
        fail(f"--check-numerics re-ran steps:\n{p.stdout}")

    # Under data parallelism (two ranks, sinter-launch) the outlier is in
    # one rank's rows: that rank names the exp; the other finds the NaN
    # came in through its gradients' all-reduce, from a peer.
    ck = os.path.join(a.work_dir, "expov-dp-ck")
    shutil.rmtree(ck, ignore_errors=True)
    p = run([a.launch, "-n", "2", "--", train, data(a, "expov", x),
             "--steps=100", f"--save={ck}", "--save-every=2", "--threads=1"],
            expect=None)
    errors = [l for l in (p.stdout + p.stderr).splitlines()
              if "error: rank " in l]
    if p.returncode == 0 or len(errors) != 2:
        fail(f"wanted a failed job and an error per rank (exit "
             f"{p.returncode}):\n{p.stdout}{p.stderr}")
    made = [l for l in errors
            if f"exp of layer 'bad' ({model}:5:1) made an infinity" in l
            and f"the data: example 200 of {xp}, {yp}" in l]
    received = [l for l in errors
                if "the all-reduce of bucket 0 returned NaN from this rank's "
                   "finite gradients: another rank sent it" in l]
    if len(made) != 1 or len(received) != 1:
        fail("wanted one rank to name the exp and the other the all-reduce:"
             "\n" + "\n".join(errors))
    checkpoints_finite(ck)
    print(f"ok: {made[0].strip()}\nok: {received[0].strip()}")

    # A learning rate that diverges: a matmul overflows on huge parameters.
    model, train = build(a, "lr", "relu")
    ck = os.path.join(a.work_dir, "lr-ck")
    shutil.rmtree(ck, ignore_errors=True)
    p = run([train, data(a, "lr", normal()), "--steps=100", "--lr=1e8",
             f"--save={ck}", "--save-every=1"], expect=1)
    one_error(p, "matmul of layer 'fc", f"({model}:")
    if "the parameters themselves diverged" not in p.stdout:
        fail(f"the report does not say the parameters diverged:\n{p.stdout}")
    checkpoints_finite(ck)


def cmd_inputs(a):
    _, train = build(a, "clean", "relu")
    x = normal()
    x[77, 3] = np.nan
    p = run([train, data(a, "nanx", x), "--steps=2"], expect=1)
    one_error(p, "nanx-x.npy: element 619 (example 77) of input x", "is NaN")

    y = np.random.default_rng(1).integers(0, 4, 256).astype(np.int64)
    y[100] = 4
    p = run([train, data(a, "label", normal(), y), "--steps=2"], expect=1)
    one_error(p, "label-y.npy: example 100 of input y", "is 4, outside [0, 4)",
              "not the ignore index -100")
    y[100] = -100  # the ignore index is a label
    run([train, data(a, "label", normal(), y), "--steps=2"])

    y = np.full(256, -100, np.int64)
    p = run([train, data(a, "ignored", normal(), y), "--steps=2"], expect=1)
    one_error(p, "at step 1: every label of input 'y' in the batch is the "
                 "ignore index -100")


def cmd_hygiene(a):
    _, train = build(a, "clean", "relu")
    d = data(a, "clean", normal())
    blocker = os.path.join(a.work_dir, "a-file")
    open(blocker, "w").write("x")
    p = run([train, d, "--steps=1000000", f"--save={blocker}/ck"], expect=1)
    one_error(p, "cannot create the checkpoint directory")
    if "step " in p.stdout:
        fail(f"steps ran before the --save error:\n{p.stdout}")
    p = run([train, d, "--steps=5", f"--log-jsonl={blocker}/m.jsonl"], expect=1)
    one_error(p, "cannot create the --log-jsonl directory")

    ck = os.path.join(a.work_dir, "keep")
    shutil.rmtree(ck, ignore_errors=True)
    log = os.path.join(a.work_dir, "logs", "deep", "m.jsonl")
    shutil.rmtree(os.path.join(a.work_dir, "logs"), ignore_errors=True)
    run([train, d, "--steps=6", f"--save={ck}", "--save-every=1",
         "--keep-last=2", "--keep-every=4", f"--log-jsonl={log}", "--quiet"])
    kept = sorted(x for x in os.listdir(ck) if x.startswith("step-"))
    if kept != ["step-00000004", "step-00000005", "step-00000006"]:
        fail(f"--keep-last=2 --keep-every=4 kept {kept}")
    run([train, d, "--steps=8", f"--save={ck}", "--resume", f"--log-jsonl={log}",
         "--quiet"])
    records = [json.loads(l) for l in open(log)]
    resumes = [r for r in records if r.get("event") == "resume"]
    if resumes != [{"event": "resume", "step": 6,
                    "checkpoint": f"{ck}/step-00000006"}]:
        fail(f"resume records: {resumes}")
    steps = [r["step"] for r in records if "loss" in r]
    if steps != [1, 2, 3, 4, 5, 6, 7, 8]:
        fail(f"logged steps {steps}")
    print("ok: --save checked at start, --log-jsonl directory created, resume "
          "recorded, --keep-last/--keep-every")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["provenance", "inputs", "hygiene"])
    ap.add_argument("--sinterc", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--launch", required=True, help="sinter-launch")
    a = ap.parse_args()
    os.makedirs(a.work_dir, exist_ok=True)
    {"provenance": cmd_provenance, "inputs": cmd_inputs,
     "hygiene": cmd_hygiene}[a.command](a)


if __name__ == "__main__":
    main()
