#!/usr/bin/env bash
# Builds tlio and runs every test, in stages, and ends with a table of each stage's wall time:
# - the Release build: C++, C, CLI and golden tests (ctest);
# - the Python package installed with pip into a virtual environment (it installs the module the
#   Release build made; no second build of libtlio), its tests run from outside the checkout,
#   once on Debian's numpy 1.24 and torch 1.13 and once on the users' stack (build/consumer-venv:
#   numpy 2, torch 2.x, transformers 5, bitsandbytes), where the consumers judge tlio's outputs;
# - the Rust crate's tests;
# - one static build with assertions (libstdc++'s too) under AddressSanitizer + UBSan: the C++, C,
#   CLI suites and a program built against the installed static package (the Python module stays
#   out: loading it would need libasan preloaded);
# - the concurrency tests under ThreadSanitizer;
# - every fuzz target, two at a time, TLIO_FUZZ_SECONDS each (default 30).
# Builds go through ccache when it is installed (CMakeLists.txt), so a second run, or CI's fresh
# clone after a developer's run, compiles only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

stage_names=()
stage_seconds=()
running_stage=""
run_start=$SECONDS
# stage NAME COMMAND...: runs COMMAND (a failure ends the run) and records its wall time.
stage() {
  local name=$1 t0=$SECONDS
  shift
  running_stage=$name
  echo "=== $name"
  "$@"
  stage_names+=("$name")
  stage_seconds+=($((SECONDS - t0)))
  running_stage=""
}
print_stage_table() {
  echo
  printf '%-36s %8s\n' "stage" "seconds"
  local i
  for i in "${!stage_names[@]}"; do
    printf '%-36s %8d\n' "${stage_names[$i]}" "${stage_seconds[$i]}"
  done
  if [ -n "$running_stage" ]; then printf '%-36s %8s\n' "$running_stage" "failed"; fi
  printf '%-36s %8d\n' "total" $((SECONDS - run_start))
}
trap print_stage_table EXIT

build() {  # build DIR [cmake options...]: configure and build every default target
  local dir=$1
  shift
  cmake -S . -B "$dir" "$@" > /dev/null
  cmake --build "$dir" -j"$jobs"
}

stage "install dependencies" bash scripts/install-deps.sh
stage "style: clang-format, file sizes" bash scripts/check-style.sh

stage "release: build" build build -DCMAKE_BUILD_TYPE=Release
stage "release: ctest" ctest --test-dir build --output-on-failure -j"$jobs"

# `pip install --no-build-isolation .` (offline) into a venv that sees Debian's numpy and torch;
# the Python tests then import the installed package, from outside the checkout, two at a time.
pip_install() {
  rm -rf build/venv
  /usr/bin/python3 -m venv --system-site-packages build/venv
  TLIO_CMAKE_BUILD_DIR="$PWD/build" build/venv/bin/pip install --quiet --no-index \
    --no-build-isolation .
}
# pytest_in VENV CHECK: the suite run by VENV's python from / (so it imports the installed
# package), after CHECK (python code) holds there.
pytest_in() (  # a subshell: it runs from /
  root=$PWD python="$PWD/$1/bin/python"
  cd /
  "$python" -c "import sys, tlio.torch; assert tlio.__file__.startswith(sys.prefix), tlio.__file__; $2"
  TLIO_TEST_DATA="$root/tests/data" TLIO_CLI="$root/build/tlio" "$python" \
    -m pytest -q -p no:cacheprovider -n "$jobs" "$root/python/tests"
)
stage "python: pip install" pip_install
stage "python: pytest (installed)" pytest_in build/venv "pass"

# The same suite on the users' stack: build/consumer-venv (PyPI's numpy 2, torch 2.x,
# transformers 5, bitsandbytes; scripts/pypi/consumers.txt), the Release build's module installed
# into it (one compiled module serves numpy 1 and 2); test_consumers*.py run only there.
consumer_install() {
  TLIO_CMAKE_BUILD_DIR="$PWD/build" build/consumer-venv/bin/pip install --quiet --no-index \
    --no-build-isolation --no-deps --force-reinstall .
}
stage "python (users' stack): pip install" consumer_install
stage "python (users' stack): pytest" pytest_in build/consumer-venv \
  "import numpy; assert int(numpy.__version__.split('.')[0]) >= 2, numpy.__version__"

