/* The C API from C (C99): reading, metadata, writing, conversion, int4, bitsandbytes, errors,
 * outputs that are not files, interrupt checks (capi_model_test.c: model directories, edits,
 * comparisons, hashes, read plans). */
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

static void test_read(unsigned flags) {
  tl_file* f = NULL;
  CHECK(tl_open_ex(data_path("hf/worked_example.safetensors"), flags, &f) == TL_OK);
  if (!f) return;
  CHECK(tl_tensor_count(f) == 1);
  size_t index = 99;
  CHECK(tl_tensor_find(f, "w", &index) == TL_OK && index == 0);
  CHECK(tl_tensor_find(f, "nope", &index) == TL_ENOTFOUND);
  CHECK(strstr(tl_last_error(), "nope") != NULL);
  struct tl_tensor_info info;
  CHECK(tl_tensor_info(f, 0, &info) == TL_OK);
  CHECK(strcmp(info.name, "w") == 0 && info.name_len == 1);
  CHECK(info.dtype == TL_F32 && info.rank == 2 && info.shape[0] == 2 && info.shape[1] == 2);
  CHECK(info.byte_size == 16 && info.data_offsets[0] == 0 && info.data_offsets[1] == 16);
  CHECK((flags & (TL_OPEN_PREAD | TL_OPEN_DIRECT)) ? info.data == NULL : info.data != NULL);
  float w[4] = {0};
  CHECK(tl_tensor_read(f, 0, w, sizeof w) == TL_OK);
  CHECK(w[0] == 1.0f && w[3] == 4.0f);
  CHECK(tl_tensor_read(f, 0, w, 8) == TL_EINVAL);
  CHECK(tl_tensor_info(f, 5, &info) == TL_EINVAL);
  unsigned short bf[4];
  CHECK(tl_tensor_read_as(f, 0, TL_BF16, bf, sizeof bf) == TL_OK);
  CHECK(bf[0] == 0x3F80 && bf[1] == 0x4000);
  CHECK(strcmp(tl_metadata_get(f, "format"), "tinyllm") == 0);
  CHECK(tl_metadata_get(f, "absent") == NULL);
  CHECK(tl_metadata_count(f) == 1);
  const char *k, *v;
  CHECK(tl_metadata_at(f, 0, &k, &v) == TL_OK && strcmp(k, "format") == 0 &&
        strcmp(v, "tinyllm") == 0);
  CHECK(tl_metadata_at(f, 1, &k, &v) == TL_EINVAL);
  {
    float many[4] = {0};
    size_t index0 = 0, sizes[1] = {sizeof many}, short_size[1] = {8};
    void* dsts[1] = {many};
    CHECK(tl_tensor_read_many(f, &index0, dsts, sizes, 1) == TL_OK && many[3] == 4.0f);
    CHECK(tl_tensor_read_many(f, &index0, dsts, short_size, 1) == TL_EINVAL);
    CHECK(tl_tensor_read_many(f, NULL, NULL, NULL, 0) == TL_OK);
    CHECK(tl_tensor_read_many(f, NULL, dsts, sizes, 1) == TL_EINVAL);
  }
  if (flags & TL_OPEN_PRIVATE) {
    /* Writes land in this process's copy: seen by reads of this handle, not by the file. */
    float changed = 42.0f;
    memcpy((void*)info.data, &changed, sizeof changed);
    CHECK(tl_tensor_read(f, 0, w, sizeof w) == TL_OK && w[0] == 42.0f && w[1] == 2.0f);
    tl_file* again = NULL;
    CHECK(tl_open(data_path("hf/worked_example.safetensors"), &again) == TL_OK);
    CHECK(again && tl_tensor_read(again, 0, w, sizeof w) == TL_OK && w[0] == 1.0f);
    tl_close(again);
  }
  tl_close(f);
}

