// quant/hub/hub_values.hpp: what the Hub formats' decoders share. Each computes a weight's values
// as f32 products in its reference's operation order; the values are then stored the way the
// reference rounds them (docs/quantization.md, "Exact"): one rounding to the reference's dtype,
// and only then to another dtype the caller asked for.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "tlio/dtype.hpp"

namespace tlio::detail {

/// Elements a decoder computes at a time (f32 scratch of 256 KiB per call, whatever the weight).
inline constexpr uint64_t kHubChunkElements = uint64_t{1} << 16;

/// Stores `exact` (f32 values) as `out` into dst: F32 as they are; otherwise rounded to
/// `reference` (the dtype the reference computes in) and, when `out` differs, converted from there.
void store_rounded(std::span<const float> exact, Dtype reference, Dtype out, std::span<std::byte> dst);

/// Error{invalid_argument} unless dst holds exactly `count` values of `out`.
void check_destination(uint64_t count, Dtype out, std::span<const std::byte> dst);

/// Decodes elements [first, first + count) in chunks: fill(chunk_first, values) computes the f32
/// values of a chunk, which are then stored by store_rounded into their place in dst.
void decode_chunked(uint64_t first, uint64_t count, Dtype reference, Dtype out,
                    std::span<std::byte> dst,
                    const std::function<void(uint64_t, std::span<float>)>& fill);

/// F8_E4M3 (float8_e4m3fn) code -> its exact f32 value (NaN for 0x7F and 0xFF).
const std::array<float, 256>& e4m3_values() noexcept;

/// The f32 value of one element of a scale tensor (F32, BF16 or F16), read from raw bytes.
float scale_value(Dtype dtype, const std::byte* element) noexcept;

}  // namespace tlio::detail
