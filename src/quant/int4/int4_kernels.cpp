// quant/int4/int4_kernels.cpp: see int4_kernels.hpp.

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/int4/int4_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include "quant/int4/int4_kernels.hpp"

#include <algorithm>

#include "dtype/bf16-inl.h"
#include "tlio/convert.hpp"

HWY_BEFORE_NAMESPACE();
namespace tlio::detail {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

void DequantizeRow(const uint8_t* q, const uint16_t* scales, uint64_t cols, uint64_t group,
                   float* out) {
  const uint64_t groups = cols / group;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du32;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const size_t lanes = hn::Lanes(df);
  if (group % (2 * lanes) == 0) {
    // N packed bytes -> N low and N high nibbles, sign-extended by shifts in 32-bit lanes,
    // scaled, and stored interleaved (low nibble = even column).
    for (uint64_t g = 0; g < groups; ++g) {
      const auto s = hn::Set(df, f16_to_f32(scales[g]));
      const uint8_t* b = q + g * group / 2;
      float* o = out + g * group;
      for (uint64_t k = 0; k < group / 2; k += lanes) {
        const auto bytes = hn::BitCast(di, hn::PromoteTo(du32, hn::LoadU(du8, b + k)));
        const auto lo = hn::ShiftRight<28>(hn::ShiftLeft<28>(bytes));
        const auto hi = hn::ShiftRight<28>(hn::ShiftLeft<24>(bytes));
        hn::StoreInterleaved2(hn::Mul(hn::ConvertTo(df, lo), s), hn::Mul(hn::ConvertTo(df, hi), s),
                              df, o + 2 * k);
      }
    }
    return;
  }
#endif
  if (group % 2 == 0) {
    for (uint64_t g = 0; g < groups; ++g) {
      const float s = f16_to_f32(scales[g]);
      const uint8_t* b = q + g * group / 2;
      float* o = out + g * group;
      for (uint64_t k = 0; k < group / 2; ++k) {
        o[2 * k] =
            static_cast<float>(static_cast<int8_t>(static_cast<uint8_t>(b[k] << 4)) >> 4) * s;
        o[2 * k + 1] = static_cast<float>(static_cast<int8_t>(b[k]) >> 4) * s;
      }
    }
    return;
  }
  for (uint64_t c = 0; c < cols; ++c) {  // odd groups straddle bytes
    const uint8_t b = q[c / 2];
    const int v = c % 2 ? static_cast<int8_t>(b) >> 4
                        : static_cast<int8_t>(static_cast<uint8_t>(b << 4)) >> 4;
    out[c] = static_cast<float>(v) * f16_to_f32(scales[c / group]);
  }
}

bool DequantizeRowBF16(const uint8_t* q, const uint16_t* scales, uint64_t cols, uint64_t group,
                       uint16_t* out) {
#if HWY_TARGET == HWY_SCALAR
  (void)q, (void)scales, (void)cols, (void)group, (void)out;
  return false;
#else
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du32;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const size_t lanes = hn::Lanes(df);
  if (group % (2 * lanes) != 0) return false;
  auto to_bf16 = [&](auto f) { return F32BitsToBF16(du32, hn::BitCast(du32, f)); };
  auto* out32 = reinterpret_cast<uint32_t*>(out);  // a low/high pair is one 32-bit lane
  const uint64_t groups = cols / group;
  for (uint64_t g = 0; g < groups; ++g) {
    const auto s = hn::Set(df, f16_to_f32(scales[g]));
    const uint8_t* b = q + g * group / 2;
    uint32_t* o = out32 + g * group / 2;
    for (uint64_t k = 0; k < group / 2; k += lanes) {
      const auto bytes = hn::BitCast(di, hn::PromoteTo(du32, hn::LoadU(du8, b + k)));
      const auto lo =
          to_bf16(hn::Mul(hn::ConvertTo(df, hn::ShiftRight<28>(hn::ShiftLeft<28>(bytes))), s));
      const auto hi =
          to_bf16(hn::Mul(hn::ConvertTo(df, hn::ShiftRight<28>(hn::ShiftLeft<24>(bytes))), s));
      hn::StoreU(hn::Or(lo, hn::ShiftLeft<16>(hi)), du32, o + k);
    }
  }
  return true;
#endif
}

void QuantizeRow(const float* w, const float* scale_f32, uint64_t cols, uint64_t group,
                 int8_t* codes, uint8_t* q) {
  // Adding and subtracting 1.5 * 2^23 rounds to nearest even for |x| < 2^22; |w / s| < 16 here.
  constexpr float kRound = 12582912.0f;
  const uint64_t groups = cols / group;
  for (uint64_t g = 0; g < groups; ++g) {
    const float s = scale_f32[g];
    const float* wg = w + g * group;
    int8_t* c = codes + g * group;
    if (s == 0) {
      std::fill(c, c + group, int8_t{0});
      continue;
    }
    for (uint64_t k = 0; k < group; ++k) {
      const float r = (wg[k] / s + kRound) - kRound;
      c[k] = static_cast<int8_t>(std::min(7.0f, std::max(-8.0f, r)));
    }
  }
  for (uint64_t b = 0; b < cols / 2; ++b)
    q[b] = static_cast<uint8_t>((codes[2 * b] & 0xF) | (codes[2 * b + 1] << 4));
}

}  // namespace HWY_NAMESPACE
}  // namespace tlio::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tlio::detail {

HWY_EXPORT(DequantizeRow);
HWY_EXPORT(DequantizeRowBF16);
HWY_EXPORT(QuantizeRow);

void int4_dequantize_row(const uint8_t* q, const uint16_t* scales, uint64_t cols, uint64_t group,
                         float* out) {
  HWY_DYNAMIC_DISPATCH(DequantizeRow)(q, scales, cols, group, out);
}

bool int4_dequantize_row_bf16(const uint8_t* q, const uint16_t* scales, uint64_t cols,
                              uint64_t group, uint16_t* out) {
  return HWY_DYNAMIC_DISPATCH(DequantizeRowBF16)(q, scales, cols, group, out);
}

void int4_quantize_row(const float* w, const float* scale_f32, uint64_t cols, uint64_t group,
                       int8_t* codes, uint8_t* q) {
  HWY_DYNAMIC_DISPATCH(QuantizeRow)(w, scale_f32, cols, group, codes, q);
}

}  // namespace tlio::detail
#endif
