// quant/int4/int4_scheme.cpp: the registry entry of tinyllm int4-g<group>-sym: its name, detection
// and checks of <w>.qweight + <w>.scales pairs, the decoder and the encoder.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "common/json_text.hpp"
#include "quant/int4/int4.hpp"
#include "quant/schemes.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

constexpr std::string_view kQweight = ".qweight";
constexpr std::string_view kScales = ".scales";

[[noreturn]] void int4_error(const std::string& tensor, std::string detail) {
  throw_format(Rule::int4, tensor, std::move(detail));
}

// "int4-g<group>-sym" with a positive decimal group without leading zeros.
std::optional<uint64_t> parse_group(std::string_view scheme) noexcept {
  constexpr std::string_view prefix = "int4-g", suffix = "-sym";
  if (scheme.size() <= prefix.size() + suffix.size() || scheme.substr(0, prefix.size()) != prefix ||
      !scheme.ends_with(suffix))
    return std::nullopt;
  std::string_view digits =
      scheme.substr(prefix.size(), scheme.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits[0] == '0') return std::nullopt;
  uint64_t group = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), group);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  return group;
}

// ---- detection and checks --------------------------------------------------------------------

std::vector<QuantizedWeight> detect(const TensorSet& f) {
  std::optional<uint64_t> declared_group;
  auto quant = f.metadata().find("quant");
  if (quant != f.metadata().end()) {
    declared_group = parse_group(quant->second);
    if (!declared_group)
      int4_error("__metadata__", fmt::format("metadata quant {} is not a scheme tlio knows "
                                             "(int4-g<group>-sym)",
                                             quote_name(quant->second)));
  }
  std::vector<QuantizedWeight> out;
  bool any_qweight = false;
  for (const TensorInfo* t : f.tensors())
    if (t->name.ends_with(kQweight)) any_qweight = true;
  // GPTQ and AWQ store <p>.qweight and <p>.scales too, with <p>.qzeros: theirs (quant/hub/).
  const auto packed_with_zeros = [&](std::string_view base) {
    return f.find(std::string(base) + ".qzeros") != nullptr;
  };
  for (const TensorInfo* tp : f.tensors()) {
    const TensorInfo& t = *tp;
    if (t.name.ends_with(kScales) && (declared_group || any_qweight)) {
      std::string base = t.name.substr(0, t.name.size() - kScales.size());
      if (packed_with_zeros(base)) continue;
      if (!f.find(base + std::string(kQweight)))
        int4_error(t.name, fmt::format("{} has no {}", quote_name(t.name),
                                       quote_name(base + std::string(kQweight))));
    }
    if (!t.name.ends_with(kQweight)) continue;
    std::string base = t.name.substr(0, t.name.size() - kQweight.size());
    if (packed_with_zeros(base)) continue;
    const std::string scales_name = base + std::string(kScales);
    const TensorInfo* s = f.find(scales_name);
    if (!s)
      int4_error(t.name, fmt::format("{} has no {}", quote_name(t.name), quote_name(scales_name)));
    if (t.dtype != Dtype::U8 || t.shape.size() != 2)
      int4_error(t.name,
                 fmt::format("{} is {} [{}]; int4 qweight is U8 [out, in/2]", quote_name(t.name),
                             dtype_name(t.dtype), fmt::join(t.shape, ", ")));
    if (s->dtype != Dtype::F16 || s->shape.size() != 2)
      int4_error(s->name,
                 fmt::format("{} is {} [{}]; int4 scales are F16 [out, in/group]",
                             quote_name(s->name), dtype_name(s->dtype), fmt::join(s->shape, ", ")));
    const uint64_t out_features = t.shape[0], in_features = t.shape[1] * 2;
    if (s->shape[0] != out_features)
      int4_error(s->name, fmt::format("{} has {} rows, {} has {}", quote_name(s->name), s->shape[0],
                                      quote_name(t.name), out_features));
    uint64_t group;
    if (declared_group) {
      group = *declared_group;
      if (in_features % group || s->shape[1] != in_features / group)
        int4_error(s->name, fmt::format("{} has {} column(s); with group {} (metadata quant) and "
                                        "{} inputs it needs {}",
                                        quote_name(s->name), s->shape[1], group, in_features,
                                        in_features % group ? std::string("a group dividing them")
                                                            : std::to_string(in_features / group)));
    } else {
      if (s->shape[1] == 0 || in_features % s->shape[1])
        int4_error(s->name,
                   fmt::format("{} has {} column(s), which do not divide the {} inputs of {}",
                               quote_name(s->name), s->shape[1], in_features, quote_name(t.name)));
      group = in_features / s->shape[1];
    }
    QuantizedWeight w;
    w.name = base;
    w.scheme = QuantScheme(Int4Options{group});
    w.shape = Shape{out_features, in_features};
    w.stored = {t.name, scales_name};
    w.stored_bytes = t.byte_size() + s->byte_size();
    out.push_back(std::move(w));
  }
  if (out.size() > 1) {  // one file, one group (the metadata can only name one)
    for (const auto& w : out)
      if (w.scheme != out[0].scheme)
        int4_error(w.name + std::string(kScales),
                   fmt::format("{} implies {} but {} implies {}", quote_name(w.name),
                               w.scheme.name(), quote_name(out[0].name), out[0].scheme.name()));
  }
  return out;
}

