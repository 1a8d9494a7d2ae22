// dtype/value_runs.hpp: what value_stats, add_to_histogram and difference_sums share.
#pragma once

#include <cstdint>
#include <span>

#include "tlio/dtype.hpp"

namespace tlio::detail {

/// Error{invalid_argument} unless `data` holds `count` values of a dtype with numeric values.
void check_values(Dtype dtype, std::span<const std::byte> data, uint64_t count);

}  // namespace tlio::detail
