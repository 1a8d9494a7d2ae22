#!/usr/bin/env bash
# The main job on a built-in example: build tlio, then validate, inspect and canonically rewrite
# a file written by a 2022 tool (unpadded header, name-sorted), and show that bad input is refused.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target tlio_cli
example=examples/overall-2022.safetensors
out=$(mktemp -d)/canonical.safetensors
set -x
build/tlio validate "$example"
build/tlio inspect "$example"
build/tlio convert "$example" "$out"
build/tlio inspect "$out" --json
build/tlio validate "$out"
build/tlio validate examples/offsets-gap.safetensors || echo "(rejected as expected, exit $?)"
