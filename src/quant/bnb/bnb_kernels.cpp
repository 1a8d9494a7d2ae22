// quant/bnb/bnb_kernels.cpp: see bnb_kernels.hpp.

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/bnb/bnb_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include "quant/bnb/bnb_kernels.hpp"

#include <algorithm>
#include <cstring>

#include "dtype/bf16-inl.h"
#include "tlio/convert.hpp"

HWY_BEFORE_NAMESPACE();
namespace tlio::detail {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

uint32_t AbsMaxBits(const float* x, uint64_t n) {
  uint32_t best = 0;
  uint64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const size_t lanes = hn::Lanes(df);
  if (n >= lanes) {
    const auto magnitude = hn::Set(du, 0x7FFFFFFFu);
    auto m = hn::Zero(du);
    for (; i + lanes <= n; i += lanes)
      m = hn::Max(m, hn::And(hn::BitCast(du, hn::LoadU(df, x + i)), magnitude));
    best = hn::GetLane(hn::MaxOfLanes(du, m));
  }
#endif
  for (; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, 4);
    best = std::max(best, bits & 0x7FFFFFFFu);
  }
  return best;
}

void Bucketize15(const float* x, uint64_t n, float scale, bool divide, const float* bounds,
                 uint8_t* codes) {
  uint64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const size_t lanes = hn::Lanes(df);
  const auto vscale = hn::Set(df, scale), lo = hn::Set(df, -1.0f), hi = hn::Set(df, 1.0f);
  for (; i + lanes <= n; i += lanes) {
    auto v = hn::LoadU(df, x + i);
    v = divide ? hn::Div(v, vscale) : hn::Mul(v, vscale);
    v = hn::Min(hn::Max(v, lo), hi);
    auto count = hn::Zero(di);
    for (int k = 0; k < 15; ++k)  // a true compare is -1: subtracting it counts
      count =
          hn::Sub(count, hn::BitCast(di, hn::VecFromMask(df, hn::Lt(hn::Set(df, bounds[k]), v))));
    hn::StoreU(hn::DemoteTo(du8, count), du8, codes + i);
  }
#endif
  for (; i < n; ++i) {
    float v = divide ? x[i] / scale : x[i] * scale;
    v = std::min(std::max(v, -1.0f), 1.0f);
    uint8_t count = 0;
    for (int k = 0; k < 15; ++k) count = static_cast<uint8_t>(count + (bounds[k] < v));
    codes[i] = count;
  }
}

namespace {

inline float dequant_one(const uint8_t* packed, const float* absmax, const float* table,
                         uint64_t blocksize, uint64_t i) {
  const uint8_t b = packed[i >> 1];
  return table[(i & 1) ? (b & 15) : (b >> 4)] * absmax[i / blocksize];
}

}  // namespace

// The vector loops: each step takes `lanes` packed bytes (2 * lanes elements, inside one block
// since blocks are multiples of 32 elements), looks both nibbles up in the 16-entry table held in
// registers, scales, and hands the even (high nibble) and odd (low nibble) values to `store`.
// Returns the first element not done. Needs 8 or more float lanes (one or two table registers).
template <class Store>
HWY_INLINE uint64_t Dequant4Vectors(const uint8_t* packed, const float* absmax, const float* table,
                                    uint64_t blocksize, uint64_t i, uint64_t end, Store&& store) {
#if HWY_TARGET == HWY_SCALAR
  (void)packed, (void)absmax, (void)table, (void)blocksize, (void)end, (void)store;
  return i;
#else
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du32;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const size_t lanes = hn::Lanes(df);
  if (lanes < 8) return i;
  const uint64_t step = 2 * lanes;
  const auto t0 = hn::LoadU(df, table);
  const auto t1 = lanes >= 16 ? t0 : hn::LoadU(df, table + 8);
  const auto seven = hn::Set(di, 7);
  auto lookup = [&](auto codes_u32) {
    const auto idx = hn::BitCast(di, codes_u32);
    if (lanes >= 16) return hn::TableLookupLanes(t0, hn::IndicesFromVec(df, idx));
    const auto low = hn::And(idx, seven);
    return hn::IfThenElse(hn::RebindMask(df, hn::Gt(idx, seven)),
                          hn::TableLookupLanes(t1, hn::IndicesFromVec(df, low)),
                          hn::TableLookupLanes(t0, hn::IndicesFromVec(df, low)));
  };
  const auto low_nibble = hn::Set(du32, 15u);
  for (; i + step <= end; i += step) {
    const auto bytes = hn::PromoteTo(du32, hn::LoadU(du8, packed + i / 2));
    const auto scale = hn::Set(df, absmax[i / blocksize]);
    store(i, hn::Mul(lookup(hn::ShiftRight<4>(bytes)), scale),
          hn::Mul(lookup(hn::And(bytes, low_nibble)), scale));
  }
  return i;
#endif
}

