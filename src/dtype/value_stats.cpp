// dtype/value_stats.cpp: value_stats and add_to_histogram (tlio/value_stats.hpp). A block of
// values small enough for the cache is read twice by the kernels (counts, min, max and sum;
// then the squared deviations from the block's mean), compiled once per target by Highway and
// dispatched at run time; blocks are merged in order. Sums are kept in double precision.

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "dtype/value_stats.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include "tlio/value_stats.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "dtype/value_runs.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"

#ifndef TLIO_VALUE_STATS_ONCE
#define TLIO_VALUE_STATS_ONCE
namespace tlio::detail {

// One value into the running counts and sums of a block (heads and tails of the kernels).
struct BlockSums {
  uint64_t nan = 0, inf = 0, zero = 0;
  double min = std::numeric_limits<double>::infinity(),
         max = -std::numeric_limits<double>::infinity();
  double sum = 0;

  void add(double x) noexcept {
    if (std::isnan(x)) {
      ++nan;
      return;
    }
    if (std::isinf(x)) ++inf;
    if (x == 0) ++zero;
    min = std::min(min, x);
    max = std::max(max, x);
    if (std::isfinite(x)) sum += x;
  }
};

// The squared deviation of a finite value from `mean`; 0 for the others.
inline double squared_deviation(double x, double mean) noexcept {
  const double d = x - mean;
  return std::isfinite(x) ? d * d : 0.0;
}

// numpy.histogram's binning of float64 values, over a block, into four sets of `n_bins`
// counters taken in turn (neighbouring values, often in one bin, then do not wait for each
// other's increments). Everything it reads is a parameter: no store to a counter can change it.
template <class T>
void histogram_block(const T* x, size_t n, const double lo, const double hi, const double norm,
                     const double* __restrict edges, const size_t n_bins,
                     uint64_t* __restrict counts) {
  for (size_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(load_one(x, i));
    if (!(v >= lo && v <= hi)) continue;  // NaN too
    size_t k = std::min(static_cast<size_t>((v - lo) * norm), n_bins - 1);
    k -= static_cast<size_t>(v < edges[k] && k > 0);
    k += static_cast<size_t>(k + 1 < n_bins && v >= edges[k + 1]);
    ++counts[(i & 3) * n_bins + k];
  }
}

// A block's figures from its sums and its squared deviations.
inline ValueStats block_stats(size_t n, const BlockSums& s, double mean, double m2) noexcept {
  ValueStats b;
  b.count = n;
  b.nan = s.nan;
  b.inf = s.inf;
  b.zero = s.zero;
  b.min = s.min;
  b.max = s.max;
  b.mean = mean;
  b.m2 = m2;
  return b;
}

}  // namespace tlio::detail
#endif

HWY_BEFORE_NAMESPACE();
namespace tlio::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
template <class T>
void BlockStats(const T* x, size_t n, ValueStats* out) {
  BlockSums s;
  for (size_t i = 0; i < n; ++i) s.add(load_one(x, i));
  const uint64_t finite = n - s.nan - s.inf;
  const double mean = finite ? s.sum / static_cast<double>(finite) : 0.0;
  double m2 = 0;
  for (size_t i = 0; i < n; ++i) m2 += squared_deviation(load_one(x, i), mean);
  *out = block_stats(n, s, mean, m2);
}
#else
// The finite lanes of `v` as doubles, added to `sum` (F32: its two halves widened).
template <class D, class V, class VD>
void add_finite(D d, V v, VD& sum0, VD& sum1) {
  if constexpr (std::is_same_v<hn::TFromD<D>, double>) {
    (void)sum1;
    sum0 = hn::Add(sum0, hn::IfThenElseZero(hn::IsFinite(v), v));
  } else {
    const hn::Half<D> dh;
    const hn::Repartition<double, D> dd;
    const V f = hn::IfThenElseZero(hn::IsFinite(v), v);
    sum0 = hn::Add(sum0, hn::PromoteTo(dd, hn::LowerHalf(dh, f)));
    sum1 = hn::Add(sum1, hn::PromoteTo(dd, hn::UpperHalf(dh, f)));
  }
}

