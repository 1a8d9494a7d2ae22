// dtype/value_runs.hpp: what value_stats, add_to_histogram and difference_sums share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "tlio/dtype.hpp"

namespace tlio::detail {

/// Element i of a run that may not be aligned for T (the values of a mapped file need not be).
template <class T>
T load_one(const T* x, size_t i) {
  T v;
  std::memcpy(&v, reinterpret_cast<const std::byte*>(x) + i * sizeof(T), sizeof(T));
  return v;
}

/// Error{invalid_argument} unless `data` holds `count` values of a dtype with numeric values.
void check_values(Dtype dtype, std::span<const std::byte> data, uint64_t count);

}  // namespace tlio::detail
