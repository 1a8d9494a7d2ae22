// tlio/dtype.hpp: the 22 element types of the format, their names, sizes in bits and the
// canonical write order.
//
// Enumerator values are the reference implementation's declaration order (BOOL = 0 ... U64 = 21),
// which is also the C API's tl_dtype. The canonical writer lays tensors out in descending
// enumerator order (larger alignment first), so write_rank() is 21 - value.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "tlio/export.hpp"

namespace tlio {

enum class Dtype : uint8_t {
  BOOL = 0,
  F4,  ///< E2M1, two per byte, lower-indexed element in the low nibble
  F6_E2M3,
  F6_E3M2,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,  ///< the "fn" variant: no infinities, max 448
  F8_E8M0,
  F8_E4M3FNUZ,
  F8_E5M2FNUZ,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  C64,
  F64,
  I64,
  U64,
};

inline constexpr int kDtypeCount = 22;

/// All dtypes in enumerator order.
TLIO_API const std::array<Dtype, kDtypeCount>& all_dtypes() noexcept;

/// The exact, case-sensitive name used in headers ("F32", "F8_E4M3", ...).
TLIO_API std::string_view dtype_name(Dtype d) noexcept;
/// torch's name of the dtype ("bfloat16", "float8_e4m3fn", "float4_e2m1fn_x2": what config.json's
/// dtype and bitsandbytes' quant_state record), "" for the F6 types torch lacks.
TLIO_API std::string_view torch_dtype_name(Dtype d) noexcept;
/// Bits per element: 4 (F4), 6 (F6_*), 8, 16, 32 or 64.
TLIO_API unsigned dtype_bits(Dtype d) noexcept;
/// Position in the canonical write order: U64 is 0, BOOL is 21.
TLIO_API int write_rank(Dtype d) noexcept;
/// Parses a header dtype name exactly (no case folding, no aliases).
TLIO_API std::optional<Dtype> parse_dtype(std::string_view name) noexcept;
/// Parses a user-facing spelling: header names in any case and numpy/torch names such as
/// "float32", "bfloat16", "float8_e4m3fn", "bool".
TLIO_API std::optional<Dtype> parse_dtype_alias(std::string_view name) noexcept;

TLIO_API bool is_floating(Dtype d) noexcept;  ///< F*, BF16 (not C64)
TLIO_API bool is_integer(Dtype d) noexcept;   ///< U*, I*
TLIO_API bool is_sub_byte(Dtype d) noexcept;  ///< F4, F6_*

/// The dtype of a C++ element type, for typed copies (float -> F32, int8_t -> I8, ...).
template <class T>
struct dtype_of;
template <>
struct dtype_of<bool> {
  static constexpr Dtype value = Dtype::BOOL;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr Dtype value = Dtype::U8;
};
template <>
struct dtype_of<int8_t> {
  static constexpr Dtype value = Dtype::I8;
};
template <>
struct dtype_of<uint16_t> {
  static constexpr Dtype value = Dtype::U16;
};
template <>
struct dtype_of<int16_t> {
  static constexpr Dtype value = Dtype::I16;
};
template <>
struct dtype_of<uint32_t> {
  static constexpr Dtype value = Dtype::U32;
};
template <>
struct dtype_of<int32_t> {
  static constexpr Dtype value = Dtype::I32;
};
template <>
struct dtype_of<uint64_t> {
  static constexpr Dtype value = Dtype::U64;
};
template <>
struct dtype_of<int64_t> {
  static constexpr Dtype value = Dtype::I64;
};
template <>
struct dtype_of<float> {
  static constexpr Dtype value = Dtype::F32;
};
template <>
struct dtype_of<double> {
  static constexpr Dtype value = Dtype::F64;
};

}  // namespace tlio
