// quant/hub/hub_kernels.hpp: the Hub decoders' inner loops on vectors, compiled by Highway once
// per x86 target and dispatched at run time. Each gives the same f32 bits as its scalar form in
// the decoder (a table lookup, then one f32 product), so the reference's rounding is unchanged.
#pragma once

#include <cstdint>

namespace tlio::detail {

/// out[i] = value(codes[i]) * scale for n F8_E4M3 codes: the f32 value of each code (NaN for
/// 0x7F and 0xFF, as e4m3_values() has them) times `scale`, one rounding each.
void e4m3_scaled(const uint8_t* codes, uint64_t n, float scale, float* out);

/// out[2i] = value(codes[i] & 15) * scale and out[2i + 1] = value(codes[i] >> 4) * scale for n
/// bytes of E2M1 codes (2n values, the low nibble first): the values as
/// e2m1_values(negative_zero) has them (code 8 is -0 or +0), times `scale`, one rounding each.
void e2m1_scaled(const uint8_t* codes, uint64_t n, float scale, bool negative_zero, float* out);

}  // namespace tlio::detail
