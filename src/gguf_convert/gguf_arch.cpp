// gguf_convert/gguf_arch.cpp: the architecture table and the names and keys llama.cpp expects
// (llama-arch.cpp's tensor names, convert_hf_to_gguf.py's keys).
#include "gguf_convert/gguf_arch.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/json_doc.hpp"
#include "gguf/gguf_writer.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

using Key = GgufConfigKey;
using KeyType = GgufConfigKey::Type;

// Keys the converter writes for any architecture whose config.json has them.
constexpr Key kCommonKeys[] = {
    {"expert_count", {"num_local_experts", "num_experts"}, KeyType::u32},
    {"expert_used_count", {"num_experts_per_tok", ""}, KeyType::u32},
};

constexpr GgufNamePair kMixtralNames[] = {{"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"}};
constexpr GgufNamePair kQwen2MoeNames[] = {
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
    {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
    {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
};
constexpr GgufNamePair kQwen3MoeNames[] = {{"mlp.gate.weight", "ffn_gate_inp.weight"}};
constexpr GgufNamePair kOlmo2Names[] = {
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
};

constexpr GgufExperts kMixtralExperts{"block_sparse_moe.experts.",
                                      {{{"w1.weight", "ffn_gate_exps.weight"},
                                        {"w2.weight", "ffn_down_exps.weight"},
                                        {"w3.weight", "ffn_up_exps.weight"}}},
                                      {"num_local_experts", "num_experts"}};
constexpr std::array<GgufNamePair, 3> kQwenExpertParts = {
    {{"gate_proj.weight", "ffn_gate_exps.weight"},
     {"up_proj.weight", "ffn_up_exps.weight"},
     {"down_proj.weight", "ffn_down_exps.weight"}}};
constexpr GgufExperts kQwen2MoeExperts{
    "mlp.experts.", kQwenExpertParts, {"num_experts", "num_local_experts"}};
constexpr GgufExperts kQwen3MoeExperts{
    "mlp.experts.", kQwenExpertParts, {"num_local_experts", "num_experts"}};

constexpr Key kQwen2MoeKeys[] = {
    {"expert_feed_forward_length", {"moe_intermediate_size", ""}, KeyType::u32},
    {"expert_shared_feed_forward_length", {"shared_expert_intermediate_size", ""}, KeyType::u32},
};
constexpr Key kQwen3MoeKeys[] = {
    {"expert_feed_forward_length", {"moe_intermediate_size", ""}, KeyType::u32}};
constexpr Key kGemma2Keys[] = {
    {"attn_logit_softcapping", {"attn_logit_softcapping", ""}, KeyType::f32},
    {"final_logit_softcapping", {"final_logit_softcapping", ""}, KeyType::f32},
    {"attention.sliding_window", {"sliding_window", ""}, KeyType::u32},
};
constexpr Key kGemma3Keys[] = {
    {"final_logit_softcapping", {"final_logit_softcapping", ""}, KeyType::f32},
    {"attention.sliding_window", {"sliding_window", ""}, KeyType::u32},
};
constexpr GgufNamePair kGemmaNames[] = {
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
};
constexpr Key kPhi3Keys[] = {
    {"rope.scaling.original_context_length",
     {"original_max_position_embeddings", ""},
     KeyType::u32},
    {"attention.sliding_window", {"sliding_window", ""}, KeyType::u32, true},
};
constexpr GgufNamePair kPhi3Names[] = {
    {"self_attn.qkv_proj.weight", "attn_qkv.weight"},
    {"mlp.gate_up_proj.weight", "ffn_up.weight"},
};
// gpt-oss: experts held stacked [experts, in, out], gate and up interleaved in one; biases,
// attention sinks and a router with a bias.
constexpr GgufStackedPart kGptOssStacked[] = {
    {"mlp.experts.gate_up_proj", "ffn_gate_exps.weight", 2, 0, true},
    {"mlp.experts.gate_up_proj", "ffn_up_exps.weight", 2, 1, true},
    {"mlp.experts.down_proj", "ffn_down_exps.weight", 1, 0, true},
    {"mlp.experts.gate_up_proj_bias", "ffn_gate_exps.bias", 2, 0},
    {"mlp.experts.gate_up_proj_bias", "ffn_up_exps.bias", 2, 1},
    {"mlp.experts.down_proj_bias", "ffn_down_exps.bias"},
};
constexpr GgufExperts kGptOssExperts{
    "mlp.experts.", {}, {"num_local_experts", "num_experts"}, kGptOssStacked};
constexpr GgufNamePair kGptOssNames[] = {
    {"self_attn.o_proj.bias", "attn_output.bias"},
    {"self_attn.sinks", "attn_sinks.weight"},
    {"mlp.router.weight", "ffn_gate_inp.weight"},
    {"mlp.router.bias", "ffn_gate_inp.bias"},
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
};
constexpr Key kGptOssKeys[] = {
    {"attention.sliding_window", {"sliding_window", ""}, KeyType::u32},
    {"expert_feed_forward_length", {"intermediate_size", ""}, KeyType::u32},
};
constexpr Key kGraniteKeys[] = {
    {"attention.scale", {"attention_multiplier", ""}, KeyType::f32},
    {"embedding_scale", {"embedding_multiplier", ""}, KeyType::f32},
    {"residual_scale", {"residual_multiplier", ""}, KeyType::f32},
    {"logit_scale", {"logits_scaling", ""}, KeyType::f32},
};

using S70 = GgufArch::Size70B;
using HD = GgufArch::HeadDimKeys;
// clang-format off
const GgufArch kArchs[] = {
    {.hf_class = "LlamaForCausalLM", .name = "llama", .permute_qk = true,
     .size_70b = S70::at_80_layers_with_gqa, .llama_keys = true, .head_dim_keys = HD::always,
     .model_type = "llama"},
    {.hf_class = "MistralForCausalLM", .name = "llama", .permute_qk = true,
     .size_70b = S70::at_80_layers_with_gqa, .llama_keys = true, .head_dim_keys = HD::always,
     .model_type = "mistral"},
    {.hf_class = "MixtralForCausalLM", .name = "llama", .permute_qk = true,
     .size_70b = S70::at_80_layers_with_gqa, .llama_keys = true,
     .head_dim_keys = HD::when_in_config, .layer_names = kMixtralNames,
     .experts = kMixtralExperts, .model_type = "mixtral"},
    {.hf_class = "Qwen2ForCausalLM", .name = "qwen2", .permute_qk = false,
     .size_70b = S70::at_80_layers, .llama_keys = false, .head_dim_keys = HD::when_in_config,
     .model_type = "qwen2"},
    // llama.cpp's qwen2moe weighs the chosen experts by their softmax as they are.
    {.hf_class = "Qwen2MoeForCausalLM", .name = "qwen2moe", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::when_in_config,
     .layer_names = kQwen2MoeNames, .experts = kQwen2MoeExperts, .keys = kQwen2MoeKeys,
     .model_type = "qwen2_moe", .import_config = R"("norm_topk_prob": false)"},
    {.hf_class = "Qwen3ForCausalLM", .name = "qwen3", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::always,
     .model_type = "qwen3"},
    // llama.cpp's qwen3moe normalizes the chosen experts' weights to sum to 1.
    {.hf_class = "Qwen3MoeForCausalLM", .name = "qwen3moe", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::always,
     .layer_names = kQwen3MoeNames, .experts = kQwen3MoeExperts, .keys = kQwen3MoeKeys,
     .model_type = "qwen3_moe", .import_config = R"("norm_topk_prob": true)"},
    {.hf_class = "Olmo2ForCausalLM", .name = "olmo2", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::when_in_config,
     .layer_names = kOlmo2Names, .model_type = "olmo2"},
    {.hf_class = "GraniteForCausalLM", .name = "granite", .permute_qk = true,
     .size_70b = S70::never, .llama_keys = true, .head_dim_keys = HD::when_in_config,
     .keys = kGraniteKeys, .model_type = "granite"},
    // Phi-3: q/k/v and gate/up fused as they are stored.
    {.hf_class = "Phi3ForCausalLM", .name = "phi3", .permute_qk = false, .size_70b = S70::never,
     .llama_keys = false, .head_dim_keys = HD::never, .rope_dimension_key = true,
     .layer_names = kPhi3Names, .keys = kPhi3Keys, .model_type = "phi3"},
    // Gemma: norms written as 1 + w; exported, not yet imported (the attention scale llama.cpp
    // takes from the model's size would be config.json's query_pre_attn_scalar).
    {.hf_class = "Gemma2ForCausalLM", .name = "gemma2", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::always,
     .layer_names = kGemmaNames, .keys = kGemma2Keys, .rope_base_key = false,
     .norm_plus_one = true, .no_space_prefix = true},
    {.hf_class = "Gemma3ForCausalLM", .name = "gemma3", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::always,
     .layer_names = kGemmaNames, .keys = kGemma3Keys, .norm_plus_one = true,
     .no_space_prefix = true},
    // gpt-oss: llama.cpp's openai-moe; MXFP4 experts copied as they are, both ways. Its
    // sliding and full layers alternate, the first sliding, in llama.cpp and transformers alike.
    {.hf_class = "GptOssForCausalLM", .name = "gpt-oss", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::always,
     .layer_names = kGptOssNames, .experts = kGptOssExperts, .keys = kGptOssKeys,
     .model_type = "gpt_oss", .yarn_truncate = false},
};
// clang-format on

// Per-layer tensors: the part after "model.layers.N." and the part after "blk.N.".
constexpr GgufNamePair kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};
constexpr GgufNamePair kModelNames[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

std::optional<double> number(const JsonDoc& doc, const char* key) {
  const auto v = doc.root()[key];
  if (v.error() || v.is_null()) return std::nullopt;
  double d;
  if (v.get_double().get(d) == simdjson::SUCCESS) return d;
  int64_t i;
  if (v.get_int64().get(i) == simdjson::SUCCESS) return static_cast<double>(i);
  uint64_t u;
  if (v.get_uint64().get(u) == simdjson::SUCCESS) return static_cast<double>(u);
  doc.fail(key, fmt::format("{} is not a number", key));
}

// A token id: a whole number, or the first of a list (Llama 3.1's eos_token_id lists three); a
// value of another kind is no id.
std::optional<uint64_t> token_id(const JsonDoc& doc, const char* key) {
  simdjson::dom::element v;
  if (doc.root()[key].get(v) != simdjson::SUCCESS) return std::nullopt;
  simdjson::dom::array list;
  if (v.get_array().get(list) == simdjson::SUCCESS) {
    if (list.size() == 0) return std::nullopt;
    v = list.at(0).value_unsafe();
  }
  uint64_t id;
  return v.get_uint64().get(id) == simdjson::SUCCESS ? std::optional(id) : std::nullopt;
}

uint32_t u32(uint64_t v, const char* key) {
  if (v > UINT32_MAX)
    throw_invalid(fmt::format("config.json's {} ({}) does not fit GGUF's u32", key, v));
  return static_cast<uint32_t>(v);
}

// The layer of a name "`prefix`N.rest" with N below `layers`, and its rest.
std::optional<std::pair<uint64_t, std::string_view>> layer_part(std::string_view name,
                                                                std::string_view prefix,
                                                                uint64_t layers) {
  if (!name.starts_with(prefix)) return std::nullopt;
  const std::string_view rest = name.substr(prefix.size());
  uint64_t layer = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
  if (ec != std::errc() || end == rest.data() || *end != '.' || layer >= layers)
    return std::nullopt;
  return std::pair(layer, rest.substr(static_cast<size_t>(end - rest.data()) + 1));
}

float shift_of(const GgufArch& arch, std::string_view hf_name) {
  return arch.norm_plus_one && hf_name.ends_with("norm.weight") ? 1.0f : 0.0f;
}

// Key `k` of config.json, when it has one of its names.
std::optional<GgufKeyValue> config_key(const JsonDoc& doc, std::string_view arch,
                                       const GgufConfigKey& k) {
  for (std::string_view json : k.json) {
    if (json.empty()) continue;
    const std::string key(json);
    const std::optional<double> v = number(doc, key.c_str());
    if (!v) continue;
    const std::string name = fmt::format("{}.{}", arch, k.key);
    if (k.type == GgufConfigKey::Type::f32) {
      if (!std::isfinite(static_cast<float>(*v)))
        doc.fail(key.c_str(), fmt::format("{} is not a finite float32", key));
      return GgufKeyValue{name, gguf_f32(static_cast<float>(*v))};
    }
    const std::optional<uint64_t> whole = doc.optional_uint(key.c_str());
    if (!whole) doc.fail(key.c_str(), fmt::format("{} is not a non-negative integer", key));
    return GgufKeyValue{name, gguf_u32(u32(*whole, key.c_str()))};
  }
  if (k.zero_when_absent)
    return GgufKeyValue{fmt::format("{}.{}", arch, k.key),
                        k.type == GgufConfigKey::Type::f32 ? gguf_f32(0) : gguf_u32(0)};
  return std::nullopt;
}

// The expert part `part` (after "model.layers.N.") of a mixture-of-experts layer names: its
// stacked tensor and expert.
std::optional<GgufName> expert_name(const GgufArch& arch, const HfConfig& c, uint64_t layer,
                                    std::string_view part) {
  const auto in_expert =
      arch.experts ? layer_part(part, arch.experts->prefix, c.experts) : std::nullopt;
  if (!in_expert) return std::nullopt;
  const auto [expert, what] = *in_expert;
  for (const auto& [hf, gguf] : arch.experts->parts)
    if (!hf.empty() && what == hf)
      return GgufName{fmt::format("blk.{}.{}", layer, gguf), 0, expert};
  return std::nullopt;
}

}  // namespace

const GgufArch& gguf_arch_for(std::string_view hf_class) {
  for (const GgufArch& a : kArchs)
    if (a.hf_class == hf_class) return a;
  std::vector<std::string_view> known;
  for (const GgufArch& a : kArchs) known.push_back(a.hf_class);
  throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
              fmt::format("architecture {} is not exported to GGUF; these are: {}",
                          hf_class.empty() ? std::string_view{"(none)"} : hf_class,
                          fmt::join(known, ", ")));
}

