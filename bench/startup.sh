#!/usr/bin/env bash
# Process start-up: `tlio --version` against a C++ hello world built here with the same compiler,
# `tlio validate` of the 50,000-tensor file against the same work done in a running process
# (bench/open_in_process), and `import tlio` against `import numpy` (which tlio imports), each
# pair run in turn (A B A B ...), medians of the per-round means.
# Usage: bench/startup.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-7}
command -v hyperfine >/dev/null || { echo "startup.sh needs hyperfine (apt-get install hyperfine)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '#include <iostream>\nint main() { std::cout << "hello 1.0\\n"; }\n' > "$work/hello.cpp"
"${CXX:-g++}" -O2 -o "$work/hello" "$work/hello.cpp"

mean_ms() {  # one hyperfine round of $2 runs (default 200), mean in ms
  local runs=${2:-200}
  hyperfine -N -w 10 -r "$runs" --export-json "$work/r.json" "$1" >/dev/null 2>&1 ||
    hyperfine -w 10 -r "$runs" --export-json "$work/r.json" "$1" >/dev/null
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["mean"] * 1e3)' "$work/r.json"
}
pair() {  # label, baseline command, command, runs per round
  local a=() b=()
  for _ in $(seq "$rounds"); do a+=("$(mean_ms "$2" "$4")"); b+=("$(mean_ms "$3" "$4")"); done
  python3 - "$1" "${a[*]}" "${b[*]}" <<'PY'
import statistics, sys
label, a, b = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"{label}: baseline {ma:.2f} ms, tlio {mb:.2f} ms, ratio {mb / ma:.2f}x "
      f"(medians of {len(a)} rounds in turn; rounds {min(b):.2f}-{max(b):.2f} ms)")
PY
}
pair "tlio --version vs C++ hello world" "$work/hello" "$build/tlio --version" 200
"$build/bench/make_bench_file" --many "$work/many.safetensors"
a=() b=()
for _ in $(seq "$rounds"); do
  a+=("$("$build/bench/open_in_process" "$work/many.safetensors" 31)")
  b+=("$(mean_ms "$build/tlio validate $work/many.safetensors" 31)")
done
python3 - "${a[*]}" "${b[*]}" <<'PY'
import statistics, sys
a, b = [float(x) for x in sys.argv[1].split()], [float(x) for x in sys.argv[2].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"tlio validate (50,000 tensors) vs the same in-process: in-process {ma:.2f} ms, "
      f"tlio {mb:.2f} ms, ratio {mb / ma:.2f}x (medians of {len(a)} rounds in turn)")
PY
pair "import tlio vs import numpy" "/usr/bin/python3 -c 'import numpy'" \
  "env PYTHONPATH=$build/python /usr/bin/python3 -c 'import tlio'" 30
