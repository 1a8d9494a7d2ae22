// io/checked.hpp: overflow-checked size arithmetic. Every size computed from file contents goes
// through these helpers, so a hostile header can never wrap a size around.
#pragma once

#include <cstdint>
#include <optional>

namespace tlio::detail {

inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) noexcept {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) noexcept {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// The product of all values (1 for none); nullopt on overflow.
template <class Range>
std::optional<uint64_t> checked_product(const Range& values) noexcept {
  uint64_t r = 1;
  for (uint64_t v : values)
    if (__builtin_mul_overflow(r, v, &r)) return std::nullopt;
  return r;
}

/// Converts to size_t for indexing memory; nullopt when it does not fit (32-bit hosts).
inline std::optional<size_t> to_size(uint64_t v) noexcept {
  if (v > SIZE_MAX) return std::nullopt;
  return static_cast<size_t>(v);
}

}  // namespace tlio::detail
