// tlio/gguf_convert.hpp: GGUF files to and from the Hugging Face world: a GGUF's tensors to a
// safetensors file or its model to a Hugging Face folder (import), and a Hugging Face folder to
// the GGUF file llama.cpp loads (export). The container itself is tlio/gguf.hpp's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/gguf.hpp"
#include "tlio/writer.hpp"

namespace tlio {

/// The scalar and string keys of `f` as safetensors metadata (what import_gguf writes): strings
/// as they are, numbers in their shortest decimal form, booleans "true"/"false"; arrays (a
/// vocabulary, merges) are left out.
TLIO_API Metadata gguf_scalar_metadata(const GgufFile& f);

/// What import_gguf writes.
struct GgufImportOptions {
  /// The dtype of every floating tensor written (F32, F16 or BF16): block types are decoded to it,
  /// F32/F16/BF16/F64 tensors converted. Integer tensors keep their dtype.
  Dtype dtype = Dtype::BF16;
  ProgressCallback progress;  ///< elements written / all
};

struct GgufImportReport {
  size_t tensors = 0;
  size_t decoded = 0;           ///< tensors of a block type (Q4_K, ...), decoded
  size_t converted = 0;         ///< plain floating tensors whose dtype changed
  size_t kept = 0;              ///< tensors written in their own dtype
  size_t metadata_kept = 0;     ///< GGUF keys written as safetensors metadata (numbers, strings)
  size_t metadata_skipped = 0;  ///< array keys (vocabularies, merges) not written
  uint64_t data_bytes_in = 0, data_bytes_out = 0;
  /// import_gguf_model: the files written into the folder, and why tokenizer.json is not among
  /// them when it is not ("" when it is).
  std::vector<std::string> files;
  std::string tokenizer_note;
};

/// Writes the tensors of `src` to the safetensors file `out` (atomically) under their GGUF names,
/// in numpy's order of dimensions (ne reversed), every block type decoded exactly as ggml does;
/// scalar and string GGUF keys become metadata (numbers in their shortest decimal form), arrays
/// are left out. Streams in bounded memory, decoding on every core. Error{unsupported} naming
/// the first tensor of a type tlio does not decode, before anything is written.
TLIO_API GgufImportReport import_gguf(const GgufFile& src, const std::filesystem::path& out,
                                      const GgufImportOptions& options = {});

/// Writes the model of `src` as a Hugging Face folder `out_dir` (any location; created, its
/// previous weights replaced as a set): model.safetensors with the tensors under their Hugging
/// Face names (the GGUF export's table read backwards, Q/K rows put back in place, each expert of
/// a stacked tensor its own tensor again, so an F32 round trip gives the original weights bit
/// for bit), decoded as import_gguf does; config.json
/// from the hyperparameter keys; tokenizer.json (byte-level BPE vocabularies whose pre-tokenizer
/// tlio knows, SentencePiece ones with scores; otherwise the report's tokenizer_note says why not),
/// tokenizer_config.json and generation_config.json. Error{unsupported} naming an architecture the
/// table does not have, a tensor it does not name, or a type tlio does not decode, before anything
/// is written.
TLIO_API GgufImportReport import_gguf_model(const GgufFile& src, const std::string& out_dir,
                                            const GgufImportOptions& options = {});

/// What export_gguf writes.
struct GgufExportOptions {
  /// The type of the 2-D weights (any of gguf_export_types(), case-insensitive): F32, F16, BF16
  /// for every weight; or one of llama-quantize's file types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K,
  /// Q3_K_S/M/L, Q4_K_S/M, Q5_K_S/M, Q6_K; Q3_K, Q4_K and Q5_K are its names for the _M
  /// ones), each weight the type llama-quantize chooses for it (output.weight Q6_K for Q4_0, ...;
  /// `pure` for the base type everywhere). Norms, biases and other 1-D tensors stay F32, as
  /// llama.cpp keeps them.
  std::string type = "F16";
  /// 0: one file. Else llama.cpp's split files of at most this many tensor bytes each (a tensor
  /// larger than that alone in its file), named gguf_split_name(out, i, n), each with the split.*
  /// keys and the first with all the metadata, published together; one file when all fits.
  uint64_t split_max_size = 0;
  OpenOptions open;           ///< how the model folder is read
  ProgressCallback progress;  ///< source values read / all
  /// A GGUF source whose weights are quantized already: requantize them (decoded, then encoded
  /// in the new type: quality is lost twice), as llama-quantize --allow-requantize does. Without
  /// it such a source is Error{invalid_argument} naming the weights, nothing written.
  bool allow_requantize = false;
  /// llama-quantize --pure: every weight in the type's base type (Q4_K_M's Q4_K), none given
  /// more bits by the file type's rules (rows that are not whole blocks still fall back).
  bool pure = false;
};

/// The name of split `index` (0-based) of `count` of the GGUF file `path`, as llama.cpp names
/// them (llama_split_path): "model.gguf" -> "model-00001-of-00003.gguf".
TLIO_API std::string gguf_split_name(std::string_view path, size_t index, size_t count);

/// Every type GgufExportOptions::type takes: the plain types, then the mixes.
TLIO_API std::vector<std::string_view> gguf_export_types();

struct GgufExportReport {
  std::string architecture;  ///< general.architecture ("llama")
  size_t tensors = 0;
  std::vector<std::pair<std::string, size_t>> type_counts;  ///< ggml type name, tensors of it
  /// Tensors written in another type because their rows are not whole blocks of the one asked
  /// for, as llama.cpp falls back ("blk.0.ffn_down.weight: Q4_K -> Q5_0 (rows of 11008)").
  std::vector<std::string> fallbacks;
  uint64_t bytes_in = 0, bytes_out = 0;
  std::vector<std::string> files;  ///< the files written: `out`, or its splits in order
};

/// Writes the Hugging Face model folder `model_dir` (config.json, the weights as one file or
/// shards, quantized ones decoded; tokenizer.model or tokenizer.json, and tokenizer_config.json;
/// any location) as the GGUF file `out` that llama.cpp loads: the architecture's tensor names and
/// hyperparameter keys (one table entry per architecture: Llama, Mistral, Mixtral, Qwen2,
/// Qwen2-MoE, Qwen3, Qwen3-MoE, OLMo-2, Granite, Phi-3, Gemma 2, Gemma 3, gpt-oss,
/// DeepSeek-V2/V3 (MLA's kv_b_proj split per head as llama.cpp's converter splits it); Q/K rows
/// permuted for the llama family, experts stacked into 3-D tensors, Gemma's norms written as
/// 1 + w and gpt-oss's MXFP4 experts copied as ggml's MXFP4, as llama.cpp's converter does), the
/// vocabulary
/// (SentencePiece as "llama", from tokenizer.model or a tokenizer.json BPE with byte fallback;
/// else byte-level BPE as "gpt2"), and every 2-D weight in options.type (quantized byte for byte
/// as ggml's reference quantizer does). The header is laid out before a weight is read, then one
/// pass streams the tensors in row pieces, encoded on every core, into an atomic output. An
/// architecture, a tokenizer or a config key it does not export is Error{unsupported} naming it.
/// A GGUF file `model_dir` of an architecture the table knows is requantized as
/// llama_model_quantize writes it (docs/gguf.md, "Requantizing"): its weights in options.type,
/// the other tensors and the metadata kept (split_max_size must be 0).
TLIO_API GgufExportReport export_gguf(const std::string& model_dir, const std::string& out,
                                      const GgufExportOptions& options = {});

}  // namespace tlio
