// quant/mlx/mlx_scheme.cpp: the registry entry of MLX's quantized layouts (mlx_layout.hpp): the
// names ("mlx-affine-4bit-g64", "mlx-mxfp4", ...), the decoder (mx.dequantize's values, bit for
// bit) and the encoders of every mode (mx.quantize's tensors, byte for byte; config.json as
// mlx-lm writes it).
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstring>

#include "common/json_text.hpp"
#include "common/parallel.hpp"
#include "quant/hub/hub_config.hpp"
#include "quant/hub/hub_values.hpp"
#include "quant/mlx/mlx_kernels.hpp"
#include "quant/mlx/mlx_layout.hpp"
#include "quant/schemes.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

// ---- names ---------------------------------------------------------------------------------

// Whether `v` is one of the affine mode's bits or groups.
template <size_t N>
bool in_table(const uint64_t (&table)[N], uint64_t v) {
  return std::find(std::begin(table), std::end(table), v) != std::end(table);
}

// "mlx-affine[-<bits>bit][-g<group>]", "mlx-mxfp4", "mlx-mxfp8", "mlx-nvfp4".
std::optional<QuantScheme::Options> parse_name(std::string_view name) {
  for (MlxMode m : {MlxMode::mxfp4, MlxMode::mxfp8, MlxMode::nvfp4})
    if (name == fmt::format("mlx-{}", mlx_mode_name(m))) return mlx_mode_defaults(m);
  constexpr std::string_view prefix = "mlx-affine";
  if (!name.starts_with(prefix)) return std::nullopt;
  name.remove_prefix(prefix.size());
  MlxOptions o = mlx_mode_defaults(MlxMode::affine);
  // Each "-<part>": "<bits>bit" (first) or "g<group>", decimal without a leading zero.
  const auto number = [](std::string_view digits, uint64_t& v) {
    if (digits.empty() || digits[0] == '0') return false;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    return ec == std::errc() && ptr == digits.data() + digits.size();
  };
  bool bits = false, group = false;
  while (!name.empty()) {
    if (name[0] != '-') return std::nullopt;
    name.remove_prefix(1);
    const std::string_view part = name.substr(0, name.find('-'));
    name.remove_prefix(part.size());
    if (!bits && !group && part.ends_with("bit") && number(part.substr(0, part.size() - 3), o.bits))
      bits = true;
    else if (!group && part.starts_with('g') && number(part.substr(1), o.group))
      group = true;
    else
      return std::nullopt;
  }
  if (!in_table(kMlxAffineBits, o.bits) || !in_table(kMlxAffineGroups, o.group))
    return std::nullopt;
  return o;
}

std::string scheme_name(const QuantScheme::Options& options) {
  const auto& o = std::get<MlxOptions>(options);
  if (o.mode != MlxMode::affine) return fmt::format("mlx-{}", mlx_mode_name(o.mode));
  return fmt::format("mlx-affine-{}bit-g{}", o.bits, o.group);
}

void validate(const QuantScheme::Options& options) {
  const auto& o = std::get<MlxOptions>(options);
  if (o.mode != MlxMode::affine) {
    if (!(o == mlx_mode_defaults(o.mode)))
      throw_invalid(fmt::format("MLX's {} has {} bits in groups of {}", mlx_mode_name(o.mode),
                                mlx_mode_defaults(o.mode).bits, mlx_mode_defaults(o.mode).group));
    return;
  }
  if (!in_table(kMlxAffineBits, o.bits))
    throw_invalid(fmt::format("MLX's affine bits are 2, 3, 4, 5, 6 or 8, not {}", o.bits));
  if (!in_table(kMlxAffineGroups, o.group))
    throw_invalid(fmt::format("MLX's affine group size is 32, 64 or 128, not {}", o.group));
}

void set_option(QuantScheme::Options& options, std::string_view option, std::string_view value) {
  auto& o = std::get<MlxOptions>(options);
  (option == "bits" ? o.bits : o.group) = parse_uint_option(option, value);
}

// ---- decoding ------------------------------------------------------------------------------

