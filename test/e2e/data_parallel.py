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
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_safetensors  # noqa: E402
from trainer import nrel  # noqa: E402  (normwise relative difference)
import tfevents  # noqa: E402


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, what, expect=0, env=None, timeout=300):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"{what}: still running after {timeout} s (a hang): "
             f"{' '.join(cmd)}")
    if expect is not None and p.returncode != expect:
        fail(f"{what}: exit {p.returncode} (wanted {expect}): {' '.join(cmd)}\n"
             f"{p.stdout[-3000:]}{p.stderr[-3000:]}")
    return p


def compile_model(a, name, batch, model=None, extra=()):
    os.makedirs(a.work_dir, exist_ok=True)
    binary = os.path.join(a.work_dir, name)
    if not os.path.exists(binary):
        run([a.sinterc, model or a.model, "-o", binary,
             f"--batch-size={batch}"] + list(extra), f"sinterc {name}")
    return binary


def model_with_accumulation(a, k, comm=""):
    """a.model with training.grad_accumulation_steps k (and with `comm`,
    data_parallel { grad_comm_dtype: comm }; with --accuracy, an accuracy
    metric), under the work dir (pass --data: the bundled data is found
    next to the original only)."""
    text = re.sub(r"^\s*grad_accumulation_steps:.*\n", "", open(a.model).read(),
                  flags=re.M)
    if a.aux_loss:
        # The loss as raw ops: the cross-entropy plus 1e-3 times the mean
        # square of a parameter of its own (a regularizer in the loss).
        logits, labels, ignore = a.aux_loss.split(",")
        text, n = re.subn(
            r"^loss \{.*\}\s*$",
            f'''layer {{ name: "ce" input: ["{logits}", "{labels}"] op {{ type: "softmax_cross_entropy" attr {{ name: "ignore_index" i: {ignore} }} }} }}
layer {{ name: "aux" parameter {{ shape: [8] init {{ normal_std: 1.0 }} }} }}
layer {{ name: "aux_sq" input: ["aux", "aux"] op {{ type: "mul" }} }}
layer {{ name: "aux_mean" input: "aux_sq" op {{ type: "reduce_mean" attr {{ name: "axes" ints: [0] }} }} }}
layer {{ name: "aux_coef" op {{ type: "constant" result {{ dtype: FLOAT32 }} value: 1e-3 }} }}
layer {{ name: "aux_loss" input: ["aux_coef", "aux_mean"] op {{ type: "mul" }} }}
layer {{ name: "total" input: ["ce", "aux_loss"] op {{ type: "add" }} }}
loss {{ value: "total" }}
''', text, count=1, flags=re.M)
        if n != 1:
            fail(f"{a.model}: no one-line loss to replace")
    if a.accuracy:
        logits, labels, ignore = a.accuracy.split(",")
        text += (f'\nmetric {{ name: "accuracy" accuracy {{ logits: "{logits}" '
                 f'labels: "{labels}" ignore_index: {ignore} }} }}\n')
    extra = f"\n  grad_accumulation_steps: {k}" if k != 1 else ""
    if comm:
        if re.search(r"^\s*data_parallel\s*\{", text, flags=re.M):
            fail(f"{a.model} has a data_parallel section already")
        extra += f"\n  data_parallel {{ grad_comm_dtype: {comm.upper()} }}"
    if extra:
        text, n = re.subn(r"^training\s*\{", "training {" + extra, text,
                          count=1, flags=re.M)
        if n != 1:
            fail(f"{a.model}: no training section to change")
    os.makedirs(a.work_dir, exist_ok=True)
    path = os.path.join(a.work_dir, f"model-accumulate-{k}{comm}"
                        f"{'-accuracy' if a.accuracy else ''}"
                        f"{'-aux' if a.aux_loss else ''}.pbtxt")
    with open(path, "w") as f:
        f.write(text)
    return path


