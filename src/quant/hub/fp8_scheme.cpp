// quant/hub/fp8_scheme.cpp: the registry entry of FP8 weights (read only): `<p>.weight` F8_E4M3
// times `<p>.weight_scale_inv` (DeepSeek V3/R1, Qwen -FP8: a grid of blocks, partial edge blocks
// included) or `<p>.weight_scale` (compressed-tensors float-/naive-quantized, AutoFP8, FBGEMM:
// one scale, one per output row, per group or per block; mxfp8-quantized: E8M0 powers of two per
// 32 inputs). y = f32(w) * f32(s), rounded once to the reference's dtype: BF16 for DeepSeek's
// blocks and MXFP8, the scale's dtype otherwise.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "common/json_text.hpp"
#include "quant/hub/fp8_encoder.hpp"
#include "quant/hub/hub_config.hpp"
#include "quant/hub/hub_kernels.hpp"
#include "quant/hub/hub_values.hpp"
#include "quant/schemes.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

constexpr std::string_view kScaleInv = ".weight_scale_inv", kScale = ".weight_scale";
constexpr uint64_t kDefaultBlock = 128;  // DeepSeek's and Qwen's weight_block_size

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
    malformed(w.name, fmt::format("{} is {}: an empty FP8 weight with more than one scale",
                                  quote_name(w.name), shape_text(w.shape)));
  if (!grid && ((s.shape.size() == 1 && s.shape[0] == rows) ||
                (s.shape.size() == 2 && s.shape[0] == rows && s.shape[1] == 1)))
    return {Fp8Granularity::channel, 0, 0};
  if (s.shape.size() != 2 || s.shape[0] == 0 || s.shape[1] == 0)
    malformed(s.name, fmt::format("{} is {}; FP8 scales of a {} weight are one value, one per row, "
                                  "or a grid of blocks",
                                  quote_name(s.name), shape_text(s.shape), shape_text(w.shape)));
  const uint64_t gr = s.shape[0], gc = s.shape[1];
  if (config.block_rows && config.block_cols) {
    if (!covers(rows, cols, gr, gc, *config.block_rows, *config.block_cols))
      malformed(
          s.name,
          fmt::format("{} is {}; {} blocks of {}x{} (quantization_config) need [{}, {}]",
                      quote_name(s.name), shape_text(s.shape), shape_text(w.shape),
                      *config.block_rows, *config.block_cols, ceil_div(rows, *config.block_rows),
                      ceil_div(cols, *config.block_cols)));
    return {Fp8Granularity::block, *config.block_rows, *config.block_cols};
  }
  if (!grid && gr == rows && cols % gc == 0)
    return {Fp8Granularity::block, 1, cols / gc};  // groups
  if (covers(rows, cols, gr, gc, kDefaultBlock, kDefaultBlock))
    return {Fp8Granularity::block, kDefaultBlock, kDefaultBlock};
  const uint64_t br = ceil_div(rows, gr), bc = ceil_div(cols, gc);
  if (!covers(rows, cols, gr, gc, br, bc))
    malformed(s.name, fmt::format("{} is {}: no block size tiles the {} weight into that grid",
                                  quote_name(s.name), shape_text(s.shape), shape_text(w.shape)));
  return {Fp8Granularity::block, br, bc};
}

