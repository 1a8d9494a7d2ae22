// gguf_convert/gguf_to_hf.cpp: config.json, tokenizer.json, tokenizer_config.json and
// generation_config.json written back from a GGUF file's keys.
#include "gguf_convert/gguf_to_hf.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <unordered_map>

#include "common/json_text.hpp"
#include "gguf/gguf_writer.hpp"
#include "gguf_convert/gguf_vocab.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

// llama.cpp's token types.
constexpr int32_t kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;

// A JSON string of text from a file (its invalid UTF-8 bytes made U+FFFD).
std::string json(std::string_view text) { return quote_name(valid_utf8(text)); }

[[noreturn]] void fail(const GgufFile& f, const std::string& key, const std::string& what) {
  throw Error(ErrorCode::format, Rule::gguf, key, std::nullopt, what, f.name());
}

std::optional<uint64_t> whole(const GgufFile& f, const std::string& key, bool required) {
  const GgufValue* v = f.find(key);
  if (!v) {
    if (required)
      fail(f, key, fmt::format("the file has no {}: a Hugging Face config needs it", key));
    return std::nullopt;
  }
  if (v->type == GgufValueType::ARRAY)
    throw Error(
        ErrorCode::unsupported, Rule::gguf, key, std::nullopt,
        fmt::format("{} is a list (one value per layer): such models are not imported", key),
        f.name());
  const std::optional<uint64_t> u = v->as_uint();
  if (!u) fail(f, key, fmt::format("{} is not a whole number", key));
  return u;
}

std::optional<double> number(const GgufFile& f, const std::string& key, bool required) {
  const GgufValue* v = f.find(key);
  if (!v) {
    if (required)
      fail(f, key, fmt::format("the file has no {}: a Hugging Face config needs it", key));
    return std::nullopt;
  }
  const std::optional<double> d = v->as_double();
  if (!d || !std::isfinite(*d) || std::fabs(*d) > std::numeric_limits<float>::max())
    fail(f, key, fmt::format("{} is not a finite number a float32 holds", key));
  return d;
}

// A float32 key's value as its shortest decimal ("1e-05", not 9.99999974737875e-06), always a
// float literal ("30.0": transformers 5 checks that softcaps and the like are floats).
std::string float_text(double v) {
  std::string s = fmt::format("{}", static_cast<float>(v));
  return s.find_first_of(".en") == std::string::npos ? s + ".0" : s;
}

const std::string* text_key(const GgufFile& f, const char* key) {
  const GgufValue* v = f.find(key);
  return v ? v->as_string() : nullptr;
}

bool bool_key(const GgufFile& f, const char* key, bool otherwise) {
  const GgufValue* v = f.find(key);
  const std::optional<uint64_t> u =
      v && v->type == GgufValueType::BOOL ? v->as_uint() : std::nullopt;
  return u ? *u != 0 : otherwise;
}

// The vocabulary: tokens and their types (normal when the file has no types).
struct Vocabulary {
  const std::vector<std::string>* tokens = nullptr;
  std::vector<int32_t> types;
};

std::optional<Vocabulary> vocabulary_of(const GgufFile& f) {
  const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != GgufValueType::ARRAY ||
      tokens->element_type != GgufValueType::STRING)
    return std::nullopt;
  Vocabulary v{&tokens->strings, std::vector<int32_t>(tokens->strings.size(), 1)};
  if (const GgufValue* types = f.find("tokenizer.ggml.token_type");
      types && types->type == GgufValueType::ARRAY && types->count == v.types.size())
    for (uint64_t i = 0; i < types->count; ++i)
      v.types[i] = static_cast<int32_t>(types->number_at(i).value_or(1));
  return v;
}

// The token id under `key`, when it is one of the vocabulary's.
// A SentencePiece ("llama") vocabulary without an unknown token id has llama.cpp's default, 0
// (llama.cpp's converter leaves the key out where it cannot name the token).
std::optional<uint64_t> token_id(const GgufFile& f, const char* key, size_t vocabulary) {
  const GgufValue* v = f.find(key);
  std::optional<uint64_t> id = v ? v->as_uint() : std::nullopt;
  const GgufValue* model = f.find("tokenizer.ggml.model");
  if (!v && std::string_view(key) == "tokenizer.ggml.unknown_token_id" && model &&
      model->as_string() && *model->as_string() == "llama")
    id = 0;
  return id && *id < vocabulary ? id : std::nullopt;
}

}  // namespace

