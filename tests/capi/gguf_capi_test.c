/* The C API's GGUF functions from C (C99): listing, metadata as text, reading values in ranges
 * and dtypes, slices, errors, tl_import_gguf read back with tl_open, the export compared with its
 * folder, and tl_import_gguf_model. Decoding itself is checked against ggml in
 * tests/gguf/ggml_test.cpp and python/tests/test_gguf_import.py. */
#define _POSIX_C_SOURCE 200809L
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c_check.h"
#include "tlio/tlio.h"

/* Removes the folder tl_import_gguf_model wrote into `dir`: each file it writes must be there. */
static void remove_imported_folder(const char* dir) {
  const char* files[] = {"model.safetensors", "config.json", "generation_config.json",
                         "tokenizer.json", "tokenizer_config.json"};
  char file[4200];
  size_t k;
  for (k = 0; k < sizeof files / sizeof files[0]; ++k) {
    snprintf(file, sizeof file, "%s/%s", dir, files[k]);
    CHECK(unlink(file) == 0);
  }
  rmdir(dir);
}

/* A Q4_0 GGUF transcoded to MLX's layout: every weight carried, its values those the GGUF decodes
 * (but a -0 may be +0); a layout tlio does not write refused. */
static void check_transcode(const char* scratch) {
  char gguf_path[4096], dir[4096], file[4200];
  tl_transcode_result r;
  tl_file* f = NULL;
  tl_gguf* g = NULL;
  tl_gguf_tensor t;
  tl_quantized_info info;
  size_t i, k, found = 0, count = 0;
  float want[32 * 64], got[32 * 64];
  snprintf(gguf_path, sizeof gguf_path, "%s/transcode_capi_%d.gguf", scratch, (int)getpid());
  snprintf(dir, sizeof dir, "%s/transcode_capi_%d", scratch, (int)getpid());
  /* --pure: every weight Q4_0 (llama-quantize's Q4_0 would give output.weight more bits). */
  CHECK(tl_export_gguf_with(TLIO_TEST_DATA "/gguf/tiny_llama", gguf_path, "Q4_0", TL_GGUF_PURE, 0,
                            NULL, NULL) == TL_OK);
  CHECK(tl_export_gguf_with(TLIO_TEST_DATA "/gguf/tiny_llama", gguf_path, "Q4_0", 8u, 0, NULL,
                            NULL) == TL_EINVAL);
  CHECK(tl_transcode(gguf_path, dir, "mlx", 0, TL_BF16, NULL, &r) == TL_OK);
  CHECK(r.carried == 9 && r.requantized == 0 && r.plain == 3 && r.max_rmse == 0);
  snprintf(file, sizeof file, "%s/model.safetensors", dir);
  CHECK(tl_open(file, &f) == TL_OK && tl_quantized_count(f, &count) == TL_OK && count == 9);
  for (k = 0; f && k < count; ++k) {
    CHECK(tl_quantized_at(f, k, &info) == TL_OK);
    if (strcmp(info.name, "model.layers.0.mlp.up_proj.weight") != 0) continue;
    ++found;
    CHECK(strcmp(info.scheme, "mlx-affine-4bit-g32") == 0);
    CHECK(tl_quantized_read(f, info.name, 0, 32 * 64, TL_F32, got, sizeof got) == TL_OK);
  }
  CHECK(found == 1);
  CHECK(tl_gguf_open(gguf_path, NULL, &g) == TL_OK &&
        tl_gguf_find(g, "blk.0.ffn_up.weight", &i) == TL_OK);
  CHECK(tl_gguf_read(g, i, 0, 32 * 64, TL_F32, want, sizeof want) == TL_OK);
  for (k = 0, found = 0; k < 32 * 64; ++k)
    found += got[k] == want[k] && (want[k] == 0.0f || memcmp(&got[k], &want[k], 4) == 0);
  CHECK(found == 32 * 64);
  tl_gguf_close(g);
  tl_close(f);
  remove_imported_folder(dir);
  CHECK(tl_transcode(gguf_path, dir, "onnx", 0, TL_BF16, NULL, NULL) == TL_EINVAL);
  CHECK(strstr(tl_last_error(), "onnx") != NULL && access(dir, F_OK) != 0);
  unlink(gguf_path);
  { /* The other way: MLX's mxfp4 folder into ggml's MXFP4 blocks. */
    const char* files[] = {"model.safetensors", "config.json", "tokenizer.json",
                           "tokenizer_config.json"};
    tl_quantize_options q;
    tl_quantize_options_init(&q);
    q.scheme = "mlx-mxfp4";
    CHECK(tl_quantize_folder(TLIO_TEST_DATA "/gguf/tiny_llama", dir, &q, 0) == TL_OK);
    CHECK(tl_transcode(dir, gguf_path, "gguf", 0, TL_F16, NULL, &r) == TL_OK);
    CHECK(r.carried == 9 && r.requantized == 0 && r.plain == 3 && r.zero_signs == 0);
    CHECK(tl_gguf_open(gguf_path, NULL, &g) == TL_OK &&
          tl_gguf_find(g, "blk.0.ffn_up.weight", &i) == TL_OK);
    CHECK(g && tl_gguf_tensor_at(g, i, &t) == TL_OK && strcmp(t.type_name, "MXFP4") == 0);
    tl_gguf_close(g);
    unlink(gguf_path);
    /* And as compressed-tensors' layout: the Linear weights carried, the embedding as BF16. */
    snprintf(file, sizeof file, "%s-ct", dir);
    CHECK(tl_transcode(dir, file, "compressed-tensors", 0, TL_BF16, NULL, &r) == TL_OK);
    CHECK(r.carried == 8 && r.requantized == 0 && r.plain == 4 && r.zero_signs == 0);
    for (k = 0; k < sizeof files / sizeof files[0]; ++k) {
      char part[4300];
      snprintf(part, sizeof part, "%s/%s", file, files[k]);
      unlink(part);
    }
    rmdir(file);
    CHECK(tl_transcode(TLIO_TEST_DATA "/gguf/two_tensors.gguf", gguf_path, "gguf", 0, TL_F16, NULL,
                       NULL) == TL_EUNSUPPORTED); /* a GGUF is not a folder to export */
    CHECK(tl_transcode(dir, gguf_path, "gguf", 0, TL_I32, NULL, NULL) == TL_EINVAL);
    for (k = 0; k < sizeof files / sizeof files[0]; ++k) {
      snprintf(file, sizeof file, "%s/%s", dir, files[k]);
      unlink(file);
    }
    rmdir(dir);
  }
}

