#!/usr/bin/env python3
"""End-to-end checks of the training binary (`sinterc MODEL -o train`).

Each subcommand compiles a model, runs the binary as a user would, and
exits non-zero with a message when something is wrong:

  learns     trains N steps (bundled data unless --data), checks that the
             loss falls, that evaluations and JSONL lines appear, that the
             TensorBoard event file (read by tfevents.py) holds the same
             step and evaluation metrics, and that the checkpoint reads
             back with numpy under the model's state_dict names and shapes
             (those `sinterc --summary` lists).
  resume     trains 2K steps in one run, and K + 2 steps, then a resume
             from step K's checkpoint to 2K; the final checkpoints
             (parameters, optimizer state, trainer state) and the losses of
             steps K+1..2K must be bit-identical, in the JSONL and in the
             TensorBoard files once TensorBoard's restart rule drops the
             first run's steps K+1 and K+2.
  chain      trains 3 steps on a dataset of exactly one batch with a
             checkpoint after every step, then replays every step on the
             reference interpreter (`sinterc --run=train_step`) from the
             previous checkpoint and compares with the next one (1e-4
             normwise relative: compare_compiled.py's bound for state after
             one step; the batch order inside the step differs, which only
             reorders sums).
  kill       starts training with a checkpoint every step, SIGKILLs it at
             random moments, and checks after each kill that `latest` names
             a checkpoint the binary resumes from.
  errors     bad flags and bad files: each must print exactly one line
             starting with "error:" and exit non-zero, without a crash.

usage: trainer.py SUBCOMMAND MODEL --sinterc=PATH --work-dir=DIR [options]
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402
import tfevents  # noqa: E402


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, what, expect=0, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env)
    if expect is not None and p.returncode != expect:
        fail(f"{what}: exit {p.returncode} (wanted {expect}): {' '.join(cmd)}\n"
             f"{p.stdout[-3000:]}{p.stderr[-3000:]}")
    return p


def compile_model(a, name, extra=()):
    os.makedirs(a.work_dir, exist_ok=True)
    binary = os.path.join(a.work_dir, name)
    cmd = [a.sinterc, a.model, "-o", binary] + list(extra)
    if a.batch_size:
        cmd.append(f"--batch-size={a.batch_size}")
    run(cmd, "sinterc")
    return binary


def jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def step_losses(path):
    return {o["step"]: o["loss"] for o in jsonl(path) if "loss" in o}


def summary_params(a):
    """(name, shape) of every parameter, from `sinterc --summary`."""
    cmd = [a.sinterc, a.model, "--summary"]
    if a.batch_size:
        cmd.append(f"--batch-size={a.batch_size}")
    out = run(cmd, "sinterc --summary").stdout
    params = {}
    for line in out.splitlines():
        parts = line.split()
        # "h.0.attn.c_attn.weight  [1152, 384]  442,368", or for a tied
        # parameter "transformer.wte.weight = lm_head.weight  [65, 384] ..."
        if "[" in line and not line.startswith("total"):
            shape = line[line.index("[") + 1:line.index("]")]
            params[parts[0]] = [int(d) for d in shape.split(",") if d.strip()]
    if not params:
        fail(f"could not read parameters from --summary:\n{out}")
    return params


def read_checkpoint(d):
    return (read_safetensors(os.path.join(d, "model.safetensors"))[0],
            read_safetensors(os.path.join(d, "optimizer.safetensors"))[0],
            json.load(open(os.path.join(d, "trainer.json"))))


# ---------------------------------------------------------------------------


def cmd_learns(a):
    binary = compile_model(a, "train")
    log = os.path.join(a.work_dir, "log.jsonl")
    save = os.path.join(a.work_dir, "ckpt")
    tb = os.path.join(a.work_dir, "tb")
    for p in (log, save, tb):
        shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (
            os.path.exists(p) and os.remove(p))
    cmd = [binary, f"--steps={a.steps}", f"--log-jsonl={log}",
           f"--save={save}", f"--eval-every={a.steps // 2}",
           "--eval-batches=4", "--log-every=5", f"--tensorboard={tb}"]
    if a.data:
        cmd.append(f"--data={a.data}")
    p = run(cmd, "training")
    out = p.stdout
    print(out)
    losses = step_losses(log)
    if sorted(losses) != list(range(1, a.steps + 1)):
        fail(f"JSONL has steps {sorted(losses)}")
    first = losses[1]
    last = np.mean([losses[s] for s in range(a.steps - 4, a.steps + 1)])
    print(f"loss: step 1 {first:.4f}, mean of the last 5 {last:.4f}")
    if not last < first - a.min_drop:
        fail(f"the loss did not fall by {a.min_drop}: {first} -> {last}")
    evals = [o for o in jsonl(log) if "eval_loss" in o]
    if [o["step"] for o in evals] != [a.steps // 2, a.steps]:
        fail(f"evaluations at {[o['step'] for o in evals]}")
    check_tensorboard(tb, jsonl(log))
    if "eval at step" not in out or "done:" not in out:
        fail("no eval or summary line in the output")
    for line in out.splitlines():
        if line.startswith("step ") and "loss" not in line:
            fail(f"progress line without loss: {line}")
    # The checkpoint, read by numpy alone: the model's names and shapes.
    model, optim, state = read_checkpoint(
        os.path.join(save, open(os.path.join(save, "latest")).read().strip()))
    params = summary_params(a)
    if sorted(model) != sorted(params):
        fail(f"checkpoint names {sorted(model)} != model's {sorted(params)}")
    for name, shape in params.items():
        if list(model[name].shape) != shape:
            fail(f"{name}: shape {model[name].shape} != {shape}")
        if model[name].dtype != np.float32 or not np.isfinite(model[name]).all():
            fail(f"{name}: dtype {model[name].dtype} or non-finite values")
    if state["step"] != a.steps or abs(state["loss"] - losses[a.steps]) > 1e-6:
        fail(f"trainer.json {state}")
    print(f"ok: {len(model)} parameters and {len(optim)} optimizer tensors "
          f"read back")


def check_tensorboard(tb, lines):
    """The event file holds each JSONL line's numbers (as float32)."""
    files = tfevents.files(tb)
    if len(files) != 1:
        fail(f"{tb}: {len(files)} event files, wanted 1")
    first = tfevents.events(files[0])[0]
    if first.get("file_version") != "brain.Event:2":
        fail(f"{files[0]}: first record {first}")
    got = tfevents.scalars(tb)
    skip = ("step", "elapsed_seconds", "event", "checkpoint")
    n = 0
    for o in lines:
        group = "eval" if any(k.startswith("eval_") for k in o) else "train"
        for key, value in o.items():
            if key in skip or value is None:
                continue
            tag = f"{group}/{key[5:] if group == 'eval' else key}"
            have = got.get(tag, {}).get(o["step"])
            if have is None or abs(have - value) > 1e-6 * max(1, abs(value)):
                fail(f"{tag} at step {o['step']}: {have} in the event file, "
                     f"{value} in the JSONL")
            n += 1
    print(f"ok: {n} scalars in {os.path.basename(files[0])} match the JSONL")


