#!/bin/bash
# Sinter's fp32 step against its bf16_mixed step (docs/MixedPrecision.md,
# "Figures"): char-GPT at batch 8 x 256 as the example is (dropout 0.2) and
# with dropout 0, each compiled both ways, then ROUNDS interleaved rounds of
# STEPS steps on the bundled data, printing each run's steady ms/step (the
# binary's --profile) with the 1-minute load average before it.
#
# Usage: bench/precision_ratio.sh [BUILD_DIR] [ROUNDS] [STEPS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
rounds=${2:-3}
steps=${3:-6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed 's/dropout { rate: 0.2 }/dropout { rate: 0 }/; s/dropout: 0.2/dropout: 0/' \
  "$root/examples/chargpt.pbtxt" > "$work/nodrop.pbtxt"
for m in chargpt nodrop; do
  model=$root/examples/chargpt.pbtxt
  [ "$m" = nodrop ] && model=$work/nodrop.pbtxt
  "$build/bin/sinterc" "$model" --batch-size=8 -o "$work/$m-fp32"
  "$build/bin/sinterc" "$model" --batch-size=8 --precision=bf16_mixed \
    -o "$work/$m-bf16"
done
for r in $(seq "$rounds"); do
  for m in chargpt nodrop; do
    for p in fp32 bf16; do
      load=$(cut -d' ' -f1 /proc/loadavg)
      ms=$("$work/$m-$p" --data="$root/examples/data/chargpt" \
             --steps=$((steps + 1)) --profile --quiet |
           sed -n 's/^profile: .* \([0-9.]*\) ms\/run$/\1/p')
      echo "round $r  $m  $p  $ms ms/step  (load $load)"
    done
  done
done
