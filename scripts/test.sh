#!/usr/bin/env bash
# Sets everything up, builds, and runs the whole test suite (lit + GoogleTest
# through ctest).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SINTER_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j"$(nproc)"
