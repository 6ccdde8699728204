#!/usr/bin/env python3
"""GPT-2 124M training steps in PyTorch on the GPU, the peer that
scripts/gpu-check.sh times Sinter's CUDA binary against.

    torch_gpt2.py --batch=16 --steps=20 [--mode=compile|eager]

The model, optimizer and step are bench/peers/torch_peer.py's (nanoGPT's
modules, AdamW fused, global-norm clipping at 1.0, the scheduled lr) on
CUDA: the forward pass and loss under torch.autocast("cuda", bfloat16) as
nanoGPT's train.py, the matmuls' fp32 inputs in TF32 off (Sinter's bf16
mixed precision rounds matmul inputs to bf16 and accumulates in fp32). The
inputs are random tokens, fixed for every step, like the binary's
--inputs. Prints one line: ms per step (mean of the timed steps after
three warm-ups, each synchronized) and tokens per second.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench", "peers"))
import torch  # noqa: E402
import torch_peer  # noqa: E402
from workloads import GPT2, get_lr  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--mode", default="compile")
    args = ap.parse_args()
    torch.manual_seed(1337)
    m, optim = GPT2["model"], GPT2["optim"]
    model = torch_peer.GPT(m).cuda().train()
    opt, _ = torch_peer.make_optimizer(model, optim)
    t = m["block_size"]
    idx = torch.randint(0, m["vocab"], (args.batch, t), device="cuda")
    targets = torch.randint(0, m["vocab"], (args.batch, t), device="cuda")
    if args.mode == "compile":
        model = torch.compile(model)
    counter = [0]

    def step():
        for group in opt.param_groups:
            group["lr"] = get_lr(optim, counter[0])
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(idx, targets)
            loss = out[0] if isinstance(out, tuple) else out
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        counter[0] += 1

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    ms = 1e3 * (time.perf_counter() - t0) / args.steps
    print(f"torch {torch.__version__} {args.mode} bf16 autocast B={args.batch} "
          f"T={t}: {ms:.2f} ms/step, {args.batch * t / ms * 1e3:.0f} tokens/s")


if __name__ == "__main__":
    main()
