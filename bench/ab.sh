#!/usr/bin/env bash
# Two tlio binaries on the same jobs, in turn (A B A B ...), medians of ROUNDS: the check that a
# change made nothing slower. The jobs cover the paths an output takes (a rewrite copied in the
# kernel, a dtype conversion, shards published as a set, standard input to standard output) and
# the start-up of a validate of the 50,000-tensor file, and a diff (the engine of differences).
# Files are written to a temporary folder and removed after each run; page cache warm (the inputs
# are read once first).
# Usage: bench/ab.sh OLD_TLIO NEW_TLIO [BUILD_DIR (its make_bench_file)] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
old=$(realpath "$1")
new=$(realpath "$2")
build=${3:-build}
rounds=${4:-7}
work=$(mktemp -d "${TMPDIR:-/var/tmp}/tlio-ab.XXXXXX")
trap 'rm -rf "$work"' EXIT
# 512 MiB of F32 tensors, 4 MiB each; 64 MiB for the pipe; the 50,000-tensor header.
"$build/bench/make_bench_file" "$work/big.safetensors" 128 1024 1024
"$build/bench/make_bench_file" "$work/small.safetensors" 16 1024 1024
"$build/bench/make_bench_file" --many "$work/many.safetensors"
"$new" convert "$work/big.safetensors" "$work/big-bf16.safetensors" --dtype bf16 > /dev/null
cat "$work/big.safetensors" "$work/small.safetensors" "$work/many.safetensors" "$work/big-bf16.safetensors" > /dev/null

seconds() {  # runs "$@" (output removed after), prints seconds
  local t0 t1
  t0=$(date +%s%N)
  "$@" > /dev/null
  t1=$(date +%s%N)
  rm -rf "$work/out" "$work/out.safetensors"
  printf '%d.%09d\n' $(((t1 - t0) / 1000000000)) $(((t1 - t0) % 1000000000))
}
piped() { "$1" convert - - --dtype bf16 < "$work/small.safetensors" 2> /dev/null; }
validate_many() { for _ in 1 2 3 4 5 6 7 8 9 10; do "$1" validate "$work/many.safetensors"; done; }

job() {  # label, then the job with TLIO standing for the binary
  local label=$1 a=() b=()
  shift
  for _ in $(seq "$rounds"); do
    a+=("$(seconds "${@//TLIO/$old}")")
    b+=("$(seconds "${@//TLIO/$new}")")
  done
  python3 - "$label" "${a[*]}" "${b[*]}" <<'PY'
import statistics, sys
label, a, b = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"| {label} | {ma * 1e3:.1f} ms | {mb * 1e3:.1f} ms | {mb / ma:.2f}x |")
PY
}
echo "| job (medians of $rounds rounds in turn) | old | new | new/old |"
echo "|---|---|---|---|"
job "convert 512 MiB (canonical rewrite, in-kernel copies)" TLIO convert "$work/big.safetensors" "$work/out.safetensors"
job "convert 512 MiB --dtype bf16" TLIO convert "$work/big.safetensors" "$work/out.safetensors" --dtype bf16
job "shard 512 MiB --max-size 100MB (a set of 6 files)" TLIO shard "$work/big.safetensors" "$work/out" --max-size 100MB
job "convert - - --dtype bf16, 64 MiB through a pipe" piped TLIO
job "validate the 50,000-tensor file, 10 runs" validate_many TLIO
job "diff 512 MiB against its BF16 copy (--rtol 0.01)" TLIO diff "$work/big.safetensors" "$work/big-bf16.safetensors" --rtol 0.01
