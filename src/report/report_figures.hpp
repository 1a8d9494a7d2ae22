// report/report_figures.hpp: figures derived from a tensor's, shared by the JSON and the page.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tlio/value_stats.hpp"

namespace tlio::detail {

/// max |x| / std: how far the largest value stands out from the finite values' spread (NaN when
/// they have none; infinite when a value is).
inline double max_over_std(const ValueStats& s) {
  const double sd = s.std_dev();
  if (s.finite() == 0 || !(sd > 0)) return std::numeric_limits<double>::quiet_NaN();
  return std::fmax(std::fabs(s.min), std::fabs(s.max)) / sd;
}

/// Where a name's layer number is: its first dot-separated part of decimal digits only
/// ("model.layers.12.mlp.up_proj.weight", "blk.12.ffn_up.weight": "12"), as [begin, end).
inline std::optional<std::pair<size_t, size_t>> layer_part(std::string_view name) {
  for (size_t begin = 0; begin <= name.size();) {
    const size_t end = std::min(name.find('.', begin), name.size());
    if (end > begin &&
        name.substr(begin, end - begin).find_first_not_of("0123456789") == std::string_view::npos)
      return std::pair(begin, end);
    begin = end + 1;
  }
  return std::nullopt;
}

/// The layer number of a name (see layer_part), when it has one of at most 18 digits.
inline std::optional<uint64_t> layer_of(std::string_view name) {
  const auto part = layer_part(name);
  if (!part || part->second - part->first > 18) return std::nullopt;
  return std::stoull(std::string(name.substr(part->first, part->second - part->first)));
}

/// The name with its layer number made "*" ("model.layers.*.mlp.up_proj.weight"): the tensors a
/// chart draws as one series.
inline std::string kind_of(std::string_view name) {
  const auto part = layer_part(name);
  if (!part) return std::string(name);
  return std::string(name.substr(0, part->first)) + "*" + std::string(name.substr(part->second));
}

}  // namespace tlio::detail
