#!/usr/bin/env python3
"""data_parallel.py's subcommands about launching and failing: faults,
resume, restart, elastic and launchers (that file's docstring says what
each checks).
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data_parallel_common import (  # noqa: E402
    fail, run, compile_model, per_rank_binary, jsonl, step_metric, latest,
    same_state, data_flags, fresh, launch, free_port, wait_for_steps,
    dies_after)


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


def port_open(port):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def cmd_launchers(a):
    w, b, n = a.world, a.batch_size, a.steps
    binary = compile_model(a, f"train{b}", b)
    d = a.work_dir
    common = [f"--steps={n}", "--threads=1", "--quiet"] + data_flags(a)
    results = {}
    results_notes = []
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

    # srun's variables, each rank a host of its own (listening on
    # 127.0.0.(r+1)) and no MASTER_ADDR: the store is on the step's first
    # host, this machine's name in SLURM_STEP_NODELIST, where rank 0 runs.
    host = socket.gethostname()
    try:
        socket.gethostbyname(host)
    except OSError:
        fail(f"this machine's name {host!r} does not resolve (srun's case "
             f"needs it to)")
    fresh(f"{d}/srun.jsonl")
    port = free_port()
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("SLURM_", "OMPI_", "PMI", "TORCHELASTIC_"))
             and k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "LOCAL_RANK",
                           "LOCAL_WORLD_SIZE", "SINTER_RUN_ID")}
    procs = []
    for r in range(w):
        env = dict(clean, SLURM_PROCID=str(r), SLURM_NTASKS=str(w),
                   SLURM_LOCALID="0", SLURM_NTASKS_PER_NODE="1",
                   SLURM_JOB_ID=str(port), SLURM_STEP_ID="0",
                   SLURM_STEP_NODELIST=f"{host},simhost[2-{w}]",
                   SINTER_HOST=f"127.0.0.{r + 1}", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(
            [binary, f"--log-jsonl={d}/srun.jsonl"] + common, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for r, p in enumerate(procs):
        out = p.communicate(timeout=300)[0]
        if p.returncode != 0:
            fail(f"srun-style rank {r}: exit {p.returncode}:\n{out[-3000:]}")
    results["srun variables on hosts"] = step_metric(f"{d}/srun.jsonl")

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
        # torchrun's variables left in the shell win over mpirun's (a
        # launch inside another is legitimate): every process is rank 0.
        # The one that cannot serve the store names the one that does, not
        # a busy port, and the job stops at once.
        stale = run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np",
                     str(w), "-x", "PATH", "-x", "RANK=0", "-x",
                     f"WORLD_SIZE={w}", "-x", f"MASTER_PORT={free_port()}",
                     binary] + common, "mpirun with RANK=0 in the shell",
                    expect=None, timeout=120)
        said = stale.stdout + stale.stderr
        if stale.returncode == 0 or \
                "rank 0 was claimed by two processes: " not in said:
            fail(f"mpirun with RANK=0 in the shell: exit {stale.returncode},"
                 f" no claim named:\n{said[-3000:]}")
        results_notes.append("two rank 0s are named")
        # Two mpirun jobs on one port keep to their own runs (Open MPI's
        # job id is in every store key). Job A, one process as rank 0 of
        # 2, serves the store and waits; job B's rank 0 cannot serve it
        # and says so, and B's rank 1, reaching A's store, joins nothing
        # of A's: A still waits for its own rank 1, and times out.
        port = free_port()
        first = subprocess.Popen(
            [mpirun, "--allow-run-as-root", "-np", "1", "-x", "PATH", "-x",
             "RANK=0", "-x", "WORLD_SIZE=2", "-x", f"MASTER_PORT={port}",
             binary, "--collective-timeout=10"] + common,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 60
        while not port_open(port):
            if first.poll() is not None or time.time() > deadline:
                first.kill()
                fail(f"job A never served port {port}: "
                     f"{first.communicate()[0][-2000:]}")
            time.sleep(0.1)
        second = run([mpirun, "--allow-run-as-root", "--oversubscribe",
                      "-np", "2", "-x", "PATH", "-x", f"MASTER_PORT={port}",
                      binary] + common, "a second mpirun job on the port",
                     expect=None, timeout=120)
        said = second.stdout + second.stderr
        want = f"rank 0 cannot serve the rendezvous store on port {port} " \
            "(set MASTER_PORT to a free port)"
        if second.returncode == 0 or want not in said:
            first.kill()
            fail(f"a second mpirun job on port {port}: exit "
                 f"{second.returncode}, wanted '{want}':\n{said[-3000:]}")
        try:
            out = first.communicate(timeout=120)[0]
        except subprocess.TimeoutExpired:
            first.kill()
            fail("job A still running 120 s after a 10 s rendezvous timeout")
        if first.returncode == 0 or "rank 1 never joined" not in out:
            fail(f"job A joined job B's rank 1 (exit {first.returncode}):\n"
                 f"{out[-3000:]}")
        results_notes.append("two jobs on one port keep apart")
    elif a.require_mpirun:
        fail("mpirun is not installed (scripts/setup.sh installs openmpi-bin)")
    first = results["sinter-launch"]
    for name, r in results.items():
        if r != first or len(r) != n:
            fail(f"{name} gives losses {r}, sinter-launch {first}")
    print(f"ok: {', '.join(results)} give bit-identical losses on {w} ranks;"
          f" threads follow SINTER_CPU_BIND"
          + "".join(f"; {note}" for note in results_notes))
