#!/usr/bin/env bash
# Editing a big file: `tlio metadata --set` whose header grows (a whole rewrite, tensor bytes
# copied in the kernel) against copying the same file with `cp --reflink=never` (read/write) and
# `cp` (copy_file_range), the disk-speed baselines, and the in-place edit (header the same
# length). The two sides run in turn (A B A B ...), medians of ROUNDS.
# Usage: bench/edit.sh [BUILD_DIR] [GIB] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
gib=${2:-2}
rounds=${3:-5}
work=$(mktemp -d "${TMPDIR:-/var/tmp}/tlio-edit-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
# GIB GiB of F32 tensors: 4 MiB each (1024 x 1024).
"$build/bench/make_bench_file" "$work/big.safetensors" $((gib * 256)) 1024 1024
sync
seconds() {  # the command, then sync, in seconds
  local t0 t1
  t0=$(date +%s%N); "$@" >/dev/null; sync; t1=$(date +%s%N)
  printf '%d.%09d\n' $(((t1 - t0) / 1000000000)) $(((t1 - t0) % 1000000000))
}
cp "$work/big.safetensors" "$work/inplace.safetensors"
"$build/tlio" metadata "$work/inplace.safetensors" --set k=x0 >/dev/null
sync
cp_s=() cpk_s=() edit_s=() inplace_s=()
for r in $(seq "$rounds"); do
  rm -f "$work/copy.safetensors" "$work/edited.safetensors"
  cp_s+=("$(seconds cp --reflink=never "$work/big.safetensors" "$work/copy.safetensors")")
  rm -f "$work/copy.safetensors"
  cpk_s+=("$(seconds cp "$work/big.safetensors" "$work/copy.safetensors")")
  edit_s+=("$(seconds "$build/tlio" metadata "$work/big.safetensors" --set "note=round $r grows" -o "$work/edited.safetensors")")
  # Same length every round (x1, x2, ...): the header is written over in place.
  inplace_s+=("$(seconds "$build/tlio" metadata "$work/inplace.safetensors" --set "k=x$((r % 10))")")
done
python3 - "$gib" "${cp_s[*]}" "${cpk_s[*]}" "${edit_s[*]}" "${inplace_s[*]}" <<'PY'
import statistics, sys
gib = float(sys.argv[1])
cp, cpk, edit, inplace = ([float(x) for x in a.split()] for a in sys.argv[2:6])
mc, mk, me, mi = (statistics.median(x) for x in (cp, cpk, edit, inplace))
print(f"{gib:.0f} GiB: cp --reflink=never {mc:.2f} s ({gib / mc:.2f} GiB/s), cp {mk:.2f} s, "
      f"tlio metadata --set -o {me:.2f} s ({gib / me:.2f} GiB/s): {me / mc:.2f}x and {me / mk:.2f}x "
      f"the copies; in place {mi * 1e3:.1f} ms (medians of {len(cp)} rounds in turn, each with sync)")
PY