HfConfig hf_config_of(const GgufArch& arch, const GgufFile& f) {
  const std::string a = std::string(arch.name) + ".";
  HfConfig c;
  c.hf_class = std::string(arch.hf_class);
  c.layers = *whole(f, a + "block_count", true);
  if (c.layers == 0 || c.layers > f.tensors().size())
    fail(f, a + "block_count",
         fmt::format("block_count {} is not between 1 and the file's {} tensors", c.layers,
                     f.tensors().size()));
  c.hidden_size = *whole(f, a + "embedding_length", true);
  c.intermediate_size = *whole(f, a + "feed_forward_length", true);
  c.heads = *whole(f, a + "attention.head_count", true);
  c.kv_heads = whole(f, a + "attention.head_count_kv", false).value_or(c.heads);
  if (c.heads == 0 || c.kv_heads == 0 || c.hidden_size == 0)
    fail(f, a + "attention.head_count",
         "embedding_length, head_count and head_count_kv must not be 0");
  c.head_dim = whole(f, a + "attention.key_length", false).value_or(c.hidden_size / c.heads);
  c.context_length = *whole(f, a + "context_length", true);
  c.rms_norm_eps = *number(f, a + "attention.layer_norm_rms_epsilon", true);
  c.rope_theta = number(f, a + "rope.freq_base", false);
  c.rope_theta_swa = number(f, a + "rope.freq_base_swa", false);
  const GgufTensorInfo* embeddings = f.tensor("token_embd.weight");
  if (!embeddings || embeddings->ne.size() != 2)
    fail(f, "token_embd.weight",
         "the file has no 2-D token_embd.weight: the vocabulary's size comes from it");
  c.vocab_size = embeddings->ne[1];
  c.tie_word_embeddings = f.tensor("output.weight") == nullptr;
  // Special ids that are not one whole number are left out (they only fill side files).
  const auto id = [&](const char* key) -> std::optional<uint64_t> {
    const GgufValue* v = f.find(key);
    return v && v->type != GgufValueType::ARRAY ? v->as_uint() : std::nullopt;
  };
  c.bos_token_id = id("tokenizer.ggml.bos_token_id");
  c.eos_token_id = id("tokenizer.ggml.eos_token_id");
  // The padding id too: some classes default to one past a small vocabulary (Phi-3's 32000).
  c.pad_token_id = id("tokenizer.ggml.padding_token_id");
  if (c.pad_token_id && *c.pad_token_id >= c.vocab_size) c.pad_token_id.reset();
  for (std::span<const GgufConfigKey> keys : {gguf_common_keys(), arch.keys})
    for (const GgufConfigKey& k : keys) {
      const std::string key = a + std::string(k.key);
      if (k.type == GgufConfigKey::Type::bool_true) {  // false where the export wrote none
        c.keys.push_back({key, gguf_bool(bool_key(f, key.c_str(), false))});
        continue;
      }
      if (k.type == GgufConfigKey::Type::gating) {
        const std::optional<uint64_t> v = whole(f, key, false);
        if (v && *v != kGgufGatingSoftmax && *v != kGgufGatingSigmoid)
          fail(f, key, fmt::format("{} {} is not softmax (1) or sigmoid (2)", key, *v));
        if (v) c.keys.push_back({key, gguf_u32(static_cast<uint32_t>(*v))});
        continue;
      }
      if (k.type == GgufConfigKey::Type::u32) {
        if (const std::optional<uint64_t> v = whole(f, key, false))
          c.keys.push_back(
              {key, gguf_u32(static_cast<uint32_t>(std::min<uint64_t>(*v, UINT32_MAX)))});
      } else if (const std::optional<double> v = number(f, key, false)) {
        c.keys.push_back({key, gguf_f32(static_cast<float>(*v))});
      }
    }
  uint64_t rotated = c.head_dim;
  if (arch.rope_dimension_key) {  // the rotated part of a head (Phi-3's partial rotary factor)
    rotated = whole(f, a + "rope.dimension_count", false).value_or(c.head_dim);
    if (rotated == 0 || rotated > c.head_dim || rotated % 2 != 0)
      fail(f, a + "rope.dimension_count",
           fmt::format("rope.dimension_count {} is not an even part of a head of {}", rotated,
                       c.head_dim));
    c.partial_rotary_factor = static_cast<double>(rotated) / static_cast<double>(c.head_dim);
  }
  c.rope_scaling =
      rope_scaling_of(f, std::string(arch.name), c.rope_theta.value_or(kDefaultRopeTheta),
                      c.head_dim, rotated / 2, c.context_length, arch.longrope);
  c.rope_scaling.truncate = arch.yarn_truncate;
  if (arch.mla) {  // MLA's parts, from the lengths the export wrote
    c.kv_lora_rank = *whole(f, a + "attention.kv_lora_rank", true);
    const uint64_t key_mla = *whole(f, a + "attention.key_length_mla", true);
    c.v_head_dim = *whole(f, a + "attention.value_length_mla", true);
    c.qk_rope_head_dim = *whole(f, a + "rope.dimension_count", true);
    if (c.kv_lora_rank == 0 || c.v_head_dim == 0 || key_mla <= c.qk_rope_head_dim)
      fail(f, a + "attention.key_length_mla",
           "kv_lora_rank and value_length_mla must not be 0, key_length_mla must exceed "
           "rope.dimension_count");
    c.qk_nope_head_dim = key_mla - c.qk_rope_head_dim;
    c.head_dim = c.qk_rope_head_dim;  // transformers' head_dim: the rotated part
    c.kv_heads = c.heads;             // written as one KV head (MQA), MLA's heads are all
    if (c.rope_scaling.kind == RopeScaling::Kind::yarn)
      if (const std::optional<double> mul =
              number(f, a + "rope.scaling.yarn_log_multiplier", false))
        c.rope_scaling.mscale_all_dim = static_cast<double>(static_cast<float>(*mul) / 0.1f);
  }
  if (arch.experts) {
    c.experts = *whole(f, a + "expert_count", true);
    if (c.experts == 0 || c.experts > kMaxGgufExperts ||
        c.layers > kMaxGgufModelExperts / c.experts)
      fail(f, a + "expert_count",
           fmt::format("expert_count {} is not between 1 and {} ({} in all the layers at most)",
                       c.experts, kMaxGgufExperts, kMaxGgufModelExperts));
  }
  return c;
}

