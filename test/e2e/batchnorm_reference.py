#!/usr/bin/env python3
"""Holds the batch_norm layer to PyTorch's definition of nn.BatchNorm1d and
nn.BatchNorm2d, written here directly in numpy, and checks that its running
statistics travel through the training step, gradient accumulation, data
parallelism, evaluation and checkpoints as PyTorch's buffers do.

  grads     A model in f64 with batch_norm after a convolution (2-d), on a
            dense layer's [B, C] (1-d), on [B, C, L], without the affine
            parameters, without running statistics, and frozen on the
            input (use_batch_statistics: false: the running statistics in
            training too) and batch statistics in evaluation too
            (use_batch_statistics: true), runs in the
            reference interpreter (`sinterc --run=forward_grad`) on random
            parameters and images: the loss equals the training-mode
            forward pass here (the batch's statistics) to 1e-12, and every
            parameter's gradient its central differences to 1e-6.
  step      The same model's `--run=train_step` from random running
            statistics returns each buffer's new value, momentum x the
            batch's statistic + (1 - momentum) x the old one, the variance
            unbiased, to 1e-12 (a biased variance, the momentum the other
            way round, or no update fails), and leaves the frozen layer's
            as they were; `--run=eval_step` with those
            buffers gives the eval-mode loss here (the running statistics
            normalize) to 1e-12, and returns no buffer.
  buffers   A binary whose first layer normalizes its input, on a dataset of
            identical rows, so that every batch's statistics are known
            whatever rows a rank reads: after S steps the checkpoint's
            running statistics are the formula's S updates, for one process,
            for K micro-batches per step (K updates a step, as PyTorch's
            forward passes under accumulation) and for W ranks (the ranks'
            mean: a sum would be W times it). On distinct rows, W ranks with
            --check-every=1 finish: a rank keeping its own statistics would
            drift from the others and stop the job.
  train     examples/cnn_batchnorm.pbtxt (the CNN example with batch_norm
            after each convolution) trains from the command line: held-out
            accuracy at least 0.97 after 320 steps (0.984 here; the CNN
            example without it reaches 0.96), and the checkpoint holds
            nn.BatchNorm2d's names and
            shapes with statistics moved away from their initial values;
            --init takes it with PyTorch's num_batches_tracked added (not
            on a layer without batch norm).

usage: batchnorm_reference.py {grads,step,buffers,train} --sinterc=PATH
           --work-dir=DIR [--launch=PATH]
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from central_difference import gradient_failures  # noqa: E402
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402


def batch_norm(x, weight, bias, mean=None, var=None, eps=1e-5):
    """nn.BatchNorm*d: over every axis but 1; with `mean` and `var` given
    (eval mode) those normalize, else the batch's mean and biased
    variance."""
    axes = tuple(a for a in range(x.ndim) if a != 1)
    shape = [1] * x.ndim
    shape[1] = x.shape[1]
    if mean is None:
        mean = x.mean(axis=axes)
        var = ((x - mean.reshape(shape)) ** 2).mean(axis=axes)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if weight is not None:
        y = y * weight.reshape(shape) + bias.reshape(shape)
    return y


def batch_stats(x):
    """The batch's mean and unbiased variance per channel, which nn.BatchNorm
    moves its running statistics towards."""
    axes = tuple(a for a in range(x.ndim) if a != 1)
    n = x.size // x.shape[1]
    return x.mean(axis=axes), x.var(axis=axes) * n / (n - 1)


def conv2d_same3(x, w):
    """A 3 x 3 convolution with padding 1, no bias (nn.Conv2d)."""
    n, c, h, wd = x.shape
    xp = np.zeros((n, c, h + 2, wd + 2))
    xp[:, :, 1:-1, 1:-1] = x
    out = np.zeros((n, w.shape[0], h, wd))
    for p in range(3):
        for q in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, p:p + h, q:q + wd], w[:, :, p, q])
    return out


MODEL = """
dtype: FLOAT64
input { name: "x" shape: [-1, 2, 5, 4] dtype: FLOAT64 }
input { name: "y" shape: [-1] dtype: INT64 }
layer { name: "bn0" input: "x" batch_norm { use_batch_statistics: false epsilon: 0.01 } }
layer { name: "conv" input: "bn0" conv2d { out_channels: 3 kernel_size: 3 padding: 1 bias: false } }
layer { name: "bn1" input: "conv" batch_norm { } }
layer { name: "act" input: "bn1" activation { kind: TANH } }
layer { name: "flat" input: "act" flatten {} }
layer { name: "fc1" input: "flat" dense { units: 6 bias: false } }
layer { name: "bn2" input: "fc1" batch_norm { momentum: 0.3 epsilon: 1e-3 } }
layer { name: "act2" input: "bn2" activation { kind: SIGMOID } }
layer { name: "seq" input: "act2" op { type: "reshape" result { shape: [-1, 2, 3] } } }
layer { name: "bn3" input: "seq" batch_norm { affine: false momentum: 0.5 use_batch_statistics: true } }
layer { name: "flat3" input: "bn3" flatten {} }
layer { name: "fc2" input: "flat3" dense { units: 4 bias: false } }
layer { name: "bn4" input: "fc2" batch_norm { track_running_stats: false } }
loss { softmax_cross_entropy { logits: "bn4" labels: "y" } }
training { batch_size: 3 optimizer { sgd { lr: 0.1 } } }
"""

# No bias ahead of a batch_norm (it would cancel: a zero gradient, which
# compiled code and the interpreter round to different tiny values).
PARAMS = {"bn0.weight": (2,), "bn0.bias": (2,),
          "conv.weight": (3, 2, 3, 3), "bn1.weight": (3,), "bn1.bias": (3,),
          "fc1.weight": (6, 60), "bn2.weight": (6,), "bn2.bias": (6,),
          "fc2.weight": (4, 6), "bn4.weight": (4,), "bn4.bias": (4,)}
# (layer, momentum, eps) of the layers whose running statistics a training
# step updates; bn0 (use_batch_statistics: false) has buffers it only
# reads, bn4 (track_running_stats: false) none.
TRACKED = [("bn1", 0.1, 1e-5), ("bn2", 0.3, 1e-3), ("bn3", 0.5, 1e-5)]
BUFFERS = {"bn0": 2, "bn1": 3, "bn2": 6, "bn3": 2}
# Which statistics normalize, by layer: in training, and in evaluation.
RUNNING_IN_TRAINING = {"bn0"}
BATCH_IN_EVAL = {"bn3", "bn4"}


def forward(p, x, y, buffers, eval_mode=False):
    """The loss, and each layer's input (for its batch statistics), in
    training or eval mode; `buffers` holds the running statistics."""
    inputs = {}

    def bn(name, h, affine=True, eps=1e-5):
        inputs[name] = h
        running = name in RUNNING_IN_TRAINING or (eval_mode and name not in BATCH_IN_EVAL)
        stats = (buffers[name + ".running_mean"], buffers[name + ".running_var"]) \
            if running else (None, None)
        w, b = (p[name + ".weight"], p[name + ".bias"]) if affine else (None, None)
        return batch_norm(h, w, b, *stats, eps=eps)

    h = bn("bn0", x, eps=1e-2)
    h = np.tanh(bn("bn1", conv2d_same3(h, p["conv.weight"])))
    h = h.reshape(len(x), -1) @ p["fc1.weight"].T
    h = 1 / (1 + np.exp(-bn("bn2", h, eps=1e-3)))
    h = bn("bn3", h.reshape(len(x), 2, 3), affine=False)
    h = h.reshape(len(x), -1) @ p["fc2.weight"].T
    logits = bn("bn4", h)  # no running statistics: the batch's in eval too
    m = logits.max(axis=1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(y)), y].mean(), inputs


def run(sinterc, work, model, entry, tensors):
    os.makedirs(work, exist_ok=True)
    model_path = os.path.join(work, "model.pbtxt")
    with open(model_path, "w") as f:
        f.write(model)
    inputs = os.path.join(work, entry + ".in.safetensors")
    out = os.path.join(work, entry + ".out.safetensors")
    write_safetensors(inputs, tensors)
    subprocess.run([sinterc, model_path, "--run=" + entry, "--input=" + inputs,
                    "--output=" + out], check=True)
    return {k: np.asarray(v) for k, v in read_safetensors(out)[0].items()}


def random_case():
    rng = np.random.default_rng(11)
    params = {k: rng.uniform(-0.8, 0.8, s) for k, s in PARAMS.items()}
    x = rng.normal(size=(3, 2, 5, 4)) * 2 + 0.5
    y = np.array([2, 0, 3], dtype=np.int64)
    buffers = {}
    for name, c in BUFFERS.items():
        buffers[name + ".running_mean"] = rng.normal(size=c)
        buffers[name + ".running_var"] = rng.uniform(0.5, 2, size=c)
    return params, x, y, buffers


def check_grads(args):
    params, x, y, buffers = random_case()
    out = run(args.sinterc, args.work_dir, MODEL, "forward_grad",
              {**params, **buffers, "x": x, "y": y})
    failures = []
    loss, _ = forward(params, x, y, buffers)
    print(f"loss: interpreter {float(out['loss']):.15g}  reference {loss:.15g}")
    if abs(float(out["loss"]) - loss) > 1e-12:
        failures.append(f"loss {float(out['loss'])!r} differs from the reference {loss!r}")
    failures += gradient_failures(lambda p: forward(p, x, y, buffers)[0], params, out)
    unexpected = sorted(k for k in out if "running" in k)
    if unexpected:
        failures.append(f"forward_grad returns buffers {unexpected}")
    return failures


def check_step(args):
    params, x, y, buffers = random_case()
    failures = []
    out = run(args.sinterc, args.work_dir, MODEL, "train_step",
              {**params, **buffers, "x": x, "y": y})
    _, inputs = forward(params, x, y, buffers)
    for name, momentum, _ in TRACKED:
        mean, var = batch_stats(inputs[name])
        for stat, batch in (("running_mean", mean), ("running_var", var)):
            key = f"{name}.{stat}"
            want = momentum * batch + (1 - momentum) * buffers[key]
            if key not in out:
                failures.append(f"train_step returns no {key}")
                continue
            err = np.abs(out[key] - want).max()
            print(f"{key}: max |train_step - momentum update| = {err:.2e}")
            if err > 1e-12:
                failures.append(f"{key} after the step is off by {err:.2e}")
    for key in ("bn4.running_mean", "bn3.weight"):
        if key in out:
            failures.append(f"train_step returns {key}, which the layer does not have")
    for key in ("bn0.running_mean", "bn0.running_var"):
        if not np.array_equal(out.get(key, buffers[key]), buffers[key]):
            failures.append(f"train_step changes {key} (use_batch_statistics: false)")

    ev = run(args.sinterc, args.work_dir, MODEL, "eval_step",
             {**params, **buffers, "x": x, "y": y})
    want, _ = forward(params, x, y, buffers, eval_mode=True)
    train_mode, _ = forward(params, x, y, buffers)
    got = float(ev["loss"])
    print(f"eval loss: interpreter {got:.15g}  reference {want:.15g}  "
          f"(training mode {train_mode:.6g})")
    if abs(got - want) > 1e-12:
        failures.append(f"eval_step's loss {got!r} is not the eval-mode loss {want!r}")
    if sorted(ev) != ["loss"]:
        failures.append(f"eval_step returns {sorted(ev)}, not the loss alone")
    return failures


# The buffers check: the input normalized first, so batch statistics are
# the data's, whatever the parameters.
BUFFER_MODEL = """
name: "bn_buffers"
input { name: "x" shape: [-1, 3, 4] dtype: FLOAT32 }
input { name: "y" shape: [-1] dtype: INT64 }
layer { name: "bn" input: "x" batch_norm { momentum: 0.25 } }
layer { name: "flat" input: "bn" flatten {} }
layer { name: "fc" input: "flat" dense { units: 2 } }
loss { softmax_cross_entropy { logits: "fc" labels: "y" } }
training { batch_size: 4 grad_accumulation_steps: %(k)d optimizer { sgd { lr: 0.1 } } }
"""


def expected_buffers(row, updates, rows_per_batch, momentum=0.25):
    x = np.broadcast_to(row, (rows_per_batch,) + row.shape)
    mean, var = batch_stats(x)
    rm, rv = np.zeros_like(mean), np.ones_like(var)
    for _ in range(updates):
        rm = momentum * mean + (1 - momentum) * rm
        rv = momentum * var + (1 - momentum) * rv
    return rm, rv


def train_binary(args, binary, data, steps, work, world=1, extra=()):
    save = os.path.join(work, "ckpt")
    cmd = [binary, "--data=" + data, f"--steps={steps}", "--save=" + save,
           "--quiet", *extra]
    if world > 1:
        cmd = [args.launch, "-n", str(world)] + cmd
    subprocess.run(cmd, check=True)
    latest = open(os.path.join(save, "latest")).read().strip()
    return {k: np.asarray(v) for k, v in
            read_safetensors(os.path.join(save, latest, "model.safetensors"))[0].items()}


def check_buffers(args):
    failures = []
    rng = np.random.default_rng(3)
    row = rng.normal(size=(3, 4)).astype(np.float32) * 3 + 1
    data = os.path.join(args.work_dir, "same-rows")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "x.npy"), np.broadcast_to(row, (64, 3, 4)).copy())
    np.save(os.path.join(data, "y.npy"), (np.arange(64) % 2).astype(np.int64))
    varied = os.path.join(args.work_dir, "varied-rows")
    os.makedirs(varied, exist_ok=True)
    np.save(os.path.join(varied, "x.npy"), rng.normal(size=(64, 3, 4)).astype(np.float32))
    np.save(os.path.join(varied, "y.npy"), (np.arange(64) % 2).astype(np.int64))

    binaries = {}
    for k in (1, 2):
        work = os.path.join(args.work_dir, f"k{k}")
        os.makedirs(work, exist_ok=True)
        model = os.path.join(work, "model.pbtxt")
        with open(model, "w") as f:
            f.write(BUFFER_MODEL % {"k": k})
        binaries[k] = os.path.join(work, "train")
        subprocess.run([args.sinterc, model, "-o", binaries[k]], check=True)

    steps = 3
    runs = [("one process", binaries[1], 1, steps),
            ("2 micro-batches a step", binaries[2], 1, 2 * steps),
            ("2 ranks", binaries[1], 2, steps)]
    for what, binary, world, updates in runs:
        work = os.path.join(args.work_dir, what.replace(" ", "-"))
        got = train_binary(args, binary, data, steps, work, world)
        rm, rv = expected_buffers(row, updates, 4)
        for key, want in (("bn.running_mean", rm), ("bn.running_var", rv)):
            err = np.abs(got[key] - want).max() / np.abs(want).max()
            print(f"{what}: {key} after {steps} steps ({updates} updates): "
                  f"max relative error {err:.1e}")
            if err > 1e-5:
                failures.append(f"{what}: {key} is {got[key]}, not {want}")

    # Distinct rows: the ranks' batch statistics differ, and only taking
    # their mean every step keeps the ranks' buffers equal.
    work = os.path.join(args.work_dir, "varied-2-ranks")
    got = train_binary(args, binaries[1], varied, 6, work, 2, ["--check-every=1"])
    print("2 ranks on distinct rows with --check-every=1: the ranks agree")
    if np.allclose(got["bn.running_var"], 1.0):
        failures.append("the running variance never moved on distinct rows")
    return failures


def check_train(args):
    here = os.path.dirname(os.path.abspath(__file__))
    examples = os.path.join(here, "..", "..", "examples")
    os.makedirs(args.work_dir, exist_ok=True)
    path = os.path.join(examples, "cnn_batchnorm.pbtxt")
    binary = os.path.join(args.work_dir, "train")
    subprocess.run([args.sinterc, path, "-o", binary], check=True)
    log = os.path.join(args.work_dir, "metrics.jsonl")
    save = os.path.join(args.work_dir, "ckpt")
    subprocess.run([binary, "--data=" + os.path.join(examples, "data", "mlp_classifier"),
                    "--steps=320", "--eval-every=160", "--eval-batches=8",
                    "--log-jsonl=" + log, "--save=" + save, "--quiet"], check=True)
    with open(log) as f:
        evals = [r for r in map(json.loads, f) if "eval_accuracy" in r]
    if not evals:
        return ["no evaluation in " + log]
    failures = []
    accuracy = evals[-1]["eval_accuracy"]
    print(f"held-out accuracy after {evals[-1]['step']} steps: {accuracy:.4f}")
    if accuracy < 0.97:
        failures.append(f"held-out accuracy {accuracy:.4f} is below 0.97")
    latest = open(os.path.join(save, "latest")).read().strip()
    tensors = read_safetensors(os.path.join(save, latest, "model.safetensors"))[0]
    for bn, c in (("bn1", 16), ("bn2", 32)):
        shapes = {k: tuple(np.asarray(v).shape) for k, v in tensors.items()
                  if k.startswith(bn + ".")}
        want = {f"{bn}.{s}": (c,) for s in ("weight", "bias", "running_mean", "running_var")}
        print(f"checkpoint: " + ", ".join(f"{k} {list(v)}" for k, v in sorted(shapes.items())))
        if shapes != want:
            failures.append(f"the checkpoint holds {shapes}, not nn.BatchNorm2d's {want}")
            continue
        mean = np.asarray(tensors[bn + ".running_mean"])
        var = np.asarray(tensors[bn + ".running_var"])
        if np.abs(mean).max() == 0 or np.abs(var - 1).max() == 0:
            failures.append(f"{bn}'s running statistics never moved")

    # A state_dict saved from torch.nn has each batch norm's counter too:
    # --init takes it (batch_norm does not read it), and the same name on a
    # layer without running statistics is still an unknown tensor.
    state = {k: np.asarray(v) for k, v in tensors.items()}
    for bn in ("bn1", "bn2"):
        state[bn + ".num_batches_tracked"] = np.array(320, dtype=np.int64)
    init = os.path.join(args.work_dir, "torch-state.safetensors")
    write_safetensors(init, state)
    data = "--data=" + os.path.join(examples, "data", "mlp_classifier")
    ok = subprocess.run([binary, data, "--steps=1", "--init=" + init, "--quiet"],
                        capture_output=True, text=True)
    print(f"--init with num_batches_tracked: exit {ok.returncode}")
    if ok.returncode != 0:
        failures.append(f"--init refuses PyTorch's batch counters: {ok.stderr.strip()}")
    state["fc1.num_batches_tracked"] = np.array(320, dtype=np.int64)
    write_safetensors(init, state)
    bad = subprocess.run([binary, data, "--steps=1", "--init=" + init, "--quiet"],
                         capture_output=True, text=True)
    print(f"--init with fc1.num_batches_tracked: {bad.stderr.strip()}")
    if bad.returncode == 0 or "'fc1.num_batches_tracked'" not in bad.stderr:
        failures.append("a counter of a layer without batch norm was taken")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("check", choices=["grads", "step", "buffers", "train"])
    parser.add_argument("--sinterc", required=True)
    parser.add_argument("--launch")
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()
    failures = {"grads": check_grads, "step": check_step, "buffers": check_buffers,
                "train": check_train}[args.check](args)
    for f in failures:
        print("FAIL: " + f)
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