def per_rank_binary(a, b):
    """The binary each rank runs, and the flags that set its micro-batches."""
    if (a.accumulate == 1 and not a.comm_dtype and not a.accuracy and
            not a.aux_loss):
        return compile_model(a, f"train{b}", b), []
    binary = compile_model(a, f"train{b}x{a.accumulate}{a.comm_dtype}", b,
                           model=model_with_accumulation(a, a.accumulate,
                                                         a.comm_dtype))
    runs = a.run_accumulate or a.accumulate
    return binary, [f"--grad-accum={runs}"] if a.run_accumulate else []


def jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def step_metric(path, name="loss"):
    return {o["step"]: o[name] for o in jsonl(path) if name in o}


def latest(save):
    return os.path.join(save,
                        open(os.path.join(save, "latest")).read().strip())


def read_state(d):
    return (read_safetensors(os.path.join(d, "model.safetensors"))[0],
            read_safetensors(os.path.join(d, "optimizer.safetensors"))[0])


def same_state(a_dir, b_dir, step, after):
    """Fails unless the step-`step` checkpoints of two save directories hold
    bitwise the same parameters and optimizer state."""
    name = f"step-{step:08d}"
    for what, x, y in zip(("parameter", "optimizer state"),
                          read_state(os.path.join(a_dir, name)),
                          read_state(os.path.join(b_dir, name))):
        for n in x:
            if x[n].tobytes() != y[n].tobytes():
                fail(f"{what} {n} differs {after}")


def data_flags(a):
    return [f"--data={a.data}"] if a.data else []


def fresh(*paths):
    for p in paths:
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)


def launch(a, n, argv, what, expect=0, extra=()):
    env = dict(os.environ)
    transport = getattr(a, "transport", "shm")
    if transport == "tcp":
        env["SINTER_SHM_DISABLE"] = "1"
    if transport != "hosts":
        return run([a.launch, "-n", str(n), "--grace-seconds=5"] +
                   list(extra) + ["--"] + argv, what, expect=expect, env=env)
    # --hosts hosts on this machine: a launcher for each, its ranks
    # listening on 127.0.0.1, 127.0.0.2, ..., so each host's ranks share
    # memory and the hosts talk over TCP. The outputs are joined, host 0's
    # first.
    hosts = a.hosts
    if n % hosts:
        fail(f"{n} ranks do not split into {hosts} hosts")
    port = free_port()
    procs = []
    for node in range(hosts):
        node_env = dict(env, SINTER_HOST=f"127.0.0.{node + 1}")
        cmd = [a.launch, "-n", str(n // hosts), f"--nnodes={hosts}",
               f"--node-rank={node}", "--master-addr=127.0.0.1",
               f"--master-port={port}", "--grace-seconds=5"] + list(extra) + \
            ["--"] + argv
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True,
                                      env=node_env))
    outs = []
    for node, proc in enumerate(procs):
        try:
            out, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            fail(f"{what}: host {node} still running after 300 s (a hang)")
        outs.append((proc.returncode, out, err))
    joined = subprocess.CompletedProcess(
        procs[0].args, max(code for code, _, _ in outs),
        "".join(out for _, out, _ in outs), "".join(err for _, _, err in outs))
    if expect is not None and any(code != expect for code, _, _ in outs):
        fail(f"{what}: exits {[code for code, _, _ in outs]} of the "
             f"{hosts} hosts (wanted {expect})\n{joined.stdout[-3000:]}"
             f"{joined.stderr[-3000:]}")
    return joined


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_steps(log, n, proc, timeout=120):
    """Until the JSONL `log` has `n` steps (training is under way), or fail."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            fail(f"the job ended before step {n}: exit {proc.returncode}")
        if os.path.exists(log) and sum(1 for _ in open(log)) >= n:
            return
        time.sleep(0.1)
    fail(f"no step {n} after {timeout} s")


# ---------------------------------------------------------------------------


def check_transport(a, p, w):
    """That rank 0's start line in `p`'s output names a.transport."""
    used = re.search(r"all-reduce over ([^,;)(]+)", p.stdout + p.stderr)
    wanted = {"tcp": "TCP", "shm": "shared memory",
              "hosts": f"shared memory within each of {a.hosts} hosts"
              }[a.transport]
    if w > 1 and (not used or used.group(1).strip() != wanted):
        fail(f"the ranks' all-reduces went over "
             f"{used.group(1) if used else '(not said)'}, not {wanted}:\n"
             f"{p.stdout[-2000:]}")
    # Over shared memory the buckets are reduced in the ranks' own pages.
    if (w > 1 and a.transport != "tcp" and
            "buckets read in place" not in p.stdout + p.stderr):
        fail(f"the buckets were not shared in place:\n{p.stdout[-2000:]}")


def dies_after(script, log, k, who, launcher_too=False):
    """Writes `script`, a wrapper for a rank's command: on the first start
    (TORCHELASTIC_RESTART_COUNT 0), where the Python expression `who` holds,
    it runs the command and, once the JSONL `log` has k steps, SIGKILLs it
    and itself (and with launcher_too its launcher: the whole node dies);
    otherwise it becomes the command. Returns the script's path."""
    parent = "\n            os.kill(os.getppid(), signal.SIGKILL)" \
        if launcher_too else ""
    with open(script, "w") as f:
        f.write(f"""#!{sys.executable}
import os, signal, subprocess, sys, time
args = sys.argv[1:]
if os.environ.get("TORCHELASTIC_RESTART_COUNT") == "0" and ({who}):
    child = subprocess.Popen(args)
    while child.poll() is None:
        try:
            steps = sum('"loss"' in l for l in open({log!r}))
        except OSError:
            steps = 0
        if steps >= {k}:
            child.kill(){parent}
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.01)
    sys.exit("the first start ended before step {k}")
os.execv(args[0], args)
""")
    os.chmod(script, 0o755)
    return script


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


