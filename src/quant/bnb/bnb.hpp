// quant/bnb/bnb.hpp: the kernels and the quant_state of bitsandbytes 4-bit (NF4/FP4 with a
// float32 absmax per block, optionally "nested": the absmax itself quantized to 8 bits) and its
// 8-bit blockwise quantization with the dynamic map. The arithmetic is bnb >= 0.50's CPU default
// backend, bit for bit (docs/quantization.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/bnb.hpp"
#include "tlio/dtype.hpp"
#include "tlio/shape.hpp"

namespace tlio::detail {

/// get_4bit_type(type): the value of each 4-bit code (index = code).
const std::array<float, 16>& bnb_4bit_table(BnbQuantType type) noexcept;
/// create_dynamic_map(): the 256 sorted values of the 8-bit blockwise code.
const std::array<float, 256>& bnb_dynamic_map() noexcept;

// ---- 4-bit ------------------------------------------------------------------------------------

/// Quantizes n = x.size() values: packed holds (n + 1) / 2 bytes (element 2j in the high nibble),
/// absmax ceil(n / blocksize) floats. Throws Error{invalid_argument} for a blocksize outside
/// BNB-001, wrong buffer sizes, or a NaN or infinite value.
void bnb_quantize_4bit(std::span<const float> x, BnbQuantType type, uint64_t blocksize,
                       std::span<uint8_t> packed, std::span<float> absmax);

/// Elements [first, first + count) of a 4-bit tensor as `out` (F32, F16 or BF16, rounded to
/// nearest even) into dst. `absmax` is the effective (non-nested) absmax of the whole tensor,
/// `packed` its whole packed bytes.
void bnb_dequantize_4bit(std::span<const uint8_t> packed, std::span<const float> absmax,
                         BnbQuantType type, uint64_t blocksize, uint64_t first, uint64_t count,
                         Dtype out, std::span<std::byte> dst);

// ---- 8-bit blockwise (dynamic map)
// ---------------------------------------------------------------

/// quantize_blockwise: q holds one code per value (the nearest entry of bnb_dynamic_map, ties to
/// the lower), absmax one float per block (any blocksize >= 1).
void bnb_quantize_blockwise8(std::span<const float> x, uint64_t blocksize, std::span<uint8_t> q,
                             std::span<float> absmax);
/// dequantize_blockwise: out[i] = code[q[i]] * absmax[i / blocksize] in float32.
void bnb_dequantize_blockwise8(std::span<const uint8_t> q, std::span<const float> absmax,
                               std::span<const float> code, uint64_t blocksize,
                               std::span<float> out);

/// An absmax vector quantized the way compress_statistics / nested=True does it: offset = its
/// mean, and (absmax - offset) quantized 8-bit blockwise.
struct BnbNestedAbsmax {
  float offset = 0;
  uint64_t blocksize = 256;
  std::vector<uint8_t> codes;  ///< one per outer block
  std::vector<float> absmax2;  ///< one per `blocksize` outer blocks
};
/// `offset` overrides the mean (to reproduce a file made with another summation order).
BnbNestedAbsmax bnb_nest_absmax(std::span<const float> absmax, uint64_t blocksize = 256,
                                std::optional<float> offset = std::nullopt);
/// The effective absmax: f32(f32(code[codes[b]] * absmax2[b / blocksize]) + offset).
std::vector<float> bnb_unnest_absmax(std::span<const uint8_t> codes, std::span<const float> absmax2,
                                     std::span<const float> code, uint64_t blocksize, float offset);

// ---- quant_state --------------------------------------------------------------------------------

/// The non-tensor fields of a 4-bit QuantState, stored as the JSON of the
/// `<w>.quant_state.bitsandbytes__<type>` tensor.
struct BnbQuantState {
  BnbQuantType quant_type = BnbQuantType::nf4;
  uint64_t blocksize = 64;
  Dtype dtype = Dtype::F32;  ///< the original dtype: F16, BF16 or F32
  Shape shape;               ///< the original shape
  bool nested = false;
  uint64_t nested_blocksize = 256;
  Dtype nested_dtype = Dtype::F32;
  double nested_offset = 0;  ///< a float32 value widened
};

/// Parses the JSON. Throws Error{format} with rule "BNB-001" for a quant_type or blocksize
/// outside that rule, "BNB-004" for an incomplete nested state, "bnb" for anything else (not
/// JSON, unknown or missing keys, wrong types).
BnbQuantState parse_bnb_quant_state(std::string_view json);
/// The JSON exactly as Python's json.dumps writes it for bitsandbytes (key order, ", " and ": ").
std::string bnb_quant_state_json(const BnbQuantState& state);

}  // namespace tlio::detail
