/* tlio/tlio.h: the C API of libtlio (C99). No exception crosses it: every function that can fail
 * returns a status code (TL_OK = 0) and leaves a one-line message, the same the C++ API and the
 * CLI give, in tl_last_error() (per thread). Handles are opaque and freed explicitly.
 *
 * Lifetime: pointers a tl_file hands out (names, shapes, tensor data, metadata strings) stay
 * valid until tl_close(). */
#ifndef TLIO_TLIO_H
#define TLIO_TLIO_H

#include <stddef.h>
#include <stdint.h>

#if defined(TLIO_STATIC_DEFINE)
#define TL_API
#elif defined(_WIN32) && defined(TLIO_BUILDING_LIBRARY)
#define TL_API __declspec(dllexport)
#elif defined(_WIN32)
#define TL_API __declspec(dllimport)
#else
#define TL_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. */
enum {
  TL_OK = 0,
  TL_EFORMAT = 1,      /* the bytes break a rule of the format */
  TL_EIO = 2,          /* a file could not be opened, read, written or renamed */
  TL_EINVAL = 3,       /* a malformed request (bad sizes, bad slice, NULL argument) */
  TL_ENOTFOUND = 4,    /* no tensor or key of that name */
  TL_EUNSUPPORTED = 5, /* valid, but not something tlio does (e.g. a C64 conversion) */
  TL_ENOMEM = 6,       /* out of memory */
  TL_EINTERRUPTED = 7, /* stopped by this thread's interrupt check (tl_set_interrupt_check) */
  TL_EVERIFY = 8       /* the bytes are not the ones expected: a SHA-256 or signature differs */
};

/* Element types, in the reference implementation's order. */
/* clang-format off */
typedef enum tl_dtype {
  TL_BOOL = 0, TL_F4, TL_F6_E2M3, TL_F6_E3M2, TL_U8, TL_I8, TL_F8_E5M2, TL_F8_E4M3, TL_F8_E8M0,
  TL_F8_E4M3FNUZ, TL_F8_E5M2FNUZ, TL_I16, TL_U16, TL_F16, TL_BF16, TL_I32, TL_U32, TL_F32, TL_C64,
  TL_F64, TL_I64, TL_U64
} tl_dtype;
/* clang-format on */

typedef struct tl_file tl_file;
typedef struct tl_writer tl_writer;

/* Written `struct tl_tensor_info` (the name is also the function that fills it). */
struct tl_tensor_info {
  const char* name; /* NUL-terminated; a name may itself hold NUL bytes: see name_len */
  size_t name_len;
  tl_dtype dtype;
  size_t rank;
  const uint64_t* shape; /* rank entries */
  uint64_t byte_size;
  uint64_t data_offsets[2]; /* [begin, end) relative to the data buffer */
  const void* data;         /* the bytes (zero-copy; writable with TL_OPEN_PRIVATE); NULL with
                             * TL_OPEN_PREAD: use tl_tensor_read */
};

/* ---- library ---------------------------------------------------------------------------- */
TL_API const char* tl_version(void);
/* The message of the last failure on this thread ("" when none). */
TL_API const char* tl_last_error(void);
/* The rule the last failure on this thread broke, as the messages print it ("1" to "5", "int4",
 * "bnb", "BNB-001", ..., "model", "index", "zip", "pickle", "checkpoint", "gguf", "quant"), or ""
 * for none. */
TL_API const char* tl_last_error_rule(void);
/* The OS error number (errno) behind the last TL_EIO failure on this thread, or 0. */
TL_API int tl_last_error_errno(void);
TL_API const char* tl_dtype_name(tl_dtype dtype);
/* Parses a header dtype name ("BF16") or a numpy/torch spelling ("bfloat16"). */
TL_API int tl_dtype_from_name(const char* name, tl_dtype* out);
TL_API unsigned tl_dtype_bits(tl_dtype dtype);

/* ---- stopping and cleaning up ----------------------------------------------------------------
 * The library installs no signal handlers. `check` (NULL: none) is called now and then, with
 * `context`, by the long calls this thread makes (writes, conversions, copies: at least every
 * 64 MiB of data); when it returns nonzero the call removes what it wrote and fails with
 * TL_EINTERRUPTED, the destination left as it was. Per thread; stays until changed. */
typedef int (*tl_interrupt_fn)(void* context);
TL_API void tl_set_interrupt_check(tl_interrupt_fn check, void* context);
/* Unlinks the temporary file of every unfinished write of this process. Async-signal-safe: for
 * a signal handler that then ends the process with _exit(). */
