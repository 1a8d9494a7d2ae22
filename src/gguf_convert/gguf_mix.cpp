// gguf_convert/gguf_mix.cpp: llama-quantize's type choice for the architectures tlio exports
// (no Falcon rules; a fused attn_qkv counts as attn_v, as in llama.cpp), without
// an importance matrix, as the llama.cpp of npm's @node-llama-cpp/linux-x64 (the tests' oracle)
// chooses them. Tensors are told apart by their GGUF names as llama.cpp does (the first kind whose
// name matches, in its order).
#include "gguf_convert/gguf_mix.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "gguf/ggml_blocks.hpp"
#include "gguf_convert/gguf_arch.hpp"
#include "tlio/error.hpp"
#include "tlio/ggml.hpp"
#include "tlio/gguf_convert.hpp"

namespace tlio::detail {

namespace {

// ggml type ids, as the mix rules name them.
constexpr uint32_t kF16 = ggml_id(GgmlTypeId::F16), kQ4_0 = ggml_id(GgmlTypeId::Q4_0),
                   kQ5_0 = ggml_id(GgmlTypeId::Q5_0), kQ5_1 = ggml_id(GgmlTypeId::Q5_1),
                   kQ8_0 = ggml_id(GgmlTypeId::Q8_0), kQ2_K = ggml_id(GgmlTypeId::Q2_K),
                   kQ3_K = ggml_id(GgmlTypeId::Q3_K), kQ4_K = ggml_id(GgmlTypeId::Q4_K),
                   kQ5_K = ggml_id(GgmlTypeId::Q5_K), kQ6_K = ggml_id(GgmlTypeId::Q6_K);

constexpr uint32_t kQ4_1 = ggml_id(GgmlTypeId::Q4_1);

// llama-quantize's file types (llama_ftype) of the types tlio encodes, in its list's order.
constexpr std::array kMixes = {
    GgufMix{"Q4_0", 2, kQ4_0},    GgufMix{"Q4_1", 3, kQ4_1},    GgufMix{"Q5_0", 8, kQ5_0},
    GgufMix{"Q5_1", 9, kQ5_1},    GgufMix{"Q2_K", 10, kQ2_K},   GgufMix{"Q3_K_S", 11, kQ3_K},
    GgufMix{"Q3_K_M", 12, kQ3_K}, GgufMix{"Q3_K_L", 13, kQ3_K}, GgufMix{"Q4_K_S", 14, kQ4_K},
    GgufMix{"Q4_K_M", 15, kQ4_K}, GgufMix{"Q5_K_S", 16, kQ5_K}, GgufMix{"Q5_K_M", 17, kQ5_K},
    GgufMix{"Q6_K", 18, kQ6_K},   GgufMix{"Q8_0", 7, kQ8_0},
};
// llama-quantize's other names for three of them.
constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
    {"Q3_K", "Q3_K_M"}, {"Q4_K", "Q4_K_M"}, {"Q5_K", "Q5_K_M"}};

enum class Kind { output, token_embd, attn_v, attn_k, attn_output, ffn_down, other };

Kind kind_of(std::string_view name) {
  if (name == "output.weight") return Kind::output;
  if (name == "token_embd.weight") return Kind::token_embd;
  const auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  if (counts_as_attn_v(name)) return Kind::attn_v;
  if (has("attn_k.weight")) return Kind::attn_k;
  if (has("attn_q.weight")) return Kind::other;
  if (has("attn_output.weight")) return Kind::attn_output;
  if (has("ffn_up") || has("ffn_gate")) return Kind::other;
  if (has("ffn_down")) return Kind::ffn_down;
  return Kind::other;
}

// llama.cpp's choice of layers that get more bits: the first and last eighths, every third between.
bool more_bits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

uint32_t block_of(uint32_t type) { return ggml_type(type)->block; }

}  // namespace

std::optional<int64_t> gguf_layer_of(std::string_view name) noexcept {
  int64_t layer = 0;
  if (!name.starts_with("blk.")) return std::nullopt;
  const auto [end, ec] = std::from_chars(name.data() + 4, name.data() + name.size(), layer);
  if (ec != std::errc{}) return std::nullopt;
  return layer;
}

bool counts_as_attn_v(std::string_view name) noexcept {
  return name.find("attn_qkv.weight") != std::string_view::npos ||
         name.find("attn_kv_b.weight") != std::string_view::npos ||
         name.find("attn_v.weight") != std::string_view::npos;
}

void MixModel::count(std::string_view name) noexcept {
  value_layers += counts_as_attn_v(name);
  tied &= name != "output.weight";
}

uint32_t gguf_weight_type(const AskedTypes& asked, const MixModel& model, std::string_view name,
                          uint64_t row_values, std::vector<std::string>& fallbacks) {
  const uint32_t want =
      asked.mix && !asked.pure ? gguf_mix_type(*asked.mix, model, name, row_values) : asked.base.id;
  const uint32_t type = gguf_row_fallback(want, row_values);
  if (type != want)
    fallbacks.push_back(fmt::format("{}: {} -> {} (rows of {})", name, ggml_type(want)->name,
                                    ggml_type(type)->name, row_values));
  return type;
}

std::span<const GgufMix> gguf_mixes() noexcept { return kMixes; }

std::optional<GgufMix> gguf_mix_named(std::string_view name) noexcept {
  const auto same = [](std::string_view x, std::string_view y) {
    return std::ranges::equal(x, y, [](char a, char b) {
      return std::toupper(static_cast<unsigned char>(a)) ==
             std::toupper(static_cast<unsigned char>(b));
    });
  };
  for (const auto& [alias, mix] : kAliases)
    if (same(alias, name)) name = mix;
  for (const GgufMix& m : kMixes)
    if (same(m.name, name)) return m;
  return std::nullopt;
}

