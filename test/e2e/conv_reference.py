#!/usr/bin/env python3
"""Holds the conv2d, max_pool2d, avg_pool2d and flatten layers to their
definitions, written here directly (numpy, no im2col), as PyTorch's
nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d and nn.Flatten define them.

  windows   A model in f64 with every window option (a kernel of 3 x 2,
            strides 2 x 1, padding 1 x 0, dilation 1 x 2; max pooling with
            padding; a convolution of 2 groups, one padded "same" with an
            even kernel and a stride (padding after only), a depthwise one; a 1 x 1
            convolution without bias; average pooling that counts its
            padding; a global average pooling) runs in the reference interpreter
            (`sinterc --run=forward_grad`) on random parameters and images.
            Its loss must equal this file's forward pass to 1e-12, and every
            parameter's gradient its central differences to 1e-6.
  ties      Max pooling's gradient on integer images, whose windows tie
            often: the gradient of each window goes to its first maximal
            element in row-major order, all of it, as PyTorch's does. A
            split among the ties, or the last maximum, fails. A NaN pixel
            is its window's maximum (the loss is NaN). Small overlapping
            windows (an op per offset) and large ones that tile the input
            (a reduction) alike.
  train     examples/cnn_classifier.pbtxt trains from the command line on the
            bundled images: the held-out accuracy after 320 steps (10
            epochs) is at least 0.93 (0.96 here), where the MLP example
            reaches about 0.84 (examples/data/mlp_classifier/README.md):
            shifted strokes are what convolutions are for. Its checkpoint
            holds the parameters under nn.Conv2d's and nn.Linear's names and
            shapes.

usage: conv_reference.py {windows,ties,train} --sinterc=PATH --work-dir=DIR
"""

import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from central_difference import gradient_failures  # noqa: E402
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402


def conv2d(x, w, b, stride, padding, dilation, groups=1):
    """out[n, o, i, j] = b[o] + sum_{c, p, q} w[o, c, p, q] *
    xpad[n, g(o) C/G + c, i * sh + p * dh, j * sw + q * dw], the input
    channels of group g(o) = o // (O / G) only."""
    if groups > 1:
        xs = np.split(x, groups, axis=1)
        ws = np.split(w, groups, axis=0)
        bs = np.split(b, groups) if b is not None else [None] * groups
        return np.concatenate([conv2d(xg, wg, bg, stride, padding, dilation)
                               for xg, wg, bg in zip(xs, ws, bs)], axis=1)
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    # padding: (ph, pw) on both sides, or ((top, bottom), (left, right))
    (pt, pb), (pl, pr) = [p if isinstance(p, tuple) else (p, p) for p in padding]
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr), x.dtype)
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            for p in range(kh):
                for q in range(kw):
                    patch = xp[:, :, i * sh + p * dh, j * sw + q * dw]  # n, c
                    out[:, :, i, j] += patch @ w[:, :, p, q].T
    if b is not None:
        out += b[None, :, None, None]
    return out


def pool2d(x, kernel, stride, padding, mode):
    """Max (padding is -inf) or average (padding counts as zeros) over each
    window; for max also the flat index in x of each window's first maximal
    element in row-major window order (PyTorch's choice)."""
    n, c, h, wd = x.shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    oh = (h + 2 * ph - kh) // sh + 1
    ow = (wd + 2 * pw - kw) // sw + 1
    out = np.zeros((n, c, oh, ow), x.dtype)
    where = np.full((n, c, oh, ow, 2), -1)
    for a in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    best, at, total = -np.inf, None, 0.0
                    for p in range(kh):
                        for q in range(kw):
                            r, s = i * sh + p - ph, j * sw + q - pw
                            if 0 <= r < h and 0 <= s < wd:
                                v = x[a, ch, r, s]
                                total += v
                                if v > best:
                                    best, at = v, (r, s)
                    out[a, ch, i, j] = best if mode == "max" else total / (kh * kw)
                    if at is not None:
                        where[a, ch, i, j] = at
    return out, where


