#!/usr/bin/env python3
"""Holds examples/cnn_classifier.pbtxt to the same network in PyTorch.

A manual check, for where PyTorch is installed (bench/.venv has it; the
test suite does not need it): the model is built from torch.nn (Conv2d,
max_pool2d, Linear) in f64 with PyTorch's own initialization, its
state_dict is written as safetensors, and `sinterc --run=forward_grad` runs
the same file in f64 on the same parameters and the first images of the
bundled data. The loss and every parameter's gradient must agree to 1e-12
(relative): the convolutions' layout, padding, weight order and bias, and
max pooling's routing of the gradient, are PyTorch's. (Tied maxima here are
ReLU's zeros, whose gradient ReLU drops either way; conv_reference.py's
`ties` check is the one for ties.)

With --batch-norm, an nn.BatchNorm2d follows each convolution (in the
model file, a batch_norm layer) and three more things must agree: the
running statistics after one training-mode forward pass (Sinter's
`--run=train_step` returns them), the eval-mode loss with those statistics
(`--run=eval_step`), and the round trip: the state_dict Sinter returns
loads into the torch.nn model with strict=True (num_batches_tracked, which
Sinter does not keep, is filled in by PyTorch's loader).

usage: bench/.venv/bin/python test/e2e/torch_parity.py --sinterc=build/bin/sinterc
           [--work-dir=DIR] [--batch=8] [--batch-norm]
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402


class Cnn(nn.Module):
    """examples/cnn_classifier.pbtxt, layer for layer (with batch_norm:
    nn.BatchNorm2d after each convolution)."""

    def __init__(self, batch_norm=False):
        super().__init__()
        # A bias ahead of a batch norm cancels (its gradient is 0).
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=not batch_norm)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=not batch_norm)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)
        self.bn1 = nn.BatchNorm2d(16) if batch_norm else nn.Identity()
        self.bn2 = nn.BatchNorm2d(32) if batch_norm else nn.Identity()

    def forward(self, image):
        x = image.view(-1, 1, 28, 28)
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def with_batch_norm(src):
    """The model file with a batch_norm layer after each convolution, whose
    bias it drops."""
    src = src.replace("kernel_size: 3 padding: 1 }", "kernel_size: 3 padding: 1 bias: false }")
    for n in (1, 2):
        src = src.replace(f'layer {{ name: "act{n}" input: "conv{n}"',
                          f'layer {{ name: "bn{n}" input: "conv{n}" batch_norm {{}} }}\n'
                          f'layer {{ name: "act{n}" input: "bn{n}"')
    assert src.count("batch_norm") == 2
    return src


def run(sinterc, model_path, batch, entry, inputs, out_path):
    subprocess.run([sinterc, model_path, f"--batch-size={batch}", "--run=" + entry,
                    "--input=" + inputs, "--output=" + out_path], check=True,
                   stdout=subprocess.DEVNULL)
    return {k: np.asarray(v) for k, v in read_safetensors(out_path)[0].items()}


def check_buffers(args, model, model_path, params, image, label, work):
    """The running statistics after the training-mode forward pass, the
    eval-mode loss, and the state_dict round trip."""
    failures = []
    inputs = os.path.join(work, "in.safetensors")
    step = run(args.sinterc, model_path, args.batch, "train_step", inputs,
               os.path.join(work, "step.safetensors"))
    for name, want in model.state_dict().items():
        if "running" not in name:
            continue
        err = np.abs(step[name] - want.numpy()).max() / np.abs(want.numpy()).max()
        print(f"{name} after one step: max |PyTorch - Sinter| / max |PyTorch| = {err:.2e}")
        if err > 1e-12:
            failures.append(f"{name} differs by {err:.2e}")
    model.eval()
    with torch.no_grad():
        want = F.cross_entropy(model(torch.from_numpy(image)),
                               torch.from_numpy(label)).item()
    eval_in = os.path.join(work, "eval.in.safetensors")
    buffers = {k: step[k] for k in step if "running" in k}
    write_safetensors(eval_in, {**params, **buffers, "image": image, "label": label})
    got = float(run(args.sinterc, model_path, args.batch, "eval_step", eval_in,
                    os.path.join(work, "eval.safetensors"))["loss"])
    print(f"eval loss: PyTorch {want:.15g}  Sinter {got:.15g}")
    if abs(got - want) > 1e-12 * abs(want):
        failures.append("the eval-mode loss differs")
    # Sinter's state (parameters after the SGD step, buffers) as a
    # state_dict: every key PyTorch expects but num_batches_tracked.
    state = {k: torch.from_numpy(step[k]) for k in params}
    fresh = Cnn(batch_norm=True).double()
    try:
        fresh.load_state_dict(state, strict=True)
        print("Sinter's state loads into the torch.nn model (strict)")
    except RuntimeError as e:
        failures.append(f"Sinter's state does not load into torch.nn: {e}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sinterc", required=True)
    ap.add_argument("--work-dir", default=None)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--batch-norm", action="store_true")
    args = ap.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="torch-parity-")
    os.makedirs(work, exist_ok=True)

    torch.manual_seed(0)
    model = Cnn(args.batch_norm).double()
    data = os.path.join(ROOT, "examples", "data", "mlp_classifier", "train")
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    image = np.load(os.path.join(data, "image.npy"))[:args.batch].astype(np.float64)
    label = np.load(os.path.join(data, "label.npy"))[:args.batch]
    loss = F.cross_entropy(model(torch.from_numpy(image)), torch.from_numpy(label))
    loss.backward()

    src = open(os.path.join(ROOT, "examples", "cnn_classifier.pbtxt")).read()
    src = src.replace("FLOAT32", "FLOAT64") + "\ndtype: FLOAT64\n"
    if args.batch_norm:
        src = with_batch_norm(src)
    model_path = os.path.join(work, "cnn64.pbtxt")
    with open(model_path, "w") as f:
        f.write(src)
    # The state_dict before the forward pass above moved the statistics.
    params = {k: v.detach().numpy().copy() for k, v in initial.items()
              if not k.endswith("num_batches_tracked")}
    inputs = os.path.join(work, "in.safetensors")
    write_safetensors(inputs, {**params, "image": image, "label": label})
    out = run(args.sinterc, model_path, args.batch, "forward_grad", inputs,
              os.path.join(work, "out.safetensors"))

    failures = []
    got = float(np.asarray(out["loss"]))
    print(f"loss: PyTorch {loss.item():.15g}  Sinter {got:.15g}")
    if abs(got - loss.item()) > 1e-12 * abs(loss.item()):
        failures.append("the loss differs")
    for name, p in model.named_parameters():
        want = p.grad.numpy()
        have = np.asarray(out["grad." + name])
        err = np.abs(want - have).max() / np.abs(want).max()
        print(f"grad.{name}: max |PyTorch - Sinter| / max |PyTorch| = {err:.2e}")
        if have.shape != want.shape or err > 1e-12:
            failures.append(f"grad.{name} differs by {err:.2e}")
    if args.batch_norm:
        failures += check_buffers(args, model, model_path, params, image, label, work)
    for f in failures:
        print("FAIL: " + f)
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
