// quant/hub/hub_values.hpp: what the Hub formats' decoders share. Each computes a weight's values
// as f32 products in its reference's operation order; the values are then stored the way the
// reference rounds them (docs/quantization.md, "Exact"): one rounding to the reference's dtype,
// and only then to another dtype the caller asked for.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tlio/dtype.hpp"

namespace tlio::detail {

/// Inputs per E8M0 scale of the MX formats (MXFP8, MXFP4).
inline constexpr uint64_t kMxGroup = 32;

/// Elements a decoder computes at a time (f32 scratch of 256 KiB per call, whatever the weight).
inline constexpr uint64_t kHubChunkElements = uint64_t{1} << 16;

/// Stores `exact` (f32 values) as `out` into dst: F32 as they are; otherwise rounded to
/// `reference` (the dtype the reference computes in) and, when `out` differs, converted from there.
void store_rounded(std::span<const float> exact, Dtype reference, Dtype out,
                   std::span<std::byte> dst);

/// Error{invalid_argument} unless dst holds exactly `count` values of `out`.
void check_destination(uint64_t count, Dtype out, std::span<const std::byte> dst);

/// Decodes elements [first, first + count) in chunks of `chunk_elements`: fill(chunk_first,
/// values) computes the f32 values of a chunk, which are then stored by store_rounded into their
/// place in dst.
void decode_chunked(uint64_t first, uint64_t count, Dtype reference, Dtype out,
                    std::span<std::byte> dst,
                    const std::function<void(uint64_t, std::span<float>)>& fill,
                    uint64_t chunk_elements = kHubChunkElements);

/// F8_E4M3 (float8_e4m3fn) code -> its exact f32 value (NaN for 0x7F and 0xFF).
const std::array<float, 256>& e4m3_values() noexcept;

/// The f32 value of one element of a scale tensor (F32, BF16 or F16), read from raw bytes.
float scale_value(Dtype dtype, const std::byte* element) noexcept;

/// E8M0 (MX scale) code -> 2^(code - 127) in f32: 2^-127 a subnormal, 255 +inf, as gpt-oss's
/// and compressed-tensors' arithmetic on U8 scale bytes gives it under the torch they were
/// written with (2^(b-127): 255 is 2^128, and 0 * inf a NaN). No checkpoint holds 255 (gpt-oss
/// asserts its scales stay below 240); docs/interop.md says what each reference makes of it.
const std::array<float, 256>& e8m0_values() noexcept;

/// The scale table for E8M0 bytes stored as `stored`: e8m0_values(), and for F8_E8M0 (the
/// dtype, as OCP MX, torch.float8_e8m0fnu and transformers' FP8 dequantizer read it) 255 NaN.
std::array<float, 256> e8m0_scales(Dtype stored) noexcept;

/// FP4 E2M1 code (0..15) -> value: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives; code 8 is
/// -0 or +0 as the reference's table has it.
std::array<float, 16> e2m1_values(bool negative_zero) noexcept;

/// Error{format, "quant"} unless each of the `count` I32 values of `g_idx` (an input's group)
/// names one of `groups` groups; its values otherwise.
std::vector<uint32_t> group_indices(std::span<const std::byte> g_idx, const std::string& name,
                                    uint64_t count, uint64_t groups);

/// Word i of little-endian I32 words (tensor data need not be 4-byte aligned).
inline uint32_t load_word(const std::byte* words, uint64_t i) {
  uint32_t w;
  std::memcpy(&w, words + 4 * i, 4);
  return w;
}

/// Field `index` of width `bits` (1..8) in an LSB-first stream of little-endian words, word i of
/// the stream at words[i * stride]; a field may continue in the next word.
inline uint32_t field(const std::byte* words, uint64_t stride, uint64_t index, uint64_t bits) {
  const uint64_t bit = index * bits, word = bit / 32, shift = bit % 32;
  uint64_t v = load_word(words, word * stride) >> shift;
  if (shift + bits > 32) v |= uint64_t{load_word(words, (word + 1) * stride)} << (32 - shift);
  return static_cast<uint32_t>(v) & ((1u << bits) - 1);
}

}  // namespace tlio::detail
