// quant/compare_values.cpp: two chunks of values compared, and a comparison's figures.
#include "quant/compare_values.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "tlio/error.hpp"
#include "tlio/value_stats.hpp"

namespace tlio::detail {

void CompareSums::add(const CompareSums& o) {
  max_abs = std::max(max_abs, o.max_abs);
  max_rel = std::max(max_rel, o.max_rel);
  squares += o.squares;
  dot += o.dot;
  norm_a += o.norm_a;
  norm_b += o.norm_b;
  finite += o.finite;
  outside += o.outside;
}

void CompareSums::fill(TensorComparison& c) const {
  c.compared = true;
  c.max_abs = max_abs;
  c.max_rel = max_rel;
  c.rmse = finite ? std::sqrt(squares / static_cast<double>(finite)) : 0;
  c.cosine = cosine_similarity(dot, norm_a, norm_b);
  c.outside = outside;
  c.equal = outside == 0;
}

void check_tolerances(const CompareOptions& options) {
  if (!(options.atol >= 0) || !(options.rtol >= 0) || std::isinf(options.atol) || std::isinf(options.rtol))
    throw_invalid(
        fmt::format("tolerances must be finite and not negative (atol {}, rtol {})", options.atol, options.rtol));
}

CompareSums compare_values(std::span<const double> a, std::span<const double> b, double atol, double rtol) {
  CompareSums s;
  for (size_t i = 0; i < a.size(); ++i) {
    const double u = a[i], v = b[i];
    if (std::isnan(u) || std::isnan(v)) {
      if (std::isnan(u) != std::isnan(v)) {
        s.max_abs = s.max_rel = INFINITY;
        ++s.outside;
      }
      continue;
    }
    if (std::isinf(u) || std::isinf(v)) {
      if (u != v) {
        s.max_abs = s.max_rel = INFINITY;
        ++s.outside;
      }
      continue;
    }
    const double d = std::fabs(u - v);
    s.max_abs = std::max(s.max_abs, d);
    if (d > 0) s.max_rel = std::max(s.max_rel, v != 0 ? d / std::fabs(v) : INFINITY);
    s.squares += d * d;
    s.dot += u * v;
    s.norm_a += u * u;
    s.norm_b += v * v;
    ++s.finite;
    if (!(d <= atol + rtol * std::fabs(v))) ++s.outside;
  }
  return s;
}

}  // namespace tlio::detail
