#!/usr/bin/env python3
"""Independent numpy reference of one training step of nanoGPT's character GPT.

Sinter's reference interpreter (and, through it, the compiled kernels) is
checked against this file. It depends on numpy only (Debian's python3 with
numpy 1.24 is enough) and shares no code with the compiler.

Model: nanoGPT's GPT with bias=True and lm_head tied to transformer.wte (the
shakespeare_char configuration: vocab 65, 6 layers, 6 heads, 384 channels,
dropout 0.2, block size 256). One step is: forward, cross-entropy loss with
ignore_index=-1, manual backward, global-norm gradient clipping to 1.0,
nanoGPT's cosine learning-rate schedule and torch.optim.AdamW with weight
decay on the parameters with ndim >= 2. Everything is computed in float64,
whatever the dtype of the files (`reference --compute-dtype f32` exists only
to emulate an f32 computation when calibrating the compare tolerances).

Dropout uses Sinter's counter-based generator (abi/Random.h, in numpy
in counter_random.py; safetensors files through safetensors_io.py): dropout
op n (0 = embedding, then 1+3i attention / 2+3i attention residual / 3+3i MLP
residual for block i) has seed training_seed + n, and at step `step` keeps
element k (row-major index into the op's input) iff
uniform24(key(seed, step), k) >= rate.

Usage:
  chargpt_reference.py make-inputs DIR --batch B --seq T --dtype f32|f64
        --step S --seed N [--layers L --heads H --embd C --dropout P
        --training-seed S0 --fresh-state]
      writes DIR/params.safetensors, DIR/optim.safetensors and
      DIR/batch.safetensors (idx, targets int64 [B,T]; step int64 0-d).
  chargpt_reference.py reference DIR --dtype f32|f64 [model flags]
      reads those three files, writes DIR/expected.safetensors (in --dtype):
      loss, lr, grad_norm (0-d), every updated parameter under its own name
      and the updated optimizer state under the input names.
  chargpt_reference.py compare EXPECTED ACTUAL [--rtol R --atol A --ntol N]
      exit 1 on any mismatching or missing tensor (criteria and default
      tolerances: see DEFAULT_RTOL below).
  chargpt_reference.py selfcheck [--cxx]
      finite-difference check of the manual backward on a tiny model, the
      generator's pinned constants (--cxx: also recompute them with g++
      against abi/Random.h), the lr schedule, AdamW, safetensors.

Model flags of `reference` default to the values make-inputs recorded in the
batch file's metadata (then to the nanoGPT defaults); an explicit flag that
contradicts the recorded value is an error.
"""

import argparse
import json
import math
import os
import struct
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

try:
    import numpy as np
except ImportError:  # e.g. a pyenv python3 first on PATH
    sys.exit("chargpt_reference.py needs numpy: run it with a python3 that "
             "has it (e.g. Debian's /usr/bin/python3)")

from counter_random import (  # noqa: E402
    check_generator, check_generator_against_cxx, dropout_keep_mask, key,
    uniform24)
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

# nanoGPT shakespeare_char defaults.
DEFAULT_VOCAB = 65
DEFAULT_LAYERS = 6
DEFAULT_HEADS = 6
DEFAULT_EMBD = 384
DEFAULT_DROPOUT = 0.2
DEFAULT_TRAINING_SEED = 1337

# Optimizer / schedule (nanoGPT train.py with config/train_shakespeare_char.py).
LEARNING_RATE = 1e-3
WARMUP_ITERS = 100
LR_DECAY_ITERS = 5000
MIN_LR = 1e-4
BETA1, BETA2 = 0.9, 0.99
ADAM_EPS = 1e-8
WEIGHT_DECAY = 0.1
GRAD_CLIP = 1.0
LN_EPS = 1e-5

# ===========================================================================
# Model description
# ===========================================================================

class Config:
    def __init__(self, n_layer=DEFAULT_LAYERS, n_head=DEFAULT_HEADS,
                 n_embd=DEFAULT_EMBD, vocab=DEFAULT_VOCAB,
                 dropout=DEFAULT_DROPOUT, training_seed=DEFAULT_TRAINING_SEED):
        if n_embd % n_head:
            raise ValueError("n_embd must be a multiple of n_head")
        if not 0.0 <= dropout < 1.0:
            raise ValueError("dropout must be in [0, 1)")
        self.n_layer, self.n_head, self.n_embd = n_layer, n_head, n_embd
        self.vocab, self.dropout = vocab, dropout
        self.training_seed = training_seed

    def as_dict(self):
        return {"n_layer": self.n_layer, "n_head": self.n_head,
                "n_embd": self.n_embd, "vocab": self.vocab,
                "dropout": self.dropout, "training_seed": self.training_seed}


def param_specs(cfg, block_size):
    """[(name, shape, init kind)] in nanoGPT's state_dict order (no lm_head:
    it is transformer.wte.weight)."""
    C, V, L = cfg.n_embd, cfg.vocab, cfg.n_layer
    specs = [("transformer.wte.weight", (V, C), "w"),
             ("transformer.wpe.weight", (block_size, C), "w")]
    for i in range(L):
        p = f"transformer.h.{i}."
        specs += [(p + "ln_1.weight", (C,), "ln_w"),
                  (p + "ln_1.bias", (C,), "b"),
                  (p + "attn.c_attn.weight", (3 * C, C), "w"),
                  (p + "attn.c_attn.bias", (3 * C,), "b"),
                  (p + "attn.c_proj.weight", (C, C), "proj_w"),
                  (p + "attn.c_proj.bias", (C,), "b"),
                  (p + "ln_2.weight", (C,), "ln_w"),
                  (p + "ln_2.bias", (C,), "b"),
                  (p + "mlp.c_fc.weight", (4 * C, C), "w"),
                  (p + "mlp.c_fc.bias", (4 * C,), "b"),
                  (p + "mlp.c_proj.weight", (C, 4 * C), "proj_w"),
                  (p + "mlp.c_proj.bias", (C,), "b")]
    specs += [("transformer.ln_f.weight", (C,), "ln_w"),
              ("transformer.ln_f.bias", (C,), "b")]
    return specs