// ---- decoding --------------------------------------------------------------------------------

class Int4Decoder final : public WeightDecoder {
 public:
  Int4Decoder(const TensorSet& set, const QuantizedWeight& w)
      : qweight_(set.view(w.stored[0])),
        rows_(w.shape[0]),
        cols_(w.shape[1]),
        group_(w.scheme.block()) {
    const TensorView s = set.view(w.stored[1]);
    scales_.resize(s.bytes().size() / 2);  // small: copied, so aligned
    std::memcpy(scales_.data(), s.bytes().data(), s.bytes().size());
  }

  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    const uint64_t end = first + count, out_bytes = dtype_bits(out) / 8;
    const std::span<const uint8_t> q(reinterpret_cast<const uint8_t*>(qweight_.bytes().data()),
                                     qweight_.bytes().size());
    if (dst.size() != count * out_bytes)
      throw_invalid(fmt::format("destination holds {} bytes, {} values need {}", dst.size(), count,
                                count * out_bytes));
    // Whole rows go straight to dst; part of a row through scratch, decoding only the groups
    // that hold it (a column slice costs its share of the row, not the row).
    std::vector<std::byte> row;
    const uint64_t groups = cols_ / group_;
    uint64_t i = first;
    std::byte* o = dst.data();
    while (i < end) {
      const uint64_t r = i / cols_, in_row = i % cols_;
      if (in_row == 0 && end - i >= cols_) {
        const uint64_t whole = (end - i) / cols_;
        int4_dequantize_rows(q, scales_, rows_, cols_, group_, r, whole, out,
                             {o, whole * cols_ * out_bytes});
        i += whole * cols_;
        o += whole * cols_ * out_bytes;
        continue;
      }
      const uint64_t take = std::min(cols_ - in_row, end - i);
      // Groups [g0, g1) cover the columns; with an odd group size (groups may start mid-byte)
      // the whole row is decoded.
      uint64_t g0 = in_row / group_, g1 = (in_row + take + group_ - 1) / group_;
      if (group_ % 2) g0 = 0, g1 = groups;
      const uint64_t sub_cols = (g1 - g0) * group_;
      row.resize(sub_cols * out_bytes);
      int4_dequantize_rows(q.subspan(r * cols_ / 2 + g0 * group_ / 2, sub_cols / 2),
                           std::span(scales_).subspan(r * groups + g0, g1 - g0), 1, sub_cols,
                           group_, 0, 1, out, row);
      std::memcpy(o, row.data() + (in_row - g0 * group_) * out_bytes, take * out_bytes);
      i += take;
      o += take * out_bytes;
    }
  }

 private:
  TensorView qweight_;
  std::vector<uint16_t> scales_;
  uint64_t rows_, cols_, group_;
};

// ---- encoding --------------------------------------------------------------------------------

class Int4Encoder final : public WeightEncoder {
 public:
  explicit Int4Encoder(uint64_t group) : group_(group) {}

