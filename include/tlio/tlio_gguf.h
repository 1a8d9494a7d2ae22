/* tlio/tlio_gguf.h: the C API's GGUF files (tlio/gguf.hpp), their conversions to and from
 * Hugging Face folders (tlio/gguf_convert.hpp) and transcoding (tlio/transcode.hpp). Included by
 * tlio/tlio.h, whose types it uses; either may be included first. */
#ifndef TLIO_TLIO_GGUF_H
#define TLIO_TLIO_GGUF_H

#include "tlio/tlio.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- GGUF files (tlio/gguf.hpp, docs/gguf.md) ----------------------------------------------- */
typedef struct tl_gguf tl_gguf;

/* One tensor of a GGUF file: its GGUF name, ggml type (id and name, "Q4_K"), its shape in
 * numpy's order (ggml's ne reversed; at most 4 dimensions), and its stored bytes. `name` and
 * `type_name` stay valid until tl_gguf_close(). */
typedef struct tl_gguf_tensor {
  const char* name;
  uint32_t ggml_type;
  const char* type_name;
  int decodes; /* 1 when tl_gguf_read reads its values, 0 for a type tlio does not decode */
  size_t rank;
  uint64_t shape[4];
  uint64_t elements;
  uint64_t bytes;
} tl_gguf_tensor;

/* Opens and checks the GGUF file at `location` (a path or URL; `options` NULL for defaults) as
 * ggml's reader checks it; TL_EFORMAT (rule "gguf") naming what is wrong. */
TL_API int tl_gguf_open(const char* location, const tl_open_options* options, tl_gguf** out);
TL_API void tl_gguf_close(tl_gguf* file);
TL_API size_t tl_gguf_tensor_count(const tl_gguf* file);
/* Tensor `index` (in file order); TL_EINVAL past the end. */
TL_API int tl_gguf_tensor_at(const tl_gguf* file, size_t index, tl_gguf_tensor* out);
/* The index of tensor `name`; TL_ENOTFOUND when the file has none. */
TL_API int tl_gguf_find(const tl_gguf* file, const char* name, size_t* index);
/* Elements [first, first + count) of tensor `index` (flat, last numpy dimension fastest) as
 * `dtype` into `dst` of `dst_size` bytes (exactly their size): block types decoded as ggml
 * decodes them, then converted; plain types converted from their own dtype. TL_EUNSUPPORTED for
 * a type tlio does not decode (IQ1/IQ2/IQ3, Q8_1) or a dtype it cannot convert to. */
TL_API int tl_gguf_read(const tl_gguf* file, size_t index, uint64_t first, uint64_t count,
                        tl_dtype dtype, void* dst, size_t dst_size);
/* A slice of tensor `index`: dimension d (numpy's order) sliced to [starts[d], stops[d]) for
 * d < rank (stops[d] UINT64_MAX: to the end; rank 0: whole), as `dtype` into `dst` of `dst_size`
 * bytes (exactly the slice's elements), decoded as tl_gguf_read decodes. Only the blocks the
 * slice touches are read, nearby rows' together (a column slice takes a few reads, not one per
 * row). TL_EINVAL for a bad slice or size, TL_EUNSUPPORTED as for tl_gguf_read. */
TL_API int tl_gguf_read_slice(const tl_gguf* file, size_t index, size_t rank,
                              const uint64_t* starts, const uint64_t* stops, tl_dtype dtype,
                              void* dst, size_t dst_size);
/* The value of metadata key `key` as text (`*text` valid until tl_gguf_close()): a string as it
 * is, a number in its shortest decimal form, a boolean "true"/"false"; TL_ENOTFOUND for a key
 * the file lacks, TL_EUNSUPPORTED for an array (a vocabulary). */
TL_API int tl_gguf_metadata(const tl_gguf* file, const char* key, const char** text);
/* Writes the tensors of the GGUF file `src` to the safetensors file `dst` (atomically), as
 * `tlio convert SRC DST.safetensors`: GGUF names, floating tensors as `dtype` (TL_F32, TL_F16 or
 * TL_BF16), every block type decoded as ggml decodes it; numbers and strings as metadata.
 * `tensors` (may be NULL) gets the count written. */
TL_API int tl_import_gguf(const char* src, const char* dst, tl_dtype dtype,
                          const tl_open_options* options, uint64_t* tensors);
/* Writes the model of the GGUF file `src` as the Hugging Face folder `dst` (any location), as
 * `tlio convert SRC DST_DIR`: model.safetensors under the Hugging Face names (Q/K rows put back),
 * floating tensors as `dtype`; config.json, tokenizer.json (byte-level BPE and SentencePiece
 * vocabularies), tokenizer_config.json, generation_config.json. An architecture or tensor the
 * export's table does not have is TL_EUNSUPPORTED naming it. `tensors` (may be NULL) gets the count
 * written. */
