/* The C API's reports from C (C99): a model folder's figures as JSON, against its own GGUF export
 * (every tensor paired, exact in F32), the page written, progress called, and errors. The
 * figures themselves are checked against numpy in python/tests/test_report.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c_check.h"
#include "tlio/tlio.h"

static void count_calls(uint64_t done, uint64_t total, void* user) {
  (void)done;
  (void)total;
  ++*(int*)user;
}

int main(int argc, char** argv) {
  const char* scratch = argc > 1 ? argv[1] : ".";
  char gguf[4096], page[4096];
  tl_report_options o;
  tl_report* r = NULL;
  const char* json;
  int calls = 0;
  FILE* f;

  snprintf(gguf, sizeof gguf, "%s/report_capi_%d.gguf", scratch, (int)getpid());
  snprintf(page, sizeof page, "%s/report_capi_%d.html", scratch, (int)getpid());
  CHECK(tl_export_gguf(TLIO_TEST_DATA "/gguf/tiny_llama", gguf, "F32", NULL, NULL) == TL_OK);

  tl_report_options_init(&o);
  CHECK(o.struct_size == sizeof o && o.bins == 64 && o.against == NULL);
  o.against = gguf;
  o.progress = count_calls;
  o.progress_user = &calls;
  CHECK(tl_report_make(TLIO_TEST_DATA "/gguf/tiny_llama", &o, NULL, &r) == TL_OK && r != NULL);
  if (!r) return 1;
  json = tl_report_json(r);
  CHECK(json != NULL && strstr(json, "\"format\":\"model folder\"") != NULL);
  CHECK(strstr(json, "\"reference\":\"blk.0.attn_q.weight\"") != NULL);
  CHECK(strstr(json, "\"only_in_model\":[],\"only_in_reference\":[]") != NULL);
  CHECK(strstr(json, "\"max_abs\":0,") != NULL &&
        strstr(json, "\"max_abs\":0.") == NULL); /* F32: exact */
  CHECK(calls > 0);
  CHECK(tl_report_write_html(r, page) == TL_OK);
  f = fopen(page, "r");
  CHECK(f != NULL);
  if (f) {
    char head[16] = {0};
    CHECK(fread(head, 1, 15, f) == 15 && strcmp(head, "<!DOCTYPE html>") == 0);
    fclose(f);
  }
  unlink(page);
  CHECK(tl_report_write_html(r, "/nonexistent-dir/x.html") == TL_EIO);
  tl_report_free(r);

  r = NULL;
  o.bins = 0;
  CHECK(tl_report_make(TLIO_TEST_DATA "/gguf/tiny_llama", &o, NULL, &r) == TL_EINVAL && r == NULL);
  o.struct_size = 8;
  CHECK(tl_report_make(TLIO_TEST_DATA "/gguf/tiny_llama", &o, NULL, &r) == TL_EINVAL);
  tl_report_options_init(&o);
  CHECK(tl_report_make(TLIO_TEST_DATA "/nosuch.safetensors", &o, NULL, &r) == TL_EIO);
  CHECK(tl_report_make(NULL, &o, NULL, &r) == TL_EINVAL);
  CHECK(tl_report_json(NULL) == NULL);
  unlink(gguf);

  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
