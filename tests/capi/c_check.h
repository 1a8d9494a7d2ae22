/* The C API tests' check: counts passes and failures, and prints a failed condition with the
 * library's last error message; and the helpers the programs share. One test program per file
 * includes it once. */
#ifndef TLIO_TESTS_C_CHECK_H
#define TLIO_TESTS_C_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "tlio/tlio.h"

static int passed = 0, failed = 0;

#define CHECK(cond)                                                                           \
  do {                                                                                        \
    if (cond) {                                                                               \
      ++passed;                                                                               \
    } else {                                                                                  \
      ++failed;                                                                               \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, \
              tl_last_error());                                                               \
    }                                                                                         \
  } while (0)

/* A progress callback that keeps the last (done, total) in user's two uint64_t. */
static inline void record_progress(uint64_t done, uint64_t total, void* user) {
  uint64_t* last = (uint64_t*)user;
  last[0] = done;
  last[1] = total;
}

/* `rel` under the test data folder (the same buffer each call). */
static inline const char* data_path(const char* rel) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/%s", TLIO_TEST_DATA, rel);
  return path;
}

#endif
