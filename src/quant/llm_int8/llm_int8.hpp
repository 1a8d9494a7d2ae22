// quant/llm_int8/llm_int8.hpp: LLM.int8 row-wise int8 (bitsandbytes Int8Params), bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tlio/dtype.hpp"

namespace tlio::detail {

/// Quantizes a row-major [rows, cols] matrix as Int8Params does: each value rounded to F16 first,
/// SCB[r] = max |w[r, :]|, cb = round_half_even(w * f32(127 * f32(1 / SCB[r]))) (torch computes
/// `127.0 / SCB` through the reciprocal). A zero row stores 0s.
/// Throws Error{invalid_argument} for NaN or infinite values (after the F16 rounding).
void llm_int8_quantize(std::span<const float> w, uint64_t rows, uint64_t cols, std::span<int8_t> cb,
                       std::span<float> scb);
/// Elements [first, first + count) of the row-major matrix: f32(f32(cb * SCB[r]) * (1/127 as
/// float32)), as `out` (F32, F16 or BF16) into dst.
void llm_int8_dequantize(std::span<const int8_t> cb, std::span<const float> scb, uint64_t cols,
                         uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst);

}  // namespace tlio::detail