def init_params(rng, cfg, block_size):
    """Random parameters (float64), drawn in param_specs order."""
    proj_std = 0.02 / math.sqrt(2 * cfg.n_layer)
    params = {}
    for name, shape, kind in param_specs(cfg, block_size):
        if kind == "w":
            params[name] = rng.normal(0.0, 0.02, size=shape)
        elif kind == "proj_w":
            params[name] = rng.normal(0.0, proj_std, size=shape)
        elif kind == "ln_w":
            params[name] = 1.0 + rng.normal(0.0, 0.1, size=shape)
        else:  # biases (LN and Linear): small, not zero, so grads matter
            params[name] = rng.normal(0.0, 0.02, size=shape)
    return params


def init_batch(rng, batch, seq, vocab):
    idx = rng.integers(0, vocab, size=(batch, seq), dtype=np.int64)
    targets = rng.integers(0, vocab, size=(batch, seq), dtype=np.int64)
    targets[rng.random((batch, seq)) < 0.05] = -1
    if (targets == -1).all():
        targets[0, 0] = 0
    return idx, targets


def init_optim(rng, params, fresh):
    state = {}
    for name, p in params.items():
        if fresh:
            m = np.zeros_like(p)
            v = np.zeros_like(p)
        else:
            m = rng.normal(0.0, 1e-3, size=p.shape)
            v = m * m * rng.uniform(1.0, 3.0, size=p.shape)
        state[f"optimizer.{name}.exp_avg"] = m
        state[f"optimizer.{name}.exp_avg_sq"] = v
    return state


# ===========================================================================
# Layers: forward returns (output, cache); backward takes (grad, cache)
# ===========================================================================

def dropout_apply(x, keep, rate):
    """Kept elements become x / (1 - rate), the others 0."""
    return np.where(keep, x / (1.0 - rate), 0.0).astype(x.dtype, copy=False)


class Dropout:
    """Inverted dropout op number `n`: seed = training_seed + n."""

    def __init__(self, rate, seed, step, shape):
        self.rate = rate
        self.keep = (None if rate == 0.0
                     else dropout_keep_mask(seed, step, shape, rate))

    def forward(self, x):
        if self.keep is None:
            return x
        return dropout_apply(x, self.keep, self.rate)

    backward = forward  # same mask, same scale


def layernorm_forward(x, w, b):
    # x (B,T,C); w, b (C)
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(axis=-1, keepdims=True)  # biased
    rstd = 1.0 / np.sqrt(var + LN_EPS)
    xhat = xc * rstd
    return xhat * w + b, (xhat, rstd, w)


def layernorm_backward(dy, cache):
    xhat, rstd, w = cache
    dw = (dy * xhat).reshape(-1, xhat.shape[-1]).sum(axis=0)
    db = dy.reshape(-1, xhat.shape[-1]).sum(axis=0)
    dxhat = dy * w
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    return dx, dw, db


# The dense matmuls dominate the step. Debian's numpy links the unoptimized
# reference BLAS (~1 GFLOP/s, one thread), where einsum's own SIMD loops are
# about twice as fast; splitting the rows among threads (numpy releases the
# GIL) uses the other cores. Results do not depend on the thread count: each
# output element is one einsum dot product over the same contracted axis.
_POOL = ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1)))


