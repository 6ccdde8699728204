#!/usr/bin/env python3
"""sinter-launch: start N ranks of a training binary, torchrun-style.

usage: sinter-launch [-n N] [--nnodes M --node-rank K --master-addr A
                     [--master-port P]] [--grace-seconds S]
                     [--max-restarts R] [--cpu-bind cores|none]
                     [--] COMMAND [ARG...]
       sinter-launch [-n N] --nnodes MIN:MAX --master-addr A [--master-port P]
                     [--last-call-seconds S] [--join-seconds S] ... COMMAND

Starts N copies of COMMAND on this node (N = processes per node), gives each
the environment torchrun's standalone mode gives its workers, relays their
output, forwards Ctrl-C and SIGTERM to them, and stops them all when one
fails. Everything after COMMAND belongs to COMMAND (`sinter-launch -n 2
./train --save=ckpt --steps=100`); `--` ends the launcher's own options
where COMMAND itself starts with a dash.

Options (torchrun's name in brackets; both spellings are accepted):
  -n N, --nproc-per-node N   [--nproc_per_node] ranks on this node
                             (default 1)
  --nnodes M                 [--nnodes] nodes in the job (default 1); each
                             node runs its own sinter-launch with the same
                             -n, --nnodes, --master-addr and --master-port
  --nnodes MIN:MAX           [--nnodes] an elastic job: between MIN and MAX
                             nodes, which may leave and arrive while it
                             runs (see Elastic jobs below)
  --node-rank K              [--node_rank] this node's index, 0 <= K < M
                             (default 0)
  --master-addr A            [--master_addr] host of global rank 0; required
                             when M > 1 (default 127.0.0.1)
  --master-port P            [--master_port] its TCP port. One node: a free
                             port on 127.0.0.1 picked at launch (torchrun's
                             --standalone); several nodes: 29500
  --grace-seconds S          how long ranks told to stop (SIGTERM) get before
                             SIGKILL, e.g. to finish writing a checkpoint
                             (default 30; torchrun has no flag for it)
  --max-restarts R           [--max_restarts] when a rank fails, stop the
                             others and start every rank again, up to R
                             times (default 0). With `./train --save=DIR
                             --resume` each restart continues from DIR's
                             latest checkpoint. Several nodes: give every
                             node the same R (each node restarts its own
                             ranks; they meet again at the rendezvous)
  --last-call-seconds S      [--rdzv-conf last_call_timeout] elastic jobs:
                             how long a round waits for more nodes once MIN
                             have joined (default 30)
  --join-seconds S           [--rdzv-conf join_timeout] elastic jobs: how
                             long a node waits for a round of MIN nodes
                             before it gives up (default 600)
  --log-dir DIR              [--log-dir] also write each rank's output to
                             DIR/attempt_N/rank_R/stdout.log and stderr.log
                             (N: TORCHELASTIC_RESTART_COUNT, R: the global
                             rank), byte for byte as the rank wrote it;
                             without --redirects or --tee, every stream
  --redirects S              [--redirects] with --log-dir, the streams that
                             go to the files only, not to the console: 0
                             none, 1 stdout, 2 stderr, 3 both (default 3)
  --tee S                    [--tee] with --log-dir, the streams that go to
                             both (0 to 3, as above); a stream --tee names
                             is not redirected
  --cpu-bind cores|none      with -n above 1, bind each rank to a share of
                             the CPUs the launcher may run on (default
                             cores; see CPU binding below); none leaves the
                             scheduler free to move them

Environment of each rank (R is the local rank, 0 <= R < N):
  RANK              node_rank * N + R            (the global rank)
  WORLD_SIZE        nnodes * N
  LOCAL_RANK        R
  LOCAL_WORLD_SIZE  N
  GROUP_RANK        node_rank
  GROUP_WORLD_SIZE  nnodes
  MASTER_ADDR, MASTER_PORT
  SINTER_RUN_ID     the same for every rank of one launch: a fresh random id
                    on one node, a hash of master addr:port on several (so
                    every node agrees without talking). A SINTER_RUN_ID
                    already in the environment is passed on unchanged.
  OMP_NUM_THREADS   the CPUs the rank is bound to, or without binding the
                    usable CPUs (sched_getaffinity) // N, at least 1; unless
                    already set, in which case it is left alone
  SINTER_CPU_BIND   cores, on a rank bound to CPUs of its own (the training
                    binary then runs as many threads as it has CPUs)
  TORCHELASTIC_RESTART_COUNT
                    how many times the ranks were restarted (0, then 1 ...);
                    each restart's rendezvous has keys of its own. One node:
                    each restart also gets a fresh port and run id
The rest of the launcher's environment is passed on as it is.

CPU binding (--cpu-bind cores, the default when -n is above 1): the CPUs
the launcher may run on (sched_getaffinity: all of them, or what taskset,
a cgroup or an outer launcher allows) are grouped by physical core (the
hyperthreads of one core stay together, from /sys's topology) and the cores
split among the local ranks in order, as evenly as they go (3 cores, 2
ranks: 1 and 2); each rank is started bound to its share. Fewer cores than
ranks: the logical CPUs are split instead; fewer CPUs than ranks: no
binding. A rank bound to its own CPUs keeps its caches and never waits
behind another rank's thread on its core; Open MPI's mpirun binds the same
way (to cores for 2 ranks or fewer), torchrun not at all. Two jobs on one
machine each bind from CPU 0: give each its own CPUs (`taskset -c 4-7
sinter-launch -n 2 ...`) or --cpu-bind none.

Output: local rank 0 shares the launcher's stdin, stdout and stderr, so on
a terminal its progress line behaves exactly as when it runs alone (unless
--log-dir keeps a file of its output: then it writes to pipes, as the
others do, and its lines reach the console untagged). Every
other rank's stdout and stderr go through pipes and come out on the
launcher's stdout and stderr one whole line at a time, prefixed with
`[rank RANK] ` (the global rank); a carriage return ends a line too (a
redrawn progress line becomes one line per update), and a last line without
a newline is printed when the rank exits. Those ranks read stdin from
/dev/null.

Signals: the ranks run in sessions of their own, so a Ctrl-C at the terminal
reaches them once, through the launcher, and never twice (the training
binary treats a second interrupt as "stop now"). SIGINT is forwarded as
SIGINT: the binary finishes its step, saves (with --save) and exits. A
second Ctrl-C within 5 seconds SIGKILLs every rank; a later one is forwarded
again. SIGTERM, SIGHUP and SIGQUIT are forwarded as themselves, and ranks
still running --grace-seconds later are SIGKILLed. Each signal goes to the
rank's whole process group (a wrapper script's children get it too).

Failure: when a rank exits with a non-zero code or by a signal while nothing
has asked the ranks to stop, sinter-launch prints one line to stderr,
  sinter-launch: rank R exited with code C (first failure); stopping the others
  sinter-launch: rank R was killed by SIGKILL (first failure); stopping the others
sends SIGTERM to the other ranks and SIGKILL to those still running
--grace-seconds later. Only the first failure is named. A rank that exits
with code 3 (the training binary's status when another rank died or closed
its connection) or by a signal the launcher sent is a consequence: the
launcher stops the others at once but waits up to 2 seconds for a rank that
failed on its own, and names that one, so a survivor that noticed first is
not blamed.

Restarts (--max-restarts R): after a failure, once every rank has exited,
sinter-launch prints
  sinter-launch: restarting every rank (restart 1 of R)
and starts them all again. A job stopped by a signal the launcher forwarded
(Ctrl-C, SIGTERM) is not restarted.

Elastic jobs (--nnodes=MIN:MAX, torchrun's dynamic rendezvous): every node
runs `sinter-launch -n N --nnodes=MIN:MAX --master-addr=A [--master-port=P]
./train --save=DIR --resume ...` with the same N, MIN, MAX and address, and
no --node-rank. The launcher that can listen on A:P (default 29500) serves
the rendezvous there; the nodes meet in rounds. A round closes when MAX
nodes have joined, or MIN and then --last-call-seconds have passed; its
nodes are numbered in the order they joined, node 0's address and a port it
picked become the ranks' MASTER_ADDR and MASTER_PORT, and
TORCHELASTIC_RESTART_COUNT is the round. Each node prints
  sinter-launch: round 1: 2 nodes, 4 ranks; this is node 1
When a rank fails (on a node that dies, the others' ranks fail as they lose
it), each launcher stops its ranks and joins the next round, which counts
as a restart (--max-restarts); when a node arrives while a round with fewer
than MAX nodes runs, the running nodes stop their ranks (SIGTERM: the
binary finishes its step and saves) and every node joins the next round,
which does not count. The binary resumes from DIR's latest checkpoint at
the new world size (the global batch changes, and it says so). DIR must be
one every node sees (only rank 0 writes it). The node serving the
rendezvous must stay: when it goes, the others stop with an error naming
the address. A node that cannot get a round of MIN nodes within
--join-seconds exits 1.

Exit status: 0 when every rank exits 0; otherwise the code of the rank named as
the first failure (128 + the signal's number for a signal, as a shell reports it), the
same after a forwarded signal (the binary exits 130 after a Ctrl-C). After
restarts, the last run's. 2 for
bad usage, reported in one `sinter-launch: ...` line before anything starts:
no command, a command that does not exist or is not executable, -n or
--nnodes not a positive integer, a node rank out of range, several nodes
without --master-addr, a bad port or grace period.

torchrun equivalents:
  sinter-launch -n 4 ./train ...
      torchrun --standalone --nproc-per-node=4 ./train ...
  sinter-launch -n 4 --nnodes 2 --node-rank K --master-addr A --master-port P
      torchrun --nnodes=2 --node-rank=K --master-addr=A --master-port=P
               --nproc-per-node=4 ./train ...   (the static rendezvous)
torchrun leaves every rank's output untagged by default (all ranks' lines
mixed); here rank 0's is left as it is and only the others' are tagged.

Not done (unlike torchrun): rendezvous backends other than the launcher's
own (--rdzv-backend, etcd), a rendezvous that outlives the node serving it,
--redirects and --tee per local rank ("0:3,1:2"), --local-ranks-filter. Ranks outlive a
launcher killed by SIGKILL; stop them with the signal you would have sent.
"""