WINDOWS_MODEL = """
dtype: FLOAT64
input { name: "x" shape: [-1, 3, 9, 8] dtype: FLOAT64 }
input { name: "y" shape: [-1] dtype: INT64 }
layer { name: "conv1" input: "x" conv2d { out_channels: 4 kernel_size: [3, 2] stride: [2, 1] padding: [1, 0] dilation: [1, 2] } }
layer { name: "act1" input: "conv1" activation { kind: TANH } }
layer { name: "pool1" input: "act1" max_pool2d { kernel_size: 3 stride: 2 padding: 1 } }
layer { name: "grouped" input: "pool1" conv2d { out_channels: 6 kernel_size: 2 padding: 1 groups: 2 } }
layer { name: "same" input: "grouped" conv2d { out_channels: 6 kernel_size: [2, 3] stride: [1, 2] padding_same: true } }
layer { name: "depthwise" input: "same" conv2d { out_channels: 6 kernel_size: 3 stride: 2 padding: 1 groups: 6 } }
layer { name: "conv2" input: "depthwise" conv2d { out_channels: 5 kernel_size: 1 bias: false } }
layer { name: "pool2" input: "conv2" avg_pool2d { kernel_size: 2 stride: [1, 2] padding: 1 } }
layer { name: "flat" input: "pool2" flatten {} }
layer { name: "fc" input: "flat" dense { units: 3 } }
layer { name: "gap" input: "act1" avg_pool2d { kernel_size: [5, 6] } }
layer { name: "gapflat" input: "gap" flatten {} }
layer { name: "gapfc" input: "gapflat" dense { units: 3 } }
layer { name: "logits" input: ["fc", "gapfc"] add {} }
loss { softmax_cross_entropy { logits: "logits" labels: "y" } }
training { batch_size: 2 optimizer { sgd { lr: 0.1 } } }
"""


def windows_loss(params, x, y):
    h = conv2d(x, params["conv1.weight"], params["conv1.bias"], (2, 1), (1, 0), (1, 2))
    h = np.tanh(h)
    gap, _ = pool2d(h, (5, 6), (5, 6), (0, 0), "avg")  # global: a reduction
    gap = gap.reshape(gap.shape[0], -1) @ params["gapfc.weight"].T + params["gapfc.bias"]
    h, _ = pool2d(h, (3, 3), (2, 2), (1, 1), "max")
    h = conv2d(h, params["grouped.weight"], params["grouped.bias"], (1, 1), (1, 1),
               (1, 1), groups=2)
    # "same": outputs ceil(4 / 1) x ceil(4 / 2); 1 of padding after, each axis
    h = conv2d(h, params["same.weight"], params["same.bias"], (1, 2),
               ((0, 1), (0, 1)), (1, 1))
    h = conv2d(h, params["depthwise.weight"], params["depthwise.bias"], (2, 2),
               (1, 1), (1, 1), groups=6)
    h = conv2d(h, params["conv2.weight"], None, (1, 1), (0, 0), (1, 1))
    h, _ = pool2d(h, (2, 2), (1, 2), (1, 1), "avg")
    h = h.reshape(h.shape[0], -1)
    logits = h @ params["fc.weight"].T + params["fc.bias"] + gap
    m = logits.max(axis=1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(y)), y].mean()


TIES_MODEL = """
dtype: FLOAT64
input { name: "x" shape: [-1, 2, %(h)d, %(w)d] dtype: FLOAT64 }
input { name: "t" shape: [-1, 2, %(oh)d, %(ow)d] dtype: FLOAT64 }
layer { name: "shift" parameter { shape: [2, %(h)d, %(w)d] init { constant: 0 } } }
layer { name: "in" input: ["x", "shift"] add {} }
layer { name: "pool" input: "in" max_pool2d { kernel_size: [%(kh)d, %(kw)d] stride: [%(sh)d, %(sw)d] padding: [%(ph)d, %(pw)d] } }
loss { mean_squared_error { prediction: "pool" target: "t" } }
training { batch_size: 3 optimizer { sgd { lr: 0.1 } } }
"""

