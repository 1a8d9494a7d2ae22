#!/usr/bin/env bash
# Runs every benchmark and the whole-process comparisons in one go, so the ratios in
# docs/benchmarks.md compare numbers measured in the same run on the same machine.
# Usage: bench/run_benchmarks.sh [BUILD_DIR]   (TLIO_BENCH_DIR: scratch folder, default /tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
dir=${TLIO_BENCH_DIR:-/tmp}
out=bench/out
mkdir -p "$out"
export TLIO_BENCH_DIR=$dir

echo "== machine"
{ nproc; grep -m1 "model name" /proc/cpuinfo; free -g | head -2; uname -r; } | tee "$out/machine.txt"

echo "== Google Benchmark programs"
"$build/bench/bench_header" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true | tee "$out/bench_header.txt"
"$build/bench/bench_read" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true | tee "$out/bench_read.txt"
"$build/bench/bench_convert" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true | tee "$out/bench_convert.txt"
"$build/bench/bench_quant" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true | tee "$out/bench_quant.txt"

echo "== Python module: zero-copy load_file, copying tensors out"
"$build/bench/make_bench_file" "$dir/tlio-bench-1g.safetensors"
"$build/bench/make_bench_file" "$dir/tlio-bench-1m.safetensors" 200 1
PYTHONPATH="$build/python" /usr/bin/python3 bench/bench_python.py "$dir/tlio-bench-1g.safetensors" \
  "$dir/tlio-bench-1m.safetensors" | tee "$out/python.txt"

echo "== Python json.loads of the 50,000-tensor header (the reference parses with serde, ~1 us/tensor)"
"$build/bench/make_bench_file" --many "$dir/tlio-bench-50k.safetensors"
/usr/bin/python3 - "$dir/tlio-bench-50k.safetensors" <<'PY' | tee "$out/python_json.txt"
import json, struct, sys, time
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
text = data[8:8 + n]
best = min((lambda t0: (json.loads(text), time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(20))
print(f"json.loads of {n} header bytes: {best * 1e3:.2f} ms (best of 20)")
PY

echo "== tlio.safe_open vs json.loads of the 50,000-tensor header, in turn in one process"
PYTHONPATH="$build/python" /usr/bin/python3 bench/header_vs_json.py "$dir/tlio-bench-50k.safetensors" | tee "$out/header_vs_json.txt"

echo "== tlio.torch: load_model vs torch.load, load_file, save_file vs dd (1 GiB, in turn)"
PYTHONPATH="$build/python" /usr/bin/python3 bench/bench_torch.py "$dir" 9 | tee "$out/torch.txt"

echo "== tlio import of a 1 GiB torch.save checkpoint vs dd (in turn, peak RSS)"
PYTHONPATH="$build/python" /usr/bin/python3 bench/bench_import.py "$build" "$dir" 5 | tee "$out/import.txt"

echo "== remote files: tlio convert URL vs curl -o + sync (nginx on loopback, in turn), request counts"
PYTHONPATH="$build/python" /usr/bin/python3 bench/bench_remote.py "$build" "$dir" 7 | tee "$out/remote.txt"

echo "== process start-up (tlio --version, import tlio)"
if command -v hyperfine >/dev/null; then bash bench/startup.sh "$build" 5 | tee "$out/startup.txt"; fi

echo "== whole process: tlio convert vs dd of a 1 GiB file (warm page cache, fsync)"
big="$dir/tlio-bench-1gib.safetensors"
"$build/bench/make_bench_file" "$big" 256 1024 1024
cat "$big" > /dev/null
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
dd_times=(); tlio_times=()
for i in 1 2 3 4 5; do
  rm -f "$dir/out-dd" "$dir/out-tlio.safetensors"; sync
  dd_times+=("$(seconds dd if="$big" of="$dir/out-dd" bs=16M conv=fsync)")
  rm -f "$dir/out-dd"; sync
  tlio_times+=("$(seconds "$build/tlio" convert "$big" "$dir/out-tlio.safetensors")")
done
dd_med=$(printf '%s\n' "${dd_times[@]}" | median)
tlio_med=$(printf '%s\n' "${tlio_times[@]}" | median)
cmp -s "$big" "$dir/out-tlio.safetensors" && same="byte-identical" || same="DIFFERENT"
{
  echo "dd bs=16M conv=fsync:  ${dd_times[*]}  median ${dd_med} s"
  echo "tlio convert:          ${tlio_times[*]}  median ${tlio_med} s  (output $same to input)"
  echo "ratio tlio/dd: $(echo "scale=3; $tlio_med / $dd_med" | bc)"
} | tee "$out/convert_vs_dd.txt"
rm -f "$dir/out-dd" "$dir/out-tlio.safetensors"

echo "== whole process: tlio convert --dtype BF16 of the 1 GiB F32 file vs dd of the input"
bf_times=()
for i in 1 2 3 4 5; do
  rm -f "$dir/out-bf16.safetensors"; sync
  bf_times+=("$(seconds "$build/tlio" convert "$big" "$dir/out-bf16.safetensors" --dtype BF16)")
done
bf_med=$(printf '%s\n' "${bf_times[@]}" | median)
{
  echo "tlio convert --dtype BF16: ${bf_times[*]}  median ${bf_med} s"
  echo "ratio tlio-bf16/dd: $(echo "scale=3; $bf_med / $dd_med" | bc)"
} | tee -a "$out/convert_vs_dd.txt"
rm -f "$dir/out-bf16.safetensors"

# Median times of quantizing the 1 GiB projection file with `scheme` and dequantizing the
# result, three runs each, printed with their ratio to dd.
quantize_vs_dd() {
  local scheme=$1 q_times=() dq_times=() q_med dq_med
  for i in 1 2 3; do
    rm -f "$dir/out-q.safetensors" "$dir/out-dq.safetensors"; sync
    q_times+=("$(seconds "$build/tlio" quantize "$proj" "$dir/out-q.safetensors" --scheme "$scheme")")
    dq_times+=("$(seconds "$build/tlio" dequantize "$dir/out-q.safetensors" "$dir/out-dq.safetensors")")
  done
  q_med=$(printf '%s\n' "${q_times[@]}" | median)
  dq_med=$(printf '%s\n' "${dq_times[@]}" | median)
  echo "tlio quantize --scheme $scheme: ${q_times[*]}  median ${q_med} s  ratio to dd $(echo "scale=3; $q_med / $dd_med" | bc)"
  echo "tlio dequantize ($scheme -> F32): ${dq_times[*]}  median ${dq_med} s  ratio to dd $(echo "scale=3; $dq_med / $dd_med" | bc)"
  rm -f "$dir/out-q.safetensors" "$dir/out-dq.safetensors"
}

echo "== whole process: tlio quantize / dequantize (int4-g32-sym, nf4) of 1 GiB of F32 weights vs dd"
proj="$dir/tlio-bench-proj-1gib.safetensors"
"$build/bench/make_bench_file" --proj "$proj" 256 1024 1024
cat "$proj" > /dev/null
{ quantize_vs_dd int4-g32-sym; quantize_vs_dd nf4; } | tee -a "$out/convert_vs_dd.txt"
rm -f "$proj"
