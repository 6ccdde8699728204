#!/usr/bin/env python3
"""A fake training rank for sinter_launch_test.py.

usage: launch_worker.py OUTDIR RANK=ACTION... (RANK a global rank or *)

The first spec naming this process's RANK (else the * one) says what it
does; files it writes go to OUTDIR, named after RANK:
  env            writes env-RANK.json (the launcher's variables, whether
                 fds 1 and 2 are terminals, what fd 1 is, the CPUs it may
                 run on), exits 0
  output         writes the lines the output case expects (see there)
  exit:C:SECS    sleeps SECS, exits with code C
  first:C:SECS   the first start (TORCHELASTIC_RESTART_COUNT 0): exit:C:SECS;
                 a restart: env
  kill:SIG:SECS  sleeps SECS, kills itself with signal SIG (e.g. SIGKILL)
  late:C:SECS    like exit, but SIGTERM does not cut the sleep short (a rank
                 whose own failure is noticed after another rank's); writes
                 ready-RANK once it ignores SIGTERM
  sleep:C        writes ready-RANK and sleeps (30 s at most); on SIGINT or
                 SIGTERM prints "rank RANK got SIG", keeps counting signals
                 for 0.25 s (a doubly delivered one lands in that window),
                 then exits with code C
  stubborn       like sleep, but after a signal sleeps on (30 s at most)
Every signal received is appended to signals-RANK, one name a line; a rank
whose sleep runs out writes timeout-RANK.

The timed failures (exit, first, kill, late) start their SECS only once
every rank that handles signals (sleep, stubborn, late) has said it is
ready (10 s at most): a SIGTERM the launcher sends to a rank still starting
up would end it by the default action, uncounted, and fail the test for
the host's slowness instead of the launcher's behaviour.
"""

import json
import os
import signal
import sys
import time

OUT = sys.argv[1]
RANK = os.environ.get("RANK", "?")
VARS = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
        "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "SINTER_RUN_ID",
        "OMP_NUM_THREADS", "TORCHELASTIC_RESTART_COUNT", "SINTER_CPU_BIND"]


def path(name):
    return os.path.join(OUT, f"{name}-{RANK}")


def action():
    specs = dict(s.split("=", 1) for s in sys.argv[2:])
    return specs.get(RANK, specs.get("*", "env")).split(":")


def awaitCatchers():
    specs = dict(s.split("=", 1) for s in sys.argv[2:])
    world = int(os.environ.get("WORLD_SIZE", "1"))
    others = [str(r) for r in range(world) if str(r) != RANK]
    catchers = [r for r in others
                if specs.get(r, specs.get("*", "env")).split(":")[0]
                in ("sleep", "stubborn", "late")]
    deadline = time.monotonic() + 10
    for r in catchers:
        ready = os.path.join(OUT, f"ready-{r}")
        while time.monotonic() < deadline:
            try:
                if os.path.getsize(ready) > 0:
                    break
            except OSError:
                pass
            time.sleep(0.01)


def env():
    report = {v: os.environ.get(v) for v in VARS}
    report["stdout_tty"] = os.isatty(1)
    report["stderr_tty"] = os.isatty(2)
    report["stdout"] = os.readlink("/proc/self/fd/1")
    report["pid"] = os.getpid()
    report["cpus"] = sorted(os.sched_getaffinity(0))
    report["in_launcher_group"] = os.getpgid(0) == os.getpgid(os.getppid())
    with open(path("env") + ".json", "w") as f:
        json.dump(report, f)


def output():
    if RANK == "0":
        os.write(1, b"progress 1\rprogress 2\rdone 0\n")
        os.write(2, b"warn 0\n")
        open(path("out-done"), "w").close()
        return
    # The other ranks start once rank 0 is done, so rank 0's bytes come
    # first and whole.
    deadline = time.monotonic() + 10
    while (not os.path.exists(os.path.join(OUT, "out-done-0"))
           and time.monotonic() < deadline):
        time.sleep(0.01)
    # One long line in many writes, at the same time as the other ranks.
    os.write(1, f"long {RANK} ".encode())
    for _ in range(40):
        os.write(1, RANK.encode() * 50)
        time.sleep(0.002)
    os.write(1, b"\na\rb\r\n\rstep 1\rstep 2\n\nc\r")
    time.sleep(0.05)
    os.write(1, b"\nlast")  # ends "c\r\n" in a second write
    os.write(2, f"warn {RANK}\ntail {RANK}".encode())
    # 'last' and 'tail' have no newline: the launcher prints them at exit.


def sleeper(code, stubborn):
    # Signals are counted as the C handler sees them, through the wakeup
    # fd (one byte each): Python's own handlers would run once for two
    # signals that land close together, hiding a double delivery.
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w)
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, lambda signum, frame: None)
    with open(path("ready"), "w") as f:
        f.write(str(os.getpid()))
    got = []
    stopAt = deadline = time.monotonic() + 30
    while time.monotonic() < min(stopAt, deadline):
        time.sleep(0.01)
        try:
            names = [signal.Signals(b).name for b in os.read(r, 64)]
        except BlockingIOError:
            continue
        with open(path("signals"), "a") as f:
            f.writelines(n + "\n" for n in names)
        if not got:
            os.write(1, f"rank {RANK} got {names[0]}\n".encode())
            if not stubborn:
                stopAt = time.monotonic() + 0.25
        got += names
    if got and not stubborn:
        sys.exit(code)
    open(path("timeout"), "w").close()


a = action()
if a[0] == "env":
    env()
elif a[0] == "output":
    output()
elif a[0] == "exit" or (a[0] == "first" and
                       os.environ.get("TORCHELASTIC_RESTART_COUNT") == "0"):
    awaitCatchers()
    time.sleep(float(a[2]))
    sys.exit(int(a[1]))
elif a[0] == "first":
    env()
elif a[0] == "late":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open(path("ready"), "w") as f:
        f.write(str(os.getpid()))
    awaitCatchers()
    time.sleep(float(a[2]))
    sys.exit(int(a[1]))
elif a[0] == "kill":
    awaitCatchers()
    time.sleep(float(a[2]))
    os.kill(os.getpid(), signal.Signals[a[1]])
elif a[0] in ("sleep", "stubborn"):
    sleeper(int(a[1]) if len(a) > 1 else 0, a[0] == "stubborn")
else:
    sys.exit(f"launch_worker.py: unknown action {a}")
