/* The C API from C (C99), its second program: model directories written and opened as one
 * namespace, edits, comparisons across dtypes, hashes and signatures, read plans. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "c_check.h"
#include "tlio/tlio.h"

/* A two-shard model directory written from C, opened as one namespace. */
static void test_model(const char* dir) {
  char path[2048], cmd[4200];
  snprintf(path, sizeof path, "%s/capi_model", dir);
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", path, path);
  CHECK(system(cmd) == 0);
  snprintf(cmd, sizeof cmd, "%s/config.json", path);
  FILE* cfg = fopen(cmd, "w");
  CHECK(cfg != NULL);
  if (!cfg) return;
  fputs("{\"tl_arch\": \"bigram\", \"tl_tokenizer\": \"bytes\", \"vocab_size\": 256}\n", cfg);
  fclose(cfg);

  tl_model* m = (tl_model*)1;
  CHECK(tl_model_open(path, &m) == TL_EIO && m == NULL); /* no weights yet */
  CHECK(strstr(tl_last_error(), "model.safetensors") != NULL && tl_last_error_errno() == 2);
  CHECK(tl_model_open(dir, &m) == TL_EFORMAT && strcmp(tl_last_error_rule(), "model") == 0);
  CHECK(strstr(tl_last_error(), "not a model directory") != NULL);

  static float w[256 * 256];
  for (int i = 0; i < 256 * 256; ++i) w[i] = (float)(i % 7);
  const uint64_t shape[2] = {256, 256};
  snprintf(cmd, sizeof cmd, "%s/model.safetensors", path);
  tl_writer* wr = NULL;
  CHECK(tl_writer_open(cmd, &wr) == TL_OK);
  if (!wr) return;
  CHECK(tl_writer_add(wr, "bigram.weight", TL_F32, 2, shape, w, sizeof w) == TL_OK);
  CHECK(tl_writer_commit(wr) == TL_OK);

  CHECK(tl_model_open(path, &m) == TL_OK);
  if (!m) return;
  CHECK(strcmp(tl_model_arch(m), "bigram") == 0);
  CHECK(tl_model_check(m) == TL_OK);
  CHECK(tl_model_file_count(m) == 1 && tl_model_file(m, 0) != NULL && tl_model_file(m, 1) == NULL);
  const tl_file* f = NULL;
  size_t index = 9;
  CHECK(tl_model_find(m, "bigram.weight", &f, &index) == TL_OK && f == tl_model_file(m, 0) &&
        index == 0);
  struct tl_tensor_info info;
  CHECK(f && tl_tensor_info(f, index, &info) == TL_OK && info.rank == 2 &&
        ((const float*)info.data)[8] == 1.0f);
  tl_close((tl_file*)f); /* a model's file: left alone */
  CHECK(tl_tensor_info(f, index, &info) == TL_OK);
  CHECK(tl_model_find(m, "nope", &f, &index) == TL_ENOTFOUND);
  CHECK(strstr(tl_last_error(), "\"nope\"") != NULL);
  tl_model_close(m);

  /* The folder rewritten whole: converted, quantized, dequantized, config.json carried over. */
  char out[2100], quantized[2100], restored[2100];
  snprintf(out, sizeof out, "%s-bf16", path);
  snprintf(quantized, sizeof quantized, "%s-nf4", path);
  snprintf(restored, sizeof restored, "%s-restored", path);
  CHECK(tl_convert_folder(path, out, TL_BF16, 0) == TL_OK);
  CHECK(tl_model_open(out, &m) == TL_OK);
  if (m) {
    CHECK(tl_model_find(m, "bigram.weight", &f, &index) == TL_OK);
    CHECK(f && tl_tensor_info(f, index, &info) == TL_OK && info.dtype == TL_BF16 &&
          ((const uint16_t*)info.data)[8] == 0x3F80); /* 1.0 */
    tl_model_close(m);
  }
  tl_quantize_options q;
  tl_quantize_options_init(&q);
  q.scheme = "nf4";
  q.include = "^bigram";
  CHECK(tl_quantize_folder(out, quantized, &q, 0) == TL_OK);
  CHECK(tl_dequantize_folder(quantized, restored, TL_F32, 0) == TL_OK);
  CHECK(tl_model_open(restored, &m) == TL_OK);
  if (m) {
    CHECK(tl_model_find(m, "bigram.weight", &f, &index) == TL_OK);
    CHECK(f && tl_tensor_info(f, index, &info) == TL_OK && info.dtype == TL_F32 && info.rank == 2);
    tl_model_close(m);
  }
  CHECK(tl_convert_folder(path, out, -1, 0) == TL_OK);
  CHECK(tl_convert_folder(path, out, TL_I32, 0) == TL_EINVAL);
  q.include = "^nothing$";
  CHECK(tl_quantize_folder(out, quantized, &q, 0) == TL_EINVAL);
  CHECK(tl_convert_folder(dir, out, TL_F16, 0) == TL_EIO); /* no weights there */

  /* Re-sharded: four shards into one model.safetensors, then each module in a shard of its own. */
  snprintf(out, sizeof out, "%s-resharded", path);
  CHECK(tl_convert_folder(data_path("models/sharded"), out, -1, (uint64_t)1 << 30) == TL_OK);
  CHECK(tl_model_open(out, &m) == TL_OK);
  if (m) {
    CHECK(tl_model_file_count(m) == 1);
    tl_model_close(m);
  }
  CHECK(tl_dequantize_folder(quantized, out, -1, 1) == TL_OK);
  CHECK(tl_model_open(out, &m) == TL_OK);
  if (m) {
    CHECK(tl_model_file_count(m) == 1); /* one module: bigram, its weight with its parts restored */
    tl_model_close(m);
  }
  CHECK(tl_convert_folder(data_path("models/sharded"), out, TL_BF16, 1) == TL_OK);
  CHECK(tl_model_open(out, &m) == TL_OK);
  if (m) {
    CHECK(tl_model_file_count(m) == 4);
    tl_model_close(m);
  }
  /* The same as a job of units (docs/jobs.md), units in reverse: every file the same bytes. */
  {
    char units[2200], want[2400], got[2400], a_hex[TL_SHA256_HEX_SIZE], b_hex[TL_SHA256_HEX_SIZE];
    static const char* files[] = {"model-00001-of-00004.safetensors",
                                  "model-00004-of-00004.safetensors",
                                  "model.safetensors.index.json", "config.json"};
    snprintf(units, sizeof units, "%s-units", path);
    CHECK(tl_job_begin("c-1", TL_JOB_PLAN, 0) == TL_OK);
    CHECK(tl_convert_folder(data_path("models/sharded"), units, TL_BF16, 1) == TL_OK);
    const uint64_t n = tl_job_units();
    CHECK(n == 4);
    for (uint64_t k = n; k-- > 0;) {
      CHECK(tl_job_begin("c-1", TL_JOB_UNIT, k) == TL_OK);
      CHECK(tl_convert_folder(data_path("models/sharded"), units, TL_BF16, 1) == TL_OK);
    }
    CHECK(tl_job_begin("c-1", TL_JOB_COMMIT, 0) == TL_OK);
    CHECK(tl_convert_folder(data_path("models/sharded"), units, TL_BF16, 1) == TL_OK);
    tl_job_end();
    for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i) {
      snprintf(want, sizeof want, "%s/%s", out, files[i]);
      snprintf(got, sizeof got, "%s/%s", units, files[i]);
      CHECK(tl_hash_file(want, NULL, a_hex) == TL_OK && tl_hash_file(got, NULL, b_hex) == TL_OK);
      CHECK(strcmp(a_hex, b_hex) == 0);
    }
    CHECK(tl_job_begin("bad/id", TL_JOB_PLAN, 0) == TL_EINVAL);
    CHECK(tl_job_begin("c-2", 7, 0) == TL_EINVAL);
    CHECK(tl_job_begin("c-2", TL_JOB_COMMIT, 0) == TL_OK); /* no plan: nothing to commit */
    CHECK(tl_convert_folder(data_path("models/sharded"), units, TL_BF16, 1) == TL_EIO);
    tl_job_end();
  }
  /* A folder's shards compared with one file (tlio diff DIR FILE), all names or a filter's. */
  tl_model* sharded = NULL;
  tl_file* one = NULL;
  CHECK(tl_model_open(data_path("models/sharded"), &sharded) == TL_OK);
  CHECK(tl_open(data_path("quant/tiny_model.safetensors"), &one) == TL_OK);
  if (sharded && one) {
    const tl_file* shards[8];
    const size_t n = tl_model_file_count(sharded);
    for (size_t i = 0; i < n && i < 8; ++i) shards[i] = tl_model_file(sharded, i);
    const tl_file* single[1] = {one};
    tl_comparison* c = NULL;
    CHECK(tl_compare_sets(shards, n, single, 1, NULL, &c) == TL_OK);
    CHECK(c && tl_comparison_equal(c) && tl_comparison_count(c) == 4);
    tl_comparison_free(c);
    tl_compare_options co;
    tl_compare_options_init(&co);
    co.filter = "layers";
    CHECK(tl_compare_sets(shards, n, single, 1, &co, &c) == TL_OK);
    CHECK(c && tl_comparison_count(c) == 2);
    tl_comparison_free(c);
    co.struct_size = offsetof(tl_compare_options, filter); /* a caller built before filter */
    CHECK(tl_compare_sets(shards, n, single, 1, &co, &c) == TL_OK);
    CHECK(c && tl_comparison_count(c) == 4);
    tl_comparison_free(c);
    co.struct_size = sizeof co;
    co.filter = "(";
    CHECK(tl_compare_sets(shards, n, single, 1, &co, &c) == TL_EINVAL);
    CHECK(tl_compare_sets(shards, 0, single, 1, NULL, &c) == TL_EINVAL);
  }
  tl_close(one);
  tl_model_close(sharded);

  /* tl_edit_file on a folder: every shard's metadata. */
  tl_edit_options e;
  tl_edit_options_init(&e);
  const char* keys[] = {"source"};
  const char* values[] = {"c"};
  e.set_keys = keys;
  e.set_values = values;
  e.set_count = 1;
  CHECK(tl_edit_file(out, NULL, &e, NULL) == TL_OK);
  CHECK(tl_model_open(out, &m) == TL_OK);
  if (m) {
    for (size_t i = 0; i < tl_model_file_count(m); ++i) {
      const char* v = tl_metadata_get(tl_model_file(m, i), "source");
      CHECK(v && strcmp(v, "c") == 0);
    }
    tl_model_close(m);
  }
}

