#!/usr/bin/env python3
"""End-to-end checks of data parallelism with real processes over loopback,
and of gradient accumulation (alone, as one rank, or with several).

Each subcommand compiles what it needs, starts the ranks itself (through
sinter-launch, mpirun, or torchrun-style variables it sets), and exits
non-zero with a message when something is wrong:

  equivalence  W ranks x batch B against one process at batch W*B for N
               steps: every step's loss, the held-out loss after the last
               step (--eval-every=N), and the final parameters and
               optimizer state as a whole, within --rtol, each tensor within
               --tensor-rtol (the ranks' gradients are summed in another
               order than one process sums its rows, so the bits differ;
               the bounds are justified in the .test file);
               with dropout the masks must be the same ones, or the losses
               are off by far more.
  buckets      the default buckets against --bucket-mb=0 (a collective per
               gradient), both at W ranks: bit-identical.
  sum          gradients_mean: false against the default: the first step's
               grad_norm is W times larger (the sum of W means).
  skip         --debug-skip-allreduce (the benchmarks' floor) skips every
               step's all-reduces, =even only the even steps'.
  faults       a rank SIGKILLed mid-run: every other rank exits non-zero
               within the timeout, naming the collective, the step and the
               peer, and the launcher names the rank; a rank that never
               starts: a note at 10 s saying what rank 0 waits for, then a
               rendezvous error naming it; --debug-fault=same-data
               and drift@N are caught and a healthy run prints no error;
               two different binaries are refused at the start.
  resume       W ranks, 2K steps in one run against K steps, a stop and a
               resume for K more: bit-identical checkpoints and losses; only
               rank 0 writes them.
  restart      W ranks under sinter-launch --max-restarts=1, the last rank
               SIGKILLed after step K of 5K on the first start only: the job
               restarts, resumes from its latest checkpoint and ends with
               the state of an uninterrupted run, bit for bit
  elastic      sinter-launch --nnodes=1:2 on two simulated nodes: one dies
               and the other resumes alone at world size 1; one arrives
               and both resume at world size 2; each run finishes.
  launchers    the same run through sinter-launch, through torchrun-style
               variables set here, and through mpirun when it is installed:
               bit-identical losses; and the default threads of ranks
               told their CPUs are shared or their own (SINTER_CPU_BIND).
  scaled-example  MODEL (examples/gpt2_124m.pbtxt) scaled down to width
               32, 2 layers, 2 heads and 16 positions with its training
               section untouched: equivalence with the example's own
               grad_accumulation_steps, which the binary must say it runs.

With --transport=tcp the ranks' all-reduces go over TCP
(SINTER_SHM_DISABLE=1) instead of the shared memory of ranks on one host;
with --transport=hosts the ranks are --hosts=H hosts (default 2) of W/H
ranks each (a sinter-launch --nnodes=H for each, listening on 127.0.0.1,
127.0.0.2, ...): shared memory within each, TCP between them. equivalence checks that rank 0's start line
names the transport used.
With --comm-dtype=bf16|fp16 the per-rank binary sends its gradients in
that type (data_parallel { grad_comm_dtype }); the reference stays f32.
With --accumulate=K the per-rank binary is compiled with
training.grad_accumulation_steps K (the model rewritten under the work
dir), so equivalence compares W ranks x K micro-batches x B against one
process at batch W*K*B, and resume resumes such runs; --run-accumulate=K'
runs that binary with --grad-accum=K' instead (the reference is then at
batch W*K'*B).

usage: data_parallel.py SUBCOMMAND MODEL --sinterc=PATH --launch=PATH
           --work-dir=DIR [--data=SPEC] [--world=W] [--batch-size=B] ...
"""

import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainer import nrel  # noqa: E402  (normwise relative difference)
import tfevents  # noqa: E402
from data_parallel_common import (  # noqa: E402
    fail, run, compile_model, model_with_accumulation, per_rank_binary,
    step_metric, latest, read_state, data_flags, fresh, launch,
    check_transport)
