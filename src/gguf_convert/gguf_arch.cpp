// gguf_convert/gguf_arch.cpp: config.json read for export, the names and keys of a model by the
// architecture table (gguf_arch_table.cpp), and the table read backwards for import.
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
    const std::string key(json), name = fmt::format("{}.{}", arch, k.key);
    if (k.type == GgufConfigKey::Type::bool_true) {
      if (doc.optional_bool(key.c_str()).value_or(false))
        return GgufKeyValue{name, gguf_bool(true)};
      continue;
    }
    if (k.type == GgufConfigKey::Type::gating) {
      const std::optional<std::string> f = doc.optional_string(key.c_str());
      if (!f) continue;
      if (*f != "softmax" && *f != "sigmoid")
        doc.fail(key.c_str(), fmt::format("{} \"{}\" is not a gating function llama.cpp's "
                                          "converter writes that tlio knows (softmax, sigmoid)",
                                          key, *f));
      return GgufKeyValue{name,
                          gguf_u32(*f == "softmax" ? kGgufGatingSoftmax : kGgufGatingSigmoid)};
    }
    const std::optional<double> v = number(doc, key.c_str());
    if (!v) continue;
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
  for (const GgufArch& a : gguf_archs())
    if (a.hf_class == hf_class) return a;
  std::vector<std::string_view> known;
  for (const GgufArch& a : gguf_archs()) known.push_back(a.hf_class);
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

const GgufArch& gguf_arch_named(std::string_view name, bool experts) {
  for (const GgufArch& a : gguf_archs())
    if (!a.model_type.empty() && a.imported_when.empty() && a.name == name &&
        a.experts.has_value() == experts)
      return a;
  std::vector<std::string> known;
  for (const GgufArch& a : gguf_archs()) {
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
  // LongRoPE's factors: one per pair of the rotated part, as the converter counts it
  const uint64_t rotated_pairs =
      static_cast<uint64_t>(c.partial_rotary_factor * static_cast<double>(c.hidden_size)) /
      c.heads / 2;
  c.rope_scaling = parse_rope_scaling(doc, source, rotated_pairs,
                                      {arch.mla, !arch.yarn_truncate, arch.longrope});
  if (arch.mla) {
    c.kv_lora_rank = doc.required_uint("kv_lora_rank");
    c.qk_nope_head_dim = doc.required_uint("qk_nope_head_dim");
    c.qk_rope_head_dim = doc.required_uint("qk_rope_head_dim");
    c.v_head_dim = doc.required_uint("v_head_dim");
    if (c.kv_lora_rank == 0 || c.qk_nope_head_dim == 0 || c.v_head_dim == 0 ||
        c.qk_rope_head_dim % 2 != 0 || c.kv_lora_rank > UINT32_MAX ||
        c.qk_nope_head_dim > UINT32_MAX || c.qk_rope_head_dim > UINT32_MAX ||
        c.v_head_dim > UINT32_MAX)
      doc.fail("kv_lora_rank",
               "kv_lora_rank, qk_nope_head_dim and v_head_dim must be positive "
               "u32s and qk_rope_head_dim an even one");
  }
  for (std::span<const GgufConfigKey> keys : {gguf_common_keys(), arch.keys})
    for (const GgufConfigKey& k : keys)
      if (arch.experts && k.key == "expert_count")  // the count the stacks have
        c.keys.push_back({fmt::format("{}.expert_count", arch.name),
                          gguf_u32(u32(c.experts, "the expert count"))});
      else if (std::optional<GgufKeyValue> kv = config_key(doc, arch.name, k))
        c.keys.push_back(std::move(*kv));
  if (c.rope_scaling.kind == RopeScaling::Kind::longrope)  // its keys say the original context
    std::erase_if(c.keys, [&](const GgufKeyValue& k) {
      return k.key == fmt::format("{}.rope.scaling.original_context_length", arch.name);
    });
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
      // MLA is written as MQA: one KV head (below).
      {a + ".attention.head_count_kv",
       gguf_u32(arch.mla ? 1 : u32(c.kv_heads, "num_key_value_heads"))},
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
  if (arch.mla) {  // one KV head of the latent and the rotated part, as the converter writes
    kv.push_back({a + ".attention.key_length",
                  gguf_u32(u32(c.kv_lora_rank + c.qk_rope_head_dim, "kv_lora_rank"))});
    kv.push_back({a + ".attention.value_length", gguf_u32(u32(c.kv_lora_rank, "kv_lora_rank"))});
    kv.push_back({a + ".attention.key_length_mla",
                  gguf_u32(u32(c.qk_nope_head_dim + c.qk_rope_head_dim, "qk_nope_head_dim"))});
    kv.push_back({a + ".attention.value_length_mla", gguf_u32(u32(c.v_head_dim, "v_head_dim"))});
    if (c.rope_scaling.mscale_all_dim)  // 0.1 x, as the converter writes it for deepseek2 alone
      kv.push_back({a + ".rope.scaling.yarn_log_multiplier",
                    gguf_f32(static_cast<float>(0.1 * *c.rope_scaling.mscale_all_dim))});
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
  for (const auto& [hf, gguf] : gguf_model_names())
    if (hf_name == hf) {
      if (hf_name == "lm_head.weight" && c.tie_word_embeddings)
        return std::nullopt;  // llama.cpp reuses token_embd
      return GgufName{std::string(gguf), 0, std::nullopt, shift_of(arch, hf_name)};
    }
  if (const auto in_layer = layer_part(hf_name, "model.layers.", c.layers)) {
    const auto [layer, part] = *in_layer;
    if (part == "self_attn.rotary_emb.inv_freq") return std::nullopt;  // recomputed by llama.cpp
    if (std::optional<GgufName> expert = expert_name(arch, c, layer, part)) return expert;
    for (std::span<const GgufNamePair> names : {arch.layer_names, gguf_layer_names()})
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
  for (const auto& [hf, gguf] : gguf_model_names()) add(std::string(hf));
  for (uint64_t layer = 0; layer < c.layers; ++layer) {
    for (const auto& [hf, gguf] : arch.layer_names)
      add(fmt::format("model.layers.{}.{}", layer, hf));
    for (const GgufNamePair& common : gguf_layer_names())
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
  if (!in_layer) return out;
  for (std::span<const GgufStackedPart> parts :
       {arch.experts ? arch.experts->stacked : std::span<const GgufStackedPart>{}, arch.split})
    for (const GgufStackedPart& s : parts)
      if (in_layer->second == s.hf)
        out.emplace_back(
            GgufName{fmt::format("blk.{}.{}", in_layer->first, s.gguf), 0, std::nullopt, 0}, &s);
  return out;
}

const GgufArch& gguf_arch_of(const GgufFile& f) {
  const GgufValue* key = f.find("general.architecture");
  const std::string name = key && key->as_string() ? *key->as_string() : "";
  const GgufValue* count = f.find(name + ".expert_count");
  const bool experts = count && count->as_uint().value_or(0) > 0;
  for (const GgufArch& a : gguf_archs())  // a row that asks for a tensor of its own first
    if (!a.model_type.empty() && !a.imported_when.empty() && a.name == name &&
        a.experts.has_value() == experts &&
        std::any_of(f.tensors().begin(), f.tensors().end(),
                    [&](const GgufTensorInfo& t) { return t.name.ends_with(a.imported_when); }))
      return a;
  return gguf_arch_named(name, experts);
}

}  // namespace tlio::detail