/* Metadata edited in place, tensors kept, dropped and renamed by rewrite, refusals. */
static void test_edit(const char* dir) {
  char src[4096], out[4096];
  snprintf(src, sizeof src, "%s/edit.safetensors", dir);
  snprintf(out, sizeof out, "%s/edited.safetensors", dir);
  tl_writer* w = NULL;
  float a[2] = {1, 2}, b[2] = {3, 4};
  uint64_t shape[1] = {2};
  CHECK(tl_writer_open(src, &w) == TL_OK);
  CHECK(tl_writer_set_metadata(w, "format", "pt") == TL_OK);
  CHECK(tl_writer_add(w, "layers.0.w", TL_F32, 1, shape, a, sizeof a) == TL_OK);
  CHECK(tl_writer_add(w, "layers.1.w", TL_F32, 1, shape, b, sizeof b) == TL_OK);
  CHECK(tl_writer_commit(w) == TL_OK);

  tl_edit_options o;
  tl_edit_options_init(&o);
  const char* keys[1] = {"format"};
  const char* values[1] = {"np"};
  o.set_keys = keys;
  o.set_values = values;
  o.set_count = 1;
  tl_edit_report r;
  CHECK(tl_edit_file(src, NULL, &o, &r) == TL_OK && r.in_place == 1 && r.kept == 2);
  tl_file* f = NULL;
  CHECK(tl_open(src, &f) == TL_OK);
  if (f) {
    CHECK(strcmp(tl_metadata_get(f, "format"), "np") == 0);
    tl_close(f);
  }

  tl_edit_options_init(&o);
  const char* drop[1] = {"^layers\\.0\\."};
  const char* patterns[1] = {"^layers\\.(\\d+)\\.w$"};
  const char* replacements[1] = {"h\\1"};
  o.drop = drop;
  o.drop_count = 1;
  o.rename_patterns = patterns;
  o.rename_replacements = replacements;
  o.rename_count = 1;
  CHECK(tl_edit_file(src, out, &o, &r) == TL_OK && r.in_place == 0 && r.kept == 1 &&
        r.dropped == 1 && r.renamed == 1 && r.data_bytes == 8);
  CHECK(tl_open(out, &f) == TL_OK);
  if (f) {
    size_t i;
    float got[2];
    CHECK(tl_tensor_count(f) == 1 && tl_tensor_find(f, "h1", &i) == TL_OK);
    CHECK(tl_tensor_read(f, i, got, sizeof got) == TL_OK && got[1] == 4.0f);
    tl_close(f);
  }

  /* Refused, nothing written: two tensors renamed to one name, a key that is not there, an
   * array without its strings, a struct_size of something else. */
  remove(out);
  const char* clash[1] = {"\\d"};
  const char* empty[1] = {""};
  tl_edit_options_init(&o);
  o.rename_patterns = clash;
  o.rename_replacements = empty;
  o.rename_count = 1;
  CHECK(tl_edit_file(src, out, &o, NULL) == TL_EINVAL);
  CHECK(strstr(tl_last_error(), "the same name \"layers..w\"") != NULL);
  tl_edit_options_init(&o);
  const char* missing[1] = {"licence"};
  o.delete_keys = missing;
  o.delete_count = 1;
  CHECK(tl_edit_file(src, out, &o, NULL) == TL_EINVAL);
  CHECK(strstr(tl_last_error(), "licence") != NULL);
  tl_edit_options_init(&o);
  o.keep_count = 1;
  CHECK(tl_edit_file(src, out, &o, NULL) == TL_EINVAL);
  tl_edit_options_init(&o);
  o.struct_size = 8;
  CHECK(tl_edit_file(src, out, &o, NULL) == TL_EINVAL);
  CHECK(tl_open(out, &f) == TL_EIO);
}

