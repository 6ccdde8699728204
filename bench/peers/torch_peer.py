"""PyTorch peers of bench/peers.py: eager and torch.compile.

The models are nanoGPT's modules (model.py), trimmed to training: the
same shapes, parameter names and tying as the .pbtxt files
(bench/peers/workloads.py). One timed step is what Sinter's train_step
does: set the scheduled lr, forward, cross-entropy, backward, global-norm
clipping, optimizer update (and, for the MLP, the accuracy metric).

Settings (the fastest ones PyTorch offers on a CPU at each precision):
  - torch.set_num_threads(threads); the driver also sets OMP_NUM_THREADS
    and MKL_NUM_THREADS and preloads jemalloc/tcmalloc when installed;
  - precision "fp32": fp32 throughout, set_float32_matmul_precision(
    "highest") (no bf16 or tf32 shortcuts, since Sinter is fp32 there),
    oneDNN (mkldnn) enabled;
  - precision "bf16" (Sinter's --precision=bf16_mixed): as nanoGPT's
    train.py, the forward pass (model call and loss) runs under
    torch.autocast("cpu", dtype=torch.bfloat16), so matmuls (linear,
    attention) run in bf16 and autocast's fp32 ops (layer_norm,
    cross_entropy, ...) in fp32; backward, clipping and the optimizer stay
    outside it, on fp32 master weights and gradients (no GradScaler: bf16
    needs none);
  - attention through F.scaled_dot_product_attention, as nanoGPT: the
    fused CPU flash kernel where PyTorch allows it (no dropout), its math
    fallback otherwise;
  - optimizer with fused=True (one C++ kernel for all parameters), else
    foreach; clip_grad_norm_ with foreach;
  - mode "compile": torch.compile(model) with inductor's default mode (the
    forward and backward become generated C++/OpenMP kernels; matmuls stay
    MKL/oneDNN calls); "compile:max-autotune" etc. pass torch.compile's
    mode. The optimizer stays the fused kernel, as in nanoGPT's train.py.
"""

import contextlib
import functools
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worker import serve  # noqa: E402
from workloads import get_lr  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class LayerNorm(nn.Module):
    """nanoGPT's LayerNorm with an optional bias."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, m):
        super().__init__()
        C = m["n_embd"]
        self.c_attn = nn.Linear(C, 3 * C, bias=m["bias"])
        self.c_proj = nn.Linear(C, C, bias=m["bias"])
        self.attn_dropout_p = m["dropout"]
        self.resid_dropout = nn.Dropout(m["dropout"])
        self.n_head = m["n_head"]

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        # (B, T, C) -> (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None,
            dropout_p=self.attn_dropout_p if self.training else 0.0,
            is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, m):
        super().__init__()
        C = m["n_embd"]
        self.c_fc = nn.Linear(C, 4 * C, bias=m["bias"])
        self.gelu = nn.GELU(approximate="tanh" if m["gelu_tanh"] else "none")
        self.c_proj = nn.Linear(4 * C, C, bias=m["bias"])
        self.dropout = nn.Dropout(m["dropout"])

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.ln_1 = LayerNorm(m["n_embd"], bias=m["bias"])
        self.attn = CausalSelfAttention(m)
        self.ln_2 = LayerNorm(m["n_embd"], bias=m["bias"])
        self.mlp = MLP(m)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's GPT: learned positions, pre-norm blocks, tied lm_head."""

    def __init__(self, m):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(m["vocab"], m["n_embd"]),
            wpe=nn.Embedding(m["block_size"], m["n_embd"]),
            drop=nn.Dropout(m["dropout"]),
            h=nn.ModuleList([Block(m) for _ in range(m["n_layer"])]),
            ln_f=LayerNorm(m["n_embd"], bias=m["bias"]),
        ))
        self.lm_head = nn.Linear(m["n_embd"], m["vocab"], bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * m["n_layer"]))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, 0.0, 0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx, targets):
        T = idx.size(1)
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) +
                                  self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)),
                               targets.view(-1), ignore_index=-1)


class MlpClassifier(nn.Module):
    """examples/mlp_classifier.pbtxt: fc1 -> relu -> fc2, plus accuracy."""

    def __init__(self, m):
        super().__init__()
        self.fc1 = nn.Linear(m["n_in"], m["n_hidden"])
        self.fc2 = nn.Linear(m["n_hidden"], m["n_out"])

    def forward(self, image, label):
        logits = self.fc2(F.relu(self.fc1(image)))
        accuracy = (logits.argmax(-1) == label).float().mean()
        return F.cross_entropy(logits, label), accuracy.detach()


