// dtype/value_differences.cpp: difference_sums (tlio/value_stats.hpp). Both runs are widened a
// block at a time (F32, F16 and BF16 to F32 with SIMD, the others to F64), then a kernel compiled
// once per target by Highway sums the pairs in double precision; a vector holding a NaN or an
// infinity on either side is summed one pair at a time.

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "dtype/value_differences.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "dtype/value_runs.hpp"
#include "tlio/convert.hpp"
#include "tlio/value_stats.hpp"

#ifndef TLIO_VALUE_DIFFERENCES_ONCE
#define TLIO_VALUE_DIFFERENCES_ONCE
namespace tlio::detail {

// A pair's tolerance: what numpy's isclose allows, B the reference.
struct Tolerance {
  double atol = 0, rtol = 0;
};

// One pair into the sums (heads, tails and vectors that hold a value that is not finite).
inline void add_pair(double a, double b, const Tolerance& t, DifferenceSums& s) noexcept {
  if (!std::isfinite(a) || !std::isfinite(b)) {
    ++s.nonfinite;
    s.mismatch += !(a == b || (std::isnan(a) && std::isnan(b)));
    return;
  }
  const double d = a - b, ad = std::fabs(d), ab = std::fabs(b);
  ++s.finite;
  s.d2 += d * d;
  s.a2 += a * a;
  s.b2 += b * b;
  s.ab += a * b;
  s.max_abs = std::max(s.max_abs, ad);
  if (ad > 0) s.max_rel = std::max(s.max_rel, ab != 0 ? ad / ab : HUGE_VAL);
  s.outside += ad > t.atol + t.rtol * ab;
}

}  // namespace tlio::detail
#endif

HWY_BEFORE_NAMESPACE();
namespace tlio::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
template <class T>
void BlockDifferences(const T* a, const T* b, size_t n, const Tolerance* t, DifferenceSums* out) {
  for (size_t i = 0; i < n; ++i) add_pair(load_one(a, i), load_one(b, i), *t, *out);
}
#else
template <class T>
void BlockDifferences(const T* a, const T* b, size_t n, const Tolerance* t, DifferenceSums* out) {
  const hn::ScalableTag<T> d;
  const hn::Repartition<double, decltype(d)> dd;
  using VD = hn::Vec<decltype(dd)>;
  const size_t lanes = hn::Lanes(d);
  const VD zero = hn::Zero(dd), inf = hn::Set(dd, HUGE_VAL), atol = hn::Set(dd, t->atol),
           rtol = hn::Set(dd, t->rtol);
  VD d2 = zero, a2 = zero, b2 = zero, ab = zero, max_abs = zero, max_rel = zero;
  DifferenceSums& s = *out;
  const auto add = [&](VD x, VD y) {
    const VD diff = hn::Sub(x, y), ad = hn::Abs(diff), ay = hn::Abs(y);
    d2 = hn::Add(d2, hn::Mul(diff, diff));
    a2 = hn::Add(a2, hn::Mul(x, x));
    b2 = hn::Add(b2, hn::Mul(y, y));
    ab = hn::Add(ab, hn::Mul(x, y));
    max_abs = hn::Max(max_abs, ad);
    // |a - b| / |b|, infinite where b is 0 and a is not (0 / 0 never taken).
    const VD rel = hn::IfThenElse(hn::Eq(ay, zero), hn::IfThenElseZero(hn::Gt(ad, zero), inf),
                                  hn::Div(ad, ay));
    max_rel = hn::Max(max_rel, rel);
    s.outside += hn::CountTrue(dd, hn::Gt(ad, hn::Add(atol, hn::Mul(rtol, ay))));
  };
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto va = hn::LoadU(d, a + i), vb = hn::LoadU(d, b + i);
    if (!hn::AllTrue(d, hn::And(hn::IsFinite(va), hn::IsFinite(vb)))) {
      for (size_t k = i; k < i + lanes; ++k) add_pair(load_one(a, k), load_one(b, k), *t, s);
      continue;
    }
    s.finite += lanes;
    if constexpr (std::is_same_v<T, double>) {
      add(va, vb);
    } else {
      const hn::Half<decltype(d)> dh;
      add(hn::PromoteTo(dd, hn::LowerHalf(dh, va)), hn::PromoteTo(dd, hn::LowerHalf(dh, vb)));
      add(hn::PromoteTo(dd, hn::UpperHalf(dh, va)), hn::PromoteTo(dd, hn::UpperHalf(dh, vb)));
    }
  }
  s.d2 += hn::GetLane(hn::SumOfLanes(dd, d2));
  s.a2 += hn::GetLane(hn::SumOfLanes(dd, a2));
  s.b2 += hn::GetLane(hn::SumOfLanes(dd, b2));
  s.ab += hn::GetLane(hn::SumOfLanes(dd, ab));
  s.max_abs = std::max(s.max_abs, static_cast<double>(hn::GetLane(hn::MaxOfLanes(dd, max_abs))));
  s.max_rel = std::max(s.max_rel, static_cast<double>(hn::GetLane(hn::MaxOfLanes(dd, max_rel))));
  for (; i < n; ++i) add_pair(load_one(a, i), load_one(b, i), *t, s);
}
#endif

