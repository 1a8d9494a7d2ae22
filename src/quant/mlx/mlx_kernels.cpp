// quant/mlx/mlx_kernels.cpp: see mlx_kernels.hpp. Compiled with -ffp-contract=off, as MLX's
// kernels round each operation.
#include "quant/mlx/mlx_kernels.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "quant/hub/hub_values.hpp"
#include "tlio/convert.hpp"

namespace tlio::detail {

namespace {

// rint for |x| <= 2^22, to nearest even as std::rint: the f32 sum rounds at the units' place.
inline float small_rint(float x) { return (x + 0x1.8p23f) - 0x1.8p23f; }

}  // namespace

bool mlx_affine_group(const float* values, uint64_t n, unsigned bits, float& scale, float& bias,
                      uint8_t* codes) {
  const auto levels = static_cast<float>((1u << bits) - 1);
  // Finite first (an exponent of all ones is an infinity or NaN), then the ends: two loops
  // that vectorize, where one with a NaN test in it does not.
  uint32_t special = 0;
  for (uint64_t k = 0; k < n; ++k) {
    uint32_t word;
    std::memcpy(&word, &values[k], 4);
    special |= static_cast<uint32_t>((word & 0x7F800000u) == 0x7F800000u);
  }
  if (special) return false;
  // Eight lanes of ends, merged after (the same ends whatever the order: the values are finite,
  // and a signed zero at an end changes nothing below).
  float lo8[8], hi8[8];
  for (unsigned j = 0; j < 8; ++j) lo8[j] = hi8[j] = values[0];
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (unsigned j = 0; j < 8; ++j) {
      lo8[j] = values[i + j] < lo8[j] ? values[i + j] : lo8[j];
      hi8[j] = values[i + j] > hi8[j] ? values[i + j] : hi8[j];
    }
  for (; i < n; ++i) {
    lo8[0] = values[i] < lo8[0] ? values[i] : lo8[0];
    hi8[0] = values[i] > hi8[0] ? values[i] : hi8[0];
  }
  float lo = lo8[0], hi = hi8[0];
  for (unsigned j = 1; j < 8; ++j) {
    lo = std::min(lo, lo8[j]);
    hi = std::max(hi, hi8[j]);
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
  // clamp(rint(y), 0, levels) is rint(clamp(y, 0, levels)): the levels are whole numbers.
  for (uint64_t k = 0; k < n; ++k)
    codes[k] = static_cast<uint8_t>(small_rint(std::clamp((values[k] - b) / s, 0.0f, levels)));
  scale = s;
  bias = b;
  return true;
}

void mlx_pack(const uint8_t* codes, uint64_t n, unsigned bits, uint64_t first_bit,
              uint32_t* words) {
  if (first_bit % 32 == 0 && n % 8 == 0 && (bits == 4 || bits == 8)) {  // byte by byte
    auto* out = reinterpret_cast<uint8_t*>(words + first_bit / 32);
    if (bits == 8) {
      std::memcpy(out, codes, n);
    } else {
      for (uint64_t k = 0; k < n / 2; ++k)
        out[k] = static_cast<uint8_t>(codes[2 * k] | codes[2 * k + 1] << 4);
    }
    return;
  }
  if (first_bit % 32 == 0) {  // a group's run (group x bits fills whole words): word by word
    uint32_t* w = words + first_bit / 32;
    uint64_t acc = 0;
    unsigned held = 0;
    for (uint64_t i = 0; i < n; ++i) {
      acc |= uint64_t{codes[i]} << held;
      held += bits;
      if (held >= 32) {
        *w++ |= static_cast<uint32_t>(acc);
        acc >>= 32;
        held -= 32;
      }
    }
    if (held > 0) *w |= static_cast<uint32_t>(acc);
    return;
  }
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t bit = first_bit + i * bits, word = bit / 32;
    const unsigned shift = bit % 32;
    words[word] |= uint32_t{codes[i]} << shift;
    if (shift + bits > 32) words[word + 1] |= uint32_t{codes[i]} >> (32 - shift);
  }
}

void mlx_unpack(const std::byte* row, uint64_t first, uint64_t n, unsigned bits, uint8_t* codes) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(row);
  if (bits == 8) {
    std::memcpy(codes, bytes + first, n);
    return;
  }
  const uint32_t mask = (1u << bits) - 1;
  if (bits == 4 || bits == 2) {  // codes within bytes, the low bits first
    const unsigned per_byte = 8 / bits;
    const auto one = [&](uint64_t c) {
      return static_cast<uint8_t>((bytes[c / per_byte] >> (c % per_byte * bits)) & mask);
    };
    uint64_t i = 0;
    for (; i < n && (first + i) % per_byte != 0; ++i) codes[i] = one(first + i);
    // Whole bytes: a fixed shift per lane, so the loops vectorize.
    const uint8_t* whole = bytes + (first + i) / per_byte;
    const uint64_t count = (n - i) / per_byte;
    uint8_t* out = codes + i;
    if (bits == 4) {
      for (uint64_t k = 0; k < count; ++k) {
        out[2 * k] = whole[k] & 0xF;
        out[2 * k + 1] = whole[k] >> 4;
      }
    } else {
      for (uint64_t k = 0; k < count; ++k)
        for (unsigned j = 0; j < 4; ++j) out[4 * k + j] = (whole[k] >> (2 * j)) & 3;
    }
    for (i += count * per_byte; i < n; ++i) codes[i] = one(first + i);
    return;
  }
  // The bytes that hold the codes, with 8 bytes to spare, so that each code is one 64-bit load.
  const uint64_t begin = first * bits / 8, end = ((first + n) * bits + 7) / 8;
  thread_local std::vector<uint8_t> held;
  held.resize(end - begin + 8);
  std::memcpy(held.data(), bytes + begin, end - begin);
  std::memset(held.data() + (end - begin), 0, 8);
  uint64_t bit = first * bits - begin * 8;
  for (uint64_t i = 0; i < n; ++i, bit += bits) {
    uint64_t v;
    std::memcpy(&v, held.data() + bit / 8, 8);
    codes[i] = static_cast<uint8_t>((v >> (bit % 8)) & mask);
  }
}