/* ggml's codebook types (IQ1_S .. IQ3_S) read as libggml's dequantize_row_* decodes them
 * (tests/data/gguf/codebooks: the values it gave, kept as F32). */
static void check_codebooks(void) {
  static const char* names[] = {"iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m"};
  tl_gguf* g = NULL;
  tl_file* want = NULL;
  tl_gguf_tensor t;
  float got[512], expected[512];
  size_t k, i = 0, j = 0;
  CHECK(tl_gguf_open(TLIO_TEST_DATA "/gguf/codebooks/codebooks.gguf", NULL, &g) == TL_OK);
  CHECK(tl_open(TLIO_TEST_DATA "/gguf/codebooks/codebooks.expected.safetensors", &want) == TL_OK);
  for (k = 0; g && want && k < sizeof names / sizeof names[0]; ++k) {
    CHECK(tl_gguf_find(g, names[k], &i) == TL_OK && tl_gguf_tensor_at(g, i, &t) == TL_OK);
    CHECK(t.decodes == 1 && t.elements == 512);
    CHECK(tl_gguf_read(g, i, 0, 512, TL_F32, got, sizeof got) == TL_OK);
    CHECK(tl_tensor_find(want, names[k], &j) == TL_OK &&
          tl_tensor_read(want, j, expected, sizeof expected) == TL_OK);
    CHECK(memcmp(got, expected, sizeof got) == 0);
  }
  tl_close(want);
  tl_gguf_close(g);
}

