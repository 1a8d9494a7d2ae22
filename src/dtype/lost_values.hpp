// dtype/lost_values.hpp: what a narrowing conversion lost, counted from the bits of its input
// and output alone (no second conversion): finite values that became infinite, nonzero values
// that became zero. A conversion maps NaN to NaN, infinity to infinity and zero to zero, so
// the differences of the two counts are exactly the values lost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tlio/dtype.hpp"

namespace tlio::detail {

struct LostCounts {
  uint64_t overflowed = 0;  ///< finite in the input, ±inf in the output
  uint64_t flushed = 0;     ///< nonzero in the input, ±0 in the output
};

/// True when converting `from` to `to` can overflow or flush: F64 -> F32, BF16 or F16;
/// F32 or F8_E8M0 -> BF16 or F16; BF16 -> F16. (Targets of 8 bits or fewer are not counted:
/// a model folder is cast to them only when asked to, --cast.)
bool can_lose_values(Dtype from, Dtype to) noexcept;

/// The values of `in` (`count` elements of `from`) that `out` (the same elements as `to`) lost.
/// Both dtypes among those of can_lose_values.
LostCounts lost_values(Dtype from, std::span<const std::byte> in, Dtype to,
                       std::span<const std::byte> out, uint64_t count) noexcept;

/// convert(from, in, to, out, count) on every core, counting what it lost piece by piece while
/// each piece is in cache (a second pass over a chunk made convert --dtype 1.26x slower).
LostCounts convert_counting_lost(Dtype from, std::span<const std::byte> in, Dtype to,
                                 std::span<std::byte> out, uint64_t count);

}  // namespace tlio::detail
