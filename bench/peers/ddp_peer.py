"""PyTorch DDP (gloo) on char-GPT, the peer of bench/data_parallel.py.

Started on every rank by a launcher that sets torchrun's variables (the
driver uses sinter-launch: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), it
trains the same model as examples/chargpt.pbtxt (torch_peer.py's nanoGPT
modules, bench/peers/workloads.py's CHARGPT) under
DistributedDataParallel with the gloo backend and its defaults (25 MiB
buckets), one thread per rank, at --batch rows per rank: set the lr,
forward, cross-entropy, backward (DDP all-reduces the gradients,
overlapped with it), clip_grad_norm_, AdamW (fused). Rank 0 prints one
JSON line: the median of --steps timed steps after --warmup untimed ones.

With --comm=bf16 (or fp16) the gradients travel compressed through DDP's
bf16_compress_hook (fp16_compress_hook).

Usage: python ddp_peer.py --batch=4 --steps=8 --warmup=3 [--dropout=0.2]
           [--comm=fp32|bf16|fp16]
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import workloads  # noqa: E402
from torch_peer import GPT, make_optimizer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--comm", choices=["fp32", "bf16", "fp16"],
                    default="fp32")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    torch.set_float32_matmul_precision("highest")
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(1337)
    w = dict(workloads.CHARGPT)
    m = dict(w["model"], dropout=a.dropout)
    optim = w["optim"]
    model = torch.nn.parallel.DistributedDataParallel(GPT(m).train())
    if a.comm != "fp32":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        model.register_comm_hook(None, default_hooks.bf16_compress_hook
                                 if a.comm == "bf16"
                                 else default_hooks.fp16_compress_hook)
    opt, _ = make_optimizer(model.module, optim)
    g = torch.Generator().manual_seed(rank)
    idx = torch.randint(0, m["vocab"], (a.batch, m["block_size"]), generator=g)
    tgt = torch.randint(0, m["vocab"], (a.batch, m["block_size"]), generator=g)
    times = []
    for i in range(a.warmup + a.steps):
        dist.barrier()
        t0 = time.perf_counter()
        lr = workloads.get_lr(optim, i)
        for group in opt.param_groups:
            group["lr"] = lr
        out = model(idx, tgt)
        loss = out[0] if isinstance(out, tuple) else out
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), optim["grad_clip"],
                                       foreach=True)
        opt.step()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    slowest = torch.tensor([statistics.median(times)])
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    if rank == 0:
        print(json.dumps({"ddp_step_ms": 1e3 * slowest.item(),
                          "torch": torch.__version__}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
