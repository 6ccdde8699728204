#!/usr/bin/env bash
# Sets everything up, builds, and walks through the character-level GPT
# example: the parameter table, the IR of @train_step, one training step on
# random tokens with the reference interpreter, and then the compiled
# training binary training 30 steps on the bundled text.
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
echo "== The compiled training binary: 30 steps on the bundled Shakespeare, an evaluation, where the time went"
"$sinterc" "$model" --batch-size=4 -o "$tmp/train"
"$tmp/train" --steps=30 --eval-every=15 --eval-batches=4 --save="$tmp/ckpt" --profile