bool GgufArch::is_70b(const HfConfig& c) const {
  switch (size_70b) {
    case Size70B::at_80_layers:
      return c.layers == 80;
    case Size70B::at_80_layers_with_gqa:
      return c.layers == 80 && c.heads != c.kv_heads;
    case Size70B::never:
      break;
  }
  return false;
}

std::span<const GgufConfigKey> gguf_common_keys() { return kCommonKeys; }

const GgufArch& gguf_arch_named(std::string_view name, bool experts) {
  for (const GgufArch& a : kArchs)
    if (!a.model_type.empty() && a.name == name && a.experts.has_value() == experts) return a;
  std::vector<std::string> known;
  for (const GgufArch& a : kArchs) {
    if (a.model_type.empty()) continue;
    const std::string entry = fmt::format("{}{}", a.name, a.experts ? " with experts" : "");
    if (std::find(known.begin(), known.end(), entry) == known.end()) known.push_back(entry);
  }
  throw Error(
      ErrorCode::unsupported, Rule::none, "general.architecture", std::nullopt,
      fmt::format("GGUF architecture {}{} is not imported to a Hugging Face folder; these are: {}",
                  name.empty() ? std::string_view{"(none)"} : name, experts ? " with experts" : "",
                  fmt::join(known, ", ")));
}

