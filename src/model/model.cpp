// model/model.cpp: config.json, opening a model directory (its weights through model/layout),
// architecture checks.
#include "tlio/model.hpp"

#include <fmt/core.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <set>

#include "common/json_text.hpp"
#include "io/os_file.hpp"
#include "model/layout.hpp"
#include "model/location.hpp"
#include "model/shard_index.hpp"
#include "quant/tensor_set.hpp"
#include "tlio/error.hpp"

namespace tlio {

using detail::quote_name;
namespace dom = simdjson::dom;

namespace {

using detail::kConfigFile;
using detail::kShardIndexFile;
constexpr const char* kTokenizer = "tokenizer.json";

}  // namespace

ModelConfig parse_model_config(std::string_view json, const std::string& source) {
  detail::JsonDoc doc(json, source, Rule::model);
  ModelConfig c;
  auto tl_arch = doc.optional_string("tl_arch");
  auto model_type = doc.optional_string("model_type");
  c.course = tl_arch.has_value();
  if (tl_arch)
    c.arch = *tl_arch;
  else if (model_type)
    c.arch = *model_type;
  else
    doc.fail({}, "config.json names no architecture (tl_arch or model_type)");
  if (c.course) {
    c.tokenizer = doc.optional_string("tl_tokenizer").value_or("bytes");
    if (c.tokenizer != "bytes" && c.tokenizer != "file")
      doc.fail("tl_tokenizer", fmt::format("tl_tokenizer is {}; expected \"bytes\" or \"file\"",
                                           quote_name(c.tokenizer)));
  }
  // Architectures tlio checks need vocab_size; others may keep it elsewhere (a vision-language
  // model's text_config), so it is read when present.
  const bool checked = c.course || c.arch == "llama" || c.arch == "bigram";
  c.vocab_size =
      checked ? doc.required_uint("vocab_size") : doc.optional_uint("vocab_size").value_or(0);
  if (c.course && c.tokenizer == "bytes" && c.vocab_size != 256)
    doc.fail("vocab_size",
             fmt::format("vocab_size is {}; the bytes tokenizer has 256", c.vocab_size));
  if (c.arch == "llama") {
    c.hidden_size = doc.required_uint("hidden_size");
    c.intermediate_size = doc.required_uint("intermediate_size");
    c.num_hidden_layers = doc.required_uint("num_hidden_layers");
    c.num_attention_heads = doc.required_uint("num_attention_heads");
    if (c.num_attention_heads == 0) doc.fail("num_attention_heads", "num_attention_heads is 0");
    c.num_key_value_heads =
        doc.optional_uint("num_key_value_heads").value_or(c.num_attention_heads);
    if (c.num_key_value_heads == 0 || c.num_attention_heads % c.num_key_value_heads)
      doc.fail("num_key_value_heads",
               fmt::format("num_key_value_heads {} does not divide num_attention_heads {}",
                           c.num_key_value_heads, c.num_attention_heads));
    auto head_dim = doc.optional_uint("head_dim");
    if (!head_dim && c.hidden_size % c.num_attention_heads)
      doc.fail("hidden_size",
               fmt::format("hidden_size {} is not a multiple of num_attention_heads {}",
                           c.hidden_size, c.num_attention_heads));
    c.head_dim = head_dim.value_or(c.hidden_size / c.num_attention_heads);
    c.tie_word_embeddings = doc.optional_bool("tie_word_embeddings").value_or(false);
  }
  return c;
}

Model Model::open(const std::filesystem::path& dir, OpenOptions options) {
  Model m;
  m.dir_ = dir.string();
  const detail::ModelLocation where(detail::Location::parse(dir.native()), options);
  const std::string& dir_name = where.name();
  m.name_ = dir_name;
  where.check_directory();
  m.config_name_ = where.name_of(kConfigFile);
  const std::string& config_name = m.config_name_;
  // A folder of weights without config.json (a shard set with its index) is a model with no
  // architecture: read as any other, checked by its index only.
  const std::optional<std::string> config = where.read_text(kConfigFile);
  if (config) {
    m.config_ = parse_model_config(*config, config_name);
    m.config_json_ = *config;
  }

  // Tokenizer rule (course directories only).
  if (m.config_.course) {
    const bool has_file = where.exists(kTokenizer);
    if (m.config_.tokenizer == "file" && !has_file)
      throw Error(ErrorCode::format, Rule::model, kTokenizer, std::nullopt,
                  "tl_tokenizer is \"file\" but tokenizer.json is missing", config_name);
    if (m.config_.tokenizer == "bytes" && has_file)
      throw Error(ErrorCode::format, Rule::model, kTokenizer, std::nullopt,
                  "tokenizer.json is present but tl_tokenizer is \"bytes\"", config_name);
  }

  const std::string index_name = where.name_of(kShardIndexFile);
  detail::WeightFiles weights;
  try {
    weights = detail::open_weights(where);
  } catch (const Error& e) {
    if (config || e.code() != ErrorCode::io || e.os_error() != std::errc::no_such_file_or_directory)
      throw;
    throw Error(ErrorCode::format, Rule::model, kConfigFile, std::nullopt,
                fmt::format("not a model directory: it has no {}, {} or {}", kConfigFile,
                            detail::kSingleWeightsFile, detail::kShardIndexFile),
                dir_name);
  }
  m.sharded_ = weights.sharded;
  m.file_names_ = std::move(weights.names);
  m.files_ = std::move(weights.files);
  for (size_t f = 0; f < m.files_.size(); ++f)
    for (const TensorInfo& t : m.files_[f].tensors()) m.index_.push_back({t.name, {&t, f}});
  std::sort(m.index_.begin(), m.index_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < m.index_.size(); ++i)
    if (m.index_[i].first == m.index_[i - 1].first)
      throw Error(ErrorCode::format, Rule::index, std::string(m.index_[i].first), std::nullopt,
                  fmt::format("tensor {} is stored in {} and in {}", quote_name(m.index_[i].first),
                              m.file_names_[m.index_[i - 1].second.file],
                              m.file_names_[m.index_[i].second.file]),
                  index_name);
  // Quantized weights are found across shards: a sharder may put a weight's parts (a bnb
  // quant_state, int4 scales) in another file than the weight.
  std::vector<const File*> shards;
  for (const File& f : m.files_) shards.push_back(&f);
  try {
    detail::TensorSet set(shards);
    m.quantization_config_ = detail::read_quantization_config(where, m.files_, config);
    set.set_quantization_config(m.quantization_config_);
    m.quantized_ = detail::find_quantized_weights(set);
  } catch (const Error& e) {
    const ModelTensor* t = m.find(e.tensor());
    Error named = e.with_source(t ? m.files_[t->file].name() : dir_name);
    if (e.code() != ErrorCode::unsupported || e.rule() != Rule::quant) throw named;
    m.undecoded_.emplace(std::move(named));  // thrown by quantized()
  }
  return m;
}

const std::vector<QuantizedWeight>& Model::quantized() const {
  if (undecoded_) throw *undecoded_;
  return quantized_;
}

bool is_model_directory(const std::filesystem::path& path, const OpenOptions& options) {
  return detail::is_model_directory(detail::Location::parse(path.native()), options);
}

std::vector<std::string_view> Model::tensor_names() const {
  std::vector<std::string_view> names;
  for (const auto& [name, t] : index_) names.push_back(name);
  return names;
}

const ModelTensor* Model::find(std::string_view name) const noexcept {
  auto it = std::lower_bound(index_.begin(), index_.end(), name,
                             [](const auto& e, std::string_view n) { return e.first < n; });
  return it != index_.end() && it->first == name ? &it->second : nullptr;
}

TensorView Model::view(std::string_view name) const {
  const ModelTensor* t = find(name);
  if (!t)
    throw Error(ErrorCode::not_found, Rule::none, std::string(name), std::nullopt,
                fmt::format("no tensor named {}", quote_name(name)), name_);
  return files_[t->file].view(name);
}

void Model::check() const {
  const std::string& source = config_name_;
  auto fail = [&](const std::string& tensor, std::string detail) {
    throw Error(ErrorCode::format, Rule::model, tensor, std::nullopt, std::move(detail), name_);
  };
  // A form tlio does not decode has no logical weights to check against the architecture.
  if (undecoded_) return;
  // Logical tensors: stored ones, with quantized pairs replaced by their logical weight.
  std::vector<std::pair<std::string, Shape>> logical;
  std::set<std::string> stored_parts;
  for (const QuantizedWeight& q : quantized_) {
    logical.emplace_back(q.name, q.shape);
    for (const auto& s : q.stored) stored_parts.insert(s);
  }
  for (const auto& [name, t] : index_)
    if (!stored_parts.count(std::string(name)))
      logical.emplace_back(std::string(name), t.info->shape);
  std::sort(logical.begin(), logical.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });

