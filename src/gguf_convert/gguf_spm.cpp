// gguf_convert/gguf_spm.cpp: tokenizer.model read as protobuf (only the fields llama.cpp's
// converter uses), and the "llama" tokenizer keys made from it.
#include "gguf_convert/gguf_spm.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "common/json_doc.hpp"
#include "common/json_text.hpp"
#include "gguf/gguf_writer.hpp"
#include "gguf_convert/gguf_arch.hpp"
#include "gguf_convert/gguf_vocab.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

namespace dom = simdjson::dom;

// llama.cpp's token types.
constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;

// Protobuf's wire format over bytes, every length checked against what is left.
class Wire {
 public:
  Wire(std::span<const std::byte> bytes, const std::string& source)
      : bytes_(bytes), source_(source) {}
  bool done() const noexcept { return at_ == bytes_.size(); }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ == bytes_.size()) fail("a number runs past the end");
      const auto c = static_cast<uint8_t>(bytes_[at_++]);
      v |= uint64_t{c & 0x7Fu} << shift;
      if (!(c & 0x80)) return v;
    }
    fail("a number is longer than 10 bytes");
  }
  std::span<const std::byte> field_bytes() {
    const uint64_t n = varint();
    if (n > bytes_.size() - at_) fail(fmt::format("a field of {} bytes runs past the end", n));
    const std::span<const std::byte> out = bytes_.subspan(at_, n);
    at_ += n;
    return out;
  }
  float fixed32() {
    if (bytes_.size() - at_ < 4) fail("a float runs past the end");
    uint32_t u = 0;
    for (int i = 3; i >= 0; --i)
      u = u << 8 | static_cast<uint8_t>(bytes_[at_ + static_cast<size_t>(i)]);
    at_ += 4;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  void skip(uint64_t wire_type) {
    switch (wire_type) {
      case 0:
        varint();
        return;
      case 1:
        skip_bytes(8);
        return;
      case 2:
        field_bytes();
        return;
      case 5:
        skip_bytes(4);
        return;
      default:
        fail(fmt::format("wire type {} is not protobuf's", wire_type));
    }
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(
        ErrorCode::format, Rule::model, "tokenizer.model", std::nullopt,
        fmt::format("tokenizer.model is not a SentencePiece model: {} (at byte {})", what, at_),
        source_);
  }

 private:
  void skip_bytes(size_t n) {
    if (bytes_.size() - at_ < n) fail("a field runs past the end");
    at_ += n;
  }
  std::span<const std::byte> bytes_;
  size_t at_ = 0;
  const std::string& source_;
};

SentencePiece piece_of(std::span<const std::byte> bytes, const std::string& source) {
  SentencePiece p;
  Wire w(bytes, source);
  while (!w.done()) {
    const uint64_t key = w.varint(), field = key >> 3, type = key & 7;
    if (field == 1 && type == 2) {
      const std::span<const std::byte> text = w.field_bytes();
      p.text.assign(reinterpret_cast<const char*>(text.data()), text.size());
    } else if (field == 2 && type == 5) {
      p.score = w.fixed32();
    } else if (field == 3 && type == 0) {
      p.type = static_cast<int32_t>(std::min<uint64_t>(w.varint(), 1000));
    } else {
      w.skip(type);
    }
  }
  return p;
}

// llama.cpp's converter's does_token_look_special.
bool looks_special(std::string_view t) {
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" ||
         (t.starts_with("<|") && t.ends_with("|>")) ||
         (t.starts_with("<\xEF\xBD\x9C") && t.ends_with("\xEF\xBD\x9C>")) ||
         (t.starts_with("<unused") && t.ends_with(">"));
}

// Every U+2581 (SentencePiece's space) as a space.
std::string spaces_back(std::string_view t) {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.compare(i, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      i += 2;
    } else {
      out += t[i];
    }
  }
  return out;
}

}  // namespace

SentencePieceModel parse_sentencepiece(std::span<const std::byte> bytes,
                                       const std::string& source) {
  SentencePieceModel m;
  Wire w(bytes, source);
  while (!w.done()) {
    const uint64_t key = w.varint(), field = key >> 3, type = key & 7;
    if (field == 1 && type == 2) {  // pieces
      if (m.pieces.size() == kMaxGgufVocabulary)
        w.fail(fmt::format("more than {} pieces", kMaxGgufVocabulary));
      m.pieces.push_back(piece_of(w.field_bytes(), source));
    } else if (field == 3 && type == 2) {  // normalizer_spec: add_dummy_prefix is its field 3
      Wire n(w.field_bytes(), source);
      while (!n.done()) {
        const uint64_t k = n.varint();
        if (k == (3 << 3 | 0))
          m.add_dummy_prefix = n.varint() != 0;
        else
          n.skip(k & 7);
      }
    } else {
      w.skip(type);
    }
  }
  if (m.pieces.empty()) w.fail("no pieces");
  return m;
}