std::string config_json_of(const GgufArch& arch, const HfConfig& c, Dtype dtype,
                           std::string_view more) {
  std::string out = fmt::format(
      "{{\n  \"architectures\": [{}],\n  \"model_type\": {},\n  \"hidden_size\": {},\n  \"intermediate_size\": {},\n"
      "  \"num_hidden_layers\": {},\n  \"num_attention_heads\": {},\n  \"num_key_value_heads\": {},\n"
      "  \"head_dim\": {},\n  \"max_position_embeddings\": {},\n  \"rms_norm_eps\": {},\n  \"vocab_size\": {},\n"
      "  \"tie_word_embeddings\": {},\n  \"hidden_act\": {},\n  \"torch_dtype\": {}",
      json(arch.hf_class), json(arch.model_type), c.hidden_size, c.intermediate_size, c.layers,
      c.heads, c.kv_heads, c.head_dim, c.context_length, float_text(c.rms_norm_eps), c.vocab_size,
      c.tie_word_embeddings, json(arch.hidden_act), json(torch_dtype_name(dtype)));
  if (c.rope_theta) out += fmt::format(",\n  \"rope_theta\": {}", float_text(*c.rope_theta));
  if (c.rope_theta_swa)  // the sliding layers' own (Gemma 3), under the name transformers reads
    out += fmt::format(",\n  \"rope_local_base_freq\": {}", float_text(*c.rope_theta_swa));
  if (arch.layers_27b)  // the attention scale llama.cpp computes for the model's size
    out += fmt::format(",\n  \"query_pre_attn_scalar\": {}",
                       c.layers == arch.layers_27b ? c.hidden_size / c.heads : c.head_dim);
  out += rope_scaling_json(c.rope_scaling);
  if (c.bos_token_id) out += fmt::format(",\n  \"bos_token_id\": {}", *c.bos_token_id);
  if (c.eos_token_id) out += fmt::format(",\n  \"eos_token_id\": {}", *c.eos_token_id);
  if (c.pad_token_id) out += fmt::format(",\n  \"pad_token_id\": {}", *c.pad_token_id);
  // The architecture's keys under the names its class reads (the expert count's is its own).
  const std::string prefix = std::string(arch.name) + ".";
  for (const GgufKeyValue& kv : c.keys)
    for (std::span<const GgufConfigKey> keys : {gguf_common_keys(), arch.keys})
      for (const GgufConfigKey& k : keys) {
        if (kv.key != prefix + std::string(k.key)) continue;
        // The expert count under both names (transformers 4.x's Qwen3-MoE reads num_experts,
        // 5's num_local_experts).
        const auto names = k.key == "expert_count" && arch.experts ? arch.experts->count : k.json;
        // A key the export writes as 0 for none goes back as null (Phi-3's sliding window).
        std::string value;
        switch (k.type) {
          case GgufConfigKey::Type::f32:
            value = float_text(*kv.value.as_double());
            break;
          case GgufConfigKey::Type::bool_true:
            value = kv.value.as_uint() != 0u ? "true" : "false";
            break;
          case GgufConfigKey::Type::gating:
            value = kv.value.as_uint() == kGgufGatingSigmoid ? "\"sigmoid\"" : "\"softmax\"";
            break;
          case GgufConfigKey::Type::u32:
            value = k.null_when_zero && kv.value.as_uint() == 0u
                        ? "null"
                        : fmt::format("{}", *kv.value.as_uint());
            break;
        }
        for (std::string_view name : names)  // not again where it is written above
          if (!name.empty() && name != "intermediate_size" && name != "vocab_size")
            out += fmt::format(",\n  {}: {}", json(name), value);
        break;
      }
  if (arch.mla) {  // the heads' parts; q through a low rank only where the file has one
    out += fmt::format(",\n  \"qk_nope_head_dim\": {},\n  \"v_head_dim\": {}", c.qk_nope_head_dim,
                       c.v_head_dim);
    if (std::none_of(c.keys.begin(), c.keys.end(), [&](const GgufKeyValue& kv) {
          return kv.key == prefix + "attention.q_lora_rank";
        }))
      out += ",\n  \"q_lora_rank\": null";
  }
  if (c.partial_rotary_factor != 1)
    out += fmt::format(",\n  \"partial_rotary_factor\": {}", c.partial_rotary_factor);
  if (!arch.import_config.empty()) out += fmt::format(",\n  {}", arch.import_config);
  if (!more.empty()) out += fmt::format(",\n  {}", more);
  return out + "\n}\n";
}