# Windows of 6 elements, overlapping (an op per offset), and of 12 that tile
# the input (a reduction over the window axes); the NaN is the fourth
# element of its window in both.
TIES_CASES = [
    {"h": 7, "w": 6, "kh": 3, "kw": 2, "sh": 2, "sw": 2, "ph": 1, "pw": 1,
     "nan": (1, 1, 2, 2)},
    {"h": 8, "w": 10, "kh": 4, "kw": 3, "sh": 4, "sw": 3, "ph": 1, "pw": 1,
     "nan": (1, 1, 0, 2)},
]


def run(sinterc, work, model, tensors):
    os.makedirs(work, exist_ok=True)
    model_path = os.path.join(work, "model.pbtxt")
    with open(model_path, "w") as f:
        f.write(model)
    inputs = os.path.join(work, "in.safetensors")
    out = os.path.join(work, "out.safetensors")
    write_safetensors(inputs, tensors)
    subprocess.run([sinterc, model_path, "--run=forward_grad", "--input=" + inputs,
                    "--output=" + out], check=True)
    return read_safetensors(out)[0]


def check_windows(args):
    rng = np.random.default_rng(5)
    shapes = {"conv1.weight": (4, 3, 3, 2), "conv1.bias": (4,),
              "grouped.weight": (6, 2, 2, 2), "grouped.bias": (6,),
              "depthwise.weight": (6, 1, 3, 3), "depthwise.bias": (6,),
              "same.weight": (6, 6, 2, 3), "same.bias": (6,),
              "conv2.weight": (5, 6, 1, 1), "fc.weight": (3, 5 * 3 * 1),
              "fc.bias": (3,), "gapfc.weight": (3, 4), "gapfc.bias": (3,)}
    params = {k: rng.uniform(-0.6, 0.6, s) for k, s in shapes.items()}
    x = rng.normal(size=(2, 3, 9, 8))
    y = np.array([2, 0], dtype=np.int64)
    out = run(args.sinterc, args.work_dir, WINDOWS_MODEL, {**params, "x": x, "y": y})
    loss = float(np.asarray(out["loss"]))
    want = windows_loss(params, x, y)
    failures = []
    print(f"loss: interpreter {loss:.15g}  reference {want:.15g}")
    if abs(loss - want) > 1e-12:
        failures.append(f"loss {loss!r} differs from the reference {want!r}")
    failures += gradient_failures(lambda p: windows_loss(p, x, y), params, out)
    return failures


def check_ties(args):
    failures = []
    for n, case in enumerate(TIES_CASES):
        failures += check_ties_case(args, case, os.path.join(args.work_dir, str(n)))
    return failures


