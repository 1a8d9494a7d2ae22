// dtype/convert_simd.cpp: SIMD kernels for F32<->BF16 and F32<->F16, compiled once per target
// by Highway and dispatched at run time. Rounding is done with integer operations (not
// Highway's DemoteTo, which truncates in Debian's Highway 1.0.3), so every target gives the same
// bits as the scalar helpers in convert.cpp. Tails shorter than a vector use those helpers.

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "dtype/convert_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include <hwy/cache_control.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "dtype/bf16-inl.h"
#include "dtype/convert_kernels.hpp"
#include "tlio/convert.hpp"

HWY_BEFORE_NAMESPACE();
namespace tlio::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Large outputs bypass the caches (non-temporal stores): they are far bigger than the caches
// and not read back at once, so this saves a read for ownership of every output line.
constexpr size_t kStreamMinOutputBytes = size_t{1} << 20;

// Elements to convert one by one before `out` is aligned to `align` bytes (for streaming).
template <class T>
size_t head_to_align(const T* out, size_t align, size_t n) {
  const size_t misalign = reinterpret_cast<uintptr_t>(out) % align;
  if (misalign == 0 || misalign % sizeof(T) != 0) return misalign == 0 ? 0 : n;  // can't align
  return std::min(n, (align - misalign) / sizeof(T));
}

// Converts element k alone through the scalar reference (heads, tails, the scalar target).
template <class In, class Out>
void convert_one(const std::byte* src, std::byte* dst, size_t k, Out (*scalar)(In)) {
  In x;
  std::memcpy(&x, src + sizeof(In) * k, sizeof(In));
  const Out y = scalar(x);
  std::memcpy(dst + sizeof(Out) * k, &y, sizeof(Out));
}

// F32 -> 16-bit kernels: two F32 vectors make one full vector of 16-bit results.
template <class Round>
void F32To16(const std::byte* src, std::byte* dst, size_t n, const Round& round,
             uint16_t (*scalar)(float)) {
#if HWY_TARGET == HWY_SCALAR
  (void)round;  // one lane: the scalar helper is the kernel
  for (size_t k = 0; k < n; ++k) convert_one(src, dst, k, scalar);
#else
  const hn::ScalableTag<uint16_t> d16;
  const hn::Repartition<uint32_t, decltype(d16)> du32;
  const hn::Half<decltype(d16)> dh16;
  const size_t lanes = hn::Lanes(du32);
  const auto* in = reinterpret_cast<const uint32_t*>(src);
  auto* out = reinterpret_cast<uint16_t*>(dst);
  const bool stream = n * 2 >= kStreamMinOutputBytes;
  size_t i = 0;
  auto one = [&](size_t k) { convert_one(src, dst, k, scalar); };
  if (stream)
    for (size_t head = head_to_align(out, hn::Lanes(d16) * 2, n); i < head; ++i) one(i);
  auto step = [&](size_t at) {
    const auto lo = hn::TruncateTo(dh16, round(hn::LoadU(du32, in + at)));
    const auto hi = hn::TruncateTo(dh16, round(hn::LoadU(du32, in + at + lanes)));
    const auto v = hn::Combine(d16, hi, lo);
    if (stream)
      hn::Stream(v, d16, out + at);
    else
      hn::StoreU(v, d16, out + at);
  };
  if (stream) {
    // Large inputs: read four 4 KiB pages side by side, a step of each in turn, and prefetch
    // two such blocks ahead. Narrowing reads twice what it writes, and more open DRAM pages and
    // prefetch streams read faster than one linear pass: +20-35% on one thread here from the
    // pages (2, 4 and 8 measured), +5-10% more from the prefetch (distances 1, 2, 4, 8 blocks
    // measured; docs/benchmarks.md).
    constexpr size_t kPageElems = 1024, kReadPages = 4;
    constexpr size_t kBlockElems = kPageElems * kReadPages, kPrefetchElems = 2 * kBlockElems;
    if (kPageElems % (2 * lanes) == 0)
      for (; i + kBlockElems <= n; i += kBlockElems)
        for (size_t line = 0; line < kPageElems; line += 2 * lanes)
          for (size_t p = 0; p < kReadPages; ++p) {
            const size_t at = i + p * kPageElems + line;
            if (at + kPrefetchElems + 2 * lanes <= n) {
              hwy::Prefetch(in + at + kPrefetchElems);
              hwy::Prefetch(in + at + kPrefetchElems + lanes);
            }
            step(at);
          }
  }
  for (; i + 2 * lanes <= n; i += 2 * lanes) step(i);
  if (stream) hwy::FlushStream();
  for (; i < n; ++i) one(i);
#endif
}

void F32ToBF16(const std::byte* src, std::byte* dst, size_t n) {
  const hn::ScalableTag<uint32_t> du32;
  F32To16(
      src, dst, n, [&](auto u) { return F32BitsToBF16(du32, u); }, &f32_to_bf16);
}

// 16-bit -> F32 kernels: one vector of 16-bit lanes promoted to one full vector of results.
template <class Widen>
void To32(const std::byte* src, std::byte* dst, size_t n, const Widen& widen,
          float (*scalar)(uint16_t)) {
  const hn::ScalableTag<uint32_t> du32;
  const hn::Rebind<uint16_t, decltype(du32)> du16;
  const size_t lanes = hn::Lanes(du32);
  const auto* in = reinterpret_cast<const uint16_t*>(src);
  auto* out = reinterpret_cast<uint32_t*>(dst);
  const bool stream = n * 4 >= kStreamMinOutputBytes;
  size_t i = 0;
  auto one = [&](size_t k) { convert_one(src, dst, k, scalar); };
  if (stream)
    for (size_t head = head_to_align(out, lanes * 4, n); i < head; ++i) one(i);
  for (; i + lanes <= n; i += lanes) {
    const auto v = widen(hn::PromoteTo(du32, hn::LoadU(du16, in + i)));
    if (stream)
      hn::Stream(v, du32, out + i);
    else
      hn::StoreU(v, du32, out + i);
  }
  if (stream) hwy::FlushStream();
  for (; i < n; ++i) one(i);
}