/* Values compared across dtypes: F32 against its BF16 conversion. */
static void test_compare(const char* dir) {
  char a_path[4096], b_path[4096];
  snprintf(a_path, sizeof a_path, "%s/compare_a.safetensors", dir);
  snprintf(b_path, sizeof b_path, "%s/compare_b.safetensors", dir);
  float w[4] = {1.0f, 1.0078125f, -3.0f, 0.1f}; /* only 0.1 is not exact in BF16 */
  uint16_t bf[4];
  CHECK(tl_convert(TL_F32, w, sizeof w, TL_BF16, bf, sizeof bf, 4) == TL_OK);
  uint64_t shape[1] = {4};
  tl_writer* wr = NULL;
  CHECK(tl_writer_open(a_path, &wr) == TL_OK);
  CHECK(tl_writer_add(wr, "w", TL_F32, 1, shape, w, sizeof w) == TL_OK);
  CHECK(tl_writer_add(wr, "only_a", TL_F32, 1, shape, w, sizeof w) == TL_OK);
  CHECK(tl_writer_commit(wr) == TL_OK);
  CHECK(tl_writer_open(b_path, &wr) == TL_OK);
  CHECK(tl_writer_add(wr, "w", TL_BF16, 1, shape, bf, sizeof bf) == TL_OK);
  CHECK(tl_writer_commit(wr) == TL_OK);
  tl_file *a = NULL, *b = NULL;
  CHECK(tl_open(a_path, &a) == TL_OK && tl_open(b_path, &b) == TL_OK);
  if (!a || !b) return;
  tl_comparison* c = NULL;
  CHECK(tl_compare_files(a, b, NULL, &c) == TL_OK);
  CHECK(tl_comparison_equal(c) == 0);
  CHECK(tl_comparison_count(c) == 1);
  CHECK(tl_comparison_only_count(c, 0) == 1 &&
        strcmp(tl_comparison_only_at(c, 0, 0), "only_a") == 0);
  CHECK(tl_comparison_only_count(c, 1) == 0 && tl_comparison_only_at(c, 1, 0) == NULL);
  tl_tensor_comparison t;
  CHECK(tl_comparison_at(c, 0, &t) == TL_OK);
  CHECK(strcmp(t.name, "w") == 0 && strcmp(t.a_dtype, "F32") == 0 &&
        strcmp(t.b_dtype, "BF16") == 0);
  CHECK(t.compared == 1 && t.equal == 0 && t.outside == 1 && t.elements == 4);
  CHECK(t.max_abs > 0 && t.max_abs < 0.001 && t.cosine > 0.999999);
  CHECK(tl_comparison_at(c, 1, &t) == TL_EINVAL);
  tl_comparison_free(c);
  tl_compare_options o;
  tl_compare_options_init(&o);
  o.atol = 0.001;
  CHECK(tl_compare_files(a, b, &o, &c) == TL_OK);
  CHECK(tl_comparison_at(c, 0, &t) == TL_OK && t.equal == 1);
  tl_comparison_free(c);
  o.atol = -1;
  CHECK(tl_compare_files(a, b, &o, &c) == TL_EINVAL && c == NULL);
  tl_close(a);
  tl_close(b);
}

