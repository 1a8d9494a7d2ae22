// quant/int4/int4.hpp: the tinyllm int4-g<group>-sym kernels (docs/quantization.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tlio/dtype.hpp"

namespace tlio::detail {

/// Quantizes a row-major [rows, cols] matrix of F32 values: per (row, group) the scale is
/// absmax / 7 in F32 rounded to F16, and q = clamp(round_half_even(w / scale), -8, 7); a group
/// whose scale is 0 stores q = 0. `qweight` holds rows * cols / 2 bytes (low nibble = even
/// column), `scales` rows * cols / group F16 bit patterns. Throws Error{invalid_argument} for odd
/// cols, a group that does not divide cols, sizes that do not match, a NaN or infinite weight,
/// or a scale beyond F16's range.
void int4_quantize(std::span<const float> weights, uint64_t rows, uint64_t cols, uint64_t group,
                   std::span<uint8_t> qweight, std::span<uint16_t> scales);

/// Dequantizes rows [first_row, first_row + row_count) into `dst` as F32, F16 or BF16
/// (row_count * cols elements). `qweight`/`scales` are the whole matrix's.
void int4_dequantize_rows(std::span<const uint8_t> qweight, std::span<const uint16_t> scales,
                          uint64_t rows, uint64_t cols, uint64_t group, uint64_t first_row,
                          uint64_t row_count, Dtype out, std::span<std::byte> dst);

}  // namespace tlio::detail
