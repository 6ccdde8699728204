#!/usr/bin/env python3
"""Fits the erfc approximation the CPU kernels compute GELU with.

GELU(x) = x Phi(x), and its gradient Phi(x) + x phi(x), where Phi is the
standard normal CDF and phi(x) = exp(-x^2/2) / sqrt(2 pi) its density. With
z = |x| / sqrt(2), Phi(-|x|) = erfc(z) / 2, and the CPU kernels
(compiler/CodeGen/Cpu/ScalarOps.cpp, normalCdf) compute

    erfc(z) ~ t P(t) exp(-z^2),   t = 1 / (1 + z / 2),

so that exp(-z^2) = exp(-x^2/2) is shared with the density: one exp and no
erf per element. P (degree 8) is fitted here to g(t) = erfc(z) exp(z^2) / t,
a smooth function of t in (0, 1], for relative error (weighted least
squares, reweighted toward minimax) over z in [0, 10]: past z ~ 9.4
exp(-z^2) is below f32's smallest normal and the kernels' exp gives 0.

Prints the coefficients (lowest degree first) and the accuracy of GELU and
its gradient when evaluated the kernels' way in f32 (numpy, f32 rounding at
every step; MLIR's polynomial exp emulated) against the exact functions,
next to the previous form 0.5 x (1 + erf(x / sqrt 2)) with MLIR's erf
approximation.

Also fits the erf that GELU itself uses on the CPU (ScalarOps.cpp,
rationalErf; the erf op keeps MLIR's, which is more accurate alone):
erf(u) ~ u P(u^2) / Q(u^2) with u clamped to +-U_MAX, past which f32's erf
is 1, P of degree 6 and Q of degree 4 (Q(0) = 1), fitted to erf(u) / u for
relative error the same way (linearized, reweighted). One rational
function, no interval selects, against MLIR's three; prints its accuracy
next to MLIR's erf and, in GELU, next to the erf form above.

Needs numpy only. Deterministic.

    scripts/fit_normal_cdf.py
"""

import math

import numpy as np

F = np.float32
P_SCALE = 0.5  # t = 1 / (1 + P_SCALE z)
DEGREE = 8
Z_MAX = 10.0


def g_exact(z, t):
    return np.array([math.erfc(v) * math.exp(v * v) for v in z]) / t


def fit():
    t_min = 1 / (1 + P_SCALE * Z_MAX)
    n = 4000
    k = np.arange(n)
    t = (t_min + 1) / 2 + (1 - t_min) / 2 * np.cos(math.pi * (k + 0.5) / n)
    z = (1 / t - 1) / P_SCALE
    g = g_exact(z, t)
    v = np.vander(t, DEGREE + 1, increasing=True)
    weights = np.ones(n)
    for _ in range(30):
        a = v * (weights / g)[:, None]
        c, *_ = np.linalg.lstsq(a, weights, rcond=None)
        err = np.abs(v @ c - g) / g
        weights = weights * np.sqrt(err / err.max() + 1e-3)
        weights /= weights.mean()
    return c


U_MAX = 3.92  # 1 - erf(3.92) = 2.96e-8, under half an ulp of 1 in f32
ERF_P_DEGREE, ERF_Q_DEGREE = 6, 4


def fit_erf():
    """P and Q (lowest degree first, Q[0] = 1) of erf(u) / u ~ P(s) / Q(s),
    s = u^2 in [0, U_MAX^2]."""
    n = 6000
    k = np.arange(n)
    s = U_MAX ** 2 / 2 * (1 + np.cos(math.pi * (k + 0.5) / n))
    u = np.sqrt(s)
    f = np.array([math.erf(v) / v if v > 0 else 2 / math.sqrt(math.pi)
                  for v in u])
    vp = np.vander(s, ERF_P_DEGREE + 1, increasing=True)
    vq = np.vander(s, ERF_Q_DEGREE + 1, increasing=True)
    q_prev, weights = np.ones(n), np.ones(n)
    for _ in range(60):
        # P(s) - f Q(s) = f, over the previous Q: relative error in the limit.
        a = np.hstack([vp, -f[:, None] * vq[:, 1:]])
        scale = weights / (f * q_prev)
        c, *_ = np.linalg.lstsq(a * scale[:, None], f * scale, rcond=None)
        p, q = c[:ERF_P_DEGREE + 1], np.concatenate([[1.0], c[ERF_P_DEGREE + 1:]])
        q_prev = vq @ q
        err = np.abs(vp @ p / q_prev - f) / f
        weights = weights * np.sqrt(err / err.max() + 1e-3)
        weights /= weights.mean()
    return p, q, err.max()


def rational_erf(x, p, q):
    """The kernels' erf in f32: clamp, then u P(u^2) / Q(u^2) by Horner."""
    u = np.clip(x.astype(F), F(-U_MAX), F(U_MAX))
    s = (u * u).astype(F)
    num, den = F(p[-1]), F(q[-1])
    for k in p[-2::-1]:
        num = (num * s + F(k)).astype(F)
    for k in q[-2::-1]:
        den = (den * s + F(k)).astype(F)
    return ((u * num).astype(F) / den).astype(F)


def mlir_exp(x):
    """MLIR 19's f32 exp polynomial (math-polynomial-approximation)."""
    x = np.clip(x.astype(F), F(-87.8), F(88.8))
    n = np.clip(np.floor(x * F(1.44269504088896341) + F(0.5)), F(-127), F(127))
    a = (F(-0.693359375) * n + x).astype(F)
    a = (F(2.12194440e-4) * n + a).astype(F)
    z = (a * F(1.9875691500e-4) + F(1.3981999507e-3)).astype(F)
    for c in (8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1):
        z = (z * a + F(c)).astype(F)
    z = (F(1) + (z * (a * a) + a)).astype(F)
    return (z * np.ldexp(F(1), n.astype(np.int32))).astype(F)


