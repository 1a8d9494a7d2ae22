// quant/hub/ct_int_scheme.cpp: the registry entry of compressed-tensors' integer weights, read
// only: pack-quantized (<m>.weight_packed I32 [..., out, ceil(in*bits/32)], each row a dense
// LSB-first stream of 1..8-bit fields in offset binary, with <m>.weight_shape giving the logical
// shape) and int-quantized (<m>.weight I8, the values themselves). Scales <m>.weight_scale per
// tensor, row or group of inputs (<m>.weight_g_idx names each input's group); asymmetric weights
// add <m>.weight_zero_point (packed along the output rows when the weight is packed).
// y = (q - z) * s, exact in f32, rounded once to the scale's dtype, the dtype the reference
// computes in.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "common/json_text.hpp"
#include "quant/hub/hub_config.hpp"
#include "quant/hub/hub_values.hpp"
#include "quant/schemes.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

constexpr uint64_t kMaxBits = 8;

// The logical shape a weight_shape tensor holds (I64 or I32 values).
Shape recorded_shape(const TensorSet& set, const TensorInfo& t) {
  if ((t.dtype != Dtype::I64 && t.dtype != Dtype::I32) || t.shape.size() != 1 || t.shape[0] < 2 ||
      t.shape[0] > 3)
    malformed(t.name, fmt::format("{} is {} {}; a weight_shape is 2 or 3 integers",
                                  quote_name(t.name), dtype_name(t.dtype), shape_text(t.shape)));
  const TensorView view = set.view(t.name);  // kept: a pread file's view owns its bytes
  const std::byte* bytes = view.bytes().data();
  Shape shape;
  for (uint64_t i = 0; i < t.shape[0]; ++i) {
    int64_t v = 0;
    if (t.dtype == Dtype::I64) {
      std::memcpy(&v, bytes + 8 * i, 8);
    } else {
      int32_t v32 = 0;
      std::memcpy(&v32, bytes + 4 * i, 4);
      v = v32;
    }
    if (v < 0) malformed(t.name, fmt::format("{} holds {}", quote_name(t.name), v));
    shape.push_back(static_cast<uint64_t>(v));
  }
  return shape;
}

// The field width: the config's when it gives that many words, else the only one that does.
uint64_t packed_bits(const HubQuantConfig& c, const TensorInfo& packed, uint64_t in) {
  const uint64_t words = packed.shape.back();
  if (in / 32 > words)  // more fields than 1-bit fields would fill (and in * bits cannot overflow)
    malformed(packed.name, fmt::format("{} has {} words per row; {} inputs need more",
                                       quote_name(packed.name), words, in));
  const auto fits = [&](uint64_t b) { return ceil_div(in * b, 32) == words; };
  if (c.bits && *c.bits <= kMaxBits && fits(*c.bits)) return *c.bits;
  std::vector<uint64_t> widths;
  for (uint64_t b = 1; b <= kMaxBits; ++b)
    if (fits(b)) widths.push_back(b);
  if (widths.size() != 1)
    malformed(
        packed.name,
        fmt::format("{} has {} words per row for {} inputs: {}", quote_name(packed.name), words, in,
                    widths.empty() ? std::string("no width of 1 to 8 bits packs that")
                                   : fmt::format("{} bits all fit; the model's quantization_config "
                                                 "must say which",
                                                 fmt::join(widths, " or "))));
  return widths[0];
}

// Tensor, channel or group scales, from the scale's shape against the weight's.
void scale_granularity(const HubQuantConfig& c, const TensorInfo& s, const Shape& weight,
                       bool g_idx, CtIntOptions& o) {
  if (s.dtype != Dtype::F32 && s.dtype != Dtype::BF16 && s.dtype != Dtype::F16)
    malformed(s.name, fmt::format("{} is {}; integer weights' scales are F32, BF16 or F16",
                                  quote_name(s.name), dtype_name(s.dtype)));
  const uint64_t in = weight.back();
  const std::span<const uint64_t> rows(weight.begin(), weight.end() - 1);
  if (s.element_count() == 1 && s.shape.size() <= 1) {
    o.tensor = true;
    return;
  }
  const bool rows_match =
      s.shape.size() == weight.size() && std::equal(rows.begin(), rows.end(), s.shape.begin());
  const uint64_t groups = rows_match ? s.shape.back() : 0;
  if (groups == 0)
    malformed(s.name,
              fmt::format("{} is {}; the scales of a {} weight are one value, [..., out, 1] "
                          "or [..., out, groups]",
                          quote_name(s.name), shape_text(s.shape), shape_text(weight)));
  if (groups == 1) return;  // channel
  const std::optional<uint64_t> configured =
      c.group_size && *c.group_size > 0 ? std::optional(static_cast<uint64_t>(*c.group_size))
                                        : std::nullopt;
  if (configured && ceil_div(in, *configured) == groups) {
    o.group = *configured;
  } else if (configured && c.ct_config_groups == 1 &&
             !g_idx) {  // the only group's size is every weight's
    malformed(
        s.name,
        fmt::format("{} has {} groups; {} inputs in groups of {} (quantization_config) need {}",
                    quote_name(s.name), groups, in, *configured, ceil_div(in, *configured)));
  } else if (in % groups == 0 || g_idx) {  // with g_idx the group size is only a name
    o.group = ceil_div(in, groups);
  } else {
    malformed(
        s.name,
        fmt::format("{} has {} groups of {} inputs, which no group size tells apart{}",
                    quote_name(s.name), groups, in,
                    configured ? fmt::format(" (quantization_config's group_size {} gives {})",
                                             *configured, ceil_div(in, *configured))
                               : " without the model's quantization_config"));
  }
}

