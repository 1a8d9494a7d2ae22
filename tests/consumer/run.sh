#!/usr/bin/env bash
# Installs tlio from BUILD_DIR into a scratch prefix, then builds small C++ and C programs
# against it twice: with find_package(tlio) and with pkg-config. Usage: run.sh BUILD_DIR [FLAGS]
# (FLAGS: compiler and linker flags for the programs, e.g. a sanitizer build's -fsanitize=...)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
flags=${2:-}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > /dev/null
sample="$here/../data/hf/worked_example.safetensors"
cmake -S "$here" -B "$prefix/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" > /dev/null
cmake --build "$prefix/consumer-build" > /dev/null
LD_LIBRARY_PATH="$prefix/lib" "$prefix/consumer-build/consumer_cpp" "$sample"
LD_LIBRARY_PATH="$prefix/lib" "$prefix/consumer-build/consumer_c" "$sample"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
c++ -std=c++20 $flags "$here/consumer.cpp" $(pkg-config --cflags --libs tlio) -o "$prefix/pc_cpp"
cc $flags "$here/consumer.c" $(pkg-config --cflags --libs tlio) -o "$prefix/pc_c"
LD_LIBRARY_PATH="$prefix/lib" "$prefix/pc_cpp" "$sample"
LD_LIBRARY_PATH="$prefix/lib" "$prefix/pc_c" "$sample"
echo "consumer builds: find_package and pkg-config OK"
