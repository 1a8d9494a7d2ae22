// make_bench_file PATH [TENSORS [ROWS]]: writes the benchmark input (F32 [ROWS, 1000] tensors)
// with tlio's writer, for the whole-process comparisons in run_benchmarks.sh.
#include <cstdio>
#include <cstdlib>

#include "bench_files.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_bench_file PATH [TENSORS [ROWS]]\n");
    return 2;
  }
  int tensors = argc > 2 ? std::atoi(argv[2]) : 200;
  uint64_t rows = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1250;
  tlio::bench::ensure_big_file(argv[1], tensors, rows);
  return 0;
}
