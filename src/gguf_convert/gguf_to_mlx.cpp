// gguf_convert/gguf_to_mlx.cpp: GGUF weights in MLX's quantized layout (gguf_to_mlx.hpp).
#include "gguf_convert/gguf_to_mlx.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "gguf/ggml_groups.hpp"
#include "gguf_convert/gguf_arch.hpp"
#include "quant/mlx/mlx_kernels.hpp"
#include "quant/mlx/mlx_layout.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/ggml.hpp"

namespace tlio::detail {

namespace {

constexpr uint64_t kLossyGroup = 32;

std::string refusal_of(const GgmlType& type) {
  switch (static_cast<GgmlTypeId>(type.id)) {
    case GgmlTypeId::Q2_K:
    case GgmlTypeId::Q3_K:
    case GgmlTypeId::Q6_K:
      return fmt::format("{} scales groups of 16; MLX's groups are 32, 64 or 128", type.name);
    case GgmlTypeId::IQ4_NL:
    case GgmlTypeId::IQ4_XS:
      return fmt::format("{}'s levels are a codebook, not code * scale + bias", type.name);
    case GgmlTypeId::IQ2_XXS:
    case GgmlTypeId::IQ2_XS:
    case GgmlTypeId::IQ2_S:
    case GgmlTypeId::IQ3_XXS:
    case GgmlTypeId::IQ3_S:
    case GgmlTypeId::IQ1_S:
    case GgmlTypeId::IQ1_M:
      return fmt::format("{}'s values are points of a lattice, not code * scale + bias", type.name);
    default:
      return fmt::format("{}'s values are not code * scale + bias in MLX's groups", type.name);
  }
}

// Row `r` of a piece: its blocks split into codes and group parameters, the codes packed.
void carry_row(const GgmlGroups& g, const GgmlType& type, const std::byte* blocks, uint64_t cols,
               uint64_t r, MlxPiece& p, std::vector<uint8_t>& codes) {
  const uint64_t groups = cols / g.group, per_block = type.block / g.group;
  codes.resize(cols);
  const auto* in = reinterpret_cast<const u8*>(blocks);
  for (uint64_t k = 0; k < cols / type.block; ++k, in += type.block_bytes) {
    const uint64_t first_group = r * groups + k * per_block;
    if (g.affine)
      g.affine(in, &codes[k * type.block], &p.scales[first_group], &p.biases[first_group]);
    else
      g.fp4(in, &codes[k * type.block], &p.scale_bytes[first_group]);
  }
  const uint64_t row_words = cols * g.bits / 32;
  std::fill_n(&p.words[r * row_words], row_words, 0u);
  mlx_pack(codes.data(), cols, g.bits, 0, &p.words[r * row_words]);
}

}  // namespace

std::optional<MlxCarry> mlx_carry_of(const GgufTensorInfo& t, std::string_view name, uint64_t cols,
                                     const TranscodeOptions& options, std::string& refusal) {
  refusal.clear();
  if (ggml_plain_dtype(t.type) || t.ne.size() < 2 || !name.ends_with(".weight"))
    return std::nullopt;
  const GgmlType type = *ggml_type(t.type);
  const GgmlGroups* g = ggml_groups(t.type);
  // Affine groups are 32 or 64 (MLX's groups); FP4's are MXFP4's 32 and NVFP4's 16.
  if (g && g->affine) return MlxCarry{{MlxMode::affine, g->bits, g->group}, Dtype::F32};
  if (g)
    return MlxCarry{mlx_mode_defaults(g->group == 16 ? MlxMode::nvfp4 : MlxMode::mxfp4), Dtype::U8};
  if (!options.lossy || cols % kLossyGroup != 0) {
    refusal = refusal_of(type);
    return std::nullopt;
  }
  return MlxCarry{
      {MlxMode::affine, mlx_affine_bits_within(type.block_bytes * 8 / type.block), kLossyGroup},
      options.dtype,
      false};
}

void write_mlx_carry(const GgufFile& src, const GgufRows& at, std::string_view name,
                     const MlxCarry& c, Writer& w, TranscodeReport::Item& item,
                     const std::function<void(uint64_t)>& done) {
  const GgmlType type = *ggml_type(at.t->type);
  const GgmlGroups* groups = ggml_groups(type.id);
  const uint64_t cols = at.cols, row_bytes = cols / type.block * type.block_bytes;
  std::vector<std::byte> raw;
  MlxRowSource rows{at.rows, cols, at.head_rows, std::string(type.name), src.name(), {}, {}};
  rows.load = [&](uint64_t r0, uint64_t n) {
    raw.resize(n * row_bytes);
    if (at.head_rows == 0) return src.read(*at.t, (at.first + r0) * row_bytes, raw);
    for (uint64_t j = 0; j < n; ++j)  // each row from its place in the GGUF (whole heads a piece)
      src.read(*at.t, (at.first + r0 + gguf_row_of_hf_row(j, at.head_rows)) * row_bytes,
               std::span(raw).subspan(j * row_bytes, row_bytes));
  };
  rows.row = [&](uint64_t j, std::span<float> values, MlxPiece& p, std::vector<uint8_t>& codes) {
    const auto blocks = std::span(raw).subspan(j * row_bytes, row_bytes);
    ggml_decode(type.id, blocks, values);
    if (c.carried) carry_row(*groups, type, blocks.data(), cols, j, p, codes);
  };
  write_mlx_rows(rows, name, c, w, item, done);
}

}  // namespace tlio::detail