QuantizedWeight ct_int_weight(const TensorSet& set, const HubQuantConfig& config,
                              const TensorInfo& q, const std::string& base, bool packed) {
  const TensorInfo* s = set.find(base + ".weight_scale");
  const TensorInfo* shape_tensor = packed ? set.find(base + ".weight_shape") : nullptr;
  // Packed words are never a weight by themselves: without their parts nothing is read.
  for (const auto& [part, found] : {std::pair{".weight_scale", s != nullptr},
                                    std::pair{".weight_shape", !packed || shape_tensor}})
    if (!found)
      malformed(q.name, fmt::format("{} has no {} (a shard read without the others?)",
                                    quote_name(q.name), quote_name(base + part)));
  const TensorInfo* z = set.find(base + ".weight_zero_point");
  const TensorInfo* g_idx = set.find(base + ".weight_g_idx");
  CtIntOptions o;
  o.packed = packed;
  o.asym = z != nullptr;
  Shape weight = q.shape;
  if (packed) {
    weight = recorded_shape(set, *shape_tensor);
    if (q.shape.size() != weight.size() ||
        !std::equal(weight.begin(), weight.end() - 1, q.shape.begin()))
      malformed(q.name, fmt::format("{} is {}; {} says the weight is {}", quote_name(q.name),
                                    shape_text(q.shape), quote_name(shape_tensor->name),
                                    shape_text(weight)));
    o.bits = packed_bits(config, q, weight.back());
  } else {
    o.bits = 8;
    if (q.shape.size() < 2)
      malformed(q.name, fmt::format("{} is {}; an I8 weight with scales is a matrix",
                                    quote_name(q.name), shape_text(q.shape)));
  }
  scale_granularity(config, *s, weight, g_idx != nullptr, o);
  if (g_idx && (g_idx->dtype != Dtype::I32 || g_idx->shape != Shape{weight.back()} || o.tensor))
    malformed(g_idx->name,
              fmt::format("{} is {} {}; a g_idx of a {} weight with group scales is I32 [{}]",
                          quote_name(g_idx->name), dtype_name(g_idx->dtype),
                          shape_text(g_idx->shape), shape_text(weight), weight.back()));
  if (g_idx)  // checked here, so that validate reports a bad group
    group_indices(set.view(g_idx->name).bytes(), g_idx->name, weight.back(), s->shape.back());
  if (z) {
    if (o.tensor)
      refuse_undecoded(z->name, fmt::format("{} beside one scale: asymmetric per-tensor integers, "
                                            "which tlio does not decode",
                                            quote_name(z->name)));
    Shape need = s->shape;  // unpacked zero points sit beside their scales
    if (packed) need[need.size() - 2] = ceil_div(need[need.size() - 2] * o.bits, 32);
    if (z->dtype != (packed ? Dtype::I32 : Dtype::I8) || z->shape != need)
      malformed(z->name,
                fmt::format("{} is {} {}; the zero points of {} are {} {}", quote_name(z->name),
                            dtype_name(z->dtype), shape_text(z->shape), quote_name(q.name),
                            packed ? "I32" : "I8", shape_text(need)));
  }
  QuantizedWeight w;
  w.name = base + ".weight";
  w.scheme = QuantScheme(o);
  w.shape = std::move(weight);
  w.dtype = s->dtype;
  // int-quantized W8A8's static activation scales go with the weight.
  const TensorInfo* input_scale = set.find(base + ".input_scale");
  const TensorInfo* input_zero = set.find(base + ".input_zero_point");
  for (const TensorInfo* t : {&q, s, z, g_idx, shape_tensor, input_scale, input_zero})
    add_stored(w, t);
  return w;
}