// The finite lanes' squared deviations from `mean`, added to `m2` (in double precision).
template <class D, class V, class VD>
void add_deviations(D d, V v, VD mean, VD& m2) {
  const auto add = [&](VD x) {
    const VD dev = hn::Sub(x, mean);
    m2 = hn::Add(m2, hn::IfThenElseZero(hn::IsFinite(x), hn::Mul(dev, dev)));
  };
  if constexpr (std::is_same_v<hn::TFromD<D>, double>) {
    add(v);
  } else {
    const hn::Half<D> dh;
    const hn::Repartition<double, D> dd;
    add(hn::PromoteTo(dd, hn::LowerHalf(dh, v)));
    add(hn::PromoteTo(dd, hn::UpperHalf(dh, v)));
  }
}

template <class T>
void BlockStats(const T* x, size_t n, ValueStats* out) {
  const hn::ScalableTag<T> d;
  const hn::Repartition<double, decltype(d)> dd;
  using V = hn::Vec<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  const V pos_inf = hn::Set(d, std::numeric_limits<T>::infinity()), neg_inf = hn::Neg(pos_inf);
  V vmin = pos_inf, vmax = neg_inf;
  auto sum0 = hn::Zero(dd), sum1 = hn::Zero(dd);
  BlockSums s;
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const V v = hn::LoadU(d, x + i);
    const auto is_nan = hn::IsNaN(v);
    s.nan += hn::CountTrue(d, is_nan);
    s.inf += hn::CountTrue(d, hn::IsInf(v));
    s.zero += hn::CountTrue(d, hn::Eq(v, hn::Zero(d)));
    vmin = hn::Min(vmin, hn::IfThenElse(is_nan, pos_inf, v));
    vmax = hn::Max(vmax, hn::IfThenElse(is_nan, neg_inf, v));
    add_finite(d, v, sum0, sum1);
  }
  for (; i < n; ++i) s.add(load_one(x, i));
  s.min = std::min(s.min, static_cast<double>(hn::GetLane(hn::MinOfLanes(d, vmin))));
  s.max = std::max(s.max, static_cast<double>(hn::GetLane(hn::MaxOfLanes(d, vmax))));
  s.sum += hn::GetLane(hn::SumOfLanes(dd, hn::Add(sum0, sum1)));
  const uint64_t finite = n - s.nan - s.inf;
  const double mean = finite ? s.sum / static_cast<double>(finite) : 0.0;
  auto m2v = hn::Zero(dd);
  const auto mean_v = hn::Set(dd, mean);
  size_t k = 0;
  for (; k + lanes <= n; k += lanes) add_deviations(d, hn::LoadU(d, x + k), mean_v, m2v);
  double m2 = hn::GetLane(hn::SumOfLanes(dd, m2v));
  for (; k < n; ++k) m2 += squared_deviation(load_one(x, k), mean);
  *out = block_stats(n, s, mean, m2);
}
#endif