  std::vector<std::pair<std::string, Shape>> expected;
  const ModelConfig& c = config_;
  if (c.arch == "bigram") {
    expected.push_back({"bigram.weight", Shape{c.vocab_size, c.vocab_size}});
    const ModelTensor* w = find("bigram.weight");
    if (w && w->info->dtype != Dtype::F32)
      fail("bigram.weight", fmt::format("bigram.weight is {}; the bigram model stores F32",
                                        dtype_name(w->info->dtype)));
  } else if (c.arch == "llama") {
    const uint64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim,
                   kv = c.num_key_value_heads * c.head_dim, inter = c.intermediate_size;
    expected.push_back({"model.embed_tokens.weight", Shape{c.vocab_size, h}});
    expected.push_back({"model.norm.weight", Shape{h}});
    if (!c.tie_word_embeddings) expected.push_back({"lm_head.weight", Shape{c.vocab_size, h}});
    for (uint64_t i = 0; i < c.num_hidden_layers; ++i) {
      const std::string p = fmt::format("model.layers.{}.", i);
      expected.push_back({p + "self_attn.q_proj.weight", Shape{q, h}});
      expected.push_back({p + "self_attn.k_proj.weight", Shape{kv, h}});
      expected.push_back({p + "self_attn.v_proj.weight", Shape{kv, h}});
      expected.push_back({p + "self_attn.o_proj.weight", Shape{h, q}});
      expected.push_back({p + "mlp.gate_proj.weight", Shape{inter, h}});
      expected.push_back({p + "mlp.up_proj.weight", Shape{inter, h}});
      expected.push_back({p + "mlp.down_proj.weight", Shape{h, inter}});
      expected.push_back({p + "input_layernorm.weight", Shape{h}});
      expected.push_back({p + "post_attention_layernorm.weight", Shape{h}});
    }
  } else {
    return;  // an architecture tlio does not know: the files were checked, nothing more
  }
  std::sort(expected.begin(), expected.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [name, shape] : expected) {
    auto it = std::lower_bound(logical.begin(), logical.end(), name,
                               [](const auto& e, const std::string& n) { return e.first < n; });
    if (it == logical.end() || it->first != name)
      fail(name, fmt::format("{} model lacks tensor {}", c.arch, quote_name(name)));
    if (!(it->second == shape))
      fail(name, fmt::format("tensor {} has shape [{}], expected [{}] from {}", quote_name(name),
                             fmt::join(it->second, ", "), fmt::join(shape, ", "), source));
  }
  for (const auto& [name, shape] : logical) {
    auto it = std::lower_bound(expected.begin(), expected.end(), name,
                               [](const auto& e, const std::string& n) { return e.first < n; });
    if (it == expected.end() || it->first != name)
      fail(name, fmt::format("unexpected tensor {} in a {} model{}", quote_name(name), c.arch,
                             c.arch == "llama" && name == "lm_head.weight"
                                 ? " (tie_word_embeddings is true)"
                                 : ""));
  }
}

}  // namespace tlio