MLIR_ERF_P = [
    [0, 1.12837916222975858, -5.23018562988006470e-01, 2.09741709609267072e-01,
     2.58146801602987875e-02],
    [0, 1.12750687816789140, -3.64721408487825775e-01, 1.18407396425136952e-01,
     3.70645533056476558e-02],
    [-3.30093071049483172e-03, 3.51961938357697011e-03, -1.41373622814988039e-03,
     2.53447094961941348e-04, -1.71048029455037401e-05]]
MLIR_ERF_Q = [
    [1, -4.635138185962547255e-01, 5.192301327279782447e-01,
     -1.318089722204810087e-01, 7.397964654672315005e-02],
    [1, -3.27607011824493086e-01, 4.48369090658821977e-01,
     -8.83462621207857930e-02, 5.72442770283176093e-02],
    [1, -2.06069165953913769, 1.62705939945477759, -5.83389859211130017e-01,
     8.21908939856640930e-02]]


def mlir_erf(x):
    """MLIR 19's f32 erf: a rational function on three intervals."""
    a = np.abs(x).astype(F)
    i = np.where(a < 0.8, 0, np.where(a < 2.0, 1, 2))
    p_c, q_c = np.array(MLIR_ERF_P, F)[i], np.array(MLIR_ERF_Q, F)[i]
    p, q = p_c[:, 4].copy(), q_c[:, 4].copy()
    for k in (3, 2, 1, 0):
        p = (p * a + p_c[:, k]).astype(F)
        q = (q * a + q_c[:, k]).astype(F)
    r = (np.array([0, 0, 1], F)[i] + p / q).astype(F)
    r = np.where(a < 3.75, r, F(1))
    return np.where(x < 0, -r, r).astype(F)


def erf_form(x, erf=None):
    erf = erf or mlir_erf
    cdf = (F(0.5) * (F(1) + erf(x * F(math.sqrt(0.5))))).astype(F)
    pdf = (F(1 / math.sqrt(2 * math.pi)) * mlir_exp(F(-0.5) * (x * x))).astype(F)
    return (x * cdf).astype(F), (cdf + x * pdf).astype(F)


def erfc_form(x, c):
    a = (np.abs(x) * F(math.sqrt(0.5))).astype(F)
    t = (F(1) / (F(P_SCALE) * a + F(1))).astype(F)
    p = F(c[-1])
    for k in c[-2::-1]:
        p = (p * t + F(k)).astype(F)
    e = mlir_exp(-(a * a))
    tail = ((F(0.5) * (t * p)) * e).astype(F)
    cdf = np.where(x < 0, tail, F(1) - tail).astype(F)
    grad = (cdf + x * (F(1 / math.sqrt(2 * math.pi)) * e)).astype(F)
    return (x * cdf).astype(F), grad


def ulps(computed, exact):
    unit = np.spacing(np.abs(exact.astype(F))).astype(np.float64)
    return np.abs(computed.astype(np.float64) - exact) / unit


def main():
    c = fit()
    zz = np.linspace(0, Z_MAX, 100001)
    tt = 1 / (1 + P_SCALE * zz)
    rel = np.abs(np.polyval(c[::-1], tt) - g_exact(zz, tt)) / g_exact(zz, tt)
    print("P coefficients, t^0 first:")
    for v in c:
        print(f"  {v:.10e}")
    print(f"max relative error of erfc in exact arithmetic: {rel.max():.2e}")
    x = np.linspace(-10, 10, 400001).astype(F)
    xd = x.astype(np.float64)
    gelu = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in xd])
    grad = np.array([0.5 * math.erfc(-v / math.sqrt(2)) +
                     v * math.exp(-v * v / 2) / math.sqrt(2 * math.pi)
                     for v in xd])
    p, q, erf_rel = fit_erf()
    print(f"\nerf: P (u^2)^0 first, then Q; max relative error of erf in "
          f"exact arithmetic {erf_rel:.2e}:")
    for v in p:
        print(f"  P {v:.10e}")
    for v in q[1:]:
        print(f"  Q {v:.10e}")
    ours = lambda v: rational_erf(v, p, q)  # noqa: E731
    exact = np.array([math.erf(v) for v in xd])
    for name, erf in (("MLIR's erf", mlir_erf), ("rational erf (this fit)", ours)):
        u = ulps(erf(x), exact)
        print(f"  {name:24s} f32 erf, x in [-10, 10]: max {u.max():4.1f} ulp, "
              f"mean {u.mean():.2f}")
    print("\nf32, x in [-10, 10], against the exact functions "
          "(ulps where |exact| >= 0.01):")
    for name, (g, d) in (("0.5 x (1 + erf(x/sqrt 2))", erf_form(x)),
                         ("the same, rational erf", erf_form(x, ours)),
                         ("erfc form (this fit)", erfc_form(x, c))):
        mg, md = np.abs(gelu) >= 0.01, np.abs(grad) >= 0.01
        print(f"  {name:28s} GELU max {ulps(g, gelu)[mg].max():6.1f} ulp, "
              f"mean {ulps(g, gelu)[mg].mean():.2f}; gradient max "
              f"{ulps(d, grad)[md].max():6.1f} ulp, mean "
              f"{ulps(d, grad)[md].mean():.2f}; max abs "
              f"{np.abs(g - gelu).max():.1e} / {np.abs(d - grad).max():.1e}")


if __name__ == "__main__":
    main()