class MlxDecoder final : public WeightDecoder {
 public:
  MlxDecoder(const TensorSet& set, const QuantizedWeight& w)
      : options_(std::get<MlxOptions>(w.scheme.options())),
        words_(set.view(w.stored[0])),
        scales_(set.view(w.stored[1])),
        biases_(w.stored.size() > 2 ? std::optional(set.view(w.stored[2])) : std::nullopt),
        reference_(w.dtype),
        in_(w.shape.back()),
        groups_(in_ / options_.group),
        row_bytes_(in_ * options_.bits / 8) {}

  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    decode_chunked(first, count, reference_, out, dst,
                   [&](uint64_t e, std::span<float> v) { fill(e, v); });
  }

 private:
  // Elements e .. e + v.size(): each row's run, group by group.
  void fill(uint64_t e, std::span<float> v) const {
    const auto* words = words_.bytes().data();
    const auto* scales = reinterpret_cast<const uint8_t*>(scales_.bytes().data());
    const uint64_t scale_bytes = dtype_bits(scales_.dtype()) / 8;
    for (size_t i = 0; i < v.size();) {
      const uint64_t r = (e + i) / in_, c0 = (e + i) % in_;
      const uint64_t take = std::min<uint64_t>(in_ - c0, v.size() - i);
      const std::byte* row = words + r * row_bytes_;
      const std::span<float> run = v.subspan(i, take);
      if (options_.mode == MlxMode::affine) {  // group by group: T's values as they are made
        const std::byte* s = scales_.bytes().data() + r * groups_ * scale_bytes;
        const std::byte* b = biases_->bytes().data() + r * groups_ * scale_bytes;
        for (uint64_t j = 0; j < take;) {
          const uint64_t c = c0 + j, g = c / options_.group;
          const uint64_t n = std::min(take - j, (g + 1) * options_.group - c);
          uint8_t* codes = codes_of(n);
          mlx_unpack(row, c, n, static_cast<unsigned>(options_.bits), codes);
          mlx_affine_values(codes, n, scale_value(scales_.dtype(), s + g * scale_bytes),
                            scale_value(biases_->dtype(), b + g * scale_bytes), reference_,
                            &run[j]);
          j += n;
        }
        i += take;
        continue;
      }
      const uint8_t* s = scales + r * groups_;
      const auto* bytes = reinterpret_cast<const uint8_t*>(row);
      // MLX's result is BF16's, whatever dtype the caller asks for (store_rounded keeps F32
      // exact).
      mlx_fp_values(options_.mode, bytes, c0, take, s, options_.group, reference_, run.data());
      i += take;
    }
  }

  // A thread's scratch for a group's codes.
  static uint8_t* codes_of(uint64_t n) {
    thread_local std::vector<uint8_t> codes;
    if (codes.size() < n) codes.resize(n);
    return codes.data();
  }

  MlxOptions options_;
  TensorView words_, scales_;
  std::optional<TensorView> biases_;  // affine's
  Dtype reference_;
  uint64_t in_, groups_, row_bytes_;
};

std::vector<StoredPart> parts(const TensorSet&, const QuantizedWeight& w) {
  const auto& o = std::get<MlxOptions>(w.scheme.options());
  const uint64_t in = w.shape.back(), groups = in / o.group;
  const uint64_t scale_bytes = o.mode == MlxMode::affine ? dtype_bits(w.dtype) / 8 : 1;
  std::vector<StoredPart> out = {{w.stored[0], in, in * o.bits / 8, o.group, o.group * o.bits / 8}};
  for (size_t i = 1; i < w.stored.size(); ++i)
    out.push_back({w.stored[i], in, groups * scale_bytes, o.group, scale_bytes});
  return out;
}

// ---- encoding ------------------------------------------------------------------------------

// A file's metadata as mlx-lm writes it (format "mlx"; the source's own kept for dequantize),
// with the quantization config: a lone file's shapes alone may fit several widths and groups.
void mlx_metadata(Metadata& meta, std::string config) {
  if (auto f = meta.find("format"); f != meta.end() && f->second != "mlx")
    meta[kSourceFormat] = f->second;
  meta["format"] = "mlx";
  meta["quantization_config"] = std::move(config);
}

// mx.quantize's arithmetic has no answer for infinities and NaN (a code past its range).
void check_finite(const TensorInfo& t, std::span<const float> values) {
  for (const float x : values)
    if (!std::isfinite(x))
      throw_invalid(
          fmt::format("{} holds {}: MLX's quantization needs finite values", quote_name(t.name), x),
          t.name);
}

// What every mode's encoder shares: mlx-lm's selection (every Linear and Embedding weight),
// what it cannot take, its outputs' names, the metadata and config.json's entries.
class MlxEncoder : public WeightEncoder {
 public:
  explicit MlxEncoder(const MlxOptions& o) : o_(o) {}

  std::string unquantizable(const TensorInfo& t) const override {
    if (t.shape.size() < 2) return "1-D (MLX quantizes matrices and stacks of them)";
    if (t.dtype != Dtype::F32 && t.dtype != Dtype::F16 && t.dtype != Dtype::BF16)
      return fmt::format("dtype {} (mx.quantize takes F32, F16 and BF16)", dtype_name(t.dtype));
    if (!t.name.ends_with(".weight")) return "not a module's weight (<module>.weight)";
    if (t.shape.back() == 0) return "no columns";
    if (t.shape.back() % o_.group != 0)
      return fmt::format("{} columns are not a multiple of group {}", t.shape.back(), o_.group);
    if (o_.mode == MlxMode::nvfp4 && t.element_count() % 32 != 0)  // mx.quantize's own limit
      return fmt::format("{} values, not a multiple of 32 (mx.quantize's nvfp4)",
                         t.element_count());
    return {};
  }

