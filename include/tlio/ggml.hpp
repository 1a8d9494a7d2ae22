// tlio/ggml.hpp: ggml's tensor types (the element formats of GGUF files): their blocks, their
// decoding to floats, bit for bit as ggml's own dequantize_row_* functions decode them, and
// ggml's reference quantizers, byte for byte.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "tlio/dtype.hpp"
#include "tlio/export.hpp"

namespace tlio {

/// ggml's tensor types by ggml.h's numbers (the ids ggml removed, 4, 5, 31-33 and 36-38, have
/// no name). The functions below take the number as a file stores it.
enum class GgmlTypeId : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
  Q2_0 = 42,
};
constexpr uint32_t ggml_id(GgmlTypeId id) noexcept { return static_cast<uint32_t>(id); }

/// A ggml tensor type as ggml.h numbers it, with its block: `block` elements in `block_bytes`
/// bytes, blocks running along the first (innermost) dimension.
struct GgmlType {
  uint32_t id;
  std::string_view name;  ///< "Q4_K"
  uint32_t block;         ///< elements per block: 1 (F32, F16, ...), 32 (Q8_0), 256 (Q6_K)
  uint32_t block_bytes;
};
/// The type of id `id`, or nullopt for an id ggml does not know or has removed (4, 5, 31-33,
/// 36-38, 43 and up).
TLIO_API std::optional<GgmlType> ggml_type(uint32_t id) noexcept;
/// The type named `name` ("Q4_K", any case), or nullopt.
TLIO_API std::optional<GgmlType> ggml_type_named(std::string_view name) noexcept;

/// The tlio dtype whose bytes are those of ggml type `id` (F32, F16, BF16, F64, I8..I64), or
/// nullopt for a block type.
TLIO_API std::optional<Dtype> ggml_plain_dtype(uint32_t id) noexcept;

/// True when ggml_decode decodes type `id`: every plain type, the legacy blocks (Q4_0, Q4_1,
/// Q5_0, Q5_1, Q8_0), the K-quants (Q2_K..Q8_K), IQ4_NL, IQ4_XS, TQ1_0, TQ2_0, MXFP4, NVFP4,
/// Q1_0 and Q2_0. Not Q8_1 (an activation type ggml does not decode either) nor the codebook
/// types (IQ1_S, IQ1_M, IQ2_*, IQ3_*), whose lattice tables tlio does not carry.
TLIO_API bool ggml_decodes(uint32_t id) noexcept;

/// Decodes dst.size() elements of type `id` (a whole number of blocks) from `src` (exactly
/// their bytes) into floats: the values ggml's dequantize_row_* gives, bit for bit (plain
/// integer and F64 types converted as a C cast does). Error{unsupported} naming the type when
/// !ggml_decodes(id); Error{invalid_argument} when the sizes do not match.
TLIO_API void ggml_decode(uint32_t id, std::span<const std::byte> src, std::span<float> dst);

/// True when ggml_encode writes type `id`: F32, F16, BF16, and ggml's reference quantizers
/// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
TLIO_API bool ggml_encodes(uint32_t id) noexcept;

/// Encodes src.size() floats (a whole number of blocks) as type `id` into `dst` (exactly their
/// bytes): byte for byte what ggml's quantize_row_*_ref writes (llama-quantize without an
/// importance matrix); F16 and BF16 rounded to nearest even. Error{unsupported} naming the type
/// when !ggml_encodes(id); Error{invalid_argument} when the sizes do not match.
TLIO_API void ggml_encode(uint32_t id, std::span<const float> src, std::span<std::byte> dst);

}  // namespace tlio
