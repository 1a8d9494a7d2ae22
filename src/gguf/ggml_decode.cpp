// gguf/ggml_decode.cpp: ggml's block types decoded to floats in the order and with the roundings
// of ggml's dequantize_row_* (ggml-quants.c): each block's scales formed first (d * sc, dmin * m),
// then code times scale, minus or plus the offset, in float. The gguf module is compiled with
// -ffp-contract=off, so `a * q - m` stays two roundings as in the reference build.
#include <fmt/core.h>

#include <cmath>
#include <cstring>

#include "gguf/ggml_blocks.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/ggml.hpp"

namespace tlio {

namespace {

using detail::u8;

inline float half(const u8* p) noexcept {
  return f16_to_f32(static_cast<uint16_t>(p[0] | p[1] << 8));
}
inline uint32_t u32_le(const u8* p) noexcept {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
inline float f32_le(const u8* p) noexcept {
  const uint32_t bits = u32_le(p);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// IQ4_NL's non-linear levels, and MXFP4's (E2M1 values doubled; the block scales are halved).
constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};
constexpr int8_t kFp4Levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

}  // namespace

namespace detail::ggml_decoders {

// ---- 32-element blocks: two elements per byte, element j in the low nibble of byte j, j + 16
// in its high nibble.
void q4_0(const u8* b, float* y) {
  const float d = half(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((b[2 + j] & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((b[2 + j] >> 4) - 8) * d;
  }
}
void q4_1(const u8* b, float* y) {
  const float d = half(b), m = half(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(b[4 + j] & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(b[4 + j] >> 4) * d + m;
  }
}
void q5_0(const u8* b, float* y) {
  const float d = half(b);
  const uint32_t qh = u32_le(b + 2);
  for (int j = 0; j < 16; ++j) {
    const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10),
              h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
    y[j] = static_cast<float>(((b[6 + j] & 0x0F) | h0) - 16) * d;
    y[j + 16] = static_cast<float>(((b[6 + j] >> 4) | h1) - 16) * d;
  }
}
void q5_1(const u8* b, float* y) {
  const float d = half(b), m = half(b + 2);
  const uint32_t qh = u32_le(b + 4);
  for (int j = 0; j < 16; ++j) {
    const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10),
              h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
    y[j] = static_cast<float>((b[8 + j] & 0x0F) | h0) * d + m;
    y[j + 16] = static_cast<float>((b[8 + j] >> 4) | h1) * d + m;
  }
}
void q8_0(const u8* b, float* y) {
  const float d = half(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}
void iq4_nl(const u8* b, float* y) {
  const float d = half(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kIq4Levels[b[2 + j] & 0x0F]);
    y[j + 16] = d * static_cast<float>(kIq4Levels[b[2 + j] >> 4]);
  }
}
void mxfp4(const u8* b, float* y) {
  // E8M0 halved: 2^(e - 128), exact for e = 0 and 1 through subnormal bit patterns.
  const uint32_t e = b[0], bits = e < 2 ? 0x00200000u << e : (e - 1) << 23;
  float d;
  std::memcpy(&d, &bits, 4);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(kFp4Levels[b[1 + j] & 0x0F]) * d;
    y[j + 16] = static_cast<float>(kFp4Levels[b[1 + j] >> 4]) * d;
  }
}

// ---- 256-element super-blocks (K-quants) and the rest.
void q2_k(const u8* p, float* y) {
  const auto& b = block_at<BlockQ2K>(p);
  const u8 *scales = b.scales, *q = b.qs;
  const float d = half(b.d), dmin = half(b.dmin);
  int is = 0;
  for (int n = 0; n < 256; n += 128, q += 32)
    for (int shift = 0; shift < 8; shift += 2)
      for (int half_ = 0; half_ < 2; ++half_) {
        const u8 sc = scales[is++];
        const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * static_cast<float>((q[l + 16 * half_] >> shift) & 3) - ml;
      }
}
void q3_k(const u8* p, float* y) {
  const auto& b = block_at<BlockQ3K>(p);
  const u8 *hm = b.hmask, *q = b.qs, *packed = b.scales;
  const float d = half(b.d);
  int8_t scales[16];
  for (int s = 0; s < 16; ++s) {
    const int low = s < 8 ? packed[s] & 0xF : packed[s - 8] >> 4;
    const int high = (packed[8 + s % 4] >> (2 * (s / 4))) & 3;
    scales[s] = static_cast<int8_t>((low | high << 4) - 32);
  }
  int is = 0;
  u8 m = 1;
  for (int n = 0; n < 256; n += 128, q += 32)
    for (int shift = 0; shift < 8; shift += 2, m = static_cast<u8>(m << 1))
      for (int half_ = 0; half_ < 2; ++half_) {
        const float dl = d * static_cast<float>(scales[is++]);
        for (int l = 0; l < 16; ++l) {
          const int i = l + 16 * half_;
          *y++ = dl * static_cast<float>(((q[i] >> shift) & 3) - ((hm[i] & m) ? 0 : 4));
        }
      }
}
void q4_k(const u8* p, float* y) {
  const auto& b = block_at<BlockQ4K>(p);
  const float d = half(b.d), dmin = half(b.dmin);
  const u8 *scales = b.scales, *q = b.qs;
  for (int is = 0; is < 8; is += 2, q += 32) {
    int sc, m;
    scale_min_k4(is, scales, sc, m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    scale_min_k4(is + 1, scales, sc, m);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}
void q5_k(const u8* p, float* y) {
  const auto& b = block_at<BlockQ5K>(p);
  const float d = half(b.d), dmin = half(b.dmin);
  const u8 *scales = b.scales, *qh = b.qh, *ql = b.qs;
  u8 u1 = 1, u2 = 2;
  for (int is = 0; is < 8;
       is += 2, ql += 32, u1 = static_cast<u8>(u1 << 2), u2 = static_cast<u8>(u2 << 2)) {
    int sc, m;
    scale_min_k4(is, scales, sc, m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    scale_min_k4(is + 1, scales, sc, m);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l)
      *y++ = d1 * static_cast<float>((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l)
      *y++ = d2 * static_cast<float>((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
  }
}
void q6_k(const u8* p, float* y) {
  const auto& b = block_at<BlockQ6K>(p);
  const u8 *ql = b.ql, *qh = b.qh;
  const int8_t* sc = b.scales;
  const float d = half(b.d);
  for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8)
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
}
void q8_k(const u8* p, float* y) {
  const auto& b = block_at<BlockQ8K>(p);
  const float d = f32_le(b.d);
  for (int j = 0; j < 256; ++j) y[j] = d * static_cast<float>(b.qs[j]);
}
void iq4_xs(const u8* b, float* y) {
  const float d = half(b);
  const unsigned scales_h = b[2] | b[3] << 8;
  const u8 *scales_l = b + 4, *qs = b + 8;
  for (int ib = 0; ib < 8; ++ib, qs += 16, y += 32) {
    const int ls = ((scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) | (((scales_h >> 2 * ib) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * static_cast<float>(kIq4Levels[qs[j] & 0xF]);
      y[j + 16] = dl * static_cast<float>(kIq4Levels[qs[j] >> 4]);
    }
  }
}
// Ternary, five trits per byte as a base-3 fraction: trit n is the top digit of byte * 3^n.
void tq1_0(const u8* b, float* y) {
  static constexpr u8 kPow3[6] = {1, 3, 9, 27, 81, 243};
  const u8 *qs = b, *qh = b + 48;
  const float d = half(b + 52);
  const auto trit = [&](u8 byte, int n) {
    const u8 q = static_cast<u8>(byte * kPow3[n]);
    return static_cast<float>(((q * 3) >> 8) - 1) * d;
  };
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 32; ++m) *y++ = trit(qs[m], n);
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 16; ++m) *y++ = trit(qs[32 + m], n);
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j) *y++ = trit(qh[j], n);
}
void tq2_0(const u8* b, float* y) {
  const float d = half(b + 64);
  for (int j = 0; j < 64; j += 32)
    for (int l = 0; l < 4; ++l)
      for (int m = 0; m < 32; ++m) *y++ = static_cast<float>(((b[j + m] >> (l * 2)) & 3) - 1) * d;
}
// NVFP4's sub-block scale: unsigned E4M3 halved (0x00 and 0x7F are 0), as ggml_ue4m3_to_fp32.
static float ue4m3_half(u8 x) noexcept {
  if (x == 0 || x == 0x7F) return 0.0f;
  const int exp = (x >> 3) & 0xF, man = x & 7;
  const float raw = exp == 0 ? std::ldexp(static_cast<float>(man), -9)
                             : std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
  return raw * 0.5f;
}
void nvfp4(const u8* b, float* y) {
  for (int s = 0; s < 4; ++s, y += 16) {
    const float d = ue4m3_half(b[s]);
    const u8* q = b + 4 + 8 * s;
    for (int j = 0; j < 8; ++j) {
      y[j] = static_cast<float>(kFp4Levels[q[j] & 0xF]) * d;
      y[j + 8] = static_cast<float>(kFp4Levels[q[j] >> 4]) * d;
    }
  }
}
void q1_0(const u8* b, float* y) {
  const float d = half(b);
  for (int j = 0; j < 128; ++j) y[j] = (b[2 + j / 8] >> (j % 8)) & 1 ? d : -d;
}
void q2_0(const u8* b, float* y) {
  const float d = half(b);
  for (int j = 0; j < 64; ++j)
    y[j] = static_cast<float>(((b[2 + j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
}

}  // namespace detail::ggml_decoders

void ggml_decode(uint32_t id, std::span<const std::byte> src, std::span<float> dst) {
  const std::optional<GgmlType> type = ggml_type(id);
  if (!ggml_decodes(id))
    throw Error(ErrorCode::unsupported, Rule::gguf, {}, std::nullopt,
                type
                    ? fmt::format("ggml type {} is not decoded by tlio (ggml has no decoder for it "
                                  "either)",
                                  type->name)
                    : fmt::format("unknown ggml type {}", id));
  if (dst.size() % type->block != 0 || src.size() != dst.size() / type->block * type->block_bytes)
    throw Error(ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
                fmt::format("ggml_decode: {} elements of {} take {} bytes, not {}", dst.size(),
                            type->name, dst.size() / type->block * type->block_bytes, src.size()));
  if (const std::optional<Dtype> plain = ggml_plain_dtype(id)) {
    convert(*plain, src, Dtype::F32, std::as_writable_bytes(dst), dst.size());
    return;
  }
  const detail::BlockDecoder decode = detail::ggml_row(id)->decode;
  const auto* in = reinterpret_cast<const u8*>(src.data());
  float* out = dst.data();
  for (size_t i = 0, n = dst.size() / type->block; i < n;
       ++i, in += type->block_bytes, out += type->block)
    decode(in, out);
}

}  // namespace tlio