def mm(spec, a, b):
    """np.einsum(spec, a, b) for 2-D a and b, e.g. "ni,oi->no"; the first
    index of the output, which must be one of a's, is divided among
    threads."""
    ins, out = spec.split("->")
    sa = ins.split(",")[0]
    axis_a = sa.index(out[0])
    n = a.shape[axis_a]
    chunks = min(_POOL._max_workers, max(1, n // 64))
    if chunks == 1:
        return np.einsum(spec, a, b)
    bounds = np.linspace(0, n, chunks + 1).astype(int)
    parts = [a[lo:hi] if axis_a == 0 else a[:, lo:hi]
             for lo, hi in zip(bounds[:-1], bounds[1:])]
    return np.concatenate(list(_POOL.map(lambda x: np.einsum(spec, x, b),
                                         parts)), axis=0)


def linear_forward(x, W, b):
    # x (B,T,in); W (out,in); b (out) -> (B,T,out)
    y = mm("ni,oi->no", x.reshape(-1, x.shape[-1]), W) + b
    return y.reshape(x.shape[:-1] + (W.shape[0],)), (x, W)


def linear_backward(dy, cache):
    x, W = cache
    dy2 = dy.reshape(-1, dy.shape[-1])                  # (B*T, out)
    dW = mm("no,ni->oi", dy2, x.reshape(-1, x.shape[-1]))
    db = dy2.sum(axis=0)
    dx = mm("no,oi->ni", dy2, W).reshape(x.shape)
    return dx, dW, db


_erf_ufunc = np.frompyfunc(math.erf, 1, 1)


def erf(x):
    """Elementwise erf to libm accuracy (math.erf, ~0.1 s per 10^6)."""
    return _erf_ufunc(x.astype(np.float64)).astype(x.dtype)


def gelu_forward(h):
    # exact GELU: 0.5 h (1 + erf(h / sqrt 2)) = h Phi(h)
    cdf = 0.5 * (1.0 + erf(h * (1.0 / math.sqrt(2.0))))
    return h * cdf, (h, cdf)


def gelu_backward(dy, cache):
    h, cdf = cache
    pdf = np.exp(-0.5 * h * h) * (1.0 / math.sqrt(2.0 * math.pi))
    return dy * (cdf + h * pdf)


def pmap(fn, *arrays):
    """fn applied to row chunks (axis 0) of `arrays` on the thread pool; the
    chunks' results (tuples of arrays) are concatenated along axis 0."""
    n = arrays[0].shape[0]
    chunks = min(_POOL._max_workers, n)
    if chunks <= 1:
        return fn(*arrays)
    bounds = np.linspace(0, n, chunks + 1).astype(int)
    results = list(_POOL.map(
        lambda lh: fn(*(a[lh[0]:lh[1]] if a is not None else None
                        for a in arrays)),
        zip(bounds[:-1], bounds[1:])))
    return tuple(np.concatenate(r, axis=0) for r in zip(*results))


def _attention_core_forward(q, k, v, keep, rate):
    # q, k, v (N,T,hd) with N = B*H; keep (N,T,T) or None
    T, hd = q.shape[1:]
    att = (q @ k.transpose(0, 2, 1)) * (1.0 / math.sqrt(hd))  # (N,T,T)
    future = np.triu(np.ones((T, T), dtype=bool), k=1)        # s > t
    att = np.where(future, -np.inf, att)
    att = att - att.max(axis=-1, keepdims=True)
    p = np.exp(att)
    p = p / p.sum(axis=-1, keepdims=True)                     # softmax
    pd = p if keep is None else dropout_apply(p, keep, rate)
    return pd @ v, p, pd                                      # y (N,T,hd)


def _attention_core_backward(dy, q, k, v, p, pd, keep, rate):
    hd = q.shape[-1]
    dpd = dy @ v.transpose(0, 2, 1)                           # (N,T,T)
    dv = pd.transpose(0, 2, 1) @ dy                           # (N,T,hd)
    dp = dpd if keep is None else dropout_apply(dpd, keep, rate)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))      # 0 where masked
    ds = ds * (1.0 / math.sqrt(hd))
    return ds @ k, ds.transpose(0, 2, 1) @ q, dv              # dq, dk, dv


def attention_forward(qkv, n_head, drop):
    # qkv (B,T,3C) -> y (B,T,C); the (B,H) pairs are independent and are
    # processed as one axis of B*H, in chunks on the thread pool.
    B, T, C3 = qkv.shape
    C = C3 // 3
    H, hd = n_head, C // n_head

    def heads(z):  # (B,T,C) -> (B*H,T,hd)
        return z.reshape(B, T, H, hd).transpose(0, 2, 1, 3).reshape(B * H, T,
                                                                    hd)

    q, k, v = (heads(qkv[..., j * C:(j + 1) * C]) for j in range(3))
    # drop.keep is (B,H,T,T): its row-major order is that of (B*H,T,T).
    keep = None if drop.keep is None else drop.keep.reshape(B * H, T, T)
    y, p, pd = pmap(lambda q, k, v, m: _attention_core_forward(
        q, k, v, m, drop.rate), q, k, v, keep)
    y = y.reshape(B, H, T, hd).transpose(0, 2, 1, 3).reshape(B, T, C)
    return y, (q, k, v, p, pd, keep, drop.rate, (B, H, T, hd))


def attention_backward(dy, cache):
    # dy (B,T,C) -> dqkv (B,T,3C)
    q, k, v, p, pd, keep, rate, (B, H, T, hd) = cache
    dy = dy.reshape(B, T, H, hd).transpose(0, 2, 1, 3).reshape(B * H, T, hd)
    dq, dk, dv = pmap(lambda *a: _attention_core_backward(*a, rate),
                      dy, q, k, v, p, pd, keep)

    def unheads(z):  # (B*H,T,hd) -> (B,T,C)
        return z.reshape(B, H, T, hd).transpose(0, 2, 1, 3).reshape(B, T,
                                                                    H * hd)

    return np.concatenate([unheads(dq), unheads(dk), unheads(dv)], axis=-1)


def block_forward(x, P, i, cfg, drops):
    # x (B,T,C) -> (B,T,C)
    pre = f"transformer.h.{i}."
    c = {}
    a, c["ln_1"] = layernorm_forward(x, P[pre + "ln_1.weight"],
                                     P[pre + "ln_1.bias"])
    qkv, c["c_attn"] = linear_forward(a, P[pre + "attn.c_attn.weight"],
                                      P[pre + "attn.c_attn.bias"])
    y, c["attn"] = attention_forward(qkv, cfg.n_head, drops[1 + 3 * i])
    y, c["attn_proj"] = linear_forward(y, P[pre + "attn.c_proj.weight"],
                                       P[pre + "attn.c_proj.bias"])
    x = x + drops[2 + 3 * i].forward(y)
    m, c["ln_2"] = layernorm_forward(x, P[pre + "ln_2.weight"],
                                     P[pre + "ln_2.bias"])
    h, c["c_fc"] = linear_forward(m, P[pre + "mlp.c_fc.weight"],
                                  P[pre + "mlp.c_fc.bias"])  # (B,T,4C)
    h, c["gelu"] = gelu_forward(h)
    h, c["mlp_proj"] = linear_forward(h, P[pre + "mlp.c_proj.weight"],
                                      P[pre + "mlp.c_proj.bias"])
    x = x + drops[3 + 3 * i].forward(h)
    return x, c


