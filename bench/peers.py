#!/usr/bin/env python3
"""Sinter's training step side by side with PyTorch and JAX on this CPU.

A benchmark driver, not a test (docs/Benchmarks.md, "Against PyTorch and
JAX"). In one invocation it:

  1. installs CPU PyTorch, jax[cpu] and numpy into bench/.venv when they
     are missing (pip, with pip's cache); a peer that cannot be installed
     shows as "not available (why)" in the table;
  2. builds sinterc, the runtime and bench/peak_sgemm (ninja, -j1);
  3. measures the oneDNN matmul peak of the --precision (bench/peak_sgemm,
     --dtype=f32 for fp32, --dtype=bf16 for bf16; before and after the
     workloads; the better figure counts), and the ISA oneDNN dispatches to;
  4. for each workload (bench/peers/workloads.py): compiles the .pbtxt (a
     copy with the workload's `pbtxt_replace` edits, if it has any) with
     `sinterc --batch-size=B -o train` (plus `--precision=bf16_mixed` for
     bf16), checks that every peer's model has `sinterc --summary`'s
     parameter count, starts one worker process per peer (PyTorch eager,
     torch.compile, JAX jit; bench/peers/*_peer.py, given --precision)
     that builds, compiles and warms up its step, and then runs --repeats
     rounds, each timing Sinter and every peer once, in a rotating order,
     so that machine load falls on all of them alike;
  5. prints one Markdown table and writes every number to --out.

Precision: fp32 (the default) is fp32 everywhere. bf16 is mixed precision:
Sinter's binary with matmul operands and results in bf16 (oneDNN),
everything else f32; the PyTorch peers' forward pass (model call and loss)
under torch.autocast("cpu", dtype=torch.bfloat16) as nanoGPT's train.py,
with fp32 master weights, optimizer and clipping; JAX is not measured in
bf16 (shown as not available). MFU is then against the bf16 peak.

Times: a peer's figure for a round is the median of its --steps timed
steps; Sinter's is the mean of its steady steps: the binary runs 1+N
steps with --profile, whose figure leaves out the first step's page faults
and oneDNN JIT, as the peers' warm-up is left out. The
table shows each system's best round. MFU = model FLOPs per step
(workloads.model_flops) / step time / peak.

Usage (from anywhere; /usr/bin/python3 with numpy is enough):
  /usr/bin/python3 bench/peers.py [--build-dir=build] [--steps=10]
      [--repeats=3] [--only=mlp,cnn,chargpt,chargpt-nodrop,gpt2] [--threads=N]
      [--peers=torch-eager,torch-compile,jax-jit] [--out=FILE]
      [--precision=fp32|bf16] [--torch-compile-mode=default]
      [--allocator=preload|glibc] [--no-build] [--no-install]

--allocator=glibc runs the peers on glibc's malloc instead of preloading
jemalloc (else tcmalloc): the preload is faster for PyTorch on some hosts
and slower on others (6% slower for one char-GPT rank on a Zen 4 host,
docs/BenchmarksDistributed.md), so compare the two there.
"""

import argparse
import glob
import json
import os
import platform
import re
import select
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

try:
    import numpy as np
except ImportError:  # e.g. a pyenv python3 first on PATH: use Debian's
    if os.path.exists("/usr/bin/python3") and sys.executable != \
            "/usr/bin/python3":
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    sys.exit("bench/peers.py needs numpy (Debian's /usr/bin/python3 has it)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS_DIR = os.path.join(ROOT, "bench", "peers")
VENV = os.path.join(ROOT, "bench", ".venv")
VENV_PYTHON = os.path.join(VENV, "bin", "python")
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
sys.path.insert(0, PEERS_DIR)
from safetensors_io import write_safetensors  # noqa: E402
from workloads import WORKLOADS, model_flops  # noqa: E402

TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"

# peer -> (worker script, mode, framework it needs, column title)
PEERS = {
    "torch-eager": ("torch_peer.py", "eager", "torch", "PyTorch eager"),
    "torch-compile": ("torch_peer.py", "compile", "torch", "torch.compile"),
    "jax-jit": ("jax_peer.py", "jit", "jax", "JAX jit"),
}

# --precision -> (sinterc's extra flags, peak_sgemm's --dtype, table title,
# what the peak is)
PRECISIONS = {
    "fp32": ([], "f32", "fp32", "f32 matmul"),
    "bf16": (["--precision=bf16_mixed"], "bf16", "bf16 mixed",
             "bf16 matmul: bf16 A and B, f32 C"),
}

NO_ALLOCATOR = ("glibc malloc (--allocator=glibc, or neither jemalloc nor "
                "tcmalloc is installed: apt-get install libjemalloc2)")

LOADS = []  # (time, 1-min load average), sampled around every measurement


def read_load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def sample_load():
    """Records and returns the 1-min load average (around measurements)."""
    LOADS.append((time.time(), read_load()))
    return LOADS[-1][1]


def log(message):
    print(message, file=sys.stderr, flush=True)


def run(cmd, env=None, check=True):
    """Runs `cmd`; returns (returncode, stdout + stderr)."""
    log("+ " + " ".join(cmd))
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           env=dict(os.environ, **(env or {})))
        code, out = p.returncode, p.stdout
    except OSError as e:  # not built, or being relinked right now
        code, out = 127, str(e)
    if check and code != 0:
        sys.exit(f"error: {' '.join(cmd)} exited {code}\n{out}")
    return code, out


