// gguf/ggml_quantize.cpp: ggml's reference quantizers (quantize_row_*_ref in ggml-quants.c, what
// llama-quantize writes without an importance matrix), followed step for step so that every
// block is byte-identical: float arithmetic in ggml's order, its rounding helpers (roundf for
// Q8_0, truncation of x + 8.5 for the legacy 4/5-bit types, nearest_int's round-half-to-even in
// the K-quants), scales computed in fp32 and only stored as fp16. The gguf module is compiled
// with -ffp-contract=off: a fused multiply-add would round differently from ggml's x86 build.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gguf/ggml_blocks.hpp"
#include "gguf/ggml_quantize_kernels.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/ggml.hpp"

namespace tlio {

namespace detail::ggml_encoders {

// Below this a group is all zeros (ggml's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

// Round half to even through the float adder: 1.5 * 2^23 pushes the fraction out (ggml's
// nearest_int; |f| <= 4194303).
inline int nearest_int(float f) noexcept {
  const float v = f + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &v, 4);
  return (i & 0x007fffff) - 0x00400000;
}

inline void put_half(u8* p, float v) noexcept {
  const uint16_t h = f32_to_f16(v);
  p[0] = static_cast<u8>(h);
  p[1] = static_cast<u8>(h >> 8);
}
inline float stored_half(const u8* p) noexcept {
  return f16_to_f32(static_cast<uint16_t>(p[0] | p[1] << 8));
}

// ---- 32-value blocks.
void q8_0(const float* x, u8* b) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j)
    amax = amax > std::fabs(x[j]) ? amax : std::fabs(x[j]);  // ggml's MAX (NaN wins)
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put_half(b, d);
  // A product that is not finite (a NaN or infinity in the block, or a scale so small that
  // 1 / d overflows) gets code 0, what ggml's x86 build writes for it (its cast is undefined).
  for (int j = 0; j < 32; ++j) {
    const float r = std::round(x[j] * id);
    b[2 + j] = std::isfinite(r) ? static_cast<u8>(static_cast<int8_t>(r)) : u8{0};
  }
}
// The element of largest magnitude, sign kept (the first of equals).
inline float signed_max(const float* x, int n) noexcept {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  return max;
}
inline void min_max(const float* x, int n, float& min, float& max) noexcept {
  min = 3.402823466e+38f;
  max = -3.402823466e+38f;
  for (int j = 0; j < n; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
}
void q4_0(const float* x, u8* b) {
  const float d = signed_max(x, 32) / -8;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put_half(b, d);
  for (int j = 0; j < 16; ++j) {
    const float x0 = x[j] * id, x1 = x[16 + j] * id;
    const u8 q0 = static_cast<u8>(std::min<int>(15, static_cast<int8_t>(x0 + 8.5f)));
    const u8 q1 = static_cast<u8>(std::min<int>(15, static_cast<int8_t>(x1 + 8.5f)));
    b[2 + j] = static_cast<u8>(q0 | q1 << 4);
  }
}
void q4_1(const float* x, u8* b) {
  float min, max;
  min_max(x, 32, min, max);
  const float d = (max - min) / 15;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put_half(b, d);
  put_half(b + 2, min);
  for (int j = 0; j < 16; ++j) {
    const float x0 = (x[j] - min) * id, x1 = (x[16 + j] - min) * id;
    const u8 q0 = static_cast<u8>(std::min<int>(15, static_cast<int8_t>(x0 + 0.5f)));
    const u8 q1 = static_cast<u8>(std::min<int>(15, static_cast<int8_t>(x1 + 0.5f)));
    b[4 + j] = static_cast<u8>(q0 | q1 << 4);
  }
}
// The fifth bits of 32 codes into a little-endian u32 (code j's at bit j).
inline void put_high_bits(u8* p, uint32_t qh) noexcept {
  for (int k = 0; k < 4; ++k) p[k] = static_cast<u8>(qh >> (8 * k));
}
void q5_0(const float* x, u8* b) {
  const float d = signed_max(x, 32) / -16;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put_half(b, d);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const float x0 = x[j] * id, x1 = x[16 + j] * id;
    const u8 q0 = static_cast<u8>(std::min<int>(31, static_cast<int8_t>(x0 + 16.5f)));
    const u8 q1 = static_cast<u8>(std::min<int>(31, static_cast<int8_t>(x1 + 16.5f)));
    b[6 + j] = static_cast<u8>((q0 & 0x0F) | (q1 & 0x0F) << 4);
    qh |= ((q0 & 0x10u) >> 4) << j;
    qh |= ((q1 & 0x10u) >> 4) << (j + 16);
  }
  put_high_bits(b + 2, qh);
}
void q5_1(const float* x, u8* b) {
  float min, max;
  min_max(x, 32, min, max);
  const float d = (max - min) / 31;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put_half(b, d);
  put_half(b + 2, min);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const float x0 = (x[j] - min) * id, x1 = (x[16 + j] - min) * id;
    const u8 q0 = static_cast<u8>(x0 + 0.5f), q1 = static_cast<u8>(x1 + 0.5f);
    b[8 + j] = static_cast<u8>((q0 & 0x0F) | (q1 & 0x0F) << 4);
    qh |= ((q0 & 0x10u) >> 4) << j;
    qh |= ((q1 & 0x10u) >> 4) << (j + 16);
  }
  put_high_bits(b + 4, qh);
}

