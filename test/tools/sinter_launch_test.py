#!/usr/bin/env python3
"""Tests of sinter-launch on a fake rank (Inputs/launch_worker.py).

usage: sinter_launch_test.py LAUNCHER WORK_DIR

- env: each rank's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
  GROUP_RANK, MASTER_ADDR/PORT (one free port for all), SINTER_RUN_ID (one
  per launch, fresh each launch), OMP_NUM_THREADS (its CPUs, or cores // N
  unbound, unless set);
  with --nnodes 2 --node-rank 1 the global ranks 2 and 3, and a run id both
  nodes derive alike; a SINTER_RUN_ID in the environment is kept.
- cpu binding: with 2 ranks and 2 CPUs or more, each rank runs on CPUs of
  its own (disjoint, together the launcher's), says so (SINTER_CPU_BIND)
  and gets as many threads; --cpu-bind none, one rank, or fewer CPUs than
  ranks (the launcher under a 1-CPU mask) bind nothing; the split itself
  on made-up topologies (hyperthreads kept together, packages in order,
  uneven counts, logical CPUs when cores run out, no /sys).
- output: rank 0 writes to the launcher's own stdout (byte for byte, \\r
  kept; a terminal stays one), the others' lines come whole, prefixed
  "[rank R] ", \\r ending lines, last partial lines printed.
- failure: the first rank to fail is named in one line, the others get
  SIGTERM (SIGKILL after --grace-seconds), the launcher exits with its code
  (128 + signal when killed).
- signals: Ctrl-C at the terminal (SIGINT to the launcher's process group)
  reaches each rank exactly once; SIGTERM is forwarded; a second Ctrl-C
  SIGKILLs.
- restarts: with --max-restarts a failed job starts every rank again
  (TORCHELASTIC_RESTART_COUNT counts them), up to the limit, then exits
  with the last failure's code; a Ctrl-C'd job is not restarted.
- elastic (--nnodes=1:2): two nodes meet in one round, numbered in the
  order they joined, node 0's address and port for every rank; a node with
  another -n is refused; a node that never meets MIN nodes gives up after
  --join-seconds.
- logs: --log-dir keeps each rank's stdout and stderr byte for byte in
  DIR/attempt_N/rank_R/, instead of the console (--redirects, default
  both) or besides it (--tee); a restart gets its own attempt directory.
- usage: one "sinter-launch: ..." line, exit 2, nothing started; --help.
Prints "N passed, M failed" and exits non-zero on any failure.
"""

import json
import os
import pty
import shutil
import signal
import subprocess
import sys
import time

LAUNCHER, WORK = os.path.abspath(sys.argv[1]), sys.argv[2]
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs",
                      "launch_worker.py")
passed, failed = 0, 0


def check(condition, what):
    global passed, failed
    if condition:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def case(name):
    d = os.path.join(WORK, name)
    os.makedirs(d)
    return d


def baseEnv(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "SINTER_RUN_ID")}
    env.update(extra)
    return env


def command(out, flags, specs):
    return [LAUNCHER, *flags, "--", sys.executable, WORKER, out, *specs]


def start(out, flags, specs, env=None, **kw):
    # A session of its own, like a shell's foreground job: killpg then
    # delivers what a Ctrl-C at the terminal delivers.
    kw.setdefault("stdout", subprocess.PIPE)
    return subprocess.Popen(command(out, flags, specs), env=env or baseEnv(),
                            stderr=subprocess.PIPE, start_new_session=True,
                            **kw)