namespace {

// "<0xXX>": a byte piece of byte fallback.
bool is_byte_piece(std::string_view text) {
  return text.size() == 6 && text.starts_with("<0x") && text.ends_with(">") &&
         std::all_of(text.begin() + 3, text.begin() + 5,
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// A normalizer or pre-tokenizer (or a Sequence of them) that puts "▁" before the text.
bool adds_prefix(dom::element e) {
  std::string_view type, prepend, scheme;
  std::ignore = e["type"].get_string().get(type);
  dom::array parts;
  if (type == "Sequence" && (e["normalizers"].get_array().get(parts) == simdjson::SUCCESS ||
                             e["pretokenizers"].get_array().get(parts) == simdjson::SUCCESS))
    return std::any_of(parts.begin(), parts.end(),
                       [](dom::element part) { return adds_prefix(part); });
  if (type == "Prepend")
    return e["prepend"].get_string().get(prepend) == simdjson::SUCCESS && prepend == "\u2581";
  if (type != "Metaspace") return false;
  if (e["prepend_scheme"].get_string().get(scheme) == simdjson::SUCCESS) return scheme != "never";
  bool add = false;
  std::ignore = e["add_prefix_space"].get_bool().get(add);
  return add;
}

}  // namespace

std::optional<SentencePieceModel> sentencepiece_of_tokenizer_json(std::string_view json,
                                                                  const std::string& source,
                                                                  uint64_t vocab_size) {
  const JsonDoc doc(json, source, Rule::model);
  dom::object model;
  std::string_view type, unk;
  bool byte_fallback = false;
  if (doc.root()["model"].get_object().get(model) != simdjson::SUCCESS) return std::nullopt;
  std::ignore = model["type"].get_string().get(type);
  std::ignore = model["byte_fallback"].get_bool().get(byte_fallback);
  if (type != "BPE" || !byte_fallback) return std::nullopt;
  std::ignore = model["unk_token"].get_string().get(unk);
  dom::object vocab;
  dom::array merges;
  if (model["vocab"].get_object().get(vocab) != simdjson::SUCCESS ||
      model["merges"].get_array().get(merges) != simdjson::SUCCESS)
    doc.fail("model", "a BPE model without vocab or merges");
  SentencePieceModel m;
  const auto place = [&](uint64_t id, std::string_view text, int32_t kind) {
    if (id >= vocab_size)
      doc.fail("model", fmt::format("token {} has id {}, past config.json's vocab_size {}",
                                    quote_name(text), id, vocab_size));
    if (id >= m.pieces.size()) m.pieces.resize(id + 1, SentencePiece{"", 0, kUnused});
    m.pieces[id] = {std::string(text), 0, kind};
  };
  for (auto [text, id] : vocab) {
    uint64_t i;
    if (id.get_uint64().get(i) != simdjson::SUCCESS)
      doc.fail("model", "a vocab id is not a whole number");
    place(i, text, text == unk ? kUnknown : is_byte_piece(text) ? kByte : kNormal);
  }
  dom::array added;
  if (doc.root()["added_tokens"].get_array().get(added) == simdjson::SUCCESS)
    for (dom::element a : added) {
      uint64_t id;
      std::string_view content;
      bool special = false;
      if (a["id"].get_uint64().get(id) != simdjson::SUCCESS ||
          a["content"].get_string().get(content) != simdjson::SUCCESS)
        doc.fail("added_tokens", "an added token has no id or content");
      std::ignore = a["special"].get_bool().get(special);
      place(id, content, content == unk ? kUnknown : special ? kControl : kUserDefined);
    }
  for (size_t i = 0; i < m.pieces.size(); ++i)
    if (m.pieces[i].type == kUnused) m.pieces[i].text = fmt::format("[PAD{}]", i);
  std::unordered_map<std::string, size_t> first_rank;  // a merged piece: its first merge
  size_t rank = 0;
  for (dom::element merge : merges) {
    std::string_view s, a, b;
    dom::array pair;
    std::string merged;
    if (merge.get_string().get(s) == simdjson::SUCCESS && s.find(' ') != std::string_view::npos) {
      merged = std::string(s.substr(0, s.find(' '))) + std::string(s.substr(s.find(' ') + 1));
    } else if (merge.get_array().get(pair) == simdjson::SUCCESS && pair.size() == 2 &&
               pair.at(0).get_string().get(a) == simdjson::SUCCESS &&
               pair.at(1).get_string().get(b) == simdjson::SUCCESS) {
      merged = std::string(a) + std::string(b);
    } else {
      doc.fail("model", "a merge is neither \"a b\" nor [\"a\", \"b\"]");
    }
    first_rank.try_emplace(std::move(merged), rank++);
  }
  for (SentencePiece& p : m.pieces)
    if (p.type == kNormal)
      if (const auto r = first_rank.find(p.text); r != first_rank.end())
        p.score = -static_cast<float>(r->second);
  dom::element normalizer, pre;
  m.add_dummy_prefix =
      (doc.root()["normalizer"].get(normalizer) == simdjson::SUCCESS && adds_prefix(normalizer)) ||
      (doc.root()["pre_tokenizer"].get(pre) == simdjson::SUCCESS && adds_prefix(pre));
  if (m.pieces.empty()) doc.fail("model", "no pieces");
  return m;
}

std::vector<GgufKeyValue> gguf_spm_tokenizer(const SentencePieceModel& model,
                                             const std::string& source,
                                             const std::optional<std::string>& tokenizer_config,
                                             const HfConfig& c, bool named_unknown) {
  const uint64_t n = c.vocab_size;
  std::vector<std::string> tokens(n);
  std::vector<float> scores(n, -10000.0f);
  std::vector<int32_t> types(n, kUnused);
  for (uint64_t i = 0; i < n; ++i) tokens[i] = fmt::format("[PAD{}]", i);
  for (size_t i = 0; i < model.pieces.size() && i < n; ++i) {
    const SentencePiece& p = model.pieces[i];
    tokens[i] = p.text;
    scores[i] = p.score;
    // Unknown, control, unused and byte pieces keep their type; user-defined ones read as normal.
    types[i] = p.type >= 2 && p.type <= 6 && p.type != kUserDefined ? p.type : kNormal;
  }
  if (tokenizer_config) {  // added tokens first: the special tokens are found among them
    const JsonDoc tc(*tokenizer_config, "tokenizer_config.json", Rule::model);
    dom::object added;
    if (tc.root()["added_tokens_decoder"].get_object().get(added) == simdjson::SUCCESS)
      for (auto [key, token] : added) {
        uint64_t id = 0;
        const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
        std::string_view content;
        if (ec != std::errc() || end != key.data() + key.size() ||
            token["content"].get_string().get(content) != simdjson::SUCCESS)
          tc.fail("added_tokens_decoder",
                  fmt::format("added token {} has no content or its id is not a number",
                              quote_name(key)));
        if (id >= n) continue;  // past vocab_size: left out, as llama.cpp's converter does
        bool special = false;
        std::ignore = token["special"].get_bool().get(special);
        const bool control = special || looks_special(content);
        tokens[id] = control ? std::string(content) : spaces_back(content);
        types[id] = control ? kControl : kUserDefined;
        scores[id] = -1000.0f;
      }
  }
  SpecialTokens s = special_tokens(tokenizer_config, tokens, c);
  if (!s.unk) {  // the vocabulary's own unknown piece
    const auto unknown = std::find(types.begin(), types.end(), kUnknown);
    if (unknown != types.end()) s.unk = static_cast<uint64_t>(unknown - types.begin());
  }
  std::unordered_set<std::string_view> seen;
  for (const std::string& t : tokens)
    if (!seen.insert(t).second)
      throw Error(ErrorCode::format, Rule::model, "tokenizer.model", std::nullopt,
                  fmt::format("token {} appears twice (llama.cpp needs each once)", quote_name(t)),
                  source);
  const std::pair<const char*, std::optional<uint64_t>> ids[] = {{"bos_token_id", s.bos},
                                                                 {"eos_token_id", s.eos},
                                                                 {"unknown_token_id", s.unk},
                                                                 {"padding_token_id", s.pad}};
  std::vector<GgufKeyValue> kv = {
      {"tokenizer.ggml.model", gguf_string("llama")},
      {"tokenizer.ggml.pre", gguf_string("default")},
      {"tokenizer.ggml.tokens", gguf_strings(std::move(tokens))},
      {"tokenizer.ggml.scores", gguf_f32s(scores)},
      {"tokenizer.ggml.token_type", gguf_i32s(types)},
  };
  for (const auto& [key, id] : ids) {
    if (!id || (!named_unknown && std::string_view(key) == "unknown_token_id" && *id == 0))
      continue;
    if (*id >= n)
      throw Error(ErrorCode::format, Rule::model, key, std::nullopt,
                  fmt::format("{} {} is past config.json's vocab_size {}", key, *id, n), source);
    kv.push_back({fmt::format("tokenizer.ggml.{}", key), gguf_u32(static_cast<uint32_t>(*id))});
  }
  kv.push_back({"tokenizer.ggml.add_bos_token", gguf_bool(s.add_bos.value_or(true))});
  if (s.add_eos) kv.push_back({"tokenizer.ggml.add_eos_token", gguf_bool(*s.add_eos)});
  if (!model.add_dummy_prefix || gguf_arch_for(c.hf_class).no_space_prefix)
    kv.push_back({"tokenizer.ggml.add_space_prefix", gguf_bool(false)});
  if (s.chat_template) kv.push_back({"tokenizer.chat_template", gguf_string(*s.chat_template)});
  return kv;
}

}  // namespace tlio::detail
