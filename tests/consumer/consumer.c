#include <stdio.h>
#include <tlio/tlio.h>

int main(int argc, char** argv) {
  tl_file* f;
  if (argc < 2 || tl_open(argv[1], &f) != TL_OK) {
    fprintf(stderr, "%s\n", tl_last_error());
    return 1;
  }
  printf("%s: %zu tensors (tlio %s)\n", argv[1], tl_tensor_count(f), tl_version());
  tl_close(f);
  return 0;
}
