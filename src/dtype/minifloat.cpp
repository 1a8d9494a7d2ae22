// dtype/minifloat.cpp: scalar reference encode/decode of the small float formats.
#include "dtype/minifloat.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace tlio::detail {
namespace {

using Special = MiniFloatSpec::Special;

constexpr MiniFloatSpec kF16{5, 10, 15, Special::ieee};
constexpr MiniFloatSpec kBF16{8, 7, 127, Special::ieee};
constexpr MiniFloatSpec kE5M2{5, 2, 15, Special::ieee};
constexpr MiniFloatSpec kE4M3{4, 3, 7, Special::fn};
constexpr MiniFloatSpec kE4M3FNUZ{4, 3, 8, Special::fnuz};
constexpr MiniFloatSpec kE5M2FNUZ{5, 2, 16, Special::fnuz};
constexpr MiniFloatSpec kE2M1{2, 1, 1, Special::saturating};

uint32_t exp_mask(const MiniFloatSpec& f) { return (1u << f.exp_bits) - 1; }
uint32_t man_mask(const MiniFloatSpec& f) { return (1u << f.man_bits) - 1; }
uint32_t sign_bit(const MiniFloatSpec& f) { return 1u << (f.exp_bits + f.man_bits); }

// The format's NaN for a source NaN of sign `neg` and payload (52-bit aligned).
uint32_t nan_bits(const MiniFloatSpec& f, bool neg, uint64_t payload) {
  switch (f.special) {
    case Special::ieee: {
      uint32_t quiet = 1u << (f.man_bits - 1);
      uint32_t top = static_cast<uint32_t>(payload >> (52 - f.man_bits)) & man_mask(f);
      return (neg ? sign_bit(f) : 0) | exp_mask(f) << f.man_bits | quiet | top;
    }
    case Special::fn:
      return (neg ? sign_bit(f) : 0) | exp_mask(f) << f.man_bits | man_mask(f);
    case Special::fnuz:
      return sign_bit(f);
    case Special::saturating:
      break;
  }
  return 0;  // unreachable: the saturating format has no NaN (callers check)
}

// Largest finite magnitude's bits (without sign).
uint32_t max_finite_bits(const MiniFloatSpec& f) {
  switch (f.special) {
    case Special::ieee:
      return (exp_mask(f) - 1) << f.man_bits | man_mask(f);
    case Special::fn:
      return exp_mask(f) << f.man_bits | (man_mask(f) - 1);
    case Special::fnuz:
    case Special::saturating:
      return exp_mask(f) << f.man_bits | man_mask(f);
  }
  return 0;
}

}  // namespace

const MiniFloatSpec* minifloat_spec(Dtype d) noexcept {
  switch (d) {
    case Dtype::F16:
      return &kF16;
    case Dtype::BF16:
      return &kBF16;
    case Dtype::F8_E5M2:
      return &kE5M2;
    case Dtype::F8_E4M3:
      return &kE4M3;
    case Dtype::F8_E4M3FNUZ:
      return &kE4M3FNUZ;
    case Dtype::F8_E5M2FNUZ:
      return &kE5M2FNUZ;
    case Dtype::F4:
      return &kE2M1;
    default:
      return nullptr;
  }
}

double minifloat_decode(const MiniFloatSpec& f, uint32_t bits) noexcept {
  const bool neg = bits & sign_bit(f);
  const uint32_t e = (bits >> f.man_bits) & exp_mask(f);
  const uint32_t m = bits & man_mask(f);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (f.special == Special::fnuz && bits == sign_bit(f)) return nan;
  if (f.special == Special::ieee && e == exp_mask(f)) return m ? nan : (neg ? -HUGE_VAL : HUGE_VAL);
  if (f.special == Special::fn && e == exp_mask(f) && m == man_mask(f)) return nan;
  double v = e == 0 ? std::ldexp(static_cast<double>(m), 1 - f.bias - f.man_bits)
                    : std::ldexp(static_cast<double>(m | (1u << f.man_bits)),
                                 static_cast<int>(e) - f.bias - f.man_bits);
  return neg ? -v : v;
}

