// dtype/bf16-inl.h: F32 -> BF16 rounding on vectors, shared by every Highway-compiled kernel
// that produces BF16 (include it after hwy/foreach_target.h; it is compiled once per target).
// Same bits as tlio::f32_to_bf16: nearest even, NaN keeps sign and top payload, quieted.

// Per-target include guard (Highway's idiom for -inl.h files).
#if defined(TLIO_DTYPE_BF16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TLIO_DTYPE_BF16_INL_H_
#undef TLIO_DTYPE_BF16_INL_H_
#else
#define TLIO_DTYPE_BF16_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace tlio::detail {
namespace HWY_NAMESPACE {

/// F32 bits (u32 lanes) -> BF16 bits in the low half of each lane.
template <class DU32, class V>
HWY_INLINE V F32BitsToBF16(DU32 du32, V u) {
  namespace hn = hwy::HWY_NAMESPACE;
  const auto is_nan = hn::Gt(hn::And(u, hn::Set(du32, 0x7FFFFFFFu)), hn::Set(du32, 0x7F800000u));
  const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du32, 1u));
  const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(u, hn::Set(du32, 0x7FFFu)), lsb));
  return hn::IfThenElse(is_nan, hn::Or(hn::ShiftRight<16>(u), hn::Set(du32, 0x40u)), rounded);
}

}  // namespace HWY_NAMESPACE
}  // namespace tlio::detail
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