def rank_pids(binary):
    """The running processes of `binary` (the ranks), in ps's order."""
    pids = []
    for line in subprocess.run(["ps", "-eo", "pid,args"],
                               stdout=subprocess.PIPE,
                               text=True).stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[1].startswith(binary):
            pids.append(int(parts[0]))
    return pids


def check_no_thread_handles_interrupts(binary, proc):
    """No thread of a rank runs a handler for SIGINT or SIGTERM: they are
    blocked in every thread but the one that waits for them (a handler on
    the compute thread corrupted the heap; runtime/Train/Interrupts.h)."""
    both = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    ranks = rank_pids(binary)
    if not ranks:
        proc.kill()
        fail("no rank process to inspect")
    for pid in ranks:
        tasks = os.path.join("/proc", str(pid), "task")
        unblocked = []
        for tid in os.listdir(tasks):
            try:
                with open(os.path.join(tasks, tid, "status")) as f:
                    fields = dict(l.split(":", 1) for l in f if ":" in l)
            except FileNotFoundError:  # a thread that just ended
                continue
            if int(fields["SigCgt"], 16) & both:
                proc.kill()
                fail(f"rank process {pid}: thread {tid} has a handler for "
                     f"SIGINT or SIGTERM")
            if int(fields["SigBlk"], 16) & both != both:
                unblocked.append(tid)
        if len(unblocked) > 1:
            proc.kill()
            fail(f"rank process {pid}: threads {unblocked} take SIGINT or "
                 f"SIGTERM (one thread should)")