HfConfig parse_hf_names(std::string_view json, const std::string& source) {
  const JsonDoc doc(json, source, Rule::model);
  HfConfig c;
  simdjson::dom::array classes;
  if (doc.root()["architectures"].get_array().get(classes) == simdjson::SUCCESS &&
      classes.size() > 0) {
    std::string_view first;
    if (classes.at(0).get_string().get(first) == simdjson::SUCCESS) c.hf_class = std::string(first);
  }
  if (c.hf_class.empty())
    doc.fail("architectures", "config.json names no architecture (\"architectures\")");
  // An unknown class is refused before its keys are asked for.
  const GgufArch& arch = gguf_arch_for(c.hf_class);
  c.layers = doc.required_uint("num_hidden_layers");
  c.heads = doc.required_uint("num_attention_heads");
  if (c.heads == 0) doc.fail("num_attention_heads", "num_attention_heads is 0");
  c.kv_heads = doc.optional_uint("num_key_value_heads").value_or(c.heads);
  if (c.kv_heads == 0 || c.heads % c.kv_heads != 0)
    doc.fail("num_key_value_heads",
             fmt::format("num_key_value_heads ({}) does not divide num_attention_heads ({})",
                         c.kv_heads, c.heads));
  c.tie_word_embeddings = doc.optional_bool("tie_word_embeddings").value_or(false);
  if (const std::optional<GgufExperts>& e = arch.experts) {
    for (std::string_view key : e->count)
      if (!key.empty() && !c.experts)
        c.experts = doc.optional_uint(std::string(key).c_str()).value_or(0);
    if (c.experts == 0 || c.experts > kMaxGgufExperts ||
        c.layers > kMaxGgufModelExperts / c.experts)
      doc.fail(std::string(e->count[0]).c_str(),
               fmt::format("{} is not between 1 and {} ({} in all the layers at most)", e->count[0],
                           kMaxGgufExperts, kMaxGgufModelExperts));
  }
  return c;
}

