// quant/bnb/bnb_4bit_scheme.cpp: the registry entry of bitsandbytes 4-bit (nf4, fp4; optionally
// nested): names and options, detection (bnb_file.cpp), the decoder and the encoder.
#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "common/json_text.hpp"
#include "quant/bnb/bnb.hpp"
#include "quant/bnb/bnb_config.hpp"
#include "quant/bnb/bnb_file.hpp"
#include "quant/schemes.hpp"
#include "tlio/bnb.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

class Bnb4bitDecoder final : public WeightDecoder {
 public:
  Bnb4bitDecoder(const TensorSet& set, const QuantizedWeight& w)
      : packed_(set.view(w.name)),
        absmax_(bnb_effective_absmax(set, w, bnb_state_of(set, w))),
        options_(std::get<Bnb4bitOptions>(w.scheme.options())) {}

  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    bnb_dequantize_4bit(
        {reinterpret_cast<const uint8_t*>(packed_.bytes().data()), packed_.bytes().size()}, absmax_,
        options_.type, options_.blocksize, first, count, out, dst);
  }

 private:
  TensorView packed_;
  std::vector<float> absmax_;  // effective: nested ones dequantized
  Bnb4bitOptions options_;
};

class Bnb4bitEncoder final : public WeightEncoder {
 public:
  explicit Bnb4bitEncoder(const Bnb4bitOptions& o)
      : type_(o.type), blocksize_(o.blocksize), nested_(o.nested), storage_(o.storage) {}

  std::string unquantizable(const TensorInfo& t) const override {
    if (t.dtype != Dtype::F16 && t.dtype != Dtype::BF16 && t.dtype != Dtype::F32)
      return fmt::format("dtype {} (bitsandbytes quantizes F16, BF16 or F32)", dtype_name(t.dtype));
    const uint64_t n = t.element_count();
    if (n == 0) return "no elements";
    const uint64_t bytes = n / 2 + n % 2, item = dtype_bits(storage_) / 8;
    if (bytes % item)
      return fmt::format("{} packed bytes do not fill whole {} storage elements", bytes,
                         dtype_name(storage_));
    return {};
  }

  std::vector<TensorData> outputs(const File& src, const TensorInfo& t) override {
    Weight& wt = weights_[t.name];
    const uint64_t n = t.element_count(), blocks = n / blocksize_ + (n % blocksize_ != 0);
    const uint64_t packed = n / 2 + n % 2;
    BnbQuantState st;
    st.quant_type = type_;
    st.blocksize = blocksize_;
    st.dtype = t.dtype;
    st.shape = t.shape;
    wt.absmax.resize(blocks);
    if (nested_) {
      // The offset goes into the JSON, whose size is part of the header: the absmax of the
      // whole tensor is needed before anything is written.
      for_each_f32_chunk(src, t, blocksize_, input_, [&](uint64_t first, std::span<const float> x) {
        packed_.resize(x.size() / 2 + x.size() % 2);
        bnb_quantize_4bit(x, type_, blocksize_, packed_,
                          std::span(wt.absmax).subspan(first / blocksize_,
                                                       (x.size() + blocksize_ - 1) / blocksize_));
      });
      wt.nest = bnb_nest_absmax(wt.absmax);
      st.nested = true;
      st.nested_blocksize = wt.nest.blocksize;
      st.nested_offset = wt.nest.offset;
      wt.effective = bnb_unnest_absmax(wt.nest.codes, wt.nest.absmax2, bnb_dynamic_map(),
                                       wt.nest.blocksize, wt.nest.offset);
    }
    wt.state_json = bnb_quant_state_json(st);
    wt.state_name = t.name + std::string(kBnbStateInfix) + std::string(bnb_quant_type_name(type_));
    std::vector<TensorData> out;
    // The packed weight replaces the tensor under its own name (declared by the caller).
    out.push_back({t.name, storage_, {packed / (dtype_bits(storage_) / 8), 1}, {}});
    out.push_back({t.name + ".absmax", nested_ ? Dtype::U8 : Dtype::F32, {blocks}, {}});
    out.push_back({t.name + ".quant_map", Dtype::F32, {16}, {}});
    if (nested_) {
      out.push_back({t.name + ".nested_absmax", Dtype::F32, {wt.nest.absmax2.size()}, {}});
      out.push_back({t.name + ".nested_quant_map", Dtype::F32, {256}, {}});
    }
    out.push_back({wt.state_name, Dtype::U8, {wt.state_json.size()}, {}});
    return out;
  }