def start_interruptible(a, w, argv):
    """`w` ranks of argv under the launcher, which Ctrl-C reaches: lit runs
    tests with SIGINT ignored, which the launcher would keep."""
    return subprocess.Popen(
        [a.launch, "-n", str(w), "--"] + argv, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def ctrl_c(proc, what):
    """Ctrl-C to the launcher `proc`; its stdout and stderr once it exits
    (a job still running a minute later fails, as a hang after `what`)."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail(f"the job hung after {what}")


def cmd_faults(a):
    w, b = a.world, a.batch_size
    binary = compile_model(a, f"train{b}", b)
    d = a.work_dir
    common = ["--threads=1", "--quiet"] + data_flags(a)

    # A rank killed mid-run (once training is under way). The survivors
    # get as long as a collective may wait to say what they saw before the
    # launcher kills them (once, in a loaded full-suite run with 5 s, the
    # survivor printed nothing: presumably SIGKILLed before it could).
    log = os.path.join(d, "killed.jsonl")
    fresh(log)
    proc = subprocess.Popen(
        [a.launch, "-n", str(w), "--grace-seconds=20", "--", binary,
         "--steps=100000", "--collective-timeout=20", f"--log-jsonl={log}"] +
        common, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    wait_for_steps(log, 3, proc)
    time.sleep(a.kill_after)
    ranks = rank_pids(binary)
    victim = ranks[-1] if ranks else None  # the last listed: not rank 0
    if victim is None:
        proc.kill()
        fail("no rank process to kill")
    killed_at = time.time()
    os.kill(victim, signal.SIGKILL)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        fail("the job hung after a rank was killed")
    took = time.time() - killed_at
    if proc.returncode == 0:
        fail(f"the job exited 0 after a rank was killed:\n{err}")
    if "exited with code" not in err and "was killed by" not in err:
        fail(f"the launcher did not name the failing rank:\n{err}")
    if "killed by SIGKILL" not in err:
        fail(f"the launcher did not say the rank was killed:\n{err}")
    survivors = [l for l in err.splitlines() if "error: rank" in l]
    if not survivors or not any("all-reduce" in l or "step" in l
                                for l in survivors):
        fail(f"no survivor named the collective and the step:\n{err}")
    if not any("peer" in l or "rank" in l for l in survivors):
        fail(f"no survivor named the peer:\n{err}")
    print(f"ok: a killed rank stops the job in {took:.1f} s: "
          f"{survivors[0].strip()[:200]}")

    # Ctrl-C to the launcher: every rank stops after the same step, rank 0
    # saves, the job exits 130 and the checkpoint resumes.
    save = os.path.join(d, "interrupted")
    fresh(save)
    log = os.path.join(d, "interrupted.jsonl")
    fresh(log)
    proc = start_interruptible(a, w, [
        binary, "--steps=100000", f"--save={save}", "--collective-timeout=20",
        f"--log-jsonl={log}"] + common)
    wait_for_steps(log, 3, proc)
    check_no_thread_handles_interrupts(binary, proc)
    out, err = ctrl_c(proc, "Ctrl-C")
    if proc.returncode != 130 or "interrupted after" not in out:
        fail(f"Ctrl-C: exit {proc.returncode}:\n{out}\n{err}")
    if len(os.listdir(save)) != 2:  # one checkpoint and `latest`
        fail(f"Ctrl-C: the checkpoint directory holds {os.listdir(save)}")
    step = int(open(os.path.join(save, "latest")).read().split("-")[1])
    run([binary, f"--steps={step + 1}", f"--save={save}", "--resume"] +
        common, "resuming after Ctrl-C", env=dict(
            os.environ, RANK="0", WORLD_SIZE="1"))
    print(f"ok: Ctrl-C stops every rank after step {step}, saves once, "
          f"exits 130")

    # A rank that stalls (SIGSTOP) for longer than the 10 s after which a
    # waiting collective says what it waits for, then goes on: rank 0 says
    # where it waits and for whom while the job is stuck, and the job then
    # trains on (stopped here with Ctrl-C).
    log = os.path.join(d, "stalled.jsonl")
    fresh(log)
    proc = start_interruptible(a, w, [
        binary, "--steps=100000", "--collective-timeout=60",
        f"--log-jsonl={log}"] + common)
    wait_for_steps(log, 3, proc)
    ranks = rank_pids(binary)
    if len(ranks) != w:
        proc.kill()
        fail(f"stall: {len(ranks)} rank processes, wanted {w}")
    stalled = ranks[-1]  # the last listed: not rank 0
    os.kill(stalled, signal.SIGSTOP)
    time.sleep(12)
    os.kill(stalled, signal.SIGCONT)
    wait_for_steps(log, sum(1 for _ in open(log)) + 2, proc)
    out, err = ctrl_c(proc, "a rank's stall and Ctrl-C")
    if proc.returncode != 130:
        fail(f"stall: exit {proc.returncode} (wanted 130 from Ctrl-C):\n{err}")
    notice = re.search(r"note: rank 0: waited 1\d s in .* at step \d+ for "
                       r"(peer rank \d+|the other ranks); gives up after 60 s "
                       r"without progress \(--collective-timeout\)$",
                       err, re.M)
    if not notice:
        fail(f"stall: rank 0 said nothing while it waited:\n{err}")
    print(f"ok: a stalled rank is reported while the others wait, and the "
          f"job goes on: {notice.group(0)[:240]}")

    # A rank that never starts: rank 0 alone with WORLD_SIZE=2. The timeout
    # is past the 10 s after which a waiting rank says what it waits for
    # (--quiet does not silence that), so the wait is not a silent one.
    env = dict(os.environ, RANK="0", WORLD_SIZE="2", LOCAL_RANK="0",
               LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()), SINTER_RUN_ID="never")
    t0 = time.time()
    p = run([binary, "--steps=2", "--collective-timeout=11"] + common,
            "a rank that never starts", expect=None, env=env, timeout=60)
    if p.returncode == 0 or "never joined" not in p.stderr or \
            "rank 1" not in p.stderr:
        fail(f"missing rank: exit {p.returncode}:\n{p.stderr}")
    notice = re.search(r"^note: rank 0: waited 1\d s for rank 1 to join "
                       r"\(the TCP store at 127\.0\.0\.1:\d+, run 'never'\); "
                       r"gives up at 11 s \(--collective-timeout\)$",
                       p.stderr, re.M)
    if not notice:
        fail(f"missing rank: no note while waiting:\n{p.stderr}")
    error = next((line for line in p.stderr.splitlines()
                  if line.startswith("error:")), p.stderr.strip())
    print(f"ok: a rank that never starts is named after "
          f"{time.time() - t0:.1f} s: {error[:200]}")
    print(f"ok: the wait said so first: {notice.group(0)}")

    # Every rank reading the same rows.
    p = launch(a, w, [binary, "--steps=2", "--debug-fault=same-data"] +
               common, "same data", expect=None)
    if p.returncode == 0 or "same first batch" not in p.stderr:
        fail(f"same data not caught (exit {p.returncode}):\n{p.stderr}")
    print("ok: ranks reading the same data are refused")

    # One rank's parameters drifting.
    p = launch(a, w, [binary, "--steps=6", "--check-every=2",
                      "--debug-fault=drift@3"] + common, "drift", expect=None)
    if p.returncode == 0 or "drifted apart after step 4" not in p.stderr:
        fail(f"drift not caught at the next check (exit {p.returncode}):\n"
             f"{p.stderr}")
    print("ok: a rank whose parameters drift is caught at the next check")

    # A healthy run with the checks every step prints nothing alarming.
    p = launch(a, w, [binary, "--steps=4", "--check-every=1"] + common,
               "healthy run")
    if "error" in p.stdout + p.stderr:
        fail(f"a healthy run printed an error:\n{p.stdout}{p.stderr}")

    # Different programs on different ranks.
    other = compile_model(a, f"train{b + 1}", b + 1)
    script = os.path.join(d, "mixed.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\nif [ \"$RANK\" = 0 ]; then exec %s \"$@\"; "
                "else exec %s \"$@\"; fi\n" % (binary, other))
    os.chmod(script, 0o755)
    p = launch(a, 2, [script, "--steps=2", "--collective-timeout=10"] +
               common, "different binaries", expect=None)
    if p.returncode == 0 or "fingerprint" not in p.stderr:
        fail(f"different binaries not refused (exit {p.returncode}):\n"
             f"{p.stderr}")
    print("ok: different programs on different ranks are refused at the "
          "start")


def cmd_resume(a):
    w, b, k = a.world, a.batch_size, a.steps
    binary, accumulation = per_rank_binary(a, b)
    d = a.work_dir
    fresh(f"{d}/full", f"{d}/half", f"{d}/full.jsonl", f"{d}/half.jsonl")
    common = ["--threads=1", "--quiet"] + data_flags(a) + accumulation
    launch(a, w, [binary, f"--steps={2 * k}", f"--save={d}/full",
                  f"--log-jsonl={d}/full.jsonl"] + common, "uninterrupted")
    launch(a, w, [binary, f"--steps={k}", f"--save={d}/half",
                  f"--log-jsonl={d}/half.jsonl"] + common, "first half")
    launch(a, w, [binary, f"--steps={2 * k}", f"--save={d}/half", "--resume",
                  f"--log-jsonl={d}/half.jsonl"] + common, "resumed half")
    same_state(f"{d}/full", f"{d}/half", 2 * k, f"after resuming on {w} ranks")
    lf, lh = step_metric(f"{d}/full.jsonl"), step_metric(f"{d}/half.jsonl")
    if lf != lh:
        fail(f"losses differ after resuming: {lf} vs {lh}")
    entries = sorted(os.listdir(f"{d}/full"))
    if [e for e in entries if e.startswith(".") or "tmp" in e]:
        fail(f"leftovers in the checkpoint directory: {entries}")
    micro = (f" x {a.run_accumulate or a.accumulate} micro-batches"
             if a.accumulate > 1 else "")
    print(f"ok: {2 * k} steps = {k} + resume + {k} on {w} ranks{micro}, "
          "bit for bit")


def cmd_restart(a):
    """A rank dies mid-run; sinter-launch --max-restarts starts every rank
    again, `--resume` continues from the latest checkpoint, and the run ends
    where an uninterrupted one does, bit for bit. The rank dies after step
    k of 5k: steps take milliseconds here, and the first start must not
    end before the kill lands."""
    w, b, k = a.world, a.batch_size, a.steps
    binary, accumulation = per_rank_binary(a, b)
    d = a.work_dir
    fresh(f"{d}/full", f"{d}/restarted", f"{d}/full.jsonl",
          f"{d}/restarted.jsonl")
    common = ["--threads=1", "--quiet", "--save-every=2"] + data_flags(a) + \
        accumulation
    launch(a, w, [binary, f"--steps={5 * k}", f"--save={d}/full",
                  f"--log-jsonl={d}/full.jsonl"] + common, "uninterrupted")
    # The last rank, on the first start only, is SIGKILLed (with its
    # wrapper) once rank 0 has logged step k: the others fail in the next
    # collective within milliseconds, and the launcher restarts them all.
    log = f"{d}/restarted.jsonl"
    script = dies_after(os.path.join(d, "dies-once.py"), log, k,
                        f'os.environ.get("RANK") == "{w - 1}"')
    p = launch(a, w, [script, binary, f"--steps={5 * k}",
                      f"--save={d}/restarted", "--resume", f"--log-jsonl={log}",
                      "--collective-timeout=20"] + common,
               "restarted after a rank died", extra=["--max-restarts=1"])
    if "killed by SIGKILL (first failure)" not in p.stderr or \
            "restarting every rank (restart 1 of 1)" not in p.stderr:
        fail(f"the launcher did not name the dead rank and restart:\n"
             f"{p.stderr}")
    resumed = [o for o in jsonl(log) if o.get("event") == "resume"]
    if not resumed:
        fail("the restarted ranks did not resume from a checkpoint")
    same_state(f"{d}/full", f"{d}/restarted", 5 * k, "after the restart")
    print(f"ok: a rank SIGKILLed during a {5 * k}-step run: restarted from "
          f"step {resumed[-1]['step']}, the same state as without, bit for "
          "bit")


def cmd_elastic(a):
    """sinter-launch --nnodes=1:2, two nodes on this machine (127.0.0.1,
    which serves the rendezvous, and 127.0.0.2), one rank each. leave: node
    1 dies (its rank and its launcher SIGKILLed) after step k; node 0's rank
    fails, its launcher joins the next round alone, and the job resumes at
    world size 1 and finishes. arrive: node 0 runs alone; node 1 starts
    after step k; node 0 stops its rank (it saves), both join the next
    round (numbered in the order they joined it: node 1 waited, so it comes
    first), and the job resumes at world size 2 and finishes, on both
    nodes, with no restart counted."""
    b, k, n = a.batch_size, a.steps, 40 * a.steps
    binary, _ = per_rank_binary(a, b)
    d = a.work_dir
    fresh(f"{d}/leave", f"{d}/arrive", f"{d}/leave.jsonl",
          f"{d}/arrive.jsonl")
    common = ["--threads=1", "--save-every=5", "--keep-last=2",
              "--log-every=1000", "--collective-timeout=20", "--resume",
              f"--steps={n}"] + data_flags(a)

    def node(i, port, argv, extra=()):
        env = dict(os.environ, SINTER_HOST=f"127.0.0.{i + 1}")
        return subprocess.Popen(
            [a.launch, "-n", "1", "--nnodes=1:2", "--master-addr=127.0.0.1",
             f"--master-port={port}", "--last-call-seconds=3",
             "--grace-seconds=10"] + list(extra) + ["--"] + argv,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env)

    def finish(p, what):
        try:
            out, err = p.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            p.kill()
            fail(f"{what}: still running after 300 s (a hang)")
        return p.returncode, out + err

    def steps(log):
        try:
            return sum('"loss"' in line for line in open(log))
        except OSError:
            return 0

    def last_step(save):
        return int(os.path.basename(latest(save)).split("-")[-1])

    # leave: node 1's rank is a wrapper that, in the first round, kills
    # the binary, its own launcher and itself once step k is logged.
    log = f"{d}/leave.jsonl"
    script = dies_after(os.path.join(d, "node-dies.py"), log, k, "True",
                        launcher_too=True)
    port = free_port()
    argv = [binary, f"--save={d}/leave", f"--log-jsonl={log}"] + common
    first = node(0, port, argv, extra=["--max-restarts=1"])
    time.sleep(0.3)
    second = node(1, port, [script] + argv)
    code1, text1 = finish(second, "node 1")
    code0, text0 = finish(first, "node 0")
    if code1 != -signal.SIGKILL:
        fail(f"node 1's launcher was not killed (exit {code1}):\n{text1}")
    for said in ("round 0: 2 nodes, 2 ranks; this is node 0",
                 "joining the next round (restart 1 of 1)",
                 "round 1: 1 node, 1 ranks; this is node 0",
                 "the checkpoint was trained on 2 rank(s), this run has 1"):
        if said not in text0:
            fail(f"node 0 did not say '{said}' (exit {code0}):\n"
                 f"{text0[-3000:]}")
    if code0 != 0 or last_step(f"{d}/leave") != n:
        fail(f"node 0 alone did not finish {n} steps (exit {code0}, "
             f"latest {latest(f'{d}/leave')}):\n{text0[-3000:]}")
    left_at = [o["step"] for o in jsonl(log) if o.get("event") == "resume"]

    # arrive: node 1 starts once node 0, alone, has logged step k.
    log = f"{d}/arrive.jsonl"
    port = free_port()
    argv = [binary, f"--save={d}/arrive", f"--log-jsonl={log}"] + common
    first = node(0, port, argv)
    deadline = time.time() + 120
    while steps(log) < k:
        if first.poll() is not None or time.time() > deadline:
            fail(f"node 0 alone never logged step {k}: "
                 f"{finish(first, 'node 0')[1][-3000:]}")
        time.sleep(0.05)
    second = node(1, port, argv)
    code1, text1 = finish(second, "node 1")
    code0, text0 = finish(first, "node 0")
    for who, code, text, said in (
            (0, code0, text0, "round 0: 1 node, 1 ranks; this is node 0"),
            (0, code0, text0, "a node is waiting to join"),
            (0, code0, text0, "round 1: 2 nodes, 2 ranks"),
            (0, code0, text0 + text1,
             "the checkpoint was trained on 1 rank(s), this run has 2"),
            (1, code1, text1, "round 1: 2 nodes, 2 ranks")):
        if said not in text or code != 0:
            fail(f"node {who} (exit {code}) did not say '{said}':\n"
                 f"{text[-3000:]}")
    if "restart" in text0 + text1:
        fail(f"an arrival counted as a restart:\n{text0[-2000:]}")
    if last_step(f"{d}/arrive") != n:
        fail(f"the job did not finish {n} steps: {latest(f'{d}/arrive')}")
    joined_at = [o["step"] for o in jsonl(log) if o.get("event") == "resume"]
    print(f"ok: elastic 1:2: a node died, the other resumed alone from step "
          f"{left_at[-1] if left_at else '?'} and finished {n} steps; a node "
          f"arrived, both resumed from step "
          f"{joined_at[-1] if joined_at else '?'} and finished")


def cmd_launchers(a):
    w, b, n = a.world, a.batch_size, a.steps
    binary = compile_model(a, f"train{b}", b)
    d = a.work_dir
    common = [f"--steps={n}", "--threads=1", "--quiet"] + data_flags(a)
    results = {}
    fresh(f"{d}/launch.jsonl")
    launch(a, w, [binary, f"--log-jsonl={d}/launch.jsonl"] + common,
           "sinter-launch")
    results["sinter-launch"] = step_metric(f"{d}/launch.jsonl")

    def torchrun(argv, **extra):
        """Every rank started with torchrun's variables set by hand (and
        `extra`); their stdouts."""
        port = free_port()
        procs = []
        for r in range(w):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(w),
                       LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(w),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       TORCHELASTIC_RUN_ID=f"test-{port}", **extra)
            procs.append(subprocess.Popen(
                [binary] + argv, env=env, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True))
        outs = []
        for r, p in enumerate(procs):
            out, err = p.communicate(timeout=300)
            if p.returncode != 0:
                fail(f"torchrun-style rank {r}: exit {p.returncode}:\n{err}")
            outs.append(out)
        return outs

    fresh(f"{d}/torchrun.jsonl")
    torchrun([f"--log-jsonl={d}/torchrun.jsonl"] + common)
    results["torchrun variables"] = step_metric(f"{d}/torchrun.jsonl")

    # Threads by default: the CPUs a rank may run on, shared by the ranks
    # on the host, or all its own when a launcher bound it
    # (SINTER_CPU_BIND=cores, as sinter-launch sets).
    cpus = len(os.sched_getaffinity(0))
    for bind, want in (("none", max(1, cpus // w)), ("cores", cpus)):
        for r, out in enumerate(torchrun(["--steps=1", "--quiet", "--profile"]
                                         + data_flags(a),
                                         SINTER_CPU_BIND=bind)):
            m = re.search(r"profile: \d+ runs?, (\d+) threads", out)
            if not m or int(m.group(1)) != want:
                fail(f"SINTER_CPU_BIND={bind}: rank {r} should run {want} "
                     f"threads on {cpus} CPUs:\n{out}")

    mpirun = shutil.which("mpirun")
    if mpirun:
        fresh(f"{d}/mpi.jsonl")
        run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(w),
             "-x", "PATH", binary, f"--log-jsonl={d}/mpi.jsonl"] + common,
            "mpirun")
        results["mpirun"] = step_metric(f"{d}/mpi.jsonl")
    elif a.require_mpirun:
        fail("mpirun is not installed (scripts/setup.sh installs openmpi-bin)")
    first = results["sinter-launch"]
    for name, r in results.items():
        if r != first or len(r) != n:
            fail(f"{name} gives losses {r}, sinter-launch {first}")
    print(f"ok: {', '.join(results)} give bit-identical losses on {w} ranks;"
          f" threads follow SINTER_CPU_BIND")


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
