// cli/slice_spec.hpp: the slice syntax `tlio cat --slice` and `tlio slice` share: numpy's
// entries (an index, or start:stop:step with any part left out) separated by commas.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tlio::cli {

/// One entry, as written: an index, or start:stop:step with any part left out.
struct SliceEntry {
  bool index = false;
  std::optional<int64_t> start, stop, step;
};

/// Parses `spec` (spaces ignored; "" is no entries). Throws UsageError naming what is wrong.
std::vector<SliceEntry> parse_slice_spec(const std::string& spec);

/// Where a dimension's selected positions lie: `count` positions from `start`, `step` apart.
struct DimPick {
  uint64_t start = 0, count = 0;
  int64_t step = 1;
  bool keep = true;  ///< false for an index: the dimension is dropped from the result
};

/// The entries against a shape, as numpy takes them (negative positions count from the end,
/// ranges are clamped); dimensions after the entries are taken whole. UsageError, starting with
/// `label`, for an index out of range or more entries than dimensions.
std::vector<DimPick> resolve_slice(const std::vector<SliceEntry>& entries,
                                   const std::vector<uint64_t>& shape, const std::string& name,
                                   const std::string& label);

}  // namespace tlio::cli
