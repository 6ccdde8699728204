"""Runs a raw step of a binary compiled from cpu-gelu.mlir's @gelu_and_grad
(inputs x and g, 64x512 floats; outputs y = GELU(x) and dx = g GELU'(x))
on x evenly spaced over [-10, 10] and g = 1, and checks both against the
exact functions (math.erf / math.erfc in double) in f32 ulps where the
exact value is at least 0.01 in magnitude, and absolutely everywhere.

The bounds are those scripts/fit_normal_cdf.py reports for the kernels'
forms evaluated in f32 (rationalErf in GELU: max 376 ulp where 1 + erf
cancels, mean 3.1, max abs 1.2e-6; normalCdf in the gradient: max 75 ulp,
mean 0.72, max abs 2.0e-7), with room for the compiled code's own
rounding (FMA contraction): a mean of 4 and 1.5 ulp, max abs 2e-6 and
5e-7. A coefficient off in its fourth digit breaks them.

usage: check_gelu.py BINARY WORKDIR
"""
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

BOUNDS = {"y": (4.0, 2e-6), "dx": (1.5, 5e-7)}  # mean ulp, max abs


def main():
    binary, work = sys.argv[1:3]
    x = np.linspace(-10, 10, 64 * 512).astype(np.float32).reshape(64, 512)
    inp = os.path.join(work, "in.safetensors")
    out = os.path.join(work, "out.safetensors")
    write_safetensors(inp, {"x": x, "g": np.ones_like(x)})
    subprocess.run([binary, f"--inputs={inp}", f"--outputs={out}",
                    "--steps=1"], check=True)
    got = read_safetensors(out)
    got = got[0] if isinstance(got, tuple) else got
    xd = x.astype(np.float64).ravel()
    cdf = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in xd])
    pdf = np.exp(-xd * xd / 2) / math.sqrt(2 * math.pi)
    exact = {"y": xd * cdf, "dx": cdf + xd * pdf}
    failed = False
    for name, (mean_bound, abs_bound) in BOUNDS.items():
        g = got[name].astype(np.float64).ravel()
        e = exact[name]
        big = np.abs(e) >= 0.01
        ulps = np.abs(g - e)[big] / np.spacing(np.abs(e[big]).astype(np.float32))
        worst = float(np.abs(g - e).max())
        print(f"{name}: mean {ulps.mean():.2f} ulp, max {ulps.max():.1f} ulp, "
              f"max abs {worst:.2g}")
        if not (ulps.mean() <= mean_bound and worst <= abs_bound):
            print(f"check_gelu.py: {name} is off: bounds mean {mean_bound} "
                  f"ulp, max abs {abs_bound}", file=sys.stderr)
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