import argparse
import hashlib
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import deque

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import sinter_rendezvous as rdzv  # noqa: E402  (next to this program)

PROG = "sinter-launch"
# A second Ctrl-C within this many seconds of the first kills the ranks.
DOUBLE_INTERRUPT_SECONDS = 5.0
# torchrun's default port when several nodes meet.
DEFAULT_MULTI_NODE_PORT = 29500
# A line longer than this without a newline is printed in pieces, so that a
# rank writing no newlines cannot grow the launcher's memory without bound.
MAX_LINE_BYTES = 1 << 20
# After the last rank exits, how long to wait for its pipes to close (a
# grandchild still holding them open must not keep the launcher alive).
DRAIN_SECONDS = 2.0
# The training binary's exit status when it stopped because another rank
# died or closed its connection: a consequence, not the first failure.
PEER_FAILED = 3
# How long after a rank exits PEER_FAILED to wait for the rank whose failure
# it reports (its exit may be noticed later, or it may be on another node).
SETTLE_SECONDS = 2.0
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP,
                     signal.SIGQUIT)


class UsageError(Exception):
    pass


# ---- Command line --------------------------------------------------------


class Parser(argparse.ArgumentParser):
    def error(self, message):
        m = re.match(r"argument ([^/:]+)\S*: expected one argument", message)
        if m:
            message = f"{m.group(1)} needs a value"
        elif message.startswith("unrecognized arguments: "):
            message = (f"unknown option {message.split(': ', 1)[1]} (the "
                       f"command's own options go after the command)")
        raise UsageError(message)


