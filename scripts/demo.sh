#!/usr/bin/env bash
# Sets everything up, builds, and compiles the character-level GPT example to
# its training step: prints the parameter table, the IR of @train_step, and
# runs one training step on random tokens with the reference interpreter.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SINTER_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
"$root/scripts/build.sh" sinterc sinter-opt SinterStepMain
sinterc=$build/bin/sinterc
model=$root/examples/chargpt.pbtxt

echo "== Parameters of $model"
"$sinterc" "$model" --summary
echo "== The training step (sgraph IR after the training phase)"
"$sinterc" "$model" --emit=training
echo "== One training step on the reference interpreter (batch of 1)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$tmp" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(0)
tokens = rng.integers(0, 65, size=(1, 257))
np.save(sys.argv[1] + "/idx.npy", tokens[:, :-1].astype(np.int64))
np.save(sys.argv[1] + "/targets.npy", tokens[:, 1:].astype(np.int64))
PY
"$sinterc" "$model" --batch-size=1 --run=train_step \
  --input="$tmp/idx.npy" --input="$tmp/targets.npy"
echo "== The compiled training step: 10 AdamW steps on that batch, then where the time went"
"$sinterc" "$model" --batch-size=1 -o "$tmp/train"
/usr/bin/python3 - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]
import json, struct
def write(path, tensors):  # a minimal safetensors writer (i64 tensors)
    header, offset, blobs = {}, 0, []
    for name, a in tensors.items():
        header[name] = {"dtype": "I64", "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.astype("<i8").tobytes())
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
write(d + "/batch.safetensors", {"idx": np.load(d + "/idx.npy"),
                                 "targets": np.load(d + "/targets.npy")})
PY
"$tmp/train" --inputs="$tmp/batch.safetensors" --steps=10 --profile
