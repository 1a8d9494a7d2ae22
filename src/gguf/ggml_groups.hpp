// gguf/ggml_groups.hpp: the ggml block types whose values are a code times a group's scale plus
// its bias, or an FP4 code times a scale byte, taken apart into those parts so that a layout with
// the same arithmetic (MLX's) carries a block's bits instead of its rounded values (transcode).
#pragma once

#include <cstdint>

#include "gguf/ggml_blocks.hpp"

namespace tlio::detail {

/// How one block of a type splits: a row of the table ggml_groups() reads.
struct GgmlGroups {
  uint32_t id;
  unsigned bits;   ///< a code's width
  unsigned group;  ///< values per scale
  /// Affine types: each value's code (0 .. 2^bits - 1) and each group's scale and bias, such that
  /// the f32 product code * scale, then plus bias (two roundings), is ggml's value bit for bit:
  /// the scale and bias as ggml's decoder forms them (d * sc of a K-quant), an offset code's
  /// bias -offset * d (exact).
  void (*affine)(const u8* block, u8* codes, float* scales, float* biases) = nullptr;
  /// FP4 types: each value's E2M1 code in the convention of MLX and compressed-tensors (code 8 is
  /// -0, so ggml's code 8, a +0, becomes code 0) and each group's scale byte: E8M0 (MXFP4), or
  /// E4M3 (NVFP4) with the sign bit ggml ignores cleared and ggml's zero 0x7F as 0x00 (its
  /// 0xFF, 480, becomes E4M3's NaN: no layout with E4M3 scales has that value).
  void (*fp4)(const u8* block, u8* codes, u8* scales) = nullptr;
};

/// The row of ggml type `id`, or null for a type whose values are not carried (codebooks,
/// groups of 16, ternary).
const GgmlGroups* ggml_groups(uint32_t id) noexcept;

}  // namespace tlio::detail
