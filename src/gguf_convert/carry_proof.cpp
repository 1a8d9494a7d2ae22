// gguf_convert/carry_proof.cpp: a row's proof (carry_proof.hpp). The comparison of a carried
// row runs in integer operations that vectorize; the column of a difference is looked for only
// when there is one.
#include "gguf_convert/carry_proof.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tlio::detail {

RowCheck check_row(const float* got, const float* want, uint64_t cols, bool carried) {
  RowCheck out;
  if (!carried) {
    for (uint64_t j = 0; j < cols; ++j) {
      const double d = static_cast<double>(got[j]) - want[j];
      out.squares += d * d;
      out.max_abs = std::max(out.max_abs, std::abs(d));
    }
    return out;
  }
  uint32_t other = 0, zero_signs = 0;  // a difference besides a zero's sign; those
  for (uint64_t j = 0; j < cols; ++j) {
    uint32_t a, b;
    std::memcpy(&a, &got[j], 4);
    std::memcpy(&b, &want[j], 4);
    const uint32_t x = a ^ b;
    const uint32_t zero_sign =
        static_cast<uint32_t>(x == 0x80000000u) & static_cast<uint32_t>((a & 0x7FFFFFFFu) == 0);
    zero_signs += zero_sign;
    other |= x & (zero_sign - 1);
  }
  out.zero_signs = zero_signs;
  if (other)
    for (uint64_t j = 0; j < cols && !out.differs; ++j)
      if (std::memcmp(&got[j], &want[j], 4) != 0 && (got[j] != 0.0f || want[j] != 0.0f))
        out.differs = j;
  return out;
}

void refuse_weights(const std::vector<std::string>& refused, std::string_view layout,
                    bool lossy_takes_them, Rule rule, const std::string& source) {
  constexpr size_t kNamed = 8;  // in the message; the count says how many in all
  const auto named =
      refused.begin() + static_cast<std::ptrdiff_t>(std::min(kNamed, refused.size()));
  throw Error(
      ErrorCode::unsupported, rule, refused.empty() ? std::string() : refused.front(), std::nullopt,
      fmt::format("{} weights cannot be carried into {} exactly: {}{}{}; nothing was written",
                  refused.size(), layout, fmt::join(refused.begin(), named, ", "),
                  refused.size() > kNamed ? ", ..." : "",
                  lossy_takes_them ? "; --lossy requantizes them" : ""),
      source);
}

}  // namespace tlio::detail