void BlockDifferencesF32(const float* a, const float* b, size_t n, const Tolerance* t,
                         DifferenceSums* out) {
  BlockDifferences(a, b, n, t, out);
}
void BlockDifferencesF64(const double* a, const double* b, size_t n, const Tolerance* t,
                         DifferenceSums* out) {
  BlockDifferences(a, b, n, t, out);
}

}  // namespace HWY_NAMESPACE
}  // namespace tlio::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tlio {
namespace detail {
HWY_EXPORT(BlockDifferencesF32);
HWY_EXPORT(BlockDifferencesF64);

// Pairs per block: both sides widened stay in the first levels of the cache.
constexpr size_t kPairBlock = 2048;

bool widens_to_f32(Dtype d) { return d == Dtype::F32 || d == Dtype::F16 || d == Dtype::BF16; }

}  // namespace detail

DifferenceSums difference_sums(Dtype a_dtype, std::span<const std::byte> a, Dtype b_dtype,
                               std::span<const std::byte> b, uint64_t count, double atol,
                               double rtol) {
  const detail::Tolerance tolerance{atol, rtol};
  detail::check_values(a_dtype, a, count);
  detail::check_values(b_dtype, b, count);
  const bool f32 = detail::widens_to_f32(a_dtype) && detail::widens_to_f32(b_dtype);
  const Dtype to = f32 ? Dtype::F32 : Dtype::F64;
  const unsigned a_bits = dtype_bits(a_dtype), b_bits = dtype_bits(b_dtype);
  alignas(64) std::array<double, detail::kPairBlock> wa,
      wb;  // F64 values, or F32 ones in the first half
  DifferenceSums total;
  for (uint64_t i = 0; i < count; i += detail::kPairBlock) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(detail::kPairBlock, count - i));
    const auto widen = [&](Dtype from, std::span<const std::byte> data, unsigned bits,
                           double* out) -> const void* {
      const auto in =
          data.subspan(static_cast<size_t>(i * bits / 8), static_cast<size_t>(bytes_for(from, n)));
      if (from == to) return in.data();
      convert(from, in, to, std::as_writable_bytes(std::span(out, n)).first(n * (f32 ? 4 : 8)), n);
      return out;
    };
    const void* x = widen(a_dtype, a, a_bits, wa.data());
    const void* y = widen(b_dtype, b, b_bits, wb.data());
    DifferenceSums s;
    if (f32) {
      HWY_DYNAMIC_DISPATCH(detail::BlockDifferencesF32)
      (static_cast<const float*>(x), static_cast<const float*>(y), n, &tolerance, &s);
    } else {
      HWY_DYNAMIC_DISPATCH(detail::BlockDifferencesF64)
      (static_cast<const double*>(x), static_cast<const double*>(y), n, &tolerance, &s);
    }
    total.merge(s);
  }
  return total;
}

DifferenceFigures difference_figures(const DifferenceSums& s) noexcept {
  constexpr double kInf = std::numeric_limits<double>::infinity(),
                   kNaN = std::numeric_limits<double>::quiet_NaN();
  DifferenceFigures f;
  f.max_abs = s.mismatch ? kInf : s.max_abs;
  f.max_rel = s.mismatch ? kInf : s.max_rel;
  f.rmse = s.finite ? std::sqrt(s.d2 / static_cast<double>(s.finite)) : s.nonfinite ? kNaN : 0.0;
  f.cosine = cosine_similarity(s.ab, s.a2, s.b2);
  if (s.mismatch)
    f.sqnr_db = -kInf;
  else if (s.finite == 0 && s.nonfinite)
    f.sqnr_db = kNaN;
  else
    f.sqnr_db = s.d2 == 0 ? kInf : 10 * std::log10(s.b2 / s.d2);
  f.outside = s.outside + s.mismatch;
  return f;
}

}  // namespace tlio
#endif
