// tlio/convert.hpp: exact conversion of element arrays between dtypes.
//
// Supported: any floating dtype (F64, F32, F16, BF16, the five F8 formats, F4) to any other, and
// every integer dtype and BOOL to F32 or F64. Narrowing rounds to nearest, ties to even; the
// handling of infinities, NaN, negative zero and overflow per format is in docs/dtypes.md.
// F32<->BF16, F32<->F16 and F16/BF16 -> F32 run SIMD kernels chosen at run time (Highway);
// large arrays are split over the machine's cores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/dtype.hpp"
#include "tlio/export.hpp"
#include "tlio/writer.hpp"

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

class File;

/// Reads tensor `name` of `f` converted to `to` into `dst` (exactly the converted size).
/// Throws Error{not_found}, Error{unsupported} (e.g. C64), Error{invalid_argument}.
TLIO_API void read_as(const File& f, std::string_view name, Dtype to, std::span<std::byte> dst);
/// Tensor `name` as F32 values (any floating, integer or BOOL tensor).
TLIO_API std::vector<float> read_f32(const File& f, std::string_view name);

struct ConvertFileOptions {
  Dtype dtype = Dtype::BF16;  ///< target: a floating dtype other than F6_* and C64
  std::string include;        ///< regex searched in names; empty: every floating tensor
  std::string exclude;        ///< regex searched in names; empty: none
  ProgressCallback progress;  ///< output bytes done / total
};

struct ConvertFileReport {
  size_t converted = 0;  ///< tensors whose dtype changed
  size_t kept = 0;       ///< tensors copied as they are
  uint64_t data_bytes_in = 0;
  uint64_t data_bytes_out = 0;
};

/// Writes `src` canonically to `out` (atomically) with its floating tensors converted to
/// options.dtype. Integer and BOOL tensors, and the companions of quantized weights (int4
/// `.scales`, bitsandbytes `absmax`/`quant_map`/..., LLM.int8 `SCB`), are copied as they are.
/// Streams tensor by tensor in bounded memory. Throws Error{invalid_argument} for a bad regex,
/// a target that is not a convertible floating dtype, or a NaN bound for F4 (naming the tensor).
TLIO_API ConvertFileReport convert_file(const File& src, const std::filesystem::path& out,
                                        const ConvertFileOptions& options);

/// True for tensors that belong to a quantized weight and must keep their dtype.
TLIO_API bool is_quantization_companion(const File& f, std::string_view name);

}  // namespace tlio
