"""The JAX peer of bench/peers.py: the whole train step under jax.jit.

The models are written in jax.numpy with the parameter names and layouts
of the .pbtxt files (nn.Linear's [out, in] weights, lm_head tied to
transformer.wte); jax.value_and_grad differentiates them. The optimizers
are hand-written torch.optim.AdamW / SGD(momentum) updates; the learning
rate schedule, the global-norm clipping and the update all run inside the
one jitted function, as in Sinter's train_step.

Settings: the params and optimizer state are donated to the step (updated
in place, no copies); XLA's CPU backend with its multi-threaded Eigen pool
(the driver sets XLA_FLAGS; the pool takes every core of the machine);
dropout masks from the "rbg" PRNG (XLA's RngBitGenerator) rather than the
default threefry, which is the cheaper generator on a CPU. fp32
throughout, default matmul precision (which is fp32 on the CPU).

fp32 only: for the driver's --precision=bf16 `build` raises NotMeasured
("bf16 not measured for JAX"), and the table shows JAX as not available.
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worker import NotMeasured, serve  # noqa: E402

import jax  # noqa: E402

jax.config.update("jax_default_prng_impl", "rbg")
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

LN_EPS = 1e-5


# ---- parameters -------------------------------------------------------------

def init_gpt(m, rng):
    """nanoGPT's initialization, under nanoGPT's state_dict names."""
    C, V = m["n_embd"], m["vocab"]

    def normal(*shape, std=0.02):
        return jnp.asarray(rng.standard_normal(shape, np.float32) * std)

    zeros = lambda *s: jnp.zeros(s, jnp.float32)  # noqa: E731
    ones = lambda *s: jnp.ones(s, jnp.float32)  # noqa: E731
    proj_std = 0.02 / math.sqrt(2 * m["n_layer"])
    p = {"transformer.wte.weight": normal(V, C),
         "transformer.wpe.weight": normal(m["block_size"], C)}
    for i in range(m["n_layer"]):
        h = f"transformer.h.{i}."
        p[h + "ln_1.weight"] = ones(C)
        p[h + "ln_2.weight"] = ones(C)
        p[h + "attn.c_attn.weight"] = normal(3 * C, C)
        p[h + "attn.c_proj.weight"] = normal(C, C, std=proj_std)
        p[h + "mlp.c_fc.weight"] = normal(4 * C, C)
        p[h + "mlp.c_proj.weight"] = normal(C, 4 * C, std=proj_std)
        if m["bias"]:
            p[h + "ln_1.bias"] = zeros(C)
            p[h + "ln_2.bias"] = zeros(C)
            p[h + "attn.c_attn.bias"] = zeros(3 * C)
            p[h + "attn.c_proj.bias"] = zeros(C)
            p[h + "mlp.c_fc.bias"] = zeros(4 * C)
            p[h + "mlp.c_proj.bias"] = zeros(C)
    p["transformer.ln_f.weight"] = ones(C)
    if m["bias"]:
        p["transformer.ln_f.bias"] = zeros(C)
    return p  # lm_head.weight is transformer.wte.weight (tied)


def init_mlp(m, rng):
    """nn.Linear's U(-1/sqrt(in), 1/sqrt(in)) for weights and biases."""
    p = {}
    for name, n_in, n_out in (("fc1", m["n_in"], m["n_hidden"]),
                              ("fc2", m["n_hidden"], m["n_out"])):
        bound = 1.0 / math.sqrt(n_in)
        p[name + ".weight"] = jnp.asarray(
            rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32))
        p[name + ".bias"] = jnp.asarray(
            rng.uniform(-bound, bound, (n_out,)).astype(np.float32))
    return p


# ---- models -----------------------------------------------------------------

def linear(x, p, name):
    y = x @ p[name + ".weight"].T
    b = p.get(name + ".bias")
    return y if b is None else y + b


def layer_norm(x, p, name):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    y = (x - mean) * jax.lax.rsqrt(var + LN_EPS) * p[name + ".weight"]
    b = p.get(name + ".bias")
    return y if b is None else y + b


def dropout(x, rate, key):
    if rate == 0.0:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0)


