// quant/hub/fp8_scheme.cpp: the registry entry of FP8 weights (read only): `<p>.weight` F8_E4M3
// times `<p>.weight_scale_inv` (DeepSeek V3/R1, Qwen -FP8: a grid of blocks, partial edge blocks
// included) or `<p>.weight_scale` (compressed-tensors float-/naive-quantized, AutoFP8, FBGEMM:
// one scale, one per output row, per group or per block). y = f32(w) * f32(s), rounded once to
// the reference's dtype: BF16 for DeepSeek's blocks, the scale's dtype otherwise.
#include <algorithm>

#include <fmt/core.h>
#include <fmt/format.h>

#include "common/json_text.hpp"
#include "quant/hub/hub_config.hpp"
#include "quant/hub/hub_values.hpp"
#include "quant/schemes.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

constexpr std::string_view kScaleInv = ".weight_scale_inv", kScale = ".weight_scale";
constexpr uint64_t kDefaultBlock = 128;  // DeepSeek's and Qwen's weight_block_size

[[noreturn]] void fp8_error(const std::string& tensor, std::string detail) {
  throw_format(Rule::quant, tensor, std::move(detail));
}

bool covers(uint64_t rows, uint64_t cols, uint64_t grid_rows, uint64_t grid_cols, uint64_t br,
            uint64_t bc) {
  return ceil_div(rows, br) == grid_rows && ceil_div(cols, bc) == grid_cols;
}

// What one scale covers, from the scale tensor's shape against the weight's [rows, cols]; the
// config's block size first, then 128 x 128, then the smallest block the grid implies.
// A 2-D `weight_scale_inv` is always a grid of blocks (one block for a small weight).
Fp8Options granularity(const TensorInfo& w, const TensorInfo& s, const HubQuantConfig& config,
                       bool inverse_named) {
  const uint64_t rows = w.shape[0], cols = w.shape[1];
  const bool grid = inverse_named && s.shape.size() == 2;
  if (!grid && s.element_count() == 1) return {Fp8Granularity::tensor, 0, 0};
  if (rows == 0 || cols == 0)  // no block size to infer, none to check
    fp8_error(w.name, fmt::format("{} is {}: an empty FP8 weight with more than one scale",
                                  quote_name(w.name), shape_text(w.shape)));
  if (!grid && ((s.shape.size() == 1 && s.shape[0] == rows) ||
                (s.shape.size() == 2 && s.shape[0] == rows && s.shape[1] == 1)))
    return {Fp8Granularity::channel, 0, 0};
  if (s.shape.size() != 2 || s.shape[0] == 0 || s.shape[1] == 0)
    fp8_error(s.name, fmt::format("{} is {}; FP8 scales of a {} weight are one value, one per row, "
                                  "or a grid of blocks", quote_name(s.name), shape_text(s.shape),
                                  shape_text(w.shape)));
  const uint64_t gr = s.shape[0], gc = s.shape[1];
  if (config.block_rows && config.block_cols) {
    if (!covers(rows, cols, gr, gc, *config.block_rows, *config.block_cols))
      fp8_error(s.name, fmt::format("{} is {}; {} blocks of {}x{} (quantization_config) need [{}, {}]",
                                    quote_name(s.name), shape_text(s.shape), shape_text(w.shape),
                                    *config.block_rows, *config.block_cols,
                                    ceil_div(rows, *config.block_rows),
                                    ceil_div(cols, *config.block_cols)));
    return {Fp8Granularity::block, *config.block_rows, *config.block_cols};
  }
  if (!grid && gr == rows && cols % gc == 0) return {Fp8Granularity::block, 1, cols / gc};  // groups
  if (covers(rows, cols, gr, gc, kDefaultBlock, kDefaultBlock))
    return {Fp8Granularity::block, kDefaultBlock, kDefaultBlock};
  const uint64_t br = ceil_div(rows, gr), bc = ceil_div(cols, gc);
  if (!covers(rows, cols, gr, gc, br, bc))
    fp8_error(s.name, fmt::format("{} is {}: no block size tiles the {} weight into that grid",
                                  quote_name(s.name), shape_text(s.shape), shape_text(w.shape)));
  return {Fp8Granularity::block, br, bc};
}

