#!/usr/bin/env python3
"""A step's gradient all-reduces on ranks spread over several hosts, timed
alone (bench/allreduce_alone.cpp), with and without shared memory within each
host. A benchmark, not a test (docs/BenchmarksDistributed.md, "Ranks on several hosts").

The hosts are simulated on this machine: one sinter-launch --nnodes=H per
host, its ranks listening on 127.0.0.(h+1), so that each host's ranks share
a segment and the hosts talk over loopback TCP, as the runtime does between
machines. Two configurations, interleaved round by round:

  hier  shared memory within each host, TCP between the hosts (the default)
  tcp   every rank over TCP (SINTER_SHM_DISABLE=1), a ring over all ranks

For each: the median over rounds of rank 0's median wall time for all the
buckets, its CPU time, and the bytes each rank sends over TCP per byte
all-reduced (a ring over W ranks: 2 (W - 1) / W; hierarchical: the ranks of
a host split the buckets, so 2 (H - 1) / H / L for L ranks a host).

usage: allreduce_hosts.py [--hosts=2] [--per-host=2] [--rounds=5]
           [--buckets=BYTES,...] [--bindir=build/bin]
"""

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys

# char-GPT's four gradient buckets (docs/BenchmarksDistributed.md).
CHARGPT_BUCKETS = "2363904,28391424,10027008,2300928"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(a, shm):
    port = free_port()
    procs = []
    for h in range(a.hosts):
        env = dict(os.environ, SINTER_HOST=f"127.0.0.{h + 1}")
        if not shm:
            env["SINTER_SHM_DISABLE"] = "1"
        procs.append(subprocess.Popen(
            [os.path.join(a.bindir, "sinter-launch"), "-n", str(a.per_host),
             f"--nnodes={a.hosts}", f"--node-rank={h}",
             "--master-addr=127.0.0.1", f"--master-port={port}", "--",
             os.path.join(a.bindir, "allreduce_alone"), a.buckets,
             f"--reps={a.reps}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=env))
    out = ""
    for p in procs:
        text, _ = p.communicate(timeout=600)
        if p.returncode != 0:
            sys.exit(f"allreduce_alone failed:\n{text}")
        out += text
    m = re.search(r"median_ms=([\d.]+) min_ms=[\d.]+ cpu_ms=([\d.]+) "
                  r"transport='([^']*)'", out)
    if not m:
        sys.exit(f"no result line:\n{out}")
    return float(m.group(1)), float(m.group(2)), m.group(3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--per-host", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--buckets", default=CHARGPT_BUCKETS)
    ap.add_argument("--bindir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin"))
    a = ap.parse_args()
    world = a.hosts * a.per_host
    total = sum(int(b) for b in a.buckets.split(","))
    print(f"{a.hosts} hosts x {a.per_host} ranks, {total:,} bytes in "
          f"{len(a.buckets.split(','))} buckets; load average "
          f"{os.getloadavg()[0]:.2f}")
    runs = {"hier": [], "tcp": []}
    for r in range(a.rounds):
        order = ["hier", "tcp"] if r % 2 == 0 else ["tcp", "hier"]
        for name in order:
            runs[name].append(one_run(a, name == "hier"))
    sent = {"hier": 2 * (a.hosts - 1) / a.hosts / a.per_host,
            "tcp": 2 * (world - 1) / world}
    for name, results in runs.items():
        wall = [w for w, _, _ in results]
        cpu = [c for _, c, _ in results]
        print(f"{name:5s} median {statistics.median(wall):8.2f} ms "
              f"(rounds {', '.join(f'{w:.1f}' for w in wall)}), cpu "
              f"{statistics.median(cpu):7.2f} ms, TCP bytes sent per byte "
              f"{sent[name]:.2f}; {results[0][2]}")
    print(f"tcp / hier: "
          f"{statistics.median(w for w, _, _ in runs['tcp']) / statistics.median(w for w, _, _ in runs['hier']):.2f}; "
          f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