def check_ties_case(args, case, work):
    rng = np.random.default_rng(6)
    kernel, stride = (case["kh"], case["kw"]), (case["sh"], case["sw"])
    padding = (case["ph"], case["pw"])
    x = rng.integers(0, 3, size=(3, 2, case["h"], case["w"])).astype(np.float64)
    pooled, where = pool2d(x, kernel, stride, padding, "max")
    case = dict(case, oh=pooled.shape[2], ow=pooled.shape[3])
    model = TIES_MODEL % case
    t = rng.normal(size=pooled.shape)
    shift = np.zeros(x.shape[1:])
    out = run(args.sinterc, work, model, {"shift": shift, "x": x, "t": t})
    loss = ((pooled - t) ** 2).mean()
    g = 2 * (pooled - t) / pooled.size
    want = np.zeros_like(shift)
    ties = 0
    for a, ch, i, j in np.ndindex(pooled.shape):
        r, s = where[a, ch, i, j]
        want[ch, r, s] += g[a, ch, i, j]
        lo_r, lo_s = i * stride[0] - padding[0], j * stride[1] - padding[1]
        window = x[a, ch, max(lo_r, 0):lo_r + kernel[0], max(lo_s, 0):lo_s + kernel[1]]
        ties += int((window == window.max()).sum() > 1)
    taps = kernel[0] * kernel[1]
    print(f"{taps}-element windows: {ties} of {pooled.size} have tied maxima")
    failures = []
    got_loss = float(np.asarray(out["loss"]))
    if abs(got_loss - loss) > 1e-12:
        failures.append(f"loss {got_loss!r} differs from the reference {loss!r}")
    got = np.asarray(out["grad.shift"])
    err = np.abs(got - want).max()
    print(f"grad.shift: max |interpreter - first-maximum routing| = {err:.2e}")
    if ties == 0:
        failures.append("no window has tied maxima: the check would prove nothing")
    if err > 1e-12:
        failures.append(f"{taps}-element windows: grad.shift differs from routing "
                        f"to each window's first maximum by {err:.2e}")
    # A NaN is the maximum of its window, as in PyTorch, wherever it sits
    # in the window.
    x[case["nan"]] = np.nan
    out = run(args.sinterc, os.path.join(work, "nan"), model,
              {"shift": shift, "x": x, "t": t})
    nan_loss = float(np.asarray(out["loss"]))
    print(f"loss with a NaN pixel: {nan_loss}")
    if not np.isnan(nan_loss):
        failures.append(f"{taps}-element windows: a NaN pixel gives the loss "
                        f"{nan_loss}, not NaN")
    return failures


def check_train(args):
    here = os.path.dirname(os.path.abspath(__file__))
    examples = os.path.join(here, "..", "..", "examples")
    os.makedirs(args.work_dir, exist_ok=True)
    binary = os.path.join(args.work_dir, "train")
    subprocess.run([args.sinterc, os.path.join(examples, "cnn_classifier.pbtxt"),
                    "-o", binary], check=True)
    log = os.path.join(args.work_dir, "metrics.jsonl")
    save = os.path.join(args.work_dir, "ckpt")
    subprocess.run([binary, "--data=" + os.path.join(examples, "data", "mlp_classifier"),
                    "--steps=320", "--eval-every=160", "--eval-batches=8",
                    "--log-jsonl=" + log, "--save=" + save, "--quiet"], check=True)
    import json
    with open(log) as f:
        evals = [r for r in map(json.loads, f) if "eval_accuracy" in r]
    failures = []
    if not evals:
        return ["no evaluation in " + log]
    accuracy = evals[-1]["eval_accuracy"]
    print(f"held-out accuracy after {evals[-1]['step']} steps: {accuracy:.4f}")
    if accuracy < 0.93:
        failures.append(f"held-out accuracy {accuracy:.4f} is below 0.93")
    latest = open(os.path.join(save, "latest")).read().strip()
    tensors = read_safetensors(os.path.join(save, latest, "model.safetensors"))[0]
    want = {"conv1.weight": (16, 1, 3, 3), "conv1.bias": (16,),
            "conv2.weight": (32, 16, 3, 3), "conv2.bias": (32,),
            "fc1.weight": (128, 32 * 7 * 7), "fc1.bias": (128,),
            "fc2.weight": (10, 128), "fc2.bias": (10,)}
    got = {k: tuple(v.shape) for k, v in tensors.items()}
    print("checkpoint: " + ", ".join(f"{k} {list(v)}" for k, v in got.items()))
    if got != want:
        failures.append(f"the checkpoint holds {got}, not nn.Module's {want}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("check", choices=["windows", "ties", "train"])
    parser.add_argument("--sinterc", required=True)
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()
    failures = {"windows": check_windows, "ties": check_ties,
                "train": check_train}[args.check](args)
    for f in failures:
        print("FAIL: " + f)
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