std::vector<QuantizedWeight> detect(const TensorSet& set) {
  std::optional<HubQuantConfig> config;
  std::vector<QuantizedWeight> out;
  for (const TensorInfo* t : set.tensors()) {
    auto base = strip_suffix(t->name, ".weight_packed");
    const bool packed = base.has_value();
    if (!packed) {
      base = strip_suffix(t->name, ".weight");
      if (!base || t->dtype != Dtype::I8 || !set.find(std::string(*base) + ".weight_scale"))
        continue;
    } else if (t->dtype != Dtype::I32) {
      const TensorInfo* s = set.find(std::string(*base) + ".weight_scale");
      if (t->dtype == Dtype::U8 && s &&
          (s->dtype == Dtype::U8 || s->dtype == Dtype::F8_E8M0 ||
           set.find(std::string(*base) + ".weight_global_scale")))
        continue;  // packed FP4: mxfp4's or nvfp4's
      malformed(t->name,
                fmt::format("{} is {}{}; compressed-tensors packs integers into I32, and FP4 "
                            "into U8 beside E8M0 scales or a global scale",
                            quote_name(t->name), dtype_name(t->dtype),
                            s ? "" : " without its weight_scale"));
    }
    if (!config) config = hub_quant_config(set);
    out.push_back(ct_int_weight(set, *config, *t, std::string(*base), packed));
  }
  return out;
}

// Fields k .. of `Bits` bits, whole words of them while they last before `end` (k on a word's
// first field): (field - bias) * s each, the same operations as the field-by-field loop, in a
// loop of constant length the compiler makes SIMD. Returns the first field not decoded.
template <unsigned Bits>
uint64_t whole_words(const std::byte* words, uint64_t k, uint64_t end, int32_t bias, float s,
                     float* out) {
  constexpr unsigned kPerWord = 32 / Bits;
  constexpr uint32_t kMask = (1u << Bits) - 1;
  for (; k + kPerWord <= end; k += kPerWord, out += kPerWord) {
    const uint32_t word = load_word(words, k / kPerWord);
    for (unsigned j = 0; j < kPerWord; ++j)
      out[j] = static_cast<float>(static_cast<int32_t>((word >> (Bits * j)) & kMask) - bias) * s;
  }
  return k;
}

class CtIntDecoder final : public WeightDecoder {
 public:
  CtIntDecoder(const TensorSet& set, const QuantizedWeight& w)
      : options_(std::get<CtIntOptions>(w.scheme.options())),
        values_(set.view(w.stored[0])),
        scales_(set.view(w.stored[1])),
        scale_dtype_(set.at(w.stored[1]).dtype),
        in_(w.shape.back()),
        out_(w.shape[w.shape.size() - 2]),
        row_words_(options_.packed ? ceil_div(in_ * options_.bits, 32) : 0),
        groups_(options_.tensor ? 1 : set.at(w.stored[1]).shape.back()),
        offset_(options_.packed ? int32_t{1} << (options_.bits - 1) : 0),
        reference_(w.dtype) {
    size_t next = 2;
    if (options_.asym) zeros_.emplace(set.view(w.stored[next++]));
    if (next < w.stored.size() && w.stored[next].ends_with(".weight_g_idx"))
      group_of_ = group_indices(set.view(w.stored[next]).bytes(), w.stored[next], in_, groups_);
  }

  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    decode_chunked(first, count, reference_, out, dst, [&](uint64_t e, std::span<float> v) {
      for (size_t i = 0; i < v.size();) {
        const uint64_t row = (e + i) / in_, k0 = (e + i) % in_;
        const uint64_t k1 = k0 + std::min<uint64_t>(in_ - k0, v.size() - i);
        // Runs of inputs that share a group: its scale and zero point read once.
        for (uint64_t k = k0; k < k1;) {
          const uint64_t g = group(k);
          const uint64_t end = group_of_.empty() && options_.group
                                   ? std::min(k1, (g + 1) * options_.group)
                               : group_of_.empty() ? k1
                                                   : k + 1;
          const uint64_t at = options_.tensor ? 0 : row * groups_ + g;
          const float s =
              scale_value(scale_dtype_, scales_.bytes().data() + at * dtype_bits(scale_dtype_) / 8);
          const int32_t z = options_.asym ? zero(row, g) : 0;
          if (options_.packed &&
              32 % options_.bits == 0) {  // 1, 2, 4, 8 bits: whole fields per word
            const std::byte* words = values_.bytes().data() + 4 * row * row_words_;
            const uint64_t per_word = 32 / options_.bits;
            const uint32_t mask = (1u << options_.bits) - 1;
            while (k < end) {
              if (options_.bits == 4 && k % 8 == 0 && end - k >= 8) {  // whole words, unrolled
                k = whole_words<4>(words, k, end, offset_ + z, s, &v[i + k - k0]);
                continue;
              }
              const uint32_t word = load_word(words, k / per_word);
              for (uint64_t shift = k % per_word * options_.bits; k < end && shift < 32;
                   ++k, shift += options_.bits)
                v[i + k - k0] =
                    static_cast<float>(static_cast<int32_t>((word >> shift) & mask) - offset_ - z) *
                    s;
            }
          }
          for (; k < end; ++k) v[i + k - k0] = static_cast<float>(code(row, k) - z) * s;
        }
        i += k1 - k0;
      }
    });
  }

 private:
  uint64_t group(uint64_t k) const {
    if (!group_of_.empty()) return group_of_[k];
    return options_.group ? k / options_.group : 0;
  }

  int32_t code(uint64_t row, uint64_t k) const {
    const std::byte* bytes = values_.bytes().data();
    if (!options_.packed) return static_cast<int8_t>(bytes[row * in_ + k]);
    return static_cast<int32_t>(field(bytes + 4 * row * row_words_, 1, k, options_.bits)) - offset_;
  }

  // Packed zero points run down the output rows of each group's column, slice by slice.
  int32_t zero(uint64_t row, uint64_t g) const {
    const std::byte* bytes = zeros_->bytes().data();
    if (!options_.packed) return static_cast<int8_t>(bytes[row * groups_ + g]);
    const uint64_t slice = row / out_, r = row % out_, z_rows = ceil_div(out_ * options_.bits, 32);
    const std::byte* column = bytes + 4 * (slice * z_rows * groups_ + g);
    return static_cast<int32_t>(field(column, groups_, r, options_.bits)) - offset_;
  }

  CtIntOptions options_;
  TensorView values_, scales_;
  std::optional<TensorView> zeros_;  // asymmetric only
  Dtype scale_dtype_;
  uint64_t in_, out_, row_words_, groups_;
  int32_t offset_;
  Dtype reference_;
  std::vector<uint32_t> group_of_;
};