from data_parallel_launch import (  # noqa: E402
    cmd_faults, cmd_resume, cmd_restart, cmd_elastic, cmd_launchers)


def cmd_equivalence(a):
    w, b, n = a.world, a.batch_size, a.steps
    k = a.run_accumulate or a.accumulate
    per_rank, accumulation = per_rank_binary(a, b)
    whole_model = (model_with_accumulation(a, 1)
                   if a.accumulate > 1 or a.comm_dtype or a.accuracy or
                   a.aux_loss else None)
    whole = compile_model(a, f"train{w * k * b}", w * k * b, model=whole_model)
    d = a.work_dir
    fresh(f"{d}/one", f"{d}/many", f"{d}/one.jsonl", f"{d}/many.jsonl",
          f"{d}/many.tb")
    # One evaluation, at the end: the held-out loss of the same parameters.
    common = [f"--steps={n}", "--threads=1", "--quiet",
              f"--eval-every={n}"] + data_flags(a)
    run([whole, f"--save={d}/one", f"--log-jsonl={d}/one.jsonl"] + common,
        f"one process at batch {w * k * b}")
    loud = [c for c in common if c != "--quiet"]  # the start line
    p = launch(a, w, [per_rank, f"--save={d}/many",
                      f"--log-jsonl={d}/many.jsonl",
                      f"--tensorboard={d}/many.tb"] + loud + accumulation,
               f"{w} ranks x {k} micro-batches at batch {b}")
    if "error" in p.stdout + p.stderr:
        fail(f"a healthy run printed an error:\n{p.stdout}{p.stderr}")
    check_transport(a, p, w)
    one, many = step_metric(f"{d}/one.jsonl"), step_metric(f"{d}/many.jsonl")
    if sorted(one) != list(range(1, n + 1)) or sorted(many) != sorted(one):
        fail(f"steps logged: {sorted(one)} vs {sorted(many)}")
    # Rank 0 alone writes the TensorBoard file, with the JSONL's losses.
    files = tfevents.files(f"{d}/many.tb")
    tb = tfevents.scalars(f"{d}/many.tb").get("train/loss", {})
    if len(files) != 1 or sorted(tb) != sorted(many) or any(
            abs(tb[s] - many[s]) > 1e-6 * abs(many[s]) for s in many):
        fail(f"{len(files)} TensorBoard file(s) with losses {tb}, wanted "
             f"one with {many}")
    worst_loss = 0.0
    for s in one:
        r = abs(one[s] - many[s]) / max(abs(one[s]), 1e-12)
        worst_loss = max(worst_loss, r)
        if r > a.rtol:
            fail(f"loss of step {s}: {one[s]} at batch {w * k * b}, "
                 f"{many[s]} on {w} ranks x {k} micro-batches (relative "
                 f"{r:.2e} > {a.rtol})")
    # The held-out loss: each global batch's mean over its kept labels,
    # however the ranks and micro-batches split them.
    # (None where the data hold no held-out batch of W*K*B rows.)
    one_eval = step_metric(f"{d}/one.jsonl", "eval_loss")
    many_eval = step_metric(f"{d}/many.jsonl", "eval_loss")
    if sorted(one_eval) != sorted(many_eval) or \
            sorted(one_eval) not in ([], [n]):
        fail(f"evaluations logged: {sorted(one_eval)} vs {sorted(many_eval)}")
    worst_eval = None
    if one_eval:
        worst_eval = abs(one_eval[n] - many_eval[n]) / max(abs(one_eval[n]),
                                                           1e-12)
        if not worst_eval <= a.rtol:
            fail(f"eval loss after step {n}: {one_eval[n]} at batch "
                 f"{w * k * b}, {many_eval[n]} on {w} ranks x {k} "
                 f"micro-batches (relative {worst_eval:.2e} > {a.rtol})")
    # The accuracy: at every step and after the last, the fraction over
    # every label that counts, however the ranks and micro-batches split
    # them (the mean of the parts' fractions is 1e-2 off on masked data).
    # It is a count of argmaxes, which the runs' last-bit differences
    # could flip only where a row's two largest logits tie within ~1e-6.
    worst_accuracy = None
    if a.accuracy:
        worst_accuracy = 0.0
        for key, steps in (("accuracy", sorted(one)),
                           ("eval_accuracy", sorted(one_eval))):
            x = step_metric(f"{d}/one.jsonl", key)
            y = step_metric(f"{d}/many.jsonl", key)
            for s in steps:
                if s not in x or s not in y:
                    fail(f"{key} of step {s} not logged by both runs")
                r = abs(x[s] - y[s]) / max(abs(x[s]), 1e-12)
                worst_accuracy = max(worst_accuracy, r)
                if not r <= a.rtol:
                    fail(f"{key} of step {s}: {x[s]} at batch {w * k * b}, "
                         f"{y[s]} on {w} ranks x {k} micro-batches "
                         f"(relative {r:.2e} > {a.rtol})")
    worst = (0.0, "")
    whole = []
    for what, x, y in zip(("parameters", "optimizer state"),
                          read_state(latest(f"{d}/one")),
                          read_state(latest(f"{d}/many"))):
        if sorted(x) != sorted(y):
            fail(f"{what}: names differ")
        # All of them at once, then each tensor with the looser bound.
        num = sum(np.sum((y[k].astype(np.float64) - x[k]) ** 2) for k in x)
        den = sum(np.sum(x[k].astype(np.float64) ** 2) for k in x)
        e = float(np.sqrt(num / den)) if den else 0.0
        whole.append(e)
        if e > a.rtol:
            fail(f"{what} after {n} steps: normwise relative difference "
                 f"{e:.2e} > {a.rtol}")
        for name in x:
            e = nrel(y[name], x[name])
            worst = max(worst, (e, name))
            if e > a.tensor_rtol:
                fail(f"{name} after {n} steps: normwise relative "
                     f"difference {e:.2e} > {a.tensor_rtol}")
    micro = f" x {k} micro-batches" if k > 1 else ""
    if a.comm_dtype:
        micro += f" (gradients sent as {a.comm_dtype})"
    if a.transport == "tcp":
        micro += " over TCP"
    if a.transport == "hosts":
        micro += f" on {a.hosts} hosts"
    print(f"ok: {w} ranks{micro} x batch {b} = one process at batch "
          f"{w * k * b} for {n} "
          f"steps (loss {worst_loss:.1e}, eval loss "
          f"{'none' if worst_eval is None else f'{worst_eval:.1e}'}, "
          + (f"accuracy {worst_accuracy:.1e}, " if a.accuracy else "") +
          f"parameters {whole[0]:.1e}, "
          f"optimizer state {whole[1]:.1e}, worst tensor {worst[0]:.1e}: "
          f"{worst[1]})")