  std::string unquantizable(const TensorInfo& t) const override {
    if (t.shape.size() != 2) return fmt::format("rank {} (int4 needs a matrix)", t.shape.size());
    if (!is_floating(t.dtype) || !can_convert(t.dtype, Dtype::F32))
      return fmt::format("dtype {} is not a floating type", dtype_name(t.dtype));
    if (t.shape[1] % 2) return fmt::format("{} columns (int4 needs an even number)", t.shape[1]);
    if (t.shape[1] % group_)
      return fmt::format("{} columns are not a multiple of group {}", t.shape[1], group_);
    return {};
  }

  std::vector<TensorData> outputs(const File&, const TensorInfo& t) override {
    return {{t.name + std::string(kQweight), Dtype::U8, {t.shape[0], t.shape[1] / 2}, {}},
            {t.name + std::string(kScales), Dtype::F16, {t.shape[0], t.shape[1] / group_}, {}}};
  }

  void write(Writer& w, const File& src, const TensorInfo& t, QuantizeReport::Item& item,
             const std::function<void(uint64_t)>& tick) override {
    const uint64_t cols = t.shape[1];
    ErrorStats stats;
    for_each_f32_chunk(src, t, std::max<uint64_t>(cols, 1), input_,
                       [&](uint64_t, std::span<const float> block) {
                         const uint64_t rows = block.size() / cols;
                         back_.resize(block.size());
                         q_.resize(block.size() / 2);
                         s_.resize(block.size() / group_);
                         int4_quantize(block, rows, cols, group_, q_, s_);
                         int4_dequantize_rows(q_, s_, rows, cols, group_, 0, rows, Dtype::F32,
                                              std::as_writable_bytes(std::span(back_)));
                         stats.add(block, back_);
                         w.append(t.name + std::string(kQweight), std::as_bytes(std::span(q_)));
                         w.append(t.name + std::string(kScales), std::as_bytes(std::span(s_)));
                         tick(q_.size() + s_.size() * 2);
                       });
    stats.finish(item, t.element_count());
  }

  void update_metadata(Metadata& meta) const override {
    // The layout fixes "format"; the source's own (a model's "pt") is kept for dequantize.
    if (auto f = meta.find("format"); f != meta.end() && f->second != "tinyllm")
      meta[kSourceFormat] = f->second;
    meta["format"] = "tinyllm";
    meta["quant"] = fmt::format("int4-g{}-sym", group_);
  }

 private:
  uint64_t group_;
  std::vector<uint8_t> q_;
  std::vector<uint16_t> s_;
};

constexpr SchemeOptionInfo kNoOptions[] = {{"", OptionKind::flag, ""}};

}  // namespace

const SchemeEntry& int4_scheme_entry() noexcept {
  static const SchemeEntry entry{
      {SchemeKind::int4, "int4-g<group>-sym", "int4-g32-sym",
       "tinyllm: <name> becomes <name>.qweight + <name>.scales", std::span(kNoOptions).first(0)},
      [](std::string_view name) -> std::optional<QuantScheme::Options> {
        if (auto group = parse_group(name)) return Int4Options{*group};
        return std::nullopt;
      },
      [](const QuantScheme::Options& o) {
        return fmt::format("int4-g{}-sym", std::get<Int4Options>(o).group);
      },
      [](const QuantScheme::Options& o) {
        if (std::get<Int4Options>(o).group == 0) throw_invalid("an int4 group is at least 1");
      },
      [](QuantScheme::Options&, std::string_view, std::string_view) {},
      detect,
      [](const TensorSet& set, const QuantizedWeight& w) -> std::shared_ptr<const WeightDecoder> {
        return std::make_shared<Int4Decoder>(set, w);
      },
      [](const TensorSet&, const QuantizedWeight& w) {
        // .qweight [out, in/2]: two codes a byte; .scales F16 [out, in/group].
        const uint64_t cols = w.shape[1], group = w.scheme.block();
        return std::vector<StoredPart>{{w.stored[0], cols, cols / 2, 2, 1},
                                       {w.stored[1], cols, cols / group * 2, group, 2}};
      },
      [](const QuantScheme::Options& o) -> std::unique_ptr<WeightEncoder> {
        return std::make_unique<Int4Encoder>(std::get<Int4Options>(o).group);
      }};
  return entry;
}

}  // namespace tlio::detail