def block_backward(dx, c, i, drops, grads):
    pre = f"transformer.h.{i}."
    # x = x1 + drop3(mlp(ln_2(x1)))
    dh = drops[3 + 3 * i].backward(dx)
    dh, grads[pre + "mlp.c_proj.weight"], grads[pre + "mlp.c_proj.bias"] = \
        linear_backward(dh, c["mlp_proj"])
    dh = gelu_backward(dh, c["gelu"])
    dm, grads[pre + "mlp.c_fc.weight"], grads[pre + "mlp.c_fc.bias"] = \
        linear_backward(dh, c["c_fc"])
    dln, grads[pre + "ln_2.weight"], grads[pre + "ln_2.bias"] = \
        layernorm_backward(dm, c["ln_2"])
    dx = dx + dln
    # x1 = x0 + drop2(attn_proj(attn(c_attn(ln_1(x0)))))
    dy = drops[2 + 3 * i].backward(dx)
    dy, grads[pre + "attn.c_proj.weight"], grads[pre + "attn.c_proj.bias"] = \
        linear_backward(dy, c["attn_proj"])
    dqkv = attention_backward(dy, c["attn"])
    da, grads[pre + "attn.c_attn.weight"], grads[pre + "attn.c_attn.bias"] = \
        linear_backward(dqkv, c["c_attn"])
    dln, grads[pre + "ln_1.weight"], grads[pre + "ln_1.bias"] = \
        layernorm_backward(da, c["ln_1"])
    return dx + dln


def make_dropouts(cfg, step, B, T):
    """The 1 + 3L dropout ops, indexed by op number."""
    C, H, r, s0 = cfg.n_embd, cfg.n_head, cfg.dropout, cfg.training_seed
    drops = [Dropout(r, s0 + 0, step, (B, T, C))]
    for i in range(cfg.n_layer):
        drops += [Dropout(r, s0 + 1 + 3 * i, step, (B, H, T, T)),
                  Dropout(r, s0 + 2 + 3 * i, step, (B, T, C)),
                  Dropout(r, s0 + 3 + 3 * i, step, (B, T, C))]
    return drops


def gpt_loss(P, idx, targets, cfg, drops, need_grads=True):
    """Forward (and backward): returns loss, {name: grad} (or None)."""
    B, T = idx.shape
    wte, wpe = P["transformer.wte.weight"], P["transformer.wpe.weight"]
    # Embedding: x (B,T,C)
    x = drops[0].forward(wte[idx] + wpe[:T])
    caches = []
    for i in range(cfg.n_layer):
        x, c = block_forward(x, P, i, cfg, drops)
        caches.append(c)
    xf, c_lnf = layernorm_forward(x, P["transformer.ln_f.weight"],
                                  P["transformer.ln_f.bias"])
    V, C = wte.shape
    xf2 = xf.reshape(-1, C)                               # (B*T,C)
    logits = mm("nc,vc->nv", xf2, wte).reshape(B, T, V)   # tied lm_head
    # Cross entropy, ignore_index=-1, mean over the kept positions.
    valid = targets != -1
    n_valid = int(valid.sum())
    tgt = np.where(valid, targets, 0)
    zmax = logits.max(axis=-1, keepdims=True)
    ez = np.exp(logits - zmax)
    sez = ez.sum(axis=-1, keepdims=True)
    lse = (np.log(sez) + zmax)[..., 0]                    # (B,T)
    picked = np.take_along_axis(logits, tgt[..., None], axis=-1)[..., 0]
    nll = np.where(valid, lse - picked, 0.0)
    loss = nll.sum() / n_valid
    if not need_grads:
        return loss, None

    grads = {}
    dlogits = ez / sez                                    # softmax (B,T,V)
    np.put_along_axis(dlogits, tgt[..., None],
                      np.take_along_axis(dlogits, tgt[..., None], -1) - 1.0,
                      axis=-1)
    dlogits = dlogits * (valid[..., None] / n_valid)
    dl2 = dlogits.reshape(-1, V)                          # (B*T,V)
    dwte_head = mm("nv,nc->vc", dl2, xf2)                 # (V,C)
    dx = mm("nv,vc->nc", dl2, wte).reshape(B, T, C)       # (B,T,C)
    dx, grads["transformer.ln_f.weight"], grads["transformer.ln_f.bias"] = \
        layernorm_backward(dx, c_lnf)
    for i in reversed(range(cfg.n_layer)):
        dx = block_backward(dx, caches[i], i, drops, grads)
    dx = drops[0].backward(dx)
    dwte = np.zeros_like(wte)
    np.add.at(dwte, idx.reshape(-1), dx.reshape(-1, C))
    grads["transformer.wte.weight"] = dwte + dwte_head   # tied weight
    dwpe = np.zeros_like(wpe)
    dwpe[:T] = dx.sum(axis=0)
    grads["transformer.wpe.weight"] = dwpe
    return loss, grads


# ===========================================================================
# Optimizer step
# ===========================================================================

def get_lr(step):
    """nanoGPT train.py get_lr."""
    if step < WARMUP_ITERS:
        return LEARNING_RATE * (step + 1) / (WARMUP_ITERS + 1)
    if step > LR_DECAY_ITERS:
        return MIN_LR
    ratio = (step - WARMUP_ITERS) / (LR_DECAY_ITERS - WARMUP_ITERS)
    coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))
    return MIN_LR + coeff * (LEARNING_RATE - MIN_LR)


def clip_grad_norm(grads, max_norm=GRAD_CLIP):
    """torch.nn.utils.clip_grad_norm_: returns the norm before clipping."""
    total = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum())
                          for g in grads.values()))
    coef = min(max_norm / (total + 1e-6), 1.0)
    for name in grads:
        grads[name] = grads[name] * coef
    return total


