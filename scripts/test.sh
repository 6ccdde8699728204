#!/usr/bin/env bash
# Sets everything up, builds, and runs the whole test suite (lit + GoogleTest
# through ctest).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SINTER_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$build"
# The suite writes about 4 GiB under the build folder (compiled models,
# GPT-2's checkpoints); say so up front rather than fail midway on a full disk.
free_kib=$(df -Pk . | awk 'NR == 2 { print $4 }')
if [ "$free_kib" -lt $((6 * 1024 * 1024)) ]; then
  echo "test.sh: warning: $((free_kib / 1024)) MiB free under $build;" \
    "the suite needs about 4 GiB" >&2
fi
# Side by side, OpenMP teams outnumber the cores; spinning waits then stall
# (test/lit.cfg.py says more).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
ctest --output-on-failure -j"$(nproc)"