// llama_tensor_get_type_impl's rules for the file types above, in its order.
uint32_t gguf_mix_type(const GgufMix& mix, const MixModel& model, std::string_view name,
                       uint64_t row_values) {
  const std::string_view m = mix.name;
  const Kind kind = kind_of(name);
  const int64_t layer = gguf_layer_of(name).value_or(0);  // outside the blocks: no layer rule
  const bool eight_experts = model.experts == 8;
  uint32_t type = mix.base;
  if (kind == Kind::output || (kind == Kind::token_embd && model.tied)) {
    if (row_values % block_of(mix.base) != 0) return kQ8_0;
    return mix.base == kQ8_0 ? kQ8_0 : kQ6_K;
  }
  if (kind == Kind::attn_v) {
    const auto n = static_cast<int64_t>(model.value_layers);
    if (m == "Q2_K")
      type = model.gqa >= 4 ? kQ4_K : kQ3_K;
    else if (m == "Q3_K_M")
      type = layer < 2 ? kQ5_K : kQ4_K;
    else if (m == "Q3_K_L")
      type = kQ5_K;
    else if ((m == "Q4_K_M" || m == "Q5_K_M") && more_bits(layer, n))
      type = kQ6_K;
    else if (m == "Q4_K_S" && layer < 4)
      type = kQ5_K;
    if (model.is_70b && (type == kQ3_K || type == kQ4_K)) type = kQ5_K;
    if (eight_experts) type = kQ8_0;
  } else if (kind == Kind::attn_k) {
    if (eight_experts) type = kQ8_0;
  } else if (kind == Kind::ffn_down) {
    const auto n = static_cast<int64_t>(model.layers);
    if (m == "Q2_K")
      type = kQ3_K;
    else if (m == "Q3_K_M")
      type = layer < n / 16 ? kQ5_K : kQ4_K;
    else if (m == "Q3_K_L")
      type = kQ5_K;
    else if ((m == "Q4_K_M" || m == "Q5_K_M") && more_bits(layer, n))
      type = kQ6_K;
    else if (m == "Q4_K_S" && layer < n / 8)
      type = kQ5_K;
  } else if (kind == Kind::attn_output) {
    if (eight_experts) {
      if (m == "Q2_K" || m == "Q3_K_S" || m == "Q3_K_M" || m == "Q4_K_S" || m == "Q4_K_M")
        type = kQ5_K;
    } else if (m == "Q2_K") {
      type = kQ3_K;
    } else if (m == "Q3_K_M") {
      type = kQ4_K;
    } else if (m == "Q3_K_L") {
      type = kQ5_K;
    }
  }
  return type;
}

uint32_t gguf_row_fallback(uint32_t type, uint64_t row_values) {
  if (row_values % block_of(type) == 0) return type;
  uint32_t fallback = kF16;
  switch (type) {
    case kQ2_K:
    case kQ3_K:
      fallback = kQ4_0;
      break;
    case kQ4_K:
      fallback = kQ5_0;
      break;
    case kQ5_K:
      fallback = kQ5_1;
      break;
    case kQ6_K:
      fallback = kQ8_0;
      break;
    default:
      break;
  }
  return row_values % block_of(fallback) == 0 ? fallback : kF16;
}

std::optional<uint32_t> file_type_of(const GgmlType& t) {
  const GgmlRow* row = ggml_row(t.id);
  if (!row || row->file_type == GgmlRow::kNoFileType) return std::nullopt;
  return row->file_type;
}

MixModel mix_model_of(const GgufArch& arch, const HfConfig& c) {
  MixModel m;
  m.layers = c.layers;
  m.is_70b = arch.is_70b(c);
  m.experts = c.experts;
  m.gqa = c.kv_heads ? c.heads / c.kv_heads : 0;  // llama.cpp's n_gqa()
  return m;
}

AskedTypes asked_types(std::string_view text, bool pure) {
  constexpr std::string_view kNeedsImatrix = "Q2_K_S";  // what llama-quantize refuses without one
  if (std::ranges::equal(text, kNeedsImatrix, [](char a, char b) {
        return std::toupper(static_cast<unsigned char>(a)) == b;
      }))
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                fmt::format("{} is made with an importance matrix only (llama-quantize refuses it "
                            "without one), and tlio does not read importance matrices yet",
                            kNeedsImatrix));
  if (const std::optional<GgufMix> mix = gguf_mix_named(text))
    return {*ggml_type(mix->base), mix, mix->file_type, pure};
  const std::optional<GgmlType> type = ggml_type_named(text);
  if (type && ggml_plain_dtype(type->id) && file_type_of(*type))
    return {*type, std::nullopt, *file_type_of(*type), pure};
  throw_invalid(fmt::format("GGUF type {} is not one tlio writes ({})", text,
                            fmt::join(gguf_export_types(), ", ")));
}

}  // namespace tlio::detail

namespace tlio {

std::vector<std::string_view> gguf_export_types() {
  std::vector<std::string_view> names;
  // The plain types, then the block types, in ggml's id order.
  for (const detail::GgmlRow& row : detail::ggml_rows())
    if (row.plain.has_value() && detail::file_type_of(row.type)) names.push_back(row.type.name);
  for (const detail::GgufMix& m : detail::gguf_mixes()) names.push_back(m.name);
  for (const auto& [alias, mix] : detail::kAliases) names.push_back(alias);
  return names;
}

}  // namespace tlio
