// quant/mlx/mlx_kernels.hpp: MLX's quantized values, as mx.quantize and mx.dequantize compute them
// on mlx 0.32's CPU backend (docs/quantization.md, "MLX"). Affine: per group of `group` values
// along the last axis, in f32, the end of larger magnitude is the bias (the max on a tie) and
// scale = bias / rint(bias / s0) with s0 = +-max((max - min) / (2^bits - 1), 1e-7), so the edge
// and 0 land on codes exactly; codes rint((w - bias) / scale) clamped, computed with the f32
// scale before it is stored in the weights' dtype T. Codes are one little-endian bit stream per
// row in U32 words (3, 5 and 6 bits straddle words). Dequantized as round_T(round_T(q * s) + b):
// two roundings, no fused multiply-add.
#pragma once

#include <cstdint>
#include <span>

#include "tlio/dtype.hpp"

namespace tlio::detail {

/// mx.quantize's floor on an affine group's scale.
inline constexpr float kMlxAffineEps = 1e-7f;

/// Affine quantization of one group of f32 values: the f32 scale and bias (before they are
/// rounded to the weights' dtype) and each value's code (0 .. 2^bits - 1).
void mlx_affine_group(const float* values, uint64_t n, unsigned bits, float& scale, float& bias,
                      uint8_t* codes);

/// Appends `n` codes of `bits` bits at bit `first_bit` of a little-endian stream of U32 words
/// (`words` zeroed beforehand where they are written).
void mlx_pack(const uint8_t* codes, uint64_t n, unsigned bits, uint64_t first_bit, uint32_t* words);

/// Values rounded to `t` (F16, BF16; F32 as they are), in place: what MLX's ops in T give.
void mlx_round_through(Dtype t, std::span<float> values);

}  // namespace tlio::detail