TL_API void tl_remove_temporary_files(void);

/* ---- reading ------------------------------------------------------------------------------ */
/* Open flags: TL_OPEN_PREAD, positional reads instead of a mapping; TL_OPEN_PRIVATE, a private
 * copy-on-write mapping (tl_tensor_info's data may be written, const cast away; writes stay in
 * this process, the file never changes; not with TL_OPEN_PREAD); TL_OPEN_DIRECT, reads past the
 * page cache (O_DIRECT, 16 in flight through io_uring) for data read once, with tl_tensor_read,
 * alone. */
#define TL_OPEN_PREAD 1u
#define TL_OPEN_PRIVATE 2u
#define TL_OPEN_DIRECT 4u

/* `path` may be an http:// or https:// URL: the header is fetched at once (one or two range
 * requests), each tensor's bytes by range when read; TL_OPEN_PREAD and TL_OPEN_PRIVATE do not
 * apply (tl_tensor_info's data is NULL: use tl_tensor_read). Errors are TL_EIO with the errno
 * (ENOENT: 404; EACCES: 401/403; ESTALE: the file changed while it was read). */
TL_API int tl_open(const char* path, tl_file** out);
TL_API int tl_open_ex(const char* path, unsigned flags, tl_file** out);

/* Options of tl_open_with and tl_model_open_with; they grow at the end as tl_quantize_options
 * do (struct_size; tl_open_options_init). */
typedef struct tl_open_options {
  size_t struct_size; /* sizeof(tl_open_options) */
  unsigned flags;     /* TL_OPEN_* */
  const char* token;  /* URLs: bearer token, sent to the URL's own origin only; NULL: $HF_TOKEN */
} tl_open_options;
TL_API void tl_open_options_init(tl_open_options* options);
TL_API int tl_open_with(const char* path, const tl_open_options* options, tl_file** out);
/* A write to a path that is a device, FIFO or socket fails with TL_EINVAL, to a directory with
 * TL_EIO (EISDIR), nothing written; a symbolic link is followed to the file it names, which is
 * replaced (the link stays). */
/* Validates caller memory without copying it; it must outlive the tl_file. */
TL_API int tl_open_memory(const void* data, size_t size, tl_file** out);
TL_API void tl_close(tl_file* file);

/* Tensors in file (offset) order. */
TL_API size_t tl_tensor_count(const tl_file* file);
TL_API int tl_tensor_find(const tl_file* file, const char* name, size_t* index);
TL_API int tl_tensor_info(const tl_file* file, size_t index, struct tl_tensor_info* out);
/* Copies tensor `index` (exactly byte_size bytes) into dst. */
TL_API int tl_tensor_read(const tl_file* file, size_t index, void* dst, size_t dst_size);
/* Copies `count` tensors at once (a model's parameters), their bytes split over the cores:
 * tensor indices[i] into dsts[i], which holds sizes[i] (exactly its byte_size) bytes. Every
 * target is checked before any byte is copied. */
TL_API int tl_tensor_read_many(const tl_file* file, const size_t* indices, void** dsts,
                               const size_t* sizes, size_t count);
/* Reads tensor `index` converted to `to` (any floating dtype; integers/BOOL to F32/F64). */
TL_API int tl_tensor_read_as(const tl_file* file, size_t index, tl_dtype to, void* dst,
                             size_t dst_size);

/* Metadata: NULL when the key is absent. */
TL_API const char* tl_metadata_get(const tl_file* file, const char* key);
TL_API size_t tl_metadata_count(const tl_file* file);
/* The i-th entry in ascending key order. */
TL_API int tl_metadata_at(const tl_file* file, size_t i, const char** key, const char** value);

/* ---- model directories -------------------------------------------------------------------
 * model.safetensors or the shards of model.safetensors.index.json (and config.json), all checked
 * (rules "model" and "index") and mapped read-only. The tl_file handles a model hands out belong
 * to it: use them with every tl_tensor_* and tl_metadata_* function (tl_close() leaves them
 * alone); they stay valid until tl_model_close(). */
typedef struct tl_model tl_model;
/* `dir` may be a directory URL: its files are fetched by name (HTTP has no listing). */
TL_API int tl_model_open(const char* dir, tl_model** out);
TL_API int tl_model_open_with(const char* dir, const tl_open_options* options, tl_model** out);
TL_API void tl_model_close(tl_model* model);
/* config.json's architecture ("bigram", "llama", the model_type tlio does not check; "" without
 * one). */
