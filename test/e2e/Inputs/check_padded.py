"""Runs a raw step of a binary compiled from cuda-padded-output.mlir (one
input x of 4x8x100 floats) and checks its padded output y (4x8x104): the
function's values in the first 100 columns, the padding value 1.5 in the
rest (a value memory never holds by chance, unlike 0).

usage: check_padded.py BINARY WORKDIR softmax|scale
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402


def main():
    binary, work, kind = sys.argv[1:4]
    x = (np.random.default_rng(0).standard_normal((4, 8, 100)) * 3).astype(
        np.float32)
    inp = os.path.join(work, "in.safetensors")
    out = os.path.join(work, "out.safetensors")
    write_safetensors(inp, {"x": x})
    subprocess.run([binary, f"--inputs={inp}", f"--outputs={out}",
                    "--steps=1"], check=True)
    y = read_safetensors(out)
    y = (y[0] if isinstance(y, tuple) else y)["y"]
    if kind == "softmax":
        e = np.exp(x - x.max(-1, keepdims=True))
        want = e / e.sum(-1, keepdims=True)
    else:
        want = 2 * x
    err = float(np.abs(y[..., :100] - want).max())
    pad = np.unique(y[..., 100:])
    print(f"{kind}: shape {list(y.shape)}, max error {err:.3g}, "
          f"padding {pad.tolist()}")
    if y.shape != (4, 8, 104) or err > 1e-6 or pad.tolist() != [1.5]:
        sys.exit(f"check_padded.py: {kind}: wrong padded output")


if __name__ == "__main__":
    main()
