// quant/mlx/mlx_kernels.cpp: see mlx_kernels.hpp. Compiled with -ffp-contract=off, as MLX's
// kernels round each operation.
#include "quant/mlx/mlx_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "tlio/convert.hpp"

namespace tlio::detail {

void mlx_affine_group(const float* values, uint64_t n, unsigned bits, float& scale, float& bias,
                      uint8_t* codes) {
  const auto levels = static_cast<float>((1u << bits) - 1);
  float lo = values[0], hi = values[0];
  for (uint64_t i = 1; i < n; ++i) {
    lo = std::min(lo, values[i]);
    hi = std::max(hi, values[i]);
  }
  const bool low_edge = std::fabs(lo) > std::fabs(hi);  // a tie takes the max
  float s = std::max((hi - lo) / levels, kMlxAffineEps);
  s = low_edge ? s : -s;
  const float edge = low_edge ? lo : hi;
  const float q0 = std::rint(edge / s);
  float b = 0;
  if (q0 != 0) {
    s = edge / q0;
    b = edge;
  }
  for (uint64_t i = 0; i < n; ++i)
    codes[i] = static_cast<uint8_t>(std::clamp(std::rint((values[i] - b) / s), 0.0f, levels));
  scale = s;
  bias = b;
}

void mlx_pack(const uint8_t* codes, uint64_t n, unsigned bits, uint64_t first_bit,
              uint32_t* words) {
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t bit = first_bit + i * bits, word = bit / 32;
    const unsigned shift = bit % 32;
    words[word] |= uint32_t{codes[i]} << shift;
    if (shift + bits > 32) words[word + 1] |= uint32_t{codes[i]} >> (32 - shift);
  }
}

void mlx_unpack(const std::byte* row, uint64_t first, uint64_t n, unsigned bits, uint8_t* codes) {
  const uint32_t mask = (1u << bits) - 1;
  uint64_t bit = first * bits;
  for (uint64_t i = 0; i < n; ++i, bit += bits) {
    // The 8 bytes from the code's first byte hold it whole (bits <= 8): read within the row
    // only as far as its last byte.
    const uint64_t byte = bit / 8, last = (bit + bits - 1) / 8;
    uint64_t v = 0;
    std::memcpy(&v, row + byte, last - byte + 1);
    codes[i] = static_cast<uint8_t>((v >> (bit % 8)) & mask);
  }
}

void mlx_round_through(Dtype t, std::span<float> values) {
  if (t == Dtype::F32) return;
  thread_local std::vector<std::byte> narrow;
  narrow.resize(values.size() * 2);
  const std::span<std::byte> wide = std::as_writable_bytes(values);
  convert(Dtype::F32, wide, t, narrow, values.size());
  convert(t, narrow, Dtype::F32, wide, values.size());
}

int mlx_mx_exponent(float amax, float max_value, Dtype t) {
  float s = amax / max_value;
  mlx_round_through(t, std::span(&s, 1));
  if (s == 0) return 0;
  int k = 0;
  const float m = std::frexp(s, &k);  // s = m * 2^k, m in [0.5, 1): ceil(log2 s) is k, or k - 1
  return m == 0.5f ? k - 1 : k;
}

uint8_t mlx_fp4_code(float x) {
  const float a = std::fabs(x);
  constexpr float kUpTo[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};  // code i up to here
  uint8_t code = 7;
  for (uint8_t i = 0; i < 7; ++i)
    if (a <= kUpTo[i]) {
      code = i;
      break;
    }
  return code != 0 && x < 0 ? static_cast<uint8_t>(code | 8) : code;
}

uint8_t mlx_fp8_byte(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const float a = std::fabs(x);
  if (!(a < 448.0f)) return sign | 0x7E;
  // The positive codes in order: 0..7 subnormal (k * 2^-9), then exponent e (1..15), mantissa m.
  const auto value = [](unsigned c) {
    const unsigned e = c >> 3, m = c & 7;
    return e == 0 ? std::ldexp(static_cast<float>(m), -9)
                  : std::ldexp(1.0f + static_cast<float>(m) / 8, static_cast<int>(e) - 7);
  };
  unsigned lo = 0, hi = 0x7E;  // value(lo) <= a < value(hi)
  while (hi - lo > 1) {
    const unsigned mid = (lo + hi) / 2;
    (value(mid) <= a ? lo : hi) = mid;
  }
  const float below = a - value(lo), above = value(hi) - a;
  const unsigned code = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
  return static_cast<uint8_t>(sign | code);
}

}  // namespace tlio::detail
