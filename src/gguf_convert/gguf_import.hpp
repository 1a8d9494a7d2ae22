// gguf_convert/gguf_import.hpp: what the imports of a GGUF file (to a safetensors file, to a
// Hugging Face folder) share: the checks made before anything is written, and a tensor written in
// pieces; and the entry points transcode shares with the import to a folder and the export.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "tlio/gguf.hpp"
#include "tlio/gguf_convert.hpp"
#include "tlio/transcode.hpp"
#include "tlio/writer.hpp"

namespace tlio::detail {

/// The dtype tensor `t` is written as: `floats` for floating and block types, an integer type its
/// own.
Dtype gguf_output_dtype(const GgufTensorInfo& t, Dtype floats);

/// Error{invalid_argument} unless `dtype` is F32, F16 or BF16; Error{unsupported} naming the first
/// tensor of a type tlio does not decode.
void check_gguf_import(const GgufFile& src, Dtype dtype);

/// Appends tensor `t` of `src` to `w` as `name` (declared as `to`): a floating one through
/// write_decoded (a decoder of the tensor, decoded on every core), an integer one as its bytes;
/// `permute_heads` > 0 puts back the rows the export interleaved per head (Q/K of the llama
/// family); `expert` writes that expert of a stacked 3-D tensor alone (its [rows, columns]);
/// `shift` is taken off every value (in float32: Gemma's norms, exported as 1 + w).
/// Counts it in `report`; `written` gets each slice's element count.
void write_gguf_tensor(const GgufFile& src, const GgufTensorInfo& t, const std::string& name,
                       Dtype to, uint64_t permute_heads, std::optional<uint64_t> expert, Writer& w,
                       GgufImportReport& report, const std::function<void(uint64_t)>& written,
                       float shift = 0);

/// import_gguf_model, and transcode's GGUF to MLX: with `transcode`, the weights go into MLX's
/// layout (gguf_to_mlx.hpp), each reported in `carried`.
GgufImportReport import_gguf_folder(const GgufFile& src, const std::string& out_dir,
                                    const GgufImportOptions& options,
                                    const TranscodeOptions* transcode, TranscodeReport* carried);

/// export_gguf, and transcode's folder to GGUF: with `transcode`, the quantized weights are
/// carried into ggml's blocks (ggml_carry.hpp), each reported in `carried`.
GgufExportReport export_gguf_folder(const std::string& model_dir, const std::string& out,
                                    const GgufExportOptions& options,
                                    const TranscodeOptions* transcode, TranscodeReport* carried);

}  // namespace tlio::detail