def makeParser():
    # --help prints the header above; argparse only parses.
    p = Parser(prog=PROG, add_help=False, allow_abbrev=False)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("-n", "--nproc-per-node", "--nproc_per_node", dest="n",
                   default="1")
    p.add_argument("--nnodes", default="1")
    p.add_argument("--node-rank", "--node_rank", dest="node_rank")
    p.add_argument("--master-addr", "--master_addr", dest="master_addr")
    p.add_argument("--master-port", "--master_port", dest="master_port")
    p.add_argument("--grace-seconds", dest="grace", default="30")
    p.add_argument("--max-restarts", "--max_restarts", dest="max_restarts",
                   default="0")
    p.add_argument("--last-call-seconds", dest="last_call", default="30")
    p.add_argument("--join-seconds", dest="join", default="600")
    p.add_argument("--log-dir", "--log_dir", dest="log_dir")
    p.add_argument("--redirects", "-r")
    p.add_argument("--tee", "-t")
    p.add_argument("--cpu-bind", "--cpu_bind", dest="cpu_bind",
                   default="cores")
    p.add_argument("command", nargs=argparse.REMAINDER)
    return p


def positiveInt(flag, text):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise UsageError(f"{flag} must be a positive integer, not '{text}'")
    return v


def findCommand(name):
    """Checks that `name` is a program execvp would run."""
    if "/" in name:
        candidates = [name]
    else:
        dirs = os.environ.get("PATH", os.defpath).split(":")
        candidates = [os.path.join(d or ".", name) for d in dirs]
        candidates = [c for c in candidates if os.path.isfile(c)]
        if not candidates:
            raise UsageError(f"{name}: command not found in PATH")
    if not os.path.exists(candidates[0]):
        raise UsageError(f"{name}: no such file")
    if os.path.isdir(candidates[0]):
        raise UsageError(f"{name}: is a directory, not a program")
    if not any(os.access(c, os.X_OK) for c in candidates):
        raise UsageError(f"{name}: not executable (chmod +x?)")