float mlx_round_f16(float x) noexcept {
  const float a = std::fabs(x);
  if (!(a < 65520.0f))  // NaN; the infinities and what rounds to them (past 65504's midpoint)
    return std::isnan(x) ? x : std::copysign(std::numeric_limits<float>::infinity(), x);
  // The quantum at a's binade (2^-24 for F16's subnormals), a power of two: exact division.
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  const float quantum = std::ldexp(1.0f, std::max(e - 1, -14) - 10);
  return std::copysign(small_rint(a / quantum) * quantum, x);  // a / quantum < 2^11
}

void mlx_affine_values(const uint8_t* codes, uint64_t n, float scale, float bias, Dtype t,
                       float* out) {
  if (t == Dtype::BF16) {  // (mlx_round_bf16 is inline: the loop vectorizes)
    for (uint64_t i = 0; i < n; ++i)
      out[i] = mlx_round_bf16(mlx_round_bf16(static_cast<float>(codes[i]) * scale) + bias);
  } else if (t == Dtype::F16) {
    for (uint64_t i = 0; i < n; ++i)
      out[i] = mlx_round_f16(mlx_round_f16(static_cast<float>(codes[i]) * scale) + bias);
  } else {
    for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<float>(codes[i]) * scale + bias;
  }
}

void mlx_fp_values(MlxMode mode, const uint8_t* codes, uint64_t first, uint64_t n,
                   const uint8_t* scales, uint64_t group, Dtype t, float* out) {
  static const std::array<float, 16> fp4 = e2m1_values(true);  // MLX's table: code 8 is -0
  const std::array<float, 256>& scale_of = mode == MlxMode::nvfp4 ? e4m3_values() : e8m0_values();
  for (uint64_t j = 0; j < n;) {  // a group (or what of it the range holds) at a time
    const uint64_t c = first + j, end = std::min(n, j + group - c % group);
    const float s = scale_of[scales[c / group]];
    if (mode == MlxMode::mxfp8) {
      const std::array<float, 256>& e4m3 = e4m3_values();
      for (uint64_t k = j; k < end; ++k) out[k] = mlx_round(t, e4m3[codes[first + k]] * s);
    } else {
      for (uint64_t k = j; k < end; ++k) {
        const uint64_t e = first + k;
        out[k] = mlx_round(t, fp4[(codes[e / 2] >> (e % 2 * 4)) & 0xF] * s);
      }
    }
    j = end;
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