def adamw_update(p, g, m, v, lr, step, decay):
    """torch.optim.AdamW (foreach=False path), bias step t = step + 1."""
    t = step + 1
    p = p * (1.0 - lr * (WEIGHT_DECAY if decay else 0.0))
    m = BETA1 * m + (1.0 - BETA1) * g
    v = BETA2 * v + (1.0 - BETA2) * g * g
    bc1 = 1.0 - BETA1 ** t
    bc2 = 1.0 - BETA2 ** t
    denom = np.sqrt(v) / math.sqrt(bc2) + ADAM_EPS
    p = p - (lr / bc1) * m / denom
    return p, m, v


def train_step(params, state, idx, targets, step, cfg, compute_dtype=np.float64):
    """One step. Returns {name: array} with loss, lr, grad_norm, the updated
    parameters and optimizer state (in compute_dtype)."""
    P = {n: a.astype(compute_dtype) for n, a in params.items()}
    S = {n: a.astype(compute_dtype) for n, a in state.items()}
    B, T = idx.shape
    drops = make_dropouts(cfg, step, B, T)
    loss, grads = gpt_loss(P, idx, targets, cfg, drops)
    grad_norm = clip_grad_norm(grads)
    lr = get_lr(step)
    out = {"loss": np.asarray(loss, dtype=compute_dtype),
           "lr": np.asarray(lr, dtype=compute_dtype),
           "grad_norm": np.asarray(grad_norm, dtype=compute_dtype)}
    for name, p in P.items():
        mk, vk = f"optimizer.{name}.exp_avg", f"optimizer.{name}.exp_avg_sq"
        out[name], out[mk], out[vk] = adamw_update(
            p, grads[name], S[mk], S[vk], lr, step, decay=p.ndim >= 2)
    return out


# ===========================================================================
# CLI: make-inputs / reference
# ===========================================================================

_DTYPES = {"f32": np.float32, "f64": np.float64}


def add_model_flags(ap, defaults):
    d = (lambda v: v) if defaults else (lambda v: None)
    ap.add_argument("--layers", type=int, default=d(DEFAULT_LAYERS))
    ap.add_argument("--heads", type=int, default=d(DEFAULT_HEADS))
    ap.add_argument("--embd", type=int, default=d(DEFAULT_EMBD))
    ap.add_argument("--vocab", type=int, default=d(DEFAULT_VOCAB))
    ap.add_argument("--dropout", type=float, default=d(DEFAULT_DROPOUT))
    ap.add_argument("--training-seed", type=int,
                    default=d(DEFAULT_TRAINING_SEED),
                    help="dropout op n uses seed training_seed + n")


def cmd_make_inputs(a):
    cfg = Config(a.layers, a.heads, a.embd, a.vocab, a.dropout,
                 a.training_seed)
    dt = _DTYPES[a.dtype]
    rng = np.random.default_rng(a.seed)
    # Draw order: params, batch, optimizer state (so --fresh-state changes
    # nothing else).
    params = init_params(rng, cfg, a.seq)
    idx, targets = init_batch(rng, a.batch, a.seq, cfg.vocab)
    state = init_optim(rng, params, a.fresh_state)
    os.makedirs(a.dir, exist_ok=True)
    write_safetensors(os.path.join(a.dir, "params.safetensors"),
                      {n: p.astype(dt) for n, p in params.items()})
    write_safetensors(os.path.join(a.dir, "optim.safetensors"),
                      {n: s.astype(dt) for n, s in state.items()})
    write_safetensors(os.path.join(a.dir, "batch.safetensors"),
                      {"idx": idx, "targets": targets,
                       "step": np.asarray(a.step, dtype=np.int64)},
                      metadata={"sinter.chargpt.config":
                                json.dumps(cfg.as_dict(), sort_keys=True)})
    n_params = sum(p.size for p in params.values())
    print(f"wrote {a.dir}: {n_params} parameters, batch {a.batch}x{a.seq}, "
          f"step {a.step}, {a.dtype}, "
          f"{'fresh' if a.fresh_state else 'random'} optimizer state")


def resolve_config(a, recorded, params):
    """Model flags: explicit flag, else the batch metadata, else default."""
    flags = {"n_layer": ("layers", a.layers), "n_head": ("heads", a.heads),
             "n_embd": ("embd", a.embd), "vocab": ("vocab", a.vocab),
             "dropout": ("dropout", a.dropout),
             "training_seed": ("training-seed", a.training_seed)}
    defaults = Config().as_dict()
    values = {}
    for k, (flag_name, flag) in flags.items():
        if flag is not None and k in recorded and recorded[k] != flag:
            sys.exit(f"error: --{flag_name} {flag} contradicts the value "
                     f"{recorded[k]} make-inputs recorded")
        values[k] = flag if flag is not None else recorded.get(k, defaults[k])
    cfg = Config(**values)
    V, C = params["transformer.wte.weight"].shape
    if (V, C) != (cfg.vocab, cfg.n_embd):
        sys.exit(f"error: wte is {[V, C]}, config says "
                 f"{[cfg.vocab, cfg.n_embd]}")
    return cfg