  bool selected_by_default(const TensorInfo& t) const override {
    return t.shape.size() >= 2 && t.name.ends_with(".weight");
  }

  // <m>.weight U32 codes and <m>.scales (in the weights' dtype, or U8), and affine's biases.
  std::vector<TensorData> outputs(const File&, const TensorInfo& t) override {
    const std::string base = module_of(t);
    Shape words = t.shape, scales = t.shape;
    words[words.size() - 1] = t.shape.back() * o_.bits / 32;
    scales[scales.size() - 1] = t.shape.back() / o_.group;
    const Dtype scale_dtype = o_.mode == MlxMode::affine ? t.dtype : Dtype::U8;
    std::vector<TensorData> out = {{base + ".weight", Dtype::U32, words, {}},
                                   {base + ".scales", scale_dtype, scales, {}}};
    if (o_.mode == MlxMode::affine) out.push_back({base + ".biases", t.dtype, scales, {}});
    return out;
  }

  void update_metadata(Metadata& meta) const override {
    mlx_metadata(meta, quantization_config({}, Dtype::F32));
  }

  std::string quantization_config(std::span<const std::string>, Dtype) const override {
    return fmt::format(R"({{"group_size": {}, "bits": {}, "mode": "{}"}})", o_.group, o_.bits,
                       mlx_mode_name(o_.mode));
  }
  bool quantization_too() const override { return true; }

 protected:
  static std::string module_of(const TensorInfo& t) {
    return t.name.substr(0, t.name.size() - std::string_view(".weight").size());
  }

  MlxOptions o_;
};

// The affine mode.
class MlxAffineEncoder final : public MlxEncoder {
 public:
  explicit MlxAffineEncoder(const MlxOptions& o)
      : MlxEncoder(o), bits_(static_cast<unsigned>(o.bits)), group_(o.group) {}

  void write(Writer& w, const File& src, const TensorInfo& t, QuantizeReport::Item& item,
             const std::function<void(uint64_t)>& tick) override {
    const std::string base = module_of(t);
    const uint64_t in = t.shape.back(), groups = in / group_, row_words = in * bits_ / 32;
    ErrorStats stats;
    for_each_f32_chunk(src, t, in, input_, [&](uint64_t, std::span<const float> block) {
      const uint64_t rows = block.size() / in;
      words_.assign(rows * row_words, 0);
      scales_.resize(rows * groups);
      biases_.resize(rows * groups);
      codes_.resize(block.size());
      back_.resize(block.size());
      // Groups on every core: each owns its codes, scale, bias, values back and whole words
      // (group x bits is a multiple of 32).
      std::atomic<bool> finite = true;
      parallel_for(rows * groups, 64, 1, thread_count(configured_threads()),
                   [&](uint64_t begin, uint64_t end) {
                     for (uint64_t g = begin; g < end; ++g) {
                       const uint64_t r = g / groups, first = g * group_;
                       float& s = scales_[g];
                       float& b = biases_[g];
                       if (!mlx_affine_group(&block[first], group_, bits_, s, b, &codes_[first])) {
                         finite = false;
                         return;
                       }
                       mlx_pack(&codes_[first], group_, bits_, (first - r * in) * bits_,
                                &words_[r * row_words]);
                       // Stored in the weights' dtype (the codes were made with the f32 scale,
                       // as MLX does); what mx.dequantize gives back from them.
                       s = mlx_round(t.dtype, s);
                       b = mlx_round(t.dtype, b);
                       mlx_affine_values(&codes_[first], group_, s, b, t.dtype, &back_[first]);
                     }
                   });
      if (!finite) check_finite(t, block);
      stored_.resize(bytes_for(t.dtype, scales_.size()));
      w.append(base + ".weight", std::as_bytes(std::span(words_)));
      for (const auto& [name, values] :
           {std::pair(".scales", &scales_), std::pair(".biases", &biases_)}) {
        convert(Dtype::F32, std::as_bytes(std::span(*values)), t.dtype, stored_, values->size());
        w.append(base + name, stored_);
      }
      stats.add(block, back_);
      tick(words_.size() * 4 + 2 * stored_.size());
    });
    stats.finish(item, t.element_count());
  }

 private:
  unsigned bits_;
  uint64_t group_;
  std::vector<uint32_t> words_;
  std::vector<float> scales_, biases_;
  std::vector<uint8_t> codes_;
  std::vector<std::byte> stored_;
};

