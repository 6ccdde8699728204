"""The peer side of bench/peers.py: one framework, one workload, one process.

A peer worker is started by the driver inside bench/.venv
(`python bench/peers/torch_peer.py --workload=chargpt --mode=eager
--threads=T --precision=fp32|bf16`), so every peer has its own thread
pools and allocator, and the driver can interleave peers and Sinter
without recompiling anything. --precision (default fp32) is the driver's:
bf16 asks for the peer's bf16 mixed-precision step. It answers JSON lines
on stdin:

  {"cmd": "setup"}             build the model and optimizer, compile,
                               run the warm-up steps; answers
                               {"ok": true, "params": N, "setup_s": s,
                                "info": {...}}
  {"cmd": "time", "steps": N}  N timed steps; answers
                               {"ok": true, "ms": [per-step ms, ...]}
  {"cmd": "quit"}

Any exception answers {"ok": false, "error": "..."} (the driver then
shows the peer as failed, with that reason); a NotMeasured exception (a
peer that has no such step, e.g. JAX in bf16) answers the error
"not available (reason)", which the driver shows as not available.
Libraries that print to stdout cannot corrupt the protocol: file
descriptor 1 is pointed at stderr before anything is imported, and
answers go to a private copy of the original stdout.
"""

import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workloads import WORKLOADS  # noqa: E402


class NotMeasured(Exception):
    """Raised by `build` for a combination the peer does not measure; the
    driver shows the peer as "not available (message)"."""


def _protocol_out():
    fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(fd, "w", buffering=1)


def serve(build, argv=None):
    """Runs the protocol. `build(workload, mode, threads, precision)`
    (precision "fp32" or "bf16") returns (step, params, info): `step()`
    runs one complete training step and returns only when its results are
    computed; `params` counts the model's distinct parameters; `info` is
    shown by the driver. `build` raises NotMeasured for a precision the
    peer has no step for."""
    import argparse
    out = _protocol_out()
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    ap.add_argument("--mode", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    args = ap.parse_args(argv)
    workload = WORKLOADS[args.workload]
    step = None

    def answer(obj):
        out.write(json.dumps(obj) + "\n")

    for line in sys.stdin:
        try:
            msg = json.loads(line)
            if msg["cmd"] == "quit":
                return
            if msg["cmd"] == "setup":
                start = time.perf_counter()
                step, params, info = build(workload, args.mode, args.threads,
                                           args.precision)
                for _ in range(workload["warmup"]):
                    step()
                answer({"ok": True, "params": params, "info": info,
                        "setup_s": time.perf_counter() - start})
            elif msg["cmd"] == "time":
                ms = []
                for _ in range(msg["steps"]):
                    t0 = time.perf_counter()
                    step()
                    ms.append((time.perf_counter() - t0) * 1e3)
                answer({"ok": True, "ms": ms})
            else:
                raise ValueError(f"unknown command {msg['cmd']!r}")
        except NotMeasured as e:
            answer({"ok": False, "error": f"not available ({e})"})
        except Exception as e:  # reported to the driver, which goes on
            traceback.print_exc(file=sys.stderr)
            first = str(e).strip().splitlines()
            answer({"ok": False,
                    "error": f"{type(e).__name__}: "
                             f"{first[0][:200] if first else ''}"})