def cmd_reference(a):
    dt = _DTYPES[a.dtype]
    params, _ = read_safetensors(os.path.join(a.dir, "params.safetensors"))
    state, _ = read_safetensors(os.path.join(a.dir, "optim.safetensors"))
    batch, bmeta = read_safetensors(os.path.join(a.dir, "batch.safetensors"))
    recorded = json.loads(bmeta.get("sinter.chargpt.config", "{}"))
    cfg = resolve_config(a, recorded, params)
    for n, t in list(params.items()) + list(state.items()):
        if t.dtype != dt:
            sys.exit(f"error: {n} is {t.dtype}, --dtype says {a.dtype}")
    idx = batch["idx"].astype(np.int64)
    targets = batch["targets"].astype(np.int64)
    step = int(batch["step"])
    block_size = params["transformer.wpe.weight"].shape[0]
    want = {n: s for n, s, _ in param_specs(cfg, block_size)}
    if set(want) != set(params):
        sys.exit("error: parameter names differ from the model's: "
                 f"{sorted(set(want) ^ set(params))[:5]}")
    for n, s in want.items():
        if params[n].shape != s:
            sys.exit(f"error: {n} has shape {list(params[n].shape)}, "
                     f"want {list(s)}")
    if idx.shape[1] > block_size:
        sys.exit("error: sequence longer than the block size")
    if idx.min() < 0 or idx.max() >= cfg.vocab:
        sys.exit("error: idx out of range")

    compute = _DTYPES[a.compute_dtype]
    t0 = time.time()
    out = train_step(params, state, idx, targets, step, cfg, compute)
    elapsed = time.time() - t0
    path = os.path.join(a.dir, a.output)
    write_safetensors(path, {n: v.astype(dt) for n, v in out.items()})
    print(f"wrote {path}: loss {float(out['loss']):.10g} "
          f"lr {float(out['lr']):.10g} grad_norm {float(out['grad_norm']):.10g} "
          f"(step {step}, computed in {a.compute_dtype} in {elapsed:.2f} s)")


# ===========================================================================
# CLI: compare
# ===========================================================================

# Default tolerances for an f32 computation against this f64 reference.
#
# A tensor passes when both hold:
#  (1) elementwise  |actual - expected| <= atol * rms(expected)
#                                          + rtol * |expected|
#  (2) normwise     ||actual - expected||_2 <= ntol * ||expected||_2
# atol is *relative to the tensor's own scale* (root mean square of the
# expected tensor), not an absolute number: the outputs span many orders of
# magnitude (exp_avg_sq ~ 1e-6 and below, parameters ~ 0.02 .. 1, loss ~ 4)
# and one absolute atol would be vacuous for the optimizer state and too
# strict for the parameters. 0-d tensors (loss, lr, grad_norm) have
# rms = |expected|, so for them (1) reads |error| <= (atol + rtol) |expected|
# and (2) |error| <= ntol |expected|.
#
# Why two criteria, and why these values:
# * f32 has a unit roundoff of 6e-8. Emulating the step in f32 with numpy
#   (`reference --compute-dtype f32`, full size, steps 0/50/300/1000/5001)
#   gives normwise errors of at most ~1.1e-7 for every tensor (loss ~5e-8),
#   but a few elements with much larger errors: the worst is ~6e-6 of the
#   tensor's RMS (updated mlp.c_proj.weight at step 1000). Those come from
#   Adam: the update m_hat / (sqrt(v_hat) + eps) amplifies a gradient
#   difference dg by ~1 / sqrt(v_hat), which is large where v is small, and
#   from gradient elements produced by cancellation.
# * (1) therefore has to allow ~1e-5 of the scale per element. With
#   atol = 2e-5 and rtol = 1e-4 the worst emulated element uses 0.12 of its
#   bound (8x headroom for kernels that sum in another order than numpy),
#   and localized bugs still fail: a wrong dropout element, row or
#   transposition moves elements by 1e-3 .. 1 of the scale.
# * (2) catches small *systematic* errors that (1) must let through, e.g.
#   weight decay applied to biases (changes them by lr*wd ~ 1e-4 relative),
#   the lr of the wrong step (~1e-4 relative): ntol = 1e-5 is ~100x over
#   the f32 noise and ~10x under those.
# * With the default random optimizer state (|exp_avg| ~ 1e-3,
#   exp_avg_sq >= exp_avg^2) v_hat is bounded away from 0 and the update is
#   well-conditioned. With --fresh-state at step 0, m_hat / sqrt(v_hat) =
#   g / |g|: every parameter moves by ~+-lr, and any gradient element small
#   enough to change sign under f32 rounding flips its update by 2 lr. No
#   sensible tolerance tells that apart from a bug (the f32 emulation fails
#   these defaults there), which is why random non-zero state is the default.
DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 2e-5
DEFAULT_NTOL = 1e-5


def compare_tensors(e, a, rtol, atol, ntol):
    """Returns a dict: ok, max_abs, max_rel, ratio (worst elementwise error
    over its bound), norm_rel (normwise relative error), rms."""
    e = e.astype(np.float64)
    a = a.astype(np.float64)
    r = {"ok": True, "max_abs": 0.0, "max_rel": 0.0, "ratio": 0.0,
         "norm_rel": 0.0, "rms": 0.0}
    if e.size == 0:
        return r
    finite = np.isfinite(e) & np.isfinite(a)
    # nan/inf must match exactly (and are left out of the error measures)
    if not np.array_equal(e[~finite], a[~finite], equal_nan=True):
        r.update(ok=False, max_abs=math.inf, max_rel=math.inf,
                 ratio=math.inf, norm_rel=math.inf)
        return r
    e, a = e[finite], a[finite]
    if e.size == 0:
        return r
    diff = np.abs(a - e)
    rms = math.sqrt(float(np.mean(e * e)))
    bound = atol * rms + rtol * np.abs(e)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff == 0, 0.0, diff / np.abs(e))
        ratio = np.where(diff == 0, 0.0, diff / bound)
    norm_e = math.sqrt(float(np.sum(e * e)))
    norm_d = math.sqrt(float(np.sum(diff * diff)))
    norm_rel = (0.0 if norm_d == 0 else
                norm_d / norm_e if norm_e > 0 else math.inf)
    r.update(max_abs=float(diff.max()), max_rel=float(rel.max()),
             ratio=float(ratio.max()), norm_rel=norm_rel, rms=rms)
    r["ok"] = bool((diff <= bound).all()) and norm_rel <= ntol
    return r