  void write(Writer& w, const File& src, const TensorInfo& t, QuantizeReport::Item& item,
             const std::function<void(uint64_t)>& tick) override {
    Weight& wt = weights_.at(t.name);
    ErrorStats stats;
    for_each_f32_chunk(src, t, blocksize_, input_, [&](uint64_t first, std::span<const float> x) {
      const uint64_t blocks = x.size() / blocksize_ + (x.size() % blocksize_ != 0);
      packed_.resize(x.size() / 2 + x.size() % 2);
      chunk_absmax_.resize(blocks);
      bnb_quantize_4bit(x, type_, blocksize_, packed_, chunk_absmax_);
      std::span<const float> effective = chunk_absmax_;
      if (nested_) {
        effective = std::span<const float>(wt.effective).subspan(first / blocksize_, blocks);
      } else {
        std::copy(chunk_absmax_.begin(), chunk_absmax_.end(),
                  wt.absmax.begin() + static_cast<ptrdiff_t>(first / blocksize_));
      }
      back_.resize(x.size());
      bnb_dequantize_4bit(packed_, effective, type_, blocksize_, 0, x.size(), Dtype::F32,
                          std::as_writable_bytes(std::span(back_)));
      stats.add(x, back_);
      w.append(t.name, std::as_bytes(std::span(packed_)));
      tick(packed_.size());
    });
    stats.finish(item, t.element_count());
    auto put = [&](const std::string& name, std::span<const std::byte> bytes) {
      w.write(name, bytes);
      tick(bytes.size());
    };
    if (nested_) {
      put(t.name + ".absmax", std::as_bytes(std::span(wt.nest.codes)));
      put(t.name + ".nested_absmax", std::as_bytes(std::span(wt.nest.absmax2)));
      put(t.name + ".nested_quant_map", std::as_bytes(std::span(bnb_dynamic_map())));
    } else {
      put(t.name + ".absmax", std::as_bytes(std::span(wt.absmax)));
    }
    put(t.name + ".quant_map", std::as_bytes(std::span(bnb_4bit_table(type_))));
    put(wt.state_name, std::as_bytes(std::span(wt.state_json)));
    weights_.erase(t.name);
  }

  std::string quantization_config(std::span<const std::string> plain_modules,
                                  Dtype weights_dtype) const override {
    return transformers_bnb_config({type_, nested_, storage_, weights_dtype}, plain_modules);
  }

 private:
  struct Weight {
    std::vector<float> absmax;           // per block
    BnbNestedAbsmax nest;                // nested only
    std::vector<float> effective;        // nested only: the absmax dequantization will use
    std::string state_json, state_name;  // the quant_state tensor's bytes and name
  };
  BnbQuantType type_;
  uint64_t blocksize_;
  bool nested_;
  Dtype storage_;
  std::map<std::string, Weight> weights_;
  std::vector<uint8_t> packed_;
  std::vector<float> chunk_absmax_;
};

constexpr SchemeOptionInfo kOptions[] = {
    {"blocksize", OptionKind::number, "values per absmax, 32..4096 (default 64)",
     "32 64 128 256 512 1024 2048 4096"},
    {"nested", OptionKind::flag, "quantize the absmax too (double quantization)"},
    {"storage", OptionKind::dtype, "dtype the packed bytes are stored as (default U8)",
     "U8 I8 F16 BF16 F32 F64"},
};

}  // namespace

const SchemeEntry& bnb_4bit_scheme_entry() noexcept {
  static const SchemeEntry entry{
      {SchemeKind::bnb_4bit, "nf4, fp4", "nf4",
       "bitsandbytes 4-bit, the layout transformers saves for Linear4bit:\n"
       "<name> (packed) + .absmax, .quant_map, .quant_state.bitsandbytes__<type>\n"
       "(+ .nested_absmax, .nested_quant_map when nested)",
       kOptions},
      [](std::string_view name) -> std::optional<QuantScheme::Options> {
        if (auto type = parse_bnb_quant_type(name)) return Bnb4bitOptions{*type};
        return std::nullopt;
      },
      [](const QuantScheme::Options& o) {
        return std::string(bnb_quant_type_name(std::get<Bnb4bitOptions>(o).type));
      },
      [](const QuantScheme::Options& options) {
        const auto& o = std::get<Bnb4bitOptions>(options);
        if (!is_bnb_4bit_blocksize(o.blocksize))
          throw_invalid(fmt::format("blocksize {} is not one of 32, 64, ..., 4096", o.blocksize));
        if (!is_bnb_storage_dtype(o.storage))
          throw_invalid(fmt::format("quant storage {} is not U8, I8, F16, BF16, F32 or F64",
                                    dtype_name(o.storage)));
      },
      [](QuantScheme::Options& options, std::string_view option, std::string_view value) {
        auto& o = std::get<Bnb4bitOptions>(options);
        if (option == "blocksize") {
          o.blocksize = parse_uint_option(option, value);
        } else if (option == "nested") {
          o.nested = parse_bool_option(option, value);
        } else {
          const auto d = parse_dtype_alias(value);
          if (!d) throw_invalid(fmt::format("unknown dtype {}", quote_name(value)));
          o.storage = *d;
        }
      },
      find_bnb_4bit_weights,
      [](const TensorSet& set, const QuantizedWeight& w) -> std::shared_ptr<const WeightDecoder> {
        return std::make_shared<Bnb4bitDecoder>(set, w);
      },
      [](const TensorSet& set, const QuantizedWeight& w) {
        // The packed codes, two a byte, and one absmax per block, over the flattened weight;
        // the rest (quant_map, quant_state, a nested absmax's own absmax and map) is small.
        const auto& o = std::get<Bnb4bitOptions>(w.scheme.options());
        const TensorInfo& absmax = set.at(w.stored[1]);
        std::vector<StoredPart> parts{{w.stored[0], 0, 0, 2, 1}};
        if (absmax.shape.size() == 1)  // a transposed (2-D) absmax is read whole
          parts.push_back({w.stored[1], 0, 0, o.blocksize, dtype_bits(absmax.dtype) / 8});
        else
          parts.push_back({w.stored[1]});
        for (size_t i = 2; i < w.stored.size(); ++i) parts.push_back({w.stored[i]});
        return parts;
      },
      [](const QuantScheme::Options& o) -> std::unique_ptr<WeightEncoder> {
        return std::make_unique<Bnb4bitEncoder>(std::get<Bnb4bitOptions>(o));
      }};
  return entry;
}

}  // namespace tlio::detail