def cmd_buckets(a):
    w, b, n = a.world, a.batch_size, a.steps
    bucketed = compile_model(a, "bucketed", b, extra=["--bucket-mb=0.05"])
    single = compile_model(a, "unbucketed", b, extra=["--bucket-mb=0"])
    d = a.work_dir
    fresh(f"{d}/b", f"{d}/u", f"{d}/b.jsonl", f"{d}/u.jsonl")
    common = [f"--steps={n}", "--threads=1", "--quiet"] + data_flags(a)
    loud = [c for c in common if c != "--quiet"]  # the start line
    p = launch(a, w, [bucketed, f"--save={d}/b", f"--log-jsonl={d}/b.jsonl"] +
               loud, "bucketed")
    check_transport(a, p, w)
    launch(a, w, [single, f"--save={d}/u", f"--log-jsonl={d}/u.jsonl"] +
           common, "a collective per gradient")
    # The two programs must really differ in their collectives.
    dumps = []
    for binary in (bucketed, single):
        out = run([a.sinterc, a.model, f"--batch-size={b}",
                   "--compile-to=scheduled", "-o", "-"] +
                  (["--bucket-mb=0.05"] if binary == bucketed else
                   ["--bucket-mb=0"]), "sinterc --compile-to=scheduled").stdout
        dumps.append(out.count("sched.all_reduce_start"))
    if not dumps[0] < dumps[1]:
        fail(f"collectives: {dumps[0]} bucketed, {dumps[1]} unbucketed")
    lb, lu = step_metric(f"{d}/b.jsonl"), step_metric(f"{d}/u.jsonl")
    if lb != lu:
        fail(f"losses differ: {lb} vs {lu}")
    for what, x, y in zip(("parameter", "optimizer state"),
                          read_state(latest(f"{d}/b")),
                          read_state(latest(f"{d}/u"))):
        for name in x:
            if x[name].tobytes() != y[name].tobytes():
                fail(f"{what} {name} differs between bucketed and unbucketed")
    where = f" on {a.hosts} hosts" if a.transport == "hosts" else ""
    print(f"ok: {dumps[0]} buckets and {dumps[1]} collectives, bit-identical "
          f"over {n} steps on {w} ranks{where}")


