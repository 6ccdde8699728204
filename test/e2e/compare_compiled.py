#!/usr/bin/env python3
"""Compares a compiled training binary with the reference interpreter.

    compare_compiled.py MODEL.pbtxt
        [--entry=train_step|forward_grad|accumulate_step]
        [--batch-size=N] [--step=S] [--steps=K] [--seed=N] [--vocab=N]
        [--params=given|init] [--state=zero|random]
        [--sinterc=PATH] [--target=cpu|cuda-host]
        [--binary=BIN --program=STEP_PROGRAM.json]
        [--lr-scale=K] [--exact-fixed-lr] [--work-dir=DIR] [--threads=N]
        [--precision=fp32|bf16_mixed|fp16_mixed] [--flip-band]
        [--prepare]
    compare_compiled.py --replay=W [--binary=BIN]

With --prepare it stops after step 3's interpreter runs (and computes the
f64 arbiter's reference too) and writes what step 4 needs to W: the binary
(compiled for --target, e.g. cuda), its dumps, the inputs, the reference
outputs and the arguments. --replay=W then runs that binary and compares,
with no sinterc: how scripts/gpu-check.sh checks a CUDA binary on a GPU
machine that has no MLIR.

What it does:

 1. `sinterc MODEL [--batch-size] [--entry] --dump-dir=W/dump -o W/bin`
    (or takes --binary with its --program JSON);
 2. reads the arguments' names, kinds, dtypes and shapes from the step
    program (`docs/StepProgram.md`) and writes random values for them to
    W/in.safetensors: model inputs always (floats N(0, 1); integers uniform
    in [0, V) where V is --vocab or the width the model reads them with: the
    embedding table's rows, the logits' class count of
    softmax_cross_entropy, one_hot's width; about 10% of the labels of
    softmax_cross_entropy are its ignore_index), the step S, and for
    train_step by default the parameters (--params=given, drawn from each
    one's initializer distribution, constants perturbed) so that the update
    p_new - p_old is known, and with --state=random the optimizer state.
    The binary's `lr` argument (kind hyper: the peak learning rate, which
    the interpreter's train_step has only with --runtime-lr) is left at its
    default, which is the model's lr, unless --lr-scale=K gives it K times
    that (the interpreter then runs with --runtime-lr and the same value);
    --loss-count=X sets the `loss_count` argument of a step whose loss is a
    mean cross-entropy (docs/Distributed.md) in both;
 3. runs the binary for K steps and the interpreter K times (feeding each
    run's parameters and state to the next, step S, S+1, ...);
 4. compares every result tensor (for a failing one, against an f64
    evaluation too: see "ill-conditioned tensors"), prints the worst error
    per kind and, on a mismatch, a per-tensor table; exits 1 on a mismatch
    (2 when a tool fails).
 5. with --exact-fixed-lr (train_step), also compiles the model with
    --runtime-lr=false (the peak learning rate a constant, as before the
    `lr` argument existed) and requires its outputs on the same inputs to be
    bitwise identical to the binary's with its default `lr`.

Tolerances (u = 2^-24 ~ 6e-8, the f32 unit roundoff):

  The interpreter evaluates each op in f64 and rounds once to f32; the
  compiled code evaluates fused chains in f32, reassociates sums (vectorized
  and threaded reductions) and calls oneDNN for matmuls (blocked, FMA). Both
  are correct to within rounding; they differ by the compiled code's
  accumulated f32 error. A length-n reduction in f32 is off by about
  sqrt(n) u typically (n u in the worst case). The longest reductions in the
  models tested are ~1.5e3 (char-GPT's 4C = 1536 MLP matmul; B*T = 512 in
  its weight gradients), so one op contributes sqrt(1536) u ~ 2.4e-6;
  forward plus backward chain a few tens of such ops whose errors add
  (mostly at random) with modest condition numbers (layer norm, softmax),
  which puts a correct gradient at ~1e-6..1e-5 normwise relative. So:

  * gradients, loss, metrics, grad_norm and every optimizer-state tensor:
    normwise relative error ||c - r|| / ||r|| <= RTOL = 1e-4 (10x-100x
    margin; a wrong index, missing term, or bad fusion gives 1e-3..1).
    exp_avg_sq (squares of gradients) gets 2*RTOL. Per step beyond the
    first the bound grows by RTOL (errors add up along the steps).
    A tensor whose reference is exactly zero must be within 1e-30 abs.
  * lr: a function of the step alone, 1e-6 relative.
  * accuracy-like metrics (values k/n): a near-tie between two logits may
    flip one arg-max, so they may differ by at most one position (1/n, n =
    the element count of the largest integer input); anything more fails.
  * updated parameters (train_step). Adam(W) moves each element by
    lr * d with d = m_hat / (sqrt(v_hat) + eps) about +-1 whatever the
    gradient's size, so an element whose exact gradient is 0 (the key part
    of an attention bias: softmax ignores a constant score shift) gets a
    gradient that is pure rounding noise in both implementations, and d is
    the sign of that noise: two correct implementations differ there by
    up to 2 lr. Comparing parameters relative to their norm therefore either
    fails on correct code or, loose enough, hides a wrong update. Instead:
      (a) elementwise, |p_c - p_r| <= lr (|d_c| + |d_r|) + 8 u |p| (the
          lr-tied bound, d from each side's own new state: two updates of
          at most lr |d| each, from the same p_old, plus rounding);
      (b) with --params=given (p_old known) and one step: each side's
          update must be the Adam update of its own new state:
          || (p_c - p_r) + lr (d_c - d_r) || <= 1e-5 (||p_old|| + lr ||d||)
          (the weight-decay term is the same on both sides and cancels).
          Together with the tight state check this pins the update exactly.
    SGD and momentum updates are -lr * (g or the buffer): no noise
    amplification, so with p_old known the update is checked like a
    gradient: ||delta_c - delta_r|| <= RTOL ||delta_r|| + 4 u ||p_new||;
    with p_old unknown only ||p_c - p_r|| <= RTOL ||p_r||.
    Over K > 1 steps the Adam bound (a) is summed over the steps
    (K * lr (max|d_c| + max|d_r|)), and (b) is skipped.
  * ill-conditioned tensors. The sqrt(n) u argument assumes no
    cancellation. Where the result is a small difference of large terms
    (e.g. the input gradient of a layer norm over 1-2 features: its output
    is nearly constant, so the backward formula cancels ~1000x), each
    rounding of the terms is amplified by |terms| / |result|, and *both*
    f32 implementations are off the exact value by ~1e-4..1e-3. So when a
    normwise check fails (one step only), the script evaluates the same
    function in f64 (the model with dtype FLOAT64, the same arguments) and
    accepts the tensor only if the compiled result is within 4x the
    interpreter's own error (+ RTOL) of that exact value, printing both
    errors. A real bug (wrong term, index, fusion) leaves the compiled
    result far from the truth while the interpreter's is close, and fails.
  * mixed precision (--precision, docs/MixedPrecision.md). Both sides round
    the same values to bf16 (f16) at the same points: the operands and
    results of every matmul. Where the f32 values in front of a rounding
    differ by their ~1e-6 of noise, one may round up and the other down, a
    difference of one half ulp (2^-8 relative in bf16); in a one-layer MLP
    that is rare and leaves every tensor within the f32 tolerances above,
    while a rounding point missing on one side shows as errors of the half
    type's roundoff (measured with an f32 binary against the MLP's bf16
    interpreter: 0.004-0.05 normwise; against f16: 3e-4-4.5e-4). In a
    deep model those one-ulp differences feed later roundings and grow (the
    two sides' gradients of char-GPT differ by ~0.7% normwise, as much as
    either differs from the exact f64 function); such a tensor fails the
    normwise check and goes to the f64 arbiter above, whose f64 model keeps
    the same rounding points (its matmuls cast to bf16 and back, everything
    else exact), and passes if the compiled result is as close to that as
    the interpreter's. In the MLP that truth is within ~1e-7 of the
    interpreter, so a compiled side rounding elsewhere cannot pass there
    either: the MLP is what pins the rounding points; the deep models show
    that nothing else (fusion of the casts, half buffers) goes wrong.
    With a few flips and no chaos (tiny GPT in f16: 2 of 1024 elements of
    a weight gradient differ, by one f16 half ulp) the arbiter's truth
    sides with the interpreter, whose sums are exact too; --flip-band (for
    such models, never the MLP) accepts a normwise error up to RTOL + the
    half type's unit roundoff (2^-11 for f16, 2^-8 for bf16): one rounding
    in every element, far below what a wrong term or index gives. A
    train_step's parameter updates get the same band: an update is the
    gradient through the optimizer, flips included (a 2-layer 10-wide GPT
    in bf16 from random_models.py --shapes=edge: 1.8e-4 on one weight's
    update, the CPU and CUDA kernels agreeing to every digit).
  * an fp16 step that overflows. Under FP16_MIXED the loss is scaled
    (dynamic by default) and a step whose gradients overflow is skipped:
    grad_norm is then inf or nan, and the parameters and optimizer state
    stay as they were. A non-finite value anywhere else fails, as always;
    grad_norm under fp16 passes when it is non-finite exactly where the
    interpreter's is (the same values, nan for nan), and the parameter
    and state checks then hold the skip. Random fp16 models overflow that
    way in about one train_step in four (random_models.py --precision=
    fp16_mixed, random weights and state).
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402
import step_program  # noqa: E402

U = 2.0 ** -24
RTOL = 1e-4

_NP_DTYPES = {"f32": np.float32, "f64": np.float64, "i64": np.int64,
              "i32": np.int32}


def die(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def run(cmd, what):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    except OSError as e:
        die(f"{what}: cannot run {cmd[0]}: {e}")
    dt = time.time() - t0
    if p.returncode != 0:
        print(f"error: {what} failed (exit {p.returncode}): {' '.join(cmd)}",
              file=sys.stderr)
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        sys.exit(2)
    return p.stdout, dt


# ---------------------------------------------------------------------------
# What the model is: the step program and the imported IR
# ---------------------------------------------------------------------------

def find_dump(dump_dir, suffix):
    for f in sorted(os.listdir(dump_dir)):
        if f.endswith(suffix):
            return os.path.join(dump_dir, f)
    return None


def find_step_program(dump_dir, prefix=""):
    """NN-step-program.json (the training step's), or with prefix "eval-"
    NN-eval-step-program.json (the evaluation program's)."""
    return step_program.find(dump_dir, prefix)


def integer_widths(import_mlir):
    """{input name: (class count or None, ignore_index or None)} from the
    imported IR: how many rows/classes each integer input indexes."""
    text = open(import_mlir).read()
    m = re.search(r"func\.func @forward\((.*?)\)\s*(->|\{)", text, re.S)
    names = {}
    for a in re.finditer(r'(%arg\d+): tensor<[^>]*> \{[^{}]*sgraph\.input = '
                         r'"([^"]+)"', m.group(1) if m else text):
        names[a.group(1)] = a.group(2)
    body = text[m.end():] if m else text
    widths, ignore = {}, {}

    def note(arg, w):
        if arg in names:
            n = names[arg]
            widths[n] = min(widths.get(n, w), w)

    for e in re.finditer(r"sgraph\.embedding %\w+, (%arg\d+)\b[^\n]*?: "
                         r"\(tensor<(\d+)x", body):
        note(e.group(1), int(e.group(2)))
    for e in re.finditer(r"sgraph\.softmax_cross_entropy %\w+, (%arg\d+)"
                         r"( \{[^}]*\})?[^\n]*?: \(tensor<([0-9x]+)x?f", body):
        dims = e.group(3).rstrip("x").split("x")
        note(e.group(1), int(dims[-1]))
        ii = re.search(r"ignore_index = (-?\d+)", e.group(2) or "")
        if e.group(1) in names:
            ignore[names[e.group(1)]] = int(ii.group(1)) if ii else -100
    for e in re.finditer(r"sgraph\.one_hot (%arg\d+)\b[^\n]*-> "
                         r"tensor<([0-9x]+)x", body):
        note(e.group(1), int(e.group(2).split("x")[-1]))
    return widths, ignore


def optimizer_config(training_mlir):
    text = open(training_mlir).read()
    m = re.search(r"optimizer = \{([^}]*)\}", text)
    cfg = {"kind": "sgd"}
    if m:
        for kv in re.finditer(r'(\w+) = ("[^"]*"|[^,]+)', m.group(1)):
            v = kv.group(2).strip()
            if v.startswith('"'):
                v = v.strip('"')
            elif v in ("true", "false"):
                v = v == "true"
            else:
                v = float(v.split(":")[0])
            cfg[kv.group(1)] = v
    cfg.setdefault("beta1", 0.9)
    cfg.setdefault("beta2", 0.999)
    cfg.setdefault("epsilon", 1e-8)
    return cfg


# ---------------------------------------------------------------------------
# Random arguments
# ---------------------------------------------------------------------------

def random_param(rng, init, shape, dtype):
    dist = init.get("dist") if init else None
    if dist == "normal":
        a = rng.normal(0.0, init["stddev"], shape)
    elif dist == "uniform":
        a = rng.uniform(-init["bound"], init["bound"], shape)
    else:  # constant (norm weights 1, biases 0): perturbed, to be general
        v = init.get("value", 0.0) if init else 0.0
        a = v + rng.normal(0.0, 0.1 * max(abs(v), 0.2), shape)
    return np.asarray(a, dtype=dtype)


def random_state(rng, name, shape, dtype):
    # Plausible state: |m| ~ |g| ~ 1e-3 and v >= m^2 (as an EMA gives).
    m = rng.normal(0.0, 1e-3, shape)
    if name.endswith(".exp_avg_sq"):
        return np.asarray(m * m * rng.uniform(1.0, 4.0, shape) + 1e-8,
                          dtype=dtype)
    return np.asarray(m, dtype=dtype)


def make_arguments(args, prog, widths, ignore):
    rng = np.random.default_rng(args.seed)
    bufs = prog["buffers"]
    given = {}
    int_sizes = [1]
    for a in prog["arguments"]:
        b = bufs[a["buffer"]]
        shape, dt = tuple(b["shape"]), b["dtype"]
        if dt not in _NP_DTYPES:
            die(f"argument '{a['name']}' has dtype {dt}, which this script "
                "cannot write")
        npdt = _NP_DTYPES[dt]
        kind = a["kind"]
        if kind == "input":
            if np.issubdtype(npdt, np.integer):
                v = args.vocab or widths.get(a["name"])
                if not v:
                    die(f"cannot tell the range of integer input "
                        f"'{a['name']}': pass --vocab")
                x = rng.integers(0, v, shape)
                if a["name"] in ignore and x.size > 1:
                    drop = rng.random(shape) < 0.1
                    drop.flat[rng.integers(0, x.size)] = False
                    x = np.where(drop, ignore[a["name"]], x)
                int_sizes.append(x.size)
                given[a["name"]] = x.astype(npdt)
            else:
                given[a["name"]] = rng.normal(0.0, 1.0, shape).astype(npdt)
        elif kind == "step":
            given[a["name"]] = np.asarray(args.step, dtype=np.int64)
        elif kind == "param" and args.params == "given":
            given[a["name"]] = random_param(rng, a.get("init"), shape, npdt)
        elif kind == "opt_state" and args.state == "random":
            given[a["name"]] = random_state(rng, a["name"], shape, npdt)
        elif kind == "accumulator" and args.state == "random":
            # Earlier micro-batches' gradients: gradient-sized values.
            given[a["name"]] = rng.normal(0.0, 1e-2, shape).astype(npdt)
        elif kind == "hyper" and a["name"] == "loss_count" and \
                getattr(args, "loss_count", None) is not None:
            given["loss_count"] = np.asarray(args.loss_count, dtype=npdt)
        elif kind == "hyper" and a["name"] == "lr" and \
                getattr(args, "lr_scale", None) is not None:
            given["lr"] = np.asarray(a["default_value"] * args.lr_scale,
                                     dtype=npdt)
    if getattr(args, "loss_count", None) is not None and \
            "loss_count" not in given:
        die("--loss-count: the program has no loss_count argument (its loss "
            "is no mean cross-entropy over labels it is fed)")
    return given, max(int_sizes)


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------

def nrel(c, r):
    c = c.astype(np.float64)
    r = r.astype(np.float64)
    d = np.linalg.norm((c - r).ravel())
    n = np.linalg.norm(r.ravel())
    if n == 0.0:
        return 0.0 if d <= 1e-30 else math.inf
    return d / n


class Row:
    def __init__(self, name, check, err, bound, note=""):
        self.name, self.check, self.err, self.bound = name, check, err, bound
        self.note = note
        self.ok = bool(np.isfinite(err) and err <= bound)


def adam_direction(res, pname, cfg, t):
    m = res[f"optimizer.{pname}.exp_avg"].astype(np.float64)
    v = res[f"optimizer.{pname}.exp_avg_sq"].astype(np.float64)
    bc1 = 1.0 - cfg["beta1"] ** t
    bc2 = 1.0 - cfg["beta2"] ** t
    return (m / bc1) / (np.sqrt(v) / math.sqrt(bc2) + cfg["epsilon"])


def compare(args, prog, got, ref, given, cfg, acc_n):
    rows = []
    bufs = prog["buffers"]
    k = args.steps
    rtol = RTOL * k
    lr = float(ref["lr"]) if "lr" in ref else 0.0
    adam = cfg["kind"] in ("adam", "adamw")
    for res in prog["results"]:
        name, kind = res["name"], res["kind"]
        if name not in got:
            rows.append(Row(name, "missing in binary output", math.inf, 0))
            continue
        if name not in ref:
            rows.append(Row(name, "missing in interpreter output", math.inf,
                            0))
            continue
        c, r = got[name], ref[name]
        if c.shape != r.shape or c.dtype != r.dtype:
            rows.append(Row(name, f"shape/dtype {c.dtype}{list(c.shape)} vs "
                            f"{r.dtype}{list(r.shape)}", math.inf, 0))
            continue
        if not (np.all(np.isfinite(c)) and np.all(np.isfinite(r))):
            if (args.precision == "fp16_mixed" and name == "grad_norm"
                    and np.array_equal(c, r, equal_nan=True)):
                # An overflowed step, skipped (see the header).
                rows.append(Row(name, "fp16 overflow, as the interpreter's",
                                0.0, 0.0, f"{float(c)} vs {float(r)}"))
                continue
            rows.append(Row(name, "non-finite values", math.inf, 0))
            continue
        if np.issubdtype(c.dtype, np.integer):
            rows.append(Row(name, "exact", float(np.sum(c != r)), 0.0))
            continue
        if kind == "metric" and name == "lr":
            rows.append(Row(name, "rel", nrel(c, r), 1e-6))
        elif kind == "metric" and "acc" in name:
            e = abs(float(c) - float(r))
            rows.append(Row(name, "abs (1 flip)", e, 1.0 / acc_n + 1e-6,
                            f"{float(c):.6g} vs {float(r):.6g}"))
        elif kind == "param":
            rows.extend(compare_param(args, name, c, r, given, got, ref,
                                      cfg, lr, adam, rtol))
        elif kind == "opt_state" and name.endswith(".exp_avg_sq"):
            rows.append(Row(name, "normwise rel", nrel(c, r), 2 * rtol))
        else:  # loss, metrics, grad_norm, gradients, other state
            rows.append(Row(name, "normwise rel", nrel(c, r), rtol))
    return rows


def compare_param(args, name, c, r, given, got, ref, cfg, lr, adam, rtol):
    rows = []
    c64, r64 = c.astype(np.float64), r.astype(np.float64)
    p_old = given.get(name)
    one_step_known = p_old is not None and args.steps == 1
    if adam and f"optimizer.{name}.exp_avg" in ref:
        t = args.step + args.steps  # the last step's t = step + 1
        dc = adam_direction(got, name, cfg, t)
        dr = adam_direction(ref, name, cfg, t)
        # (1 + 1e-4): d recomputed here in f64 from f32 state is off by a
        # few u from the d each side used.
        pmax = np.maximum(np.abs(c64), np.abs(r64))
        if args.steps == 1:
            allow = (lr * (np.abs(dc) + np.abs(dr)) * (1 + 1e-4)
                     + 8 * U * pmax)
        else:
            allow = (args.steps * lr * (np.abs(dc).max() + np.abs(dr).max())
                     * (1 + 1e-4) + 8 * args.steps * U * pmax)
        diff = np.abs(c64 - r64)
        ratio = float(np.max(diff / np.maximum(allow, 1e-38)))
        worst = float(diff.max()) / lr if lr else float(diff.max())
        rows.append(Row(name, "|dp| <= lr(|d_c|+|d_r|)", ratio, 1.0,
                        f"max|p_c-p_r| = {worst:.3g} lr"))
        if one_step_known:
            p0 = p_old.astype(np.float64)
            e = (c64 - r64) + lr * (dc - dr)
            scale = (np.linalg.norm(p0.ravel())
                     + lr * np.linalg.norm(dr.ravel()))
            rows.append(Row(name, "update = -lr*d (own state)",
                            float(np.linalg.norm(e.ravel()) / scale), 1e-5))
    elif p_old is not None and args.steps == 1:
        p0 = p_old.astype(np.float64)
        dc, dr = c64 - p0, r64 - p0
        d = float(np.linalg.norm((dc - dr).ravel()))
        bound = rtol * np.linalg.norm(dr.ravel()) + 4 * U * np.linalg.norm(
            r64.ravel())
        n = np.linalg.norm(dr.ravel())
        rows.append(Row(name, "update normwise rel",
                        d / n if n else d, (bound / n) if n else bound))
    else:
        rows.append(Row(name, "normwise rel (p)", nrel(c, r), rtol))
    return rows


def f64_truth(args, given, batch, work):
    """The same function evaluated by the interpreter in f64 (model dtype
    FLOAT64, the same argument values widened): the exact result to ~1e-16,
    an arbiter for tensors that fail the f32 comparison. Parameters not
    given are initialized in f64 from the same seed (they then differ from
    the f32 run's by at most one f32 rounding)."""
    text = open(args.model).read()
    if re.search(r"^dtype:", text, re.M):
        text = re.sub(r"^dtype:.*$", "dtype: FLOAT64", text, flags=re.M)
    else:
        text = re.sub(r"^(name:.*)$", r"\1\ndtype: FLOAT64", text, count=1,
                      flags=re.M)
    text = re.sub(r"dtype: FLOAT32\b", "dtype: FLOAT64", text)
    model64 = os.path.join(work, "model-f64.pbtxt")
    with open(model64, "w") as f:
        f.write(text)
    # Every f32 argument becomes f64, except those the f64 model keeps in
    # f32 whatever its dtype (a step count kept as f32): read from its
    # training-phase signature.
    ir, _ = run([args.sinterc, model64, *batch, *reference_flags(args),
                 *runtime_lr_flag(args), "--emit=training"],
                "sinterc (the f64 model's signature)")
    kept = set(re.findall(r'tensor<(?:[0-9]+x)*f32> \{sgraph\.[a-z_]+ = '
                          r'"([^"]+)"', ir))
    wide = {n: (v.astype(np.float64)
                if v.dtype == np.float32 and n not in kept else v)
            for n, v in given.items()}
    inp = os.path.join(work, "in-f64.safetensors")
    write_safetensors(inp, wide)
    out = os.path.join(work, "ref-f64.safetensors")
    run([args.sinterc, model64, *batch, *reference_flags(args),
         *runtime_lr_flag(args),
         f"--run={args.entry}", f"--input={inp}", f"--output={out}"],
        "interpreter (f64)")
    return read_safetensors(out)[0]


def reference_flags(args):
    """The interpreter runs the training phase the binary was compiled
    from: the target and its flags decide, under mixed precision, where a
    linear layer's GELU rounds (its matmul library's epilogue,
    docs/MixedPrecision.md)."""
    return [f"--target={args.target}", *args.sinterc_flag]


def runtime_lr_flag(args):
    """The interpreter's train_step takes the `lr` argument only when asked."""
    return ["--runtime-lr"] if args.lr_scale is not None else []


def exact_fixed_lr(args, batch, inp, got, work):
    """Problems (strings) between the binary's outputs `got` (default `lr`)
    and those of a binary compiled with the peak learning rate a constant:
    both must hold the same bits."""
    binary = os.path.join(work, "bin-fixed-lr")
    run([args.sinterc, args.model, *batch, f"--entry={args.entry}",
         f"--target={args.target}", *args.sinterc_flag,
         "--runtime-lr=false", "-o", binary], "sinterc (--runtime-lr=false)")
    out = os.path.join(work, "compiled-fixed-lr.safetensors")
    cmd = [binary, f"--inputs={inp}", f"--outputs={out}",
           f"--steps={args.steps}"]
    if args.threads:
        cmd.append(f"--threads={args.threads}")
    run(cmd, "compiled binary (--runtime-lr=false)")
    fixed, _ = read_safetensors(out)
    problems = []
    if sorted(fixed) != sorted(got):
        problems.append(f"results {sorted(fixed)} vs {sorted(got)}")
    for name in sorted(set(fixed) & set(got)):
        a, b = fixed[name], got[name]
        if a.dtype != b.dtype or a.shape != b.shape or \
                a.tobytes() != b.tobytes():
            problems.append(f"{name}: not bitwise identical (max |diff| "
                            f"{float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))):.3g})")
    return problems


HALF_UNIT_ROUNDOFF = {"bf16_mixed": 2.0 ** -8, "fp16_mixed": 2.0 ** -11}


def flip_band(rows, precision):
    """--flip-band: a failing normwise check passes within RTOL plus the
    half type's unit roundoff (flipped roundings; see the header)."""
    u = HALF_UNIT_ROUNDOFF.get(precision)
    if u is None:
        return
    # A train_step's parameter updates carry their gradients' flips (an
    # update is -lr times the gradient, through the optimizer), so their
    # normwise checks get the same band.
    for r in rows:
        if r.ok or not (r.check.startswith("normwise rel")
                        or r.check.startswith("update normwise rel")):
            continue
        if r.err <= r.bound + u:
            r.ok = True
            r.check = r.check.replace("normwise rel", "half flip band")
            r.bound += u


def arbitrate(rows, got, ref, truth):
    """A normwise check that fails is a bug unless the tensor is so badly
    conditioned that the interpreter's own f32 result is about as far from
    the f64 truth: then the compiled result passes if it is within 4x the
    interpreter's error (+ RTOL) of the truth. (4x: the compiled code rounds
    inside fused chains and reassociates sums, the interpreter rounds once
    per op; on well-conditioned tensors the two are equally accurate.)"""
    for r in rows:
        if r.ok or not r.check.startswith("normwise rel") or \
                r.name not in truth:
            continue
        t = truth[r.name]
        ec, er = nrel(got[r.name], t), nrel(ref[r.name], t)
        r.note = (f"ill-conditioned? vs f64: compiled {ec:.3g}, interpreter "
                  f"{er:.3g}")
        if ec <= 4 * er + r.bound:
            r.ok = True
            r.check = r.check.replace("normwise rel", "f64 arbiter")
            r.err, r.bound = ec, 4 * er + r.bound


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?")
    ap.add_argument("--entry", default="train_step",
                    choices=["train_step", "forward_grad",
                             "accumulate_step"])
    ap.add_argument("--batch-size", type=int)
    ap.add_argument("--step", type=int, default=0)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int,
                    help="range of integer inputs (default: from the model)")
    ap.add_argument("--params", choices=["given", "init"],
                    help="train_step parameters: random and given (default "
                    "for train_step), or from the initializers (default for "
                    "forward_grad)")
    ap.add_argument("--state", choices=["zero", "random"], default="zero")
    ap.add_argument("--sinterc", default="sinterc")
    ap.add_argument("--sinterc-flag", action="append", default=[],
                    help="one more flag for sinterc's compile of the "
                         "binary (e.g. --matmul-epilogues=...); repeatable")
    ap.add_argument("--target", default="cpu",
                    help="sinterc --target for the binary (cuda-host: the "
                         "CUDA target's kernels, run on the host)")
    ap.add_argument("--precision",
                    choices=["fp32", "bf16_mixed", "fp16_mixed"],
                    help="override the model's training.precision")
    ap.add_argument("--flip-band", action="store_true",
                    help="with --precision: accept flipped half roundings "
                    "(RTOL + the half unit roundoff, normwise)")
    ap.add_argument("--binary")
    ap.add_argument("--program", help="step program JSON of --binary")
    ap.add_argument("--work-dir")
    ap.add_argument("--threads", type=int)
    ap.add_argument("--label", help="name to print (default: the model's)")
    ap.add_argument("--lr-scale", type=float,
                    help="run with the peak learning rate (the binary's "
                    "`lr` argument) at this multiple of the model's")
    ap.add_argument("--loss-count", type=float,
                    help="run with the `loss_count` argument (the step's "
                    "count of labels shared out over ranks and "
                    "micro-batches) at this value instead of its default, "
                    "0 (each batch's own count)")
    ap.add_argument("--exact-fixed-lr", action="store_true",
                    help="also require bitwise equality with a binary "
                    "compiled with --runtime-lr=false")
    ap.add_argument("--prepare", action="store_true",
                    help="compile and compute the references into "
                    "--work-dir for --replay; run no binary")
    ap.add_argument("--replay", metavar="W",
                    help="run and check what --prepare left in W")
    args = ap.parse_args()
    if args.replay:
        replay(args)
        return
    if not args.model:
        die("name the model (or --replay=W)")
    if args.params is None:
        args.params = ("given" if args.entry in ("train_step",
                                                 "accumulate_step")
                       else "init")
    if args.steps < 1:
        die("--steps must be >= 1")
    if bool(args.binary) != bool(args.program):
        die("--binary and --program go together")

    work = args.work_dir or tempfile.mkdtemp(prefix="sinter-cmp-")
    os.makedirs(work, exist_ok=True)
    dump = os.path.join(work, "dump")
    batch = [f"--batch-size={args.batch_size}"] if args.batch_size else []
    if args.precision:
        batch.append(f"--precision={args.precision}")
    label = args.label or os.path.basename(args.model)
    label += (f" {args.entry} B={args.batch_size or 'model'} step={args.step}"
              f" steps={args.steps} seed={args.seed}")
    if args.lr_scale is not None:
        label += f" lr x{args.lr_scale:g}"
    if args.loss_count is not None:
        label += f" loss_count={args.loss_count:g}"

    # 1. The binary and its step program.
    if args.binary:
        binary, program = args.binary, args.program
        shutil.rmtree(dump, ignore_errors=True)
        os.makedirs(dump)
        # The IR dumps still come from sinterc (integer widths, optimizer).
        run([args.sinterc, args.model, *batch, f"--dump-dir={dump}",
             "--compile-to=training", "-o", os.devnull], "sinterc")
        t_compile = 0.0
    else:
        shutil.rmtree(dump, ignore_errors=True)
        binary = os.path.join(work, "bin")
        _, t_compile = run([args.sinterc, args.model, *batch,
                            f"--entry={args.entry}", f"--dump-dir={dump}",
                            f"--target={args.target}", *args.sinterc_flag,
                            "-o", binary], "sinterc (compile)")
        program = find_step_program(dump)
    prog = step_program.load(program)
    if prog.get("function") != args.entry:
        die(f"the program's function is @{prog.get('function')}, not "
            f"@{args.entry}")
    widths, ignore = integer_widths(find_dump(dump, "-import.mlir"))
    cfg = optimizer_config(find_dump(dump, "-training.mlir"))

    # 2. Arguments.
    given, acc_n = make_arguments(args, prog, widths, ignore)
    inp = os.path.join(work, "in.safetensors")
    write_safetensors(inp, given)

    # 3. Binary, then the interpreter step by step.
    out_c = os.path.join(work, "compiled.safetensors")
    cmd = [binary, f"--inputs={inp}", f"--outputs={out_c}",
           f"--steps={args.steps}"]
    if args.threads:
        cmd.append(f"--threads={args.threads}")
    if args.prepare:
        t_bin = 0.0
    else:
        _, t_bin = run(cmd, "compiled binary")
        got, _ = read_safetensors(out_c)

    t_ref = 0.0
    cur = dict(given)
    kinds = {a["name"]: a["kind"] for a in prog["arguments"]}
    for i in range(args.steps):
        if i > 0:
            inp_i = os.path.join(work, f"in{i}.safetensors")
            write_safetensors(inp_i, cur)
        else:
            inp_i = inp
        out_r = os.path.join(work, f"ref{i}.safetensors")
        _, dt = run([args.sinterc, args.model, *batch,
                     *reference_flags(args),
                     *runtime_lr_flag(args), f"--run={args.entry}",
                     f"--input={inp_i}", f"--output={out_r}"], "interpreter")
        t_ref += dt
        ref, _ = read_safetensors(out_r)
        for n, v in ref.items():
            if kinds.get(n) in ("param", "opt_state", "accumulator"):
                cur[n] = v
        if "step" in kinds:
            cur["step"] = np.asarray(args.step + i + 1, dtype=np.int64)

    if args.prepare:
        write_safetensors(os.path.join(work, "ref.safetensors"), ref)
        f64_truth(args, given, batch, work)
        saved = {k: v for k, v in vars(args).items()
                 if k not in ("prepare", "replay", "work_dir", "binary",
                              "program", "sinterc")}
        saved.update(acc_n=acc_n, label=label, cfg=cfg)
        with open(os.path.join(work, "prepared.json"), "w") as f:
            json.dump(saved, f, indent=1)
        print(f"prepared {label} in {work}")
        return
    report(args, label, prog, got, ref, given, cfg, acc_n, work,
           lambda: f64_truth(args, given, batch, work),
           lambda: exact_fixed_lr(args, batch, inp, got, work),
           t_compile, t_bin, t_ref)


def replay(args):
    """Runs the binary --prepare compiled (or --binary) on the inputs it
    wrote and compares with the references it computed."""
    work = args.replay
    with open(os.path.join(work, "prepared.json")) as f:
        saved = json.load(f)
    binary = args.binary or os.path.join(work, "bin")
    for k, v in saved.items():
        if k not in ("acc_n", "label", "cfg"):
            setattr(args, k, v)
    prog = step_program.load(find_step_program(os.path.join(work, "dump")))
    given, _ = read_safetensors(os.path.join(work, "in.safetensors"))
    ref, _ = read_safetensors(os.path.join(work, "ref.safetensors"))
    out_c = os.path.join(work, "compiled.safetensors")
    cmd = [binary, f"--inputs={os.path.join(work, 'in.safetensors')}",
           f"--outputs={out_c}", f"--steps={args.steps}"]
    _, t_bin = run(cmd, "compiled binary")
    got, _ = read_safetensors(out_c)
    f64 = os.path.join(work, "ref-f64.safetensors")
    report(args, saved["label"], prog, got, ref, given, saved["cfg"],
           saved["acc_n"], work,
           lambda: read_safetensors(f64)[0] if os.path.exists(f64) else {},
           lambda: [], 0.0, t_bin, 0.0)


def report(args, label, prog, got, ref, given, cfg, acc_n, work, truth,
           fixed_lr, t_compile, t_bin, t_ref):
    # 4. Compare.
    rows = compare(args, prog, got, ref, given, cfg, acc_n)
    if args.flip_band:
        flip_band(rows, args.precision)
    if args.steps == 1 and any(not r.ok and r.check.startswith("normwise")
                               for r in rows):
        arbitrate(rows, got, ref, truth())
    bad = [r for r in rows if not r.ok]
    if args.exact_fixed_lr:
        for p in fixed_lr():
            bad.append(Row(p, "bitwise = --runtime-lr=false", 1.0, 0.0))
            rows.append(bad[-1])
    print(f"== {label}: {len(rows) - len(bad)}/{len(rows)} checks pass "
          f"(compile {t_compile:.1f}s, binary {t_bin:.2f}s, interpreter "
          f"{t_ref:.1f}s)")
    for key in ("loss", "lr", "grad_norm"):
        if key in got and key in ref:
            print(f"   {key}: compiled {float(got[key]):.9g}  interpreter "
                  f"{float(ref[key]):.9g}")
    by_check = {}
    for r in rows:
        cur_w = by_check.get(r.check)
        if cur_w is None or r.err / max(r.bound, 1e-300) > \
                cur_w.err / max(cur_w.bound, 1e-300):
            by_check[r.check] = r
    for chk, r in sorted(by_check.items()):
        print(f"   worst {chk:26s} {r.err:10.3g} (bound {r.bound:.3g}) "
              f"{r.name} {r.note}")
    if bad:
        print(f"MISMATCH: {len(bad)} check(s) fail; every check:")
        print(f"   {'tensor':52s} {'check':26s} {'error':>10s} {'bound':>10s}")
        for r in rows:
            mark = "" if r.ok else "  <-- FAIL"
            print(f"   {r.name:52s} {r.check:26s} {r.err:10.3g} "
                  f"{r.bound:10.3g} {r.note}{mark}")
        print(f"   work dir: {work}")
        sys.exit(1)
    print("PASS")
    if not args.work_dir and not args.replay:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
