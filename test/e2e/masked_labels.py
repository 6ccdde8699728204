#!/usr/bin/env python3
"""Token data whose labels are partly the ignore index, as fine-tuning has.

    masked_labels.py --out-dir=DIR [--rows=N] [--context=T] [--vocab=V]
                     [--seed=S] [--ignore=-1]

Writes DIR/idx.npy and DIR/targets.npy (int64, N x T) for a GPT with inputs
`idx` and `targets`: random tokens in [0, V), and in each row a prompt of
random length whose targets are the ignore index, the way supervised
fine-tuning masks everything but the answer. A third of the rows are
masked whole (examples with no answer), so batches of a few rows differ
widely in how many labels count, and some hold none at all: exactly where a
mean of per-rank (or per-micro-batch) means differs from the mean over the
whole batch (test/e2e/data-parallel.test).
"""

import argparse
import os

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--rows", type=int, default=160)
    ap.add_argument("--context", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=65)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ignore", type=int, default=-1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    n, t = a.rows, a.context
    idx = rng.integers(0, a.vocab, (n, t), dtype=np.int64)
    targets = np.concatenate(
        [idx[:, 1:], rng.integers(0, a.vocab, (n, 1), dtype=np.int64)], axis=1)
    prompt = rng.integers(0, t, n)
    prompt[rng.random(n) < 1 / 3] = t  # no answer at all
    for r in range(n):
        targets[r, :prompt[r]] = a.ignore
    os.makedirs(a.out_dir, exist_ok=True)
    np.save(os.path.join(a.out_dir, "idx.npy"), idx)
    np.save(os.path.join(a.out_dir, "targets.npy"), targets)
    print(f"{n} rows of {t}: {int((targets != a.ignore).sum())} labels count, "
          f"{int((prompt == t).sum())} rows have none")


if __name__ == "__main__":
    main()
