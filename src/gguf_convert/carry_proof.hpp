// gguf_convert/carry_proof.hpp: the proof a transcode makes of each row it carries: the row's
// values as the target layout's decoder reads them against the source's, bit for bit but for the
// sign of a zero (counted), or, for a requantized row, its error; and the refusal of the weights
// it cannot carry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/error.hpp"

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

/// Error{unsupported} under `rule`, naming `source`: the weights a transcode cannot carry into
/// `layout` ("MLX's layout"), each with its reason, refused before anything is written;
/// `lossy_takes_them` adds that --lossy requantizes them.
[[noreturn]] void refuse_weights(const std::vector<std::string>& refused, std::string_view layout,
                                 bool lossy_takes_them, Rule rule, const std::string& source);

}  // namespace tlio::detail
