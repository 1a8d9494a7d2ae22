// gguf/ggml_codebooks.cpp: ggml's codebook types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S) decoded as ggml's dequantize_row_* does: per 32 values a scale made from the block's
// half-precision d and a few bits (d * (0.5 + s) * 0.25, d * (1 + 2 s), ...), then each value
// the scale times a codebook entry, signed, in float; IQ1's entry plus or minus 1/8 first. The
// module's -ffp-contract=off keeps every product its own rounding.
#include <array>
#include <cstring>

#include "gguf/ggml_blocks.hpp"
#include "gguf/ggml_grids.hpp"
#include "tlio/convert.hpp"

namespace tlio::detail {
namespace {

inline float half(const u8* p) noexcept {
  return f16_to_f32(static_cast<uint16_t>(p[0] | p[1] << 8));
}
inline uint16_t u16_le(const u8* p) noexcept { return static_cast<uint16_t>(p[0] | p[1] << 8); }
inline uint32_t u32_le(const u8* p) noexcept {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// A packed grid unpacked: row r's entry j is values[(packed[r] >> bits * j) & mask].
template <typename T, size_t Rows, size_t Width, size_t Bits, size_t Values>
std::array<T, Rows * Width> unpack(const uint16_t (&packed)[Rows],
                                   const std::array<T, Values>& values) {
  std::array<T, Rows * Width> grid{};
  for (size_t r = 0; r < Rows; ++r)
    for (size_t j = 0; j < Width; ++j)
      grid[r * Width + j] = values[(packed[r] >> (Bits * j)) & ((1u << Bits) - 1)];
  return grid;
}

constexpr std::array<uint8_t, 3> kIq2Values = {0x08, 0x19, 0x2B};
constexpr std::array<uint8_t, 8> kIq3xxsValues = {0x04, 0x0C, 0x14, 0x1C, 0x24, 0x2C, 0x34, 0x3E};
constexpr std::array<uint8_t, 8> kIq3sValues = {1, 3, 5, 7, 9, 11, 13, 15};
constexpr std::array<int8_t, 3> kIq1Values = {-1, 0, 1};
constexpr float kIq1Delta = 0.125f;

inline float sign(unsigned signs, int j) noexcept { return signs >> j & 1 ? -1.f : 1.f; }

}  // namespace

const uint8_t* iq2xxs_grid() noexcept {
  static const auto grid = unpack<uint8_t, 256, 8, 2>(kIq2xxsGridPacked, kIq2Values);
  return grid.data();
}
const uint8_t* iq2xs_grid() noexcept {
  static const auto grid = unpack<uint8_t, 512, 8, 2>(kIq2xsGridPacked, kIq2Values);
  return grid.data();
}
const uint8_t* iq2s_grid() noexcept {
  static const auto grid = unpack<uint8_t, 1024, 8, 2>(kIq2sGridPacked, kIq2Values);
  return grid.data();
}
const uint8_t* iq3xxs_grid() noexcept {
  static const auto grid = unpack<uint8_t, 256, 4, 3>(kIq3xxsGridPacked, kIq3xxsValues);
  return grid.data();
}
const uint8_t* iq3s_grid() noexcept {
  static const auto grid = unpack<uint8_t, 512, 4, 3>(kIq3sGridPacked, kIq3sValues);
  return grid.data();
}
const int8_t* iq1s_grid() noexcept {
  static const auto grid = unpack<int8_t, 2048, 8, 2>(kIq1sGridPacked, kIq1Values);
  return grid.data();
}

namespace ggml_decoders {

// d, then per 32 values 8 bytes: four grid indices, then 4 x 7 sign bits and a 4-bit scale.
void iq2_xxs(const u8* b, float* y) {
  const float d = half(b);
  const u8* grid = iq2xxs_grid();
  for (int ib = 0; ib < 8; ++ib) {
    const u8* q = b + 2 + 8 * ib;
    const uint32_t aux = u32_le(q + 4);
    const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.25f;
    for (int l = 0; l < 4; ++l, y += 8) {
      const u8* g = grid + 8 * q[l];
      const unsigned signs = iq2_signs(aux >> 7 * l & 127);
      for (int j = 0; j < 8; ++j) y[j] = db * static_cast<float>(g[j]) * sign(signs, j);
    }
  }
}

// d, 32 x 16 bits (a 9-bit grid index, 7 sign bits), 8 bytes of two 4-bit scales.
void iq2_xs(const u8* b, float* y) {
  const float d = half(b);
  const u8* grid = iq2xs_grid();
  for (int ib = 0; ib < 8; ++ib) {
    const u8 sc = b[66 + ib];
    const float db[2] = {d * (0.5f + static_cast<float>(sc & 0xF)) * 0.25f,
                         d * (0.5f + static_cast<float>(sc >> 4)) * 0.25f};
    for (int l = 0; l < 4; ++l, y += 8) {
      const uint16_t q = u16_le(b + 2 + 8 * ib + 2 * l);
      const u8* g = grid + 8 * (q & 511);
      const unsigned signs = iq2_signs(q >> 9);
      for (int j = 0; j < 8; ++j) y[j] = db[l / 2] * static_cast<float>(g[j]) * sign(signs, j);
    }
  }
}

// d, 32 grid index bytes, 32 sign bytes, 8 bytes of the indices' top 2 bits, 8 of scales.
void iq2_s(const u8* b, float* y) {
  const float d = half(b);
  const u8 *qs = b + 2, *signs = b + 34, *qh = b + 66, *scales = b + 74;
  const u8* grid = iq2s_grid();
  for (int ib = 0; ib < 8; ++ib, qs += 4, signs += 4) {
    const float db[2] = {d * (0.5f + static_cast<float>(scales[ib] & 0xF)) * 0.25f,
                         d * (0.5f + static_cast<float>(scales[ib] >> 4)) * 0.25f};
    for (int l = 0; l < 4; ++l, y += 8) {
      const u8* g = grid + 8 * (qs[l] | (qh[ib] << (8 - 2 * l) & 0x300));
      for (int j = 0; j < 8; ++j) y[j] = db[l / 2] * static_cast<float>(g[j]) * sign(signs[l], j);
    }
  }
}

// d, 64 grid index bytes (4 values each), then per 32 values 4 x 7 sign bits and a scale.
void iq3_xxs(const u8* b, float* y) {
  const float d = half(b);
  const u8* grid = iq3xxs_grid();
  for (int ib = 0; ib < 8; ++ib) {
    const u8* q = b + 2 + 8 * ib;
    const uint32_t aux = u32_le(b + 66 + 4 * ib);
    const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l, y += 8) {
      const unsigned signs = iq2_signs(aux >> 7 * l & 127);
      const u8 *g1 = grid + 4 * q[2 * l], *g2 = grid + 4 * q[2 * l + 1];
      for (int j = 0; j < 4; ++j) {
        y[j] = db * static_cast<float>(g1[j]) * sign(signs, j);
        y[j + 4] = db * static_cast<float>(g2[j]) * sign(signs, j + 4);
      }
    }
  }
}

// d, 64 grid index bytes, 8 bytes of their top bits, 32 sign bytes, 4 bytes of two scales.
void iq3_s(const u8* b, float* y) {
  const float d = half(b);
  const u8 *qs = b + 2, *qh = b + 66, *signs = b + 74, *scales = b + 106;
  const u8* grid = iq3s_grid();
  for (int ib = 0; ib < 8; ++ib, qs += 8, signs += 4) {
    const u8 s = ib % 2 ? scales[ib / 2] >> 4 : scales[ib / 2] & 0xF;
    const float db = d * static_cast<float>(1 + 2 * s);
    for (int l = 0; l < 4; ++l, y += 8) {
      const u8* g1 = grid + 4 * (qs[2 * l] | (qh[ib] << (8 - 2 * l) & 256));
      const u8* g2 = grid + 4 * (qs[2 * l + 1] | (qh[ib] << (7 - 2 * l) & 256));
      for (int j = 0; j < 4; ++j) {
        y[j] = db * static_cast<float>(g1[j]) * sign(signs[l], j);
        y[j + 4] = db * static_cast<float>(g2[j]) * sign(signs[l], j + 4);
      }
    }
  }
}

// d, 32 grid index bytes, per 32 values 16 bits: 4 x 3 index bits, a 3-bit scale, the delta's
// sign.
void iq1_s(const u8* b, float* y) {
  const float d = half(b);
  const u8* qs = b + 2;
  const int8_t* grid = iq1s_grid();
  for (int ib = 0; ib < 8; ++ib, qs += 4) {
    const uint16_t qh = u16_le(b + 34 + 2 * ib);
    const float dl = d * static_cast<float>(2 * (qh >> 12 & 7) + 1);
    const float delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
    for (int l = 0; l < 4; ++l, y += 8) {
      const int8_t* g = grid + 8 * (qs[l] | (qh >> 3 * l & 7) << 8);
      for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(g[j]) + delta);
    }
  }
}

// 32 grid index bytes, 16 bytes of 2 x (3 index bits, the delta's sign), 4 x 16 bits of
// 3-bit scales whose top nibbles together are d.
void iq1_m(const u8* b, float* y) {
  const u8 *qs = b, *qh = b + 32;
  uint16_t sc[4];
  for (int k = 0; k < 4; ++k) sc[k] = u16_le(b + 48 + 2 * k);
  const uint16_t d_bits = static_cast<uint16_t>((sc[0] >> 12) | (sc[1] >> 8 & 0x00F0) |
                                                (sc[2] >> 4 & 0x0F00) | (sc[3] & 0xF000));
  const float d = f16_to_f32(d_bits);
  const int8_t* grid = iq1s_grid();
  for (int ib = 0; ib < 8; ++ib, qs += 4, qh += 2) {
    const int shift = 6 * (ib % 2);
    const float dl[2] = {d * static_cast<float>(2 * (sc[ib / 2] >> shift & 7) + 1),
                         d * static_cast<float>(2 * (sc[ib / 2] >> (shift + 3) & 7) + 1)};
    const unsigned idx[4] = {qs[0] | (qh[0] << 8 & 0x700u), qs[1] | (qh[0] << 4 & 0x700u),
                             qs[2] | (qh[1] << 8 & 0x700u), qs[3] | (qh[1] << 4 & 0x700u)};
    const float delta[4] = {
        qh[0] & 0x08 ? -kIq1Delta : kIq1Delta, qh[0] & 0x80 ? -kIq1Delta : kIq1Delta,
        qh[1] & 0x08 ? -kIq1Delta : kIq1Delta, qh[1] & 0x80 ? -kIq1Delta : kIq1Delta};
    for (int l = 0; l < 4; ++l, y += 8) {
      const int8_t* g = grid + 8 * idx[l];
      for (int j = 0; j < 8; ++j) y[j] = dl[l / 2] * (static_cast<float>(g[j]) + delta[l]);
    }
  }
}

}  // namespace ggml_decoders
}  // namespace tlio::detail