def cmd_resume(a):
    k = a.steps
    if k < 3:
        fail("resume needs --steps of 3 or more (the first run goes 2 past K)")
    binary = compile_model(a, "train")
    w = a.work_dir
    for d in ("full", "half", "full.jsonl", "half.jsonl", "full.tb",
              "half.tb"):
        p = os.path.join(w, d)
        shutil.rmtree(p) if os.path.isdir(p) else (
            os.path.exists(p) and os.remove(p))
    data = [f"--data={a.data}"] if a.data else []
    run([binary, f"--steps={2 * k}", f"--save={w}/full", f"--save-every={k}",
         f"--log-jsonl={w}/full.jsonl", f"--tensorboard={w}/full.tb",
         "--quiet"] + data, "uninterrupted run")
    # The first half runs 2 steps past its checkpoint at K, as a run killed
    # after its last checkpoint would have: the resumed run logs K+1 and
    # K+2 again.
    run([binary, f"--steps={k + 2}", f"--save={w}/half", f"--save-every={k}",
         f"--log-jsonl={w}/half.jsonl", f"--tensorboard={w}/half.tb",
         "--quiet"] + data, "first half")
    p = run([binary, f"--steps={2 * k}", f"--save={w}/half",
             f"--resume={w}/half/step-{k:08d}",
             f"--log-jsonl={w}/half.jsonl", f"--tensorboard={w}/half.tb"]
            + data, "resumed half")
    if f"resuming from step {k}" not in p.stdout:
        fail(f"no resume note:\n{p.stdout}")
    name = f"step-{2 * k:08d}"
    full = read_checkpoint(os.path.join(w, "full", name))
    half = read_checkpoint(os.path.join(w, "half", name))
    for what, x, y in (("model", full[0], half[0]),
                       ("optimizer", full[1], half[1])):
        if sorted(x) != sorted(y):
            fail(f"{what}: names differ")
        for n in x:
            if x[n].tobytes() != y[n].tobytes():
                diff = np.abs(x[n].astype(np.float64) - y[n]).max()
                fail(f"{what} {n} differs after resuming (max |diff| {diff})")
    if full[2] != half[2]:
        fail(f"trainer state differs: {full[2]} vs {half[2]}")
    lf, lh = step_losses(f"{w}/full.jsonl"), step_losses(f"{w}/half.jsonl")
    for s in range(1, 2 * k + 1):
        if lf[s] != lh[s]:
            fail(f"loss of step {s}: {lf[s]} uninterrupted, {lh[s]} resumed")
    # TensorBoard: the resumed run's file starts over at K+1.
    files = tfevents.files(f"{w}/half.tb")
    if len(files) != 2:
        fail(f"half.tb: {len(files)} event files, wanted 2")
    start = [e for e in tfevents.events(files[1]) if "session_log" in e]
    if [(e["session_log"], e["step"]) for e in start] != [("START", k + 1)]:
        fail(f"{files[1]}: restart records {start}, wanted START at {k + 1}")
    tf, th = (tfevents.scalars(f"{w}/{d}.tb")["train/loss"]
              for d in ("full", "half"))
    kept = [s for s, _ in tfevents.series(f"{w}/half.tb", purge=False)
            ["train/loss"]]
    if sorted(kept) != sorted(list(range(1, 2 * k + 1)) + [k + 1, k + 2]):
        fail(f"half.tb without the restart rule has steps {kept}")
    if sorted(tf) != list(range(1, 2 * k + 1)) or sorted(th) != sorted(tf):
        fail(f"TensorBoard steps: {sorted(tf)} uninterrupted, {sorted(th)} "
             f"resumed")
    for s in tf:
        if tf[s] != th[s]:
            fail(f"TensorBoard loss of step {s}: {tf[s]} uninterrupted, "
                 f"{th[s]} resumed")
    print(f"ok: {2 * k} steps = {k} + resume + {k}, bit for bit "
          f"({len(full[0])} parameters, {len(full[1])} optimizer tensors)")


