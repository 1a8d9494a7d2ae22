// quant/hub/fp8_encoder.cpp: quantize to FP8 (tlio quantize --scheme fp8-block | fp8), writing
// the files the FP8 scheme reads back:
//   fp8-block: <p>.weight F8_E4M3 + <p>.weight_scale_inv F32 [ceil(out/B), ceil(in/B)], with
//              quantization_config {"quant_method": "fp8", "weight_block_size": [B, B], ...}
//              (DeepSeek V3 / Qwen -FP8, as transformers' FineGrainedFP8 and vLLM load them);
//   fp8:       <p>.weight F8_E4M3 + <p>.weight_scale [out, 1] in the weight's dtype, with a
//              compressed-tensors naive-quantized channel config (as llm-compressor writes).
// Each scale is amax / 448 (E4M3's largest value) over its block or row, rounded to its stored
// dtype; each code w / scale in f32, clamped to +-448 and rounded to nearest even. An all-zero
// block has scale 0 and codes 0. NaN or infinite weights are refused naming the tensor.
#include "quant/hub/fp8_encoder.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/json_text.hpp"
#include "quant/hub/hub_config.hpp"
#include "quant/hub/hub_values.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

constexpr float kE4m3Max = 448.0f;

class Fp8Encoder final : public WeightEncoder {
 public:
  explicit Fp8Encoder(const Fp8Options& o)
      : block_(o.granularity == Fp8Granularity::block), size_(o.block_rows) {}

  std::string unquantizable(const TensorInfo& t) const override {
    if (t.shape.size() != 2) return fmt::format("rank {} (FP8 scales a matrix)", t.shape.size());
    if (!is_floating(t.dtype) || !can_convert(t.dtype, Dtype::F32))
      return fmt::format("dtype {} is not a floating type", dtype_name(t.dtype));
    if (!t.name.ends_with(".weight"))
      return "its name does not end in .weight (FP8 files pair <p>.weight with its scales)";
    return {};
  }

  std::vector<TensorData> outputs(const File&, const TensorInfo& t) override {
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    if (block_)
      return {
          {t.name, Dtype::F8_E4M3, t.shape, {}},
          {t.name + "_scale_inv", Dtype::F32, {ceil_div(rows, size_), ceil_div(cols, size_)}, {}}};
    return {{t.name, Dtype::F8_E4M3, t.shape, {}},
            {t.name + "_scale", scale_dtype(t), {rows, 1}, {}}};
  }

  void write(Writer& w, const File& src, const TensorInfo& t, QuantizeReport::Item& item,
             const std::function<void(uint64_t)>& tick) override {
    const uint64_t cols = t.shape[1], band = block_ ? size_ : 1;
    const Dtype sd = block_ ? Dtype::F32 : scale_dtype(t);
    ErrorStats stats;
    for_each_f32_chunk(
        src, t, std::max<uint64_t>(band * cols, 1), input_,
        [&](uint64_t, std::span<const float> x) {
          if (std::any_of(x.begin(), x.end(), [](float v) { return !std::isfinite(v); }))
            throw Error(ErrorCode::invalid_argument, Rule::none, t.name, std::nullopt,
                        fmt::format("cannot quantize {} to FP8: it holds NaN or infinite values",
                                    quote_name(t.name)));
          const uint64_t rows = x.size() / cols;
          scales_.clear();
          scaled_.resize(x.size());
          for (uint64_t r0 = 0; r0 < rows; r0 += band)
            for (uint64_t c0 = 0; c0 < cols; c0 += (block_ ? size_ : cols)) {
              const uint64_t r1 = std::min(rows, r0 + band),
                             c1 = std::min(cols, c0 + (block_ ? size_ : cols));
              float amax = 0;
              for (uint64_t r = r0; r < r1; ++r)
                for (uint64_t c = c0; c < c1; ++c)
                  amax = std::max(amax, std::fabs(x[r * cols + c]));
              const float s = stored_scale(amax / kE4m3Max, sd);
              scales_.push_back(s);
              for (uint64_t r = r0; r < r1; ++r)
                for (uint64_t c = c0; c < c1; ++c)
                  scaled_[r * cols + c] =
                      s == 0 ? 0.0f : std::clamp(x[r * cols + c] / s, -kE4m3Max, kE4m3Max);
            }
          codes_.resize(x.size());
          convert(Dtype::F32, std::as_bytes(std::span(scaled_)), Dtype::F8_E4M3,
                  std::as_writable_bytes(std::span(codes_)), x.size());
          back_.resize(x.size());
          const uint64_t grid_cols = block_ ? ceil_div(cols, size_) : 1;
          for (uint64_t i = 0; i < x.size(); ++i) {
            const uint64_t r = i / cols, c = i % cols;
            back_[i] = e4m3_values()[codes_[i]] *
                       scales_[(r / band) * grid_cols + (block_ ? c / size_ : 0)];
          }
          stats.add(x, back_);
          scale_bytes_.resize(bytes_for(sd, scales_.size()));
          convert(Dtype::F32, std::as_bytes(std::span(scales_)), sd, scale_bytes_, scales_.size());
          w.append(t.name, std::as_bytes(std::span(codes_)));
          w.append(t.name + (block_ ? "_scale_inv" : "_scale"), scale_bytes_);
          tick(codes_.size() + scale_bytes_.size());
        });
    stats.finish(item, t.element_count());
  }