std::optional<std::string> generation_config_of(const HfConfig& c) {
  if (!c.bos_token_id && !c.eos_token_id) return std::nullopt;
  std::vector<std::string> keys;
  if (c.bos_token_id) keys.push_back(fmt::format("  \"bos_token_id\": {}", *c.bos_token_id));
  if (c.eos_token_id) keys.push_back(fmt::format("  \"eos_token_id\": {}", *c.eos_token_id));
  return fmt::format("{{\n{}\n}}\n", fmt::join(keys, ",\n"));
}

namespace {

// The post-processor adding BOS (and EOS) where the file says llama.cpp adds them, as
// transformers' tokenizers do; `otherwise` without either.
std::string special_tokens_template(const GgufFile& f, const std::vector<std::string>& tokens,
                                    const std::string& otherwise) {
  const std::optional<uint64_t> bos_id = token_id(f, "tokenizer.ggml.bos_token_id", tokens.size());
  const std::optional<uint64_t> eos_id = token_id(f, "tokenizer.ggml.eos_token_id", tokens.size());
  const bool bos = bos_id && bool_key(f, "tokenizer.ggml.add_bos_token", false);
  const bool eos = eos_id && bool_key(f, "tokenizer.ggml.add_eos_token", false);
  if (!bos && !eos) return otherwise;
  const uint64_t b = bos ? *bos_id : 0, e = eos ? *eos_id : 0;
  const auto special = [&](uint64_t id, int type) {
    return fmt::format(R"({{"SpecialToken":{{"id":{},"type_id":{}}}}})", json(tokens[id]), type);
  };
  const auto sequence = [](const char* id, int type) {
    return fmt::format(R"({{"Sequence":{{"id":"{}","type_id":{}}}}})", id, type);
  };
  const auto entry = [&](uint64_t id) {
    return fmt::format(R"({0}:{{"id":{0},"ids":[{1}],"tokens":[{0}]}})", json(tokens[id]), id);
  };
  std::vector<std::string> single, pair, specials;
  if (bos) single.push_back(special(b, 0));
  single.push_back(sequence("A", 0));
  if (eos) single.push_back(special(e, 0));
  pair = single;
  if (bos) pair.push_back(special(b, 1));
  pair.push_back(sequence("B", 1));
  if (eos) pair.push_back(special(e, 1));
  if (bos) specials.push_back(entry(b));
  if (eos && !(bos && e == b)) specials.push_back(entry(e));
  return fmt::format(
      R"({{"type":"TemplateProcessing","single":[{}],"pair":[{}],"special_tokens":{{{}}}}})",
      fmt::join(single, ","), fmt::join(pair, ","), fmt::join(specials, ","));
}

// The vocabulary's entries ("piece":id, unused padding left out) and its added tokens (control
// and user-defined ones).
std::pair<std::string, std::string> vocab_entries(const Vocabulary& vocab) {
  const std::vector<std::string>& tokens = *vocab.tokens;
  std::string added, entries;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t type = vocab.types[i];
    if (type == kUnused) continue;  // padding the export (or llama.cpp's converter) added
    if (!entries.empty()) entries += ',';
    entries += fmt::format("{}:{}", json(tokens[i]), i);
    if (type == kControl || type == kUserDefined)
      added += fmt::format(
          "{}{{\"id\":{},\"content\":{},\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
          "\"normalized\":false,\"special\":{}}}",
          added.empty() ? "" : ",", i, json(tokens[i]), type == kControl);
  }
  return {entries, added};
}