HfConfig parse_hf_config(std::string_view json, const std::string& source) {
  HfConfig c = parse_hf_names(json, source);
  const GgufArch& arch = gguf_arch_for(c.hf_class);
  const JsonDoc doc(json, source, Rule::model);
  c.hidden_size = doc.required_uint("hidden_size");
  c.intermediate_size = doc.required_uint("intermediate_size");
  const std::optional<uint64_t> head_dim = doc.optional_uint("head_dim");
  c.head_dim_in_config = head_dim.has_value();
  c.head_dim = head_dim.value_or(c.hidden_size / c.heads);
  if (c.head_dim == 0 || c.head_dim % 2 != 0)
    doc.fail("head_dim", fmt::format("head_dim {} is not even", c.head_dim));
  c.context_length = doc.required_uint("max_position_embeddings");
  c.vocab_size = doc.required_uint("vocab_size");
  if (c.vocab_size == 0 || c.vocab_size > kMaxGgufVocabulary)
    doc.fail("vocab_size", fmt::format("vocab_size {} is not between 1 and {}", c.vocab_size,
                                       kMaxGgufVocabulary));
  if (c.hidden_size == 0) doc.fail("hidden_size", "hidden_size is 0");
  // transformers 5 keeps the RoPE numbers in rope_parameters, per kind of layer where they differ.
  c.rope_theta = number(doc, "rope_theta");
  if (!c.rope_theta) c.rope_theta = rope_parameter(doc, "rope_theta");
  c.rope_theta_swa = rope_parameter(doc, "rope_theta", true);
  const std::optional<double> partial = number(doc, "partial_rotary_factor");
  c.partial_rotary_factor =
      rope_parameter(doc, "partial_rotary_factor").value_or(partial.value_or(1));
  if (!(c.partial_rotary_factor > 0 && c.partial_rotary_factor <= 1) ||
      (c.partial_rotary_factor != 1 && !arch.rope_dimension_key))
    throw Error(ErrorCode::unsupported, Rule::model, "partial_rotary_factor", std::nullopt,
                fmt::format("a partial_rotary_factor of {} is not exported for {}",
                            c.partial_rotary_factor, c.hf_class),
                source);
  const std::optional<double> eps = number(doc, "rms_norm_eps");
  if (!eps) doc.fail("rms_norm_eps", "config.json has no rms_norm_eps");
  c.rms_norm_eps = *eps;
  c.bos_token_id = token_id(doc, "bos_token_id");
  c.eos_token_id = token_id(doc, "eos_token_id");
  c.rope_scaling = parse_rope_scaling(doc, source);
  for (std::span<const GgufConfigKey> keys :
       {std::span<const GgufConfigKey>(kCommonKeys), arch.keys})
    for (const GgufConfigKey& k : keys)
      if (arch.experts && k.key == "expert_count")  // the count the stacks have
        c.keys.push_back({fmt::format("{}.expert_count", arch.name),
                          gguf_u32(u32(c.experts, "the expert count"))});
      else if (std::optional<GgufKeyValue> kv = config_key(doc, arch.name, k))
        c.keys.push_back(std::move(*kv));
  if (c.rope_scaling.kind == RopeScaling::Kind::llama3 && arch.name != "llama")
    throw Error(
        ErrorCode::unsupported, Rule::model, "rope_scaling", std::nullopt,
        fmt::format(
            "Llama 3's rope_scaling is exported for the llama architecture only (llama.cpp reads "
            "{} there), not for {}",
            kRopeFreqsName, c.hf_class),
        source);
  return c;
}

