// gguf_convert/gguf_arch.hpp: the architectures tlio exports to GGUF, one table entry each: the
// Hugging Face class, llama.cpp's architecture name, how tensors are named and laid out, and which
// config.json keys become which GGUF keys (with the exact types llama.cpp checks).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf_convert/gguf_rope.hpp"
#include "tlio/gguf.hpp"

namespace tlio::detail {

/// The largest vocabulary exported (config.json's vocab_size): every token is a string held
/// while the header is laid out. The largest real vocabularies have about 2^18 tokens.
inline constexpr uint64_t kMaxGgufVocabulary = uint64_t{1} << 22;
/// The most experts per layer (DeepSeek-V3 and Kimi K2 have 256 and 384), and per model (Kimi K2:
/// 61 layers of 384, 23,424): each part of each is a tensor of the folder, named before a weight
/// is written, so the count bounds what a stranger's GGUF can make tlio hold.
inline constexpr uint64_t kMaxGgufExperts = 4096;
inline constexpr uint64_t kMaxGgufModelExperts = uint64_t{1} << 17;

struct HfConfig;

/// A Hugging Face name (the part after "model.layers.N.") and its GGUF name (after "blk.N.").
using GgufNamePair = std::pair<std::string_view, std::string_view>;

/// llama.cpp's expert gating functions (LLAMA_EXPERT_GATING_FUNC_TYPE_*).
inline constexpr uint32_t kGgufGatingSoftmax = 1, kGgufGatingSigmoid = 2;

/// A config.json number written as a GGUF key ({arch}.`key`) when config.json has it (the first
/// of `json` that is there), as llama.cpp's converter writes it.
struct GgufConfigKey {
  std::string_view key;
  std::array<std::string_view, 2> json;  ///< "" for none
  /// bool_true: written (true) when config.json's is true; gating: scoring_func's name as
  /// llama.cpp's expert gating function (softmax 1, sigmoid 2).
  enum class Type : uint8_t { u32, f32, bool_true, gating } type;
  bool zero_when_absent = false;  ///< written as 0 when config.json has none (Phi-3's window)
  bool null_when_zero = false;    ///< on import, 0 goes back as null (Phi-3's window)
};

/// A part of experts a Hugging Face layer holds stacked already ([experts, in, out] for gpt-oss's
/// weights, [experts, out] for their biases), and how ggml's tensor is taken from it: of the last
/// dimension, every `every`-th value from `first` (gpt-oss interleaves gate and up in one), and
/// for a weight, transposed (its GGUF rows are the source's columns).
struct GgufStackedPart {
  std::string_view hf;    ///< after "model.layers.N.": "mlp.experts.gate_up_proj"
  std::string_view gguf;  ///< after "blk.N.": "ffn_gate_exps.weight"
  uint8_t every = 1, first = 0;
  bool transposed = false;
  /// A matrix split per attention head instead (DeepSeek's MLA kv_b_proj, [heads * (nope +
  /// value), kv_lora] read as [heads, nope + value, kv_lora]): each head's first qk_nope_head_dim
  /// rows (transposed: [heads, kv_lora, nope]) or its v_head_dim rows after them.
  enum class HeadRows : uint8_t { none, mla_nope, mla_value } head_rows = HeadRows::none;
};

/// The experts of a mixture-of-experts layer, as Hugging Face names them one by one
/// ("`prefix`E.`part`") and as ggml stacks them: one 3-D tensor per part, expert 0 first; or
/// held stacked already (`stacked`: gpt-oss).
struct GgufExperts {
  std::string_view prefix;            ///< "mlp.experts."
  std::array<GgufNamePair, 3> parts;  ///< {"gate_proj.weight", "ffn_gate_exps.weight"}, ...
  /// config.json's expert count key(s): the class's own first (written on import).
  std::array<std::string_view, 2> count;
  std::span<const GgufStackedPart> stacked = {};
};

struct GgufArch {
  std::string_view hf_class;  ///< config.json "architectures"[0]
  std::string_view name;      ///< general.architecture
  /// Q and K rows interleaved per head (Hugging Face's rotate-half RoPE to ggml's adjacent pairs),
  /// as llama.cpp's converter does for the llama family; not for NEOX-RoPE architectures.
  bool permute_qk;
  /// Which models llama.cpp counts as 70B (LLM_TYPE_70B), whose quantization mixes give attn_v
  /// more bits: 80 layers, or 80 layers with grouped-query attention (the llama family: 65B has
  /// none).
  enum class Size70B : uint8_t { never, at_80_layers, at_80_layers_with_gqa } size_70b;
  /// {arch}.vocab_size and {arch}.rope.dimension_count: written by the converter's llama
  /// family (and its heirs) only.
  bool llama_keys;
  /// {arch}.attention.key_length and .value_length: the converter writes them where the
  /// transformers config has a head_dim, which its class fills in for some architectures
  /// (always) and takes from config.json for the others (when config.json has one).
  enum class HeadDimKeys : uint8_t { always, when_in_config, never } head_dim_keys;
  /// {arch}.rope.dimension_count without the llama family's vocab_size: the rotated part of a
  /// head (config.json's partial_rotary_factor of it; elsewhere a factor other than 1 is refused).
  bool rope_dimension_key = false;
  /// Names of this architecture, tried before the common ones (Olmo2's post-norms).
  std::span<const GgufNamePair> layer_names;
  std::optional<GgufExperts> experts;
  std::span<const GgufConfigKey> keys;  ///< hyperparameters of this architecture alone
  /// {arch}.rope.freq_base from config.json's RoPE base (Gemma 2's converter writes none).
  bool rope_base_key = true;
  /// Norm weights (names ending in "norm.weight") written plus 1: Gemma's RMSNorm scales by
  /// 1 + w, llama.cpp's by the weight stored.
  bool norm_plus_one = false;
  /// A SentencePiece vocabulary written with add_space_prefix false (Gemma's).
  bool no_space_prefix = false;
  /// On import (tlio convert X.gguf DIR): config.json's model_type ("": not imported), and
  /// members that make transformers compute what llama.cpp's graph of the architecture does
  /// ("" for none).
  std::string_view model_type;
  std::string_view import_config;
  /// Of rows of the same name, this one is imported where the GGUF has a tensor ending so
  /// (DeepSeek-V3's router bias, "exp_probs_b.bias"); rows without come after.
  std::string_view imported_when;
  std::string_view hidden_act = "silu";  ///< config.json's activation (Gemma's gelu_pytorch_tanh)
  /// Gemma: config.json's query_pre_attn_scalar, the attention scale llama.cpp takes from the
  /// model's size: hidden_size / heads for the 27B (this many layers), head_dim for the others.
  uint64_t layers_27b = 0;
  /// Tensors taken apart per head (DeepSeek's kv_b_proj; GgufStackedPart::head_rows).
  std::span<const GgufStackedPart> split = {};
  /// DeepSeek's multi-head latent attention: one KV head of kv_lora_rank + qk_rope_head_dim
  /// (key_length, value_length), the heads' own sizes as key_length_mla and value_length_mla,
  /// YaRN's mscale_all_dim as rope.scaling.yarn_log_multiplier.
  bool mla = false;
  /// YaRN as the class computes it: transformers' truncate (gpt-oss's reference leaves the
  /// ramp's ends unrounded), written back on import; GGUF has no key for it.
  bool yarn_truncate = true;
  /// Phi-3's LongRoPE (its 128k models, Phi-3.5, Phi-4-mini): factor tensors llama.cpp reads.
  bool longrope = false;

