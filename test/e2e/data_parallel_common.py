#!/usr/bin/env python3
"""What data_parallel.py's subcommands share: compiling the binaries they
compare, starting ranks (sinter-launch, one launcher a simulated host),
reading their logs and checkpoints, and failing with one message.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_safetensors  # noqa: E402
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