std::vector<GgufKeyValue> gguf_hyperparameters(const GgufArch& arch, const HfConfig& c) {
  const std::string a(arch.name);
  std::vector<GgufKeyValue> kv = {
      {a + ".context_length", gguf_u32(u32(c.context_length, "max_position_embeddings"))},
      {a + ".embedding_length", gguf_u32(u32(c.hidden_size, "hidden_size"))},
      {a + ".block_count", gguf_u32(u32(c.layers, "num_hidden_layers"))},
      {a + ".feed_forward_length", gguf_u32(u32(c.intermediate_size, "intermediate_size"))},
      {a + ".attention.head_count", gguf_u32(u32(c.heads, "num_attention_heads"))},
      {a + ".attention.head_count_kv", gguf_u32(u32(c.kv_heads, "num_key_value_heads"))},
      {a + ".attention.layer_norm_rms_epsilon", gguf_f32(static_cast<float>(c.rms_norm_eps))},
  };
  if (arch.llama_keys) {
    kv.push_back({a + ".rope.dimension_count", gguf_u32(u32(c.head_dim, "head_dim"))});
    kv.push_back({a + ".vocab_size", gguf_u32(u32(c.vocab_size, "vocab_size"))});
  } else if (arch.rope_dimension_key) {  // as the converter computes it, from the hidden size
    const auto rotated =
        static_cast<uint64_t>(c.partial_rotary_factor * static_cast<double>(c.hidden_size)) /
        c.heads;
    kv.push_back({a + ".rope.dimension_count", gguf_u32(u32(rotated, "partial_rotary_factor"))});
  }
  if (arch.head_dim_keys == GgufArch::HeadDimKeys::always ||
      (arch.head_dim_keys == GgufArch::HeadDimKeys::when_in_config && c.head_dim_in_config)) {
    kv.push_back({a + ".attention.key_length", gguf_u32(u32(c.head_dim, "head_dim"))});
    kv.push_back({a + ".attention.value_length", gguf_u32(u32(c.head_dim, "head_dim"))});
  }
  kv.insert(kv.end(), c.keys.begin(), c.keys.end());
  if (c.rope_theta && arch.rope_base_key)
    kv.push_back({a + ".rope.freq_base", gguf_f32(static_cast<float>(*c.rope_theta))});
  if (c.rope_theta_swa)
    kv.push_back({a + ".rope.freq_base_swa", gguf_f32(static_cast<float>(*c.rope_theta_swa))});
  for (GgufKeyValue& k : rope_scaling_keys(a, c.rope_scaling)) kv.push_back(std::move(k));
  return kv;
}