def nrel(c, r):
    c, r = c.astype(np.float64), r.astype(np.float64)
    n = np.linalg.norm(r.ravel())
    d = np.linalg.norm((c - r).ravel())
    return d / n if n else (0.0 if d == 0 else np.inf)


def cmd_chain(a):
    """The trainer's first steps against the interpreter, one step at a time."""
    w = a.work_dir
    binary = compile_model(a, "train")
    # One batch of data: a .npy dataset of exactly B examples (train/) plus
    # a val/ set, or one window of tokens.
    rng = np.random.default_rng(7)
    batch = {}
    ddir = os.path.join(w, "data")
    shutil.rmtree(ddir, ignore_errors=True)
    if a.kind == "mlp":
        b = a.batch_size
        for split in ("train", "val"):
            os.makedirs(os.path.join(ddir, split))
            x = rng.random((b, 784), dtype=np.float32)
            y = rng.integers(0, 10, size=b).astype(np.int64)
            np.save(os.path.join(ddir, split, "image.npy"), x)
            np.save(os.path.join(ddir, split, "label.npy"), y)
            if split == "train":
                batch = {"image": x, "label": y}
    else:  # token model with inputs idx/targets: B windows of T tokens
        b, t, vocab = a.batch_size, a.seq, a.vocab
        os.makedirs(ddir)
        for split in ("train", "val"):
            toks = rng.integers(0, vocab, size=b * t + 1).astype(np.uint16)
            toks.tofile(os.path.join(ddir, f"{split}.bin"))
            if split == "train":
                win = np.stack([toks[i * t:i * t + t + 1] for i in range(b)])
                batch = {"idx": win[:, :-1].astype(np.int64),
                         "targets": win[:, 1:].astype(np.int64)}
    save = os.path.join(w, "ckpt")
    shutil.rmtree(save, ignore_errors=True)
    run([binary, "--steps=3", f"--data={ddir}", f"--save={save}",
         "--save-every=1", "--quiet"], "training")
    prev = None
    worst = 0.0
    for k in range(3):
        inputs = dict(batch)
        if prev is not None:
            inputs.update(prev[0])
            inputs.update(prev[1])
        inputs["step"] = np.array(k, dtype=np.int64)
        inp = os.path.join(w, f"in{k}.safetensors")
        out = os.path.join(w, f"out{k}.safetensors")
        write_safetensors(inp, inputs)
        cmd = [a.sinterc, a.model, "--compile-to=training",
               "--run=train_step", f"--input={inp}", f"--output={out}"]
        if a.batch_size:
            cmd.append(f"--batch-size={a.batch_size}")
        run(cmd, f"interpreter step {k}")
        ref = read_safetensors(out)[0]
        got = read_checkpoint(os.path.join(save, f"step-{k + 1:08d}"))
        adam = any(n.endswith(".exp_avg") for n in got[1])
        lr = float(ref["lr"])
        for table in (got[0], got[1]):
            for n, v in table.items():
                if n not in ref:
                    fail(f"step {k}: the interpreter has no result {n}")
                if adam and table is got[0]:
                    # Adam moves every element by about lr whatever its
                    # gradient, so where the gradient is rounding noise the
                    # two sides may move opposite ways (compare_compiled.py,
                    # "updated parameters"); |d| <= 1.5 in the first steps.
                    # The optimizer state, checked tightly below, pins the
                    # gradients.
                    diff = np.abs(v.astype(np.float64) - ref[n])
                    allow = 3 * lr * (1 + 1e-4) + 8 * 2.0**-24 * np.abs(v)
                    if not np.all(diff <= allow):
                        fail(f"step {k + 1}: {n} differs from the "
                             f"interpreter by {diff.max() / lr:.3g} lr")
                    continue
                e = nrel(v, ref[n])
                bound = 2e-4 if n.endswith("exp_avg_sq") else 1e-4
                worst = max(worst, e)
                if not e <= bound:
                    fail(f"step {k + 1}: {n} differs from the interpreter "
                         f"(normwise relative {e:.3g} > {bound:g})")
        if abs(got[2]["loss"] - float(ref["loss"])) > 1e-5 * max(
                1, abs(float(ref["loss"]))):
            fail(f"step {k + 1}: loss {got[2]['loss']} vs interpreter "
                 f"{float(ref['loss'])}")
        prev = got
    print(f"ok: 3 trainer steps match the interpreter (worst normwise "
          f"relative {worst:.3g})")
    if a.kind == "tokens":
        tied_and_bounds(a, binary, ddir, prev[0])


