// gguf_convert/ggml_carry.hpp: a folder's quantized weight written as ggml's blocks by a
// transcode to GGUF: MXFP4 (compressed-tensors', MLX's) and NVFP4 (compressed-tensors' with a
// global scale of 1, MLX's) carried code for code and scale byte for scale byte; with `lossy`,
// the others requantized into the ggml type of their width. Each row is proven: ggml's decode of
// its blocks against the source's decoder.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "gguf_convert/gguf_export_parts.hpp"
#include "tlio/quant.hpp"

namespace tlio::detail {

/// The ggml type weight `w` (of the model's `files`) is carried into, or nullopt with the reason
/// in `refusal` (a scheme no ggml type computes, a global scale that is not 1, rows that are not
/// whole blocks).
std::optional<uint32_t> ggml_carry_type(std::span<const File> files, const QuantizedWeight& w,
                                        std::string& refusal);

/// The ggml type a weight no rule carries is requantized into: Q2_K .. Q6_K or Q8_0 by the bits
/// its scheme spends, as llama.cpp falls back where its rows are not whole super-blocks.
uint32_t ggml_lossy_type(const QuantizedWeight& w);

/// Writes `part` (a quantized weight) of tensor `p` (carry set, decl.type chosen) in pieces of
/// whole rows (whole heads where its rows are permuted), each row carried or requantized, then
/// decoded as ggml decodes it and compared with the source's values; Error{format} naming the
/// first that differs. Adds the weight's item to pass.carried; returns the bytes read.
uint64_t write_carried_part(const PlannedTensor& p, const SourcePart& part, GgufWriter& writer,
                            PiecePass& pass, const std::function<void(uint64_t)>& piece_done);

}  // namespace tlio::detail
