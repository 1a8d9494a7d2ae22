/* The C API on the Hub's quantized formats (C99): FP8 blocks, GPTQ, AWQ, gpt-oss MXFP4,
 * compressed-tensors NVFP4 and pack-quantized int4 found and read
 * through the scheme-generic calls, with values known by hand (tests/data/hub/make_hub_files.py);
 * a form tlio does not decode refused. Bit-exactness against an independent reference is
 * python/tests/test_hub_quant.py's. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c_check.h"
#include "tlio/tlio.h"

static tl_file* open_hub(const char* name, tl_quantized_info* info) {
  char path[512];
  tl_file* f = NULL;
  size_t count = 0;
  snprintf(path, sizeof path, "%s/hub/%s", TLIO_TEST_DATA, name);
  CHECK(tl_open(path, &f) == TL_OK);
  if (!f) return NULL;
  CHECK(tl_quantized_count(f, &count) == TL_OK && count == 1);
  CHECK(tl_quantized_at(f, 0, info) == TL_OK);
  return f;
}

/* A folder holding fp8_block.safetensors with a config.json whose quantization_config says
 * 2x4 blocks: the folder's config reaches the comparison, and decides the block size. */
static void check_folder_config(void) {
  char dir[] = "/tmp/tlio-hub-capi-XXXXXX", path[600], src[512];
  static const char config[] =
      "{\"architectures\": [\"X\"], \"model_type\": \"x\", \"quantization_config\": "
      "{\"quant_method\": \"fp8\", \"weight_block_size\": [2, 4]}}";
  char bytes[256];
  size_t n;
  FILE* in;
  FILE* out;
  tl_model* m = NULL;
  const tl_file* file;
  tl_compare_options o;
  tl_comparison* c = NULL;
  tl_tensor_comparison t;
  CHECK(mkdtemp(dir) != NULL);
  snprintf(src, sizeof src, "%s/hub/fp8_block.safetensors", TLIO_TEST_DATA);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  in = fopen(src, "rb");
  out = fopen(path, "wb");
  CHECK(in && out);
  if (!in || !out) return;
  n = fread(bytes, 1, sizeof bytes, in);
  CHECK(fwrite(bytes, 1, n, out) == n);
  fclose(in);
  fclose(out);
  snprintf(path, sizeof path, "%s/config.json", dir);
  out = fopen(path, "w");
  CHECK(out && fputs(config, out) >= 0);
  if (out) fclose(out);
  CHECK(tl_model_open(dir, &m) == TL_OK);
  if (!m) return;
  CHECK(strstr(tl_model_quantization_config(m), "\"weight_block_size\": [2, 4]") != NULL);
  file = tl_model_file(m, 0);
  tl_compare_options_init(&o);
  CHECK(tl_compare_files(file, file, &o, &c) == TL_OK); /* the file alone: 128x128 */
  CHECK(c && tl_comparison_at(c, 0, &t) == TL_OK && strcmp(t.a_dtype, "fp8-block128x128") == 0);
  tl_comparison_free(c);
  o.quantization_config_a = o.quantization_config_b = tl_model_quantization_config(m);
  CHECK(tl_compare_files(file, file, &o, &c) == TL_OK && tl_comparison_equal(c));
  CHECK(c && tl_comparison_at(c, 0, &t) == TL_OK && strcmp(t.a_dtype, "fp8-block2x4") == 0);
  tl_comparison_free(c);
  o.quantization_config_a = "{\"quant_method\": \"fp8\", \"weight_block_size\": [1, 1]}";
  c = NULL;
  CHECK(tl_compare_files(file, file, &o, &c) == TL_EFORMAT &&
        c == NULL); /* [1, 1] needs a 2x3 grid */
  tl_model_close(m);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/config.json", dir);
  unlink(path);
  rmdir(dir);
}

