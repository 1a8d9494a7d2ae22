// quant/compare_values.cpp: the tolerances checked, and a comparison's figures from its sums.
#include "quant/compare_values.hpp"

#include <fmt/core.h>

#include <cmath>

#include "tlio/error.hpp"

namespace tlio::detail {

void check_tolerances(const CompareOptions& options) {
  if (!(options.atol >= 0) || !(options.rtol >= 0) || std::isinf(options.atol) ||
      std::isinf(options.rtol))
    throw_invalid(fmt::format("tolerances must be finite and not negative (atol {}, rtol {})",
                              options.atol, options.rtol));
}

void fill_comparison(const DifferenceSums& sums, TensorComparison& c) {
  const DifferenceFigures f = difference_figures(sums);
  c.compared = true;
  c.max_abs = f.max_abs;
  c.max_rel = f.max_rel;
  c.rmse = f.rmse;
  c.cosine = f.cosine;
  c.outside = f.outside;
  c.equal = f.outside == 0;
}

}  // namespace tlio::detail