def tied_and_bounds(a, binary, ddir, params):
    """A tied parameter loads under its alias (lm_head.weight), not under
    both names; token ids at or above the vocabulary are a data error."""
    w = a.work_dir
    alias = dict(params)
    alias["lm_head.weight"] = alias.pop("transformer.wte.weight")
    write_safetensors(f"{w}/alias.safetensors", alias)
    p = run([binary, "--steps=1", f"--data={ddir}",
             f"--init={w}/alias.safetensors"], "--init by alias")
    if "initialized" in p.stdout and "from their initializers" in p.stdout:
        fail(f"--init by alias left parameters at their initializers:\n"
             f"{p.stdout}")
    both = dict(params)
    both["lm_head.weight"] = both["transformer.wte.weight"]
    write_safetensors(f"{w}/both.safetensors", both)
    p = run([binary, "--steps=1", f"--data={ddir}",
             f"--init={w}/both.safetensors"], "--init with both names",
            expect=1)
    if "are the same tied parameter" not in p.stderr:
        fail(f"both names of a tied parameter: {p.stderr}")
    bad = os.path.join(w, "bad-tokens")
    shutil.rmtree(bad, ignore_errors=True)
    os.makedirs(bad)
    toks = np.zeros(a.batch_size * a.seq * 4 + 1, np.uint16)
    toks[5] = a.vocab
    toks.tofile(os.path.join(bad, "train.bin"))
    toks[:] = 0
    toks.tofile(os.path.join(bad, "val.bin"))
    p = run([binary, "--steps=1", f"--data={bad}"], "out-of-range token",
            expect=1)
    lines = p.stderr.strip().splitlines()
    if len(lines) != 1 or "train.bin" not in lines[0] or \
            str(a.vocab) not in lines[0]:
        fail(f"token {a.vocab} >= vocabulary: {p.stderr}")
    print(f"ok: tied parameter by alias; both names refused; {lines[0]}")


