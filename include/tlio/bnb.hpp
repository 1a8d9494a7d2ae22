// tlio/bnb.hpp: the names of bitsandbytes' 4-bit types and its blocksizes, as quantize options
// take them. The kernels (bit for bit bnb >= 0.50's CPU default backend, docs/quantization.md)
// are internal: files are quantized and dequantized through quant.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "tlio/export.hpp"

namespace tlio {

enum class BnbQuantType : uint8_t { nf4, fp4 };

/// "nf4" / "fp4".
TLIO_API std::string_view bnb_quant_type_name(BnbQuantType type) noexcept;
TLIO_API std::optional<BnbQuantType> parse_bnb_quant_type(std::string_view name) noexcept;
/// The 4-bit blocksizes bitsandbytes accepts: 32, 64, ..., 4096 (rule BNB-001).
TLIO_API bool is_bnb_4bit_blocksize(uint64_t blocksize) noexcept;

}  // namespace tlio