// Characters in UTF-8 text (its bytes that do not continue a character).
size_t characters(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// A SentencePiece vocabulary (tokenizer.ggml.model "llama": pieces, scores, byte pieces) as
// transformers' LlamaConverter writes it: BPE with byte fallback, its merges every split of a
// piece into two pieces, ordered as its generate_merges orders them (the merged piece's score,
// then the left and the right half's length in characters, highest first; ties in vocabulary
// order, then by the halves' ids), the legacy normalizer ("▁" prepended when
// add_space_prefix, spaces made "▁").
std::optional<std::string> spm_tokenizer_json(const GgufFile& f, const Vocabulary& vocab,
                                              std::string& why_not) {
  const GgufValue* scores = f.find("tokenizer.ggml.scores");
  const std::vector<std::string>& tokens = *vocab.tokens;
  if (!scores || scores->type != GgufValueType::ARRAY || scores->count != tokens.size()) {
    why_not = "its SentencePiece vocabulary has no score for each token (tokenizer.ggml.scores)";
    return std::nullopt;
  }
  std::unordered_map<std::string_view, uint32_t> id_of;  // a piece twice: its last id, as a dict
  for (size_t i = 0; i < tokens.size(); ++i)
    if (vocab.types[i] != kUnused) id_of.insert_or_assign(tokens[i], static_cast<uint32_t>(i));
  struct Merge {
    float score;
    uint32_t left, right;
    size_t left_chars, right_chars;
  };
  std::vector<Merge> merges;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (vocab.types[i] == kUnused) continue;
    const std::string_view piece = tokens[i];
    const size_t first = merges.size();
    for (size_t cut = 1; cut < piece.size(); ++cut) {
      if ((static_cast<unsigned char>(piece[cut]) & 0xC0) == 0x80) continue;  // inside a character
      const auto l = id_of.find(piece.substr(0, cut)), r = id_of.find(piece.substr(cut));
      if (l != id_of.end() && r != id_of.end())
        merges.push_back({static_cast<float>(scores->number_at(i).value_or(0)), l->second,
                          r->second, characters(piece.substr(0, cut)),
                          characters(piece.substr(cut))});
    }
    std::sort(merges.begin() + static_cast<std::ptrdiff_t>(first), merges.end(),
              [](const Merge& a, const Merge& b) {
                return std::pair(a.left, a.right) < std::pair(b.left, b.right);
              });
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    return std::tuple(a.score, a.left_chars, a.right_chars) >
           std::tuple(b.score, b.left_chars, b.right_chars);
  });
  // As pairs: a piece may hold a space.
  std::string merge_list;
  for (const Merge& m : merges)
    merge_list += fmt::format("{}[{},{}]", merge_list.empty() ? "" : ",", json(tokens[m.left]),
                              json(tokens[m.right]));
  const bool byte_fallback =
      std::find(vocab.types.begin(), vocab.types.end(), kByte) != vocab.types.end();
  const std::optional<uint64_t> unk = token_id(f, "tokenizer.ggml.unknown_token_id", tokens.size());
  const bool prefix = bool_key(f, "tokenizer.ggml.add_space_prefix", true);
  const auto [entries, added] = vocab_entries(vocab);
  const std::string replace_spaces =
      R"({"type":"Replace","pattern":{"String":" "},"content":"\u2581"})";
  const std::string normalizer =
      prefix ? R"({"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"\u2581"},)" +
                   replace_spaces + "]}"
             : replace_spaces;
  const std::string decoder = fmt::format(
      R"({{"type":"Sequence","decoders":[{{"type":"Replace","pattern":{{"String":"\u2581"}},"content":" "}},)"
      R"({{"type":"ByteFallback"}},{{"type":"Fuse"}}{}]}})",
      prefix ? R"(,{"type":"Strip","content":" ","start":1,"stop":0})" : "");
  return fmt::format(
      R"({{"version":"1.0","truncation":null,"padding":null,"added_tokens":[{}],"normalizer":{},)"
      R"("pre_tokenizer":null,"post_processor":{},"decoder":{},)"
      R"("model":{{"type":"BPE","dropout":null,"unk_token":{},"continuing_subword_prefix":null,)"
      R"("end_of_word_suffix":null,"fuse_unk":true,"byte_fallback":{},"ignore_merges":false,)"
      R"("vocab":{{{}}},"merges":[{}]}}}})"
      "\n",
      added, normalizer, special_tokens_template(f, tokens, "null"), decoder,
      unk ? json(tokens[*unk]) : "null", byte_fallback, entries, merge_list);
}

}  // namespace

