// dtype/convert_kernels.hpp: the SIMD kernels of the hot conversion pairs, behind one dispatch
// point each (Highway picks the best target this CPU supports, once). Scalar equivalents are
// in minifloat.hpp; the tests check both agree on every input class.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tlio/dtype.hpp"

namespace tlio::detail {

void simd_f32_to_bf16(const std::byte* src, std::byte* dst, size_t n);
void simd_bf16_to_f32(const std::byte* src, std::byte* dst, size_t n);
void simd_f32_to_f16(const std::byte* src, std::byte* dst, size_t n);
void simd_f16_to_f32(const std::byte* src, std::byte* dst, size_t n);

/// Name of the target the kernels run on ("AVX3", "AVX2", "SSE4", "EMU128", ...).
const char* simd_target_name();

/// Scalar conversion of elements [begin, end) of any supported pair, through the exact reference
/// of minifloat.hpp (what the kernels and tables are tested against). For F4, begin is even.
void convert_scalar(Dtype from, const std::byte* src, Dtype to, std::byte* dst, size_t begin,
                    size_t end);

}  // namespace tlio::detail
