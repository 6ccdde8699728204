"""Writes inputs for run.test: MLP weights (safetensors), a batch (.npy),
and a few broken files."""
import json
import struct
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(0)
params = {
    "fc1.weight": rng.standard_normal((256, 784)).astype(np.float32) * 0.05,
    "fc1.bias": rng.standard_normal(256).astype(np.float32) * 0.05,
    "fc2.weight": rng.standard_normal((10, 256)).astype(np.float32) * 0.05,
    "fc2.bias": rng.standard_normal(10).astype(np.float32) * 0.05,
}
header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
for name, array in params.items():
    data = array.tobytes()
    header[name] = {"dtype": "F32", "shape": list(array.shape),
                    "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(f"{out}/params.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
np.savez(f"{out}/params.npz", **params)

image = rng.standard_normal((4, 784)).astype(np.float32)
labels = np.array([3, 1, 4, 1], dtype=np.int64)
np.save(f"{out}/image.npy", image)
np.save(f"{out}/labels.npy", labels)
np.save(f"{out}/labels_i32.npy", labels.astype(np.int32))
np.save(f"{out}/bad_labels.npy", np.array([3, 1, 12, 1], dtype=np.int64))
with open(f"{out}/image.npy", "rb") as f:
    whole = f.read()
with open(f"{out}/truncated.npy", "wb") as f:
    f.write(whole[: len(whole) // 2])
with open(f"{out}/params.txt", "w") as f:
    f.write("not tensors\n")
np.save(f"{out}/a.npy", np.array(2.0, dtype=np.float32))
np.save(f"{out}/x.npy", np.array(3.0, dtype=np.float32))
np.save(f"{out}/y.npy", np.array(1.0, dtype=np.float32))
