#!/usr/bin/env bash
# Installs what tlio needs to build and test on Debian 12, skipping what is already there.
set -euo pipefail
packages=(cmake make g++ clang libclang-rt-14-dev python3 libsimdjson-dev libfmt-dev libcli11-dev libgtest-dev libbenchmark-dev libhwy-dev
  python3-dev python3-numpy python3-pytest bc zlib1g-dev libcurl4-openssl-dev nginx-light openssl
  python3-torch python3-venv python3-pip python3-setuptools python3-wheel zsh fish man-db
  python3-boto3 python3-botocore python3-cryptography libssl-dev
  ccache python3-pytest-xdist chromium python3-pil liburing-dev clang-format)
# liburing-dev: io_uring for reads past the page cache (io/direct_source).
# clang-format: scripts/check-style.sh, the style CI holds the C and C++ code to.
# chromium renders the pages of `tlio report` in its tests, python3-pil reads their screenshots.
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
# The S3 tests' stand-in server (s3rver, run by python/tests/s3_servers.py) needs node and npm:
# Debian's unless one is already installed (e.g. NodeSource's nodejs, which brings its own npm).
if ! command -v npm >/dev/null 2>&1; then
  echo "installing: nodejs npm"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi
# s3rver and llama.cpp's prebuilt libraries (@node-llama-cpp/linux-x64: libggml-base.so is the
# oracle of the GGUF tests), at the versions pinned by scripts/npm's lock, into build/npm of this checkout;
# again only when the lock there differs from the pinned one or s3rver is not there.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
npm_dir="$root/build/npm"
if [ ! -x "$npm_dir/node_modules/.bin/s3rver" ] \
  || ! cmp -s "$root/scripts/npm/package.json" "$npm_dir/package.json" \
  || ! cmp -s "$root/scripts/npm/package-lock.json" "$npm_dir/package-lock.json"; then
  echo "installing: s3rver, @node-llama-cpp/linux-x64 (npm ci into build/npm)"
  mkdir -p "$npm_dir"
  cp "$root/scripts/npm/package.json" "$root/scripts/npm/package-lock.json" "$npm_dir/"
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
# llama.cpp's converter and gguf-py from the source bundle node-llama-cpp's package carries (the
# release of the libraries above), pinned by scripts/npm/llama-cpp-source.txt: only those files,
# into build/llama.cpp of this checkout; again only when the pin changed. npm pack fetches the
# package alone (npm install would run its install script, which builds llama.cpp).
source_pin="$root/scripts/npm/llama-cpp-source.txt"
source_dir="$root/build/llama.cpp"
if [ ! -f "$source_dir/convert_hf_to_gguf.py" ] || ! cmp -s "$source_pin" "$source_dir/pin.txt"; then
  echo "installing: llama.cpp's converter (node-llama-cpp's source bundle into build/llama.cpp)"
  read -r spec integrity commit < <(grep -v '^#' "$source_pin")
  work="$(mktemp -d)"
  (cd "$work" && npm pack --silent --loglevel=error "$spec" >/dev/null)
  got="sha512-$(/usr/bin/python3 -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$work"/*.tgz)"
  if [ "$got" != "$integrity" ]; then
    echo "$spec: integrity $got is not the pinned $integrity" >&2
    exit 1
  fi
  tar -xzf "$work"/*.tgz -C "$work" package/llama/gitRelease.bundle
  rm -rf "$source_dir"
  git clone -q --no-checkout "$work/package/llama/gitRelease.bundle" "$source_dir"
  if [ "$(git -C "$source_dir" rev-parse HEAD)" != "$commit" ]; then
    echo "$spec: its bundle checks out $(git -C "$source_dir" rev-parse HEAD), not $commit" >&2
    exit 1
  fi
  git -C "$source_dir" -c advice.detachedHead=false checkout -q "$commit" -- \
    convert_hf_to_gguf.py conversion gguf-py LICENSE
  rm -rf "$source_dir/.git" "$work"
  cp "$source_pin" "$source_dir/pin.txt"
fi
# pybind11 from PyPI, at the version pinned in scripts/pypi/build.txt, into build/pybind11 of this
# checkout (python/CMakeLists.txt looks there): Debian 12's pybind11 2.10 predates numpy 2 (its
# arrays read numpy 2's descriptors at the old offsets: itemsize 0, every stride 0).
pybind_dir="$root/build/pybind11"
if [ ! -d "$pybind_dir/pybind11" ] || ! cmp -s "$root/scripts/pypi/build.txt" "$pybind_dir/build.txt"; then
  echo "installing: pybind11 (pip into build/pybind11)"
  rm -rf "$pybind_dir"
  /usr/bin/python3 -m pip install -q --disable-pip-version-check --no-deps --target "$pybind_dir" \
    -r "$root/scripts/pypi/build.txt"
  cp "$root/scripts/pypi/build.txt" "$pybind_dir/build.txt"
fi
# Test oracles from PyPI, at the versions pinned in scripts/pypi/oracles.txt (gguf: gguf-py,
# llama.cpp's own GGUF reader and writer; tokenizers and sentencepiece: the tokenizers the GGUF
# vocabularies are checked against), into build/oracle-venv of this checkout, a venv that
# sees Debian's numpy; again only when the pins changed.
oracle_dir="$root/build/oracle-venv"
if [ ! -x "$oracle_dir/bin/python" ] || ! cmp -s "$root/scripts/pypi/oracles.txt" "$oracle_dir/oracles.txt"; then
  echo "installing: test oracles (pip into build/oracle-venv)"
  rm -rf "$oracle_dir"
  /usr/bin/python3 -m venv --system-site-packages "$oracle_dir"
  "$oracle_dir/bin/pip" install -q --disable-pip-version-check -r "$root/scripts/pypi/oracles.txt"
  cp "$root/scripts/pypi/oracles.txt" "$oracle_dir/oracles.txt"
fi
# The users' stack and the consumers (transformers 5, bitsandbytes, torch 2.x, numpy 2, ...), at
# the versions pinned in scripts/pypi/consumers.txt, into build/consumer-venv of this checkout:
# a plain venv, so nothing of Debian's numpy 1.24 and torch 1.13 shows through. torch's default
# wheel brings its CUDA libraries (about 5 GB; used on CPU here). Again only when the pins changed.
consumer_dir="$root/build/consumer-venv"
if [ ! -x "$consumer_dir/bin/python" ] || ! cmp -s "$root/scripts/pypi/consumers.txt" "$consumer_dir/consumers.txt"; then
  echo "installing: the consumers' stack (pip into build/consumer-venv; torch's wheel is large)"
  rm -rf "$consumer_dir"
  /usr/bin/python3 -m venv "$consumer_dir"
  "$consumer_dir/bin/pip" install -q --disable-pip-version-check -r "$root/scripts/pypi/consumers.txt"
  cp "$root/scripts/pypi/consumers.txt" "$consumer_dir/consumers.txt"
fi
