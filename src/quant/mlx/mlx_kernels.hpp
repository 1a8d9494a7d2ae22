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
#include <cstring>
#include <span>

#include "tlio/dtype.hpp"
#include "tlio/quant.hpp"

namespace tlio::detail {

/// mx.quantize's floor on an affine group's scale.
inline constexpr float kMlxAffineEps = 1e-7f;

/// Affine quantization of one group of f32 values: the f32 scale and bias (before they are
/// rounded to the weights' dtype) and each value's code (0 .. 2^bits - 1). False, and nothing
/// made, where a value is not finite (mx.quantize has no code for it).
bool mlx_affine_group(const float* values, uint64_t n, unsigned bits, float& scale, float& bias,
                      uint8_t* codes);

/// Appends `n` codes of `bits` bits at bit `first_bit` of a little-endian stream of U32 words
/// (`words` zeroed beforehand where they are written).
void mlx_pack(const uint8_t* codes, uint64_t n, unsigned bits, uint64_t first_bit, uint32_t* words);

/// Codes [first, first + n) of a row's bit stream (`row`, U32 words as bytes), `bits` each.
void mlx_unpack(const std::byte* row, uint64_t first, uint64_t n, unsigned bits, uint8_t* codes);

/// Values rounded to `t` (F16, BF16; F32 as they are), in place: what MLX's ops in T give.
void mlx_round_through(Dtype t, std::span<float> values);

/// One value rounded to BF16 or F16 (to nearest even; NaN kept), as a float: the scalar form of
/// mlx_round_through for the inner loops.
inline float mlx_round_bf16(float x) noexcept {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
  // A NaN stays one (a small payload would carry into the exponent): a select, and inline, so
  // the loops that call this vectorize.
  bits = x != x ? (bits | 0x00400000u) & 0xFFFF0000u : rounded;
  std::memcpy(&x, &bits, 4);
  return x;
}
float mlx_round_f16(float x) noexcept;
inline float mlx_round(Dtype t, float x) noexcept {
  return t == Dtype::BF16 ? mlx_round_bf16(x) : t == Dtype::F16 ? mlx_round_f16(x) : x;
}

/// Affine values of `n` codes with one group's scale and bias (T values): round_T(round_T(q *
/// scale) + bias), as mx.dequantize computes them.
void mlx_affine_values(const uint8_t* codes, uint64_t n, float scale, float bias, Dtype t,
                       float* out);

/// Elements [first, first + n) of a row of mxfp4/mxfp8/nvfp4 codes (`scales`: the row's scale
/// bytes, one per `group`), each code's value times its scale byte's in f32 (code 8 of FP4 is -0,
/// MLX's table), rounded to `t`, as mx.dequantize gives them: by tables, a group at a time.
void mlx_fp_values(MlxMode mode, const uint8_t* codes, uint64_t first, uint64_t n,
                   const uint8_t* scales, uint64_t group, Dtype t, float* out);

// The other modes, as mx.quantize computes them in the weights' dtype T (mlx 0.32.4: the MX
// scale rounded up, so that no value saturates).

/// The exponent of an MX group's scale: ceil(log2(s)) for s = round_T(amax / max_value) (6 for
/// FP4, 448 for FP8), 0 for s = 0. Its E8M0 byte is 127 + it wrapped to 8 bits, as MLX stores
/// it (no clamping); its values are divided by 2^it.
int mlx_mx_exponent(float amax, float max_value, Dtype t);
/// The E2M1 code of x: the nearest of 0, 0.5, 1, 1.5, 2, 3, 4, 6, a tie to the smaller
/// magnitude (MLX's argmin over its table), the sign only on a nonzero code (never -0).
uint8_t mlx_fp4_code(float x);
/// The E4M3 (float8_e4m3fn) byte of x, to nearest even, subnormals included; 448 and beyond
/// (infinities and NaN too) saturate to +-448 (0x7E, 0xFE), as MLX's ToFP8.
uint8_t mlx_fp8_byte(float x);

}  // namespace tlio::detail
