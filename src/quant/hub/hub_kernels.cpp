// quant/hub/hub_kernels.cpp: see hub_kernels.hpp.

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/hub/hub_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include <cstring>

#include "quant/hub/hub_kernels.hpp"
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

}  // namespace HWY_NAMESPACE
}  // namespace tlio::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tlio::detail {

HWY_EXPORT(E4M3Scaled);

void e4m3_scaled(const uint8_t* codes, uint64_t n, float scale, float* out) {
  HWY_DYNAMIC_DISPATCH(E4M3Scaled)(codes, n, scale, out);
}

}  // namespace tlio::detail
#endif