# ---- the virtual environment ------------------------------------------------

def reachable(url, timeout=5):
    try:
        urllib.request.urlopen(url, timeout=timeout).close()
        return True
    except Exception:
        return False


def venv_version(module):
    """`module.__version__` inside the venv, or None if it will not import."""
    p = subprocess.run([VENV_PYTHON, "-c",
                        f"import {module}; print({module}.__version__)"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True, env=dict(os.environ, JAX_PLATFORMS="cpu"))
    return p.stdout.strip() if p.returncode == 0 else None


def pip_install(args):
    """pip install into the venv (pip's cache is on); None or why not."""
    code, out = run([VENV_PYTHON, "-m", "pip", "install", "-q", *args],
                    check=False)
    if code == 0:
        return None
    lines = [l for l in out.splitlines() if l.strip()]
    return (lines[-1] if lines else f"pip exited {code}")[:160]


def ensure_venv(install):
    """{framework: version or None}, {framework: why unavailable}."""
    why = {}
    if not os.path.exists(VENV_PYTHON):
        if not install:
            return {}, {f: "no bench/.venv (--no-install)"
                        for f in ("torch", "jax")}
        code, out = run([sys.executable, "-m", "venv", VENV], check=False)
        if code != 0:
            reason = f"python3 -m venv failed: {out.strip()[-160:]}"
            return {}, {"torch": reason, "jax": reason}
    wanted = {
        "numpy": None,
        # The CPU wheel index is far smaller (no CUDA libraries); PyPI's
        # torch works on a CPU too, with its CUDA dependencies unused.
        "torch": lambda: ([f"--index-url={TORCH_CPU_INDEX}", "torch"]
                          if reachable(TORCH_CPU_INDEX + "/") else ["torch"]),
        "jax": lambda: ["jax[cpu]"],
    }
    versions = {}
    for module, spec in wanted.items():
        versions[module] = venv_version(module)
        if versions[module] is None and install:
            reason = pip_install(spec() if spec else [module])
            versions[module] = venv_version(module)
            if versions[module] is None:
                why[module] = f"pip install failed: {reason}"
        elif versions[module] is None:
            why[module] = "not installed (--no-install)"
    if "numpy" in why:  # the JAX peer needs it
        why.setdefault("jax", why["numpy"])
    return versions, why


def preload_allocator():
    """jemalloc, else tcmalloc, for LD_PRELOAD; None if neither exists."""
    for pattern in ("libjemalloc.so.2", "libtcmalloc.so.4",
                    "libtcmalloc_minimal.so.4"):
        for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
                  "/usr/local/lib"):
            hits = glob.glob(os.path.join(d, pattern))
            if hits:
                return hits[0]
    return None


def peer_env(threads, allocator):
    """Each peer's best CPU settings (bench/peers/*_peer.py say the rest)."""
    env = {
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=true",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "CUDA_VISIBLE_DEVICES": "",  # PyPI's torch: skip probing for GPUs
        "PYTHONUNBUFFERED": "1",
    }
    if allocator:
        env["LD_PRELOAD"] = allocator
    return env


# ---- peer workers -----------------------------------------------------------

