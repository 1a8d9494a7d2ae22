// dtype/convert.cpp: conversion dispatch (SIMD kernels, lookup tables, the scalar reference)
// and the split of large arrays over the machine's cores.
#include "tlio/convert.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/checked.hpp"
#include "common/copy.hpp"
#include "common/parallel.hpp"
#include "dtype/convert_kernels.hpp"
#include "dtype/minifloat.hpp"
#include "tlio/error.hpp"

namespace tlio {

// Arrays of at least this many elements are converted on all cores.
inline constexpr uint64_t kParallelMinElements = uint64_t{1} << 20;
// Chunks start at multiples of this many elements (whole bytes for F4, whole cache lines).
inline constexpr uint64_t kChunkAlign = 64;

namespace {

using detail::MiniFloatSpec;

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

bool is_convertible_float(Dtype d) {
  return is_floating(d) && d != Dtype::F6_E2M3 && d != Dtype::F6_E3M2;
}

// Decoding tables for the 8-bit float formats (exact values as F32, and as BF16 bits: every F8
// value is exactly representable in both).
struct Byte8Tables {
  std::array<float, 256> f32{};
  std::array<uint16_t, 256> bf16{};
};

const Byte8Tables& tables_for(Dtype d) {
  static const auto make = [](Dtype t) {
    Byte8Tables tab;
    for (uint32_t b = 0; b < 256; ++b) {
      tab.f32[b] = static_cast<float>(detail::decode_float(t, b));
      tab.bf16[b] = f32_to_bf16(tab.f32[b]);
    }
    return tab;
  };
  static const Byte8Tables e5m2 = make(Dtype::F8_E5M2), e4m3 = make(Dtype::F8_E4M3),
                           e8m0 = make(Dtype::F8_E8M0), e4m3fnuz = make(Dtype::F8_E4M3FNUZ),
                           e5m2fnuz = make(Dtype::F8_E5M2FNUZ);
  switch (d) {
    case Dtype::F8_E5M2:
      return e5m2;
    case Dtype::F8_E4M3:
      return e4m3;
    case Dtype::F8_E8M0:
      return e8m0;
    case Dtype::F8_E4M3FNUZ:
      return e4m3fnuz;
    default:
      return e5m2fnuz;
  }
}

bool is_f8(Dtype d) {
  return d == Dtype::F8_E5M2 || d == Dtype::F8_E4M3 || d == Dtype::F8_E8M0 ||
         d == Dtype::F8_E4M3FNUZ || d == Dtype::F8_E5M2FNUZ;
}

// Element i of a float tensor as a double (exact), with its NaN payload aligned to 52 bits.
double read_float(Dtype d, const std::byte* src, size_t i, uint64_t* payload) {
  *payload = 0;
  switch (d) {
    case Dtype::F64: {
      const uint64_t b = load<uint64_t>(src + 8 * i);
      *payload = b & ((uint64_t{1} << 52) - 1);
      return detail::decode_float(d, b);
    }
    case Dtype::F32: {
      const uint32_t b = load<uint32_t>(src + 4 * i);
      *payload = uint64_t{b & 0x7FFFFFu} << 29;
      return detail::decode_float(d, b);
    }
    case Dtype::F16:
    case Dtype::BF16: {
      const uint16_t b = load<uint16_t>(src + 2 * i);
      const int man = d == Dtype::F16 ? 10 : 7;
      *payload = uint64_t{b & ((1u << man) - 1)} << (52 - man);
      return detail::decode_float(d, b);
    }
    case Dtype::F4: {
      const uint8_t byte = std::to_integer<uint8_t>(src[i / 2]);
      return detail::decode_float(d, i % 2 ? byte >> 4 : byte & 15);
    }
    default:
      return detail::decode_float(d, std::to_integer<uint8_t>(src[i]));
  }
}

// Element i of an integer or BOOL tensor, converted directly (one rounding) to T.
template <class T>
T read_integer(Dtype d, const std::byte* src, size_t i) {
  switch (d) {
    case Dtype::BOOL:
      return src[i] != std::byte{0} ? T(1) : T(0);
    case Dtype::U8:
      return static_cast<T>(load<uint8_t>(src + i));
    case Dtype::I8:
      return static_cast<T>(load<int8_t>(src + i));
    case Dtype::U16:
      return static_cast<T>(load<uint16_t>(src + 2 * i));
    case Dtype::I16:
      return static_cast<T>(load<int16_t>(src + 2 * i));
    case Dtype::U32:
      return static_cast<T>(load<uint32_t>(src + 4 * i));
    case Dtype::I32:
      return static_cast<T>(load<int32_t>(src + 4 * i));
    case Dtype::U64:
      return static_cast<T>(load<uint64_t>(src + 8 * i));
    case Dtype::I64:
      return static_cast<T>(load<int64_t>(src + 8 * i));
    default:
      return T(0);
  }
}

[[noreturn]] void nan_to_f4() { throw_invalid("NaN cannot be converted to F4 (which has no NaN)"); }

void write_float(Dtype d, std::byte* dst, size_t i, double x, uint64_t payload) {
  switch (d) {
    case Dtype::F64:
      store(dst + 8 * i, x);
      break;
    case Dtype::F32:
      store(dst + 4 * i, static_cast<float>(x));
      break;  // one rounding, RNE
    case Dtype::F8_E8M0:
      dst[i] = std::byte{detail::e8m0_encode(x)};
      break;
    case Dtype::F16:
    case Dtype::BF16:
      store(dst + 2 * i, static_cast<uint16_t>(
                             detail::minifloat_encode(*detail::minifloat_spec(d), x, payload)));
      break;
    case Dtype::F4: {
      if (std::isnan(x)) nan_to_f4();
      const auto nibble =
          static_cast<uint8_t>(detail::minifloat_encode(*detail::minifloat_spec(d), x, payload));
      const uint8_t old = std::to_integer<uint8_t>(dst[i / 2]);
      dst[i / 2] = std::byte(i % 2 ? (old & 0x0F) | (nibble << 4) : (old & 0xF0) | nibble);
      break;
    }
    default:
      dst[i] = std::byte(
          static_cast<uint8_t>(detail::minifloat_encode(*detail::minifloat_spec(d), x, payload)));
  }
}

// Converts elements [begin, end) with the fastest path available for the pair.
void convert_range(Dtype from, const std::byte* src, Dtype to, std::byte* dst, size_t begin,
                   size_t end) {
  const size_t n = end - begin;
  const unsigned fb = dtype_bits(from), tb = dtype_bits(to);
  const std::byte* s = src + begin * fb / 8;
  std::byte* d = dst + begin * tb / 8;
  if (from == to) return detail::copy_bytes(d, s, n * fb / 8);
  if (from == Dtype::F32 && to == Dtype::BF16) return detail::simd_f32_to_bf16(s, d, n);
  if (from == Dtype::BF16 && to == Dtype::F32) return detail::simd_bf16_to_f32(s, d, n);
  if (from == Dtype::F32 && to == Dtype::F16) return detail::simd_f32_to_f16(s, d, n);
  if (from == Dtype::F16 && to == Dtype::F32) return detail::simd_f16_to_f32(s, d, n);
  if (is_f8(from) && to == Dtype::F32) {
    const auto& t = tables_for(from).f32;
    for (size_t i = 0; i < n; ++i) store(d + 4 * i, t[std::to_integer<uint8_t>(s[i])]);
    return;
  }
  if (is_f8(from) && to == Dtype::BF16) {
    const auto& t = tables_for(from).bf16;
    for (size_t i = 0; i < n; ++i) store(d + 2 * i, t[std::to_integer<uint8_t>(s[i])]);
    return;
  }
  detail::convert_scalar(from, src, to, dst, begin, end);
}

}  // namespace

namespace detail {

void convert_scalar(Dtype from, const std::byte* src, Dtype to, std::byte* dst, size_t begin,
                    size_t end) {
  if (is_integer(from) || from == Dtype::BOOL) {
    for (size_t i = begin; i < end; ++i) {
      if (to == Dtype::F32)
        store(dst + 4 * i, read_integer<float>(from, src, i));
      else
        store(dst + 8 * i, read_integer<double>(from, src, i));
    }
    return;
  }
  for (size_t i = begin; i < end; ++i) {
    uint64_t payload;
    const double x = read_float(from, src, i, &payload);
    write_float(to, dst, i, x, payload);
  }
}

}  // namespace detail

bool can_convert(Dtype from, Dtype to) noexcept {
  if (from == to) return true;
  if (is_convertible_float(from) && is_convertible_float(to)) return true;
  return (is_integer(from) || from == Dtype::BOOL) && (to == Dtype::F32 || to == Dtype::F64);
}

uint64_t bytes_for(Dtype d, uint64_t count) {
  const uint64_t shape[] = {count};
  const detail::TensorSize s = detail::tensor_size(dtype_bits(d), shape);
  if (s.problem != detail::TensorSize::Problem::none)
    throw_invalid(
        fmt::format("{} elements of {} are not a whole number of bytes", count, dtype_name(d)));
  return s.bytes;
}

void convert(Dtype from, std::span<const std::byte> src, Dtype to, std::span<std::byte> dst,
             uint64_t count) {
  if (!can_convert(from, to))
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                fmt::format("cannot convert {} to {}", dtype_name(from), dtype_name(to)));
  if (src.size() != bytes_for(from, count) || dst.size() != bytes_for(to, count))
    throw_invalid(
        fmt::format("converting {} elements {} -> {} needs {} and {} bytes; got {} and {}", count,
                    dtype_name(from), dtype_name(to), bytes_for(from, count), bytes_for(to, count),
                    src.size(), dst.size()));
  detail::parallel_for(count, kParallelMinElements, kChunkAlign,
                       detail::thread_count(detail::configured_threads()),
                       [&](uint64_t b, uint64_t e) {
                         convert_range(from, src.data(), to, dst.data(), static_cast<size_t>(b),
                                       static_cast<size_t>(e));
                       });
}