def parseArgs(argv):
    a = makeParser().parse_args(argv)
    if a.help:
        return a
    a.n = positiveInt("-n", a.n)
    a.elastic = None
    if ":" in a.nnodes:
        low, _, high = a.nnodes.partition(":")
        low = positiveInt("--nnodes MIN", low)
        high = positiveInt("--nnodes MAX", high)
        if low > high:
            raise UsageError(f"--nnodes={a.nnodes}: MIN is above MAX")
        if a.node_rank is not None:
            raise UsageError("--node-rank is not for an elastic job "
                             "(--nnodes=MIN:MAX): the rendezvous numbers the "
                             "nodes")
        if not a.master_addr:
            raise UsageError(f"--nnodes={a.nnodes} needs --master-addr (where "
                             f"the nodes meet, the same on every node)")
        a.elastic = (low, high)
        a.nnodes = high
    else:
        a.nnodes = positiveInt("--nnodes", a.nnodes)
    for flag, name in (("--last-call-seconds", "last_call"),
                       ("--join-seconds", "join")):
        try:
            value = float(getattr(a, name))
        except ValueError:
            value = -1.0
        if not value >= 0:
            raise UsageError(f"{flag} must be a number >= 0")
        setattr(a, name, value)
    for flag in ("redirects", "tee"):
        value = getattr(a, flag)
        if value is not None and a.log_dir is None:
            raise UsageError(f"--{flag} needs --log-dir (where the files go)")
        if value is not None and value not in ("0", "1", "2", "3"):
            raise UsageError(f"--{flag} must be 0, 1, 2 or 3 (none, stdout, "
                             f"stderr, both), not '{value}'")
    # Per stream (1 stdout, 2 stderr): (to the console, to a file).
    tee = int(a.tee or 0)
    redirects = int(a.redirects if a.redirects is not None else 3) & ~tee
    a.streams = {fd: (not (a.log_dir and redirects & fd),
                      bool(a.log_dir))
                 for fd in (1, 2)}
    if a.log_dir is not None:
        try:
            os.makedirs(a.log_dir, exist_ok=True)
        except OSError as e:
            raise UsageError(f"--log-dir {a.log_dir}: {e.strerror}")
    if a.node_rank is None:
        a.node_rank = "0"
    try:
        a.node_rank = int(a.node_rank)
    except ValueError:
        raise UsageError(f"--node-rank must be an integer, not "
                         f"'{a.node_rank}'")
    if not 0 <= a.node_rank < a.nnodes:
        raise UsageError(f"--node-rank={a.node_rank} is out of range for "
                         f"--nnodes={a.nnodes} (0 to {a.nnodes - 1})")
    if a.nnodes > 1 and not a.master_addr:
        raise UsageError(f"--nnodes={a.nnodes} needs --master-addr (the "
                         f"host of node 0, the same on every node)")
    if a.master_port is not None:
        try:
            port = int(a.master_port)
        except ValueError:
            port = 0
        if not 1 <= port <= 65535:
            raise UsageError(f"--master-port must be 1 to 65535, not "
                             f"'{a.master_port}'")
        a.master_port = port
    try:
        a.grace = float(a.grace)
    except ValueError:
        a.grace = -1.0
    if not a.grace >= 0:  # also rejects nan
        raise UsageError(f"--grace-seconds must be a number >= 0")
    try:
        a.max_restarts = int(a.max_restarts)
    except ValueError:
        a.max_restarts = -1
    if a.max_restarts < 0:
        raise UsageError("--max-restarts must be an integer >= 0")
    if a.cpu_bind not in ("cores", "none"):
        raise UsageError(f"--cpu-bind must be cores or none, not "
                         f"'{a.cpu_bind}'")
    a.cpus = (cpuShares(physicalCores(usableCpus()), a.n)
              if a.cpu_bind == "cores" and a.n > 1 else None)
    if a.command[:1] == ["--"]:
        a.command = a.command[1:]
    if not a.command:
        raise UsageError("no command to launch (sinter-launch -n N ./train "
                         "...; see --help)")
    findCommand(a.command[0])
    return a


# ---- Environment ---------------------------------------------------------


def freePort(addr):
    """A TCP port nobody listens on now (the ranks bind it moments later)."""
    for host in (addr, ""):
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((host, 0))
                return s.getsockname()[1]
        except OSError:
            continue
    raise UsageError(f"cannot find a free TCP port on {addr}")