std::optional<std::string> tokenizer_json_of(const GgufFile& f, std::string& why_not) {
  const std::string* model = text_key(f, "tokenizer.ggml.model");
  const std::optional<Vocabulary> vocab = vocabulary_of(f);
  if (!model || !vocab) {
    why_not = "the file has no tokenizer.ggml.model and tokens";
    return std::nullopt;
  }
  if (*model == "llama") return spm_tokenizer_json(f, *vocab, why_not);
  if (*model != "gpt2") {
    why_not = fmt::format(
        "its vocabulary is {} (tokenizer.ggml.model): only byte-level BPE (gpt2) and "
        "SentencePiece (llama) ones are rebuilt as tokenizer.json",
        json(*model));
    return std::nullopt;
  }
  // No tokenizer.ggml.pre is llama.cpp's "default" pre-tokenizer, whose regex is none of these.
  const std::string* pre = text_key(f, "tokenizer.ggml.pre");
  const std::optional<std::vector<std::string_view>> splits =
      pre ? pre_tokenizer_splits(*pre) : std::nullopt;
  if (!splits) {
    why_not = fmt::format(
        "its pre-tokenizer {} is not one whose regex tlio knows (llama-bpe, qwen2, gpt-4o, "
        "deepseek-v3, gpt-2)",
        pre ? json(*pre) : "(none: llama.cpp's default)");
    return std::nullopt;
  }
  const GgufValue* merges = f.find("tokenizer.ggml.merges");
  if (!merges || merges->element_type != GgufValueType::STRING) {
    why_not = "the file has no tokenizer.ggml.merges";
    return std::nullopt;
  }
  const std::vector<std::string>& tokens = *vocab->tokens;
  const auto [entries, added] = vocab_entries(*vocab);
  std::string merge_list;
  for (const std::string& m : merges->strings)
    merge_list += (merge_list.empty() ? "" : ",") + json(m);
  const std::string byte_level =
      R"({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":)";
  std::string steps;  // each Split, then ByteLevel without its own regex
  for (std::string_view regex : *splits)
    steps += fmt::format(
        R"({{"type":"Split","pattern":{{"Regex":{}}},"behavior":"Isolated","invert":false}},)",
        json(regex));
  const std::string pre_tokenizer =
      splits->empty() ? byte_level + "true}"
                      : fmt::format(R"({{"type":"Sequence","pretokenizers":[{}{}false}}]}})", steps,
                                    byte_level);
  // BOS added by a template when the file says so, as transformers' Llama 3 tokenizer does.
  const std::string post = special_tokens_template(
      f, tokens,
      R"({"type":"ByteLevel","add_prefix_space":true,"trim_offsets":false,"use_regex":true})");
  // llama.cpp takes a pre-token that is a whole token as it is for Llama 3's pre-tokenizer.
  const bool ignore_merges = pre && *pre == "llama-bpe";
  return fmt::format(
      R"({{"version":"1.0","truncation":null,"padding":null,"added_tokens":[{}],"normalizer":null,)"
      R"("pre_tokenizer":{},"post_processor":{},)"
      R"("decoder":{{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true}},)"
      R"("model":{{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,)"
      R"("end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,"ignore_merges":{},)"
      R"("vocab":{{{}}},"merges":[{}]}}}})"
      "\n",
      added, pre_tokenizer, post, ignore_merges, entries, merge_list);
}