TL_API const char* tl_model_arch(const tl_model* model);
/* config.json's quantization_config (or a GPTQ folder's quantize_config.json) as JSON text;
 * "" when the folder has none. */
TL_API const char* tl_model_quantization_config(const tl_model* model);
/* The architecture checks (every expected tensor with its shape, nothing unexpected). */
TL_API int tl_model_check(const tl_model* model);
/* The weight files: one, or the shards in index order. NULL when i is out of range. */
TL_API size_t tl_model_file_count(const tl_model* model);
TL_API const tl_file* tl_model_file(const tl_model* model, size_t i);
/* The file holding tensor `name` and its index there (TL_ENOTFOUND when no file has it). */
TL_API int tl_model_find(const tl_model* model, const char* name, const tl_file** file,
                         size_t* index);

/* ---- writing: canonical, streaming, atomic --------------------------------------------------
 * Declare every tensor (tl_writer_declare, or tl_writer_add which also takes its bytes), then
 * supply the bytes of declared tensors (tl_writer_write whole, tl_writer_append in order), then
 * tl_writer_commit. Data given to tl_writer_add must stay valid until commit. Both commit and
 * abort free the writer; until commit the destination is untouched. */
TL_API int tl_writer_open(const char* path, tl_writer** out);
TL_API int tl_writer_set_metadata(tl_writer* writer, const char* key, const char* value);
TL_API int tl_writer_declare(tl_writer* writer, const char* name, tl_dtype dtype, size_t rank,
                             const uint64_t* shape);
TL_API int tl_writer_add(tl_writer* writer, const char* name, tl_dtype dtype, size_t rank,
                         const uint64_t* shape, const void* data, size_t size);
TL_API int tl_writer_write(tl_writer* writer, const char* name, const void* data, size_t size);
TL_API int tl_writer_append(tl_writer* writer, const char* name, const void* data, size_t size);
TL_API int tl_writer_commit(tl_writer* writer);
TL_API void tl_writer_abort(tl_writer* writer);

/* ---- conversion and quantized weights --------------------------------------------------- */
TL_API int tl_convert(tl_dtype from, const void* src, size_t src_size, tl_dtype to, void* dst,
                      size_t dst_size, uint64_t count);
/* Any quantized weight: tinyllm int4 ("int4-g<G>-sym"), bitsandbytes 4-bit ("nf4", "fp4") or
 * LLM.int8 ("int8"), and the Hub's formats tlio reads (FP8 "fp8-block128x128", "fp8-channel",
 * ..., "mxfp8"; "gptq-4bit-g128"; "awq-4bit-g128" ("-gemv"); "mxfp4"; "nvfp4"; "ct-int4-g128":
 * docs/quantization.md). `dtype` is what dequantization restores by default (bnb 4-bit: the
 * original dtype; FP8 blocks, MXFP8, MXFP4 and NVFP4 BF16; the other Hub formats their scales'
 * dtype; else F32); `blocksize` is the int4, GPTQ, AWQ or compressed-tensors group, the bnb
 * block, the FP8 block's rows, 32 for MXFP8/MXFP4 and 16 for NVFP4 (0 for int8 and per-tensor
 * or per-channel scales). Strings and
 * shape stay valid until tl_close(). */
typedef struct tl_quantized_info {
  const char* name; /* logical name */
  const char* scheme;
  size_t rank;
  const uint64_t* shape; /* logical shape */
  tl_dtype dtype;
  uint64_t blocksize;
  int nested; /* bnb 4-bit: the absmax is itself quantized */
} tl_quantized_info;
/* The quantized weights of an open file (checked; a malformed one is TL_EFORMAT). */
TL_API int tl_quantized_count(const tl_file* file, size_t* count);
TL_API int tl_quantized_at(const tl_file* file, size_t index, tl_quantized_info* info);
/* Elements [first, first + count) of quantized weight `name` in row-major logical order, as
 * F32, F16 or BF16 (rounded to nearest even) into dst. Safe from several threads. */
TL_API int tl_quantized_read(const tl_file* file, const char* name, uint64_t first, uint64_t count,
                             tl_dtype out, void* dst, size_t dst_size);

/* Options of tl_quantize_file_with. Options grow at the end: a caller sets struct_size to the
 * sizeof it was compiled with (tl_quantize_options_init does), and fields past that size keep
 * their defaults, so a program built against an older tlio.h keeps working with a newer
 * libtlio. A struct_size smaller than the first version's, or larger than this library's, is
 * TL_EINVAL (an older library does not know the newer fields, so it refuses rather than
 * ignoring them). */
