// quant/bnb/bnb_kernels.hpp: the inner loops of bitsandbytes 4-bit quantize and dequantize,
// compiled by Highway once per x86 target and dispatched at run time. Callers (the bnb_*.cpp
// files, through bnb_common.hpp) do the checks, the blocking and the threading.
#pragma once

#include <cstdint>

namespace tlio::detail {

/// The largest |x| of n values as float bits (the max of the magnitude bits, so a NaN or an
/// infinity shows as a value >= 0x7F800000).
uint32_t bnb_absmax_bits(const float* x, uint64_t n);

/// codes[i] = the number of the 15 ascending `bounds` strictly below
/// clamp(divide ? x[i] / scale : x[i] * scale, -1, 1) (torch.bucketize, right=False).
void bnb_bucketize15(const float* x, uint64_t n, float scale, bool divide, const float* bounds,
                     uint8_t* codes);

/// Elements [first, first + count) of a 4-bit tensor: table[code] * absmax[i / blocksize] in
/// F32 (out) or rounded to BF16 bits (out_bf16, only when `first` is even). `blocksize` is a
/// multiple of 32.
void bnb_dequant4_f32(const uint8_t* packed, const float* absmax, const float* table,
                      uint64_t blocksize, uint64_t first, uint64_t count, float* out);
void bnb_dequant4_bf16(const uint8_t* packed, const float* absmax, const float* table,
                       uint64_t blocksize, uint64_t first, uint64_t count, uint16_t* out);

}  // namespace tlio::detail