void BF16ToF32(const std::byte* src, std::byte* dst, size_t n) {
  To32(
      src, dst, n, [](auto h) { return hn::ShiftLeft<16>(h); }, &bf16_to_f32);
}

void F32ToF16(const std::byte* src, std::byte* dst, size_t n) {
  const hn::ScalableTag<uint32_t> du32;
  const hn::Rebind<float, decltype(du32)> df32;
  const auto sign_mask = hn::Set(du32, 0x80000000u);
  const auto inf = hn::Set(du32, 0x7F800000u);
  const auto f16_overflow = hn::Set(du32, 0x477FFFFFu);  // largest |x| below 65536.0f
  const auto min_normal = hn::Set(du32, 0x38800000u);    // 2^-14: F16's smallest normal
  const auto denorm_magic = hn::Set(du32, 0x3F000000u);  // 0.5f: aligns F16 subnormal ulps
  const auto rebias = hn::Set(du32, 0xC8000FFFu);        // ((15 - 127) << 23) + 0xFFF
  const auto one = hn::Set(du32, 1u);
  const auto nan_base = hn::Set(du32, 0x7E00u);
  const auto inf16 = hn::Set(du32, 0x7C00u);
  const auto payload = hn::Set(du32, 0x3FFu);
  auto round = [&](auto u) {
    const auto sign = hn::And(u, sign_mask);
    const auto a = hn::Xor(u, sign);
    // Normal results: round the 13 dropped bits to nearest even in integer arithmetic.
    const auto odd = hn::And(hn::ShiftRight<13>(a), one);
    const auto normal = hn::ShiftRight<13>(hn::Add(hn::Add(a, rebias), odd));
    // Subnormal results: an FP add places the bits; the FPU rounds to nearest even.
    const auto sub =
        hn::Sub(hn::BitCast(du32, hn::Add(hn::BitCast(df32, a), hn::BitCast(df32, denorm_magic))),
                denorm_magic);
    const auto nan = hn::Or(nan_base, hn::And(hn::ShiftRight<13>(a), payload));
    auto r = hn::IfThenElse(hn::Lt(a, min_normal), sub, normal);
    r = hn::IfThenElse(hn::Gt(a, f16_overflow), inf16, r);
    r = hn::IfThenElse(hn::Gt(a, inf), nan, r);
    return hn::Or(r, hn::ShiftRight<16>(sign));
  };
  F32To16(src, dst, n, round, &f32_to_f16);
}

void F16ToF32(const std::byte* src, std::byte* dst, size_t n) {
  const hn::ScalableTag<uint32_t> du32;
  const hn::Rebind<float, decltype(du32)> df32;
  const auto em_mask = hn::Set(du32, 0x7FFFu);
  const auto exp_field = hn::Set(du32, 0x0F800000u);  // F16 exponent bits after << 13
  const auto rebias = hn::Set(du32, (127u - 15u) << 23);
  const auto inf_extra = hn::Set(du32, (128u - 16u) << 23);
  const auto sub_extra = hn::Set(du32, 1u << 23);
  const auto magic = hn::Set(du32, 113u << 23);  // 2^-14
  const auto zero = hn::Zero(du32);
  auto widen = [&](auto h) {
    const auto sign = hn::ShiftLeft<16>(hn::AndNot(em_mask, h));
    const auto shifted = hn::ShiftLeft<13>(hn::And(h, em_mask));
    const auto exp = hn::And(shifted, exp_field);
    auto o = hn::Add(shifted, rebias);
    o = hn::IfThenElse(hn::Eq(exp, exp_field), hn::Add(o, inf_extra), o);  // Inf/NaN
    // Zero and subnormals: renormalise with an exact FP subtraction.
    const auto sub = hn::Sub(hn::BitCast(df32, hn::Add(o, sub_extra)), hn::BitCast(df32, magic));
    o = hn::IfThenElse(hn::Eq(exp, zero), hn::BitCast(du32, sub), o);
    return hn::Or(o, sign);
  };
  To32(src, dst, n, widen, &f16_to_f32);
}

}  // namespace HWY_NAMESPACE
}  // namespace tlio::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tlio::detail {

HWY_EXPORT(F32ToBF16);
HWY_EXPORT(BF16ToF32);
HWY_EXPORT(F32ToF16);
HWY_EXPORT(F16ToF32);

void simd_f32_to_bf16(const std::byte* s, std::byte* d, size_t n) {
  HWY_DYNAMIC_DISPATCH(F32ToBF16)(s, d, n);
}
void simd_bf16_to_f32(const std::byte* s, std::byte* d, size_t n) {
  HWY_DYNAMIC_DISPATCH(BF16ToF32)(s, d, n);
}
void simd_f32_to_f16(const std::byte* s, std::byte* d, size_t n) {
  HWY_DYNAMIC_DISPATCH(F32ToF16)(s, d, n);
}
void simd_f16_to_f32(const std::byte* s, std::byte* d, size_t n) {
  HWY_DYNAMIC_DISPATCH(F16ToF32)(s, d, n);
}

const char* simd_target_name() { return hwy::TargetName(hwy::SupportedAndGeneratedTargets()[0]); }

}  // namespace tlio::detail
#endif
