// quant/int4/int4_kernels.hpp: the per-row int4 kernels. They are plain loops written so the
// compiler vectorizes them, compiled by Highway once per x86 target (SSE2 ... AVX-512) and
// dispatched at run time, so the AVX-512 build of the same loop runs where the CPU has it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tlio::detail {

/// One row: q = cols/2 packed bytes, scales = cols/group F16 bits; out = cols F32 values.
void int4_dequantize_row(const uint8_t* q, const uint16_t* scales, uint64_t cols, uint64_t group,
                         float* out);

/// The same as BF16 bits (rounded to nearest even), fused; false (nothing written) when the
/// group does not suit the vector path, and the caller converts an F32 row instead.
bool int4_dequantize_row_bf16(const uint8_t* q, const uint16_t* scales, uint64_t cols,
                              uint64_t group, uint16_t* out);

/// One row of finite weights with `scales` already computed (F16 bits, as F32 in `scale_f32`):
/// writes the packed codes (cols/2 bytes). `codes` is scratch of cols bytes.
void int4_quantize_row(const float* w, const float* scale_f32, uint64_t cols, uint64_t group,
                       int8_t* codes, uint8_t* q);

}  // namespace tlio::detail