uint32_t minifloat_encode(const MiniFloatSpec& f, double x, uint64_t nan_payload) noexcept {
  const bool neg = std::signbit(x);
  if (std::isnan(x)) return nan_bits(f, neg, nan_payload);
  const uint32_t sign = neg ? sign_bit(f) : 0;
  const uint32_t zero = f.special == Special::fnuz ? 0 : sign;  // FNUZ has no negative zero
  const uint32_t max_bits = max_finite_bits(f);
  auto overflow = [&]() -> uint32_t {
    switch (f.special) {
      case Special::ieee:
        return sign | exp_mask(f) << f.man_bits;
      case Special::fn:
      case Special::fnuz:
        return nan_bits(f, neg, 0);
      case Special::saturating:
        return sign | max_bits;
    }
    return 0;
  };
  const double a = std::fabs(x);
  if (std::isinf(a)) return overflow();
  if (a == 0) return zero;

  // Quantum (value of one unit in the last place) at a's binade, or the subnormal quantum.
  int exp2;
  std::frexp(a, &exp2);  // a = frac * 2^exp2, frac in [0.5, 1)
  const int unbiased = exp2 - 1;
  const int min_normal = 1 - f.bias;
  const int q_exp = (unbiased < min_normal ? min_normal : unbiased) - f.man_bits;
  const double n = std::ldexp(a, -q_exp);  // exact: scaling by a power of two
  double whole = std::floor(n);
  const double frac = n - whole;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(whole, 2.0) != 0)) whole += 1;
  // whole * 2^q_exp is the rounded magnitude; whole < 2^(man_bits + 2).
  const auto units = static_cast<uint64_t>(whole);
  if (units == 0) return zero;
  uint32_t bits;
  if (unbiased < min_normal) {
    // Subnormal binade: units is the mantissa, or 2^man_bits when it rounded up to the
    // smallest normal, whose bits are exactly that.
    bits = static_cast<uint32_t>(units);
  } else {
    int e = unbiased + f.bias;
    uint64_t m = units;
    if (m >> (f.man_bits + 1)) {  // rounded up into the next binade
      m >>= 1;
      ++e;
    }
    if (e > static_cast<int>(exp_mask(f))) return overflow();
    bits = static_cast<uint32_t>(e) << f.man_bits | (static_cast<uint32_t>(m) & man_mask(f));
  }
  if (bits > max_bits) return overflow();
  return sign | bits;
}

double e8m0_decode(uint8_t bits) noexcept {
  if (bits == 0xFF) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, bits - 127);
}

uint8_t e8m0_encode(double x) noexcept {
  if (std::isnan(x) || x <= 0) return 0xFF;
  if (std::isinf(x)) return 0xFE;
  int exp2;
  const double frac = std::frexp(x, &exp2);  // x = frac * 2^exp2, frac in [0.5, 1)
  int k = exp2 - 1;                          // x = (2 frac) * 2^k, 2 frac in [1, 2)
  if (2 * frac >= 1.5) ++k;                  // nearest power of two, ties up
  if (k < -127) k = -127;
  if (k > 127) k = 127;
  return static_cast<uint8_t>(k + 127);
}

double decode_float(Dtype d, uint64_t bits) noexcept {
  switch (d) {
    case Dtype::F32: {
      float v;
      uint32_t b = static_cast<uint32_t>(bits);
      std::memcpy(&v, &b, 4);
      return v;
    }
    case Dtype::F64: {
      double v;
      std::memcpy(&v, &bits, 8);
      return v;
    }
    case Dtype::F8_E8M0:
      return e8m0_decode(static_cast<uint8_t>(bits));
    default: {
      const MiniFloatSpec* f = minifloat_spec(d);
      return f ? minifloat_decode(*f, static_cast<uint32_t>(bits))
               : std::numeric_limits<double>::quiet_NaN();
    }
  }
}

}  // namespace tlio::detail
