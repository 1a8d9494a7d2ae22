/* The C ABI's promise that options structs grow at the end (C99): a program built against the
 * first tlio.h that declared an options struct calls tl_*_options_init with a struct of that
 * first size, and a newer library must not write past it. Each first version is written out
 * here as that header declared it, followed by guard bytes; the exported initialiser (called
 * by its parenthesized name, as an older program's call resolves) must leave the guards alone
 * and give a struct the calls accept. The macros of today's header pass the caller's sizeof. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c_check.h"
#include "tlio/tlio.h"

#define GUARD 0xA5

/* tl_quantize_options as tlio.h first declared it (scheme "int4-g<G>-sym", "nf4", "fp4", "int8").
 */
typedef struct {
  size_t struct_size;
  const char* scheme;
  const char* include;
  const char* exclude;
  uint64_t blocksize;
  int nested;
  tl_dtype storage;
  tl_progress_fn progress;
  void* progress_user;
} first_quantize_options;

/* tl_compare_options as tlio.h first declared it. */
typedef struct {
  size_t struct_size;
  double atol;
  double rtol;
  tl_progress_fn progress;
  void* progress_user;
} first_compare_options;

static int guards_intact(const unsigned char* guard, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i)
    if (guard[i] != GUARD) return 0;
  return 1;
}

static void check_quantize(const char* src, const char* dir) {
  struct {
    first_quantize_options o;
    unsigned char guard[128];
  } old;
  tl_quantize_options now;
  char dst[700];
  memset(&old, GUARD, sizeof old);
  (tl_quantize_options_init)((tl_quantize_options*)&old.o);
  CHECK(guards_intact(old.guard, sizeof old.guard));
  CHECK(old.o.struct_size == sizeof(first_quantize_options));
  CHECK(old.o.storage == TL_U8 && old.o.scheme == NULL && old.o.blocksize == 0 &&
        old.o.nested == 0);
  old.o.scheme = "nf4";
  snprintf(dst, sizeof dst, "%s/old.safetensors", dir);
  CHECK(tl_quantize_file_with(src, dst, (const tl_quantize_options*)&old.o) == TL_OK);
  /* Today's header: the macro passes this program's sizeof. */
  memset(&now, GUARD, sizeof now);
  tl_quantize_options_init(&now);
  CHECK(now.struct_size == sizeof now && now.token == NULL && now.allow_1d == 0 &&
        now.storage == TL_U8);
  /* A struct past this library's is not filled past its size, and refused by the calls. */
  {
    struct {
      tl_quantize_options o;
      unsigned char newer[32];
    } big;
    memset(&big, GUARD, sizeof big);
    tl_quantize_options_init_sized(&big.o, sizeof big);
    CHECK(guards_intact(big.newer, sizeof big.newer) && big.o.struct_size == sizeof big);
    big.o.scheme = "nf4";
    CHECK(tl_quantize_file_with(src, dst, &big.o) == TL_EINVAL);
  }
}

static void check_compare(const char* src) {
  struct {
    first_compare_options o;
    unsigned char guard[128];
  } old;
  tl_file* f = NULL;
  tl_comparison* c = NULL;
  tl_compare_options now;
  memset(&old, GUARD, sizeof old);
  (tl_compare_options_init)((tl_compare_options*)&old.o);
  CHECK(guards_intact(old.guard, sizeof old.guard));
  CHECK(old.o.struct_size == sizeof(first_compare_options) && old.o.atol == 0 &&
        old.o.progress == NULL);
  CHECK(tl_open(src, &f) == TL_OK);
  CHECK(tl_compare_files(f, f, (const tl_compare_options*)&old.o, &c) == TL_OK);
  tl_comparison_free(c);
  memset(&now, GUARD, sizeof now);
  tl_compare_options_init(&now);
  CHECK(now.struct_size == sizeof now && now.filter == NULL && now.quantization_config_b == NULL);
  tl_close(f);
}

int main(void) {
  char dir[] = "/tmp/tlio-abi-capi-XXXXXX", src[600];
  snprintf(src, sizeof src, "%s/quant/tiny_model.safetensors", TLIO_TEST_DATA);
  CHECK(mkdtemp(dir) != NULL);
  check_quantize(src, dir);
  check_compare(src);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
