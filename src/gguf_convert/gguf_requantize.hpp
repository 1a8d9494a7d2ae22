// gguf_convert/gguf_requantize.hpp: a GGUF file written again in other types, as
// llama_model_quantize writes it (llama-quantize, --allow-requantize for quantized sources).
#pragma once

#include <string>

#include "gguf_convert/gguf_mix.hpp"
#include "tlio/gguf_convert.hpp"

namespace tlio::detail {

/// export_gguf of a GGUF source: each weight (".weight", 2 dimensions or more, not a norm or an
/// expert router) in the type `asked` gives it, decoded as ggml decodes it and encoded by ggml's
/// reference quantizers; a weight already of that type, and every other tensor, copied; the
/// metadata kept, general.quantization_version and general.file_type set last; tensors in
/// llama.cpp's order (by layer, then name). A quantized weight is requantized only with
/// options.allow_requantize (else Error{invalid_argument} naming it, nothing written).
GgufExportReport requantize_gguf(const std::string& src, const std::string& out,
                                 const GgufExportOptions& options, const AskedTypes& asked);

}  // namespace tlio::detail