def usableCpus():
    """The CPUs this process may run on (its affinity mask)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def cpuList(text):
    """The CPUs of a /sys list such as "0-3,8"."""
    cpus = []
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def physicalCores(cpus, sysfs="/sys/devices/system/cpu"):
    """`cpus` grouped by the physical core they share (a core's
    hyperthreads in one group), ordered by package, then by first CPU. Where
    the topology cannot be read, every CPU is a core of its own."""
    groups = {}
    try:
        for c in cpus:
            top = os.path.join(sysfs, f"cpu{c}", "topology")
            with open(os.path.join(top, "thread_siblings_list")) as f:
                siblings = tuple(cpuList(f.read()))
            with open(os.path.join(top, "physical_package_id")) as f:
                package = int(f.read())
            groups.setdefault((package, siblings), []).append(c)
    except (OSError, ValueError):
        return [[c] for c in cpus]
    return [groups[k] for k in sorted(groups, key=lambda k: (k[0], k[1][0]))]


def cpuShares(cores, n):
    """Each of n local ranks' CPUs: the cores (physicalCores) split into n
    runs in order, as even as they go; with fewer cores than ranks the
    logical CPUs instead; None with fewer CPUs than ranks (nothing to bind
    each rank to alone)."""
    if len(cores) < n:
        cores = [[c] for core in cores for c in core]
    if len(cores) < n:
        return None
    return [sorted(c for core in cores[r * len(cores) // n:
                                       (r + 1) * len(cores) // n]
                   for c in core) for r in range(n)]


def rankEnvironments(a, restart=0):
    """The environment of each local rank, in local-rank order, for the
    `restart`-th restart (0: the first start)."""
    addr = a.master_addr or "127.0.0.1"
    if a.master_port is not None:
        port = a.master_port
    elif a.nnodes > 1:
        port = DEFAULT_MULTI_NODE_PORT
    else:
        port = freePort(addr)
    if "SINTER_RUN_ID" in os.environ:
        runId = os.environ["SINTER_RUN_ID"]
    elif a.nnodes > 1:
        runId = hashlib.sha256(f"{addr}:{port}".encode()).hexdigest()[:16]
    else:
        runId = uuid.uuid4().hex[:16]
    common = dict(os.environ)
    common.update(WORLD_SIZE=str(a.nnodes * a.n), LOCAL_WORLD_SIZE=str(a.n),
                  GROUP_RANK=str(a.node_rank), GROUP_WORLD_SIZE=str(a.nnodes),
                  MASTER_ADDR=addr, MASTER_PORT=str(port),
                  SINTER_RUN_ID=runId,
                  TORCHELASTIC_RESTART_COUNT=str(restart))
    if "OMP_NUM_THREADS" not in os.environ:
        common["OMP_NUM_THREADS"] = str(max(1, len(usableCpus()) // a.n))
    common.pop("SINTER_CPU_BIND", None)
    envs = []
    for local in range(a.n):
        env = dict(common)
        env.update(RANK=str(a.node_rank * a.n + local), LOCAL_RANK=str(local))
        if a.cpus:
            env["SINTER_CPU_BIND"] = "cores"
            if "OMP_NUM_THREADS" not in os.environ:
                env["OMP_NUM_THREADS"] = str(len(a.cpus[local]))
        envs.append(env)
    return envs


# ---- Output --------------------------------------------------------------

writeLock = threading.Lock()


def writeAll(fd, data):
    with writeLock:
        try:
            while data:
                data = data[os.write(fd, data):]
        except OSError:  # a closed pipe (| head): keep draining the ranks
            pass


def say(message):
    writeAll(2, f"{PROG}: {message}\n".encode(errors="replace"))


LINE_END = re.compile(rb"\r\n|\r|\n")


class FileCopy:
    """A rank's stream as it wrote it, into a --log-dir file."""

    def __init__(self, path):
        self.f = open(path, "wb", buffering=0)

    def feed(self, data):
        try:
            self.f.write(data)
        except OSError:  # a full disk must not stop the relay to the console
            pass

    def close(self):
        self.f.close()


class Fanout:
    """One pipe's bytes to several sinks (a LineSplitter, a FileCopy)."""

    def __init__(self, sinks):
        self.sinks = sinks

    def feed(self, data):
        for sink in self.sinks:
            sink.feed(data)

    def close(self):
        for sink in self.sinks:
            sink.close()