void set_conversion_threads(unsigned threads) noexcept {
  detail::configured_threads_setting().store(threads, std::memory_order_relaxed);
}

float bf16_to_f32(uint16_t bits) noexcept { return std::bit_cast<float>(uint32_t{bits} << 16); }

uint16_t f32_to_bf16(float value) noexcept {
  const auto u = std::bit_cast<uint32_t>(value);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}

float f16_to_f32(uint16_t bits) noexcept {
  uint32_t o = uint32_t{bits & 0x7FFFu} << 13;
  const uint32_t exp = o & 0x0F800000u;
  o += (127u - 15u) << 23;
  if (exp == 0x0F800000u) {
    o += (128u - 16u) << 23;  // Inf/NaN
  } else if (exp == 0) {      // zero and subnormals: renormalise exactly
    o += 1u << 23;
    o = std::bit_cast<uint32_t>(std::bit_cast<float>(o) - 6.103515625e-05f);  // minus 2^-14
  }
  return std::bit_cast<float>(o | uint32_t{bits & 0x8000u} << 16);
}

uint16_t f32_to_f16(float value) noexcept {
  const auto u = std::bit_cast<uint32_t>(value);
  const uint32_t sign = u & 0x80000000u;
  uint32_t a = u ^ sign;
  uint32_t o;
  if (a > 0x7F800000u) {
    o = 0x7E00u | ((a >> 13) & 0x3FFu);  // NaN: quiet, top payload bits
  } else if (a >= 0x47800000u) {
    o = 0x7C00u;  // rounds past 65504: infinity
  } else if (a < 0x38800000u) {
    // Adding 0.5 places the subnormal bits; the FPU rounds to nearest even.
    o = std::bit_cast<uint32_t>(std::bit_cast<float>(a) + 0.5f) - 0x3F000000u;
  } else {
    a += 0xC8000FFFu + ((a >> 13) & 1);  // rebias, round to nearest even
    o = a >> 13;
  }
  return static_cast<uint16_t>(o | (sign >> 16));
}

}  // namespace tlio
