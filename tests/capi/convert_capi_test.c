/* The C API's folder conversion (C99): tl_convert_folder_ex counts what the new dtype could not
 * hold, and casts a model to 8 bits only when asked to (tlio convert --cast). Values checked by
 * hand: F16 ends at 65504 and its smallest subnormal is 2^-24. The rewrites take a file or a
 * folder whatever their names say (the library asks which), and refuse what a kind cannot take. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "c_check.h"
#include "tlio/tlio.h"

/* A model folder: one projection holding values F16 overflows (7e4, -1e6) and flushes (1e-9). */
static void write_model(const char* dir) {
  static const float values[8] = {1.0f, 70000.0f, -1e6f, 1e-9f, 0.5f, 0.0f, -2.0f, 3e-5f};
  const uint64_t shape[2] = {2, 4};
  char path[700];
  tl_writer* w = NULL;
  FILE* config;
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  CHECK(tl_writer_open(path, &w) == TL_OK);
  CHECK(tl_writer_set_metadata(w, "format", "pt") == TL_OK);
  CHECK(tl_writer_add(w, "model.layers.0.mlp.up_proj.weight", TL_F32, 2, shape, values,
                      sizeof values) == TL_OK);
  CHECK(tl_writer_commit(w) == TL_OK);
  snprintf(path, sizeof path, "%s/config.json", dir);
  config = fopen(path, "w");
  CHECK(config != NULL);
  if (config) {
    fputs("{\"model_type\": \"x\", \"dtype\": \"float32\"}", config);
    fclose(config);
  }
}

/* MLX's affine mode through the scheme name (bits and group in it): a [2, 64] matrix of 0..3
 * in 2 bits and groups of 32 is exact (bias 3, scale -1: codes 3 - w), so it reads back as
 * written; the file alone names its width and group by its shapes (64 bits a group). */
static void check_mlx(const char* dir) {
  float values[128], back[128];
  const uint64_t shape[2] = {2, 64};
  char src[600], out[600], path[700];
  tl_writer* w = NULL;
  tl_file* f = NULL;
  tl_quantize_options q;
  tl_quantized_info info;
  size_t count = 0, i;
  for (i = 0; i < 128; ++i) values[i] = (float)(i % 4);
  snprintf(src, sizeof src, "%s/mlx.safetensors", dir);
  snprintf(out, sizeof out, "%s/mlx-2bit.safetensors", dir);
  CHECK(tl_writer_open(src, &w) == TL_OK);
  CHECK(tl_writer_add(w, "model.layers.0.mlp.up_proj.weight", TL_F32, 2, shape, values,
                      sizeof values) == TL_OK);
  CHECK(tl_writer_commit(w) == TL_OK);
  tl_quantize_options_init(&q);
  q.scheme = "mlx-affine-2bit-g32";
  CHECK(tl_quantize_file_with(src, out, &q) == TL_OK);
  CHECK(tl_open(out, &f) == TL_OK);
  CHECK(tl_quantized_count(f, &count) == TL_OK && count == 1);
  CHECK(tl_quantized_at(f, 0, &info) == TL_OK);
  CHECK(strcmp(info.scheme, "mlx-affine-2bit-g32") == 0);
  CHECK(tl_quantized_read(f, "model.layers.0.mlp.up_proj.weight", 0, 128, TL_F32, back,
                          sizeof back) == TL_OK);
  CHECK(memcmp(back, values, sizeof back) == 0);
  tl_close(f);
  q.scheme = "mlx-affine-7bit";
  CHECK(tl_quantize_file_with(src, out, &q) != TL_OK);
  snprintf(path, sizeof path, "%s", tl_last_error());
  CHECK(strstr(path, "mlx-affine") != NULL);
}

int main(void) {
  char dir[] = "/tmp/tlio-convert-capi-XXXXXX", src[600], out[600], file[700], file_out[700];
  tl_quantize_options q;
  uint64_t overflowed = 99, flushed = 99;
  CHECK(mkdtemp(dir) != NULL);
  snprintf(src, sizeof src, "%s/src", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  CHECK(mkdir(src, 0700) == 0);
  write_model(src);
  CHECK(tl_convert_folder_ex(src, out, TL_F16, 0, 0, &overflowed, &flushed) == TL_OK);
  CHECK(overflowed == 2 && flushed == 1);
  CHECK(tl_convert_folder_ex(src, out, TL_BF16, 0, 0, &overflowed, &flushed) == TL_OK);
  CHECK(overflowed == 0 && flushed == 0);
  CHECK(tl_convert_folder_ex(src, out, TL_F8_E4M3, 0, 0, NULL, NULL) == TL_EINVAL);
  CHECK(strstr(tl_last_error(), "fp8-block") != NULL);
  CHECK(tl_convert_folder_ex(src, out, TL_F8_E4M3, 0, 1, NULL, NULL) == TL_OK);
  CHECK(tl_convert_folder_ex(src, NULL, TL_F16, 0, 0, NULL, NULL) == TL_EINVAL);

  /* A file to the folder functions, a folder to the file functions. */
  snprintf(file, sizeof file, "%s/model.safetensors", src);
  snprintf(file_out, sizeof file_out, "%s/f16.safetensors", dir);
  CHECK(tl_convert_folder_ex(file, file_out, TL_F16, 0, 0, &overflowed, &flushed) == TL_OK);
  CHECK(overflowed == 2 && flushed == 1);
  CHECK(tl_convert_folder(file, file_out, TL_F16, 4096) == TL_EINVAL); /* shards are a folder's */
  CHECK(strstr(tl_last_error(), "one file") != NULL);
  tl_quantize_options_init(&q);
  q.scheme = "nf4";
  CHECK(tl_quantize_file_with(src, out, &q) == TL_OK);
  CHECK(tl_dequantize_file(out, out, TL_F32) == TL_OK);
  CHECK(tl_quantize_file_with(src, file_out, &q) == TL_EINVAL); /* a folder's output is a folder */
  CHECK(strstr(tl_last_error(), "folder") != NULL);
  check_mlx(dir);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
