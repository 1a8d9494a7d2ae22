// make_bench_file [--proj] PATH [TENSORS [ROWS [COLS]]]: writes a benchmark input of F32
// [ROWS, COLS] tensors with tlio's writer (--proj: named like projection weights).
// make_bench_file --many PATH: the 50,000-tensor header file.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench_files.hpp"
#include "tlio/writer.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_bench_file PATH [TENSORS [ROWS [COLS]]] | --many PATH\n");
    return 2;
  }
  const bool proj = std::strcmp(argv[1], "--proj") == 0;
  if (proj) {
    ++argv;
    --argc;
  }
  if (std::strcmp(argv[1], "--many") == 0 && argc > 2) {
    auto bytes = tlio::bench::many_small_tensors();
    FILE* f = std::fopen(argv[2], "wb");
    if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) return 1;
    return std::fclose(f) == 0 ? 0 : 1;
  }
  int tensors = argc > 2 ? std::atoi(argv[2]) : 200;
  uint64_t rows = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1250;
  uint64_t cols = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 1000;
  tlio::bench::ensure_big_file(argv[1], tensors, rows, cols, proj);
  return 0;
}
