"""Gradients held to central differences, for the reference checks that
define a layer directly in numpy (conv_reference.py,
batchnorm_reference.py)."""

import numpy as np


def gradient_failures(loss, params, got, rtol=1e-6, eps=1e-6):
    """Compares each `got["grad.<name>"]` with the central differences of
    `loss(params)` (a float of a dict of arrays) in every element of
    `params[name]`, relative to the largest difference; prints one line per
    parameter and returns the failures' messages."""
    failures = []
    for name, value in params.items():
        numeric = np.zeros_like(value)
        for i in np.ndindex(value.shape):
            up = {**params, name: value.copy()}
            down = {**params, name: value.copy()}
            up[name][i] += eps
            down[name][i] -= eps
            numeric[i] = (loss(up) - loss(down)) / (2 * eps)
        have = np.asarray(got["grad." + name])
        err = np.abs(have - numeric).max() / max(np.abs(numeric).max(), 1e-30)
        print(f"grad.{name}: max |autodiff - central difference| / max |cd| = {err:.2e}")
        if have.shape != numeric.shape or err > rtol:
            failures.append(f"grad.{name} is off by {err:.2e} (relative)")
    return failures