std::vector<StoredPart> ct_int_parts(const TensorSet& set, const QuantizedWeight& w) {
  const auto& o = std::get<CtIntOptions>(w.scheme.options());
  const uint64_t in = w.shape.back();
  std::vector<StoredPart> parts;
  if (o.packed)  // 32 fields fill exactly `bits` words
    parts.push_back({w.stored[0], in, 4 * ceil_div(in * o.bits, 32), 32, 4 * o.bits});
  else
    parts.push_back({w.stored[0], in, in, 1, 1});
  const TensorInfo& s = set.at(w.stored[1]);
  const uint64_t row_bytes = s.shape.empty() ? 0 : s.shape.back() * (dtype_bits(s.dtype) / 8);
  if (o.tensor)
    parts.push_back({w.stored[1]});
  else  // a row's scales whole (g_idx may take any group)
    parts.push_back({w.stored[1], in, row_bytes, in, row_bytes});
  for (size_t i = 2; i < w.stored.size(); ++i) {
    if (o.asym && !o.packed && i == 2)
      parts.push_back({w.stored[i], in, s.shape.back(), in, s.shape.back()});
    else
      parts.push_back({w.stored[i]});
  }
  return parts;
}

std::string ct_int_name(const QuantScheme::Options& options) {
  const auto& o = std::get<CtIntOptions>(options);
  const std::string scope = o.tensor ? "tensor" : o.group ? fmt::format("g{}", o.group) : "channel";
  return fmt::format("ct-int{}-{}{}", o.bits, scope, o.asym ? "-asym" : "");
}

}  // namespace

const SchemeEntry& ct_int_scheme_entry() noexcept {
  static const SchemeEntry entry = read_only_entry(
      SchemeKind::ct_int,
      "ct-int<bits>-g<group>, ct-int<bits>-channel, ct-int<bits>-tensor [-asym]", "ct-int4-g128",
      "<p>.weight_packed I32 [out, in*bits/32] + <p>.weight_shape + <p>.weight_scale "
      "[+ <p>.weight_zero_point] [+ <p>.weight_g_idx]\n"
      "<p>.weight I8 + <p>.weight_scale [+ <p>.weight_zero_point I8]",
      ct_int_name,
      [](const QuantScheme::Options& o) {
        const uint64_t bits = std::get<CtIntOptions>(o).bits;
        if (bits == 0 || bits > kMaxBits)
          throw_invalid(fmt::format("compressed-tensors packs 1 to 8 bits, not {}", bits));
      },
      detect,
      [](const TensorSet& set, const QuantizedWeight& w) -> std::shared_ptr<const WeightDecoder> {
        return std::make_shared<CtIntDecoder>(set, w);
      },
      ct_int_parts);
  return entry;
}

}  // namespace tlio::detail
