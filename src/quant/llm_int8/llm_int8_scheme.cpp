// quant/llm_int8/llm_int8_scheme.cpp: the registry entry of LLM.int8 (bitsandbytes Linear8bitLt):
// <p>.weight I8 + <p>.SCB [+ <p>.weight_format]; detection (bnb_file.cpp), decoder, encoder.
#include <fmt/core.h>

#include "quant/bnb/bnb_config.hpp"
#include "quant/bnb/bnb_file.hpp"
#include "quant/llm_int8/llm_int8.hpp"
#include "quant/schemes.hpp"
#include "tlio/bnb.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

class LlmInt8Decoder final : public WeightDecoder {
 public:
  LlmInt8Decoder(const TensorSet& set, const QuantizedWeight& w)
      : cb_(set.view(w.stored[0])), scb_(set.f32(w.stored[1])), cols_(w.shape[1]) {}

  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    llm_int8_dequantize({reinterpret_cast<const int8_t*>(cb_.bytes().data()), cb_.bytes().size()},
                        scb_, cols_, first, count, out, dst);
  }

 private:
  TensorView cb_;
  std::vector<float> scb_;
  uint64_t cols_;
};

class LlmInt8Encoder final : public WeightEncoder {
 public:
  std::string unquantizable(const TensorInfo& t) const override {
    if (t.shape.size() != 2) return fmt::format("rank {} (int8 needs a matrix)", t.shape.size());
    if (!is_floating(t.dtype) || !can_convert(t.dtype, Dtype::F32))
      return fmt::format("dtype {} is not a floating type", dtype_name(t.dtype));
    if (!t.name.ends_with(".weight"))
      return "name does not end in .weight (LLM.int8 stores <module>.SCB beside <module>.weight)";
    return {};
  }

  std::vector<TensorData> outputs(const File&, const TensorInfo& t) override {
    const std::string prefix = t.name.substr(0, t.name.size() - 7);
    return {{t.name, Dtype::I8, t.shape, {}},
            {prefix + ".SCB", Dtype::F32, {t.shape[0]}, {}},
            {prefix + ".weight_format", Dtype::U8, {}, {}}};
  }

  void write(Writer& w, const File& src, const TensorInfo& t, QuantizeReport::Item& item,
             const std::function<void(uint64_t)>& tick) override {
    const std::string prefix = t.name.substr(0, t.name.size() - 7);
    const uint64_t cols = t.shape[1];
    std::vector<int8_t> cb;
    std::vector<float> scb, all_scb;
    ErrorStats stats;
    for_each_f32_chunk(src, t, std::max<uint64_t>(cols, 1), input_,
                       [&](uint64_t, std::span<const float> x) {
                         const uint64_t rows = x.size() / cols;
                         cb.resize(x.size());
                         scb.resize(rows);
                         back_.resize(x.size());
                         llm_int8_quantize(x, rows, cols, cb, scb);
                         llm_int8_dequantize(cb, scb, cols, 0, x.size(), Dtype::F32,
                                             std::as_writable_bytes(std::span(back_)));
                         stats.add(x, back_);
                         all_scb.insert(all_scb.end(), scb.begin(), scb.end());
                         w.append(t.name, std::as_bytes(std::span(cb)));
                         tick(cb.size());
                       });
    stats.finish(item, t.element_count());
    w.write(prefix + ".SCB", std::as_bytes(std::span(all_scb)));
    const std::byte row_format{0};
    w.write(prefix + ".weight_format", {&row_format, 1});
    tick(all_scb.size() * 4 + 1);
  }

  std::string quantization_config(std::span<const std::string> plain_modules,
                                  Dtype) const override {
    return transformers_bnb_config({}, plain_modules);
  }
};

constexpr SchemeOptionInfo kNoOptions[] = {{"", OptionKind::flag, ""}};

}  // namespace

const SchemeEntry& llm_int8_scheme_entry() noexcept {
  static const SchemeEntry entry{
      {SchemeKind::llm_int8, "int8", "int8",
       "LLM.int8 (Linear8bitLt): <p>.weight I8 + <p>.SCB + <p>.weight_format",
       std::span(kNoOptions).first(0)},
      [](std::string_view name) -> std::optional<QuantScheme::Options> {
        if (name == "int8") return LlmInt8Options{};
        return std::nullopt;
      },
      [](const QuantScheme::Options&) { return std::string("int8"); },
      [](const QuantScheme::Options&) {},
      [](QuantScheme::Options&, std::string_view, std::string_view) {},
      find_llm_int8_weights,
      [](const TensorSet& set, const QuantizedWeight& w) -> std::shared_ptr<const WeightDecoder> {
        return std::make_shared<LlmInt8Decoder>(set, w);
      },
      [](const TensorSet& set, const QuantizedWeight& w) {
        // .weight I8 [out, in]; .SCB one scale per row; .weight_format (when there) small.
        const uint64_t cols = w.shape[1], scb_bytes = dtype_bits(set.at(w.stored[1]).dtype) / 8;
        std::vector<StoredPart> parts{{w.stored[0], 0, 0, 1, 1},
                                      {w.stored[1], cols, scb_bytes, cols, scb_bytes}};
        for (size_t i = 2; i < w.stored.size(); ++i) parts.push_back({w.stored[i]});
        return parts;
      },
      [](const QuantScheme::Options&) -> std::unique_ptr<WeightEncoder> {
        return std::make_unique<LlmInt8Encoder>();
      }};
  return entry;
}

}  // namespace tlio::detail