static void test_errors(void) {
  tl_file* f = (tl_file*)1;
  CHECK(tl_open(data_path("bad/offsets_gap.safetensors"), &f) == TL_EFORMAT);
  CHECK(f == NULL);
  CHECK(strstr(tl_last_error(), "rule 5") != NULL);
  CHECK(strcmp(tl_last_error_rule(), "5") == 0 && tl_last_error_errno() == 0);
  CHECK(tl_open(data_path("does-not-exist.safetensors"), &f) == TL_EIO);
  CHECK(strcmp(tl_last_error_rule(), "") == 0 && tl_last_error_errno() == 2 /* ENOENT */);
  CHECK(tl_open(NULL, &f) == TL_EINVAL);
  CHECK(tl_open_ex(data_path("hf/worked_example.safetensors"), TL_OPEN_PREAD | TL_OPEN_PRIVATE,
                   &f) == TL_EINVAL &&
        f == NULL);
  CHECK(tl_open_ex(data_path("hf/worked_example.safetensors"), TL_OPEN_DIRECT | TL_OPEN_PRIVATE,
                   &f) == TL_EINVAL);
  CHECK(tl_open_ex(data_path("hf/worked_example.safetensors"), 8u, &f) == TL_EINVAL);
  unsigned char junk[5] = {1, 2, 3, 4, 5};
  CHECK(tl_open_memory(junk, sizeof junk, &f) == TL_EFORMAT);
  CHECK(strstr(tl_last_error(), "rule 1") != NULL);
  tl_dtype d;
  CHECK(tl_dtype_from_name("bfloat16", &d) == TL_OK && d == TL_BF16);
  CHECK(tl_dtype_from_name("float128", &d) == TL_EINVAL);
  CHECK(strcmp(tl_dtype_name(TL_F8_E4M3), "F8_E4M3") == 0);
  CHECK(tl_dtype_bits(TL_F4) == 4 && tl_dtype_bits(TL_U64) == 64);
  CHECK(TL_BOOL == 0 && TL_U64 == 21 && TL_EUNSUPPORTED == 5);
  CHECK(strlen(tl_version()) > 0);
}

/* Remote locations go through tl_open like paths: an hf:// file offline and not cached is
 * ENOENT, naming the setting; http:// outputs are refused before anything is written. */
static void test_remote_locations(void) {
  setenv("HF_HUB_OFFLINE", "1", 1);
  setenv("HF_HUB_CACHE", "/nonexistent-tlio-cache", 1);
  tl_file* f = NULL;
  CHECK(tl_open("hf://org/repo/model.safetensors", &f) == TL_EIO && f == NULL);
  CHECK(tl_last_error_errno() == 2 /* ENOENT */ &&
        strstr(tl_last_error(), "HF_HUB_OFFLINE") != NULL);
  CHECK(tl_open("s3:///no-bucket", &f) == TL_EINVAL);
  unsetenv("HF_HUB_OFFLINE");
  unsetenv("HF_HUB_CACHE");
}

