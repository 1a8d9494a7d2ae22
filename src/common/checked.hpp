// common/checked.hpp: overflow-checked size arithmetic. Every size computed from file contents goes
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

/// The element count of a shape (1 for none): 0 when any dimension is 0, whatever the others
/// (as the reference counts), else the product; nullopt on overflow.
template <class Range>
std::optional<uint64_t> checked_product(const Range& values) noexcept {
  for (uint64_t v : values)
    if (v == 0) return 0;
  uint64_t r = 1;
  for (uint64_t v : values)
    if (__builtin_mul_overflow(r, v, &r)) return std::nullopt;
  return r;
}

/// The size of a tensor of `bits`-bit elements, or why it has none.
struct TensorSize {
  enum class Problem : uint8_t { none, overflow, partial_byte };
  uint64_t elements = 0;
  uint64_t bytes = 0;
  Problem problem = Problem::none;
};

/// The one byte count of (element bits, shape) for the parser, the writer, conversions and
/// quantization: elements as checked_product counts them, count x bits without overflow, and a
/// whole number of bytes (sub-byte dtypes).
template <class Range>
TensorSize tensor_size(unsigned bits, const Range& shape) noexcept {
  TensorSize s;
  const auto elements = checked_product(shape);
  uint64_t total_bits = 0;
  if (!elements || __builtin_mul_overflow(*elements, uint64_t{bits}, &total_bits)) {
    s.problem = TensorSize::Problem::overflow;
    return s;
  }
  s.elements = *elements;
  if (total_bits % 8 != 0) {
    s.problem = TensorSize::Problem::partial_byte;
    return s;
  }
  s.bytes = total_bits / 8;
  return s;
}

/// Converts to size_t for indexing memory; nullopt when it does not fit (32-bit hosts).
inline std::optional<size_t> to_size(uint64_t v) noexcept {
  if (v > SIZE_MAX) return std::nullopt;
  return static_cast<size_t>(v);
}

}  // namespace tlio::detail