std::string tokenizer_config_of(const GgufFile& f, const HfConfig& c) {
  const std::optional<Vocabulary> vocab = vocabulary_of(f);
  const size_t n = vocab ? vocab->tokens->size() : 0;
  std::vector<std::string> keys;
  const std::pair<const char*, const char*> specials[] = {
      {"bos_token", "tokenizer.ggml.bos_token_id"},
      {"eos_token", "tokenizer.ggml.eos_token_id"},
      {"unk_token", "tokenizer.ggml.unknown_token_id"},
      {"pad_token", "tokenizer.ggml.padding_token_id"}};
  for (const auto& [name, key] : specials)
    if (const std::optional<uint64_t> id = token_id(f, key, n))
      keys.push_back(fmt::format("  \"{}\": {}", name, json((*vocab->tokens)[*id])));
  keys.push_back(
      fmt::format("  \"add_bos_token\": {}", bool_key(f, "tokenizer.ggml.add_bos_token", false)));
  keys.push_back(
      fmt::format("  \"add_eos_token\": {}", bool_key(f, "tokenizer.ggml.add_eos_token", false)));
  keys.push_back(fmt::format("  \"model_max_length\": {}", c.context_length));
  keys.push_back("  \"tokenizer_class\": \"PreTrainedTokenizerFast\"");
  keys.push_back("  \"clean_up_tokenization_spaces\": false");
  if (const std::string* chat = text_key(f, "tokenizer.chat_template"))
    keys.push_back(fmt::format("  \"chat_template\": {}", json(*chat)));
  return fmt::format("{{\n{}\n}}\n", fmt::join(keys, ",\n"));
}

}  // namespace tlio::detail
