// tlio/convert.hpp: exact conversion of element arrays between dtypes.
//
// Supported: any floating dtype (F64, F32, F16, BF16, the five F8 formats, F4) to any other, and
// every integer dtype and BOOL to F32 or F64. Narrowing rounds to nearest, ties to even; the
// handling of infinities, NaN, negative zero and overflow per format is in docs/dtypes.md.
// F32<->BF16, F32<->F16 and F16/BF16 -> F32 run SIMD kernels chosen at run time (Highway);
// large arrays are split over the machine's cores. Conversions of tensors in files are in
// convert_file.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tlio/dtype.hpp"
#include "tlio/export.hpp"

namespace tlio {

/// Whether convert() handles from -> to.
TLIO_API bool can_convert(Dtype from, Dtype to) noexcept;

/// Converts `count` elements of `from` in `src` to `to` in `dst`. The spans must hold exactly
/// the elements' bytes; they need no alignment. Throws Error{unsupported} naming both dtypes
/// when !can_convert(from, to), Error{invalid_argument} for wrong sizes or a NaN converted to F4
/// (which has no NaN).
TLIO_API void convert(Dtype from, std::span<const std::byte> src, Dtype to,
                      std::span<std::byte> dst, uint64_t count);

/// Threads convert() and the quantization kernels may use for large arrays: 0 (the default)
/// means one per core.
TLIO_API void set_conversion_threads(unsigned threads) noexcept;

/// Bytes of `count` elements of `d` (count * bits / 8); Error{invalid_argument} when that is not
/// a whole number of bytes or overflows.
TLIO_API uint64_t bytes_for(Dtype d, uint64_t count);

/// Single-value helpers (round to nearest even; NaN keeps sign and top payload bits, quieted).
TLIO_API float bf16_to_f32(uint16_t bits) noexcept;
TLIO_API uint16_t f32_to_bf16(float value) noexcept;
TLIO_API float f16_to_f32(uint16_t bits) noexcept;
TLIO_API uint16_t f32_to_f16(float value) noexcept;

}  // namespace tlio