TL_API int tl_import_gguf_model(const char* src, const char* dst, tl_dtype dtype,
                                const tl_open_options* options, uint64_t* tensors);
/* Writes the Hugging Face model folder `src` (any location) as the GGUF file `dst` that llama.cpp
 * loads, as `tlio convert SRC DST.gguf --dtype TYPE`: `type` "F32", "F16", "BF16", "Q8_0",
 * "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K" ... "Q6_K", or one of llama.cpp's mixes "Q3_K_S" ...
 * "Q5_K_M" (each weight the type llama-quantize gives it) (NULL: F16). An architecture, tokenizer
 * or config key it does not export is TL_EUNSUPPORTED naming it. `tensors` (may be NULL) gets the
 * count written. */
TL_API int tl_export_gguf(const char* src, const char* dst, const char* type,
                          const tl_open_options* options, uint64_t* tensors);
/* The same in llama.cpp's split files of at most `split_max_size` tensor bytes each (0: one
 * file), named DST-00001-of-0000N.gguf (one file, named DST, when all fits), published together. */
TL_API int tl_export_gguf_split(const char* src, const char* dst, const char* type,
                                uint64_t split_max_size, const tl_open_options* options,
                                uint64_t* tensors);
/* tl_export_gguf_split with flags: TL_GGUF_PURE, every weight in `type`'s base type (as
 * llama-quantize --pure; without it a file type such as Q4_0 gives output.weight Q6_K, as
 * llama-quantize does), TL_GGUF_ALLOW_REQUANTIZE (a GGUF `src`: see tl_requantize_gguf). */
#define TL_GGUF_PURE 1u
#define TL_GGUF_ALLOW_REQUANTIZE 2u
TL_API int tl_export_gguf_with(const char* src, const char* dst, const char* type, unsigned flags,
                               uint64_t split_max_size, const tl_open_options* options,
                               uint64_t* tensors);
/* The GGUF file `src` requantized into `dst` as llama_model_quantize writes it (docs/gguf.md,
 * "Requantizing"): its weights in `type` (a type or a mix, as tl_export_gguf takes), decoded as
 * ggml decodes them, the other tensors and the metadata kept. Weights quantized already are
 * requantized only when `allow_requantize` is not 0 (quality is lost twice), else TL_EINVAL
 * naming them; a source that is not a GGUF file is TL_EINVAL. tl_export_gguf of a GGUF file is
 * this call without allow_requantize. */
TL_API int tl_requantize_gguf(const char* src, const char* dst, const char* type,
                              int allow_requantize, const tl_open_options* options,
                              uint64_t* tensors);

/* ---- Transcoding (tlio/transcode.hpp, docs/transcode.md) ---------------------------------------
 * Quantized weights carried into another ecosystem's layout without a detour through floats,
 * each proven on the way: its values in the output equal ggml's in the source, bit for bit but
 * for the sign of a zero. */
typedef struct tl_transcode_result {
  size_t carried;      /* weights carried and proven */
  size_t requantized;  /* weights requantized (`lossy`) */
  size_t plain;        /* tensors written as floats */
  uint64_t zero_signs; /* -0 values of the source written as +0 */
  double max_rmse;     /* the largest RMSE of a requantized weight (0 without one) */
} tl_transcode_result;
/* Carries the quantized weights of `src` into the layout `to` at `dst` (any location, one set), as
 * `tlio transcode SRC DST --to TO [--lossy] [--dtype]`. "mlx" (NULL: "mlx"): the GGUF file `src`
 * as a folder, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_0, Q4_K and Q5_K weights as MLX affine with F32
 * scales and biases, MXFP4 and NVFP4 as MLX's mxfp4 and nvfp4; or a model folder `src`, its
 * compressed-tensors MXFP4 and NVFP4 and power-of-two FP8 byte for byte. "gguf": the model folder
 * `src` as a GGUF file, MLX's and compressed-tensors' MXFP4 and NVFP4 weights as ggml's blocks.
 * "compressed-tensors": an MLX folder's mxfp4 and nvfp4 Linear weights byte for byte.
 * Tensors written as floats in `dtype` (TL_F32, TL_F16 or TL_BF16). A weight no rule carries is
 * TL_EUNSUPPORTED naming it unless `lossy` is not 0 (then requantized); a weight whose proof
 * fails is TL_EFORMAT naming it; nothing is written then. `result` may be NULL. */
TL_API int tl_transcode(const char* src, const char* dst, const char* to, int lossy, tl_dtype dtype,
                        const tl_open_options* options, tl_transcode_result* result);

#ifdef __cplusplus
}
#endif

#endif /* TLIO_TLIO_GGUF_H */
