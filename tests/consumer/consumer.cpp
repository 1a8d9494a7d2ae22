#include <cstdio>
#include <tlio/tlio.hpp>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  tlio::File f = tlio::File::open(argv[1]);
  std::printf("%s: %zu tensors (tlio %s)\n", argv[1], f.tensors().size(), tlio::version());
  return f.tensors().empty() ? 1 : 0;
}
