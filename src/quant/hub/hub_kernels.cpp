// quant/hub/hub_kernels.cpp: see hub_kernels.hpp.

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/hub/hub_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include "quant/hub/hub_kernels.hpp"

#include <array>
#include <cstring>

#include "quant/hub/hub_values.hpp"

HWY_BEFORE_NAMESPACE();
namespace tlio::detail {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

void E4M3Scaled(const uint8_t* codes, uint64_t n, float scale, float* out) {
  const std::array<float, 256>& table = e4m3_values();
  uint64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const size_t lanes = hn::Lanes(df);
  uint32_t nan_bits[2];  // the table's NaNs for 0x7F and 0xFF, whatever their sign bits
  std::memcpy(&nan_bits[0], &table[0x7F], 4);
  std::memcpy(&nan_bits[1], &table[0xFF], 4);
  const auto positive_nan = hn::Set(du, nan_bits[0]), negative_nan = hn::Set(du, nan_bits[1]);
  const auto s = hn::Set(df, scale);
  // Normal codes: the exponent field moved into f32's and rebased by 127 - 7 (exact bits);
  // subnormal codes (exponent 0): the mantissa times 2^-9, exact in f32; no f32 denormals.
  const auto rebase = hn::Set(du, uint32_t{120} << 23);
  const auto subnormal_unit = hn::Set(df, 1.0f / 512);
  for (; i + lanes <= n; i += lanes) {
    const auto b = hn::PromoteTo(du, hn::LoadU(du8, codes + i));
    const auto sign = hn::ShiftLeft<24>(hn::And(b, hn::Set(du, 0x80u)));
    const auto mag = hn::And(b, hn::Set(du, 0x7Fu));
    const auto normal = hn::BitCast(df, hn::Add(hn::ShiftLeft<20>(mag), rebase));
    const auto sub = hn::Mul(hn::ConvertTo(df, hn::BitCast(di, mag)), subnormal_unit);
    auto v = hn::IfThenElse(hn::RebindMask(df, hn::Lt(mag, hn::Set(du, 8u))), sub, normal);
    auto u = hn::Or(hn::BitCast(du, v), sign);
    const auto nan = hn::IfThenElse(hn::Eq(sign, hn::Zero(du)), positive_nan, negative_nan);
    u = hn::IfThenElse(hn::Eq(mag, hn::Set(du, 0x7Fu)), nan, u);
    v = hn::BitCast(df, u);
    hn::StoreU(hn::Mul(v, s), df, out + i);
  }
#endif
  for (; i < n; ++i) out[i] = table[codes[i]] * scale;
}

void E2M1Scaled(const uint8_t* codes, uint64_t n, float scale, bool negative_zero, float* out) {
  uint64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const hn::Full128<uint8_t> d16;
  const size_t lanes = hn::Lanes(df);  // 4, 8 or 16: divides the 32 values of 16 bytes
  const auto s = hn::Set(df, scale);
  // The magnitude m (3 bits) as f32 bits: exponent and mantissa moved up and rebased, exact;
  // m = 0 and 1 (exponent 0) are m * 0.5. The sign is bit 3 moved to bit 31.
  const auto rebase = hn::Set(du, uint32_t{126} << 23);
  const auto half = hn::Set(df, 0.5f);
  alignas(16) uint8_t nibbles[32];
  for (; i + 16 <= n; i += 16) {
    const auto b = hn::LoadU(d16, codes + i);
    const auto low = hn::And(b, hn::Set(d16, uint8_t{0x0F})), high = hn::ShiftRight<4>(b);
    hn::Store(hn::InterleaveLower(d16, low, high), d16, nibbles);  // one 128-bit block: in order
    hn::Store(hn::InterleaveUpper(d16, low, high), d16, nibbles + 16);
    for (size_t p = 0; p < 32; p += lanes) {
      const auto c = hn::PromoteTo(du, hn::LoadU(du8, nibbles + p));
      const auto m = hn::And(c, hn::Set(du, 7u));
      const auto normal = hn::BitCast(df, hn::Add(hn::ShiftLeft<22>(m), rebase));
      const auto sub = hn::Mul(hn::ConvertTo(df, hn::BitCast(di, m)), half);
      const auto v = hn::IfThenElse(hn::RebindMask(df, hn::Lt(m, hn::Set(du, 2u))), sub, normal);
      auto sign = hn::ShiftLeft<28>(hn::And(c, hn::Set(du, 8u)));
      if (!negative_zero) sign = hn::IfThenElseZero(hn::Ne(m, hn::Zero(du)), sign);
      hn::StoreU(hn::Mul(hn::BitCast(df, hn::Or(hn::BitCast(du, v), sign)), s), df,
                 out + 2 * i + p);
    }
  }
#endif
  if (i == n) return;
  const std::array<float, 16> table = e2m1_values(negative_zero);  // the tail's, made only for it
  for (; i < n; ++i) {
    out[2 * i] = table[codes[i] & 0xF] * scale;
    out[2 * i + 1] = table[codes[i] >> 4] * scale;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tlio::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tlio::detail {

HWY_EXPORT(E4M3Scaled);
HWY_EXPORT(E2M1Scaled);

void e4m3_scaled(const uint8_t* codes, uint64_t n, float scale, float* out) {
  HWY_DYNAMIC_DISPATCH(E4M3Scaled)(codes, n, scale, out);
}

void e2m1_scaled(const uint8_t* codes, uint64_t n, float scale, bool negative_zero, float* out) {
  HWY_DYNAMIC_DISPATCH(E2M1Scaled)(codes, n, scale, negative_zero, out);
}

}  // namespace tlio::detail
#endif