  bool is_70b(const HfConfig& c) const;
};

/// The table (gguf_arch_table.cpp): its rows, the per-layer names every row shares (after
/// "model.layers.N." and "blk.N."), and the model's own names.
std::span<const GgufArch> gguf_archs();
std::span<const GgufNamePair> gguf_layer_names();
std::span<const GgufNamePair> gguf_model_names();

/// The entry for config.json's class; Error{unsupported} naming it and listing those there are.
const GgufArch& gguf_arch_for(std::string_view hf_class);
/// The first imported entry writing general.architecture `name` with experts or without (llama
/// with experts: MixtralForCausalLM); Error{unsupported} naming it and listing those there are.
const GgufArch& gguf_arch_named(std::string_view name, bool experts);
/// The entry of GGUF file `f`: its general.architecture, with experts when its expert_count is
/// more than 0.
const GgufArch& gguf_arch_of(const GgufFile& f);

/// What the export needs from config.json.
struct HfConfig {
  std::string hf_class;
  uint64_t hidden_size = 0, intermediate_size = 0, layers = 0, heads = 0, kv_heads = 0,
           head_dim = 0;
  uint64_t context_length = 0, vocab_size = 0;
  uint64_t experts = 0;  ///< routed experts per layer (0: none)
  bool head_dim_in_config = false;
  std::vector<GgufKeyValue> keys;  ///< the architecture's own keys config.json has (GgufConfigKey)
  std::optional<double> rope_theta;
  std::optional<double> rope_theta_swa;  ///< the sliding-window layers' own (Gemma 3)
  double partial_rotary_factor = 1;      ///< the part of each head RoPE rotates
  /// MLA (GgufArch::mla): the ranks and a head's parts.
  uint64_t kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  double rms_norm_eps = 0;
  bool tie_word_embeddings = false;
  std::optional<uint64_t> bos_token_id, eos_token_id;
  std::optional<uint64_t> pad_token_id;  ///< on import, from the vocabulary's padding id
  RopeScaling rope_scaling;
};
/// The keys any architecture's config.json may have (expert_count, expert_used_count).
std::span<const GgufConfigKey> gguf_common_keys();

/// config.json read for export: the class, hyperparameters, rope_scaling (gguf_rope.hpp; Llama
/// 3's for the llama architecture only, where llama.cpp reads rope_freqs.weight). Error{format,
/// "model"} naming a missing or mistyped key.
HfConfig parse_hf_config(std::string_view json, const std::string& source);
/// The part of it gguf_name_for needs (class, layers, heads, KV heads, tied embeddings): what
/// pairs a folder's tensors with a GGUF file's, whatever else config.json holds.
HfConfig parse_hf_names(std::string_view json, const std::string& source);

/// The GGUF keys of the architecture's hyperparameters.
std::vector<GgufKeyValue> gguf_hyperparameters(const GgufArch& arch, const HfConfig& c);

/// How one Hugging Face tensor is exported: its GGUF name, and the heads its rows are permuted
/// by (0: not permuted); nullopt for a tensor llama.cpp does not take (rotary inv_freq, a tied
/// lm_head). Error{unsupported} for a name the table does not know.
struct GgufName {
  std::string name;
  uint64_t permute_heads = 0;
  std::optional<uint64_t> expert;  ///< the expert whose part of the stacked `name` this is
  float shift = 0;                 ///< added to every value (GgufArch::norm_plus_one)
};
std::optional<GgufName> gguf_name_for(const GgufArch& arch, const HfConfig& c,
                                      std::string_view hf_name);
/// The Q/K row interleave of the llama family, per head of `head_rows` rows: llama.cpp's converter
/// reshapes a head's rows to [2, head_rows/2] and swaps the axes, so Hugging Face row
/// j * head_rows/2 + i of a head becomes its GGUF row 2i + j. The GGUF row of a Hugging Face row,
/// and the Hugging Face row of a GGUF row.
inline uint64_t gguf_row_of_hf_row(uint64_t row, uint64_t head_rows) {
  const uint64_t h = row / head_rows, k = row % head_rows, half = head_rows / 2;
  return h * head_rows + 2 * (k % half) + k / half;
}
inline uint64_t hf_row_of_gguf_row(uint64_t row, uint64_t head_rows) {
  const uint64_t h = row / head_rows, k = row % head_rows;
  return h * head_rows + (k % 2) * (head_rows / 2) + k / 2;
}

/// Every Hugging Face name the table exports for a model of `c` (the model's, then each layer's),
/// with its GGUF name, experts aside: what a GGUF file's names are mapped back by.
std::vector<std::pair<std::string, GgufName>> gguf_names_of(const GgufArch& arch,
                                                            const HfConfig& c);
/// The GGUF tensors taken from Hugging Face tensor `hf_name` when it holds a layer's experts
/// stacked (GgufExperts::stacked), with the part each is; empty for any other name.
std::vector<std::pair<GgufName, const GgufStackedPart*>> gguf_stacked_names_for(
    const GgufArch& arch, const HfConfig& c, std::string_view hf_name);

/// The Hugging Face names of the experts stacked in GGUF tensor `gguf_name` (blk.N.ffn_*_exps of
/// a layer of `c`), expert 0 first; empty for any other name.
std::vector<std::pair<std::string, GgufName>> gguf_expert_names_of(const GgufArch& arch,
                                                                   const HfConfig& c,
                                                                   std::string_view gguf_name);

}  // namespace tlio::detail