typedef void (*tl_progress_fn)(uint64_t done, uint64_t total, void* user);
typedef struct tl_quantize_options {
  size_t struct_size;  /* sizeof(tl_quantize_options) */
  const char* scheme;  /* "int4-g<G>-sym", "nf4", "fp4", "int8", "fp8-block" (or
                          "fp8-block<R>x<C>"), "fp8" or "fp8-channel" (required) */
  const char* include; /* regex searched in names, or NULL: replaces the default selection */
  const char* exclude; /* regex searched in names, or NULL */
  /* Scheme options; one left at its default is not given, one given to a scheme that does not
   * have it is TL_EINVAL ("nested is an option of nf4, fp4, not of int8"). */
  uint64_t blocksize;      /* nf4/fp4: 32, 64, ..., 4096; 0: the default, 64 */
  int nested;              /* nf4/fp4: quantize the absmax too */
  tl_dtype storage;        /* nf4/fp4: dtype the packed codes are stored as (default TL_U8) */
  tl_progress_fn progress; /* output bytes done / total, or NULL */
  void* progress_user;     /* passed to progress */
  const char* token;       /* `src` an http(s) URL: bearer token; NULL: $HF_TOKEN */
  int allow_1d;            /* quantize 1-D tensors (biases, norms) that `include` names too */
} tl_quantize_options;
/* Fills `options` with the defaults and struct_size. A macro over tl_quantize_options_init_sized
 * with the caller's own sizeof, so that the library never writes past the struct the caller
 * has; the function of the same name, for programs built against an older tlio.h, fills the
 * struct's first version only (up to progress_user). */
TL_API void tl_quantize_options_init_sized(tl_quantize_options* options, size_t size);
TL_API void tl_quantize_options_init(tl_quantize_options* options);
#define tl_quantize_options_init(options) \
  tl_quantize_options_init_sized((options), sizeof *(options))
/* Writes `src` with the selected weights quantized to `dst`, atomically (as `tlio quantize`). In
 * every rewrite below `src` may be a file or a model folder (the library asks which); a folder's
 * `dst` is a folder; TL_EINVAL: a .safetensors or "-" `dst` for a folder, a `max_shard_size`
 * for a file, a GGUF `src` (tl_import_gguf reads one). */
TL_API int tl_quantize_file_with(const char* src, const char* dst,
                                 const tl_quantize_options* options);

/* The fixed-argument form of tl_quantize_file_with (kept for existing callers): blocksize
 * (0 means 64) and nested as there, the other options at their defaults. */
TL_API int tl_quantize_file(const char* src, const char* dst, const char* scheme,
                            uint64_t blocksize, int nested, const char* include,
                            const char* exclude);
/* dtype: TL_F32, TL_F16 or TL_BF16, or -1 for each weight's default dtype. */
TL_API int tl_dequantize_file(const char* src, const char* dst, int dtype);

/* ---- model folders rewritten whole -----------------------------------------------------------
 * (A safetensors file `src` is rewritten as the file functions above rewrite it, `max_shard_size`
 * 0.) `src` a model folder (model.safetensors, or shards with model.safetensors.index.json;
 * config.json optional) at any location, `dst` a folder: the same shards and file names (or,
 * with `max_shard_size` not 0, new shards of at most that many tensor bytes, each module's
 * tensors in one), a new index, config.json (its dtype set; after dequantize without
 * quantization_config), tokenizer and generation files carried over; `dst` replaced as a whole
 * or left as it was (as `tlio convert|quantize|dequantize DIR OUT [--max-size]`). `dst` may be
 * `src`. */
/* Floating tensors converted to `dtype`; -1: every tensor copied as it is (a canonical copy). */
TL_API int tl_convert_folder(const char* src, const char* dst, int dtype, uint64_t max_shard_size);
/* As tl_convert_folder (dtype required), and: `cast` not 0 allows a dtype of 8 bits or fewer, a
 * plain cast of every tensor with no scale (refused otherwise: TL_EINVAL, pointing to
 * fp8-block); `overflowed` and `flushed` (each may be NULL) receive how many finite values became
 * infinite and how many nonzero values became zero in the new dtype. */
TL_API int tl_convert_folder_ex(const char* src, const char* dst, int dtype,
                                uint64_t max_shard_size, int cast, uint64_t* overflowed,
                                uint64_t* flushed);
