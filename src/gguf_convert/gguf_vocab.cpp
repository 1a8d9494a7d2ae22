// gguf_convert/gguf_vocab.cpp: tokenizer.json to llama.cpp's tokenizer keys, as
// convert_hf_to_gguf.py's get_vocab_base builds them for byte-level BPE.
#include "gguf_convert/gguf_vocab.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <tuple>
#include <unordered_set>

#include "common/json_doc.hpp"
#include "common/json_text.hpp"
#include "gguf/gguf_writer.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

namespace dom = simdjson::dom;

// llama.cpp's token types.
constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;

// The pre-tokenizers llama.cpp names, by their Split regexes in order (tokenizer.json's
// pre_tokenizer; llama-vocab.cpp's names).
struct KnownPre {
  std::array<std::string_view, 3> splits;  ///< the Split regexes in order ("" past the last)
  std::string_view name;
};
constexpr KnownPre kKnownPre[] = {
    {{R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
     "llama-bpe"},
    {{R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
     "qwen2"},
    // tiktoken's o200k (gpt-oss)
    {{R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
     "gpt-4o"},
    // DeepSeek-V3's (and R1's): digits, CJK, then the rest, three Splits (CR and LF themselves)
    {{"\\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}"
      "\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},
     "deepseek-v3"},
};

std::string_view text_of(dom::element e) {
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) return s;
  dom::object o;
  if (e.get_object().get(o) == simdjson::SUCCESS &&
      o["content"].get_string().get(s) == simdjson::SUCCESS)
    return s;
  return {};
}

// The name llama.cpp knows the pre-tokenizer by.
std::string pre_tokenizer_name(const JsonDoc& doc, const std::string& source) {
  const auto pre = doc.root()["pre_tokenizer"];
  if (pre.error() || pre.is_null())
    doc.fail("pre_tokenizer", "tokenizer.json has no pre_tokenizer");
  std::string_view type;
  std::ignore = pre["type"].get_string().get(type);
  std::vector<dom::element> steps;
  dom::array list;
  if (type == "Sequence" && pre["pretokenizers"].get_array().get(list) == simdjson::SUCCESS)
    steps.assign(list.begin(), list.end());
  else
    steps.push_back(pre.value_unsafe());
  std::vector<std::string_view> splits;
  bool byte_level_regex = false;
  for (dom::element step : steps) {
    std::string_view kind, pattern;
    std::ignore = step["type"].get_string().get(kind);
    if (kind == "Split" && step["pattern"]["Regex"].get_string().get(pattern) == simdjson::SUCCESS)
      splits.push_back(pattern);
    bool use_regex = false;
    if (kind == "ByteLevel" && step["use_regex"].get_bool().get(use_regex) == simdjson::SUCCESS &&
        use_regex)
      byte_level_regex = true;
  }
  if (splits.empty() && byte_level_regex) return "gpt-2";
  for (const KnownPre& k : kKnownPre) {
    const auto own = std::find(k.splits.begin(), k.splits.end(), std::string_view{});
    if (std::equal(splits.begin(), splits.end(), k.splits.begin(), own)) return std::string(k.name);
  }
  std::vector<std::string_view> known{"gpt-2"};
  for (const KnownPre& k : kKnownPre) known.push_back(k.name);
  throw Error(
      ErrorCode::unsupported, Rule::none, "pre_tokenizer", std::nullopt,
      fmt::format(
          "the pre-tokenizer (Split regex {}) is not one llama.cpp names that tlio knows ({}); "
          "it is not guessed",
          quote_name(fmt::format("{}", fmt::join(splits, " then "))), fmt::join(known, ", ")),
      source);
}

// Whether the post-processor's single-sequence template starts with the special token `first`
// (transformers then adds it: BOS), the template alone or inside a Sequence (Llama 3's).
bool template_starts_with(dom::element processor, std::string_view first) {
  std::string_view type, id;
  if (processor["type"].get_string().get(type) != simdjson::SUCCESS) return false;
  if (type == "TemplateProcessing")
    return processor["single"].at(0)["SpecialToken"]["id"].get_string().get(id) ==
               simdjson::SUCCESS &&
           id == first;
  dom::array steps;
  if (type != "Sequence" || processor["processors"].get_array().get(steps) != simdjson::SUCCESS)
    return false;
  for (dom::element step : steps)
    if (template_starts_with(step, first)) return true;
  return false;
}

}  // namespace

std::vector<GgufKeyValue> gguf_tokenizer(std::string_view tokenizer_json, const std::string& source,
                                         const std::optional<std::string>& tokenizer_config,
                                         const HfConfig& c) {
  const JsonDoc doc(tokenizer_json, source, Rule::model);
  dom::object model;
  if (doc.root()["model"].get_object().get(model) != simdjson::SUCCESS)
    doc.fail("model", "tokenizer.json has no model");
  std::string_view type;
  std::ignore = model["type"].get_string().get(type);
  bool byte_fallback = false;
  std::ignore = model["byte_fallback"].get_bool().get(byte_fallback);
  if (type != "BPE" || byte_fallback)  // BPE with byte fallback: gguf_spm's, from the same file
    throw Error(
        ErrorCode::unsupported, Rule::none, "model", std::nullopt,
        fmt::format(
            "the tokenizer model is {}{}: tlio exports byte-level BPE vocabularies (\"gpt2\") "
            "and SentencePiece ones (\"llama\": tokenizer.model, or tokenizer.json's BPE with byte "
            "fallback)",
            type.empty() ? "(none)" : type, byte_fallback ? " with byte fallback" : ""),
        source);

  const uint64_t n = c.vocab_size;
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n, kUnused);
  std::vector<bool> set(n, false);
  const auto place = [&](uint64_t id, std::string_view text, int32_t kind) {
    if (id >= n)
      doc.fail("model", fmt::format("token {} has id {}, past config.json's vocab_size {}",
                                    quote_name(text), id, n));
    tokens[id] = std::string(text);
    types[id] = kind;
    set[id] = true;
  };
  dom::object vocab;
  if (model["vocab"].get_object().get(vocab) != simdjson::SUCCESS)
    doc.fail("model", "tokenizer.json's model has no vocab");
  for (auto [text, id] : vocab) {
    uint64_t i;
    if (id.get_uint64().get(i) != simdjson::SUCCESS)
      doc.fail("model", "a vocab id is not a whole number");
    place(i, text, kNormal);
  }
  dom::array added;
  if (doc.root()["added_tokens"].get_array().get(added) == simdjson::SUCCESS)
    for (dom::element t : added) {
      uint64_t id;
      std::string_view content;
      bool special = false;
      if (t["id"].get_uint64().get(id) != simdjson::SUCCESS ||
          t["content"].get_string().get(content) != simdjson::SUCCESS)
        doc.fail("added_tokens", "an added token has no id or content");
      std::ignore = t["special"].get_bool().get(special);
      place(id, content, special ? kControl : kUserDefined);
    }
  std::unordered_set<std::string_view> seen;
  for (uint64_t i = 0; i < n; ++i) {
    if (!set[i]) tokens[i] = fmt::format("[PAD{}]", i);
    if (!seen.insert(tokens[i]).second)
      doc.fail("model", fmt::format("token {} appears twice (llama.cpp needs each once)",
                                    quote_name(tokens[i])));
  }
  std::vector<std::string> merges;
  dom::array merge_list;
  if (model["merges"].get_array().get(merge_list) != simdjson::SUCCESS)
    doc.fail("model", "a BPE model without merges");
  for (dom::element m : merge_list) {
    std::string_view s;
    dom::array pair;
    if (m.get_string().get(s) == simdjson::SUCCESS) {
      merges.emplace_back(s);
    } else if (m.get_array().get(pair) == simdjson::SUCCESS && pair.size() == 2) {
      std::string_view a, b;
      if (pair.at(0).get_string().get(a) != simdjson::SUCCESS ||
          pair.at(1).get_string().get(b) != simdjson::SUCCESS)
        doc.fail("model", "a merge pair is not two strings");
      merges.push_back(fmt::format("{} {}", a, b));
    } else {
      doc.fail("model", "a merge is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }

  std::vector<GgufKeyValue> kv = {
      {"tokenizer.ggml.model", gguf_string("gpt2")},
      {"tokenizer.ggml.pre", gguf_string(pre_tokenizer_name(doc, source))},
      {"tokenizer.ggml.tokens", gguf_strings(tokens)},
      {"tokenizer.ggml.token_type", gguf_i32s(types)},
      {"tokenizer.ggml.merges", gguf_strings(std::move(merges))},
  };
  const SpecialTokens s = special_tokens(tokenizer_config, tokens, c);
  const std::optional<uint64_t> bos = s.bos, eos = s.eos, pad = s.pad;
  std::optional<bool> add_bos = s.add_bos;
  const std::optional<bool> add_eos = s.add_eos;
  const std::optional<std::string>& chat_template = s.chat_template;
  const std::pair<const char*, std::optional<uint64_t>> ids[] = {
      {"bos_token_id", bos}, {"eos_token_id", eos}, {"pad_token_id", pad}};
  for (const auto& [key, id] : ids)
    if (id && *id >= n)
      doc.fail("model", fmt::format("{} {} is past config.json's vocab_size {}", key, *id, n));
  dom::element post_processor;
  if (!add_bos)
    add_bos = bos && doc.root()["post_processor"].get(post_processor) == simdjson::SUCCESS &&
              template_starts_with(post_processor, tokens[*bos]);
  if (bos) kv.push_back({"tokenizer.ggml.bos_token_id", gguf_u32(static_cast<uint32_t>(*bos))});
  if (eos) kv.push_back({"tokenizer.ggml.eos_token_id", gguf_u32(static_cast<uint32_t>(*eos))});
  if (pad) kv.push_back({"tokenizer.ggml.padding_token_id", gguf_u32(static_cast<uint32_t>(*pad))});
  kv.push_back({"tokenizer.ggml.add_bos_token", gguf_bool(*add_bos)});
  if (add_eos) kv.push_back({"tokenizer.ggml.add_eos_token", gguf_bool(*add_eos)});
  if (chat_template) kv.push_back({"tokenizer.chat_template", gguf_string(*chat_template)});
  return kv;
}

SpecialTokens special_tokens(const std::optional<std::string>& tokenizer_config,
                             const std::vector<std::string>& tokens, const HfConfig& c) {
  SpecialTokens s{c.bos_token_id, c.eos_token_id, std::nullopt, std::nullopt,
                  std::nullopt,   std::nullopt,   std::nullopt};
  if (!tokenizer_config) return s;
  const JsonDoc tc(*tokenizer_config, "tokenizer_config.json", Rule::model);
  // An unknown token outside the vocabulary is left out (byte-level BPE needs none;
  // gguf_spm_tokenizer takes a SentencePiece vocabulary's own unknown piece).
  const auto id_of = [&](const char* key, bool required) -> std::optional<uint64_t> {
    const auto e = tc.root()[key];
    if (e.error() || e.is_null()) return std::nullopt;
    const std::string_view text = text_of(e.value_unsafe());
    for (uint64_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] == text) return i;
    if (!required) return std::nullopt;
    tc.fail(key, fmt::format("{} {} is not in the vocabulary", key, quote_name(text)));
  };
  if (auto id = id_of("bos_token", true)) s.bos = id;
  if (auto id = id_of("eos_token", true)) s.eos = id;
  s.unk = id_of("unk_token", false);
  s.pad = id_of("pad_token", true);
  s.add_bos = tc.optional_bool("add_bos_token");
  s.add_eos = tc.optional_bool("add_eos_token");
  s.chat_template = tc.optional_string("chat_template");
  return s;
}

std::optional<std::vector<std::string_view>> pre_tokenizer_splits(std::string_view name) {
  if (name == "gpt-2") return std::vector<std::string_view>{};
  for (const KnownPre& k : kKnownPre)
    if (k.name == name) {
      std::vector<std::string_view> out;
      for (std::string_view split : k.splits)
        if (!split.empty()) out.push_back(split);
      return out;
    }
  return std::nullopt;
}

}  // namespace tlio::detail
