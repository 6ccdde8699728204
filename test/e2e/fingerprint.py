#!/usr/bin/env python3
"""Fingerprints of what sinterc compiles: the step programs and the bits a
few training steps produce.

    fingerprint.py record --sinterc=PATH --work-dir=DIR --out=FILE [--only=NAME]
    fingerprint.py check  --sinterc=PATH --work-dir=DIR --expected=FILE [--only=NAME]

For each case (the three examples, the tiny GPT and eight random models of
random_models.py) it compiles the training binary with a dump, and records

  * `program`, `eval_program`: a hash of the step program's structure, the
    same whatever format the program is written in: slab sizes; arguments
    and results (name, kind, initializer, aliases, bound, default, ignore, and
    their buffer as slab, offset, dtype and shape); constants; and every
    step in order (a kernel's name and extent; a matmul's buffers,
    transposes, alpha, bias, activation and any triangle it skips; a
    copy's buffers). Buffer ids
    and kernel symbols do not count: only where things are and what runs;
  * `outputs`: a hash of every result tensor's bytes after K raw steps
    (`train --inputs --outputs --steps=K --threads=2`) on inputs drawn
    from a fixed seed (compare_compiled.make_arguments: random parameters
    from their initializers' distributions, random optimizer state, a step
    past 0), plus each result's own hash so that a mismatch names the
    tensor.

Step programs do not depend on the machine; the output bits do (kernels are
compiled for the host CPU and oneDNN picks its code at run time), so
`record` files them under the CPU's signature (model name and feature
flags) and `check` compares outputs only when the file has this CPU's,
programs always. `check` exits 1 on any difference, naming the case and
what differs; `signature` prints this CPU's signature.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import compare_compiled as cc  # noqa: E402
import step_program  # noqa: E402
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

EXAMPLES = os.path.join(ROOT, "examples")

TINY_GPT = os.path.join(ROOT, "test", "passes", "Inputs", "tiny_gpt.pbtxt")
# name -> (model file, sinterc flags, raw steps, first step)
CASES = {
    "mlp": (os.path.join(EXAMPLES, "mlp_classifier.pbtxt"),
            ["--batch-size=8"], 3, 5),
    "chargpt": (os.path.join(EXAMPLES, "chargpt.pbtxt"), ["--batch-size=2"],
                2, 50),
    "chargpt-recompute": (os.path.join(EXAMPLES, "chargpt.pbtxt"),
                          ["--batch-size=2", "--recompute=blocks"], 1, 50),
    "gpt2": (os.path.join(EXAMPLES, "gpt2_124m.pbtxt"), ["--batch-size=1"],
             1, 20),
    "tiny_gpt": (TINY_GPT, [], 3, 97),
    "tiny_gpt-budget": (TINY_GPT, ["--memory-budget=80%"], 2, 97),
}
RANDOM = [f"rand-1-{i}" for i in range(8)]


def cpu_signature():
    model, flags = "", ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and not model:
                model = value.strip()
            elif key == "flags" and not flags:
                flags = " ".join(sorted(value.split()))
    digest = hashlib.sha256(flags.encode()).hexdigest()[:12]
    return f"{model} [{digest}]"


def sha(data):
    return hashlib.sha256(data).hexdigest()[:16]


# ---------------------------------------------------------------------------
# The structure of a step program
# ---------------------------------------------------------------------------

def canonical_program(prog):
    """What a step program (step_program.load) says, without buffer ids,
    kernel symbols or report-only fields."""
    bufs = {b["id"]: b for b in prog["buffers"]}

    def where(i):
        if i is None:
            return None
        b = bufs[i]
        return [b["slab"], b.get("offset", 0), b["dtype"], b.get("shape", [])]

    def init(a):
        i = a.get("init")
        if not i:
            return None
        return {k: (float(v) if k != "dist" else v) for k, v in i.items()}

    arguments = [[a["name"], a["kind"], where(a["buffer"]), init(a),
                  sorted(a.get("aliases", [])), a.get("bound"),
                  a.get("default_value")]
                 + ([a["ignore"]] if "ignore" in a else [])
                 for a in prog["arguments"]]
    results = [[r["name"], r["kind"], where(r["buffer"])]
               for r in prog["results"]]
    constants = [[where(c["buffer"]), c["data"].hex()]
                 for c in prog["constants"]]
    kernels = prog["kernels"]
    steps = []
    for s in prog["steps"]:
        op = s["op"]
        if op == "kernel":
            k = kernels[s["kernel"]]
            steps.append(["kernel", k["name"], k["extent"]])
        elif op == "matmul":
            steps.append(["matmul", where(s["lhs"]), where(s["rhs"]),
                          where(s["out"]), bool(s.get("transpose_lhs")),
                          bool(s.get("transpose_rhs")),
                          float(s.get("alpha", 1.0)), where(s.get("bias")),
                          s.get("activation", "none")]
                         # A skipped triangle changes the sums' order; the
                         # programs before it had none, and hash as then.
                         + ([s["triangle"]] if s.get("triangle", "full")
                            != "full" else []))
        elif op == "copy":
            steps.append(["copy", where(s["src"]), where(s["dst"])])
        else:
            steps.append([op])
    slabs = prog["slabs"]
    return {
        "function": prog["function"],
        "seed": prog.get("seed", 0),
        "slabs": [slabs.get(k, 0) for k in
                  ("arena", "params", "opt_state", "io", "constants")],
        "arguments": arguments,
        "results": results,
        "constants": constants,
        "steps": steps,
    }


def load_program(path):
    return step_program.load(path)


def program_hash(path):
    if path is None:
        return None
    canon = canonical_program(load_program(path))
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"))
    return sha(text.encode())


# ---------------------------------------------------------------------------
# One case
# ---------------------------------------------------------------------------

def run(cmd, what):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-3000:] + p.stderr[-3000:])
        raise SystemExit(f"error: {what} failed (exit {p.returncode}): "
                         f"{' '.join(cmd)}")
    return p.stdout


def find_program(dump, prefix=""):
    return step_program.find(dump, prefix)


def fingerprint(name, model, flags, steps, first, sinterc, work):
    case = os.path.join(work, name)
    dump = os.path.join(case, "dump")
    os.makedirs(case, exist_ok=True)
    run(["rm", "-rf", dump], "rm")
    binary = os.path.join(case, "train")
    run([sinterc, model, *flags, f"--dump-dir={dump}", "-o", binary],
        f"sinterc {name}")
    program = find_program(dump)
    prog = load_program(program)
    widths, ignore = cc.integer_widths(cc.find_dump(dump, "-import.mlir"))
    args = types.SimpleNamespace(seed=12345, step=first, params="given",
                                 state="random", vocab=None, lr_scale=None)
    given, _ = cc.make_arguments(args, prog, widths, ignore)
    inputs = os.path.join(case, "in.safetensors")
    outputs = os.path.join(case, "out.safetensors")
    write_safetensors(inputs, given)
    run([binary, f"--inputs={inputs}", f"--outputs={outputs}",
         f"--steps={steps}", "--threads=2"], f"{name} binary")
    got, _ = read_safetensors(outputs)
    tensors = {n: sha(np.ascontiguousarray(v).tobytes()) for n, v in
               sorted(got.items())}
    # GPT-2's pair is 3 GB; both are remade from the seed on a rerun.
    os.remove(inputs)
    os.remove(outputs)
    return {
        "program": program_hash(program),
        "eval_program": program_hash(find_program(dump, "eval-")),
        "outputs": sha(json.dumps(tensors, sort_keys=True).encode()),
        "tensors": tensors,
    }


def all_cases(work, only):
    cases = dict(CASES)
    models = os.path.join(work, "models")
    os.makedirs(models, exist_ok=True)
    run([sys.executable, os.path.join(HERE, "random_models.py"), "generate",
         "--count=8", "--seed=1", f"--out-dir={models}"], "random_models.py")
    for r in RANDOM:
        cases[r] = (os.path.join(models, r + ".pbtxt"), [], 2, 7)
    if only:
        missing = [o for o in only if o not in cases]
        if missing:
            raise SystemExit(f"error: no case {', '.join(missing)}; cases: "
                             f"{', '.join(cases)}")
        cases = {k: v for k, v in cases.items() if k in only}
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["record", "check", "signature",
                                     "programs"])
    ap.add_argument("dump", nargs="?")
    ap.add_argument("--sinterc", default="sinterc")
    ap.add_argument("--work-dir")
    ap.add_argument("--out")
    ap.add_argument("--expected")
    ap.add_argument("--only", action="append", default=[])
    a = ap.parse_args()
    sig = cpu_signature()
    if a.mode == "signature":
        print(sig)
        return
    if a.mode == "programs":
        print(program_hash(find_program(a.dump)),
              program_hash(find_program(a.dump, "eval-")))
        return
    if not a.work_dir:
        ap.error("--work-dir is required")
    cases = all_cases(a.work_dir, a.only)
    got = {}
    for name, (model, flags, steps, first) in cases.items():
        got[name] = fingerprint(name, model, flags, steps, first, a.sinterc,
                                a.work_dir)
        print(f"{name}: program {got[name]['program']} eval "
              f"{got[name]['eval_program']} outputs {got[name]['outputs']}",
              flush=True)

    if a.mode == "record":
        if not a.out:
            ap.error("record needs --out")
        data = {"programs": {}, "outputs": {}}
        if os.path.exists(a.out):
            with open(a.out) as f:
                data = json.load(f)
        for name, fp in got.items():
            data["programs"][name] = {"program": fp["program"],
                                      "eval_program": fp["eval_program"]}
            data["outputs"].setdefault(sig, {})[name] = {
                "outputs": fp["outputs"], "tensors": fp["tensors"]}
        with open(a.out, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.write("\n")
        return

    if not a.expected:
        ap.error("check needs --expected")
    with open(a.expected) as f:
        expected = json.load(f)
    outputs = expected.get("outputs", {}).get(sig)
    bad = 0
    for name, fp in got.items():
        want = expected["programs"].get(name)
        if want is None:
            print(f"MISMATCH {name}: no recorded fingerprint")
            bad += 1
            continue
        for key in ("program", "eval_program"):
            if fp[key] != want[key]:
                print(f"MISMATCH {name}: the {key.replace('_', ' ')} differs "
                      f"(structure {fp[key]}, recorded {want[key]})")
                bad += 1
        if outputs is None:
            continue
        rec = outputs.get(name)
        if rec and fp["outputs"] != rec["outputs"]:
            diff = [n for n in sorted(set(fp["tensors"]) | set(rec["tensors"]))
                    if fp["tensors"].get(n) != rec["tensors"].get(n)]
            print(f"MISMATCH {name}: the outputs differ bitwise in "
                  f"{len(diff)} tensor(s): {', '.join(diff[:8])}"
                  f"{' ...' if len(diff) > 8 else ''}")
            bad += 1
    if outputs is None:
        print(f"note: no output bits recorded for this CPU ({sig}); checked "
              "the step programs only")
    if bad:
        sys.exit(1)
    print(f"fingerprints match ({len(got)} cases"
          f"{', outputs bitwise' if outputs is not None else ''})")


if __name__ == "__main__":
    main()