def cmd_compare(a):
    expected, _ = read_safetensors(a.expected)
    actual, _ = read_safetensors(a.actual)
    failures, rows = [], []
    for name in sorted(expected):
        if name not in actual:
            failures.append(name)
            print(f"MISSING  {name}")
            continue
        e, x = expected[name], actual[name]
        if e.shape != x.shape:
            failures.append(name)
            print(f"SHAPE    {name}: expected {list(e.shape)}, "
                  f"actual {list(x.shape)}")
            continue
        r = compare_tensors(e, x, a.rtol, a.atol, a.ntol)
        # how far each tensor is from failing: the larger of the two criteria
        badness = max(r["ratio"], r["norm_rel"] / a.ntol)
        rows.append((badness, name, r))
        if not r["ok"]:
            failures.append(name)
        if a.verbose or not r["ok"]:
            print(f"{'ok      ' if r['ok'] else 'MISMATCH'} {name}: max abs "
                  f"{r['max_abs']:.3e} max rel {r['max_rel']:.3e} rms "
                  f"{r['rms']:.3e} normwise rel {r['norm_rel']:.3e} "
                  f"({badness:.3g} x tolerance)")
        if e.dtype != x.dtype:
            print(f"note     {name}: dtype {e.dtype} expected, "
                  f"{x.dtype} actual")
    extra = sorted(set(actual) - set(expected))
    if extra:
        print(f"note: {len(extra)} extra tensor(s) in ACTUAL, not compared: "
              + ", ".join(extra))
    if rows:
        badness, name, r = max(rows, key=lambda row: row[0])
        print(f"worst: {name}: max abs {r['max_abs']:.3e} max rel "
              f"{r['max_rel']:.3e} normwise rel {r['norm_rel']:.3e} "
              f"(tensor rms {r['rms']:.3e}; {badness:.3g} x tolerance)")
    print(f"{len(expected) - len(failures)}/{len(expected)} tensors match "
          f"(rtol {a.rtol:g}, atol {a.atol:g} x rms, ntol {a.ntol:g})")
    if failures:
        print("FAIL")
        return 1
    print("PASS")
    return 0


# ===========================================================================
# CLI: selfcheck
# ===========================================================================