/* As tl_quantize_file_with, over every shard; the selection is the whole folder's. */
TL_API int tl_quantize_folder(const char* src, const char* dst, const tl_quantize_options* options,
                              uint64_t max_shard_size);
/* As tl_dequantize_file, over every shard. */
TL_API int tl_dequantize_folder(const char* src, const char* dst, int dtype,
                                uint64_t max_shard_size);

/* ---- jobs of units (tlio/folder_job.hpp, docs/jobs.md) -----------------------------------------
 * Between tl_job_begin and tl_job_end, every folder rewrite above and checkpoint import below that
 * this thread calls is one step of the job `id` (1 to 64 of [A-Za-z0-9_-], naming its staging
 * folder in `dst`): TL_JOB_PLAN (then tl_job_units says how many units), TL_JOB_UNIT (`unit`,
 * 0 .. units-1: that unit's shard written into the staging folder), TL_JOB_COMMIT (the folder
 * published, every byte what the call without a job writes) or TL_JOB_ABORT (the staging folder
 * removed). Units run in any process on any machine that sees `dst`. TL_EINVAL for a bad id or
 * step (no job is then set); tl_job_begin again replaces the step. Only this thread's calls
 * are steps: a call made on another thread in between is the whole rewrite. */
#define TL_JOB_PLAN 0
#define TL_JOB_UNIT 1
#define TL_JOB_COMMIT 2
#define TL_JOB_ABORT 3
TL_API int tl_job_begin(const char* id, int step, uint64_t unit);
/* The number of units the TL_JOB_PLAN step set by the last tl_job_begin planned (0 before it runs).
 */
TL_API uint64_t tl_job_units(void);
TL_API void tl_job_end(void);

/* ---- comparing values ------------------------------------------------------------------------
 * Every name two files share, compared by value after converting both to F64 (as `tlio diff`):
 * other dtypes, and quantized weights (every scheme tl_quantized_at names) dequantized, under their
 * logical names. A value of A is within tolerance of B's when |a - b| <= atol + rtol * |b|, or both
 * are NaN, or the same infinity. */
typedef struct tl_compare_options {
  size_t struct_size; /* sizeof(tl_compare_options) */
  double atol;        /* finite, not negative (default 0) */
  double rtol;
  tl_progress_fn progress; /* elements compared / all, or NULL */
  void* progress_user;
  const char* filter; /* compare only names this ECMAScript regex finds; NULL: all */
  /* Each side's quantization_config (tl_model_quantization_config of a folder), which says how
   * its weights are read (block sizes, GPTQ's version, AWQ's layout); NULL or "": none. */
  const char* quantization_config_a;
  const char* quantization_config_b;
} tl_compare_options;
/* As tl_quantize_options_init: a macro passing the caller's sizeof; the function of the same name
 * fills the first version only (up to progress_user). */
TL_API void tl_compare_options_init_sized(tl_compare_options* options, size_t size);
TL_API void tl_compare_options_init(tl_compare_options* options);
#define tl_compare_options_init(options) tl_compare_options_init_sized((options), sizeof *(options))
typedef struct tl_comparison tl_comparison;
typedef struct tl_tensor_comparison {
  const char* name;
  const char* a_dtype; /* a dtype ("BF16") or a scheme ("nf4") */
  const char* b_dtype;
  size_t rank;
  const uint64_t* shape; /* logical (A's when the shapes differ) */
  uint64_t elements;
  int compared; /* 0: not compared by value; note says why */
  const char* note;
  double max_abs; /* infinite where one side is NaN or infinite alone */
  double max_rel;
  double rmse;
  double cosine;
  uint64_t outside; /* elements outside tolerance */
  int equal;
} tl_tensor_comparison;
/* `out` is freed with tl_comparison_free; its strings and shapes live until then. */
TL_API int tl_compare_files(const tl_file* a, const tl_file* b, const tl_compare_options* options,
                            tl_comparison** out);
/* The same over sets of files, each side one namespace: a model folder's shards
 * (tl_model_file), a single file, or both (`tlio diff model_dir model.safetensors`); a quantized
 * weight whose parts are in different shards counts whole. A name in two files of one side is
 * TL_EFORMAT (rule "index"). */
TL_API int tl_compare_sets(const tl_file* const* a, size_t a_count, const tl_file* const* b,
                           size_t b_count, const tl_compare_options* options, tl_comparison** out);
/* Any two inputs by location (as `tlio diff A B`): files, model folders, GGUF files, local or
 * remote (`open` may be NULL: defaults). With a GGUF file on a side, names pair as reports pair
 * them: the same name, or a GGUF file's against a Hugging Face folder's through the GGUF export's
 * names, Q/K rows put back in place (tl_comparison_b_name gives B's name). The folders' own
 * quantization_config are used (the options' are not read). */