def cmd_kill(a):
    binary = compile_model(a, "train")
    w = a.work_dir
    save = os.path.join(w, "ckpt")
    shutil.rmtree(save, ignore_errors=True)
    rng = random.Random(a.seed)
    data = [f"--data={a.data}"] if a.data else []
    kills_during_save = 0
    for round_ in range(a.rounds):
        proc = subprocess.Popen(
            [binary, "--steps=1000000", f"--save={save}", "--save-every=1",
             "--resume", "--quiet"] + data,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.3, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if any(n.startswith(".step-") for n in os.listdir(save)):
            kills_during_save += 1
        latest = open(os.path.join(save, "latest")).read().strip()
        step = int(latest.split("-")[1])
        # The binary itself must accept what `latest` names.
        run([binary, f"--steps={step + 1}", f"--save={save}", "--resume",
             "--quiet"] + data, f"resume after kill {round_}")
        print(f"round {round_}: killed after step {step}; resumed")
    print(f"ok: {a.rounds} kills, {kills_during_save} of them in the middle "
          f"of a save; latest always loaded")

    # Ctrl-C: the step in flight finishes, a checkpoint of it is written,
    # one line says how to resume, and the exit status is 130.
    shutil.rmtree(save)
    proc = subprocess.Popen(
        [binary, "--steps=1000000", f"--save={save}", "--quiet"] + data,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate()
    lines = err.strip().splitlines()
    if proc.returncode != 130 or len(lines) != 1 or \
            f"resume with --resume={save}" not in lines[0]:
        fail(f"Ctrl-C: exit {proc.returncode}, stderr:\n{err}")
    step = int(lines[0].split("interrupted at step ")[1].split(";")[0])
    latest = open(os.path.join(save, "latest")).read().strip()
    if latest != f"step-{step:08d}" or f"interrupted after" not in out:
        fail(f"Ctrl-C at step {step}: latest is {latest}; stdout:\n{out}")
    print(f"ok: Ctrl-C at step {step} saved {latest} and exited 130")


def cmd_errors(a):
    w = a.work_dir
    binary = compile_model(a, "train")
    good = os.path.join(w, "good")
    shutil.rmtree(good, ignore_errors=True)
    data = [f"--data={a.data}"] if a.data else []
    run([binary, "--steps=2", f"--save={good}", "--quiet"] + data, "good run")
    ck = os.path.join(good, "step-00000002")
    model = read_safetensors(os.path.join(ck, "model.safetensors"))[0]
    name = sorted(model)[0]

    def tweak(fname, tensors):
        path = os.path.join(w, fname)
        write_safetensors(path, tensors)
        return path

    wrong_shape = dict(model)
    wrong_shape[name] = np.zeros(model[name].shape[:-1] + (3,), np.float32)
    wrong_dtype = dict(model)
    wrong_dtype[name] = model[name].astype(np.float64)
    unknown = dict(model)
    unknown["not.a.param"] = np.zeros(2, np.float32)
    trunc = os.path.join(w, "trunc.safetensors")
    raw = open(os.path.join(ck, "model.safetensors"), "rb").read()
    open(trunc, "wb").write(raw[:len(raw) // 2])
    bad_ck = os.path.join(w, "bad_ck")
    shutil.rmtree(bad_ck, ignore_errors=True)
    shutil.copytree(good, bad_ck)
    with open(os.path.join(bad_ck, "step-00000002", "optimizer.safetensors"),
              "r+b") as f:
        f.truncate(100)

    cases = [
        (["--bogus"], "unknown flag '--bogus'", 2),
        (["--steps=0"], "--steps: '0' is not an integer", 2),
        (["--steps=abc"], "--steps: 'abc' is not an integer", 2),
        (["--lr=-1"], "--lr: '-1' is not a learning rate in [0, 1e+09]", 2),
        (["--lr=1e300"], "--lr: '1e300' is not a learning rate in [0, 1e+09]", 2),
        (["--keep-last=2"], "--keep-last needs --save=DIR", 2),
        (["--keep-every=2"], "--keep-every needs --keep-last=N", 2),
        (["--check-numerics=1"], "--check-numerics takes no value", 2),
        (["--save-every=5"], "--save-every needs --save=DIR", 2),
        (["--resume"], "bare --resume continues from --save's directory", 2),
        (["--inputs=x.safetensors", "--data=y"], "take no training flags", 2),
        (["--batch-size=3"], "compiled for batch size", 1),
        (["--data=/nonexistent/data.bin"], "/nonexistent/data.bin", 1),
        ([f"--init={tweak('shape.safetensors', wrong_shape)}"], name, 1),
        ([f"--init={tweak('dtype.safetensors', wrong_dtype)}"], name, 1),
        ([f"--init={tweak('unknown.safetensors', unknown)}"],
         "match no param of this model: 'not.a.param'", 1),
        ([f"--init={trunc}"], "trunc.safetensors", 1),
        ([f"--resume={w}/nonexistent"], "no such checkpoint directory", 1),
        ([f"--resume={bad_ck}"], "optimizer.safetensors: has 100 bytes but", 1),
        ([f"--resume={good}", "--steps=1"], "already at step 2", 1),
        ([f"--resume={good}", f"--init={trunc}"], "exclude each other", 1),
        ([f"--save={os.path.join(ck, 'model.safetensors')}", "--steps=1"],
         "model.safetensors", 1),
        ([f"--tensorboard={os.path.join(ck, 'model.safetensors')}"],
         "model.safetensors: cannot create the --tensorboard directory", 1),
        (["--tensorboard="], "--tensorboard needs a value", 2),
    ]
    for args, needle, code in cases:
        extra = [] if any(x.startswith(("--data", "--inputs")) for x in args) \
            else data
        p = run([binary] + args + extra, f"case {args}", expect=None)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        if p.returncode != code:
            fail(f"{args}: exit {p.returncode}, wanted {code}\n{p.stderr}")
        if len(lines) != 1 or not lines[0].startswith("error: ") or \
                needle not in lines[0]:
            fail(f"{args}: wanted one 'error:' line with {needle!r}, got:\n"
                 f"{p.stderr}")
        print(f"ok: {' '.join(args)} -> {lines[0]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["learns", "resume", "chain", "kill",
                                        "errors"])
    ap.add_argument("model")
    ap.add_argument("--sinterc", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--batch-size", type=int, default=0)
    ap.add_argument("--data", default="")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--min-drop", type=float, default=0.3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kind", choices=["mlp", "tokens"], default="mlp")
    ap.add_argument("--seq", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=0)
    a = ap.parse_args()
    {"learns": cmd_learns, "resume": cmd_resume, "chain": cmd_chain,
     "kill": cmd_kill, "errors": cmd_errors}[a.command](a)


if __name__ == "__main__":
    main()
