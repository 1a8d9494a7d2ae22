// open_in_process PATH [ROUNDS]: what `tlio validate PATH` does (File::open with the whole header
// validated, then the quantized-weight checks), timed inside one process that is already
// running; prints the median of ROUNDS (default 31) in milliseconds. bench/startup.sh sets the
// whole `tlio validate` process against it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tlio/file.hpp"
#include "tlio/quant.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: open_in_process PATH [ROUNDS]\n");
    return 2;
  }
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 31;
  std::vector<double> ms;
  for (int i = 0; i < rounds; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const tlio::File f = tlio::File::open(argv[1]);
    (void)tlio::find_quantized_weights(f);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::nth_element(ms.begin(), ms.begin() + rounds / 2, ms.end());
  std::printf("%.3f\n", ms[static_cast<size_t>(rounds / 2)]);
  return 0;
}