void BlockStatsF32(const float* x, size_t n, ValueStats* out) { BlockStats(x, n, out); }
void BlockStatsF64(const double* x, size_t n, ValueStats* out) { BlockStats(x, n, out); }

}  // namespace HWY_NAMESPACE
}  // namespace tlio::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tlio {
namespace detail {
HWY_EXPORT(BlockStatsF32);
HWY_EXPORT(BlockStatsF64);

// Values per block: a block and its widened copy stay in the first levels of the cache.
constexpr size_t kBlock = 4096;

void check_values(Dtype dtype, std::span<const std::byte> data, uint64_t count) {
  if (dtype == Dtype::C64 || !can_convert(dtype, Dtype::F64))
    throw_invalid(fmt::format("{} values have no numeric statistics", dtype_name(dtype)));
  if (bytes_for(dtype, count) > data.size())
    throw_invalid(fmt::format("{} {} values need {} bytes, {} given", count, dtype_name(dtype),
                              bytes_for(dtype, count), data.size()));
}

// Calls fn(values, n) for each block of the values as F32 (F32, F16, BF16) or F64 (the others),
// widened into a buffer when they are not that already.
template <class Fn>
void for_each_block(Dtype dtype, std::span<const std::byte> data, uint64_t count, const Fn& fn) {
  const unsigned bits = dtype_bits(dtype);
  if (dtype == Dtype::F32 || dtype == Dtype::F64) {
    for (uint64_t i = 0; i < count; i += kBlock) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kBlock, count - i));
      if (dtype == Dtype::F32)
        fn(reinterpret_cast<const float*>(data.data() + i * 4), n);
      else
        fn(reinterpret_cast<const double*>(data.data() + i * 8), n);
    }
    return;
  }
  const bool to_f32 = dtype == Dtype::F16 || dtype == Dtype::BF16;
  alignas(64) std::array<double, kBlock> buffer;  // F64 values, or F32 ones in its first half
  for (uint64_t i = 0; i < count; i += kBlock) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kBlock, count - i));
    const auto in =
        data.subspan(static_cast<size_t>(i * bits / 8), static_cast<size_t>(bytes_for(dtype, n)));
    if (to_f32) {
      float* out = reinterpret_cast<float*>(buffer.data());
      convert(dtype, in, Dtype::F32, std::as_writable_bytes(std::span(out, n)), n);
      fn(static_cast<const float*>(out), n);
    } else {
      convert(dtype, in, Dtype::F64, std::as_writable_bytes(std::span(buffer.data(), n)), n);
      fn(static_cast<const double*>(buffer.data()), n);
    }
  }
}

}  // namespace detail

ValueStats value_stats(Dtype dtype, std::span<const std::byte> data, uint64_t count) {
  detail::check_values(dtype, data, count);
  ValueStats total;
  const auto block = [&](const auto* x, size_t n) {
    ValueStats b;
    if constexpr (std::is_same_v<std::remove_cv_t<std::remove_pointer_t<decltype(x)>>, float>)
      HWY_DYNAMIC_DISPATCH(detail::BlockStatsF32)(x, n, &b);
    else
      HWY_DYNAMIC_DISPATCH(detail::BlockStatsF64)(x, n, &b);
    total.merge(b);
  };
  detail::for_each_block(dtype, data, count, block);
  return total;
}

void add_to_histogram(Dtype dtype, std::span<const std::byte> data, uint64_t count, double lo,
                      double hi, std::span<uint64_t> bins) {
  detail::check_values(dtype, data, count);
  if (!(lo < hi) || bins.empty() || !std::isfinite(hi - lo))
    throw_invalid(
        fmt::format("a histogram needs lo < hi, both finite, and bins (got [{}, {}], {} bins)", lo,
                    hi, bins.size()));
  // numpy's way for float64: the index from one multiplication, then moved by one where the
  // value falls on the other side of the edge numpy computes with linspace.
  const size_t n_bins = bins.size();
  const double norm = static_cast<double>(n_bins) / (hi - lo),
               step = (hi - lo) / static_cast<double>(n_bins);
  std::vector<double> edges(n_bins + 1);
  for (size_t k = 0; k < n_bins; ++k) edges[k] = static_cast<double>(k) * step + lo;
  edges[n_bins] = hi;
  std::vector<uint64_t> counts(4 * n_bins, 0);
  detail::for_each_block(dtype, data, count, [&](const auto* x, size_t n) {
    detail::histogram_block(x, n, lo, hi, norm, edges.data(), n_bins, counts.data());
  });
  for (size_t k = 0; k < n_bins; ++k)
    bins[k] += counts[k] + counts[n_bins + k] + counts[2 * n_bins + k] + counts[3 * n_bins + k];
}

}  // namespace tlio
#endif
