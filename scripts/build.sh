#!/usr/bin/env bash
# Configures (once) and builds Sinter in build/ (or $SINTER_BUILD_DIR).
# Usage: scripts/build.sh [ninja targets...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SINTER_BUILD_DIR:-$root/build}
if [[ ! -f $build/build.ninja ]]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
fi
ninja -C "$build" "$@"