// The other modes: mxfp4, mxfp8, nvfp4.
class MlxFpEncoder final : public MlxEncoder {
 public:
  explicit MlxFpEncoder(const MlxOptions& o) : MlxEncoder(o) {}

  void write(Writer& w, const File& src, const TensorInfo& t, QuantizeReport::Item& item,
             const std::function<void(uint64_t)>& tick) override {
    const std::string base = module_of(t);
    const uint64_t in = t.shape.back();
    const float max_value = o_.mode == MlxMode::mxfp8 ? 448.0f : 6.0f;
    ErrorStats stats;
    for_each_f32_chunk(src, t, in, input_, [&](uint64_t, std::span<const float> block) {
      check_finite(t, block);
      const uint64_t groups = block.size() / o_.group;
      codes_.resize(block.size() * o_.bits / 8);
      scales_.resize(groups);
      back_.resize(block.size());
      for (uint64_t g = 0; g < groups; ++g) {
        const std::span<const float> v = block.subspan(g * o_.group, o_.group);
        float amax = 0;
        for (const float x : v) amax = std::max(amax, std::fabs(x));
        // The divisor in T: 2^e for MX (e before the byte wraps), the E4M3 scale for NV.
        float divisor;
        if (o_.mode == MlxMode::nvfp4) {
          float s = amax / 6.0f;
          mlx_round_through(t.dtype, std::span(&s, 1));
          scales_[g] = mlx_fp8_byte(s);
          divisor = e4m3_values()[scales_[g]];
        } else {
          const int e = mlx_mx_exponent(amax, max_value, t.dtype);
          scales_[g] = static_cast<uint8_t>(static_cast<unsigned>(e + 127) & 0xFFu);
          divisor = static_cast<float>(std::ldexp(1.0, e));
        }
        mlx_round_through(t.dtype, std::span(&divisor, 1));
        float* x = &back_[g * o_.group];  // w / divisor in T, then each value's code
        for (uint64_t i = 0; i < o_.group; ++i) x[i] = v[i] / divisor;
        mlx_round_through(t.dtype, std::span(x, o_.group));
        uint8_t* c = &codes_[g * o_.group * o_.bits / 8];
        const bool zero = o_.mode == MlxMode::nvfp4 && divisor == 0;  // every code 0
        for (uint64_t i = 0; i < o_.group; ++i) {
          if (o_.mode == MlxMode::mxfp8) {
            c[i] = mlx_fp8_byte(x[i]);
          } else {
            const uint8_t code = zero ? 0 : mlx_fp4_code(x[i]);
            c[i / 2] = static_cast<uint8_t>(i % 2 ? (c[i / 2] | code << 4) : code);
          }
        }
      }
      w.append(base + ".weight", std::as_bytes(std::span(codes_)));
      w.append(base + ".scales", std::as_bytes(std::span(scales_)));
      // What mx.dequantize gives back (BF16 by default): value x scale, rounded to BF16.
      mlx_fp_values(o_.mode, codes_.data(), 0, block.size(), scales_.data(), o_.group, Dtype::BF16,
                    back_.data());
      stats.add(block, back_);
      tick(codes_.size() + scales_.size());
    });
    stats.finish(item, t.element_count());
  }

 private:
  std::vector<uint8_t> codes_, scales_;
};

constexpr SchemeOptionInfo kOptions[] = {
    {"bits", OptionKind::number, "affine: bits a code, 2, 3, 4, 5, 6 or 8 (default 4)",
     "2 3 4 5 6 8"},
    {"group-size", OptionKind::number,
     "affine: values a scale and bias, 32, 64 or 128 (default 64)", "32 64 128"},
};

}  // namespace

const SchemeEntry& mlx_scheme_entry() noexcept {
  static const SchemeEntry entry{
      {SchemeKind::mlx, "mlx-<mode>", "mlx-affine",
       "MLX (mlx-lm), every Linear and Embedding: <m>.weight becomes <m>.weight U32 (codes) +\n"
       "<m>.scales + <m>.biases (mlx-affine, or mlx-affine-<bits>bit-g<group>), or U8 scales\n"
       "and no biases (mlx-mxfp4, mlx-mxfp8, mlx-nvfp4)",
       kOptions},
      parse_name,
      scheme_name,
      validate,
      set_option,
      detect_mlx,
      [](const TensorSet& set, const QuantizedWeight& w) -> std::shared_ptr<const WeightDecoder> {
        return std::make_shared<MlxDecoder>(set, w);
      },
      parts,
      [](const QuantScheme::Options& o) -> std::unique_ptr<WeightEncoder> {
        const auto& mlx = std::get<MlxOptions>(o);
        if (mlx.mode == MlxMode::affine) return std::make_unique<MlxAffineEncoder>(mlx);
        return std::make_unique<MlxFpEncoder>(mlx);
      }};
  return entry;
}

}  // namespace tlio::detail