class LineSplitter:
    """Cuts one pipe's bytes into lines ended by \\n, \\r or \\r\\n."""

    def __init__(self, prefix, outFd):
        self.prefix, self.outFd = prefix, outFd
        self.pending = b""
        self.afterCr = False  # the last chunk ended in \r: skip a leading \n

    def feed(self, data):
        if self.afterCr and data.startswith(b"\n"):
            data = data[1:]
        out, pos = [], 0
        for m in LINE_END.finditer(data):
            line = self.pending + data[pos:m.start()]
            self.pending, pos = b"", m.end()
            # A bare \r with nothing before it (the "\rstep 5" style of
            # redrawing) ends no line; an empty line ended by \n is kept.
            if line or m.group() != b"\r":
                out.append(self.prefix + line + b"\n")
        self.pending += data[pos:]
        self.afterCr = data.endswith(b"\r")
        if len(self.pending) >= MAX_LINE_BYTES:
            out.append(self.prefix + self.pending + b"\n")
            self.pending = b""
        if out:
            writeAll(self.outFd, b"".join(out))

    def close(self):
        if self.pending:
            writeAll(self.outFd, self.prefix + self.pending + b"\n")
            self.pending = b""


def pumpOutput(streams):
    """Relays (pipe, splitter) pairs until every pipe is closed."""
    sel = selectors.DefaultSelector()
    for pipe, splitter in streams:
        sel.register(pipe, selectors.EVENT_READ, splitter)
    while sel.get_map():
        for key, _ in sel.select():
            data = os.read(key.fd, 65536)
            if data:
                key.data.feed(data)
            else:
                key.data.close()
                sel.unregister(key.fileobj)
                key.fileobj.close()


# ---- Ranks ---------------------------------------------------------------