def finish(p, out, timeout=15):
    """Waits for a launch: (exit code, stdout, stderr); None on a hang."""
    try:
        so, se = p.communicate(timeout=timeout)
        return p.returncode, (so or b"").decode(), se.decode()
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # the launcher
        for name in os.listdir(out):  # and the sleeping ranks it left
            if name.startswith("ready-"):
                try:
                    os.kill(int(open(os.path.join(out, name)).read()),
                            signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        p.communicate()
        return None, "", "(the launch hung)"


def run(out, flags, specs, env=None):
    """Runs a launch to its end: (exit code, stdout, stderr, seconds)."""
    began = time.monotonic()
    code, so, se = finish(start(out, flags, specs, env), out)
    return code, so, se, time.monotonic() - began


def written(path):
    # A worker's open() creates the file empty and its write follows: a
    # file that merely exists may still lose its line to a SIGKILL.
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False


def waitFor(paths, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(written(p) for p in paths):
            return True
        time.sleep(0.01)
    return False


def readLines(out, name):
    p = os.path.join(out, name)
    return open(p).read().split() if os.path.exists(p) else []


def envOf(out, rank):
    p = os.path.join(out, f"env-{rank}.json")
    check(os.path.exists(p), f"{p} written")
    return json.load(open(p)) if os.path.exists(p) else {}


def short(x):
    x = repr(x)
    return x if len(x) < 400 else x[:200] + " ... " + x[-200:]


def failureLines(err):
    return [l for l in err.splitlines() if "(first failure)" in l]


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
# lit's workers ignore SIGINT, and sinter-launch keeps ignored signals
# ignored (as nohup and `&` mean them), so give the launches the default.
signal.signal(signal.SIGINT, signal.SIG_DFL)
cores = len(os.sched_getaffinity(0))

# ---- env: one node ---------------------------------------------------------
out = case("env")
code, _, err, _ = run(out, ["-n", "3"], ["*=env"])
check(code == 0, f"env: exit {code}: {err}")
envs = [envOf(out, r) for r in range(3)]
for r, e in enumerate(envs):
    check((e.get("RANK"), e.get("LOCAL_RANK")) == (str(r), str(r)),
          f"env: rank {r} RANK/LOCAL_RANK {e}")
    check([e.get(k) for k in ("WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                              "GROUP_WORLD_SIZE")] == ["3", "3", "0", "1"],
          f"env: rank {r} sizes {e}")
    check(e.get("MASTER_ADDR") == "127.0.0.1", f"env: MASTER_ADDR {e}")
    # Else a Ctrl-C at the terminal would reach it twice (directly and
    # forwarded), and the training binary stops at once on a second one.
    check(e.get("in_launcher_group") is False,
          f"env: rank {r} has a process group of its own")
    threads = (len(e.get("cpus", [])) if e.get("SINTER_CPU_BIND")
               else max(1, cores // 3))
    check(e.get("OMP_NUM_THREADS") == str(threads),
          f"env: OMP_NUM_THREADS for {cores} cores: {e}")
check(len({e.get("MASTER_PORT") for e in envs}) == 1 and
      1024 <= int(envs[0].get("MASTER_PORT") or 0) <= 65535,
      f"env: one port for all ranks: {[e.get('MASTER_PORT') for e in envs]}")
ids = {e.get("SINTER_RUN_ID") for e in envs}
check(len(ids) == 1 and all(ids), f"env: one run id: {ids}")
out2 = case("env-again")
run(out2, ["-n", "1"], ["*=env"])
check(envOf(out2, 0).get("SINTER_RUN_ID") not in ids, "env: a fresh run id")
check(envOf(out2, 0).get("OMP_NUM_THREADS") == str(cores),
      "env: OMP_NUM_THREADS = every core for -n 1")

out = case("env-user")
code, _, err, _ = run(out, ["-n", "2", "--master-port", "29611"], ["*=env"],
                      env=baseEnv(OMP_NUM_THREADS="7", SINTER_RUN_ID="mine"))
check(code == 0, f"env-user: exit {code}: {err}")
for r in range(2):
    e = envOf(out, r)
    check(e.get("OMP_NUM_THREADS") == "7", f"env-user: OMP_NUM_THREADS {e}")
    check(e.get("SINTER_RUN_ID") == "mine", f"env-user: SINTER_RUN_ID {e}")
    check(e.get("MASTER_PORT") == "29611", f"env-user: MASTER_PORT {e}")

# ---- env: node 1 of 2 (torchrun's spellings) --------------------------------
nodeFlags = ["--nnodes", "2", "--master_addr", "10.1.2.3", "--master-port",
             "29555"]
out = case("multi-node")
code, _, err, _ = run(out, ["--nproc_per_node", "2", "--node_rank", "1",
                            *nodeFlags], ["*=env"])
check(code == 0, f"multi-node: exit {code}: {err}")
check(sorted(os.listdir(out)) == ["env-2.json", "env-3.json"],
      f"multi-node: global ranks 2 and 3 ran: {sorted(os.listdir(out))}")
for local, rank in ((0, 2), (1, 3)):
    e = envOf(out, rank)
    want = {"RANK": str(rank), "LOCAL_RANK": str(local), "WORLD_SIZE": "4",
            "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1",
            "GROUP_WORLD_SIZE": "2", "MASTER_ADDR": "10.1.2.3",
            "MASTER_PORT": "29555"}
    check(all(e.get(k) == v for k, v in want.items()),
          f"multi-node: rank {rank}: {e} lacks {want}")
node0 = case("multi-node-0")
run(node0, ["-n", "2", "--node-rank", "0", *nodeFlags], ["*=env"])
runIds = {envOf(d, r).get("SINTER_RUN_ID") for d, r in
          ((out, 2), (out, 3), (node0, 0), (node0, 1))}
check(len(runIds) == 1, f"multi-node: both nodes derive one run id: {runIds}")
out = case("multi-node-port")
run(out, ["-n", "1", "--nnodes", "2", "--node-rank", "1", "--master-addr",
          "h"], ["*=env"])
check(envOf(out, 1).get("MASTER_PORT") == "29500",
      "multi-node: torchrun's default port 29500")

# ---- cpu binding -----------------------------------------------------------
allCpus = sorted(os.sched_getaffinity(0))


def onCpus(cpus):
    """preexec_fn: the launcher may run on `cpus` only (as under taskset)."""
    return lambda: os.sched_setaffinity(0, cpus)


out = case("bind")
code, _, err, _ = run(out, ["-n", "2"], ["*=env"],
                      env=baseEnv(SINTER_CPU_BIND="none"))
check(code == 0, f"bind: exit {code}: {err}")
envs = [envOf(out, r) for r in range(2)]
sets = [set(e.get("cpus", [])) for e in envs]
if cores >= 2:
    check(all(sets) and not sets[0] & sets[1] and
          sorted(sets[0] | sets[1]) == allCpus,
          f"bind: disjoint CPUs that cover the launcher's {allCpus}: "
          f"{[sorted(x) for x in sets]}")
    for e in envs:
        check(e.get("SINTER_CPU_BIND") == "cores" and
              e.get("OMP_NUM_THREADS") == str(len(e.get("cpus", []))),
              f"bind: a bound rank says so and gets a thread per CPU: {e}")
out = case("bind-none")
run(out, ["-n", "2", "--cpu-bind", "none"], ["*=env"],
    env=baseEnv(SINTER_CPU_BIND="cores"))
for r in range(2):
    e = envOf(out, r)
    check(e.get("cpus") == allCpus and e.get("SINTER_CPU_BIND") is None,
          f"bind: --cpu-bind none leaves rank {r} on every CPU, and says "
          f"nothing (an outer launcher's SINTER_CPU_BIND dropped): {e}")
out = case("bind-one")
run(out, ["-n", "1"], ["*=env"])
e = envOf(out, 0)
check(e.get("cpus") == allCpus and e.get("SINTER_CPU_BIND") is None,
      f"bind: one rank keeps every CPU: {e}")
out = case("bind-fewer-cpus")
code, _, err = finish(start(out, ["-n", "2"], ["*=env"],
                            preexec_fn=onCpus(allCpus[:1])), out)
check(code == 0, f"bind-fewer-cpus: exit {code}: {err}")
for r in range(2):
    e = envOf(out, r)
    check(e.get("cpus") == allCpus[:1] and e.get("SINTER_CPU_BIND") is None
          and e.get("OMP_NUM_THREADS") == "1",
          f"bind: 2 ranks on the launcher's 1 CPU are not bound: {e}")

# The split, on made-up topologies: the launcher's own functions.
import importlib.machinery  # noqa: E402
import importlib.util  # noqa: E402
loader = importlib.machinery.SourceFileLoader("sinter_launch", LAUNCHER)
launcher = importlib.util.module_from_spec(
    importlib.util.spec_from_loader("sinter_launch", loader))
loader.exec_module(launcher)


def fakeSysfs(name, siblings, packages):
    """A /sys/devices/system/cpu of CPUs whose hyperthread siblings and
    package are given per CPU."""
    root = case(name)
    for c, sib in siblings.items():
        d = os.path.join(root, f"cpu{c}", "topology")
        os.makedirs(d)
        open(os.path.join(d, "thread_siblings_list"), "w").write(sib + "\n")
        open(os.path.join(d, "physical_package_id"), "w").write(
            f"{packages[c]}\n")
    return root


# Two packages of two cores of two hyperthreads; Linux numbers the second
# thread of every core after all the first ones.
sysfs = fakeSysfs("topology-ht",
                  {0: "0,4", 4: "0,4", 1: "1,5", 5: "1,5", 2: "2,6",
                   6: "2,6", 3: "3,7", 7: "3,7"},
                  {0: 0, 4: 0, 1: 0, 5: 0, 2: 1, 6: 1, 3: 1, 7: 1})
cores8 = launcher.physicalCores(range(8), sysfs)
check(cores8 == [[0, 4], [1, 5], [2, 6], [3, 7]],
      f"split: hyperthreads grouped by core: {cores8}")
for n, want in (
        (2, [[0, 1, 4, 5], [2, 3, 6, 7]]),  # a package each
        (4, [[0, 4], [1, 5], [2, 6], [3, 7]]),  # a whole core each
        (3, [[0, 4], [1, 5], [2, 3, 6, 7]]),  # uneven: the last gets 2
        (8, [[0], [4], [1], [5], [2], [6], [3], [7]]),  # threads of cores
        (9, None)):
    got = launcher.cpuShares(cores8, n)
    check(got == want, f"split: 8 CPUs among {n} ranks: {got} != {want}")
masked = launcher.physicalCores([0, 1, 4], sysfs)
check(masked == [[0, 4], [1]] and
      launcher.cpuShares(masked, 2) == [[0, 4], [1]],
      f"split: only the launcher's CPUs (taskset -c 0,1,4): {masked}")
# Packages listed out of order are still taken in order.
sysfs = fakeSysfs("topology-packages", {0: "0", 1: "1", 2: "2", 3: "3"},
                  {0: 1, 1: 0, 2: 1, 3: 0})
check(launcher.cpuShares(launcher.physicalCores(range(4), sysfs), 2) ==
      [[1, 3], [0, 2]], "split: package 0's cores first")
check(launcher.physicalCores([0, 1, 2], case("topology-none")) ==
      [[0], [1], [2]], "split: no /sys topology: every CPU a core")
check(launcher.cpuList("0-2,5,7-8") == [0, 1, 2, 5, 7, 8],
      "split: /sys CPU lists")

# ---- output ----------------------------------------------------------------
out = case("output")
stdoutPath = os.path.join(out, "stdout.txt")
with open(stdoutPath, "wb") as so:
    code, _, err = finish(start(out, ["-n", "3"], ["*=output"], stdout=so),
                          out)
check(code == 0, f"output: exit {code}")
got = open(stdoutPath, "rb").read().decode()
rank0 = "progress 1\rprogress 2\rdone 0\n"
check(got.startswith(rank0), f"output: rank 0's bytes first, as written: "
      f"{got[:60]!r}")
lines = got[len(rank0):].split("\n")
check(lines[-1] == "", f"output: ends in a newline: {lines[-1]!r}")
for rank in (1, 2):
    prefix = f"[rank {rank}] "
    mine = [l[len(prefix):] for l in lines if l.startswith(prefix)]
    want = [f"long {rank} " + str(rank) * 2000, "a", "b", "step 1", "step 2",
            "", "c", "last"]
    check(mine == want, f"output: rank {rank}'s lines {short(mine)}")
check(all(l.startswith(("[rank 1] ", "[rank 2] ")) for l in lines[:-1]),
      f"output: every other line is whole and prefixed: {short(lines)}")
check(err.startswith("warn 0\n"), f"output: rank 0's stderr as written: "
      f"{err!r}")
for rank in (1, 2):
    check(f"[rank {rank}] warn {rank}\n" in err and
          f"[rank {rank}] tail {rank}\n" in err,
          f"output: rank {rank}'s stderr prefixed: {err!r}")

out = case("output-files")
run(out, ["-n", "2"], ["*=env"])
check(envOf(out, 1).get("stdout", "").startswith("pipe:"),
      "output: rank 1 writes to a pipe")
# Rank 0 on the launcher's terminal: its progress line stays a terminal's.
out = case("tty")
master, slave = pty.openpty()
p = subprocess.Popen(command(out, ["-n", "2"], ["*=env"]), stdin=slave,
                     stdout=slave, stderr=slave, env=baseEnv())
os.close(slave)
while True:  # drain the terminal until the launcher is gone
    try:
        if not os.read(master, 4096):
            break
    except OSError:
        break
os.close(master)
check(p.wait(timeout=20) == 0, "tty: exit 0")
e0, e1 = envOf(out, 0), envOf(out, 1)
check(e0.get("stdout_tty") and e0.get("stderr_tty"),
      f"tty: rank 0 on the terminal {e0}")
check(not e1.get("stdout_tty") and not e1.get("stderr_tty"),
      f"tty: rank 1 through pipes {e1}")

# ---- failure ---------------------------------------------------------------
out = case("fail")
code, _, err, took = run(out, ["-n", "3"],
                         ["1=exit:6:0.3", "*=sleep:0"])
check(code == 6, f"fail: exit {code}, not rank 1's 6")
check(failureLines(err) == ["sinter-launch: rank 1 exited with code 6 "
                            "(first failure); stopping the others"],
      f"fail: one line naming rank 1: {err!r}")
for rank in (0, 2):
    check(readLines(out, f"signals-{rank}") == ["SIGTERM"],
          f"fail: rank {rank} got one SIGTERM: "
          f"{readLines(out, f'signals-{rank}')}")
check(took < 10, f"fail: the others stopped at once ({took:.1f} s)")

# ---- the launcher itself killed ---------------------------------------------
out = case("launcher-killed")
p = start(out, ["-n", "2"], ["*=sleep:0"])
check(waitFor([os.path.join(out, f"ready-{r}") for r in (0, 1)]),
      "launcher-killed: both ranks started")
os.kill(p.pid, signal.SIGKILL)
p.communicate()
got = waitFor([os.path.join(out, f"signals-{r}") for r in (0, 1)])
for rank in (0, 1):
    signals = readLines(out, f"signals-{rank}")
    check(got and signals and set(signals) == {"SIGTERM"},
          f"launcher-killed: rank {rank} got SIGTERM when the launcher died: "
          f"{readLines(out, f'signals-{rank}')}")
for name in os.listdir(out):  # whatever is left
    if name.startswith("ready-"):
        try:
            os.kill(int(open(os.path.join(out, name)).read()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass

out = case("fail-signal")
code, _, err, _ = run(out, ["-n", "2"], ["1=kill:SIGKILL:0.3", "*=sleep:0"])
check(code == 137, f"fail-signal: exit {code}, not 128 + 9")
check(failureLines(err) == ["sinter-launch: rank 1 was killed by SIGKILL "
                            "(first failure); stopping the others"],
      f"fail-signal: one line naming the signal: {err!r}")

out = case("fail-several")
# Rank 2 fails first; rank 1, told to stop, exits 7 as well.
code, _, err, _ = run(out, ["-n", "3"], ["2=exit:5:0.2", "*=sleep:7"])
check(code == 5, f"fail-several: exit {code}, not the first failure's 5")
check(failureLines(err) == ["sinter-launch: rank 2 exited with code 5 "
                            "(first failure); stopping the others"],
      f"fail-several: only the first named: {err!r}")

out = case("fail-consequence")
# Rank 0 exits 3 (it saw a peer die) before rank 1's own failure is seen:
# rank 1 is named, not the survivor that noticed first.
code, _, err, took = run(out, ["-n", "3"],
                         ["0=exit:3:0.1", "1=late:5:0.8", "*=sleep:0"])
check(code == 5, f"fail-consequence: exit {code}, not rank 1's 5")
check(failureLines(err) == ["sinter-launch: rank 1 exited with code 5 "
                            "(first failure)"],
      f"fail-consequence: rank 1 named, not rank 0: {err!r}")
check(readLines(out, "signals-2") == ["SIGTERM"],
      "fail-consequence: rank 2 stopped when rank 0 exited")

out = case("fail-consequence-alone")
# Only consequences (the failed peer is on another node): the first is
# named once every rank here has exited, without waiting longer.
code, _, err, took = run(out, ["-n", "2"], ["0=exit:3:0.1", "*=sleep:0"])
check(code == 3, f"fail-consequence-alone: exit {code}, not rank 0's 3")
check(failureLines(err) == ["sinter-launch: rank 0 exited with code 3 "
                            "(first failure)"],
      f"fail-consequence-alone: rank 0 named: {err!r}")
check(took < 1.9, f"fail-consequence-alone: named once all exited "
      f"({took:.1f} s)")

out = case("fail-grace")
code, _, err, took = run(out, ["-n", "2", "--grace-seconds", "0.5"],
                         ["1=exit:4:0.2", "0=stubborn"])
check(code == 4, f"fail-grace: exit {code}")
check(readLines(out, "signals-0") == ["SIGTERM"] and
      not os.path.exists(os.path.join(out, "timeout-0")),
      "fail-grace: rank 0 got SIGTERM, then SIGKILL before its sleep ended")
check(took < 8, f"fail-grace: killed after the grace period ({took:.1f} s)")

# ---- signals ---------------------------------------------------------------
out = case("sigint")
p = start(out, ["-n", "2"], ["*=sleep:0"])
check(waitFor([os.path.join(out, f"ready-{r}") for r in (0, 1)]),
      "sigint: ranks ready")
os.killpg(p.pid, signal.SIGINT)  # Ctrl-C at the terminal
code, so, se = finish(p, out)
check(code == 0, f"sigint: exit {code}: {se}")
for rank in (0, 1):
    check(readLines(out, f"signals-{rank}") == ["SIGINT"],
          f"sigint: rank {rank} got SIGINT exactly once: "
          f"{readLines(out, f'signals-{rank}')}")
check("rank 0 got SIGINT\n" in so.splitlines(keepends=True) and
      "[rank 1] rank 1 got SIGINT\n" in so.splitlines(keepends=True),
      f"sigint: both ranks reported it: {so!r}")
check(not failureLines(se), f"sigint: no failure line: {se!r}")

out = case("sigint-130")
p = start(out, ["-n", "2"], ["*=sleep:130"])
waitFor([os.path.join(out, f"ready-{r}") for r in (0, 1)])
os.kill(p.pid, signal.SIGINT)  # kill -INT to the launcher alone
code, _, se = finish(p, out)
check(code == 130, f"sigint-130: exit {code}, as the ranks")
check(not failureLines(se),
      f"sigint-130: an exit after Ctrl-C is no failure: {se!r}")
check(all(readLines(out, f"signals-{r}") == ["SIGINT"] for r in (0, 1)),
      "sigint-130: forwarded to every rank once")

out = case("sigterm")
p = start(out, ["-n", "2"], ["*=sleep:0"])
waitFor([os.path.join(out, f"ready-{r}") for r in (0, 1)])
p.terminate()
code, _, _ = finish(p, out)
check(code == 0, f"sigterm: exit {code}")
check(all(readLines(out, f"signals-{r}") == ["SIGTERM"] for r in (0, 1)),
      "sigterm: forwarded as SIGTERM to every rank")

out = case("sigint-twice")
p = start(out, ["-n", "2"], ["*=stubborn"])
waitFor([os.path.join(out, f"ready-{r}") for r in (0, 1)])
began = time.monotonic()
os.killpg(p.pid, signal.SIGINT)
waitFor([os.path.join(out, f"signals-{r}") for r in (0, 1)])
os.killpg(p.pid, signal.SIGINT)
code, _, se = finish(p, out)
check(code == 137, f"sigint-twice: exit {code}, not SIGKILL's")
check(time.monotonic() - began < 5, "sigint-twice: killed at once")
check(all(readLines(out, f"signals-{r}") == ["SIGINT"] for r in (0, 1)),
      "sigint-twice: one SIGINT each, then SIGKILL")
check(not failureLines(se), f"sigint-twice: no failure line {se!r}")

# ---- restarts (--max-restarts) ----------------------------------------------
# Rank 1 fails on the first start only: the failure is named, every rank
# starts again with TORCHELASTIC_RESTART_COUNT=1, a fresh port and run id,
# and the job exits 0.
out = case("restart")
code, _, err, _ = run(out, ["-n", "2", "--max-restarts", "2",
                            "--grace-seconds", "5"], ["1=first:5:0.3", "*=env"])
check(code == 0, f"restart: exit {code}: {err}")
check(len(failureLines(err)) == 1 and "rank 1 exited with code 5" in err,
      f"restart: the failure named once: {err!r}")
check("sinter-launch: restarting every rank (restart 1 of 2)" in err and
      "restart 2 of" not in err, f"restart: one restart announced: {err!r}")
restarted = [envOf(out, r) for r in range(2)]
check(all(e.get("TORCHELASTIC_RESTART_COUNT") == "1" for e in restarted),
      f"restart: TORCHELASTIC_RESTART_COUNT=1 after it: {restarted}")
# Rank 0's env from the first start was overwritten by the restart's; the
# first start's port and run id are in the launcher's first start only, so
# compare with a launch that does not restart.
out2 = case("restart-none")
code, _, err, _ = run(out2, ["-n", "1", "--max-restarts", "2"], ["*=env"])
check(code == 0 and "restarting" not in err, f"restart-none: {code} {err!r}")
check(envOf(out2, 0).get("TORCHELASTIC_RESTART_COUNT") == "0",
      "restart-none: TORCHELASTIC_RESTART_COUNT=0 on the first start")

# Failing every time: one restart, then the failure's own code.
out = case("restart-exhausted")
code, _, err, _ = run(out, ["-n", "2", "--max-restarts", "1",
                            "--grace-seconds", "5"], ["1=exit:4:0.2",
                                                      "*=sleep:0"])
check(code == 4, f"restart-exhausted: exit {code}, not the rank's 4: {err}")
check(len(failureLines(err)) == 2 and err.count("restarting every rank") == 1,
      f"restart-exhausted: two failures, one restart: {err!r}")

# A job stopped by Ctrl-C is not restarted.
out = case("restart-sigint")
p = start(out, ["-n", "2", "--max-restarts", "3"], ["*=sleep:130"])
waitFor([os.path.join(out, f"ready-{r}") for r in (0, 1)])
os.killpg(p.pid, signal.SIGINT)
code, _, err = finish(p, out)
check(code == 130 and "restarting" not in err,
      f"restart-sigint: exit {code}, no restart: {err!r}")

# ---- logs: --log-dir, --redirects, --tee -----------------------------------
rank1Out = ("long 1 " + "1" * 2000 + "\na\rb\r\n\rstep 1\rstep 2\n\nc\r"
            "\nlast")


def logOf(d, attempt, rank, stream):
    p = os.path.join(d, f"attempt_{attempt}", f"rank_{rank}", f"{stream}.log")
    return open(p, "rb").read().decode() if os.path.exists(p) else None


out = case("logs-tee")
logs = os.path.join(out, "logs")
code, so, err, _ = run(out, ["-n", "2", "--log-dir", logs, "--tee", "3"],
                       ["*=output"])
check(code == 0 and logOf(logs, 0, 0, "stdout") ==
      "progress 1\rprogress 2\rdone 0\n" and
      logOf(logs, 0, 0, "stderr") == "warn 0\n" and
      logOf(logs, 0, 1, "stdout") == rank1Out and
      logOf(logs, 0, 1, "stderr") == "warn 1\ntail 1",
      f"logs-tee: each rank's streams byte for byte: "
      f"{short([logOf(logs, 0, r, x) for r in (0, 1) for x in ('stdout', 'stderr')])}")
check("progress 1\nprogress 2\ndone 0\n" in so and
      "[rank 1] step 2\n" in so and "[rank 1] warn 1\n" in err and
      "warn 0\n" in err,
      f"logs-tee: the console too, rank 0 untagged: {short(so)} {short(err)}")
out = case("logs-redirect")
logs = os.path.join(out, "logs")
code, so, err, _ = run(out, ["-n", "2", "--log-dir", logs], ["*=output"])
check(code == 0 and so == "" and err == "" and
      logOf(logs, 0, 1, "stdout") == rank1Out,
      f"logs-redirect: files only by default: {code} {short(so)} {short(err)}")
out = case("logs-stdout")
logs = os.path.join(out, "logs")
code, so, err, _ = run(out, ["-n", "2", "--log-dir", logs, "--redirects",
                             "1"], ["*=output"])
check(code == 0 and so == "" and "[rank 1] warn 1\n" in err and
      logOf(logs, 0, 1, "stderr") == "warn 1\ntail 1",
      f"logs-stdout: stdout to files only, stderr to both: {short(err)}")
out = case("logs-restart")
logs = os.path.join(out, "logs")
code, _, err, _ = run(out, ["-n", "1", "--log-dir", logs,
                            "--max-restarts", "1"], ["*=first:3:0"])
check(code == 0 and os.path.isdir(os.path.join(logs, "attempt_0", "rank_0"))
      and os.path.isdir(os.path.join(logs, "attempt_1", "rank_0")),
      f"logs-restart: a directory per attempt: {code} {err!r}")

# ---- elastic: --nnodes=MIN:MAX ---------------------------------------------
def elastic(out, i, port, n=1, extra=(), spec="*=env"):
    """Node i of an elastic job on this machine (address 127.0.0.(i+1))."""
    return start(out, ["-n", str(n), "--nnodes=1:2", "--master-addr",
                       "127.0.0.1", "--master-port", str(port),
                       "--last-call-seconds=2", *extra], [spec],
                 env=baseEnv(SINTER_HOST=f"127.0.0.{i + 1}"))


def freePort():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


out = case("elastic")
port = freePort()
first = elastic(out, 0, port)
time.sleep(0.3)
second = elastic(out, 1, port)
results = [finish(p, out, timeout=30) for p in (first, second)]
check(all(r[0] == 0 for r in results),
      f"elastic: both nodes exit 0: {short(results)}")
e0, e1 = envOf(out, 0), envOf(out, 1)
check(e0.get("WORLD_SIZE") == "2" and e1.get("WORLD_SIZE") == "2" and
      e0.get("GROUP_RANK") == "0" and e1.get("GROUP_RANK") == "1" and
      e0.get("GROUP_WORLD_SIZE") == "2" and
      e0.get("TORCHELASTIC_RESTART_COUNT") == "0" and
      e0.get("MASTER_ADDR") == "127.0.0.1" == e1.get("MASTER_ADDR") and
      e0.get("MASTER_PORT") == e1.get("MASTER_PORT") != str(port) and
      e0.get("SINTER_RUN_ID") == e1.get("SINTER_RUN_ID"),
      f"elastic: one round of 2 nodes, node 0's address and port for the "
      f"ranks: {e0} {e1}")
check("round 0: 2 nodes, 2 ranks; this is node 0" in results[0][2] and
      "round 0: 2 nodes, 2 ranks; this is node 1" in results[1][2],
      f"elastic: each node says its round: {short(results)}")

# A node with another -n is refused; one that cannot meet MIN nodes gives up.
out = case("elastic-nproc")
port = freePort()
first = elastic(out, 0, port, spec="*=sleep:0")
check(waitFor([os.path.join(out, "ready-0")], 20), "elastic-nproc: started")
code, _, err = finish(elastic(out, 1, port, n=2), out, timeout=30)
check(code == 1 and "this node runs 2 rank(s), the job's nodes run 1 each"
      in err, f"elastic-nproc: refused in one line: {code} {err!r}")
os.killpg(first.pid, signal.SIGINT)
finish(first, out, timeout=30)
out = case("elastic-timeout")
began = time.monotonic()
code, _, err = finish(start(out, ["--nnodes=2:2", "--master-addr",
                                  "127.0.0.1", "--master-port",
                                  str(freePort()), "--join-seconds=1"],
                            ["*=env"]), out, timeout=30)
check(code == 1 and "no round of enough nodes within 1 s" in err and
      time.monotonic() - began < 10 and not os.listdir(out),
      f"elastic-timeout: {code} {err!r}")

# ---- usage -----------------------------------------------------------------
out = case("usage")
plain = os.path.join(out, "not-executable")
open(plain, "w").close()
worker = [sys.executable, WORKER, out, "*=env"]
for args, what in (
        ([], "no command"),
        (["-n", "2"], "no command"),
        (["-n", "0", *worker], "-n must be a positive integer"),
        (["-n", "two", *worker], "-n must be a positive integer"),
        (["--nnodes", "0", *worker], "--nnodes must be a positive integer"),
        (["--nnodes", "2", "--node-rank", "2", "--master-addr", "h",
          *worker], "out of range"),
        (["--node-rank", "-1", *worker], "out of range"),
        (["--nnodes", "2", "--node-rank", "1", *worker], "--master-addr"),
        (["--master-port", "70000", *worker], "--master-port"),
        (["--grace-seconds", "soon", *worker], "--grace-seconds"),
        (["--max-restarts", "-1", *worker], "--max-restarts"),
        (["--max-restarts", "many", *worker], "--max-restarts"),
        (["--tee", "3", *worker], "--tee needs --log-dir"),
        (["--log-dir", out, "--redirects", "4", *worker],
         "--redirects must be 0, 1, 2 or 3"),
        (["--nnodes", "3:2", "--master-addr", "h", *worker],
         "MIN is above MAX"),
        (["--nnodes", "0:2", "--master-addr", "h", *worker],
         "--nnodes MIN must be a positive integer"),
        (["--nnodes", "1:2", *worker], "needs --master-addr"),
        (["--nnodes", "1:2", "--node-rank", "0", "--master-addr", "h",
          *worker], "--node-rank is not for an elastic job"),
        (["--nnodes", "1:2", "--master-addr", "h", "--last-call-seconds",
          "-1", *worker], "--last-call-seconds"),
        (["--bogus", *worker], "--bogus"),
        (["-n", "2", "--cpu-bind", "socket", *worker], "--cpu-bind"),
        (["-n", "2", os.path.join(out, "missing")], "no such file"),
        (["-n", "2", plain], "not executable"),
        (["-n", "2", "sinter-no-such-command"], "not found in PATH"),
        (["-n", "2", out], "is a directory")):
    r = subprocess.run([LAUNCHER, *args], capture_output=True, text=True,
                       env=baseEnv(), timeout=20)
    lines = r.stderr.splitlines()
    check(r.returncode == 2 and len(lines) == 1 and
          lines[0].startswith("sinter-launch: ") and what in lines[0] and
          not r.stdout,
          f"usage {args[-2:]}: exit {r.returncode}, {r.stderr!r} should be "
          f"one line with {what!r}")
check(os.listdir(out) == ["not-executable"],
      f"usage: nothing started: {os.listdir(out)}")
r = subprocess.run([LAUNCHER, "--help"], capture_output=True, text=True)
check(r.returncode == 0 and all(
    w in r.stdout for w in ("torchrun", "--nproc_per_node", "--node-rank",
                            "--master-port", "--grace-seconds", "RANK",
                            "OMP_NUM_THREADS", "SINTER_RUN_ID", "[rank ",
                            "SIGINT", "first failure", "Exit status",
                            "--max-restarts", "TORCHELASTIC_RESTART_COUNT",
                            "Elastic jobs", "--last-call-seconds",
                            "--log-dir", "--redirects", "--tee",
                            "--cpu-bind", "SINTER_CPU_BIND")),
      f"--help documents the flags, environment, output, signals, exits")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
