// tlio/value_stats.hpp: the figures `tlio stats` shows of a run of values of any numeric dtype:
// counts, min and max, mean and standard deviation, and a histogram, computed with SIMD over
// blocks small enough to stay in the cache (one read of the data per call), in double precision.
//
// A long run is split into pieces (over threads, say), each piece's ValueStats made on its own
// and merged in the pieces' order: the figures then depend on where the pieces begin and end,
// never on which thread did what.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include "tlio/dtype.hpp"
#include "tlio/export.hpp"

namespace tlio {

struct ValueStats {
  uint64_t count = 0;  ///< values seen
  uint64_t nan = 0;
  uint64_t inf = 0;
  uint64_t zero = 0;
  double min = std::numeric_limits<double>::infinity();  ///< of the values but NaN (infinities too)
  double max = -std::numeric_limits<double>::infinity();
  double mean = 0;  ///< of the finite values
  double m2 = 0;    ///< sum of the finite values' squared deviations from `mean`

  uint64_t finite() const noexcept { return count - nan - inf; }
  /// The finite values' population standard deviation (numpy's std), 0 when there are none.
  double std_dev() const noexcept {
    return finite() > 0 ? std::sqrt(m2 / static_cast<double>(finite())) : 0.0;
  }
  /// Adds the figures of values that come after these (Chan et al.'s pairwise update).
  void merge(const ValueStats& later) noexcept {
    const uint64_t na = finite(), nb = later.finite();
    if (nb > 0) {
      const double n = static_cast<double>(na + nb), delta = later.mean - mean;
      mean += delta * static_cast<double>(nb) / n;
      m2 += later.m2 + delta * delta * static_cast<double>(na) * static_cast<double>(nb) / n;
    }
    count += later.count;
    nan += later.nan;
    inf += later.inf;
    zero += later.zero;
    min = std::fmin(min, later.min);
    max = std::fmax(max, later.max);
  }
};

/// The figures of the `count` values of `dtype` in `data` (at least their bytes). Any dtype
/// tlio converts to F64 (all but C64; BOOL as 0 and 1); F32 and F64 are read as they are, F16
/// and BF16 widened to F32 a block at a time, the others converted to F64.
/// Error{invalid_argument} for C64 or `data` too short.
TLIO_API ValueStats value_stats(Dtype dtype, std::span<const std::byte> data, uint64_t count);

/// Adds to `bins` the count of each equal-width bin over [lo, hi] of the finite values (the last
/// bin closed), as numpy.histogram(values, len(bins), (lo, hi)) counts float64 values; values
/// outside [lo, hi] are not counted. Error{invalid_argument} when !(lo < hi), hi - lo is not
/// finite, there are no bins, or as value_stats.
TLIO_API void add_to_histogram(Dtype dtype, std::span<const std::byte> data, uint64_t count,
                               double lo, double hi, std::span<uint64_t> bins);

/// The cosine similarity of two runs from their sums a.b, a.a and b.b: 1 when both are all zero,
/// 0 when one is; sqrt(a.a * b.b) taken whole when that neither overflows nor underflows, so that
/// identical runs have a cosine of exactly 1; clamped to [-1, 1]; NaN (no figure) when the sums
/// themselves overflowed.
inline double cosine_similarity(double ab, double a2, double b2) noexcept {
  if (a2 == 0 && b2 == 0) return 1.0;
  if (a2 == 0 || b2 == 0) return 0.0;
  const double product = a2 * b2;
  const double norms =
      std::isfinite(product) && product > 0 ? std::sqrt(product) : std::sqrt(a2) * std::sqrt(b2);
  const double cosine = ab / norms;
  return std::isnan(cosine) ? cosine : std::fmin(1.0, std::fmax(-1.0, cosine));
}

/// The sums the differences of values `a` from reference values `b` are made of, the pairs
/// where either side is NaN or infinite counted apart. Like ValueStats, sums of pieces merged in
/// order give figures that depend only on where the pieces begin and end. The one engine of
/// differences: `tlio diff` (compare_files, compare_weights) and reports both sum with it and
/// read their figures through difference_figures.
struct DifferenceSums {
  uint64_t finite = 0;     ///< pairs where both sides are finite
  uint64_t nonfinite = 0;  ///< pairs with a NaN or an infinity on either side
  uint64_t mismatch = 0;   ///< of those, pairs whose sides differ (NaN equals NaN)
  /// Finite pairs outside the tolerance difference_sums was given: |a - b| > atol + rtol * |b|.
  uint64_t outside = 0;
  /// Over the finite pairs: sums of (a - b)^2, a^2, b^2 and a * b, the largest |a - b|, and the
  /// largest |a - b| / |b| (infinite where b is 0 and a is not).
  double d2 = 0, a2 = 0, b2 = 0, ab = 0, max_abs = 0, max_rel = 0;

  void merge(const DifferenceSums& later) noexcept {
    finite += later.finite;
    nonfinite += later.nonfinite;
    mismatch += later.mismatch;
    outside += later.outside;
    d2 += later.d2;
    a2 += later.a2;
    b2 += later.b2;
    ab += later.ab;
    max_abs = std::fmax(max_abs, later.max_abs);
    max_rel = std::fmax(max_rel, later.max_rel);
  }
};

/// What the sums say, by one set of rules. A NaN or an infinity on one side only is the worst
/// difference: max_abs and max_rel infinite, sqnr_db -inf, and the pair outside any tolerance.
/// Without a finite pair, rmse and sqnr_db are NaN (no figure) when some pair is not finite, and
/// 0 and +inf for no pairs at all.
struct DifferenceFigures {
  double max_abs = 0, max_rel = 0;
  double rmse = 0;       ///< sqrt(mean (a - b)^2) over the finite pairs
  double cosine = 1;     ///< cosine_similarity of the finite pairs
  double sqnr_db = 0;    ///< 10 log10(sum b^2 / sum (a - b)^2): +inf when a equals b
  uint64_t outside = 0;  ///< pairs outside tolerance, the one-sided NaNs and infinities included
};
TLIO_API DifferenceFigures difference_figures(const DifferenceSums& s) noexcept;

/// The sums of `count` pairs: values of `a_dtype` in `a` against values of `b_dtype` in `b`,
/// each widened exactly to F64 (through F32 for F32, F16 and BF16, with SIMD), a block at a time;
/// a pair is outside tolerance when |a - b| > atol + rtol * |b| (B is the reference, as in
/// numpy's isclose). Error{invalid_argument} as value_stats for either side.
TLIO_API DifferenceSums difference_sums(Dtype a_dtype, std::span<const std::byte> a, Dtype b_dtype,
                                        std::span<const std::byte> b, uint64_t count,
                                        double atol = 0, double rtol = 0);

}  // namespace tlio