def cmd_skip(a):
    """--debug-skip-allreduce (every step) and =even (even steps only), the
    benchmark's floor: with the all-reduce, both ranks step with the mean
    gradient and report its norm; without it each steps with its own, and
    the reported norm (the ranks' mean) is another number."""
    w, b = a.world, a.batch_size
    binary = compile_model(a, "train", b)
    d = a.work_dir
    common = ["--steps=3", "--threads=1", "--quiet"] + data_flags(a)
    norms = {}
    for name, flag in (("all-reduced", []),
                       ("skipped", ["--debug-skip-allreduce"]),
                       ("even skipped", ["--debug-skip-allreduce=even"])):
        log = f"{d}/{name.replace(' ', '-')}.jsonl"
        fresh(log)
        launch(a, w, [binary, f"--log-jsonl={log}"] + common + flag, name)
        norms[name] = step_metric(log, "grad_norm")
    ref, skip, even = (norms[k] for k in ("all-reduced", "skipped",
                                          "even skipped"))
    if skip[1] == ref[1]:
        fail(f"--debug-skip-allreduce: step 1's gradient norm {skip[1]} is "
             f"the all-reduced one")
    if even[1] != ref[1]:
        fail(f"--debug-skip-allreduce=even: step 1's gradient norm "
             f"{even[1]} is not the all-reduced {ref[1]}")
    if even[2] == ref[2]:
        fail(f"--debug-skip-allreduce=even: step 2's gradient norm "
             f"{even[2]} is the all-reduced one")
    p = launch(a, w, [binary, "--debug-skip-allreduce=odd"] + common,
               "a bad value", expect=2)
    if "--debug-skip-allreduce: 'odd' is not 'even'" not in p.stdout + p.stderr:
        fail(f"a bad value: {p.stdout}{p.stderr}")
    print(f"ok: --debug-skip-allreduce skips every step's all-reduces, "
          f"=even only step 2's, on {w} ranks")


