// gguf_convert/gguf_mix.hpp: the type each weight of an export takes, as llama-quantize chooses it
// without an importance matrix (src/llama-quant.cpp): llama.cpp's file types (Q4_0 ... Q8_0, the
// K-quant mixes such as Q4_K_M), whose rules give some tensors more bits by kind and layer, or
// with --pure the file type's base type for every weight; then the fallback for rows that are not
// whole blocks of the type.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/ggml.hpp"

namespace tlio::detail {

/// A llama.cpp mix: its name, general.file_type (llama_ftype), and the base type of its weights.
struct GgufMix {
  std::string_view name;  ///< "Q4_K_M"
  uint32_t file_type;     ///< LLAMA_FTYPE_MOSTLY_Q4_K_M = 15
  uint32_t base;          ///< ggml type id: Q4_K
};
/// The file types tlio writes: Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S,
/// Q4_K_M, Q5_K_S, Q5_K_M, Q6_K, Q8_0 (F32, F16 and BF16 are plain types).
std::span<const GgufMix> gguf_mixes() noexcept;
/// The file type named `name` (case-insensitive; Q3_K, Q4_K and Q5_K are llama-quantize's names
/// for Q3_K_M, Q4_K_M and Q5_K_M), or nullopt.
std::optional<GgufMix> gguf_mix_named(std::string_view name) noexcept;

/// What the mix rules read of the whole model.
struct MixModel {
  uint64_t layers = 0;        ///< block_count (ffn_down's layers)
  uint64_t value_layers = 0;  ///< attn_v tensors written (counts_as_attn_v)
  bool tied = true;           ///< no output.weight: token_embd takes output's type
  bool is_70b = false;        ///< llama.cpp's LLM_TYPE_70B (attn_v gets Q5_K over Q3_K/Q4_K)
  uint64_t experts = 0;       ///< experts per layer (8: attn_v and attn_k Q8_0, ...)
  uint64_t gqa = 1;           ///< attention heads per KV head (Q2_K's attn_v)
  /// Counts tensor `name` of the model (call for each before the first gguf_mix_type).
  void count(std::string_view name) noexcept;
};

/// N of "blk.N..." as llama.cpp reads it (sscanf "blk.%d."), or nullopt for other names: the
/// layer the rules go by, and the model loader's order (by it, the others first, then by name).
std::optional<int64_t> gguf_layer_of(std::string_view name) noexcept;

/// llama.cpp's attn_v kind, which its attn_v counter counts: attn_v, a fused attn_qkv and
/// MLA's attn_kv_b.
bool counts_as_attn_v(std::string_view name) noexcept;

/// The type of the quantized weight `name` (a GGUF name, "blk.3.attn_v.weight") whose rows hold
/// `row_values`, under `mix`, before the row fallback.
uint32_t gguf_mix_type(const GgufMix& mix, const MixModel& model, std::string_view name,
                       uint64_t row_values);

/// The type weight `name` (rows of `row_values`) gets under `asked`: the mix's choice or the base
/// type, then the row fallback, which is noted in `fallbacks` ("name: Q4_K -> Q5_0 (rows of 352)").
struct AskedTypes;
uint32_t gguf_weight_type(const AskedTypes& asked, const MixModel& model, std::string_view name,
                          uint64_t row_values, std::vector<std::string>& fallbacks);

/// The type llama-quantize writes instead of `type` when rows of `row_values` are not whole
/// blocks of it: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K -> Q4_0, then F16 when rows
/// are not whole blocks of that either; `type` itself when they are.
uint32_t gguf_row_fallback(uint32_t type, uint64_t row_values);

/// llama.cpp's general.file_type (llama_ftype) of a model whose weights are all of type `t`
/// ("--pure": rows that are not whole blocks aside), for the types an export writes; nullopt for
/// the others.
std::optional<uint32_t> file_type_of(const GgmlType& t);

/// What --dtype asks an export or a requantize for: a plain type, or a mix of types.
struct AskedTypes {
  GgmlType base;
  std::optional<GgufMix> mix;
  uint32_t file_type;
  bool pure = false;  ///< llama-quantize --pure: the base type for every weight
};
/// Error{invalid_argument} naming the types tlio writes for any other; Error{unsupported} for a
/// file type llama-quantize makes only with an importance matrix (Q2_K_S).
AskedTypes asked_types(std::string_view text, bool pure = false);

/// The model the rules read, from its config: layers, experts, heads per KV head, 70B.
struct HfConfig;
struct GgufArch;
MixModel mix_model_of(const GgufArch& arch, const HfConfig& c);

/// llama_ftype's F32, F16, BF16 and MXFP4_MOE; ggml's GGML_QNT_VERSION.
inline constexpr uint32_t kFileTypeF32 = 0, kFileTypeF16 = 1, kFileTypeBf16 = 32,
                          kFileTypeMxfp4Moe = 38, kQuantizationVersion = 2;

}  // namespace tlio::detail
