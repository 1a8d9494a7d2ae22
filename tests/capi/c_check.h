/* The C API tests' check: counts passes and failures, and prints a failed condition with the
 * library's last error message. One test program per file includes it once. */
#ifndef TLIO_TESTS_C_CHECK_H
#define TLIO_TESTS_C_CHECK_H

#include <stdio.h>

#include "tlio/tlio.h"

static int passed = 0, failed = 0;

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    if (cond) {                                                                              \
      ++passed;                                                                              \
    } else {                                                                                 \
      ++failed;                                                                              \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, \
              tl_last_error());                                                              \
    }                                                                                        \
  } while (0)

#endif