/* Writes `text` as the whole file `path`. */
static void write_text(const char* path, const char* text) {
  FILE* fp = fopen(path, "wb");
  CHECK(fp != NULL);
  if (fp) {
    fputs(text, fp);
    fclose(fp);
  }
}

static void test_trust(const char* dir) {
  /* A P-256 key made for this test (openssl ecparam -genkey | openssl pkcs8 -topk8 -nocrypt). */
  static const char kPrivate[] =
      "-----BEGIN PRIVATE KEY-----\n"
      "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQggkLBED7VL96qeBMh\n"
      "FKA7LVYBIwRVoYJDgY3nvY2VUQuhRANCAAT7TQ5pCOtB2TtXo8ddpzoJR0OU50CK\n"
      "2Y79W3lxNicxBuiXjMgcKYrSoF8izYc1QzI27Ds7pYoZnC3uUPEPTKlY\n"
      "-----END PRIVATE KEY-----\n";
  static const char kPublic[] =
      "-----BEGIN PUBLIC KEY-----\n"
      "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE+00OaQjrQdk7V6PHXac6CUdDlOdA\n"
      "itmO/Vt5cTYnMQbol4zIHCmK0qBfIs2HNUMyNuw7O6WKGZwt7lDxD0ypWA==\n"
      "-----END PUBLIC KEY-----\n";
  char model[4096], key[4096], pub[4096], file[4200], hex[TL_SHA256_HEX_SIZE];
  snprintf(model, sizeof model, "%s/signed_model", dir);
  snprintf(key, sizeof key, "%s/trust_key.pem", dir);
  snprintf(pub, sizeof pub, "%s/trust_key.pub", dir);
  snprintf(file, sizeof file, "%s/w.bin", model);
  CHECK(mkdir(model, 0700) == 0 || errno == EEXIST);
  write_text(key, kPrivate);
  write_text(pub, kPublic);
  write_text(file, "abc");
  CHECK(tl_hash_file(file, NULL, hex) == TL_OK);
  CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") ==
        0); /* FIPS 180-2 "abc" */

  tl_file* f = NULL;
  CHECK(tl_open(data_path("hf/worked_example.safetensors"), &f) == TL_OK);
  CHECK(tl_file_sha256(f, NULL, hex) == TL_OK);
  CHECK(tl_file_sha256(f, hex, NULL) == TL_OK);
  CHECK(tl_file_sha256(f, "0000000000000000000000000000000000000000000000000000000000000000",
                       NULL) == TL_EVERIFY);
  CHECK(strstr(tl_last_error(), hex) != NULL);
  tl_close(f);

  CHECK(tl_sign_folder(model, key, NULL) == TL_OK);
  CHECK(tl_verify_signature(model, pub, NULL) == TL_OK);
  write_text(file, "abd");
  CHECK(tl_verify_signature(model, pub, NULL) == TL_EVERIFY);
  CHECK(strstr(tl_last_error(), "w.bin") != NULL);
  CHECK(tl_sign_folder(model, pub, NULL) == TL_EINVAL); /* a public key cannot sign */
}

