// gguf/ggml_groups.cpp: ggml's blocks taken apart into codes and group parameters
// (gguf/ggml_groups.hpp), read as ggml_decode.cpp reads them: the same scales, formed the same way.
#include "gguf/ggml_groups.hpp"

#include "tlio/convert.hpp"
#include "tlio/ggml.hpp"

namespace tlio::detail {

namespace {

inline float half(const u8* p) noexcept {
  return f16_to_f32(static_cast<uint16_t>(p[0] | p[1] << 8));
}
inline uint32_t u32_le(const u8* p) noexcept {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// Sixteen bytes of two codes each: code j in byte j's low nibble, j + 16 in its high one.
void split_nibbles(const u8* q, u8* codes) {
  for (int j = 0; j < 16; ++j) {
    codes[j] = q[j] & 0x0F;
    codes[j + 16] = q[j] >> 4;
  }
}
// The same with a fifth bit of each code in `qh` (bit j for code j, bit j + 16 for j + 16).
void split_nibbles_high(const u8* q, uint32_t qh, u8* codes) {
  for (int j = 0; j < 16; ++j) {
    codes[j] = static_cast<u8>((q[j] & 0x0F) | (((qh >> j) << 4) & 0x10));
    codes[j + 16] = static_cast<u8>((q[j] >> 4) | ((qh >> (j + 12)) & 0x10));
  }
}

// Legacy types: one F16 d (and m) per 32; (q - offset) * d is exact in f32, and so are q * d and
// -offset * d, so q * d + (-offset * d) rounds to it.
void q4_0(const u8* b, u8* codes, float* s, float* m) {
  s[0] = half(b);
  m[0] = -8.0f * s[0];
  split_nibbles(b + 2, codes);
}
void q4_1(const u8* b, u8* codes, float* s, float* m) {
  s[0] = half(b);
  m[0] = half(b + 2);
  split_nibbles(b + 4, codes);
}
void q5_0(const u8* b, u8* codes, float* s, float* m) {
  s[0] = half(b);
  m[0] = -16.0f * s[0];
  split_nibbles_high(b + 6, u32_le(b + 2), codes);
}
void q5_1(const u8* b, u8* codes, float* s, float* m) {
  s[0] = half(b);
  m[0] = half(b + 2);
  split_nibbles_high(b + 8, u32_le(b + 4), codes);
}
void q8_0(const u8* b, u8* codes, float* s, float* m) {
  s[0] = half(b);
  m[0] = -128.0f * s[0];
  for (int j = 0; j < 32; ++j) codes[j] = static_cast<u8>(static_cast<int8_t>(b[2 + j]) + 128);
}
void q2_0(const u8* b, u8* codes, float* s, float* m) {
  s[0] = half(b);
  m[0] = -s[0];
  for (int j = 0; j < 64; ++j) codes[j] = (b[2 + j / 4] >> (2 * (j % 4))) & 3;
}

// K-quants of 4 and 5 bits: eight groups of 32, scale d * sc and bias -(dmin * m) as the decoder
// forms them (d1 * q - m1 is d1 * q + (-m1) to the bit).
template <bool kFifthBit>
void k_quant(const u8* p, u8* codes, float* s, float* m) {
  const u8 *d_bytes = p, *dmin_bytes = p + 2, *packed = p + 4;
  const u8* qh = kFifthBit ? p + 16 : nullptr;
  const u8* q = kFifthBit ? p + 48 : p + 16;
  const float d = half(d_bytes), dmin = half(dmin_bytes);
  for (int is = 0; is < 8; is += 2, q += 32) {
    for (int h = 0; h < 2; ++h) {
      int sc, mn;
      scale_min_k4(is + h, packed, sc, mn);
      s[is + h] = d * static_cast<float>(sc);
      m[is + h] = -(dmin * static_cast<float>(mn));
      u8* c = codes + 32 * (is + h);
      const unsigned bit = 1u << (is + h);
      for (int l = 0; l < 32; ++l) {
        c[l] = h ? q[l] >> 4 : q[l] & 0x0F;
        if (kFifthBit && (qh[l] & bit)) c[l] |= 0x10;
      }
    }
  }
}
static_assert(sizeof(BlockQ4K) == 144 && sizeof(BlockQ5K) == 176);

// FP4: ggml's code 8 is +0, MLX's and compressed-tensors' -0; their +0 is code 0.
inline u8 fp4_code(u8 ggml_code) noexcept { return ggml_code == 8 ? 0 : ggml_code; }

void mxfp4(const u8* b, u8* codes, u8* scales) {
  scales[0] = b[0];
  split_nibbles(b + 1, codes);
  for (int j = 0; j < 32; ++j) codes[j] = fp4_code(codes[j]);
}
void nvfp4(const u8* b, u8* codes, u8* scales) {
  for (int g = 0; g < 4; ++g) {
    // ggml reads the byte unsigned, 0x7F as 0; 0xFF is its 480, E4M3's NaN (never carried).
    scales[g] = b[g] == 0x7F ? 0 : b[g] & 0x7F;
    const u8* q = b + 4 + 8 * g;
    for (int j = 0; j < 8; ++j) {
      codes[16 * g + j] = fp4_code(q[j] & 0x0F);
      codes[16 * g + j + 8] = fp4_code(q[j] >> 4);
    }
  }
}

using T = GgmlTypeId;
const GgmlGroups kGroups[] = {
    {ggml_id(T::Q4_0), 4, 32, q4_0},
    {ggml_id(T::Q4_1), 4, 32, q4_1},
    {ggml_id(T::Q5_0), 5, 32, q5_0},
    {ggml_id(T::Q5_1), 5, 32, q5_1},
    {ggml_id(T::Q8_0), 8, 32, q8_0},
    {ggml_id(T::Q4_K), 4, 32, k_quant<false>},
    {ggml_id(T::Q5_K), 5, 32, k_quant<true>},
    {ggml_id(T::Q2_0), 2, 64, q2_0},
    {ggml_id(T::MXFP4), 4, 32, nullptr, mxfp4},
    {ggml_id(T::NVFP4), 4, 16, nullptr, nvfp4},
};

}  // namespace

const GgmlGroups* ggml_groups(uint32_t id) noexcept {
  for (const GgmlGroups& g : kGroups)
    if (g.id == id) return &g;
  return nullptr;
}

}  // namespace tlio::detail
