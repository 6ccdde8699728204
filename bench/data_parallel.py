#!/usr/bin/env python3
"""Data parallelism on char-GPT, side by side in one invocation.

A benchmark driver, not a test (docs/BenchmarksDistributed.md).
Each round runs, in a rotating order so that machine load falls on all of
them alike:

  s1x2   Sinter, 1 process x 2 threads, batch 2B (the single-process step);
  s2x1   Sinter, 2 processes x 1 thread, batch B each (sinter-launch -n 2,
         which binds each rank to a core of its own);
  s2x1free  the same with --cpu-bind none: ranks the scheduler may move;
  floor  the same 2 x 1 with --debug-skip-allreduce: no communication, wrong
         numbers, the compute floor of the data-parallel step;
  ddp    PyTorch DDP (gloo), 2 x 1, batch B each (bench/peers/ddp_peer.py),
         when bench/.venv has torch (bench/peers.py makes it); unbound, as
         torchrun starts it (sinter-launch --cpu-bind none);
  ddpbound  the same bound as Sinter's ranks are (--cpu-bind cores);
  ddpglibc  ddp with glibc's malloc (ddp preloads jemalloc when installed,
         which is not always the faster; with both, the ratio to each
         round's faster is reported too);
  ar     the step's gradient buckets all-reduced alone, back to back, on 2
         ranks (bench/allreduce_alone.cpp, through runtime/Comm: the shared
         memory of ranks on one host, the buckets shared in place as the
         binary shares them);
  arcopy the same through the shared slots (buckets in private memory);
  s2x1tcp, artcp  s2x1 and ar over Gloo's TCP instead
         (SINTER_SHM_DISABLE=1);
  paired, pairedtcp  s2x1 (and over TCP) with --debug-skip-allreduce=even:
         the odd steps all-reduce, the even ones do not, so one run gives
         the exposed communication as the difference of its odd and even
         steps' medians: both halves under the same load, memory and
         placement, where s2x1 - floor subtracts two runs;
  s2x1bf16  s2x1 with the gradients sent as bf16 (data_parallel
         { grad_comm_dtype: BF16 }: half the bytes);
  ddpbf16   ddp with DDP's bf16_compress_hook, when ddp runs.

Sinter's figure for a run is the median whole step of its JSONL log (the
differences of elapsed_seconds: the step, its data, the metrics' all-reduce
and any wait for the other rank) after the first two (page faults,
oneDNN's JIT); DDP's the slower rank's median after its warm-up, also
timed from one step's start to the next (a barrier first). Reported: every configuration's
median over rounds, the per-round ratios, the bytes all-reduced per step,
and the exposed communication, s2x1 - floor, against the all-reduce alone,
and the comm wait of the rank that waits less (--profile), the same
exposure measured directly, in all and bucket by bucket.
With --dropout0 the same on a copy of the model with every dropout at 0
(PyTorch then uses its fused attention).

Usage: /usr/bin/python3 bench/data_parallel.py [--build-dir=build]
           [--rounds=3] [--steps=10] [--batch=4] [--dropout0] [--out=FILE]
           [--configs=s2x1,ddp]  (a subset, e.g. one ratio in tight rounds)
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_PYTHON = os.path.join(ROOT, "bench", ".venv", "bin", "python")


def run(cmd, env=None, timeout=1800):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n"
                 f"{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p.stdout


def loadavg():
    return open("/proc/loadavg").read().split()[0]


def sinter_step_ms(log):
    """The median whole step (elapsed_seconds' differences: the step, its
    data, the metrics' all-reduce and any wait for the other rank) after
    the first two."""
    steps = [json.loads(line) for line in open(log)]
    t = [s["elapsed_seconds"] for s in steps if "elapsed_seconds" in s]
    return 1e3 * statistics.median(
        [b - a for a, b in zip(t[1:], t[2:])])


def paired_ms(log):
    """(odd, even): the median of a --debug-skip-allreduce=even run's odd
    steps (with all-reduces) and of its even steps (without), from step 3."""
    t = {}
    for line in open(log):
        s = json.loads(line)
        if "elapsed_seconds" in s:
            t[s["step"]] = s["elapsed_seconds"]
    times = {k: t[k] - t[k - 1] for k in t if k >= 3 and k - 1 in t}
    odd = [v for k, v in times.items() if k % 2 == 1]
    even = [v for k, v in times.items() if k % 2 == 0]
    return 1e3 * statistics.median(odd), 1e3 * statistics.median(even)


def comm_wait_ms(out):
    """(wait, by_bucket): the smaller of the ranks' `comm wait` in their
    --profile output, the time a step blocks in the collectives that is not
    the other rank's slower compute (the direct measure of exposed
    communication, without the subtraction of two noisy step times), and
    that rank's wait at each bucket's start and done together."""
    ranks = {}
    for line in out.splitlines():
        m = re.match(r"(?:\[rank (\d+)\] )?(.*)", line)
        rank = ranks.setdefault(int(m.group(1) or 0), [None, {}])
        w = re.search(r"comm wait\s+([0-9.]+) ms/run", m.group(2))
        if w:
            rank[0] = float(w.group(1))
        b = re.match(r"\s+(bucket \d+)\s+\d+ bytes\s+start\s+([0-9.]+)\s+"
                     r"done\s+([0-9.]+) ms/run", m.group(2))
        if b:
            rank[1][b.group(1)] = float(b.group(2)) + float(b.group(3))
    waits = [r for r in ranks.values() if r[0] is not None]
    if len(waits) != 2:
        sys.exit(f"expected 2 ranks' 'comm wait' lines, got {len(waits)}")
    return tuple(min(waits, key=lambda r: r[0]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--dropout0", action="store_true")
    ap.add_argument("--out", default="")
    ap.add_argument("--configs", default="",
                    help="comma-separated subset to run (default: all), e.g. "
                    "s2x1,ddp for that ratio alone in tightly interleaved "
                    "rounds")
    a = ap.parse_args()
    bindir = os.path.join(a.build_dir, "bin")
    sinterc = os.path.join(bindir, "sinterc")
    launch = os.path.join(bindir, "sinter-launch")
    run(["ninja", "-C", a.build_dir, "sinterc", "SinterStepMain",
         "sinter-bench-allreduce-alone"])
    work = tempfile.mkdtemp(prefix="sinter-dp-bench-")
    data = os.path.join(ROOT, "examples", "data", "chargpt")
    model = os.path.join(ROOT, "examples", "chargpt.pbtxt")
    dropout = 0.2
    if a.dropout0:
        text = re.sub(r"(dropout\s*\{\s*rate:\s*)[0-9.]+", r"\g<1>0.0",
                      open(model).read())
        text = re.sub(r"(transformer_block\s*\{[^}]*dropout:\s*)[0-9.]+",
                      r"\g<1>0.0", text)
        model = os.path.join(work, "chargpt_nodrop.pbtxt")
        open(model, "w").write(text)
        dropout = 0.0
    b = a.batch
    per_rank = os.path.join(work, f"train{b}")
    whole = os.path.join(work, f"train{2 * b}")
    run([sinterc, model, f"--batch-size={b}", "-o", per_rank])
    run([sinterc, model, f"--batch-size={2 * b}", "-o", whole])
    bf16_model = os.path.join(work, "chargpt_bf16comm.pbtxt")
    text, n = re.subn(r"^training\s*\{",
                      "training {\n  data_parallel { grad_comm_dtype: BF16 }",
                      open(model).read(), count=1, flags=re.M)
    if n != 1:
        sys.exit(f"{model}: no training section")
    open(bf16_model, "w").write(text)
    per_rank_bf16 = os.path.join(work, f"train{b}bf16")
    run([sinterc, bf16_model, f"--batch-size={b}", "-o", per_rank_bf16])
    sched = run([sinterc, model, f"--batch-size={b}",
                 "--compile-to=scheduled", "-o", "-"])
    # Each start's bucket view: the bytes the collective moves, padding
    # included.
    bucket_bytes = [4 * int(n) for n in re.findall(
        r"sched.all_reduce_start \"\w+\" %\S+ .*?!sched.buffer<(\d+)xf32>",
        sched)]
    have_torch = os.path.exists(VENV_PYTHON) and subprocess.run(
        [VENV_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0

    steps = a.steps + 2
    # --profile on every Sinter run alike (a clock read per step), for the
    # collectives' wait it reports.
    common = [f"--steps={steps}", f"--data={data}", "--quiet", "--profile"]
    tcp_env = dict(os.environ, SINTER_SHM_DISABLE="1")
    configs = {
        "s1x2": lambda log: run([whole, "--threads=2",
                                 f"--log-jsonl={log}"] + common),
        "s2x1": lambda log: run([launch, "-n", "2", "--", per_rank,
                                 "--threads=1", f"--log-jsonl={log}"] + common),
        "s2x1free": lambda log: run([launch, "-n", "2", "--cpu-bind=none",
                                     "--", per_rank, "--threads=1",
                                     f"--log-jsonl={log}"] + common),
        "floor": lambda log: run([launch, "-n", "2", "--", per_rank,
                                  "--threads=1", "--debug-skip-allreduce",
                                  f"--log-jsonl={log}"] + common),
        "s2x1bf16": lambda log: run([launch, "-n", "2", "--", per_rank_bf16,
                                     "--threads=1", f"--log-jsonl={log}"] +
                                    common),
        "ar": lambda log: run([launch, "-n", "2", "--",
                               os.path.join(bindir, "allreduce_alone"),
                               ",".join(map(str, bucket_bytes)), "--reps=20"]),
        "arcopy": lambda log: run([launch, "-n", "2", "--",
                                   os.path.join(bindir, "allreduce_alone"),
                                   ",".join(map(str, bucket_bytes)),
                                   "--reps=20", "--copy"]),
        "s2x1tcp": lambda log: run([launch, "-n", "2", "--", per_rank,
                                    "--threads=1", f"--log-jsonl={log}"] +
                                   common, env=tcp_env),
        "paired": lambda log: run([launch, "-n", "2", "--", per_rank,
                                   "--threads=1", "--debug-skip-allreduce=even",
                                   f"--log-jsonl={log}"] + common),
        "pairedtcp": lambda log: run([launch, "-n", "2", "--", per_rank,
                                      "--threads=1",
                                      "--debug-skip-allreduce=even",
                                      f"--log-jsonl={log}"] + common,
                                     env=tcp_env),
        "artcp": lambda log: run([launch, "-n", "2", "--",
                                  os.path.join(bindir, "allreduce_alone"),
                                  ",".join(map(str, bucket_bytes)),
                                  "--reps=20"], env=tcp_env),
    }
    if have_torch:
        env = dict(os.environ, OMP_NUM_THREADS="1")
        jemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
        if os.path.exists(jemalloc):
            env["LD_PRELOAD"] = jemalloc
        def ddp(bind, env=env):
            return lambda log: run(
                [launch, "-n", "2", f"--cpu-bind={bind}", "--", VENV_PYTHON,
                 os.path.join(ROOT, "bench", "peers", "ddp_peer.py"),
                 f"--batch={b}", f"--steps={a.steps}", "--warmup=3",
                 f"--dropout={dropout}"], env=env)
        configs["ddp"] = ddp("none")
        configs["ddpbound"] = ddp("cores")
        configs["ddpglibc"] = ddp("none", env={
            k: v for k, v in env.items() if k != "LD_PRELOAD"})
        configs["ddpbf16"] = lambda log: run(
            [launch, "-n", "2", "--cpu-bind=none", "--", VENV_PYTHON,
             os.path.join(ROOT, "bench", "peers", "ddp_peer.py"),
             f"--batch={b}", f"--steps={a.steps}", "--warmup=3",
             f"--dropout={dropout}", "--comm=bf16"], env=env)
    names = list(configs)
    if a.configs:
        names = a.configs.split(",")
        unknown = [n for n in names if n not in configs]
        if unknown:
            sys.exit(f"--configs: unknown {', '.join(unknown)} (known: "
                     f"{', '.join(configs)})")
    results = {n: [] for n in names}
    waits = {"s2x1": [], "s2x1free": [], "s2x1bf16": [], "s2x1tcp": []}
    bucket_waits = {n: [] for n in waits}
    loads = []
    paired = {"paired": [], "pairedtcp": []}
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            log = os.path.join(work, f"{n}-{r}.jsonl")
            if os.path.exists(log):
                os.remove(log)
            loads.append(loadavg())
            out = configs[n](log)
            if n in ("ar", "arcopy", "artcp"):
                ms = float(re.search(r"median_ms=([0-9.]+)", out).group(1))
            elif n in ("ddp", "ddpbound", "ddpglibc", "ddpbf16"):
                ms = json.loads(out.strip().splitlines()[-1])["ddp_step_ms"]
            elif n in paired:
                odd, even = paired_ms(log)
                paired[n].append(odd - even)
                ms = odd
            else:
                ms = sinter_step_ms(log)
            if n in waits:
                wait, by_bucket = comm_wait_ms(out)
                waits[n].append(wait)
                bucket_waits[n].append(by_bucket)
            results[n].append(ms)
            print(f"round {r + 1} {n}: {ms:.1f} ms (load {loads[-1]})",
                  flush=True)
    med = {n: statistics.median(v) for n, v in results.items()}

    def have(*ns):
        return all(n in results for n in ns)

    def ratio(x, y):
        return statistics.median(
            [p / q for p, q in zip(results[x], results[y])])

    def exposed(x, floor="floor"):
        return [s - f for s, f in zip(results[x], results[floor])]

    def per(values, by):
        return statistics.median([e / t for e, t in zip(values, results[by])])

    report = {
        "model": os.path.basename(model), "batch_per_rank": b,
        "dropout": dropout, "rounds": a.rounds, "steps": a.steps,
        "bucket_bytes": bucket_bytes, "bytes_all_reduced": sum(bucket_bytes),
        "median_ms": med, "per_round_ms": results, "loadavg": loads,
    }
    if have("s2x1", "s1x2"):
        report["s2x1_over_s1x2"] = ratio("s2x1", "s1x2")
    if have("floor", "s1x2"):
        report["floor_over_s1x2"] = ratio("floor", "s1x2")
    if have("s2x1", "floor"):
        report["exposed_ms"] = statistics.median(exposed("s2x1"))
    if have("s2x1", "floor", "ar"):
        report["exposed_over_allreduce"] = per(exposed("s2x1"), "ar")
    if have("s2x1tcp", "s1x2"):
        report["s2x1tcp_over_s1x2"] = ratio("s2x1tcp", "s1x2")
    if have("s2x1tcp", "floor", "artcp"):
        report["exposed_tcp_ms"] = statistics.median(exposed("s2x1tcp"))
        report["exposed_tcp_over_allreduce_tcp"] = per(exposed("s2x1tcp"),
                                                       "artcp")
    if have("s2x1bf16", "s1x2"):
        report["s2x1bf16_over_s1x2"] = ratio("s2x1bf16", "s1x2")
    if have("s2x1bf16", "floor"):
        report["exposed_bf16_ms"] = statistics.median(exposed("s2x1bf16"))
    report["comm_wait_ms"] = {n: statistics.median(v)
                              for n, v in waits.items() if v}
    report["per_round_comm_wait_ms"] = {n: v for n, v in waits.items() if v}
    report["comm_wait_by_bucket_ms"] = {
        n: {k: statistics.median(r.get(k, 0.0) for r in v)
            for k in sorted({k for r in v for k in r})}
        for n, v in bucket_waits.items() if v}
    report["exposed_paired_ms"] = {n: statistics.median(v)
                                   for n, v in paired.items() if v}
    report["per_round_exposed_paired_ms"] = {n: v for n, v in paired.items()
                                             if v}
    if have("paired", "ar"):
        report["exposed_paired_over_allreduce"] = per(paired["paired"], "ar")
    if have("pairedtcp", "artcp"):
        report["exposed_pairedtcp_over_allreduce_tcp"] = per(
            paired["pairedtcp"], "artcp")
    if have("ddp", "s2x1"):
        report["ddp_over_s2x1"] = ratio("ddp", "s2x1")
    if have("ddpglibc", "s2x1"):
        report["ddpglibc_over_s2x1"] = ratio("ddpglibc", "s2x1")
    if have("ddp", "ddpglibc", "s2x1"):
        # Each round's faster of the two allocators: PyTorch at its best.
        best_ddp = [min(p, q) for p, q in zip(results["ddp"],
                                              results["ddpglibc"])]
        report["ddpbest_over_s2x1"] = statistics.median(
            [p / q for p, q in zip(best_ddp, results["s2x1"])])
    if have("ddpbound", "s2x1"):
        report["ddpbound_over_s2x1"] = ratio("ddpbound", "s2x1")
    if have("ddp", "s2x1free"):
        report["ddp_over_s2x1free"] = ratio("ddp", "s2x1free")
    if have("s2x1", "s2x1free"):
        report["s2x1_over_s2x1free"] = ratio("s2x1", "s2x1free")
    if have("ddpbf16", "s2x1bf16"):
        report["ddpbf16_over_s2x1bf16"] = ratio("ddpbf16", "s2x1bf16")

    def rounds(values):
        return "rounds: " + ", ".join(f"{v:.2f}" if abs(v) < 10 else
                                      f"{v:.1f}" for v in values)

    print(f"\nchar-GPT, {b} rows per rank, dropout {dropout}, "
          f"{a.rounds} rounds (load {min(loads)}-{max(loads)})")
    print(f"bytes all-reduced per step: {sum(bucket_bytes):,} in "
          f"{len(bucket_bytes)} buckets")
    print("| configuration | ms/step (median of rounds) |")
    print("|---|---|")
    for n in names:
        print(f"| {n} | {med[n]:.1f} |")
    if "s2x1_over_s1x2" in report:
        print(f"2x1 / 1x2: {report['s2x1_over_s1x2']:.3f}")
    if "floor_over_s1x2" in report:
        print(f"floor / 1x2: {report['floor_over_s1x2']:.3f}")
    if "exposed_over_allreduce" in report:
        print(f"exposed communication (2x1 - floor): "
              f"{report['exposed_ms']:.1f} ms = "
              f"{report['exposed_over_allreduce']:.2f} x the all-reduce "
              f"alone ({med['ar']:.1f} ms)")
    for n, what in (("s2x1", "f32 gradients"),
                    ("s2x1free", "f32 gradients, unbound"),
                    ("s2x1bf16", "bf16 gradients"),
                    ("s2x1tcp", "over TCP")):
        if n in report["comm_wait_ms"]:
            print(f"comm wait of the rank that waits less ({what}; --profile; "
                  "the other also waits out the ranks' compute difference): "
                  f"{report['comm_wait_ms'][n]:.1f} ms per step ("
                  + rounds(waits[n]) + "); by bucket (start and done, "
                  "medians): " + ", ".join(
                      f"{k} {v:.1f}" for k, v in
                      report["comm_wait_by_bucket_ms"][n].items()))
    if "exposed_paired_over_allreduce" in report:
        print("exposed communication, paired in one run (odd steps with, "
              "even without all-reduces): "
              f"{report['exposed_paired_ms']['paired']:.1f} ms = "
              f"{report['exposed_paired_over_allreduce']:.2f} x the "
              f"all-reduce alone ({rounds(paired['paired'])})")
    if "exposed_pairedtcp_over_allreduce_tcp" in report:
        print("the same over TCP: "
              f"{report['exposed_paired_ms']['pairedtcp']:.1f} ms = "
              f"{report['exposed_pairedtcp_over_allreduce_tcp']:.2f} x its "
              f"all-reduce alone ({rounds(paired['pairedtcp'])})")
    if "exposed_tcp_over_allreduce_tcp" in report:
        print(f"over TCP: 2x1 / 1x2 {report['s2x1tcp_over_s1x2']:.3f}, "
              f"exposed {report['exposed_tcp_ms']:.1f} ms = "
              f"{report['exposed_tcp_over_allreduce_tcp']:.2f} x its "
              f"all-reduce alone ({med['artcp']:.1f} ms)")
    if "exposed_bf16_ms" in report:
        print(f"gradients as bf16: exposed communication "
              f"{report['exposed_bf16_ms']:.1f} ms")
    if "ddp_over_s2x1" in report:
        print(f"PyTorch DDP / Sinter 2x1: {report['ddp_over_s2x1']:.2f} ("
              + rounds([p / q for p, q in zip(results["ddp"],
                                               results["s2x1"])]) + ")")
    if "ddpbest_over_s2x1" in report:
        print("PyTorch DDP, the faster allocator of each round / Sinter 2x1: "
              f"{report['ddpbest_over_s2x1']:.3f}")
    for key, x, y, what in (
            ("ddpglibc_over_s2x1", "ddpglibc", "s2x1",
             "PyTorch DDP with glibc's malloc / Sinter 2x1"),
            ("ddpbound_over_s2x1", "ddpbound", "s2x1",
             "PyTorch DDP bound as Sinter's ranks / Sinter 2x1"),
            ("ddp_over_s2x1free", "ddp", "s2x1free",
             "both unbound: PyTorch DDP / Sinter 2x1 --cpu-bind none"),
            ("s2x1_over_s2x1free", "s2x1", "s2x1free",
             "Sinter bound / unbound")):
        if key in report:
            print(f"{what}: {report[key]:.3f} (" + rounds(
                [p / q for p, q in zip(results[x], results[y])]) + ")")
    if "ddpbf16_over_s2x1bf16" in report:
        print("both with bf16 gradients: "
              f"{report['ddpbf16_over_s2x1bf16']:.2f}")
    if not have_torch:
        print("PyTorch DDP: not available (no torch in bench/.venv; "
              "bench/peers.py installs it)")
    if a.out:
        json.dump(report, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
