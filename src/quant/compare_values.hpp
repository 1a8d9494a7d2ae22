// quant/compare_values.hpp: the sums diff keeps of two tensors' values, chunk by chunk, and
// the comparison they make: what compare_files and a comparison across formats share.
#pragma once

#include <cstdint>
#include <span>

#include "tlio/compare.hpp"

namespace tlio::detail {

/// One chunk's sums; added in chunk order so the totals do not depend on the threads.
struct CompareSums {
  double max_abs = 0, max_rel = 0, squares = 0, dot = 0, norm_a = 0, norm_b = 0;
  uint64_t finite = 0, outside = 0;

  void add(const CompareSums& o);
  /// c's figures from these sums (compared, max_abs, max_rel, rmse, cosine, outside, equal).
  void fill(TensorComparison& c) const;
};

/// Error{invalid_argument} unless atol and rtol are finite and not negative.
void check_tolerances(const CompareOptions& options);

/// The sums of a chunk of A's values against B's (the reference): |a - b| <= atol + rtol * |b|
/// is within tolerance; NaN equals NaN and an infinity itself; one side alone NaN or infinite
/// makes the largest differences infinite.
CompareSums compare_values(std::span<const double> a, std::span<const double> b, double atol, double rtol);

}  // namespace tlio::detail