// Refuses, by name, weights beside a `weight_scale` that are not FP8: other formats use the name.
void refuse_other_scaled(const TensorInfo& w, const TensorInfo& s) {
  std::string what;
  if (w.dtype == Dtype::I8)
    what = "compressed-tensors int-quantized (I8 weights)";
  else if (w.dtype == Dtype::U8)
    what = "packed FP4 (NVFP4 or MXFP4)";
  else
    what = fmt::format("{} weights with scales", dtype_name(w.dtype));
  refuse_undecoded(w.name, fmt::format("{} has {}: {}, which tlio does not decode; its stored "
                                      "values are not weights and are not read as such",
                                      quote_name(w.name), quote_name(s.name), what));
}

std::vector<QuantizedWeight> detect(const TensorSet& set) {
  std::optional<HubQuantConfig> config;
  std::vector<QuantizedWeight> out;
  for (const TensorInfo* sp : set.tensors()) {
    const TensorInfo& s = *sp;
    auto base = strip_suffix(s.name, kScaleInv);
    const bool inverse_named = base.has_value();
    if (!base) base = strip_suffix(s.name, kScale);
    if (!base) continue;
    if (!config) config = hub_quant_config(set);
    const std::string weight_name = std::string(*base) + ".weight";
    const TensorInfo* w = set.find(weight_name);
    // A shard read alone may hold scales whose weights are in another: nothing to decode here.
    if (!w) continue;
    if (w->dtype != Dtype::F8_E4M3) {
      if (inverse_named)
        fp8_error(s.name, fmt::format("{} scales F8_E4M3 weights; {} is {}", quote_name(s.name),
                                      quote_name(w->name), dtype_name(w->dtype)));
      // compressed-tensors' dense checkpoints keep plain weights beside their scales.
      if (is_floating(w->dtype) && dtype_bits(w->dtype) >= 16) continue;
      refuse_other_scaled(*w, s);
    }
    for (const char* companion : {".weight_zero_point", ".weight_g_idx"})
      if (set.find(std::string(*base) + companion))
        refuse_undecoded(w->name, fmt::format("{} has {}: asymmetric or reordered FP8, which tlio "
                                             "does not decode", quote_name(w->name),
                                             quote_name(std::string(*base) + companion)));
    if (s.dtype == Dtype::U8 || s.dtype == Dtype::F8_E8M0)
      refuse_undecoded(s.name, fmt::format("{} is {}: MXFP8 (E8M0 scales per 32 inputs), which tlio "
                                          "does not decode", quote_name(s.name), dtype_name(s.dtype)));
    if (s.dtype != Dtype::F32 && s.dtype != Dtype::BF16 && s.dtype != Dtype::F16)
      fp8_error(s.name, fmt::format("{} is {}; FP8 scales are F32, BF16 or F16", quote_name(s.name),
                                    dtype_name(s.dtype)));
    if (w->shape.size() != 2)
      fp8_error(w->name, fmt::format("{} is {}; a scaled FP8 weight is a matrix", quote_name(w->name),
                                     shape_text(w->shape)));
    QuantizedWeight q;
    q.name = weight_name;
    q.scheme = QuantScheme(granularity(*w, s, *config, inverse_named));
    q.shape = w->shape;
    // DeepSeek's dequantization stores BF16; compressed-tensors computes in the scale's dtype.
    q.dtype = inverse_named ? Dtype::BF16 : s.dtype;
    q.stored = {w->name, s.name};
    q.stored_bytes = w->byte_size() + s.byte_size();
    const std::string input_scale = std::string(*base) + ".input_scale";
    if (const TensorInfo* a = set.find(input_scale)) {
      q.stored.push_back(input_scale);
      q.stored_bytes += a->byte_size();
    }
    out.push_back(std::move(q));
  }
  return out;
}