TL_API int tl_compare_locations(const char* a, const char* b, const tl_compare_options* options,
                                const tl_open_options* open, tl_comparison** out);
/* B's name for common tensor `index` when it is another than A's (a GGUF file against a folder);
 * NULL when it is the same, or index is out of range. */
TL_API const char* tl_comparison_b_name(const tl_comparison* comparison, size_t index);
/* 1 when no name is in one file only and every common tensor is equal within tolerance. */
TL_API int tl_comparison_equal(const tl_comparison* comparison);
/* The common names, in natural order ("layers.2" before "layers.10"). */
TL_API size_t tl_comparison_count(const tl_comparison* comparison);
TL_API int tl_comparison_at(const tl_comparison* comparison, size_t index,
                            tl_tensor_comparison* out);
/* Names only in A (side 0) or only in B (side 1); NULL when index is out of range. */
TL_API size_t tl_comparison_only_count(const tl_comparison* comparison, int side);
TL_API const char* tl_comparison_only_at(const tl_comparison* comparison, int side, size_t index);
TL_API void tl_comparison_free(tl_comparison* comparison);

/* ---- editing ---------------------------------------------------------------------------------
 * Metadata edits and keep/drop/rename of tensors without touching their bytes (as `tlio metadata`
 * and `tlio convert --keep/--drop/--rename`). Regexes are ECMAScript, searched in names; keep and
 * drop see the source's names; rename rules run in order, each replacing every match (\1..\9
 * insert groups). A quantized weight moves whole: keep and drop decide by its logical name, and
 * its stored tensors are renamed together. The options grow at the end as tl_quantize_options
 * do (struct_size; tl_edit_options_init). Arrays may be NULL when their count is 0. */
typedef struct tl_edit_options {
  size_t struct_size;            /* sizeof(tl_edit_options) */
  const char* const* set_keys;   /* metadata entries added or replaced: set_keys[i] = */
  const char* const* set_values; /*   set_values[i] */
  size_t set_count;
  const char* const* delete_keys; /* metadata keys removed (each must exist) */
  size_t delete_count;
  const char* const* keep; /* a tensor must match one of these; none: every tensor */
  size_t keep_count;
  const char* const* drop; /* a tensor matching any of these is left out */
  size_t drop_count;
  const char* const* rename_patterns;     /* rename_patterns[i] is replaced by */
  const char* const* rename_replacements; /*   rename_replacements[i] */
  size_t rename_count;
  tl_progress_fn progress; /* data bytes copied / total, or NULL */
  void* progress_user;
  const char* token; /* `src` an http(s) URL: bearer token; NULL: $HF_TOKEN */
} tl_edit_options;
typedef struct tl_edit_report {
  size_t kept;         /* tensors written */
  size_t dropped;      /* tensors left out */
  size_t renamed;      /* tensors written under another name */
  int in_place;        /* 1: only the header was rewritten, in the file itself */
  uint64_t data_bytes; /* data bytes of the result */
} tl_edit_report;
/* Fills `options` with the defaults (no edit) and struct_size. */
TL_API void tl_edit_options_init(tl_edit_options* options);
/* Edits `src` into `dst`, or into `src` itself when `dst` is NULL or names the same file: in
 * place when only the header changes and keeps its length (one synced write), else one atomic
 * rewrite whose tensor bytes are copied in the kernel. A bad regex, two tensors renamed to one
 * name, a missing key to delete, a selection that would split a quantized weight or that keeps
 * no tensor is TL_EINVAL with nothing written. `report` may be NULL. A model folder `src` is
 * edited shard by shard into the folder `dst` (or itself), rewritten and published as a set. */
TL_API int tl_edit_file(const char* src, const char* dst, const tl_edit_options* options,
                        tl_edit_report* report);

/* ---- PyTorch checkpoints ------------------------------------------------------------------- */
#define TL_IMPORT_SKIP_UNSUPPORTED 1u /* leave out tensors safetensors cannot hold */
#define TL_IMPORT_ALLOW_EMPTY 2u      /* write a file without tensors when there are none */
#define TL_IMPORT_ALL 4u              /* a training checkpoint: everything, not its model part */