class CnnClassifier(nn.Module):
    """examples/cnn_classifier.pbtxt: two conv-relu-maxpool stages, then
    fc1 -> relu -> fc2, plus accuracy."""

    def __init__(self, m):
        super().__init__()
        c, k = m["channels"], m["kernel"]
        self.side = m["image"]
        bn = m.get("batch_norm", False)  # a batch norm after each conv
        self.conv1 = nn.Conv2d(c[0], c[1], k, padding=k // 2, bias=not bn)
        self.separable = m.get("separable", False)
        if self.separable:  # depthwise k x k, then 1 x 1 (MobileNet)
            self.conv2_dw = nn.Conv2d(c[1], c[1], k, padding=k // 2,
                                      groups=c[1])
            self.conv2 = nn.Conv2d(c[1], c[2], 1)
        else:
            self.conv2 = nn.Conv2d(c[1], c[2], k, padding=k // 2, bias=not bn)
        self.bn1 = nn.BatchNorm2d(c[1]) if bn else nn.Identity()
        self.bn2 = nn.BatchNorm2d(c[2]) if bn else nn.Identity()
        self.fc1 = nn.Linear(c[2] * (self.side // 4) ** 2, m["n_hidden"])
        self.fc2 = nn.Linear(m["n_hidden"], m["n_out"])

    def forward(self, image, label):
        x = image.view(-1, 1, self.side, self.side)
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        if self.separable:
            x = self.conv2_dw(x)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        logits = self.fc2(F.relu(self.fc1(x.flatten(1))))
        accuracy = (logits.argmax(-1) == label).float().mean()
        return F.cross_entropy(logits, label), accuracy.detach()


def make_inputs(workload):
    """Random model inputs, fixed for every step (as Sinter's --inputs)."""
    g = torch.Generator().manual_seed(0)
    out = []
    for shape, dtype, high in workload["inputs"].values():
        if dtype == "i64":
            out.append(torch.randint(0, high, shape, generator=g))
        else:
            out.append(torch.randn(shape, generator=g))
    return out


def make_optimizer(model, optim):
    """torch.optim with the fused kernel where this PyTorch has one."""
    params = list(model.parameters())  # tied parameters appear once
    if optim["kind"] == "sgd":
        groups = [{"params": params}]
        make = lambda **kw: torch.optim.SGD(  # noqa: E731
            groups, lr=optim["lr"], momentum=optim["momentum"], **kw)
    else:
        # nanoGPT's configure_optimizers: decay only rank >= 2 tensors.
        groups = [
            {"params": [p for p in params if p.dim() >= 2],
             "weight_decay": optim["weight_decay"]},
            {"params": [p for p in params if p.dim() < 2],
             "weight_decay": 0.0},
        ]
        make = lambda **kw: torch.optim.AdamW(  # noqa: E731
            groups, lr=optim["lr"], betas=optim["betas"], eps=optim["eps"],
            **kw)
    try:
        return make(fused=True), "fused"
    except (RuntimeError, TypeError, ValueError):
        return make(foreach=True), "foreach"


def build(workload, mode, threads, precision):
    torch.set_num_threads(threads)
    torch.set_float32_matmul_precision("highest")
    torch.backends.mkldnn.enabled = True
    torch.manual_seed(1337)
    m, optim = workload["model"], workload["optim"]
    kinds = {"mlp": MlpClassifier, "cnn": CnnClassifier, "gpt": GPT}
    model = kinds[m["kind"]](m).train()
    params = sum(p.numel() for p in model.parameters())
    opt, opt_impl = make_optimizer(model, optim)
    inputs = make_inputs(workload)
    if precision == "bf16":
        autocast = functools.partial(torch.autocast, "cpu",
                                     dtype=torch.bfloat16)
    elif precision == "fp32":
        autocast = contextlib.nullcontext
    else:
        raise ValueError(f"unknown precision {precision!r}")
    info = {"torch": torch.__version__, "threads": torch.get_num_threads(),
            "optimizer": opt_impl, "precision": precision,
            "allocator": os.environ.get("LD_PRELOAD", "") or "glibc"}
    if mode.startswith("compile"):
        # "compile" or "compile:MODE" (torch.compile's mode argument).
        compile_mode = mode.partition(":")[2] or "default"
        model = torch.compile(model, mode=compile_mode)
        info["compile"] = f"inductor, mode={compile_mode}"
    elif mode != "eager":
        raise ValueError(f"unknown mode {mode!r}")
    counter = [0]
    clip = optim.get("grad_clip", 0.0)

    def step():
        lr = get_lr(optim, counter[0])
        for group in opt.param_groups:
            group["lr"] = lr
        with autocast():  # forward and loss only, as nanoGPT's train.py
            out = model(*inputs)
            loss = out[0] if isinstance(out, tuple) else out
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip,
                                           foreach=True)
        opt.step()
        counter[0] += 1

    return step, params, info


if __name__ == "__main__":
    serve(build)