int main(int argc, char** argv) {
  tl_quantized_info q;
  float v[64];
  uint16_t bf16[6];
  size_t i;
  (void)argc;
  (void)argv;

  tl_file* f = open_hub("fp8_block.safetensors", &q);
  if (!f) return 1;
  CHECK(strcmp(q.name, "w.weight") == 0 && strcmp(q.scheme, "fp8-block128x128") == 0);
  CHECK(q.rank == 2 && q.shape[0] == 2 && q.shape[1] == 3 && q.dtype == TL_BF16);
  CHECK(tl_quantized_read(f, "w.weight", 0, 6, TL_F32, v, 6 * sizeof(float)) == TL_OK);
  CHECK(v[0] == 224.0f && v[1] == 0.5f && v[2] == -224.0f && v[3] == 0.0f);
  CHECK(v[4] == 0.0f && signbit(v[4]) && v[5] == 1.0f / 1024);
  CHECK(tl_quantized_read(f, "w.weight", 0, 6, TL_BF16, bf16, sizeof bf16) == TL_OK);
  CHECK(bf16[0] == 0x4360 && bf16[1] == 0x3F00 && bf16[2] == 0xC360 && bf16[4] == 0x8000);
  CHECK(tl_quantized_read(f, "w.weight", 4, 2, TL_F32, v, 2 * sizeof(float)) == TL_OK);
  CHECK(v[1] == 1.0f / 1024); /* a range from the middle */
  tl_close(f);
  check_folder_config();

  f = open_hub("awq_order.safetensors", &q);
  if (!f) return 1;
  CHECK(strcmp(q.name, "l.weight") == 0 && strcmp(q.scheme, "awq-4bit") == 0 && q.dtype == TL_F16);
  CHECK(tl_quantized_read(f, "l.weight", 0, 64, TL_F32, v, sizeof v) == TL_OK);
  for (i = 0; i < 64; ++i) CHECK(v[i] == (float)(i / 8)); /* row n is n: the order undone */
  tl_close(f);

  f = open_hub("gptq_sym.safetensors", &q);
  if (!f) return 1;
  CHECK(strcmp(q.scheme, "gptq-4bit") == 0 && q.shape[0] == 8 && q.shape[1] == 8);
  CHECK(tl_quantized_read(f, "l.weight", 0, 64, TL_F32, v, sizeof v) == TL_OK);
  for (i = 0; i < 64; ++i) CHECK(v[i] == 0.25f); /* 0.25 * (9 - (7 + 1)) */
  tl_close(f);

  f = open_hub("gpt_oss_mxfp4.safetensors", &q);
  if (!f) return 1;
  CHECK(strcmp(q.name, "e.gate_up_proj") == 0 && strcmp(q.scheme, "mxfp4") == 0 &&
        q.dtype == TL_BF16);
  CHECK(q.rank == 3 && q.shape[0] == 1 && q.shape[1] == 32 && q.shape[2] == 2); /* [E, in, out] */
  CHECK(tl_quantized_read(f, "e.gate_up_proj", 0, 64, TL_F32, v, sizeof v) == TL_OK);
  for (i = 0; i < 64; i += 4)
    CHECK(v[i] == 1 && v[i + 1] == 0 && signbit(v[i + 1]) && v[i + 2] == 2 && v[i + 3] == -3);
  tl_close(f);

  f = open_hub("ct_nvfp4.safetensors", &q);
  if (!f) return 1;
  CHECK(strcmp(q.name, "l.weight") == 0 && strcmp(q.scheme, "nvfp4") == 0 && q.shape[1] == 16);
  CHECK(tl_quantized_read(f, "l.weight", 0, 16, TL_F32, v, 16 * sizeof(float)) == TL_OK);
  CHECK(v[0] == 0 && signbit(v[0]) && v[1] == 0 && !signbit(v[1])); /* code 8 is -0 here */
  for (i = 2; i < 16; i += 2) CHECK(v[i] == 2 && v[i + 1] == 12);
  tl_close(f);

  f = open_hub("ct_pack_int4.safetensors", &q);
  if (!f) return 1;
  CHECK(strcmp(q.scheme, "ct-int4-channel") == 0 && q.dtype == TL_BF16 && q.shape[0] == 2 &&
        q.shape[1] == 32);
  CHECK(tl_quantized_read(f, "l.weight", 0, 64, TL_F32, v, sizeof v) == TL_OK);
  for (i = 0; i < 64; ++i) CHECK(v[i] == 0.5f * ((float)(i % 16) - 8));
  tl_close(f);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