/* Converts the PyTorch checkpoint `src` (zip or legacy format; its pickle is decoded, never run)
 * to the safetensors file `dst`, atomically, as `tlio import`; a directory with
 * pytorch_model.bin or its shards, or a torch.distributed.checkpoint (DCP) folder (each tensor
 * assembled from its ranks' chunks), becomes a model directory, split as the source or in shards of
 * at most `max_shard_size` tensor bytes (0: as the source). `key` (NULL for none) imports the
 * sub-object at that path ("model.encoder"). A pickle naming code torch.load would run is
 * TL_EFORMAT with tl_last_error_rule() "pickle"; `tensors` (may be NULL) gets the count written. */
TL_API int tl_import_checkpoint(const char* src, const char* dst, const char* key, unsigned flags,
                                uint64_t max_shard_size, uint64_t* tensors);
/* The same, floating tensors written as `dtype` (a floating tl_dtype, as tl_convert_folder
 * converts them; integers as they are); -1: as saved, which is tl_import_checkpoint. */
TL_API int tl_import_checkpoint_as(const char* src, const char* dst, const char* key,
                                   unsigned flags, uint64_t max_shard_size, int dtype,
                                   uint64_t* tensors);

/* ---- Reports (tlio/report.hpp, docs/report.md) -------------------------------------------------
 * A model's figures per tensor (counts, range, mean, std, histogram; against a source, the error:
 * RMSE, max abs, cosine, SQNR), as `tlio report` computes them: dequantized where quantized, on
 * every core in bounded memory. */
typedef struct tl_report_options {
  size_t struct_size; /* sizeof(tl_report_options) */
  const char*
      against; /* the source compared with (a file, folder or GGUF, a path or URL); NULL: none */
  const char* filter;      /* only names this ECMAScript regex finds; NULL: all */
  unsigned bins;           /* histogram bins, 1..4096 (default 64) */
  tl_progress_fn progress; /* bytes read / all, or NULL */
  void* progress_user;
} tl_report_options;
TL_API void tl_report_options_init(tl_report_options* options);
typedef struct tl_report tl_report;
/* The report of the model at `location` (a file, a model folder or a GGUF file; `open` NULL for
 * the defaults, else its token is used for URLs); freed with tl_report_free. */
TL_API int tl_report_make(const char* location, const tl_report_options* options,
                          const tl_open_options* open, tl_report** out);
/* The figures as one JSON document (`tlio report --json`'s), living until tl_report_free. */
TL_API const char* tl_report_json(const tl_report* report);
/* The report as one self-contained HTML page written to `out` (a path or URL), atomically. */
TL_API int tl_report_write_html(const tl_report* report, const char* out);
TL_API void tl_report_free(tl_report* report);

/* ---- Hashes and model signatures (tlio/trust.hpp, docs/security.md) ------------------------- */
#define TL_SHA256_HEX_SIZE 65 /* 64 hexadecimal digits and a NUL */

/* The SHA-256 of the file at `location` (a path or URL; `options` NULL for the defaults, else
 * its token is used), read once front to back, as lower-case hex into `sha256_hex` (at least
 * TL_SHA256_HEX_SIZE bytes). TL_EVERIFY
 * when the file's server publishes another SHA-256 for it (the Hub's X-Linked-Etag). */
TL_API int tl_hash_file(const char* location, const tl_open_options* options, char* sha256_hex);
/* The SHA-256 of an open file's bytes (the version it holds) into `sha256_hex` (may be NULL);
 * TL_EVERIFY unless it equals `expected_hex` (64 hex digits, either case; NULL: not compared). */
TL_API int tl_file_sha256(const tl_file* file, const char* expected_hex, char* sha256_hex);
/* Signs every file of `folder` with the PEM private key file `private_key` (P-256, P-384 or
 * P-521), writing an OpenSSF model-signing v1.0 bundle to `signature` (NULL: FOLDER/model.sig)
 * atomically, as `tlio sign`. */
TL_API int tl_sign_folder(const char* folder, const char* private_key, const char* signature);
/* Checks `folder` against its signature (NULL: FOLDER/model.sig) with the PEM public key file
 * `public_key`: TL_EVERIFY with every problem in tl_last_error() when a file differs, was added
 * or removed, or the key hint, the signature or the root digest does not match. */
TL_API int tl_verify_signature(const char* folder, const char* public_key, const char* signature);

/* ---- read plans ---------------------------------------------------------------------------- */
/* A plan lists tensors or slices of them, each with the buffer it goes to; tl_plan_execute reads
 * them in few large reads (positional reads for local files, or O_DIRECT ones with
 * tl_plan_open_ex's TL_OPEN_DIRECT; ranged requests for URLs) straight into the buffers. A
 * quantized weight is asked for by its logical name and dequantized, reading only the parts of
 * its stored tensors the slice needs. See docs/loading.md. */