// MXFP8 (compressed-tensors mxfp8-quantized): one E8M0 scale per 32 inputs of a row.
Fp8Options mx_granularity(const TensorInfo& w, const TensorInfo& s) {
  const Shape need{w.shape[0], ceil_div(w.shape[1], kMxGroup)};
  if (s.shape != need)
    malformed(s.name, fmt::format("{} is {}; the E8M0 scales of a {} MXFP8 weight are {}",
                                  quote_name(s.name), shape_text(s.shape), shape_text(w.shape),
                                  shape_text(need)));
  return {Fp8Granularity::block, 1, kMxGroup, true};
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
    // ModelOpt NVFP4's packed codes and compressed-tensors' I8 weights are other schemes'.
    if (!inverse_named &&
        ((w->dtype == Dtype::U8 && set.find(std::string(*base) + ".weight_scale_2")) ||
         w->dtype == Dtype::I8))
      continue;
    if (w->dtype != Dtype::F8_E4M3) {
      if (inverse_named)
        malformed(s.name, fmt::format("{} scales F8_E4M3 weights; {} is {}", quote_name(s.name),
                                      quote_name(w->name), dtype_name(w->dtype)));
      // compressed-tensors' dense checkpoints keep plain weights beside their scales.
      if (is_floating(w->dtype) && dtype_bits(w->dtype) >= 16) continue;
      refuse_other_scaled(*w, s);
    }
    for (const char* companion : {".weight_zero_point", ".weight_g_idx"})
      if (set.find(std::string(*base) + companion))
        refuse_undecoded(
            w->name, fmt::format("{} has {}: asymmetric or reordered FP8, which tlio "
                                 "does not decode",
                                 quote_name(w->name), quote_name(std::string(*base) + companion)));
    const bool mx = !inverse_named && (s.dtype == Dtype::U8 || s.dtype == Dtype::F8_E8M0);
    // transformers' scale_fmt "ue8m0" (DeepSeek-V3.1 on): the block grid's scales as E8M0
    // powers of two, exact in the same product.
    const bool e8m0_blocks = inverse_named && s.dtype == Dtype::F8_E8M0;
    if (!mx && !e8m0_blocks && s.dtype != Dtype::F32 && s.dtype != Dtype::BF16 &&
        s.dtype != Dtype::F16)
      malformed(s.name, fmt::format("{} is {}; FP8 scales are F32, BF16 or F16 (or E8M0 per 32 "
                                    "inputs or per block)",
                                    quote_name(s.name), dtype_name(s.dtype)));
    if (w->shape.size() != 2)
      malformed(w->name, fmt::format("{} is {}; a scaled FP8 weight is a matrix",
                                     quote_name(w->name), shape_text(w->shape)));
    QuantizedWeight q;
    q.name = weight_name;
    Fp8Options options = mx ? mx_granularity(*w, s) : granularity(*w, s, *config, inverse_named);
    options.e8m0 = options.e8m0 || e8m0_blocks;
    q.scheme = QuantScheme(options);
    q.shape = w->shape;
    // DeepSeek's dequantization stores BF16, as compressed-tensors' MXFP8 (BF16 powers of two);
    // its other forms compute in the scale's dtype.
    q.dtype = inverse_named || mx ? Dtype::BF16 : s.dtype;
    for (const TensorInfo* t : {w, &s, set.find(std::string(*base) + ".input_scale")})
      add_stored(q, t);
    out.push_back(std::move(q));
  }
  return out;
}

class Fp8Decoder final : public WeightDecoder {
 public:
  Fp8Decoder(const TensorSet& set, const QuantizedWeight& w)
      : codes_(set.view(w.stored[0])),
        options_(std::get<Fp8Options>(w.scheme.options())),
        scales_(options_.e8m0 ? powers_of_two(set.view(w.stored[1])) : set.f32(w.stored[1])),
        cols_(w.shape[1]),
        grid_cols_(options_.granularity == Fp8Granularity::block
                       ? ceil_div(cols_, options_.block_cols)
                       : 0),
        reference_(w.dtype) {}

  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    decode_chunked(first, count, reference_, out, dst, [&](uint64_t e, std::span<float> v) {
      const auto* q = reinterpret_cast<const uint8_t*>(codes_.bytes().data());
      for (size_t i = 0; i < v.size();) {
        const uint64_t r = (e + i) / cols_, c = (e + i) % cols_;
        const uint64_t take = std::min<uint64_t>(cols_ - c, v.size() - i);
        const uint8_t* row = q + r * cols_;
        if (options_.granularity == Fp8Granularity::block) {
          const float* s = scales_.data() + (r / options_.block_rows) * grid_cols_;
          for (uint64_t j = c; j < c + take;) {  // one block's columns at a time
            const uint64_t end =
                std::min(c + take, (j / options_.block_cols + 1) * options_.block_cols);
            e4m3_scaled(row + j, end - j, s[j / options_.block_cols], &v[i + j - c]);
            j = end;
          }
        } else {
          e4m3_scaled(row + c, take,
                      scales_[options_.granularity == Fp8Granularity::tensor ? 0 : r], &v[i]);
        }
        i += take;
      }
    });
  }

 private:
  static std::vector<float> powers_of_two(const TensorView& e8m0) {
    const std::array<float, 256> scale_of = e8m0_scales(e8m0.dtype());
    std::vector<float> values;
    values.reserve(e8m0.bytes().size());
    for (std::byte b : e8m0.bytes()) values.push_back(scale_of[static_cast<uint8_t>(b)]);
    return values;
  }

  TensorView codes_;
  Fp8Options options_;
  std::vector<float> scales_;
  uint64_t cols_, grid_cols_;
  Dtype reference_;
};