class Fp8Decoder final : public WeightDecoder {
 public:
  Fp8Decoder(const TensorSet& set, const QuantizedWeight& w)
      : codes_(set.view(w.stored[0])),
        scales_(set.f32(w.stored[1])),
        options_(std::get<Fp8Options>(w.scheme.options())),
        cols_(w.shape[1]),
        grid_cols_(options_.granularity == Fp8Granularity::block
                       ? ceil_div(cols_, options_.block_cols)
                       : 0),
        reference_(w.dtype) {}

  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    decode_chunked(first, count, reference_, out, dst, [&](uint64_t e, std::span<float> v) {
      const std::array<float, 256>& value = e4m3_values();
      const auto* q = reinterpret_cast<const uint8_t*>(codes_.bytes().data());
      for (size_t i = 0; i < v.size();) {
        const uint64_t r = (e + i) / cols_, c = (e + i) % cols_;
        const uint64_t take = std::min<uint64_t>(cols_ - c, v.size() - i);
        const uint8_t* row = q + r * cols_;
        switch (options_.granularity) {
          case Fp8Granularity::tensor:
          case Fp8Granularity::channel: {
            const float s = scales_[options_.granularity == Fp8Granularity::tensor ? 0 : r];
            for (uint64_t j = 0; j < take; ++j) v[i + j] = value[row[c + j]] * s;
            break;
          }
          case Fp8Granularity::block: {
            const float* s = scales_.data() + (r / options_.block_rows) * grid_cols_;
            for (uint64_t j = c; j < c + take;) {  // one block's columns at a time
              const uint64_t end = std::min(c + take, (j / options_.block_cols + 1) * options_.block_cols);
              const float sb = s[j / options_.block_cols];
              for (; j < end; ++j) v[i + j - c] = value[row[j]] * sb;
            }
            break;
          }
        }
        i += take;
      }
    });
  }

 private:
  TensorView codes_;
  std::vector<float> scales_;
  Fp8Options options_;
  uint64_t cols_, grid_cols_;
  Dtype reference_;
};

std::string fp8_name(const QuantScheme::Options& o) {
  const auto& f = std::get<Fp8Options>(o);
  switch (f.granularity) {
    case Fp8Granularity::tensor: return "fp8-tensor";
    case Fp8Granularity::channel: return "fp8-channel";
    case Fp8Granularity::block: break;
  }
  if (f.block_rows == 1) return fmt::format("fp8-group{}", f.block_cols);
  return fmt::format("fp8-block{}x{}", f.block_rows, f.block_cols);
}

constexpr SchemeOptionInfo kNoOptions[] = {{"", OptionKind::flag, ""}};

}  // namespace

const SchemeEntry& fp8_scheme_entry() noexcept {
  static const SchemeEntry entry{
      {SchemeKind::fp8, "fp8-block<R>x<C>, fp8-group<C>, fp8-channel, fp8-tensor",
       "fp8-block128x128",
       "<p>.weight F8_E4M3 + <p>.weight_scale_inv (blocks) or <p>.weight_scale [+ <p>.input_scale]",
       std::span(kNoOptions).first(0), true},
      [](std::string_view) -> std::optional<QuantScheme::Options> { return std::nullopt; },
      fp8_name,
      [](const QuantScheme::Options& o) {
        const auto& f = std::get<Fp8Options>(o);
        if (f.granularity == Fp8Granularity::block && (f.block_rows == 0 || f.block_cols == 0))
          throw_invalid("an FP8 block has at least one row and one column");
      },
      [](QuantScheme::Options&, std::string_view, std::string_view) {},
      detect,
      [](const TensorSet& set, const QuantizedWeight& w) -> std::shared_ptr<const WeightDecoder> {
        return std::make_shared<Fp8Decoder>(set, w);
      },
      [](const TensorSet&, const QuantizedWeight& w) {
        // One byte per element; the scales (a small grid, a row's worth at most) whole.
        std::vector<StoredPart> parts{{w.stored[0], 0, 0, 1, 1}};
        for (size_t i = 1; i < w.stored.size(); ++i) parts.push_back({w.stored[i]});
        return parts;
      },
      [](const QuantScheme::Options&) -> std::unique_ptr<WeightEncoder> { return nullptr; }};
  return entry;
}

}  // namespace tlio::detail