typedef struct tl_plan tl_plan;
/* Options of tl_plan_open; they grow at the end (struct_size; tl_plan_options_init). */
typedef struct tl_plan_options {
  size_t struct_size;          /* sizeof(tl_plan_options) */
  uint64_t max_inflight_bytes; /* scratch bytes at once; 0: 64 MiB */
  int64_t max_gap;             /* ranges this close are read as one; -1: 64 KiB local, 1 MiB URLs */
  int keep_packed;             /* list quantized weights as their stored tensors */
  const char* token;           /* URLs: bearer token, as tl_open_options' */
} tl_plan_options;
TL_API void tl_plan_options_init(tl_plan_options* options);
/* Opens `source`: a .safetensors file, a folder of weights (its index's shards or
 * model.safetensors) or a URL of either. `options` may be NULL. */
TL_API int tl_plan_open(const char* source, const tl_plan_options* options, tl_plan** out);
/* The same, `flags` 0 or TL_OPEN_DIRECT: local files read past the page cache (a cold model read
 * once). TL_EINVAL for any other flag. */
TL_API int tl_plan_open_ex(const char* source, const tl_plan_options* options, unsigned flags,
                           tl_plan** out);
TL_API void tl_plan_free(tl_plan* plan);
/* Adds tensor `name`, dimension d sliced to [starts[d], stops[d]) for d < rank (stops[d]
 * UINT64_MAX: to the end; rank 0: whole), and sets *item. `dtype`: a quantized weight's values
 * (TL_F32, TL_F16, TL_BF16), or -1 for its default; a stored tensor is copied as it is (-1 or
 * its own dtype). TL_ENOTFOUND for a name the plan cannot read, TL_EINVAL for a bad slice. */
TL_API int tl_plan_add(tl_plan* plan, const char* name, size_t rank, const uint64_t* starts,
                       const uint64_t* stops, int dtype, size_t* item);
/* An item's slice shape (valid while the plan lives), dtype and byte size. */
typedef struct tl_plan_item_info {
  size_t rank;
  const uint64_t* shape;
  tl_dtype dtype;
  uint64_t byte_size;
} tl_plan_item_info;
TL_API int tl_plan_item(const tl_plan* plan, size_t item, tl_plan_item_info* out);
/* Where an item's bytes are stored when they are one contiguous range of a file (a stored tensor
 * whole, or a range of its leading rows): its file's index and offset from the file's first byte;
 * *offset is UINT64_MAX otherwise. A TL_OPEN_DIRECT plan reads into a buffer whose address is
 * congruent to *offset modulo TL_DIRECT_ALIGNMENT without a bounce copy. */
#define TL_DIRECT_ALIGNMENT 4096
TL_API int tl_plan_item_range(const tl_plan* plan, size_t item, size_t* file, uint64_t* offset);
/* Removes every item, keeping the files open: for loading in batches that each fit in memory. */
TL_API int tl_plan_clear(tl_plan* plan);
/* The buffer of `item`: exactly its byte_size bytes, kept alive until tl_plan_execute returns;
 * a quantized item's aligned to its values (2 or 4 bytes: TL_EINVAL otherwise). */
TL_API int tl_plan_set_destination(tl_plan* plan, size_t item, void* dst, size_t size);
/* A dry run: the reads executing the plan makes (coalesced, in file and offset order), and the
 * bytes the buffers receive. tl_plan_read_at's index is below *count. */
TL_API int tl_plan_reads(tl_plan* plan, size_t* count, uint64_t* wanted_bytes);
TL_API int tl_plan_read_at(const tl_plan* plan, size_t index, size_t* file, uint64_t* offset,
                           uint64_t* length);
/* Reads every item into its buffer. */
TL_API int tl_plan_execute(tl_plan* plan);
/* Bytes read elsewhere: `size` data bytes of file `file` at data offset `offset`, copied where
 * the items want them; tl_plan_finish once all have arrived (dequantizes). */
TL_API int tl_plan_deliver(tl_plan* plan, size_t file, uint64_t offset, const void* data,
                           size_t size);
TL_API int tl_plan_finish(tl_plan* plan);

#ifdef __cplusplus
}
#endif

/* GGUF files and transcoding, in a header of their own (each header stays readable). */
#include "tlio/tlio_gguf.h"

#endif /* TLIO_TLIO_H */