// Elements [first, first + count) into out: a scalar head up to the vector alignment, the
// vector loop (`store` gets the output position and the even/odd values), a scalar tail.
template <class T, class Scalar, class Store>
void Dequant4Range(const uint8_t* packed, const float* absmax, const float* table,
                   uint64_t blocksize, uint64_t first, uint64_t count, T* out, const Scalar& scalar,
                   const Store& store) {
  const uint64_t end = first + count;
  uint64_t i = first;
#if HWY_TARGET != HWY_SCALAR
  const uint64_t step = 2 * hn::Lanes(hn::ScalableTag<float>());
  for (; i < end && i % step; ++i)
    out[i - first] = scalar(dequant_one(packed, absmax, table, blocksize, i));
  i = Dequant4Vectors(
      packed, absmax, table, blocksize, i, end,
      [&](uint64_t at, auto even, auto odd) { store(out + (at - first), even, odd); });
#else
  (void)store;
#endif
  for (; i < end; ++i) out[i - first] = scalar(dequant_one(packed, absmax, table, blocksize, i));
}

void Dequant4F32(const uint8_t* packed, const float* absmax, const float* table, uint64_t blocksize,
                 uint64_t first, uint64_t count, float* out) {
  const hn::ScalableTag<float> df;
  Dequant4Range(
      packed, absmax, table, blocksize, first, count, out, [](float v) { return v; },
      [&](float* o, auto even, auto odd) { hn::StoreInterleaved2(even, odd, df, o); });
}

void Dequant4BF16(const uint8_t* packed, const float* absmax, const float* table,
                  uint64_t blocksize, uint64_t first, uint64_t count, uint16_t* out) {
  const hn::RebindToUnsigned<hn::ScalableTag<float>> du32;
  // An (even, odd) pair of BF16 values is one little-endian 32-bit lane; `first` is even.
  Dequant4Range(packed, absmax, table, blocksize, first, count, out, &f32_to_bf16,
                [&](uint16_t* o, auto even, auto odd) {
                  const auto e = F32BitsToBF16(du32, hn::BitCast(du32, even));
                  const auto h = F32BitsToBF16(du32, hn::BitCast(du32, odd));
                  hn::StoreU(hn::Or(e, hn::ShiftLeft<16>(h)), du32, reinterpret_cast<uint32_t*>(o));
                });
}

}  // namespace HWY_NAMESPACE
}  // namespace tlio::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tlio::detail {

HWY_EXPORT(AbsMaxBits);
HWY_EXPORT(Bucketize15);
HWY_EXPORT(Dequant4F32);
HWY_EXPORT(Dequant4BF16);

uint32_t bnb_absmax_bits(const float* x, uint64_t n) {
  return HWY_DYNAMIC_DISPATCH(AbsMaxBits)(x, n);
}

void bnb_bucketize15(const float* x, uint64_t n, float scale, bool divide, const float* bounds,
                     uint8_t* codes) {
  HWY_DYNAMIC_DISPATCH(Bucketize15)(x, n, scale, divide, bounds, codes);
}

void bnb_dequant4_f32(const uint8_t* packed, const float* absmax, const float* table,
                      uint64_t blocksize, uint64_t first, uint64_t count, float* out) {
  HWY_DYNAMIC_DISPATCH(Dequant4F32)(packed, absmax, table, blocksize, first, count, out);
}

void bnb_dequant4_bf16(const uint8_t* packed, const float* absmax, const float* table,
                       uint64_t blocksize, uint64_t first, uint64_t count, uint16_t* out) {
  HWY_DYNAMIC_DISPATCH(Dequant4BF16)(packed, absmax, table, blocksize, first, count, out);
}

}  // namespace tlio::detail
#endif
