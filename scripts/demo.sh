#!/usr/bin/env bash
# The main job on a built-in example: build tlio, train the bigram tracer model on a text shipped
# in the repository, then inspect, validate, quantize (int4 and bitsandbytes NF4), dequantize and
# generate with it; and show
# the reader at work on a file written by an old tool and on a malformed one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
# The CLI and the Python module (so `PYTHONPATH=build/python /usr/bin/python3` works next).
cmake --build build -j"$(nproc)" --target tlio_cli _tlio
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tlio=build/tlio
set -x
$tlio bigram train examples/tracer.txt "$work/model"
$tlio inspect "$work/model"
$tlio validate "$work/model"
$tlio quantize "$work/model/model.safetensors" "$work/int4.safetensors" --scheme int4-g32-sym --include bigram
$tlio inspect "$work/int4.safetensors"
$tlio dequantize "$work/int4.safetensors" "$work/restored.safetensors"
$tlio quantize "$work/model/model.safetensors" "$work/nf4.safetensors" --scheme nf4 --nested --include bigram
$tlio inspect "$work/nf4.safetensors"
$tlio stats "$work/nf4.safetensors" bigram.weight
$tlio bigram generate "$work/model" --prompt "The " --tokens 200 --seed 1 --temperature 0.3
$tlio convert examples/overall-2022.safetensors "$work/canonical.safetensors"
$tlio inspect "$work/canonical.safetensors" --json
$tlio validate examples/offsets-gap.safetensors || echo "(rejected as expected, exit $?)"