def cross_entropy(logits, targets, ignore_index):
    """F.cross_entropy: mean over positions whose label is not ignored."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    valid = targets != ignore_index
    safe = jnp.where(valid, targets, 0)
    nll = -jnp.take_along_axis(logp, safe[..., None], axis=-1)[..., 0]
    return jnp.sum(jnp.where(valid, nll, 0.0)) / jnp.maximum(valid.sum(), 1)


def gpt_loss(p, idx, targets, key, m):
    B, T = idx.shape
    C, H = m["n_embd"], m["n_head"]
    rate = m["dropout"]
    keys = iter(jax.random.split(key, 1 + 3 * m["n_layer"]))
    x = p["transformer.wte.weight"][idx] + p["transformer.wpe.weight"][:T]
    x = dropout(x, rate, next(keys))
    causal = jnp.tril(jnp.ones((T, T), bool))
    for i in range(m["n_layer"]):
        h = f"transformer.h.{i}."
        qkv = linear(layer_norm(x, p, h + "ln_1"), p, h + "attn.c_attn")
        q, k, v = (z.reshape(B, T, H, C // H).transpose(0, 2, 1, 3)
                   for z in jnp.split(qkv, 3, axis=-1))  # (B, H, T, hs)
        att = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(C // H))
        att = jax.nn.softmax(jnp.where(causal, att, -jnp.inf), axis=-1)
        att = dropout(att, rate, next(keys))
        y = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        x = x + dropout(linear(y, p, h + "attn.c_proj"), rate, next(keys))
        z = linear(layer_norm(x, p, h + "ln_2"), p, h + "mlp.c_fc")
        z = jax.nn.gelu(z, approximate=m["gelu_tanh"])
        x = x + dropout(linear(z, p, h + "mlp.c_proj"), rate, next(keys))
    x = layer_norm(x, p, "transformer.ln_f")
    logits = x @ p["transformer.wte.weight"].T  # tied lm_head
    return cross_entropy(logits, targets, -1), {}


def init_cnn(m, rng):
    """nn.Conv2d's and nn.Linear's U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    p, c, k = {}, m["channels"], m["kernel"]
    conv2 = ([("conv2_dw", (c[1], 1, k, k)), ("conv2", (c[2], c[1], 1, 1))]
             if m.get("separable") else [("conv2", (c[2], c[1], k, k))])
    shapes = [("conv1", (c[1], c[0], k, k))] + conv2 + [
        ("fc1", (m["n_hidden"], c[2] * (m["image"] // 4) ** 2)),
        ("fc2", (m["n_out"], m["n_hidden"]))]
    bn = m.get("batch_norm", False)
    for name, shape in shapes:
        bound = 1.0 / math.sqrt(int(np.prod(shape[1:])))
        p[name + ".weight"] = jnp.asarray(
            rng.uniform(-bound, bound, shape).astype(np.float32))
        if bn and name.startswith("conv"):  # nn.BatchNorm2d after it
            norm = "bn" + name[len("conv"):]
            p[norm + ".weight"] = jnp.ones(shape[0], jnp.float32)
            p[norm + ".bias"] = jnp.zeros(shape[0], jnp.float32)
            continue
        p[name + ".bias"] = jnp.asarray(
            rng.uniform(-bound, bound, shape[0]).astype(np.float32))
    return p


def init_buffers(m):
    """nn.BatchNorm2d's running statistics (the CNN with batch norm)."""
    if m.get("kind") != "cnn" or not m.get("batch_norm"):
        return {}
    out = {}
    for n, c in ((1, m["channels"][1]), (2, m["channels"][2])):
        out[f"bn{n}.running_mean"] = jnp.zeros(c, jnp.float32)
        out[f"bn{n}.running_var"] = jnp.ones(c, jnp.float32)
    return out


def cnn_loss(p, image, label, key, m, buffers=None):
    side = m["image"]
    new_buffers = {}

    def conv(x, name, groups=1):
        w = p[name + ".weight"]
        q = w.shape[-1] // 2
        y = jax.lax.conv_general_dilated(
            x, w, (1, 1), [(q, q), (q, q)], feature_group_count=groups,
            dimension_numbers=("NCHW", "OIHW", "NCHW"))
        norm = "bn" + name[len("conv"):]
        if norm + ".weight" not in p:
            return y + p[name + ".bias"][None, :, None, None]
        # nn.BatchNorm2d in training mode: the batch's statistics, and the
        # running ones moved towards them (momentum 0.1, variance unbiased).
        mean = jnp.mean(y, axis=(0, 2, 3))
        var = jnp.var(y, axis=(0, 2, 3))
        n = y.size // y.shape[1]
        for stat, batch in (("running_mean", mean),
                            ("running_var", var * n / (n - 1))):
            key_ = f"{norm}.{stat}"
            new_buffers[key_] = 0.1 * jax.lax.stop_gradient(batch) + \
                0.9 * buffers[key_]
        y = (y - mean[None, :, None, None]) * jax.lax.rsqrt(
            var[None, :, None, None] + 1e-5)
        return (y * p[norm + ".weight"][None, :, None, None] +
                p[norm + ".bias"][None, :, None, None])

    def pool(x):
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max,
                                     (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    x = image.reshape(-1, 1, side, side)
    x = pool(jax.nn.relu(conv(x, "conv1")))
    if m.get("separable"):
        x = conv(x, "conv2_dw", groups=x.shape[1])
    x = pool(jax.nn.relu(conv(x, "conv2")))
    x = x.reshape(x.shape[0], -1)
    logits = linear(jax.nn.relu(linear(x, p, "fc1")), p, "fc2")
    accuracy = jnp.mean(jnp.argmax(logits, -1) == label)
    metrics = {"accuracy": accuracy}
    if new_buffers:
        metrics["buffers"] = new_buffers
    return cross_entropy(logits, label, -100), metrics


def mlp_loss(p, image, label, key, m):
    logits = linear(jax.nn.relu(linear(image, p, "fc1")), p, "fc2")
    accuracy = jnp.mean(jnp.argmax(logits, -1) == label)
    return cross_entropy(logits, label, -100), {"accuracy": accuracy}


# ---- optimizers -------------------------------------------------------------

def scheduled_lr(o, step):
    """nanoGPT's get_lr (bench/peers/workloads.py) as jnp ops."""
    lr = o["lr"]
    if "decay_steps" not in o:
        return jnp.float32(lr)
    s = step.astype(jnp.float32)
    W, D, lo = o["warmup_steps"], o["decay_steps"], o["min_lr"]
    cosine = lo + 0.5 * (1.0 + jnp.cos(math.pi * (s - W) / (D - W))) * (
        lr - lo)
    return jnp.where(s < W, lr * (s + 1) / (W + 1),
                     jnp.where(s > D, lo, cosine))


def clip_by_global_norm(grads, max_norm):
    """torch.nn.utils.clip_grad_norm_: scale by min(1, max / (norm + 1e-6))."""
    norm = jnp.sqrt(sum(jnp.sum(g * g) for g in grads.values()))
    scale = jnp.minimum(1.0, max_norm / (norm + 1e-6))
    return {k: g * scale for k, g in grads.items()}, norm


def adamw(o, p, g, state, step, lr):
    """torch.optim.AdamW; weight decay only on rank >= 2 tensors."""
    b1, b2 = o["betas"]
    t = (step + 1).astype(jnp.float32)
    c1, c2 = 1.0 - b1 ** t, 1.0 - b2 ** t
    new_p, new_m, new_v = {}, {}, {}
    for k in p:
        decay = o["weight_decay"] if p[k].ndim >= 2 else 0.0
        m = b1 * state["m"][k] + (1.0 - b1) * g[k]
        v = b2 * state["v"][k] + (1.0 - b2) * g[k] * g[k]
        w = p[k] * (1.0 - lr * decay)
        new_p[k] = w - lr * (m / c1) / (jnp.sqrt(v / c2) + o["eps"])
        new_m[k], new_v[k] = m, v
    return new_p, {"m": new_m, "v": new_v}


def sgd(o, p, g, state, step, lr):
    """torch.optim.SGD with momentum (dampening 0, no Nesterov)."""
    buf = {k: o["momentum"] * state["buf"][k] + g[k] for k in p}
    return {k: p[k] - lr * buf[k] for k in p}, {"buf": buf}


# ---- the step ---------------------------------------------------------------

def build(workload, mode, threads, precision):
    if mode != "jit":
        raise ValueError(f"unknown mode {mode!r}")
    if precision != "fp32":
        raise NotMeasured(f"{precision} not measured for JAX")
    m, o = workload["model"], workload["optim"]
    rng = np.random.default_rng(1337)
    init, loss_fn = {"mlp": (init_mlp, mlp_loss), "cnn": (init_cnn, cnn_loss),
                     "gpt": (init_gpt, gpt_loss)}[m["kind"]]
    params = init(m, rng)
    zeros = {k: jnp.zeros_like(v) for k, v in params.items()}
    if o["kind"] == "sgd":
        state, update = {"buf": zeros}, sgd
    else:
        state = {"m": zeros, "v": {k: jnp.zeros_like(v)
                                   for k, v in params.items()}}
        update = adamw
    inputs = []
    for shape, dtype, high in workload["inputs"].values():
        inputs.append(jnp.asarray(rng.integers(0, high, shape))
                      if dtype == "i64" else
                      jnp.asarray(rng.standard_normal(shape, np.float32)))

    buffers = init_buffers(m)  # batch norm's running statistics
    if buffers:
        state["buffers"] = buffers

    def train_step(params, state, step, key, *batch):
        extra = {"buffers": state["buffers"]} if "buffers" in state else {}
        (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            params, *batch, jax.random.fold_in(key, step), m, **extra)
        new_buffers = metrics.pop("buffers", None)
        if o.get("grad_clip", 0.0) > 0:
            grads, metrics["grad_norm"] = clip_by_global_norm(
                grads, o["grad_clip"])
        lr = scheduled_lr(o, step)
        opt = {k: v for k, v in state.items() if k != "buffers"}
        params, state = update(o, params, grads, opt, step, lr)
        if new_buffers is not None:
            state = dict(state, buffers=new_buffers)
        return params, state, loss, dict(metrics, lr=lr)

    jitted = jax.jit(train_step, donate_argnums=(0, 1))
    key = jax.random.key(1337)
    carry = {"params": params, "state": state, "step": 0}

    def step():
        p, s, loss, metrics = jitted(carry["params"], carry["state"],
                                     jnp.int32(carry["step"]), key, *inputs)
        jax.block_until_ready((p, s, loss, metrics))
        carry.update(params=p, state=s, step=carry["step"] + 1)

    n = sum(int(v.size) for v in params.values())
    info = {"jax": jax.__version__, "backend": jax.default_backend(),
            "devices": len(jax.devices()), "prng": "rbg",
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "allocator": os.environ.get("LD_PRELOAD", "") or "glibc"}
    return step, n, info


if __name__ == "__main__":
    serve(build)
