#!/usr/bin/env bash
# Installs what tlio needs to build and test on Debian 12, skipping what is already there.
set -euo pipefail
packages=(cmake make g++ clang libclang-rt-14-dev python3 libsimdjson-dev libfmt-dev libcli11-dev libgtest-dev libbenchmark-dev libhwy-dev
  pybind11-dev python3-dev python3-numpy python3-pytest bc zlib1g-dev libcurl4-openssl-dev nginx-light openssl
  python3-torch python3-venv python3-pip python3-setuptools python3-wheel zsh fish man-db)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The Rust crate's tests need cargo: Debian's (rustc 1.63) unless one is already installed
# (e.g. by rustup).
if ! command -v cargo >/dev/null 2>&1; then
  echo "installing: cargo"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends cargo
fi