static void test_plans(const char* dir) {
  /* A 6x4 F32 matrix counting up, written here; rows 2..4, columns 1..3 through a plan. */
  char path[4200];
  snprintf(path, sizeof path, "%s/plan.safetensors", dir);
  float values[24], got[6];
  for (int i = 0; i < 24; ++i) values[i] = (float)i;
  tl_writer* w = NULL;
  uint64_t shape[2] = {6, 4};
  CHECK(tl_writer_open(path, &w) == TL_OK);
  CHECK(tl_writer_add(w, "m", TL_F32, 2, shape, values, sizeof values) == TL_OK);
  CHECK(tl_writer_commit(w) == TL_OK);

  tl_plan_options o;
  tl_plan_options_init(&o);
  o.max_gap = 0;
  tl_plan* plan = NULL;
  CHECK(tl_plan_open(path, &o, &plan) == TL_OK);
  uint64_t starts[2] = {2, 1}, stops[2] = {4, 3};
  size_t item = 99, count = 0, file = 9;
  CHECK(tl_plan_add(plan, "m", 2, starts, stops, -1, &item) == TL_OK && item == 0);
  tl_plan_item_info info;
  CHECK(tl_plan_item(plan, item, &info) == TL_OK);
  CHECK(info.rank == 2 && info.shape[0] == 2 && info.shape[1] == 2 && info.dtype == TL_F32);
  CHECK(info.byte_size == 16);
  uint64_t wanted = 0, offset = 0, length = 0;
  CHECK(tl_plan_item_range(plan, item, &file, &offset) == TL_OK &&
        offset == UINT64_MAX); /* 2 rows */
  CHECK(tl_plan_item_range(plan, 1, &file, &offset) == TL_EINVAL);
  CHECK(tl_plan_reads(plan, &count, &wanted) == TL_OK);
  CHECK(count == 2 && wanted == 16); /* two rows, 8 bytes each, 8 bytes apart */
  CHECK(tl_plan_read_at(plan, 1, &file, &offset, &length) == TL_OK);
  CHECK(file == 0 && offset == (3 * 4 + 1) * 4 && length == 8);
  CHECK(tl_plan_execute(plan) == TL_EINVAL); /* no destination yet */
  CHECK(tl_plan_set_destination(plan, item, got, 4 * sizeof got[0]) == TL_OK);
  CHECK(tl_plan_execute(plan) == TL_OK);
  CHECK(got[0] == 9.0f && got[1] == 10.0f && got[2] == 13.0f && got[3] == 14.0f);
  CHECK(tl_plan_set_destination(plan, item, got, 3) == TL_EINVAL);
  CHECK(tl_plan_add(plan, "absent", 0, NULL, NULL, -1, &item) == TL_ENOTFOUND);
  stops[0] = 7;
  CHECK(tl_plan_add(plan, "m", 2, starts, stops, -1, &item) == TL_EINVAL);
  CHECK(strstr(tl_last_error(), "7") != NULL);
  CHECK(tl_plan_add(plan, "m", 0, NULL, NULL, TL_F16, &item) == TL_EINVAL);
  /* Cleared, the plan starts again from item 0 over the same open file: row 5 alone. */
  CHECK(tl_plan_clear(plan) == TL_OK);
  CHECK(tl_plan_item(plan, 0, &info) == TL_EINVAL);
  starts[0] = 5, stops[0] = 6, starts[1] = 0, stops[1] = UINT64_MAX;
  CHECK(tl_plan_add(plan, "m", 2, starts, stops, -1, &item) == TL_OK && item == 0);
  CHECK(tl_plan_reads(plan, &count, &wanted) == TL_OK && count == 1 && wanted == 16);
  CHECK(tl_plan_set_destination(plan, item, got, 4 * sizeof got[0]) == TL_OK);
  CHECK(tl_plan_execute(plan) == TL_OK);
  CHECK(got[0] == 20.0f && got[3] == 23.0f);
  /* Row 5 is one range of the file: where it is stored. */
  CHECK(tl_plan_item_range(plan, item, &file, &offset) == TL_OK && file == 0);
  float stored[4] = {0};
  FILE* f = fopen(path, "rb");
  CHECK(f && fseek(f, (long)offset, SEEK_SET) == 0 && fread(stored, sizeof stored, 1, f) == 1);
  if (f) fclose(f);
  CHECK(memcmp(stored, values + 20, sizeof stored) == 0);
  tl_plan_free(plan);

  /* Past the page cache: the same rows. */
  CHECK(tl_plan_open_ex(path, &o, TL_OPEN_DIRECT, &plan) == TL_OK);
  CHECK(tl_plan_add(plan, "m", 2, starts, stops, -1, &item) == TL_OK);
  CHECK(tl_plan_set_destination(plan, item, got, 4 * sizeof got[0]) == TL_OK);
  got[0] = got[3] = 0;
  CHECK(tl_plan_execute(plan) == TL_OK);
  CHECK(got[0] == 20.0f && got[3] == 23.0f);
  tl_plan_free(plan);
  CHECK(tl_plan_open_ex(path, &o, TL_OPEN_PREAD, &plan) == TL_EINVAL);
  CHECK(strstr(tl_last_error(), "TL_OPEN_DIRECT") != NULL);
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : ".";
  test_model(dir);
  test_edit(dir);
  test_compare(dir);
  test_trust(dir);
  test_plans(dir);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