// ---- The K-quants' searches.

// The error of one value: absolute (Q2_K) or squared. A template argument, so that no loop tests
// it.
template <bool kUseMad>
inline float error_of(float diff) noexcept {
  return kUseMad ? std::fabs(diff) : diff * diff;
}

// Asymmetric codes 0..nmax for n values with weights: the scale and (returned in *the_min, as
// a positive offset) the min of the best of nstep + 1 candidate grids (ggml's make_qkx2_quants).
template <bool kUseMad>
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, u8* L, float* the_min,
                       u8* Laux, float rmin, float rdelta, int nstep) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill_n(L, n, u8{0});
    *the_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<u8>(std::max(0, std::min(nmax, l)));
    best_error += weights[i] * error_of<kUseMad>(scale * static_cast<float>(L[i]) + min - x[i]);
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    // The codes first (independent: the compiler may put them on vectors), then the sums in
    // ggml's order.
    for (int i = 0; i < n; ++i)
      Laux[i] = static_cast<u8>(std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min)))));
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const float w = weights[i], fl = static_cast<float>(Laux[i]);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i)
        cur_error += weights[i] *
                     error_of<kUseMad>(this_scale * static_cast<float>(Laux[i]) + this_min - x[i]);
      if (cur_error < best_error) {
        std::copy_n(Laux, n, L);
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// Symmetric codes in [-nmax, nmax) stored plus nmax, weighted by x^2, the scale refined over 18
// perturbed grids (ggml's make_qx_quants with rmse_type 1 and no importance).
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  const float max = signed_max(x, n);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill_n(L, n, int8_t{0});
    return 0.0f;
  }
  const auto code = [&](float iscale, int i) {
    return std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
  };
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = code(iscale, i);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i], fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i], fl = static_cast<float>(code(iscale, i));
      sumlx += w * x[i] * fl;
      suml2 += w * fl * fl;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(nmax + code(iscale, i));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Q3_K's symmetric codes in [-nmax, nmax) stored plus nmax, refined value by value for at most 5
// rounds (ggml's make_q3_quants with do_rmse).
float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
  const float max = signed_max(x, n);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill_n(L, n, int8_t{0});
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i], fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  for (int itry = 0; itry < 5; ++itry) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i], li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (slx > 0) {
        float sl2 = suml2 - w * li * li;
        const int new_l = std::max(-nmax, std::min(nmax - 1, nearest_int(x[i] * sl2 / slx)));
        if (new_l != L[i]) {
          const float fl = static_cast<float>(new_l);
          slx += w * x[i] * fl;
          sl2 += w * fl * fl;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++changed;
          }
        }
      }
    }
    if (!changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return sumlx / suml2;
}

