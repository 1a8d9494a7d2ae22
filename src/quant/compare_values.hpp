// quant/compare_values.hpp: what compare_files and a comparison across formats share, both summing
// their chunks with the one engine of differences (tlio/value_stats.hpp's difference_sums): the
// tolerances' check, and a comparison's figures read from the sums by its rules
// (difference_figures).
#pragma once

#include "tlio/compare.hpp"
#include "tlio/value_stats.hpp"

namespace tlio::detail {

/// Error{invalid_argument} unless atol and rtol are finite and not negative.
void check_tolerances(const CompareOptions& options);

/// c's figures (compared, max_abs, max_rel, rmse, cosine, outside, equal) from the sums of all
/// its chunks, merged in chunk order so that they do not depend on the threads.
void fill_comparison(const DifferenceSums& sums, TensorComparison& c);

}  // namespace tlio::detail
