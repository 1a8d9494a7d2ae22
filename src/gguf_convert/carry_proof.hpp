// gguf_convert/carry_proof.hpp: the proof a transcode makes of each row it carries: the row's
// values as the target layout's decoder reads them against the source's, bit for bit but for the
// sign of a zero (counted), or, for a requantized row, its error.
#pragma once

#include <cstdint>
#include <optional>

namespace tlio::detail {

/// What the comparison of one row found.
struct RowCheck {
  double squares = 0;               ///< requantized: the sum of squared errors
  double max_abs = 0;               ///< and the largest
  uint64_t zero_signs = 0;          ///< carried: zeros whose sign changed
  std::optional<uint64_t> differs;  ///< carried: the first column whose value differs
};

/// Compares `cols` values `got` (the target's) with `want` (the source's): carried, equal bits or
/// two zeros; requantized, the error.
RowCheck check_row(const float* got, const float* want, uint64_t cols, bool carried);

}  // namespace tlio::detail