def cmd_sum(a):
    w, b = a.world, a.batch_size
    src = open(a.model).read()
    if "data_parallel {" in src:
        fail("the model already has a data_parallel section")
    summed = os.path.join(a.work_dir, "summed.pbtxt")
    os.makedirs(a.work_dir, exist_ok=True)
    with open(summed, "w") as f:
        f.write(src.replace("training {",
                            "training {\n  data_parallel { gradients_mean: "
                            "false }", 1))
    mean_bin = compile_model(a, "mean", b)
    sum_bin = compile_model(a, "sum", b, model=summed)
    d = a.work_dir
    fresh(f"{d}/mean.jsonl", f"{d}/sum.jsonl")
    common = ["--steps=1", "--threads=1", "--quiet"] + data_flags(a)
    launch(a, w, [mean_bin, f"--log-jsonl={d}/mean.jsonl"] + common, "mean")
    launch(a, w, [sum_bin, f"--log-jsonl={d}/sum.jsonl"] + common, "sum")
    gm = step_metric(f"{d}/mean.jsonl", "grad_norm")[1]
    gs = step_metric(f"{d}/sum.jsonl", "grad_norm")[1]
    if abs(gs / gm - w) > 1e-4 * w:
        fail(f"grad_norm {gs} summed vs {gm} averaged: ratio {gs / gm}, "
             f"wanted {w}")
    print(f"ok: gradients_mean: false gives {gs / gm:.6f} x the gradient "
          f"norm on {w} ranks")



def cmd_scaled_example(a):
    text = open(a.model).read()
    m = re.search(r"^\s*grad_accumulation_steps:\s*(\d+)", text, flags=re.M)
    if not m:
        fail(f"{a.model} sets no grad_accumulation_steps")
    k = int(m.group(1))
    for pattern, small in ((r"\b1024\b", "16"), (r"dim: 768", "dim: 32"),
                           (r"repeat: 12", "repeat: 2"),
                           (r"num_heads: 12", "num_heads: 2")):
        text, n = re.subn(pattern, small, text)
        if not n:
            fail(f"{a.model}: nothing matches {pattern} to scale down")
    os.makedirs(a.work_dir, exist_ok=True)
    a.model = os.path.join(a.work_dir, "scaled.pbtxt")
    with open(a.model, "w") as f:
        f.write(text)
    binary = compile_model(a, f"train{a.batch_size}x{k}", a.batch_size,
                           model=model_with_accumulation(a, k))
    p = run([binary, "--steps=1", "--threads=1"] + data_flags(a), "one step")
    said = f"each step {k} micro-batches of {a.batch_size} rows"
    if said not in p.stdout:
        fail(f"the binary does not say '{said}':\n{p.stdout}")
    a.accumulate = k
    cmd_equivalence(a)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["equivalence", "buckets", "sum", "skip",
                                        "faults", "resume", "restart",
                                        "launchers", "scaled-example",
                                        "elastic"])
    ap.add_argument("model")
    ap.add_argument("--sinterc", required=True)
    ap.add_argument("--launch", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--data", default="")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--tensor-rtol", type=float, default=1e-2)
    ap.add_argument("--kill-after", type=float, default=0.5)
    ap.add_argument("--require-mpirun", action="store_true")
    ap.add_argument("--accumulate", type=int, default=1)
    ap.add_argument("--aux-loss", default="",
                    help="LOGITS,LABELS,IGNORE: the loss as raw ops, the "
                         "cross-entropy plus a regularizer (equivalence)")
    ap.add_argument("--accuracy", default="",
                    help="LOGITS,LABELS,IGNORE: add an accuracy metric and "
                         "compare it (equivalence)")
    ap.add_argument("--run-accumulate", type=int, default=0)
    ap.add_argument("--comm-dtype", choices=["", "bf16", "fp16"], default="")
    ap.add_argument("--transport", choices=["shm", "tcp", "hosts"],
                    default="shm")
    ap.add_argument("--hosts", type=int, default=2)
    a = ap.parse_args()
    {"equivalence": cmd_equivalence, "buckets": cmd_buckets, "sum": cmd_sum,
     "skip": cmd_skip,
     "faults": cmd_faults, "resume": cmd_resume, "restart": cmd_restart,
     "launchers": cmd_launchers, "elastic": cmd_elastic,
     "scaled-example": cmd_scaled_example}[a.command](a)


if __name__ == "__main__":
    main()