static void test_import(const char* dir) {
  char out[4096];
  snprintf(out, sizeof out, "%s/imported.safetensors", dir);
  uint64_t tensors = 0;
  CHECK(tl_import_checkpoint(data_path("checkpoints/small_zip.pt"), out, NULL, 0, 0, &tensors) ==
        TL_OK);
  CHECK(tensors == 7);
  tl_file* f = NULL;
  tl_file* expected = NULL;
  CHECK(tl_open(out, &f) == TL_OK);
  CHECK(tl_open(data_path("checkpoints/small_zip.expected.safetensors"), &expected) == TL_OK);
  if (f && expected) {
    size_t i, j;
    CHECK(tl_tensor_find(f, "weight_t", &i) == TL_OK &&
          tl_tensor_find(expected, "weight_t", &j) == TL_OK);
    struct tl_tensor_info a, b;
    CHECK(tl_tensor_info(f, i, &a) == TL_OK && tl_tensor_info(expected, j, &b) == TL_OK);
    CHECK(a.byte_size == b.byte_size && memcmp(a.data, b.data, (size_t)a.byte_size) == 0);
    CHECK(strcmp(tl_metadata_get(f, "format"), "pt") == 0);
  }
  tl_close(f);
  tl_close(expected);
  CHECK(tl_import_checkpoint(data_path("checkpoints/small_zip.pt"), out, "state_dict.ids", 0, 0,
                             &tensors) == TL_OK);
  CHECK(tensors == 1);
  /* As BF16: a strided F32 view converted as tl_convert converts it, the I64 tensor as saved. */
  CHECK(tl_import_checkpoint_as(data_path("checkpoints/small_zip.pt"), out, NULL, 0, 0, TL_BF16,
                                &tensors) == TL_OK);
  CHECK(tensors == 7);
  CHECK(tl_open(out, &f) == TL_OK);
  CHECK(tl_open(data_path("checkpoints/small_zip.expected.safetensors"), &expected) == TL_OK);
  if (f && expected) {
    size_t i, j;
    struct tl_tensor_info a, b;
    uint16_t want[12];
    CHECK(tl_tensor_find(f, "weight_t", &i) == TL_OK &&
          tl_tensor_find(expected, "weight_t", &j) == TL_OK);
    CHECK(tl_tensor_info(f, i, &a) == TL_OK && tl_tensor_info(expected, j, &b) == TL_OK);
    CHECK(a.dtype == TL_BF16 && a.byte_size == sizeof want);
    CHECK(tl_convert(TL_F32, b.data, (size_t)b.byte_size, TL_BF16, want, sizeof want, 12) == TL_OK);
    CHECK(memcmp(a.data, want, sizeof want) == 0);
    CHECK(tl_tensor_find(f, "ids", &i) == TL_OK && tl_tensor_info(f, i, &a) == TL_OK &&
          a.dtype == TL_I64);
  }
  tl_close(f);
  tl_close(expected);
  CHECK(tl_import_checkpoint_as(data_path("checkpoints/small_zip.pt"), out, NULL, 0, 0, TL_I32,
                                NULL) == TL_EINVAL);
  CHECK(tl_import_checkpoint_as(data_path("checkpoints/small_zip.pt"), out, NULL, 0, 0, 99, NULL) ==
        TL_EINVAL);
  snprintf(out, sizeof out, "%s/evil.safetensors", dir);
  CHECK(tl_import_checkpoint(data_path("checkpoints/evil_os_system.pt"), out, NULL, 0, 0, NULL) ==
        TL_EFORMAT);
  CHECK(strcmp(tl_last_error_rule(), "pickle") == 0 &&
        strstr(tl_last_error(), "posix.system") != NULL);
  CHECK(tl_import_checkpoint(data_path("checkpoints/small_zip.pt"), out, NULL, 8u, 0, NULL) ==
        TL_EINVAL);
  /* A DCP folder (two ranks' chunks) to a model folder, every tensor as torch reads it back. */
  snprintf(out, sizeof out, "%s/dcp", dir);
  CHECK(tl_import_checkpoint(data_path("dcp/two_ranks"), out, NULL, TL_IMPORT_ALL, 0, &tensors) ==
        TL_OK);
  CHECK(tensors == 33);
  snprintf(out, sizeof out, "%s/dcp/model.safetensors", dir);
  CHECK(tl_open(out, &f) == TL_OK);
  CHECK(tl_open(data_path("dcp/two_ranks.expected.safetensors"), &expected) == TL_OK);
  if (f && expected) {
    size_t i, j;
    struct tl_tensor_info a, b;
    CHECK(tl_tensor_find(f, "tp.down.weight", &i) == TL_OK && /* column shards */
          tl_tensor_find(expected, "tp.down.weight", &j) == TL_OK);
    CHECK(tl_tensor_info(f, i, &a) == TL_OK && tl_tensor_info(expected, j, &b) == TL_OK);
    CHECK(a.byte_size == b.byte_size && memcmp(a.data, b.data, (size_t)a.byte_size) == 0);
  }
  tl_close(f);
  tl_close(expected);
}

static void test_write(const char* dir) {
  char out[4096];
  snprintf(out, sizeof out, "%s/capi.safetensors", dir);
  tl_writer* w = NULL;
  CHECK(tl_writer_open(out, &w) == TL_OK);
  float a[6] = {1, 2, 3, 4, 5, 6};
  unsigned char b[3] = {7, 8, 9};
  uint64_t sa[2] = {2, 3}, sb[1] = {3};
  CHECK(tl_writer_set_metadata(w, "format", "tinyllm") == TL_OK);
  CHECK(tl_writer_add(w, "a", TL_F32, 2, sa, a, sizeof a) == TL_OK);
  CHECK(tl_writer_declare(w, "b", TL_U8, 1, sb) == TL_OK);
  CHECK(tl_writer_declare(w, "a", TL_U8, 1, sb) == TL_EINVAL); /* twice */
  CHECK(tl_writer_append(w, "b", b, 1) == TL_OK);
  CHECK(tl_writer_append(w, "b", b + 1, 2) == TL_OK);
  CHECK(tl_writer_commit(w) == TL_OK);
  tl_file* f = NULL;
  CHECK(tl_open(out, &f) == TL_OK);
  if (f) {
    size_t i;
    CHECK(tl_tensor_find(f, "b", &i) == TL_OK);
    unsigned char got[3];
    CHECK(tl_tensor_read(f, i, got, 3) == TL_OK && got[2] == 9);
    CHECK(tl_tensor_find(f, "a", &i) == TL_OK && i == 0); /* F32 before U8 */
    tl_close(f);
  }
  /* An incomplete tensor: commit fails and leaves nothing behind. */
  snprintf(out, sizeof out, "%s/incomplete.safetensors", dir);
  CHECK(tl_writer_open(out, &w) == TL_OK);
  CHECK(tl_writer_declare(w, "b", TL_U8, 1, sb) == TL_OK);
  CHECK(tl_writer_commit(w) == TL_EINVAL);
  CHECK(tl_open(out, &f) == TL_EIO);
  CHECK(tl_writer_open(out, &w) == TL_OK);
  tl_writer_abort(w);
}

