"""Inputs and comparisons for decompose-ops-numerics.test.

  make DIR      writes DIR/f64.safetensors, DIR/bf16.safetensors (inputs of
                @composites_f64 and @composites_bf16) and DIR/idx.npy,
                DIR/targets.npy (a batch for tiny_gpt.pbtxt)
  compare BEFORE AFTER RTOL ATOL
                checks that two safetensors files of results hold the same
                tensors, equal within |a - b| <= ATOL + RTOL * |b| and NaN
                (or inf) at the same places
  train-step BEFORE AFTER
                compares two train_step results, see compare_train_step
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F64": np.float64, "F32": np.float32, "I64": np.int64,
          "I32": np.int32, "BF16": np.uint16, "F16": np.float16}


def to_bf16_bits(a):
    """Rounds float32 values to bf16 (nearest even), as raw uint16 bits."""
    bits = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16).astype(np.uint16)


def write(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (dtype, array) in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = np.frombuffer(blob[8 + size + begin:8 + size + end],
                            dtype=DTYPES[info["dtype"]])
        if info["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = raw.astype(np.float64).reshape(info["shape"])
    return tensors


def make(out):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 5, 4)) * 3
    # Rows of masked logits: plain, fully masked (-inf: NaN out of both
    # forms), partly masked, and large (the max subtraction matters).
    masked = rng.standard_normal((3, 4))
    masked[1, :] = -np.inf
    masked[2, [0, 2]] = -np.inf
    masked[0, :] += 800.0
    logits = rng.standard_normal((2, 3, 6)) * 4
    logits[0, 0] += 1000.0
    # A masked class that is never the label: one_hot * x would give NaN.
    logits[1, :, 5] = -np.inf
    # A fully masked row at an ignored position: its loss is NaN, which
    # must not leak into the result (loss * valid would give NaN * 0).
    logits[0, 2, :] = -np.inf
    labels = np.array([[0, 3, -1], [2, -1, 1]], dtype=np.int64)
    f64 = {
        "x": ("F64", x),
        "w2": ("F64", rng.standard_normal((5, 4))),
        "b2": ("F64", rng.standard_normal((5, 4))),
        "w1": ("F64", rng.standard_normal(4)),
        "b1": ("F64", rng.standard_normal(4)),
        "masked": ("F64", masked),
        "logits": ("F64", logits),
        "labels": ("I64", labels),
        "all_ignored": ("I64", np.full((2, 3), -1, dtype=np.int64)),
        # ignore_index = 2 is a valid class: that position is skipped.
        "labels32": ("I32", np.array([[2, 3, 2], [2, 0, 1]], dtype=np.int32)),
        "s": ("F64", np.array(-1.5)),
    }
    bf16 = {
        "labels": ("I64", labels),
        "x_bf16": ("BF16", to_bf16_bits(x)),
        "w1_bf16": ("BF16", to_bf16_bits(rng.standard_normal(4))),
        "b1_bf16": ("BF16", to_bf16_bits(rng.standard_normal(4))),
        "logits_bf16": ("BF16", to_bf16_bits(rng.standard_normal((2, 3, 6)) * 4)),
    }
    write(f"{out}/f64.safetensors", f64)
    write(f"{out}/bf16.safetensors", bf16)
    # tiny_gpt: 11 characters, context 8, batch 2; the last targets ignored.
    targets = rng.integers(0, 11, (2, 8))
    targets[1, 5:] = -1
    np.save(f"{out}/idx.npy", rng.integers(0, 11, (2, 8)))
    np.save(f"{out}/targets.npy", targets)


def compare(before_path, after_path, rtol, atol):
    before, after = read(before_path), read(after_path)
    assert before.keys() == after.keys(), (sorted(before), sorted(after))
    worst = 0.0
    for name in sorted(before):
        a, b = after[name], before[name]
        assert a.shape == b.shape, (name, a.shape, b.shape)
        nan = np.isnan(b)
        assert (np.isnan(a) == nan).all(), (name, "NaN differs", a, b)
        a, b = a[~nan], b[~nan]
        inf = np.isinf(b)
        assert (a[inf] == b[inf]).all(), (name, "inf differs", a, b)
        a, b = a[~inf], b[~inf]
        err = np.abs(a - b)
        bad = err > atol + rtol * np.abs(b)
        assert not bad.any(), (name, a[bad], b[bad])
        if b.size:
            worst = max(worst, float((err / (atol + rtol * np.abs(b))).max()))
    print(f"{len(before)} results match; worst error {worst:.3g} of the "
          "tolerance")


def compare_train_step(before_path, after_path):
    """One f32 AdamW train_step before and after decomposition.

    The loss, the gradient norm and the optimizer state (exp_avg = 0.1 * g
    and exp_avg_sq = 0.01 * g^2 after the first step, g the clipped
    gradient) must agree to 1e-5 of each tensor's largest magnitude: f32
    rounds at 6e-8, and a forward and backward pass of a few hundred ops
    accumulates tens of roundings (measured: below 5e-7). The updated
    parameters cannot be held to that. The first Adam step moves each by
    lr * g / (|g| + 1e-8): about +-lr whatever g's size, so a gradient that
    is pure rounding noise (the attention key bias's is exactly zero in exact
    arithmetic, softmax being shift-invariant) may move its parameter by
    anything in [-lr, lr] in either run. Parameters are compared to 2 * lr;
    the gradients they come from are checked through exp_avg.
    """
    before, after = read(before_path), read(after_path)
    assert before.keys() == after.keys(), (sorted(before), sorted(after))
    lr = float(before["lr"])
    for name in sorted(before):
        a, b = after[name], before[name]
        assert a.shape == b.shape, (name, a.shape, b.shape)
        assert np.isfinite(b).all(), (name, b)
        err = float(np.abs(a - b).max()) if b.size else 0.0
        if name in ("loss", "grad_norm", "lr") or name.startswith("optimizer."):
            bound = 1e-5 * float(np.abs(b).max())
        else:
            bound = 2 * lr
        assert err <= bound, (name, err, bound)
    print(f"{len(before)} train_step results match")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "train-step":
        compare_train_step(sys.argv[2], sys.argv[3])
    else:
        compare(sys.argv[2], sys.argv[3], float(sys.argv[4]),
                float(sys.argv[5]))
