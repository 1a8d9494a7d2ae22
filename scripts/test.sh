#!/usr/bin/env bash
# Builds tlio and runs every test: the Release build (C++, C, CLI and Python tests), the Python
# package installed with pip into a virtual environment (its tests run again from there), the
# Rust crate's tests, the suites again on a static Debug build, then the whole C++
# suite again under AddressSanitizer + UndefinedBehaviorSanitizer (the Python module stays out of
# that build: loading it would need libasan preloaded), the concurrency test under
# ThreadSanitizer, then each fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

# `pip install --no-build-isolation .` (offline) into a venv that sees Debian's numpy and torch;
# the Python tests then import the installed package, from outside the checkout.
rm -rf build/venv
/usr/bin/python3 -m venv --system-site-packages build/venv
TLIO_CMAKE_BUILD_DIR="$PWD/build/pip-cmake" build/venv/bin/pip install --quiet --no-index \
  --no-build-isolation .
(cd / && TLIO_TEST_DATA="$OLDPWD/tests/data" "$OLDPWD/build/venv/bin/python" -c \
  'import sys, tlio.torch; assert tlio.__file__.startswith(sys.prefix), tlio.__file__' &&
  TLIO_TEST_DATA="$OLDPWD/tests/data" "$OLDPWD/build/venv/bin/python" -m pytest -q \
  -p no:cacheprovider "$OLDPWD/python/tests")

# The Rust crate, against this build's libtlio and tlio command (offline: no registry crates).
TLIO_LIB_DIR="$PWD/build" TLIO_CLI="$PWD/build/tlio" CARGO_TARGET_DIR="$PWD/build/rust" \
  cargo test --offline --manifest-path bindings/rust/Cargo.toml

# Debug, static and without Python: the C++, C and CLI suites pass in that configuration too
# (assertions on; the installed static package is built against by tests/consumer).
cmake -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug -DBUILD_SHARED_LIBS=OFF -DTLIO_PYTHON=OFF \
  -DTLIO_BUILD_BENCH=OFF
cmake --build build-debug -j"$jobs"
ctest --test-dir build-debug --output-on-failure -j"$jobs"

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTLIO_SANITIZE=ON -DTLIO_BUILD_BENCH=OFF -DTLIO_PYTHON=OFF
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"

# ThreadSanitizer: threads sharing one file, converting and dequantizing at once,
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTLIO_SANITIZE_THREAD=ON \
  -DTLIO_BUILD_BENCH=OFF -DTLIO_PYTHON=OFF
cmake --build build-tsan -j"$jobs" --target concurrency_test header_walks_test trust_test
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/tests/concurrency_test
# the header parser walking two halves on two threads,
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/tests/header_walks_test
# and files hashed on several threads, results handed over in order.
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/tests/trust_test --gtest_filter='HashFiles.*:ModelSigning.*'

# Fuzzing: every libFuzzer target (clang, ASan + UBSan) runs for TLIO_FUZZ_SECONDS (default 60)
# from its seed corpus; a crash fails the run and leaves the input in build-fuzz/crashes/.
fuzz_seconds=${TLIO_FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" -gt 0 ]; then
  cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DTLIO_FUZZ=ON -DTLIO_BUILD_TESTS=OFF -DTLIO_BUILD_BENCH=OFF
  cmake --build build-fuzz -j"$jobs" --target fuzz_file fuzz_model_json fuzz_bnb_state fuzz_pickle fuzz_zip fuzz_http fuzz_signature
  mkdir -p build-fuzz/crashes
  for t in fuzz_file fuzz_model_json fuzz_bnb_state fuzz_pickle fuzz_zip fuzz_http fuzz_signature; do
    work_corpus=$(mktemp -d)  # new inputs go here; the seed folders are only read
    seeds=(fuzz/corpus/$t)
    if [ "$t" = fuzz_file ]; then seeds+=(tests/data/bad tests/data/hf tests/data/realfiles tests/data/bnb tests/data/bnb_bad); fi
    if [ "$t" = fuzz_zip ]; then seeds=(tests/data/checkpoints); fi
    echo "fuzzing $t for ${fuzz_seconds}s"
    ASAN_OPTIONS=detect_leaks=1 build-fuzz/fuzz/$t "$work_corpus" "${seeds[@]}" \
      -max_total_time="$fuzz_seconds" -rss_limit_mb=4096 -max_len=65536 \
      -artifact_prefix=build-fuzz/crashes/$t- -print_final_stats=1 2>&1 | tail -n 12
    rm -rf "$work_corpus"
  done
fi
