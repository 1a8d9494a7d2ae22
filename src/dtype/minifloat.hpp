// dtype/minifloat.hpp: the scalar reference for every floating format narrower than F32:
// exact decoding to double and correctly rounded (nearest, ties to even) encoding from double,
// following docs/dtypes.md ("Narrowing") for infinities, NaN, negative zero and overflow. The SIMD
// kernels are tested against these.
#pragma once

#include <cstdint>

#include "tlio/dtype.hpp"

namespace tlio::detail {

/// Layout and special values of a small float format.
struct MiniFloatSpec {
  int exp_bits;
  int man_bits;
  int bias;
  enum class Special {
    ieee,        // exponent all ones: infinities and NaN (F16, BF16, F8_E5M2)
    fn,          // no infinities; only S.1111.111 is NaN (F8_E4M3)
    fnuz,        // no infinities, no negative zero; 0x80 is NaN (F8_*FNUZ)
    saturating,  // no infinities, no NaN; overflow saturates (F4)
  } special;
};

/// The spec of a floating dtype narrower than F32 other than F8_E8M0 (which is a plain power of
/// two), or nullptr.
const MiniFloatSpec* minifloat_spec(Dtype d) noexcept;

/// Exact value of `bits` (the low exp_bits + man_bits + 1 bits) in the format.
double minifloat_decode(const MiniFloatSpec& f, uint32_t bits) noexcept;

/// `x` rounded to the nearest value of the format, ties to even. NaN keeps its sign and the top
/// bits of its payload with the quiet bit set (ieee), or becomes the format's NaN; values past
/// the largest finite one become infinity (ieee), NaN (fn, fnuz) or the largest value
/// (saturating). `nan_payload` is the source's mantissa aligned to 52 bits (only for NaN).
/// For the saturating format, NaN has no encoding: callers check first.
uint32_t minifloat_encode(const MiniFloatSpec& f, double x, uint64_t nan_payload = 0) noexcept;

/// F8_E8M0: 2^(bits - 127); 0xFF is NaN.
double e8m0_decode(uint8_t bits) noexcept;
/// x <= 0 or NaN -> 0xFF; otherwise the nearest power of two (ties up), clamped to
/// [2^-127, 2^127].
uint8_t e8m0_encode(double x) noexcept;

/// Decodes one element of any floating dtype (F32/F64 included) stored in `bits`.
double decode_float(Dtype d, uint64_t bits) noexcept;

}  // namespace tlio::detail