static int calls_before_stop;
static int stop_when_counted_down(void* context) {
  (void)context;
  return --calls_before_stop < 0;
}

static void test_output_safety(const char* dir) {
  char folder[4096], fifo[4200], out[4200];
  snprintf(folder, sizeof folder, "%s/capi_outputs", dir);
  snprintf(fifo, sizeof fifo, "%s/fifo", folder);
  snprintf(out, sizeof out, "%s/out.safetensors", folder);
  mkdir(folder, 0755);
  unlink(fifo);
  unlink(out);
  CHECK(mkfifo(fifo, 0644) == 0);
  tl_writer* w = NULL;
  CHECK(tl_writer_open(fifo, &w) == TL_EINVAL && w == NULL);
  CHECK(strstr(tl_last_error(), "is a FIFO, not a file") != NULL);
  CHECK(tl_writer_open(folder, &w) == TL_EIO && tl_last_error_errno() == 21 /* EISDIR */);
  struct stat st;
  CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));

  /* A check that says stop: the commit fails with TL_EINTERRUPTED and leaves nothing. */
  static float big[1 << 18];
  uint64_t shape[1] = {1 << 18};
  calls_before_stop = 0;
  tl_set_interrupt_check(stop_when_counted_down, NULL);
  CHECK(tl_writer_open(out, &w) == TL_OK);
  CHECK(tl_writer_add(w, "w", TL_F32, 1, shape, big, sizeof big) == TL_OK);
  CHECK(tl_writer_commit(w) == TL_EINTERRUPTED);
  CHECK(strstr(tl_last_error(), "interrupted") != NULL);
  CHECK(access(out, F_OK) != 0);
  CHECK(rmdir(folder) != 0); /* the fifo, and no temporary: */
  unlink(fifo);
  CHECK(rmdir(folder) == 0);
  mkdir(folder, 0755);
  tl_set_interrupt_check(NULL, NULL);
  CHECK(tl_writer_open(out, &w) == TL_OK);
  CHECK(tl_writer_add(w, "w", TL_F32, 1, shape, big, sizeof big) == TL_OK);
  CHECK(tl_writer_commit(w) == TL_OK);
  CHECK(access(out, F_OK) == 0);
  tl_remove_temporary_files(); /* nothing unfinished: removes nothing */
  CHECK(access(out, F_OK) == 0);
  unlink(out);
  rmdir(folder);
}

static void test_convert_and_int4(void) { /* int4 through the scheme-generic calls */
  float in[3] = {1.0f, -2.5f, 65504.0f};
  unsigned short h[3];
  CHECK(tl_convert(TL_F32, in, sizeof in, TL_F16, h, sizeof h, 3) == TL_OK);
  CHECK(h[0] == 0x3C00 && h[1] == 0xC100 && h[2] == 0x7BFF);
  CHECK(tl_convert(TL_C64, in, 8, TL_F32, h, 4, 1) == TL_EUNSUPPORTED);
  tl_file* f = NULL;
  CHECK(tl_open(data_path("hf/tinyllm_int4_layout.safetensors"), &f) == TL_OK);
  if (!f) return;
  size_t count = 0;
  tl_quantized_info qw;
  CHECK(tl_quantized_count(f, &count) == TL_OK && count == 1);
  CHECK(tl_quantized_at(f, 0, &qw) == TL_OK);
  CHECK(strcmp(qw.name, "w") == 0 && strcmp(qw.scheme, "int4-g8-sym") == 0);
  CHECK(qw.rank == 2 && qw.shape[0] == 4 && qw.shape[1] == 16 && qw.blocksize == 8);
  float out[64];
  CHECK(tl_quantized_read(f, "w", 0, 64, TL_F32, out, sizeof out) == TL_OK);
  /* Element (0, 0): low nibble of byte 0 times scale 0 (F16 at w.scales[0]). */
  size_t qi, si;
  struct tl_tensor_info qinfo, sinfo;
  CHECK(tl_tensor_find(f, "w.qweight", &qi) == TL_OK && tl_tensor_info(f, qi, &qinfo) == TL_OK);
  CHECK(tl_tensor_find(f, "w.scales", &si) == TL_OK && tl_tensor_info(f, si, &sinfo) == TL_OK);
  int nib = ((const unsigned char*)qinfo.data)[0] & 15;
  if (nib >= 8) nib -= 16;
  float scale;
  CHECK(tl_convert(TL_F16, sinfo.data, 2, TL_F32, &scale, 4, 1) == TL_OK);
  CHECK(out[0] == (float)nib * scale);
  CHECK(tl_quantized_read(f, "nope", 0, 1, TL_F32, out, 4) == TL_ENOTFOUND);
  CHECK(tl_quantized_read(f, "w", 60, 8, TL_F32, out, 32) == TL_EINVAL); /* past the end */
  tl_close(f);
}