// Q4_K and Q5_K: 8 sub-blocks of 32, codes 0..nmax, 6-bit scales and mins packed in 12 bytes
// at `scales`, fp16 d and dmin; the codes (requantized with the stored scales) in L.
void k_scales_and_codes(const float* x, int nmax, float rmin, int nstep, u8* d, u8* dmin,
                        u8* scales, u8* L) {
  float weights[32], mins[8], sub_scales[8];
  u8 Laux[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    sub_scales[j] = make_qkx2_quants<false>(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j],
                                            Laux, rmin, 0.1f, nstep);
    if (sub_scales[j] > max_scale) max_scale = sub_scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < 8; ++j) {
    const u8 ls = std::min<u8>(63, static_cast<u8>(nearest_int(inv_scale * sub_scales[j])));
    const u8 lm = std::min<u8>(63, static_cast<u8>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      scales[j] = ls;
      scales[j + 4] = lm;
    } else {
      scales[j + 4] = static_cast<u8>((ls & 0xF) | ((lm & 0xF) << 4));
      scales[j - 4] |= static_cast<u8>((ls >> 4) << 6);
      scales[j] |= static_cast<u8>((lm >> 4) << 6);
    }
  }
  put_half(d, max_scale / 63.f);
  put_half(dmin, max_min / 63.f);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    scale_min_k4(j, scales, sc, m);  // as the decoder reads them
    const float dj = stored_half(d) * static_cast<float>(sc);
    if (dj == 0.0f) continue;
    const float dm = stored_half(dmin) * static_cast<float>(m);
    for (int ii = 0; ii < 32; ++ii)
      L[32 * j + ii] =
          static_cast<u8>(std::max(0, std::min(nmax, nearest_int((x[32 * j + ii] + dm) / dj))));
  }
}
void q4_k(const float* x, u8* p) {
  u8 L[256];
  std::memset(p, 0, sizeof(BlockQ4K));
  BlockQ4K& b = block_at<BlockQ4K>(p);
  k_scales_and_codes(x, 15, -1.0f, 20, b.d, b.dmin, b.scales, L);
  u8* q = b.qs;
  for (int j = 0; j < 256; j += 64, q += 32)
    for (int l = 0; l < 32; ++l) q[l] = static_cast<u8>(L[j + l] | (L[j + l + 32] << 4));
}
void q5_k(const float* x, u8* p) {
  u8 L[256];
  std::memset(p, 0, sizeof(BlockQ5K));
  BlockQ5K& b = block_at<BlockQ5K>(p);
  k_scales_and_codes(x, 31, -0.5f, 15, b.d, b.dmin, b.scales, L);
  u8 *qh = b.qh, *ql = b.qs;
  u8 m1 = 1, m2 = 2;
  for (int n = 0; n < 256;
       n += 64, ql += 32, m1 = static_cast<u8>(m1 << 2), m2 = static_cast<u8>(m2 << 2))
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j], l2 = L[n + j + 32];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] |= m1;
      }
      if (l2 > 15) {
        l2 -= 16;
        qh[j] |= m2;
      }
      ql[j] = static_cast<u8>(l1 | (l2 << 4));
    }
}
void q6_k(const float* x, u8* p) {
  int8_t L[256];
  float scales[16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < 16; ++ib) {
    scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
    const float abs_scale = std::fabs(scales[ib]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[ib];
    }
  }
  std::memset(p, 0, sizeof(BlockQ6K));
  BlockQ6K& b = block_at<BlockQ6K>(p);
  if (max_abs_scale < kGroupMaxEps) return;  // all zeros, d = +0
  const float iscale = -128.f / max_scale;
  put_half(b.d, 1 / iscale);
  int8_t* sc = b.scales;
  for (int ib = 0; ib < 16; ++ib)
    sc[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  for (int j = 0; j < 16; ++j) {
    const float d = stored_half(b.d) * static_cast<float>(sc[j]);
    if (d == 0.0f) continue;
    for (int ii = 0; ii < 16; ++ii)
      L[16 * j + ii] =
          static_cast<int8_t>(std::max(-32, std::min(31, nearest_int(x[16 * j + ii] / d))) + 32);
  }
  u8 *ql = b.ql, *qh = b.qh;
  for (int j = 0; j < 256; j += 128, ql += 64, qh += 32)
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF,
                q4 = L[j + l + 96] & 0xF;
      ql[l] = static_cast<u8>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<u8>(q2 | (q4 << 4));
      qh[l] = static_cast<u8>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                              ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
    }
}
// Two-bit codes in 128-value halves: byte l of a half holds values l, l+32, l+64, l+96.
void pack_2bit(const u8* L, u8* qs) {
  for (int j = 0; j < 256; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] = static_cast<u8>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                      (L[j + l + 96] << 6));
}
void q2_k(const float* x, u8* p) {
  BlockQ2K& b = block_at<BlockQ2K>(p);
  u8 L[256], Laux[16];
  float weights[16], mins[16], scales[16];
  u8* sc = b.scales;
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 16; ++j) {
    for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
    scales[j] = make_qkx2_quants<true>(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux,
                                       -0.5f, 0.1f, 15);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  std::memset(p, 0, sizeof(BlockQ2K));
  if (max_scale > 0) {
    const float iscale = 15.f / max_scale;
    for (int j = 0; j < 16; ++j) sc[j] = static_cast<u8>(nearest_int(iscale * scales[j]));
    put_half(b.d, max_scale / 15.f);
  }
  if (max_min > 0) {
    const float iscale = 15.f / max_min;
    for (int j = 0; j < 16; ++j) sc[j] |= static_cast<u8>(nearest_int(iscale * mins[j]) << 4);
    put_half(b.dmin, max_min / 15.f);
  }
  for (int j = 0; j < 16; ++j) {
    const float d = stored_half(b.d) * static_cast<float>(sc[j] & 0xF);
    if (d == 0.0f) continue;
    const float dm = stored_half(b.dmin) * static_cast<float>(sc[j] >> 4);
    for (int ii = 0; ii < 16; ++ii)
      L[16 * j + ii] =
          static_cast<u8>(std::max(0, std::min(3, nearest_int((x[16 * j + ii] + dm) / d))));
  }
  pack_2bit(L, b.qs);
}
void q3_k(const float* x, u8* p) {
  int8_t L[256];
  float scales[16];
  float max_scale = 0, amax = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
    const float scale = std::fabs(scales[j]);
    if (scale > amax) {
      amax = scale;
      max_scale = scales[j];
    }
  }
  std::memset(p, 0, sizeof(BlockQ3K));
  BlockQ3K& b = block_at<BlockQ3K>(p);
  u8 *hmask = b.hmask, *qs = b.qs, *packed = b.scales;
  if (max_scale != 0.0f) {
    const float iscale = -32.f / max_scale;
    for (int j = 0; j < 16; ++j) {
      int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
      l = static_cast<int8_t>(std::max<int>(-32, std::min<int>(31, l)) + 32);
      if (j < 8)
        packed[j] = static_cast<u8>(l & 0xF);
      else
        packed[j - 8] |= static_cast<u8>((l & 0xF) << 4);
      l = static_cast<int8_t>(l >> 4);
      packed[j % 4 + 8] |= static_cast<u8>(l << (2 * (j / 4)));
    }
    put_half(b.d, 1 / iscale);
  }
  for (int j = 0; j < 16; ++j) {
    int8_t sc = static_cast<int8_t>(j < 8 ? packed[j] & 0xF : packed[j - 8] >> 4);
    sc = static_cast<int8_t>((sc | (((packed[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
    const float d = stored_half(b.d) * static_cast<float>(sc);
    if (d == 0.0f) continue;
    for (int ii = 0; ii < 16; ++ii)
      L[16 * j + ii] =
          static_cast<int8_t>(std::max(-4, std::min(3, nearest_int(x[16 * j + ii] / d))) + 4);
  }
  u8 codes[256];
  int m = 0;
  u8 hm = 1;
  for (int j = 0; j < 256; ++j) {
    int l = L[j];
    if (l > 3) {
      hmask[m] |= hm;
      l -= 4;
    }
    codes[j] = static_cast<u8>(l);
    if (++m == 32) {
      m = 0;
      hm = static_cast<u8>(hm << 1);
    }
  }
  pack_2bit(codes, qs);
}

}  // namespace detail::ggml_encoders

void ggml_encode(uint32_t id, std::span<const float> src, std::span<std::byte> dst) {
  const std::optional<GgmlType> type = ggml_type(id);
  if (!ggml_encodes(id))
    throw Error(ErrorCode::unsupported, Rule::gguf, {}, std::nullopt,
                type ? fmt::format("tlio does not quantize to ggml type {}", type->name)
                     : fmt::format("unknown ggml type {}", id));
  if (src.size() % type->block != 0 || dst.size() != src.size() / type->block * type->block_bytes)
    throw Error(ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
                fmt::format("ggml_encode: {} values as {} take {} bytes, not {}", src.size(),
                            type->name, src.size() / type->block * type->block_bytes, dst.size()));
  if (const std::optional<Dtype> plain = ggml_plain_dtype(id)) {
    convert(Dtype::F32, std::as_bytes(src), *plain, dst, src.size());
    return;
  }
  const detail::BlockEncoder encode = detail::ggml_row(id)->encode;
  auto* out = reinterpret_cast<detail::u8*>(dst.data());
  if (id == ggml_id(GgmlTypeId::Q8_0)) {  // Q8_0 on vectors, its non-finite blocks by q8_0
    detail::q8_0_blocks(src.data(), src.size() / 32, out, detail::ggml_encoders::q8_0);
    return;
  }
  for (size_t i = 0, n = src.size() / type->block; i < n; ++i, out += type->block_bytes)
    encode(src.data() + i * type->block, out);
}

}  // namespace tlio