std::optional<GgufName> gguf_name_for(const GgufArch& arch, const HfConfig& c,
                                      std::string_view hf_name) {
  for (const auto& [hf, gguf] : kModelNames)
    if (hf_name == hf) {
      if (hf_name == "lm_head.weight" && c.tie_word_embeddings)
        return std::nullopt;  // llama.cpp reuses token_embd
      return GgufName{std::string(gguf), 0, std::nullopt, shift_of(arch, hf_name)};
    }
  if (const auto in_layer = layer_part(hf_name, "model.layers.", c.layers)) {
    const auto [layer, part] = *in_layer;
    if (part == "self_attn.rotary_emb.inv_freq") return std::nullopt;  // recomputed by llama.cpp
    if (std::optional<GgufName> expert = expert_name(arch, c, layer, part)) return expert;
    for (std::span<const GgufNamePair> names :
         {arch.layer_names, std::span<const GgufNamePair>(kLayerNames)})
      for (const auto& [hf, gguf] : names)
        if (part == hf) {
          uint64_t heads = 0;
          if (arch.permute_qk && part.starts_with("self_attn.q_proj.")) heads = c.heads;
          if (arch.permute_qk && part.starts_with("self_attn.k_proj.")) heads = c.kv_heads;
          return GgufName{fmt::format("blk.{}.{}", layer, gguf), heads, std::nullopt,
                          shift_of(arch, part)};
        }
  }
  throw Error(
      ErrorCode::unsupported, Rule::none, std::string(hf_name), std::nullopt,
      fmt::format("tensor {} has no GGUF name for {} ({})", hf_name, arch.hf_class, arch.name));
}