std::string fp8_name(const QuantScheme::Options& o) {
  const auto& f = std::get<Fp8Options>(o);
  switch (f.granularity) {
    case Fp8Granularity::tensor:
      return "fp8-tensor";
    case Fp8Granularity::channel:
      return "fp8-channel";
    case Fp8Granularity::block:
      break;
  }
  if (f.e8m0 && f.block_rows == 1 && f.block_cols == kMxGroup) return "mxfp8";
  const char* scales = f.e8m0 ? "-ue8m0" : "";
  if (f.block_rows == 1) return fmt::format("fp8-group{}{}", f.block_cols, scales);
  return fmt::format("fp8-block{}x{}{}", f.block_rows, f.block_cols, scales);
}

// "fp8-block" (128 x 128), "fp8-block<R>x<C>", "fp8" or "fp8-channel" (per output row).
std::optional<QuantScheme::Options> parse_fp8(std::string_view name) {
  if (name == "fp8" || name == "fp8-channel") return Fp8Options{Fp8Granularity::channel, 0, 0};
  if (name == "fp8-block") return Fp8Options{};
  if (!name.starts_with("fp8-block")) return std::nullopt;
  name.remove_prefix(9);
  uint64_t rows = 0, cols = 0;
  const auto [x, e1] = std::from_chars(name.data(), name.data() + name.size(), rows);
  if (e1 != std::errc() || x == name.data() + name.size() || *x != 'x') return std::nullopt;
  const auto [end, e2] = std::from_chars(x + 1, name.data() + name.size(), cols);
  if (e2 != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return Fp8Options{Fp8Granularity::block, rows, cols};
}

constexpr SchemeOptionInfo kOptions[] = {
    {"block", OptionKind::number,
     "rows and columns of an fp8-block block, 1..65536 (default 128)"}};
constexpr uint64_t kMaxBlock = 65536;

}  // namespace

const SchemeEntry& fp8_scheme_entry() noexcept {
  static const SchemeEntry entry{
      {SchemeKind::fp8, "fp8-block, fp8", "fp8-block",
       "fp8-block: <name> becomes <name> F8_E4M3 + <name>_scale_inv F32, a scale per 128x128 block "
       "(DeepSeek, Qwen -FP8)\n"
       "fp8: <name> F8_E4M3 + <name>_scale [out, 1] per row (compressed-tensors)\n"
       "read too: fp8-tensor, fp8-group<C>, mxfp8 (E8M0 scales per 32 inputs) [+ <p>.input_scale],\n"
       "fp8-block<R>x<C>-ue8m0 (scale_inv F8_E8M0, transformers' scale_fmt ue8m0)",
       kOptions, false},
      parse_fp8,
      fp8_name,
      [](const QuantScheme::Options& o) {
        const auto& f = std::get<Fp8Options>(o);
        if (f.granularity == Fp8Granularity::block &&
            (f.block_rows == 0 || f.block_cols == 0 || f.block_rows > kMaxBlock ||
             f.block_cols > kMaxBlock))
          throw_invalid(fmt::format("an FP8 block has 1 to {} rows and columns", kMaxBlock));
      },
      [](QuantScheme::Options& o, std::string_view option, std::string_view value) {
        auto& f = std::get<Fp8Options>(o);
        if (f.granularity != Fp8Granularity::block || f.e8m0)
          throw_invalid(
              fmt::format("{} is an option of fp8-block, not of {}", option, fp8_name(o)));
        f.block_rows = f.block_cols = parse_uint_option(option, value);
      },
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
      [](const QuantScheme::Options& o) { return fp8_encoder(std::get<Fp8Options>(o)); }};
  return entry;
}

}  // namespace tlio::detail
