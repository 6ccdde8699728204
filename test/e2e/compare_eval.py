#!/usr/bin/env python3
"""Compares the evaluation program of a compiled object with the interpreter.

    compare_eval.py MODEL.pbtxt --link-file=lib/SinterRuntimeLink.txt
        [--batch-size=N] [--seed=N] [--vocab=N] [--sinterc=PATH]
        [--cxx=c++] [--work-dir=DIR]

What it does:

 1. `sinterc MODEL --dump-dir=W/dump -o W/x.o`, and links W/x.o with the
    runtime and EvalProbe.cpp (a main() that runs `sinter_eval_program_json`
    with `sinter_eval_kernels`, the symbols a trainer uses);
 2. checks the evaluation program's interface against the training step's
    (docs/StepProgram.md): function eval_step; its arguments are exactly the
    training step's params (same names, order, dtypes and shapes: a runtime
    copies them by name) and model inputs; no optimizer state, step or
    hyper argument; its results are the training step's loss and metrics,
    all of kind metric; no kernel named after dropout;
 3. writes random parameters (each drawn from its initializer's
    distribution, constants perturbed) and inputs, as compare_compiled.py
    does, runs the probe, and the reference interpreter twice on the same
    values: `--run=eval_step` (the training-phase module) and `--run=forward`
    of the model with every dropout rate set to 0;
 4. the two interpreter runs must agree exactly (eval mode is the forward
    pass without dropout; not with batch_norm's running statistics, which
    only eval_step reads, so such a model skips the forward run), and the compiled results must match them within
    compare_compiled.py's tolerance: loss and metrics 1e-4 normwise relative
    (the compiled forward pass's f32 error, see there), accuracy-like
    metrics within one flipped arg-max. Exits 1 on a mismatch, 2 when a
    tool fails.
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402
import step_program  # noqa: E402
from compare_compiled import (RTOL, die, find_dump,  # noqa: E402
                              find_step_program, integer_widths,
                              make_arguments, nrel, run)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))


def without_dropout(text):
    """The model text with every dropout rate 0 (the importer then emits no
    dropout op at all)."""
    text = re.sub(r"(dropout\s*\{\s*rate:\s*)[-+0-9.eE]+", r"\g<1>0", text)
    return re.sub(r"(\bdropout:\s*)[-+0-9.eE]+", r"\g<1>0", text)


def check_interface(train, ev):
    """Problems with the evaluation program's interface, as strings."""
    problems = []
    if ev.get("function") != "eval_step":
        problems.append(f"function is {ev.get('function')}, not eval_step")

    def sig(prog, kinds):
        bufs = prog["buffers"]
        return [(a["name"], a["kind"], bufs[a["buffer"]]["dtype"],
                 bufs[a["buffer"]]["shape"])
                for a in prog["arguments"] if a["kind"] in kinds]

    want = sig(train, ("param", "input"))
    got = sig(ev, ("param", "input", "opt_state", "step", "hyper"))
    if got != want:
        problems.append(f"arguments {got} are not the training step's params "
                        f"and inputs {want}")
    names = [r["name"] for r in ev["results"]]
    train_names = [r["name"] for r in train["results"]]
    if not names or names != train_names[:len(names)] or names[0] != "loss":
        problems.append(f"results {names} are not the training step's loss "
                        f"and metrics ({train_names[:len(names) + 1]}...)")
    if any(r["kind"] != "metric" for r in ev["results"]):
        problems.append("a result is not a metric")
    for k in ev["kernels"]:
        if "dropout" in k["name"]:
            problems.append(f"kernel {k['name']} computes a dropout")
    return problems


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--link-file", required=True)
    ap.add_argument("--batch-size", type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--sinterc", default="sinterc")
    ap.add_argument("--cxx", default="c++")
    ap.add_argument("--work-dir")
    args = ap.parse_args()

    work = args.work_dir or tempfile.mkdtemp(prefix="sinter-eval-")
    os.makedirs(work, exist_ok=True)
    dump = os.path.join(work, "dump")
    shutil.rmtree(dump, ignore_errors=True)
    batch = [f"--batch-size={args.batch_size}"] if args.batch_size else []
    label = (f"{os.path.basename(args.model)} eval_step "
             f"B={args.batch_size or 'model'} seed={args.seed}")

    # 1. The object and the probe.
    obj = os.path.join(work, "x.o")
    run([args.sinterc, args.model, *batch, f"--dump-dir={dump}", "-o", obj],
        "sinterc (compile)")
    probe = os.path.join(work, "probe")
    link = open(args.link_file).read().split()
    build = os.path.dirname(os.path.dirname(os.path.abspath(args.link_file)))
    run([args.cxx, "-std=c++17", "-O1", f"-I{SOURCE_ROOT}", f"-I{build}",
         os.path.join(HERE, "EvalProbe.cpp"), obj, *link, "-o", probe],
        "linking the probe")

    # 2. The interface.
    train_path = find_step_program(dump)
    eval_path = find_step_program(dump, "eval-")
    if not train_path or not eval_path:
        die("the dump has no step-program.json or eval-step-program.json")
    train, ev = step_program.load(train_path), step_program.load(eval_path)
    problems = check_interface(train, ev)

    # 3. Arguments, the probe and the two interpreter runs.
    widths, ignore = integer_widths(find_dump(dump, "-import.mlir"))
    ns = argparse.Namespace(seed=args.seed, vocab=args.vocab, step=0,
                            params="given", state="zero")
    given, acc_n = make_arguments(ns, ev, widths, ignore)
    inp = os.path.join(work, "in.safetensors")
    write_safetensors(inp, given)
    out_c = os.path.join(work, "compiled.safetensors")
    run([probe, f"--inputs={inp}", f"--outputs={out_c}"], "probe")
    got, _ = read_safetensors(out_c)

    out_e = os.path.join(work, "ref-eval.safetensors")
    run([args.sinterc, args.model, *batch, "--run=eval_step",
         f"--input={inp}", f"--output={out_e}"], "interpreter (eval_step)")
    ref_eval, _ = read_safetensors(out_e)
    # With buffers (batch_norm's running statistics) eval mode is more than
    # the forward pass without dropout: it normalizes by other statistics.
    with open(find_dump(dump, "-import.mlir")) as f:
        buffers = "sgraph.buffer" in f.read()
    if buffers:
        print("   the model has buffers: eval mode is not @forward without "
              "dropout, only eval_step is compared")
        ref_fwd = ref_eval
    else:
        model0 = os.path.join(work, "model-no-dropout.pbtxt")
        with open(model0, "w") as f:
            f.write(without_dropout(open(args.model).read()))
        out_f = os.path.join(work, "ref-forward.safetensors")
        run([args.sinterc, model0, *batch, "--run=forward", f"--input={inp}",
             f"--output={out_f}"], "interpreter (forward, dropout 0)")
        ref_fwd, _ = read_safetensors(out_f)

    # 4. Compare.
    for r in ev["results"]:
        name = r["name"]
        if name not in got or name not in ref_eval or name not in ref_fwd:
            problems.append(f"{name}: missing in an output")
            continue
        if not np.array_equal(ref_eval[name], ref_fwd[name]):
            problems.append(f"{name}: interpreter eval_step "
                            f"{float(ref_eval[name]):.9g} != forward without "
                            f"dropout {float(ref_fwd[name]):.9g}")
        c, e = float(got[name]), float(ref_eval[name])
        if "acc" in name:
            err, bound = abs(c - e), 1.0 / acc_n + 1e-6
        else:
            err, bound = nrel(got[name], ref_eval[name]), RTOL
        status = "ok" if np.isfinite(c) and err <= bound else "FAIL"
        print(f"   {name}: compiled {c:.9g}  interpreter {e:.9g}  "
              f"error {err:.3g} (bound {bound:.3g}) {status}")
        if status != "ok":
            problems.append(f"{name}: compiled {c:.9g} vs {e:.9g}")
    if problems:
        print(f"== {label}: MISMATCH")
        for p in problems:
            print(f"   {p}")
        print(f"   work dir: {work}")
        sys.exit(1)
    print(f"== {label}: PASS")
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