static long read_all(const char* path, unsigned char* buf, long cap) {
  FILE* fp = fopen(path, "rb");
  if (!fp) return -1;
  long n = (long)fread(buf, 1, (size_t)cap, fp);
  fclose(fp);
  return n;
}

static void test_bnb(const char* dir) {
  static unsigned char got[65536], want[65536];
  char in_path[4096], out_path[4096], deq_path[4096], golden[4096];
  tl_file* q = NULL;
  tl_file* e = NULL;
  snprintf(golden, sizeof golden, "%s", data_path("bnb/nf4_bs64_f16_64x96_nested.safetensors"));
  CHECK(tl_open(golden, &q) == TL_OK);
  CHECK(tl_open(data_path("bnb/nf4_bs64_f16_64x96_nested.expected.safetensors"), &e) == TL_OK);
  if (!q || !e) return;
  size_t count = 0;
  CHECK(tl_quantized_count(q, &count) == TL_OK && count == 1);
  tl_quantized_info info;
  CHECK(tl_quantized_at(q, 0, &info) == TL_OK);
  CHECK(strcmp(info.name, "model.layers.0.mlp.down_proj.weight") == 0);
  CHECK(strcmp(info.scheme, "nf4") == 0 && info.dtype == TL_F16 && info.blocksize == 64 &&
        info.nested == 1);
  CHECK(info.rank == 2 && info.shape[0] == 64 && info.shape[1] == 96);
  CHECK(tl_quantized_at(q, 1, &info) == TL_ENOTFOUND);
  /* Dequantized bit for bit as bnb does, whole and from an odd element on. */
  size_t di;
  struct tl_tensor_info dinfo;
  CHECK(tl_tensor_find(e, "dequant", &di) == TL_OK && tl_tensor_info(e, di, &dinfo) == TL_OK);
  CHECK(tl_tensor_read(e, di, want, (size_t)dinfo.byte_size) == TL_OK);
  CHECK(tl_quantized_read(q, info.name, 0, 6144, TL_F16, got, 6144 * 2) == TL_OK);
  CHECK(memcmp(got, want, 6144 * 2) == 0);
  CHECK(tl_quantized_read(q, "model.layers.0.mlp.down_proj.weight", 101, 500, TL_F16, got, 1000) ==
        TL_OK);
  CHECK(memcmp(got, want + 202, 1000) == 0);
  CHECK(tl_quantized_read(q, "model.layers.0.mlp.down_proj.weight", 6000, 145, TL_F16, got, 290) ==
        TL_EINVAL);
  CHECK(tl_quantized_read(q, "nope", 0, 1, TL_F32, got, 4) == TL_ENOTFOUND);

  /* Quantizing the golden's input gives the golden file; dequantizing restores F16 [64, 96]. */
  size_t ii;
  struct tl_tensor_info iinfo;
  CHECK(tl_tensor_find(e, "input", &ii) == TL_OK && tl_tensor_info(e, ii, &iinfo) == TL_OK);
  snprintf(in_path, sizeof in_path, "%s/bnb_in.safetensors", dir);
  snprintf(out_path, sizeof out_path, "%s/bnb_q.safetensors", dir);
  snprintf(deq_path, sizeof deq_path, "%s/bnb_d.safetensors", dir);
  tl_writer* w = NULL;
  CHECK(tl_writer_open(in_path, &w) == TL_OK);
  if (w) {
    CHECK(tl_writer_set_metadata(w, "format", "pt") == TL_OK);
    CHECK(tl_writer_add(w, "model.layers.0.mlp.down_proj.weight", TL_F16, 2, iinfo.shape,
                        iinfo.data, (size_t)iinfo.byte_size) == TL_OK);
    CHECK(tl_writer_commit(w) == TL_OK);
  }
  CHECK(tl_quantize_file(in_path, out_path, "nf4", 64, 1, NULL, NULL) == TL_OK);
  long n_got = read_all(out_path, got, sizeof got), n_want = read_all(golden, want, sizeof want);
  CHECK(n_got > 0 && n_got == n_want && memcmp(got, want, (size_t)n_got) == 0);
  CHECK(tl_dequantize_file(out_path, deq_path, -1) == TL_OK);
  tl_file* d = NULL;
  CHECK(tl_open(deq_path, &d) == TL_OK);
  if (d) {
    size_t k;
    struct tl_tensor_info kinfo;
    CHECK(tl_tensor_find(d, "model.layers.0.mlp.down_proj.weight", &k) == TL_OK &&
          tl_tensor_info(d, k, &kinfo) == TL_OK);
    CHECK(kinfo.dtype == TL_F16 && kinfo.rank == 2 && kinfo.shape[1] == 96);
    CHECK(memcmp(kinfo.data, dinfo.data, (size_t)dinfo.byte_size) == 0);
    tl_close(d);
  }
  CHECK(tl_quantize_file(in_path, out_path, "nf4", 48, 0, NULL, NULL) == TL_EINVAL);
  CHECK(tl_quantize_file(in_path, out_path, "q3", 0, 0, NULL, NULL) == TL_EUNSUPPORTED);
  CHECK(tl_dequantize_file(out_path, deq_path, TL_I32) == TL_EINVAL);

  /* The options struct: every option (storage included), progress, and struct_size checks. */
  {
    tl_quantize_options o;
    uint64_t last_done[2] = {0, 0};
    tl_quantize_options_init(&o);
    CHECK(o.struct_size == sizeof o && o.storage == TL_U8 && o.blocksize == 0 && o.scheme == NULL);
    CHECK(tl_quantize_file_with(in_path, out_path, &o) == TL_EINVAL); /* no scheme */
    o.scheme = "nf4";
    o.nested = 1;
    o.storage = TL_BF16;
    o.progress = record_progress;
    o.progress_user = last_done;
    CHECK(tl_quantize_file_with(in_path, out_path, &o) == TL_OK);
    CHECK(last_done[1] > 0 && last_done[0] == last_done[1]);
    tl_file* s = NULL;
    CHECK(tl_open(out_path, &s) == TL_OK);
    if (s) {
      size_t k;
      struct tl_tensor_info sinfo;
      CHECK(tl_tensor_find(s, "model.layers.0.mlp.down_proj.weight", &k) == TL_OK &&
            tl_tensor_info(s, k, &sinfo) == TL_OK);
      CHECK(sinfo.dtype == TL_BF16); /* packed codes stored as BF16 (quant_storage) */
      tl_close(s);
    }
    /* An option the scheme does not have: refused with the CLI's message. */
    o.scheme = "int8";
    CHECK(tl_quantize_file_with(in_path, out_path, &o) == TL_EINVAL);
    CHECK(strstr(tl_last_error(), "nested is an option of nf4, fp4, not of int8") != NULL);
    o.scheme = "nf4";
    o.struct_size = sizeof o + 8; /* from a newer tlio.h: refused, not half-understood */
    CHECK(tl_quantize_file_with(in_path, out_path, &o) == TL_EINVAL);
    CHECK(strstr(tl_last_error(), "struct_size") != NULL);
    o.struct_size = 4;
    CHECK(tl_quantize_file_with(in_path, out_path, &o) == TL_EINVAL);
  }
  tl_close(q);
  tl_close(e);

  /* A malformed bnb weight: the file opens (reader rules hold), its quantized weights do not. */
  tl_file* bad = NULL;
  CHECK(tl_open(data_path("bnb_bad/bnb003_quant_map.safetensors"), &bad) == TL_OK);
  if (bad) {
    CHECK(tl_quantized_count(bad, &count) == TL_EFORMAT);
    CHECK(strstr(tl_last_error(), "BNB-003") != NULL);
    tl_close(bad);
  }
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : ".";
  test_read(0);
  test_read(TL_OPEN_PREAD);
  test_read(TL_OPEN_PRIVATE);
  test_read(TL_OPEN_DIRECT);
  test_errors();
  test_remote_locations();
  test_write(dir);
  test_output_safety(dir);
  test_import(dir);
  test_convert_and_int4();
  test_bnb(dir);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