def selfcheck(cxx):
    t0 = time.time()
    ok = True

    check_generator()
    print("generator: pinned C++ values match")
    if cxx:
        repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..",
                                            ".."))
        check_generator_against_cxx(repo)
        print("generator: recomputed with g++ against abi/Random.h")

    # lr schedule
    assert get_lr(0) == 1e-3 * 1 / 101 and get_lr(99) == 1e-3 * 100 / 101
    assert get_lr(100) == 1e-3 and get_lr(5000) == MIN_LR
    assert get_lr(5001) == MIN_LR and abs(get_lr(2550) - 5.5e-4) < 1e-15
    print("lr schedule: ok")

    # Finite differences on a tiny model.
    cfg = Config(n_layer=2, n_head=2, n_embd=8, vocab=65, dropout=0.1,
                 training_seed=DEFAULT_TRAINING_SEED)
    B, T, step = 2, 8, 7
    rng = np.random.default_rng(0)
    params = init_params(rng, cfg, T)
    # With std-0.02 weights and C = 8 the attention scores are ~1e-3 (softmax
    # nearly uniform, q/k gradients ~1e-5, below what atol can resolve) and
    # GELU is nearly linear. Scale the matrices to std ~0.5 so that attention,
    # GELU and the softmax of the logits are all well inside their nonlinear
    # range and every gradient path is sizeable.
    for name, _, kind in param_specs(cfg, T):
        if kind in ("w", "proj_w"):
            params[name] *= 0.5 / 0.02
    idx, targets = init_batch(rng, B, T, cfg.vocab)
    targets[0, 1] = targets[1, 5] = -1  # exercise ignore_index
    drops = make_dropouts(cfg, step, B, T)
    dropped = sum(int((~d.keep).sum()) for d in drops)
    total = sum(d.keep.size for d in drops)
    assert 0.05 < dropped / total < 0.15, dropped / total
    loss, grads = gpt_loss(params, idx, targets, cfg, drops)
    assert math.isfinite(loss) and loss > 0, loss
    eps, rtol, atol = 1e-6, 1e-4, 1e-7
    worst = (0.0, "")
    n_checked = 0
    for name, p in params.items():
        picks = [tuple(int(rng.integers(0, s)) for s in p.shape)
                 for _ in range(4)]
        if name == "transformer.wte.weight":
            # rows that the embedding uses too (both halves of the tied grad)
            picks += [(int(idx[0, 0]), int(rng.integers(0, cfg.n_embd))),
                      (int(idx[1, 3]), int(rng.integers(0, cfg.n_embd)))]
        for ix in picks:
            orig = p[ix]
            p[ix] = orig + eps
            lp, _ = gpt_loss(params, idx, targets, cfg, drops, False)
            p[ix] = orig - eps
            lm, _ = gpt_loss(params, idx, targets, cfg, drops, False)
            p[ix] = orig
            fd = (lp - lm) / (2 * eps)
            an = grads[name][ix]
            err = abs(an - fd)
            n_checked += 1
            r = err / (atol + rtol * abs(fd))
            worst = max(worst, (r, f"{name}{list(ix)}: analytic {an:.9e} "
                                   f"fd {fd:.9e}"))
            if err > atol + rtol * abs(fd):
                ok = False
                print(f"FD MISMATCH {name}{list(ix)}: analytic {an:.9e}, "
                      f"finite difference {fd:.9e}")
    print(f"finite differences: {n_checked} elements of {len(params)} "
          f"tensors; worst {worst[0]:.3g} x tolerance ({worst[1]})")

    # AdamW and clipping against a per-element transcription of torch's
    # update (scalar Python, torch's operation order).
    grads_c = {n: g.copy() for n, g in grads.items()}
    norm = clip_grad_norm(grads_c)
    assert abs(norm - math.sqrt(sum((g ** 2).sum() for g in grads.values()))) \
        < 1e-12 * norm
    after = math.sqrt(sum((g ** 2).sum() for g in grads_c.values()))
    assert abs(after - min(norm, 1.0)) < 1e-5, (norm, after)
    state = init_optim(rng, params, fresh=False)
    out = train_step(params, state, idx, targets, step, cfg)
    lr = get_lr(step)
    for name in ["transformer.wte.weight", "transformer.h.1.ln_2.bias"]:
        g = grads_c[name].reshape(-1)
        p0 = params[name].reshape(-1)
        m0 = state[f"optimizer.{name}.exp_avg"].reshape(-1)
        v0 = state[f"optimizer.{name}.exp_avg_sq"].reshape(-1)
        wd = WEIGHT_DECAY if params[name].ndim >= 2 else 0.0
        for j in range(0, p0.size, max(1, p0.size // 7)):
            pp = p0[j] * (1 - lr * wd)
            mm = m0[j] + (g[j] - m0[j]) * (1 - BETA1)         # lerp_
            vv = v0[j] * BETA2 + (1 - BETA2) * g[j] * g[j]    # addcmul_
            bc1, bc2 = 1 - BETA1 ** (step + 1), 1 - BETA2 ** (step + 1)
            pp -= lr / bc1 * mm / (math.sqrt(vv) / math.sqrt(bc2) + ADAM_EPS)
            for got, want in [(out[name].reshape(-1)[j], pp),
                              (out[f"optimizer.{name}.exp_avg"].reshape(-1)[j],
                               mm),
                              (out[f"optimizer.{name}.exp_avg_sq"]
                               .reshape(-1)[j], vv)]:
                if abs(got - want) > 1e-15 + 1e-12 * abs(want):
                    ok = False
                    print(f"ADAMW MISMATCH {name}[{j}]: {got!r} vs {want!r}")
    print("clipping and AdamW: checked")

    # safetensors round trip, including 0-d and int64.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.safetensors")
        tensors = {"a": np.arange(6, dtype=np.float32).reshape(2, 3),
                   "b": np.asarray(3, dtype=np.int64),
                   "c": np.linspace(0, 1, 5)}
        write_safetensors(path, tensors)
        with open(path, "rb") as f:
            (hlen,) = struct.unpack("<Q", f.read(8))
        assert hlen % 8 == 0
        back, meta = read_safetensors(path)
        assert meta == {"format": "pt"}
        for n, t in tensors.items():
            assert back[n].dtype == t.dtype and back[n].shape == t.shape
            assert np.array_equal(back[n], t)
    print("safetensors: round trip ok")

    print(f"selfcheck took {time.time() - t0:.1f} s")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


# ===========================================================================

def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    mk = sub.add_parser("make-inputs", help="write random inputs")
    mk.add_argument("dir")
    mk.add_argument("--batch", type=int, required=True)
    mk.add_argument("--seq", type=int, required=True,
                    help="sequence length T (= block size: wpe has T rows)")
    mk.add_argument("--dtype", choices=_DTYPES, required=True)
    mk.add_argument("--step", type=int, required=True)
    mk.add_argument("--seed", type=int, required=True)
    mk.add_argument("--fresh-state", action="store_true",
                    help="zero optimizer state instead of random")
    add_model_flags(mk, defaults=True)

    rf = sub.add_parser("reference", help="compute DIR/expected.safetensors")
    rf.add_argument("dir")
    rf.add_argument("--dtype", choices=_DTYPES, required=True,
                    help="dtype of the inputs and of the written results")
    rf.add_argument("--compute-dtype", choices=_DTYPES, default="f64",
                    help="f64 (the reference); f32 only to emulate an f32 "
                         "computation when calibrating compare tolerances")
    rf.add_argument("--output", default="expected.safetensors",
                    help="file name under DIR")
    add_model_flags(rf, defaults=False)

    cp = sub.add_parser("compare", help="compare EXPECTED with ACTUAL")
    cp.add_argument("expected")
    cp.add_argument("actual")
    cp.add_argument("--rtol", type=float, default=DEFAULT_RTOL)
    cp.add_argument("--atol", type=float, default=DEFAULT_ATOL,
                    help="relative to the RMS of each expected tensor")
    cp.add_argument("--ntol", type=float, default=DEFAULT_NTOL,
                    help="bound on ||actual - expected|| / ||expected||")
    cp.add_argument("-v", "--verbose", action="store_true",
                    help="print every tensor")

    sc = sub.add_parser("selfcheck", help="finite differences etc.")
    sc.add_argument("--cxx", action="store_true",
                    help="also recompute the generator values with g++")

    a = ap.parse_args(argv)
    if a.cmd == "make-inputs":
        cmd_make_inputs(a)
        return 0
    if a.cmd == "reference":
        cmd_reference(a)
        return 0
    if a.cmd == "compare":
        return cmd_compare(a)
    return selfcheck(a.cxx)


if __name__ == "__main__":
    sys.exit(main())
