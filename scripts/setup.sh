#!/usr/bin/env bash
# Installs every system package Sinter needs to build and test (Debian 12).
# Idempotent: packages already present are skipped by apt.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache python3
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  clang-19 libclang-rt-19-dev lld-19 libomp-19-dev
  libprotobuf-dev protobuf-compiler
  libabsl-dev libgtest-dev libgmock-dev nlohmann-json3-dev
  python3-numpy
  libdnnl-dev
  libgloo-dev openmpi-bin
  libisal-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