  void update_metadata(Metadata& meta) const override {
    // A lone file carries its config: the block size is not always the only one its grid fits.
    meta["quantization_config"] = config_text(std::nullopt);
  }

  std::string quantization_config(std::span<const std::string> plain_modules,
                                  Dtype) const override {
    return config_text(plain_modules);
  }

 private:
  // compressed-tensors keeps scales in the model's dtype (F32 for any other).
  static Dtype scale_dtype(const TensorInfo& t) {
    return t.dtype == Dtype::BF16 || t.dtype == Dtype::F16 ? t.dtype : Dtype::F32;
  }
  // The scale as it will be read back: rounded to its stored dtype; F16 at least its smallest
  // normal (6.1e-5), so that a row of small values is not flushed to zero nor coarsely scaled.
  static float stored_scale(float s, Dtype d) {
    if (d == Dtype::F32) return s;
    if (d == Dtype::F16 && s > 0) s = std::max(s, 0x1p-14f);
    std::byte b[2];
    convert(Dtype::F32, std::as_bytes(std::span(&s, 1)), d, b, 1);
    return scale_value(d, b);
  }

  // The config, with the modules left plain when they are known (a folder's).
  std::string config_text(std::optional<std::span<const std::string>> plain_modules) const {
    std::string plain;
    if (plain_modules) {
      std::vector<std::string> names;
      for (const std::string& m : *plain_modules) names.push_back(quote_name(m));
      plain = fmt::format(R"(, "{}": [{}])", block_ ? "modules_to_not_convert" : "ignore",
                          fmt::join(names, ", "));
    }
    if (block_)
      return fmt::format(
          R"({{"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", )"
          R"("weight_block_size": [{}, {}]{}}})",
          size_, size_, plain);
    return fmt::format(
        R"({{"quant_method": "compressed-tensors", "format": "naive-quantized", )"
        R"("quantization_status": "compressed", "config_groups": {{"group_0": {{"targets": )"
        R"(["Linear"], "weights": {{"num_bits": 8, "type": "float", "symmetric": true, )"
        R"("strategy": "channel", "dynamic": false}}, "input_activations": null}}}}{}}})",
        plain);
  }

  bool block_;
  uint64_t size_;
  std::vector<float> scales_, scaled_;
  std::vector<uint8_t> codes_;
  std::vector<std::byte> scale_bytes_;
};

}  // namespace

std::unique_ptr<WeightEncoder> fp8_encoder(const Fp8Options& o) {
  if (o.e8m0 || o.granularity == Fp8Granularity::tensor ||
      (o.granularity == Fp8Granularity::block && o.block_rows != o.block_cols))
    return nullptr;
  return std::make_unique<Fp8Encoder>(o);
}

}  // namespace tlio::detail