def describeExit(code):
    """Popen's returncode -> (the failure line's words, the exit status)."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}", 128 - code
    return f"exited with code {code}", code


class Launch:
    """The ranks of this node and what has happened to them.

    One thread per rank waits for it and one relays the pipes; both only
    queue events. The signal handlers queue too, so every decision (who
    failed first, whom to signal) is taken in order on the main thread.
    """

    def __init__(self, a):
        self.a = a
        self.procs = {}  # global rank -> Popen
        self.events = deque()  # ("exit", rank, code) | ("signal", signum)
        self.wakeR, self.wakeW = os.pipe()
        os.set_blocking(self.wakeW, False)
        self.stopping = False  # the ranks were asked to stop
        self.lastInterrupt = None
        self.killAt = None  # when the ranks still running get SIGKILL
        self.failure = None  # the exit status of the rank named as failed
        self.sent = {}  # global rank -> the signals sent to it
        self.consequence = None  # (rank, code): the first PEER_FAILED exit
        self.settleAt = None  # when to name self.consequence at the latest
        self.stopRequested = False  # requestStop: the job's nodes change

    def wake(self):
        try:
            os.write(self.wakeW, b"x")
        except BlockingIOError:  # already awake
            pass

    def onSignal(self, signum, frame):
        self.events.append(("signal", signum))
        self.wake()

    def requestStop(self):
        """From any thread: stop the ranks as a forwarded SIGTERM would (they
        finish the step and save), because the job's nodes change."""
        self.events.append(("stop",))
        self.wake()

    def running(self):
        return any(p.returncode is None for p in self.procs.values())

    def watch(self, rank, proc):
        code = proc.wait()
        self.events.append(("exit", rank, code))
        self.wake()

    @staticmethod
    def dieWithLauncher():
        """In each rank, before exec: SIGTERM when the launcher dies (even by
        SIGKILL), so that no rank trains on alone. Linux's prctl; elsewhere
        nothing."""
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass

    @staticmethod
    def beforeExec(cpus):
        """What each rank's child does before exec: dieWithLauncher, and
        with --cpu-bind its CPUs (inherited by every thread it starts)."""
        def prepare():
            Launch.dieWithLauncher()
            if cpus:
                try:
                    os.sched_setaffinity(0, cpus)
                except OSError:  # a CPU gone offline since: run unbound
                    pass
        return prepare

    def sinks(self, rank, local, env, fd):
        """Where a rank's stream fd (1 or 2) goes: the console, tagged
        unless it is the node's local rank 0, and a --log-dir file."""
        console, file = self.a.streams[fd]
        out = []
        if console:
            prefix = f"[rank {rank}] ".encode() if local != 0 else b""
            out.append(LineSplitter(prefix, fd))
        if file:
            d = os.path.join(self.a.log_dir,
                             f"attempt_{env['TORCHELASTIC_RESTART_COUNT']}",
                             f"rank_{rank}")
            os.makedirs(d, exist_ok=True)
            out.append(FileCopy(os.path.join(
                d, "stdout.log" if fd == 1 else "stderr.log")))
        return Fanout(out)

    def start(self, envs):
        streams = []
        for local, env in enumerate(envs):
            rank = int(env["RANK"])
            piped = local != 0 or self.a.log_dir is not None
            try:
                proc = subprocess.Popen(
                    self.a.command, env=env, start_new_session=True,
                    preexec_fn=self.beforeExec(
                        self.a.cpus[local] if self.a.cpus else None),
                    stdin=subprocess.DEVNULL if local != 0 else None,
                    stdout=subprocess.PIPE if piped else None,
                    stderr=subprocess.PIPE if piped else None)
            except OSError as e:
                return self.abandon(f"cannot start rank {rank}: "
                                    f"{self.a.command[0]}: {e.strerror}")
            self.procs[rank] = proc
            if piped:
                try:
                    streams.append((proc.stdout,
                                    self.sinks(rank, local, env, 1)))
                    streams.append((proc.stderr,
                                    self.sinks(rank, local, env, 2)))
                except OSError as e:
                    return self.abandon(f"cannot write rank {rank}'s output "
                                        f"under {self.a.log_dir}: "
                                        f"{e.strerror}")
            threading.Thread(target=self.watch, args=(rank, proc),
                             daemon=True).start()
        self.pump = threading.Thread(target=pumpOutput, args=(streams,),
                                     daemon=True)
        self.pump.start()
        return True

    def abandon(self, why):
        """A start that cannot go on: says why, kills the ranks already
        started and waits for them. Returns False, start's failure."""
        say(why)
        self.signalAll(signal.SIGKILL)
        for p in self.procs.values():
            p.wait()
        return False

    def signalAll(self, signum, exceptRank=None):
        for rank, proc in self.procs.items():
            if rank == exceptRank or proc.returncode is not None:
                continue
            self.sent.setdefault(rank, set()).add(signum)
            try:
                os.killpg(proc.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass  # exited meanwhile

    def ours(self, rank, code):
        """Whether an exit is the launcher's doing: by a signal it sent the
        rank, or the binary's status after an interrupt it forwarded."""
        sent = self.sent.get(rank, set())
        if code < 0:
            return -code in sent
        return bool(sent) and code in (130, 128 + signal.SIGTERM)

    def name(self, rank, code):
        """The one failure line; the others are stopped if still running."""
        what, self.failure = describeExit(code)
        running = any(p.returncode is None and r != rank
                      for r, p in self.procs.items())
        say(f"rank {rank} {what} (first failure)"
            + ("; stopping the others" if running else ""))
        self.consequence = self.settleAt = None

    def stopOthers(self, rank, now):
        if self.killAt is None:
            self.signalAll(signal.SIGTERM, exceptRank=rank)
            self.killAt = now + self.a.grace

    def handle(self, event):
        now = time.monotonic()
        if event[0] == "stop":
            if not self.stopping:
                self.stopRequested = self.stopping = True
                self.signalAll(signal.SIGTERM)
                self.killAt = now + self.a.grace
            return
        if event[0] == "exit":
            _, rank, code = event
            if code == 0 or self.failure is not None:
                return
            if self.stopping and self.consequence is None:
                # After a forwarded signal: no line, the rank's status.
                self.failure = describeExit(code)[1]
                return
            if code == PEER_FAILED or self.ours(rank, code):
                # A rank that saw another fail; wait a little for that one.
                if self.consequence is None:
                    self.consequence = (rank, code)
                    self.settleAt = now + SETTLE_SECONDS
                    self.stopping = True
                    self.stopOthers(rank, now)
                return
            self.stopping = True
            self.stopOthers(rank, now)
            self.name(rank, code)
            return
        signum = event[1]
        if signum == signal.SIGINT:
            if (self.lastInterrupt is not None
                    and now - self.lastInterrupt < DOUBLE_INTERRUPT_SECONDS):
                say("second interrupt: killing every rank")
                self.signalAll(signal.SIGKILL)
            else:
                self.signalAll(signal.SIGINT)
            self.lastInterrupt = now
        else:
            self.signalAll(signum)
            if self.killAt is None:
                self.killAt = now + self.a.grace
        self.stopping = True

    def wait(self):
        """Waits for every rank; returns the launcher's exit status."""
        exited = 0
        while exited < len(self.procs):
            deadlines = [t for t in (self.killAt, self.settleAt)
                         if t is not None]
            timeout = None
            if deadlines:
                timeout = max(0.0, min(deadlines) - time.monotonic())
            if timeout != 0.0:
                sel = selectors.DefaultSelector()
                sel.register(self.wakeR, selectors.EVENT_READ)
                if sel.select(timeout):
                    os.read(self.wakeR, 4096)
                sel.close()
            while self.events:
                event = self.events.popleft()
                exited += event[0] == "exit"
                self.handle(event)
            if self.settleAt is not None and time.monotonic() >= self.settleAt:
                self.name(*self.consequence)
            if self.killAt is not None and time.monotonic() >= self.killAt:
                self.signalAll(signal.SIGKILL)
                self.killAt = None
        if self.consequence is not None:
            self.name(*self.consequence)
        self.pump.join(DRAIN_SECONDS)
        return self.failure or 0


def advertisedAddress():
    """Where this node's ranks can be reached: SINTER_HOST (the address the
    training binary listens on) or the host's name."""
    return os.environ.get("SINTER_HOST") or socket.gethostname()


def watchForArrivals(client, r, launch, finished):
    """While round r's ranks run: a node waiting for a later round stops
    them. The rendezvous not answering changes nothing here (the ranks may
    be finishing); it matters when the next round is joined."""
    while not finished.wait(1.0):
        try:
            if client.waiting(r) > 0:
                launch.requestStop()
                return
        except rdzv.RendezvousError:
            pass


def runElastic(a, current):
    """The rounds of an elastic job (the Elastic jobs part of the help);
    returns the exit status."""
    low, high = a.elastic
    port = a.master_port or DEFAULT_MULTI_NODE_PORT
    listening = rdzv.listen(a.master_addr, port)
    server = (rdzv.Server(listening, low, high, a.last_call, a.n)
              if listening else None)
    node = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    client = rdzv.Client(a.master_addr, port, node)
    restarts = 0
    while True:
        addr = advertisedAddress()
        try:
            joined = client.join(addr, freePort(addr), a.n, a.join,
                                 lambda: current["signalled"])
        except (rdzv.RendezvousError, UsageError) as e:
            say(str(e))
            return 1
        if joined is None:
            return 130
        r, info = joined
        nodes = info["nodes"]
        here = argparse.Namespace(**vars(a))
        here.nnodes, here.node_rank = len(nodes), nodes.index(node)
        here.master_addr, here.master_port = info["addrs"][0], info["ports"][0]
        say(f"round {r}: {len(nodes)} node{'s' if len(nodes) > 1 else ''}, "
            f"{len(nodes) * a.n} ranks; this is node {here.node_rank}")
        launch = Launch(here)
        current["launch"] = launch
        if not launch.start(rankEnvironments(here, r)):
            return 2
        finished = threading.Event()
        if len(nodes) < high:
            threading.Thread(target=watchForArrivals,
                             args=(client, r, launch, finished),
                             daemon=True).start()
        status = launch.wait()
        finished.set()
        current["launch"] = None
        if status == 0 and not launch.stopRequested:
            try:
                client.done()
            except rdzv.RendezvousError:
                pass
            # The server stays until every node of the round is done.
            deadline = time.monotonic() + 30
            while (server and not server.finished(nodes)
                   and time.monotonic() < deadline):
                time.sleep(0.2)
            return 0
        if current["signalled"]:
            return status
        if launch.stopRequested:
            say("a node is waiting to join: every node joins the next round")
            continue
        if restarts >= a.max_restarts:
            return status
        restarts += 1
        say(f"joining the next round (restart {restarts} of "
            f"{a.max_restarts})")


def main(argv):
    try:
        a = parseArgs(argv)
        if a.help:
            sys.stdout.write(__doc__)
            return 0
        envs = None if a.elastic else rankEnvironments(a)
    except UsageError as e:
        say(str(e))
        return 2
    # The handlers reach the launch of the moment; a signal between two
    # launches stops the restarts.
    current = {"launch": None, "signalled": False}

    def onSignal(signum, frame):
        current["signalled"] = True
        if current["launch"] is not None:
            current["launch"].onSignal(signum, frame)

    for s in FORWARDED_SIGNALS:
        # A signal the launcher was started ignoring (nohup, `&` in a
        # script) stays ignored, and the ranks inherit that.
        if signal.getsignal(s) != signal.SIG_IGN:
            signal.signal(s, onSignal)
    if a.elastic:
        return runElastic(a, current)
    restart = 0
    while True:
        launch = Launch(a)
        current["launch"] = launch
        if not launch.start(envs):
            return 2
        status = launch.wait()
        current["launch"] = None
        if (status == 0 or current["signalled"]
                or restart >= a.max_restarts):
            return status
        restart += 1
        say(f"restarting every rank (restart {restart} of "
            f"{a.max_restarts})")
        try:
            envs = rankEnvironments(a, restart)
        except UsageError as e:
            say(str(e))
            return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