class Peer:
    """One worker process (bench/peers/worker.py's protocol)."""

    def __init__(self, name, workload, threads, env, log_dir, mode=None,
                 precision="fp32"):
        script, default_mode, _, _ = PEERS[name]
        mode = mode or default_mode
        self.name = name
        self.error = None
        self.log_path = os.path.join(log_dir, f"{workload}-{name}.log")
        self.log_file = open(self.log_path, "w")
        cmd = [VENV_PYTHON, os.path.join(PEERS_DIR, script),
               f"--workload={workload}", f"--mode={mode}",
               f"--threads={threads}", f"--precision={precision}"]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log_file, text=True, env=dict(os.environ, **env))

    def request(self, msg, timeout):
        """The worker's answer to `msg`; on failure sets self.error."""
        if self.error:
            return None
        ready = True  # a write that fails means the worker has exited
        try:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            line = self.proc.stdout.readline() if ready else ""
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            if not ready:
                self.error = f"no answer in {timeout:.0f} s"
                self.close()
            else:
                self.error = (f"worker exited {self.proc.wait()}: "
                              f"{self.last_log_line()}")
            return None
        answer = json.loads(line)
        if not answer.get("ok"):
            self.error = answer.get("error", "failed")
            return None
        return answer

    def last_log_line(self):
        self.log_file.flush()
        with open(self.log_path) as f:
            lines = [l.strip() for l in f if l.strip()]
        return lines[-1][:160] if lines else "(no output)"

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write('{"cmd": "quit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.log_file.close()


# ---- Sinter -----------------------------------------------------------------

def summary_params(sinterc, pbtxt):
    """The total of `sinterc --summary`, or None."""
    _, out = run([sinterc, pbtxt, "--summary"], check=False)
    m = re.search(r"total: ([\d,]+) parameters", out)
    return int(m.group(1).replace(",", "")) if m else None


def model_file(workload, tmp_dir):
    """The .pbtxt to compile: the workload's file, or a copy of it in
    `tmp_dir` with its `pbtxt_replace` edits (each must match)."""
    path = os.path.join(ROOT, workload["pbtxt"])
    edits = workload.get("pbtxt_replace")
    if not edits:
        return path
    with open(path) as f:
        text = f.read()
    for old, new in edits:
        if old not in text:
            sys.exit(f"error: workloads.py's pbtxt_replace: {old!r} is not "
                     f"in {workload['pbtxt']}")
        text = text.replace(old, new)
    copy = os.path.join(tmp_dir, os.path.basename(path))
    with open(copy, "w") as f:
        f.write(text)
    return copy


def write_inputs(workload, path):
    """Random values for the model inputs (workloads.py's `inputs`)."""
    rng = np.random.default_rng(0)
    tensors = {}
    for name, (shape, dtype, high) in workload["inputs"].items():
        tensors[name] = (rng.integers(0, high, shape).astype(np.int64)
                         if dtype == "i64" else
                         rng.standard_normal(shape).astype(np.float32))
    write_safetensors(path, tensors)


def parse_step_profile(out):
    """(runs, ms per run) from the binary's --profile text
    (Executor::formatProfile: "profile: R runs, T threads, X ms/run")."""
    m = re.search(r"profile: (\d+) runs, \d+ threads, ([\d.]+) ms/run", out)
    if not m:
        raise ValueError("no 'profile: ... ms/run' line in the output")
    return int(m.group(1)), float(m.group(2))


def sinter_step_ms(binary, inputs, steps, threads):
    """Mean ms of `steps` steady steps: a (1+steps)-step run with --profile,
    whose figure leaves the first step out (Executor::formatProfile)."""
    code, out = run([binary, f"--inputs={inputs}", f"--steps={1 + steps}",
                     f"--threads={threads}", "--profile"], check=False)
    if code != 0:
        last = (out.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"train exited {code}: {last[:160]}")
    runs, ms = parse_step_profile(out)
    if runs != steps:
        raise ValueError(f"profile counted {runs} runs, expected {steps}")
    return ms


# ---- measuring --------------------------------------------------------------

def peak_gflops(build, threads, dtype):
    """peak_sgemm's best {gflops, n, isa, impl} at `dtype` (f32 or bf16),
    or None if it failed."""
    code, out = run([os.path.join(build, "bin", "peak_sgemm"),
                     f"--threads={threads}", "--sizes=2048,3072,4096",
                     "--reps=5", f"--dtype={dtype}"], check=False)
    m = re.search(r"peak_sgemm threads=\d+ n=(\d+) best_ms=[\d.]+ "
                  r"gflops=([\d.]+) dtype=\w+ isa=(\w+)", out)
    if code != 0 or not m:
        log(f"peak_sgemm failed:\n{out}")
        return None
    impl = re.search(rf"n={m.group(1)}\s+best .* impl (\S+)", out)
    return {"gflops": float(m.group(2)), "n": int(m.group(1)),
            "isa": m.group(3), "impl": impl.group(1) if impl else None}


def measure_workload(name, args, build, env, available, tmp, log_dir):
    w = WORKLOADS[name]
    result = {"batch": w["batch"], "sinter": {}, "peers": {}}
    sinterc = os.path.join(build, "bin", "sinterc")
    binary = os.path.join(tmp, name, "train")
    inputs = os.path.join(tmp, name, "inputs.safetensors")
    os.makedirs(os.path.dirname(binary), exist_ok=True)
    pbtxt = model_file(w, os.path.dirname(binary))
    params = summary_params(sinterc, pbtxt)
    result["params"] = params
    flags = PRECISIONS[args.precision][0]
    code, out = run([sinterc, pbtxt, f"--batch-size={w['batch']}", *flags,
                     "-o", binary], check=False)
    if code != 0:
        result["sinter"]["error"] = f"sinterc failed: {out.strip()[-160:]}"
    write_inputs(w, inputs)
    steps = max(1, round(args.steps * w["steps_scale"]))
    result["steps"] = steps

    # Start every peer, then build and warm each up alone: compiling is
    # CPU-bound and should not compete with the other peers' compiles.
    peers = {}
    for p in args.peers:
        framework = PEERS[p][2]
        if framework in available:
            result["peers"][p] = {"error": f"not available "
                                           f"({available[framework]})"}
        else:
            mode = (f"compile:{args.torch_compile_mode}"
                    if p == "torch-compile" else None)
            peers[p] = Peer(p, name, args.threads, env, log_dir, mode,
                            args.precision)
    for p, peer in peers.items():
        log(f"  {name}: setting up {p} (compile + {w['warmup']} warm-up "
            f"steps)")
        answer = peer.request({"cmd": "setup"}, timeout=args.setup_timeout)
        entry = result["peers"][p] = {"log": peer.log_path}
        if answer:
            entry.update(params=answer["params"], setup_s=answer["setup_s"],
                         info=answer["info"], rounds=[], rounds_mean=[])
            if answer["params"] != params:
                log(f"  warning: {p} has {answer['params']:,} parameters, "
                    f"sinterc --summary {params}")
    # FLOPs from Sinter's count; from a peer's if sinterc could not say.
    counts = [params] + [e.get("params") for e in result["peers"].values()]
    counted = next((n for n in counts if n), None)
    result["gflop"] = model_flops(w, counted) * 1e-9 if counted else None

    systems = ["sinter"] + list(peers)
    result["sinter"]["rounds"] = []
    for r in range(args.repeats):
        order = systems[r % len(systems):] + systems[:r % len(systems)]
        for s in order:
            before = sample_load()
            if s == "sinter":
                if "error" in result["sinter"]:
                    continue
                try:
                    ms = sinter_step_ms(binary, inputs, steps, args.threads)
                except (RuntimeError, ValueError) as e:
                    result["sinter"]["error"] = str(e)
                    continue
                result["sinter"]["rounds"].append(ms)
            else:
                answer = peers[s].request({"cmd": "time", "steps": steps},
                                          timeout=args.step_timeout * steps)
                if not answer:
                    continue
                ms = statistics.median(answer["ms"])
                result["peers"][s]["rounds"].append(ms)
                result["peers"][s]["rounds_mean"].append(
                    statistics.fmean(answer["ms"]))
            log(f"  {name} round {r + 1}/{args.repeats}: {s} {ms:.3f} ms/step "
                f"(load {before:.2f} -> {sample_load():.2f})")
    for p, peer in peers.items():
        if peer.error:
            result["peers"][p]["error"] = peer.error
        peer.close()
    for entry in [result["sinter"], *result["peers"].values()]:
        if entry.get("rounds"):
            entry["ms"] = min(entry["rounds"])
    return result


# ---- the report -------------------------------------------------------------

def mfu(gflop, ms, peak):
    return gflop / (ms * 1e-3) / peak if gflop and ms and peak else None


def print_table(results, meta, args):
    cols = [PEERS[p][3] for p in args.peers]
    print(f"\n### Sinter against PyTorch and JAX "
          f"({PRECISIONS[args.precision][2]}, {args.threads} "
          f"threads, best of {args.repeats} rounds)\n")
    print("| workload | GFLOP/step | Sinter ms | " +
          " | ".join(f"{c} ms (×)" for c in cols) +
          " | Sinter MFU | best peer MFU |")
    print("|---" * (5 + len(cols)) + "|")
    for name, r in results.items():
        sinter = r["sinter"].get("ms")
        shape = WORKLOADS[name]["inputs"]
        batch = (f"{r['batch']} × {shape['idx'][0][1]}" if "idx" in shape
                 else str(r["batch"]))
        cells = [f"**{name}** (batch {batch})",
                 f"{r['gflop']:.2f}" if r["gflop"] else "?",
                 f"{sinter:.2f}" if sinter else
                 f"failed ({r['sinter'].get('error', '?')[:100]})"]
        best_peer = None
        for p in args.peers:
            e = r["peers"].get(p, {})
            if e.get("ms"):
                ratio = f" ({e['ms'] / sinter:.2f}×)" if sinter else ""
                cells.append(f"{e['ms']:.2f}{ratio}")
                best_peer = min(best_peer or e["ms"], e["ms"])
            else:
                error = e.get("error", "no rounds")
                if not error.startswith("not available"):
                    error = "failed: " + error
                cells.append(error[:100])
        for ms in (sinter, best_peer):
            u = mfu(r["gflop"], ms, meta["peak_gflops"])  # None if unknown
            cells.append(f"{100 * u:.1f}%" if u is not None else "—")
        print("| " + " | ".join(cells) + " |")
    loads = [l for _, l in LOADS] or [meta["load_start"]]
    print("\n(×): peer time / Sinter time (> 1: Sinter is faster). "
          "MFU: model FLOPs / step time / peak.")
    what = PRECISIONS[args.precision][3]
    peak = (f"{meta['peak_gflops']:.1f} GFLOP/s (oneDNN {meta['onednn']} "
            f"{what}, peak_sgemm --dtype={meta['peak_dtype']}, "
            f"n={meta['peak_n']}, {args.threads} threads)"
            if meta["peak_gflops"] else "not measured (peak_sgemm failed)")
    isa = meta.get("isa") or "? (peak_sgemm failed)"
    if meta.get("peak_impl"):
        isa += f" (peak matmul: {meta['peak_impl']})"
    print(f"Peak: {peak}. ISA: {isa}. CPU: {meta['cpu']}, "
          f"{os.cpu_count()} cores. 1-min load average: "
          f"{meta['load_start']:.2f} at start, {min(loads):.2f} .. "
          f"{max(loads):.2f} while measuring.")
    v = {k: meta["versions"].get(k) or "—"
         for k in ("torch", "jax", "numpy")}
    print(f"Versions: torch {v['torch']}, jax {v['jax']}, numpy {v['numpy']}, "
          f"Python {meta['venv_python'] or '—'}; allocator for the peers: "
          f"{meta['allocator'] or NO_ALLOCATOR}.")
    for name, r in results.items():
        counts = [f"sinterc --summary {r['params']:,}" if r["params"] else
                  "sinterc --summary failed"]
        counts += [f"{p} {e['params']:,}" for p, e in r["peers"].items()
                   if "params" in e]
        same = all(e.get("params", r["params"]) == r["params"]
                   for e in r["peers"].values())
        print(f"Parameters, {name}: {', '.join(counts)}"
              f"{'' if same else ' (MISMATCH)'}.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--steps", type=int, default=10,
                    help="timed steps per round (chargpt; mlp x20, cnn x10, "
                         "gpt2 x0.3)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default=",".join(
        n for n, w in WORKLOADS.items() if w["default"]))
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--torch-compile-mode", default="default",
                    help="torch.compile's mode (e.g. max-autotune)")
    ap.add_argument("--precision", choices=list(PRECISIONS), default="fp32",
                    help="fp32, or bf16 mixed precision (Sinter's "
                         "--precision=bf16_mixed, PyTorch's autocast; MFU "
                         "against the bf16 peak)")
    ap.add_argument("--out", default="/tmp/sinter-peers/results.json")
    ap.add_argument("--setup-timeout", type=float, default=1800,
                    help="seconds a peer may take to compile and warm up")
    ap.add_argument("--step-timeout", type=float, default=120,
                    help="seconds a peer may take per timed step")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--allocator", choices=["preload", "glibc"],
                    default="preload")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-install", action="store_true")
    args = ap.parse_args()
    args.only = [w for w in args.only.split(",") if w]
    args.peers = [p for p in args.peers.split(",") if p]
    for w in args.only:
        if w not in WORKLOADS:
            sys.exit(f"error: --only: unknown workload {w!r} "
                     f"(known: {', '.join(WORKLOADS)})")
    for p in args.peers:
        if p not in PEERS:
            sys.exit(f"error: --peers: unknown peer {p!r} "
                     f"(known: {', '.join(PEERS)})")
    build = os.path.abspath(args.build_dir)
    start = time.time()
    meta = {"load_start": read_load(), "threads": args.threads,
            "precision": args.precision,
            "sinterc_flags": PRECISIONS[args.precision][0],
            "peak_dtype": PRECISIONS[args.precision][1]}

    versions, unavailable = ensure_venv(not args.no_install)
    meta["versions"], meta["unavailable"] = versions, unavailable
    meta["venv_python"] = (subprocess.run(
        [VENV_PYTHON, "-c", "import platform; "
         "print(platform.python_version())"],
        stdout=subprocess.PIPE, text=True).stdout.strip()
        if os.path.exists(VENV_PYTHON) else None)
    meta["allocator"] = (preload_allocator() if args.allocator == "preload"
                         else None)
    env = peer_env(args.threads, meta["allocator"])
    meta["peer_env"] = env
    if not args.no_build:
        run(["ninja", "-C", build, f"-j{args.jobs}", "sinterc",
             "SinterStepMain", "sinter-bench-peak-sgemm"])
    meta["cpu"] = next((l.split(":", 1)[1].strip() for l in
                        open("/proc/cpuinfo") if l.startswith("model name")),
                       platform.processor())
    meta["onednn"] = onednn_version(build)
    meta["peak_gflops"] = meta["peak_n"] = meta["isa"] = None
    meta["peak_impl"] = None

    def take_peak(peak):  # the better of the figures before and after
        if peak and peak["gflops"] > (meta["peak_gflops"] or 0):
            meta.update(peak_gflops=peak["gflops"], peak_n=peak["n"],
                        isa=peak["isa"], peak_impl=peak["impl"])

    take_peak(peak_gflops(build, args.threads, meta["peak_dtype"]))

    results = {}
    log_dir = os.path.join(os.path.dirname(os.path.abspath(args.out)),
                           "logs")
    os.makedirs(log_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sinter-peers-") as tmp:
        for name in args.only:
            log(f"== {name}")
            results[name] = measure_workload(name, args, build, env,
                                             unavailable, tmp, log_dir)
    take_peak(peak_gflops(build, args.threads, meta["peak_dtype"]))
    for r in results.values():
        for e in [r["sinter"], *r["peers"].values()]:
            if e.get("ms"):
                e["mfu"] = mfu(r["gflop"], e["ms"], meta["peak_gflops"])
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "loads": LOADS, "results": results,
                   "args": vars(args)}, f, indent=1)
    print_table(results, meta, args)
    print(f"\n(all numbers: {args.out}; {time.time() - start:.0f} s)")


def onednn_version(build):
    """oneDNN's version from the header the build found (CMakeCache's
    SINTER_DNNL_INCLUDE_DIR): what peak_sgemm and Sinter link."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            include = re.search(r"^SINTER_DNNL_INCLUDE_DIR:\w+=(.*)$",
                                f.read(), re.M).group(1)
        with open(os.path.join(include, "oneapi", "dnnl",
                               "dnnl_version.h")) as f:
            text = f.read()
    except (OSError, AttributeError):
        return "?"
    parts = [re.search(rf"#define DNNL_VERSION_{k}\s+(\d+)", text)
             for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(p.group(1) for p in parts if p)


if __name__ == "__main__":
    main()