std::vector<std::pair<std::string, GgufName>> gguf_names_of(const GgufArch& arch,
                                                            const HfConfig& c) {
  std::vector<std::pair<std::string, GgufName>> out;
  const auto add = [&](std::string hf) {
    if (std::optional<GgufName> g = gguf_name_for(arch, c, hf))
      out.emplace_back(std::move(hf), std::move(*g));
  };
  for (const auto& [hf, gguf] : kModelNames) add(std::string(hf));
  for (uint64_t layer = 0; layer < c.layers; ++layer) {
    for (const auto& [hf, gguf] : arch.layer_names)
      add(fmt::format("model.layers.{}.{}", layer, hf));
    for (const GgufNamePair& common : kLayerNames)
      if (std::none_of(arch.layer_names.begin(), arch.layer_names.end(),
                       [&](const GgufNamePair& own) { return own.first == common.first; }))
        add(fmt::format("model.layers.{}.{}", layer, common.first));
  }
  return out;
}

std::vector<std::pair<std::string, GgufName>> gguf_expert_names_of(const GgufArch& arch,
                                                                   const HfConfig& c,
                                                                   std::string_view gguf_name) {
  std::vector<std::pair<std::string, GgufName>> out;
  const auto in_layer = layer_part(gguf_name, "blk.", c.layers);
  if (!arch.experts || !in_layer) return out;
  const auto [layer, part] = *in_layer;
  for (const auto& [hf, gguf] : arch.experts->parts)
    if (!gguf.empty() && part == gguf)
      for (uint64_t e = 0; e < c.experts; ++e)
        out.emplace_back(fmt::format("model.layers.{}.{}{}.{}", layer, arch.experts->prefix, e, hf),
                         GgufName{std::string(gguf_name), 0, e});
  return out;
}

std::vector<std::pair<GgufName, const GgufStackedPart*>> gguf_stacked_names_for(
    const GgufArch& arch, const HfConfig& c, std::string_view hf_name) {
  std::vector<std::pair<GgufName, const GgufStackedPart*>> out;
  const auto in_layer = layer_part(hf_name, "model.layers.", c.layers);
  if (!arch.experts || !in_layer) return out;
  for (const GgufStackedPart& s : arch.experts->stacked)
    if (in_layer->second == s.hf)
      out.emplace_back(
          GgufName{fmt::format("blk.{}.{}", in_layer->first, s.gguf), 0, std::nullopt, 0}, &s);
  return out;
}

const GgufArch& gguf_arch_of(const GgufFile& f) {
  const GgufValue* key = f.find("general.architecture");
  const std::string name = key && key->as_string() ? *key->as_string() : "";
  const GgufValue* experts = f.find(name + ".expert_count");
  return gguf_arch_named(name, experts && experts->as_uint().value_or(0) > 0);
}

}  // namespace tlio::detail
