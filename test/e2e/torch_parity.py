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

usage: bench/.venv/bin/python test/e2e/torch_parity.py --sinterc=build/bin/sinterc
           [--work-dir=DIR] [--batch=8]
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
    """examples/cnn_classifier.pbtxt, layer for layer."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, image):
        x = image.view(-1, 1, 28, 28)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sinterc", required=True)
    ap.add_argument("--work-dir", default=None)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="torch-parity-")
    os.makedirs(work, exist_ok=True)

    torch.manual_seed(0)
    model = Cnn().double()
    data = os.path.join(ROOT, "examples", "data", "mlp_classifier", "train")
    image = np.load(os.path.join(data, "image.npy"))[:args.batch].astype(np.float64)
    label = np.load(os.path.join(data, "label.npy"))[:args.batch]
    loss = F.cross_entropy(model(torch.from_numpy(image)), torch.from_numpy(label))
    loss.backward()

    src = open(os.path.join(ROOT, "examples", "cnn_classifier.pbtxt")).read()
    src = src.replace("FLOAT32", "FLOAT64") + "\ndtype: FLOAT64\n"
    model_path = os.path.join(work, "cnn64.pbtxt")
    with open(model_path, "w") as f:
        f.write(src)
    params = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    inputs = os.path.join(work, "in.safetensors")
    out_path = os.path.join(work, "out.safetensors")
    write_safetensors(inputs, {**params, "image": image, "label": label})
    subprocess.run([args.sinterc, model_path, f"--batch-size={args.batch}",
                    "--run=forward_grad", "--input=" + inputs,
                    "--output=" + out_path], check=True, stdout=subprocess.DEVNULL)
    out = read_safetensors(out_path)[0]

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
    for f in failures:
        print("FAIL: " + f)
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