int main(int argc, char** argv) {
  const char* scratch = argc > 1 ? argv[1] : ".";
  tl_gguf* g = NULL;
  tl_gguf_tensor t;
  size_t i = 99;
  const char* text = NULL;
  float all[96], part[10];
  uint16_t half[4];
  char out[4096];
  uint64_t written = 0;
  tl_file* f = NULL;
  struct tl_tensor_info info;

  CHECK(tl_gguf_open(TLIO_TEST_DATA "/gguf/two_tensors.gguf", NULL, &g) == TL_OK);
  if (!g) return 1;
  CHECK(tl_gguf_tensor_count(g) == 2);
  memset(&t, 0, sizeof t);
  CHECK(tl_gguf_tensor_at(g, 1, &t) == TL_OK && t.name && t.type_name);
  if (!t.name || !t.type_name) return 1;
  CHECK(strcmp(t.name, "q") == 0 && t.ggml_type == 8 && strcmp(t.type_name, "Q8_0") == 0 &&
        t.decodes == 1);
  CHECK(t.rank == 2 && t.shape[0] == 3 && t.shape[1] == 32 && t.elements == 96 && t.bytes == 102);
  CHECK(tl_gguf_tensor_at(g, 2, &t) == TL_EINVAL);
  CHECK(tl_gguf_find(g, "q", &i) == TL_OK && i == 1);
  CHECK(tl_gguf_find(g, "nosuch", &i) == TL_ENOTFOUND);

  CHECK(tl_gguf_metadata(g, "general.architecture", &text) == TL_OK && strcmp(text, "llama") == 0);
  CHECK(tl_gguf_metadata(g, "llama.block_count", &text) == TL_OK && strcmp(text, "2") == 0);
  CHECK(tl_gguf_metadata(g, "tokenizer.ggml.tokens", &text) == TL_EUNSUPPORTED);
  CHECK(tl_gguf_metadata(g, "nosuch", &text) == TL_ENOTFOUND);

  /* A range starting inside a block reads what the whole read has there. */
  CHECK(tl_gguf_read(g, 1, 0, 96, TL_F32, all, sizeof all) == TL_OK);
  CHECK(tl_gguf_read(g, 1, 37, 10, TL_F32, part, sizeof part) == TL_OK);
  CHECK(memcmp(part, all + 37, sizeof part) == 0);
  CHECK(tl_gguf_read(g, 1, 90, 4, TL_BF16, half, sizeof half) == TL_OK);
  {
    uint32_t bits;
    memcpy(&bits, &all[90], 4);
    CHECK(half[0] == (uint16_t)((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16)); /* nearest even */
  }
  CHECK(tl_gguf_read(g, 1, 90, 7, TL_F32, all, sizeof all) == TL_EINVAL); /* past the end */
  CHECK(tl_gguf_read(g, 1, 0, 4, TL_F32, all, 15) == TL_EINVAL);          /* wrong size */
  CHECK(tl_gguf_read(g, 1, 0, 4, TL_F4, all, 2) == TL_EUNSUPPORTED);      /* sub-byte */
  tl_gguf_close(g);

  CHECK(tl_gguf_open(TLIO_TEST_DATA "/gguf/truncated.gguf", NULL, &g) == TL_EFORMAT && g == NULL);
  CHECK(strcmp(tl_last_error_rule(), "gguf") == 0);

  snprintf(out, sizeof out, "%s/gguf_capi_%d.safetensors", scratch, (int)getpid());
  CHECK(tl_import_gguf(TLIO_TEST_DATA "/gguf/two_tensors.gguf", out, TL_F16, NULL, &written) ==
        TL_OK);
  CHECK(written == 2);
  CHECK(tl_open(out, &f) == TL_OK);
  if (f) {
    CHECK(tl_tensor_find(f, "q", &i) == TL_OK);
    CHECK(tl_tensor_info(f, i, &info) == TL_OK && info.dtype == TL_F16 && info.rank == 2);
    CHECK(tl_metadata_get(f, "llama.block_count") != NULL &&
          strcmp(tl_metadata_get(f, "llama.block_count"), "2") == 0);
    tl_close(f);
  }
  unlink(out);
  CHECK(tl_import_gguf(TLIO_TEST_DATA "/gguf/two_tensors.gguf", out, TL_F8_E4M3, NULL, NULL) ==
        TL_EINVAL);
  CHECK(access(out, F_OK) != 0);

  /* A Hugging Face folder to GGUF, read back. */
  snprintf(out, sizeof out, "%s/gguf_capi_%d.gguf", scratch, (int)getpid());
  written = 0;
  CHECK(tl_export_gguf(TLIO_TEST_DATA "/gguf/tiny_llama", out, "Q8_0", NULL, &written) == TL_OK &&
        written == 12);
  /* Requantized to Q4_0: its Q8_0 weights only with allow_requantize; a folder is not a GGUF. */
  {
    char q4[4200];
    snprintf(q4, sizeof q4, "%s.q4_0.gguf", out);
    CHECK(tl_requantize_gguf(out, q4, "Q4_0", 0, NULL, NULL) == TL_EINVAL &&
          strstr(tl_last_error(), "allow_requantize") != NULL && access(q4, F_OK) != 0);
    written = 0;
    CHECK(tl_requantize_gguf(out, q4, "Q4_0", 1, NULL, &written) == TL_OK && written == 12);
    CHECK(tl_gguf_open(q4, NULL, &g) == TL_OK);
    if (g) {
      CHECK(tl_gguf_find(g, "blk.0.attn_q.weight", &i) == TL_OK &&
            tl_gguf_tensor_at(g, i, &t) == TL_OK && strcmp(t.type_name, "Q4_0") == 0);
      tl_gguf_close(g);
    }
    CHECK(tl_requantize_gguf(TLIO_TEST_DATA "/gguf/tiny_llama", q4, "Q4_0", 1, NULL, NULL) ==
          TL_EINVAL);
    unlink(q4);
  }
  CHECK(tl_gguf_open(out, NULL, &g) == TL_OK);
  if (g) {
    CHECK(tl_gguf_find(g, "blk.0.attn_q.weight", &i) == TL_OK &&
          tl_gguf_tensor_at(g, i, &t) == TL_OK);
    CHECK(strcmp(t.type_name, "Q8_0") == 0 && t.rank == 2 && t.shape[0] == 32 && t.shape[1] == 32);
    CHECK(tl_gguf_metadata(g, "general.architecture", &text) == TL_OK &&
          strcmp(text, "llama") == 0);
    CHECK(tl_gguf_metadata(g, "tokenizer.ggml.pre", &text) == TL_OK &&
          strcmp(text, "llama-bpe") == 0);
    { /* Rows 3..5, columns 5..20 (inside a block): what reads of those rows' ranges give. */
      const uint64_t starts[2] = {3, 5}, stops[2] = {6, 20}, bad[2] = {3, 33};
      float cut[3 * 15], row[15];
      size_t r;
      CHECK(tl_gguf_read_slice(g, i, 2, starts, stops, TL_F32, cut, sizeof cut) == TL_OK);
      for (r = 0; r < 3; ++r) {
        CHECK(tl_gguf_read(g, i, (3 + r) * 32 + 5, 15, TL_F32, row, sizeof row) == TL_OK);
        CHECK(memcmp(cut + r * 15, row, sizeof row) == 0);
      }
      CHECK(tl_gguf_read_slice(g, i, 2, starts, bad, TL_F32, cut, sizeof cut) ==
            TL_EINVAL); /* past 32 */
      CHECK(tl_gguf_read_slice(g, i, 2, starts, stops, TL_F32, cut, sizeof cut - 4) == TL_EINVAL);
      CHECK(tl_gguf_read_slice(g, i, 2, NULL, stops, TL_F32, cut, sizeof cut) == TL_EINVAL);
    }
    tl_gguf_close(g);
  }
  /* Compared with its folder (as tlio diff does): Q8_0 differs, names pair across formats. */
  {
    tl_comparison* cmp = NULL;
    tl_tensor_comparison tc;
    size_t k, found = 0;
    CHECK(tl_compare_locations(out, TLIO_TEST_DATA "/gguf/tiny_llama", NULL, NULL, &cmp) == TL_OK);
    CHECK(cmp && !tl_comparison_equal(cmp) && tl_comparison_count(cmp) == 12);
    CHECK(tl_comparison_only_count(cmp, 0) == 0 && tl_comparison_only_count(cmp, 1) == 0);
    for (k = 0; cmp && k < tl_comparison_count(cmp); ++k) {
      CHECK(tl_comparison_at(cmp, k, &tc) == TL_OK && tc.compared);
      if (strcmp(tc.name, "blk.0.attn_q.weight") == 0) {
        ++found;
        CHECK(strcmp(tl_comparison_b_name(cmp, k), "model.layers.0.self_attn.q_proj.weight") == 0);
        CHECK(strcmp(tc.a_dtype, "Q8_0") == 0 && tc.max_abs > 0 && tc.cosine > 0.99);
      }
    }
    CHECK(found == 1 && tl_comparison_b_name(cmp, 99) == NULL);
    tl_comparison_free(cmp);
    CHECK(tl_compare_locations(out, TLIO_TEST_DATA "/no/such/dir", NULL, NULL, &cmp) != TL_OK &&
          cmp == NULL);
  }
  unlink(out);
  /* A mix: output.weight gets more bits (Q8_0: rows of 32 are not whole Q6_K super-blocks). */
  CHECK(tl_export_gguf(TLIO_TEST_DATA "/gguf/tiny_llama", out, "q4_k_m", NULL, &written) == TL_OK &&
        written == 12);
  CHECK(tl_gguf_open(out, NULL, &g) == TL_OK);
  if (g) {
    CHECK(tl_gguf_find(g, "output.weight", &i) == TL_OK && tl_gguf_tensor_at(g, i, &t) == TL_OK);
    CHECK(strcmp(t.type_name, "Q8_0") == 0);
    CHECK(tl_gguf_find(g, "blk.0.ffn_up.weight", &i) == TL_OK &&
          tl_gguf_tensor_at(g, i, &t) == TL_OK);
    CHECK(strcmp(t.type_name, "Q5_0") == 0); /* Q4_K falls back */
    CHECK(tl_gguf_metadata(g, "general.file_type", &text) == TL_OK && strcmp(text, "15") == 0);
    tl_gguf_close(g);
  }
  unlink(out);
  CHECK(tl_export_gguf(TLIO_TEST_DATA "/gguf/tiny_llama", out, "IQ2_XXS", NULL, NULL) == TL_EINVAL);
  CHECK(tl_export_gguf(TLIO_TEST_DATA "/gguf", out, NULL, NULL, NULL) !=
        TL_OK); /* no config.json */
  CHECK(access(out, F_OK) != 0);

  /* Back to a Hugging Face folder: the F32 export of the BF16 folder, read back as BF16 (Q/K rows
   * put back), equals the original. */
  {
    char dir[4096];
    tl_comparison* cmp = NULL;
    snprintf(dir, sizeof dir, "%s/gguf_capi_model_%d", scratch, (int)getpid());
    CHECK(tl_export_gguf(TLIO_TEST_DATA "/gguf/tiny_llama", out, "F32", NULL, NULL) == TL_OK);
    CHECK(tl_import_gguf_model(out, dir, TL_BF16, NULL, &written) == TL_OK && written == 12);
    CHECK(tl_compare_locations(dir, TLIO_TEST_DATA "/gguf/tiny_llama", NULL, NULL, &cmp) == TL_OK);
    CHECK(cmp && tl_comparison_equal(cmp) && tl_comparison_count(cmp) == 12 &&
          tl_comparison_b_name(cmp, 0) == NULL);
    tl_comparison_free(cmp);
    remove_imported_folder(dir);
    unlink(out);
    CHECK(tl_import_gguf_model(TLIO_TEST_DATA "/gguf/two_tensors.gguf", dir, TL_BF16, NULL, NULL) ==
          TL_EFORMAT);
    CHECK(access(dir, F_OK) != 0);
  }
  /* In llama.cpp's split files: several of at most 50,000 tensor bytes, the first loads (its
   * split keys); all fitting, one file named as asked. */
  {
    char pattern[4200];
    glob_t found;
    size_t k;
    snprintf(out, sizeof out, "%s/gguf_capi_split_%d.gguf", scratch, (int)getpid());
    CHECK(tl_export_gguf_split(TLIO_TEST_DATA "/gguf/tiny_llama", out, "F32", 50000, NULL,
                               &written) == TL_OK &&
          written == 12);
    CHECK(access(out, F_OK) != 0);
    snprintf(pattern, sizeof pattern, "%s/gguf_capi_split_%d-000*-of-000*.gguf", scratch,
             (int)getpid());
    CHECK(glob(pattern, 0, NULL, &found) == 0 && found.gl_pathc >= 3);
    if (found.gl_pathc > 0) {
      CHECK(tl_gguf_open(found.gl_pathv[0], NULL, &g) == TL_OK);
      CHECK(g && tl_gguf_metadata(g, "split.no", &text) == TL_OK && strcmp(text, "0") == 0);
      CHECK(g && tl_gguf_metadata(g, "general.architecture", &text) == TL_OK);
      tl_gguf_close(g);
    }
    for (k = 0; k < found.gl_pathc; ++k) unlink(found.gl_pathv[k]);
    globfree(&found);
    CHECK(tl_export_gguf_split(TLIO_TEST_DATA "/gguf/tiny_llama", out, "F32", 1 << 30, NULL,
                               NULL) == TL_OK);
    CHECK(access(out, F_OK) == 0);
    unlink(out);
  }
  /* A mixture of experts (tiny_qwen3moe: 4 experts): each part's experts stacked into one 3-D
   * tensor, the router F32; back to a folder, the experts are their own tensors again. */
  {
    char dir[4096];
    tl_comparison* cmp = NULL;
    snprintf(out, sizeof out, "%s/gguf_capi_moe_%d.gguf", scratch, (int)getpid());
    CHECK(tl_export_gguf(TLIO_TEST_DATA "/gguf/tiny_qwen3moe", out, "Q8_0", NULL, &written) ==
              TL_OK &&
          written == 14);
    CHECK(tl_gguf_open(out, NULL, &g) == TL_OK);
    if (g) {
      CHECK(tl_gguf_metadata(g, "qwen3moe.expert_count", &text) == TL_OK && strcmp(text, "4") == 0);
      CHECK(tl_gguf_find(g, "blk.0.ffn_down_exps.weight", &i) == TL_OK &&
            tl_gguf_tensor_at(g, i, &t) == TL_OK);
      CHECK(strcmp(t.type_name, "Q8_0") == 0 && t.rank == 3 && t.shape[0] == 4 &&
            t.shape[1] == 32 && t.shape[2] == 32);
      CHECK(tl_gguf_find(g, "blk.0.ffn_gate_inp.weight", &i) == TL_OK &&
            tl_gguf_tensor_at(g, i, &t) == TL_OK && strcmp(t.type_name, "F32") == 0);
      tl_gguf_close(g);
    }
    snprintf(dir, sizeof dir, "%s/gguf_capi_moe_%d", scratch, (int)getpid());
    CHECK(tl_export_gguf(TLIO_TEST_DATA "/gguf/tiny_qwen3moe", out, "F32", NULL, NULL) == TL_OK);
    CHECK(tl_import_gguf_model(out, dir, TL_BF16, NULL, &written) == TL_OK && written == 23);
    CHECK(tl_compare_locations(dir, TLIO_TEST_DATA "/gguf/tiny_qwen3moe", NULL, NULL, &cmp) ==
          TL_OK);
    CHECK(cmp && tl_comparison_equal(cmp) && tl_comparison_count(cmp) == 23);
    tl_comparison_free(cmp);
    remove_imported_folder(dir);
    unlink(out);
    /* A mix takes experts too (llama.cpp's rules; tests/test_gguf_requantize.py checks them). */
    CHECK(tl_export_gguf(TLIO_TEST_DATA "/gguf/tiny_qwen3moe", out, "Q4_K_M", NULL, NULL) == TL_OK);
    unlink(out);
  }
  /* gpt-oss's MXFP4 experts (tiny_gptoss_mxfp4): copied as ggml's MXFP4, the rest Q8_0. */
  {
    snprintf(out, sizeof out, "%s/gguf_capi_oss_%d.gguf", scratch, (int)getpid());
    CHECK(tl_export_gguf(TLIO_TEST_DATA "/gguf/tiny_gptoss_mxfp4", out, "Q8_0", NULL, &written) ==
              TL_OK &&
          written == 22);
    CHECK(tl_gguf_open(out, NULL, &g) == TL_OK);
    if (g) {
      CHECK(tl_gguf_metadata(g, "general.architecture", &text) == TL_OK &&
            strcmp(text, "gpt-oss") == 0);
      CHECK(tl_gguf_find(g, "blk.0.ffn_up_exps.weight", &i) == TL_OK &&
            tl_gguf_tensor_at(g, i, &t) == TL_OK);
      CHECK(strcmp(t.type_name, "MXFP4") == 0 && t.rank == 3 && t.shape[0] == 4 &&
            t.shape[1] == 32 && t.shape[2] == 32);
      CHECK(tl_gguf_find(g, "blk.0.attn_q.weight", &i) == TL_OK &&
            tl_gguf_tensor_at(g, i, &t) == TL_OK && strcmp(t.type_name, "Q8_0") == 0);
      tl_gguf_close(g);
    }
    /* Back to a folder from F32: the experts put back together, MXFP4 as OpenAI's blocks. */
    {
      char dir[4096];
      tl_comparison* cmp = NULL;
      snprintf(dir, sizeof dir, "%s/gguf_capi_oss_%d", scratch, (int)getpid());
      CHECK(tl_export_gguf(TLIO_TEST_DATA "/gguf/tiny_gptoss_mxfp4", out, "F32", NULL, NULL) ==
            TL_OK);
      CHECK(tl_import_gguf_model(out, dir, TL_F32, NULL, &written) == TL_OK && written == 22);
      CHECK(tl_compare_locations(dir, TLIO_TEST_DATA "/gguf/tiny_gptoss_mxfp4", NULL, NULL, &cmp) ==
            TL_OK);
      CHECK(cmp && tl_comparison_equal(cmp));
      tl_comparison_free(cmp);
      remove_imported_folder(dir);
    }
    unlink(out);
  }
  check_transcode(scratch);
  check_codebooks();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