# `pip wheel .` as a user runs it: build isolation (setuptools, wheel and the pinned pybind11 from
# PyPI), libtlio and the module compiled by setup.py's own CMake build (through ccache), the
# wheel installed into a new plain venv with PyPI's numpy and read back there.
wheel_check() {
  rm -rf build/wheel build/wheel-venv
  build/consumer-venv/bin/pip wheel --quiet --no-deps -w build/wheel .
  /usr/bin/python3 -m venv build/wheel-venv
  build/wheel-venv/bin/pip install --quiet build/wheel/tlio-*.whl \
    "$(grep '^numpy==' scripts/pypi/consumers.txt)"
  (cd / && "$OLDPWD/build/wheel-venv/bin/python" -c '
import sys, numpy as np, tlio, tlio.numpy
assert tlio.__file__.startswith(sys.prefix) and int(np.__version__.split(".")[0]) >= 2
a = {"w": np.arange(12, dtype=np.float32).reshape(3, 4)}
b = tlio.numpy.load(tlio.numpy.save(a))
assert b["w"].strides == (16, 4) and (b["w"] == a["w"]).all(), b
print("wheel:", tlio.__file__, "numpy", np.__version__)')
}
stage "python: pip wheel (isolated build)" wheel_check

# The Rust crate, against this build's libtlio and tlio command (offline: no registry crates).
rust_tests() {
  TLIO_LIB_DIR="$PWD/build" TLIO_CLI="$PWD/build/tlio" CARGO_TARGET_DIR="$PWD/build/rust" \
    cargo test --offline --manifest-path bindings/rust/Cargo.toml
}
stage "rust: cargo test" rust_tests

# Assertions and sanitizers in one build: Debug (no NDEBUG) at -O1, libstdc++'s bounds checks,
# static and without Python (tests/consumer builds against the installed static package).
stage "asan+ubsan+assert: build" build build-asan -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG="-O1 -g" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g -D_GLIBCXX_ASSERTIONS" \
  -DBUILD_SHARED_LIBS=OFF -DTLIO_SANITIZE=ON -DTLIO_BUILD_BENCH=OFF -DTLIO_PYTHON=OFF
asan_tests() {
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs"
}
stage "asan+ubsan+assert: ctest" asan_tests

# ThreadSanitizer: threads sharing one file, converting and dequantizing at once; the header
# parser walking two halves on two threads; files hashed on several threads, results handed over
# in order; quantized weights decoded on several threads ahead of the one writing them; a file
# read past the page cache by worker threads.
tsan_build() {
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTLIO_SANITIZE_THREAD=ON \
    -DTLIO_BUILD_BENCH=OFF -DTLIO_PYTHON=OFF > /dev/null
  cmake --build build-tsan -j"$jobs" --target concurrency_test header_walks_test trust_test write_decoded_test \
    direct_source_test
}
tsan_tests() {
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  build-tsan/tests/concurrency_test
  build-tsan/tests/header_walks_test
  build-tsan/tests/trust_test --gtest_filter='HashFiles.*:ModelSigning.*'
  # A thread left waiting hangs rather than fails: bounded here as ctest bounds it.
  timeout 300 build-tsan/tests/write_decoded_test
  timeout 300 build-tsan/tests/direct_source_test
}
stage "tsan: build" tsan_build
stage "tsan: tests" tsan_tests

# Fuzzing: every libFuzzer target (clang, ASan + UBSan) runs for TLIO_FUZZ_SECONDS from its seed
# corpus, two at a time; a crash fails the run and leaves the input in build-fuzz/crashes/.
fuzz_seconds=${TLIO_FUZZ_SECONDS:-30}
fuzz_targets=(fuzz_file fuzz_model_json fuzz_bnb_state fuzz_pickle fuzz_zip fuzz_http fuzz_signature fuzz_gguf fuzz_hf_tokenizer fuzz_dcp_metadata)
fuzz_build() {
  cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DTLIO_FUZZ=ON -DTLIO_BUILD_TESTS=OFF -DTLIO_BUILD_BENCH=OFF \
    > /dev/null
  cmake --build build-fuzz -j"$jobs" --target "${fuzz_targets[@]}"
}
fuzz_one() {  # fuzz_one TARGET: a target's run, its output in build-fuzz/logs/TARGET.log
  local t=$1 work_corpus seeds=(fuzz/corpus/$1) rc=0
  work_corpus=$(mktemp -d)  # new inputs go here; the seed folders are only read
  if [ "$t" = fuzz_file ]; then
    seeds+=(tests/data/bad tests/data/hf tests/data/realfiles tests/data/bnb tests/data/bnb_bad)
  fi
  if [ "$t" = fuzz_zip ]; then seeds=(tests/data/checkpoints); fi
  ASAN_OPTIONS=detect_leaks=1 build-fuzz/fuzz/$t "$work_corpus" "${seeds[@]}" \
    -max_total_time="$fuzz_seconds" -rss_limit_mb=4096 -max_len=65536 \
    -artifact_prefix=build-fuzz/crashes/$t- -print_final_stats=1 > "build-fuzz/logs/$t.log" 2>&1 \
    || rc=$?
  rm -rf "$work_corpus"
  echo "$rc" > "build-fuzz/logs/$t.rc"
}
fuzz_all() {
  rm -rf build-fuzz/logs
  mkdir -p build-fuzz/crashes build-fuzz/logs
  local t failed=0
  for t in "${fuzz_targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    echo "fuzzing $t for ${fuzz_seconds}s"
    fuzz_one "$t" &
  done
  wait
  for t in "${fuzz_targets[@]}"; do
    echo "--- $t"
    tail -n 12 "build-fuzz/logs/$t.log"
    if [ "$(cat "build-fuzz/logs/$t.rc" 2>/dev/null)" != 0 ]; then
      echo "FAILED: $t (exit $(cat "build-fuzz/logs/$t.rc" 2>/dev/null || echo '?'))"
      failed=1
    fi
  done
  return "$failed"
}
if [ "$fuzz_seconds" -gt 0 ]; then
  stage "fuzz: build" fuzz_build
  stage "fuzz: run (${#fuzz_targets[@]} targets x ${fuzz_seconds}s, $jobs at a time)" fuzz_all
fi
