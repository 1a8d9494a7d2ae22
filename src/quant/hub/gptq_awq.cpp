// quant/hub/gptq_awq.cpp: the registry entries of GPTQ (v1 and v2; 2, 3, 4 and 8 bits; g_idx)
// and AWQ (GEMM and GEMV), read only. GPTQ and AWQ GEMM store a Linear's weight transposed, as
// integer fields packed into I32 words with zero points and scales per group of inputs:
//   GPTQ: qweight [in*bits/32, out], each column a dense LSB-first stream of `bits`-wide fields
//         along the inputs (fields cross words at 3 bits); qzeros [groups, out*bits/32], a stream
//         along the outputs; scales [groups, out]; g_idx [in] (the group of each input).
//   AWQ GEMM: qweight [in, out/8] and qzeros [groups, out/8], eight 4-bit fields per word along
//         the outputs in the order 0 2 4 6 1 3 5 7; scales [groups, out].
//   AWQ GEMV: the Linear's [out, in], as gemv_layout below says.
// W[n, k] = scales[g(k), n] * (q[k, n] - z[g(k), n]), with z + 1 (mod 2^bits) for GPTQ v1, whose
// packer stored zero - 1. The product is exact in f32 and rounded once to the scales' dtype, the
// dtype both references compute in.
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

constexpr std::string_view kQweight = ".qweight", kQzeros = ".qzeros", kScales = ".scales",
                           kGidx = ".g_idx";
// AWQ's packer puts logical column c of each run of eight at nibble kAwqNibble[c].
constexpr uint32_t kAwqNibble[8] = {0, 4, 1, 5, 2, 6, 3, 7};
// Logical output rows decoded together: their words of one input row are adjacent in qweight.
constexpr uint64_t kTileRows = 32;

struct PackedLayout {
  SchemeKind kind;
  uint64_t bits, group, in, out;
  bool v2, gemv;
};

// AutoAWQ's GEMV layout, which only the config tells from the others: qweight [out, in/8] and
// qzeros [out, W], eight 4-bit fields per word in natural order along the inputs and the
// groups; scales [out, 8W] (W words of zero points cover the groups, padded).
PackedLayout gemv_layout(const HubQuantConfig& c, const TensorInfo& q, const TensorInfo& z,
                         const TensorInfo& s) {
  const uint64_t out = q.shape[0], in = q.shape[1] * 8;
  if (z.shape[0] != out || s.shape[0] != out || s.shape[1] != z.shape[1] * 8)
    malformed(q.name,
              fmt::format("{} {}, {} {} and {} {} are not AWQ GEMV's [out, in/8], [out, W] and "
                          "[out, 8W]",
                          quote_name(q.name), shape_text(q.shape), quote_name(z.name),
                          shape_text(z.shape), quote_name(s.name), shape_text(s.shape)));
  if (!c.group_size)  // (-1 or positive: hub_quant_config refused the others)
    malformed(q.name, fmt::format("{} is AWQ GEMV, whose group size only quantization_config's "
                                  "group_size (q_group_size) says",
                                  quote_name(q.name)));
  const uint64_t group = *c.group_size == -1 ? in : static_cast<uint64_t>(*c.group_size);
  if (c.bits && *c.bits != 4)
    malformed(q.name, fmt::format("quantization_config says {} bits; AWQ GEMV packs 4", *c.bits));
  if (in > 0 && ceil_div(in, group) > s.shape[1])
    malformed(s.name, fmt::format("{} has {} groups; {} inputs in groups of {} need {}",
                                  quote_name(s.name), s.shape[1], in, group, ceil_div(in, group)));
  return {SchemeKind::awq, 4, group, in, out, false, true};
}

// bits: from the config, else from g_idx's length, else from the zero points' width.
uint64_t gptq_bits(const HubQuantConfig& c, const TensorInfo& q, const TensorInfo& z,
                   const TensorInfo* g_idx) {
  uint64_t bits = 0;
  if (c.bits)
    bits = *c.bits;
  else if (g_idx && g_idx->shape.size() == 1 && g_idx->shape[0] &&
           q.shape[0] * 32 % g_idx->shape[0] == 0)
    bits = q.shape[0] * 32 / g_idx->shape[0];
  else if (q.shape[1] && z.shape[1] * 32 % q.shape[1] == 0)
    bits = z.shape[1] * 32 / q.shape[1];
  if (bits != 2 && bits != 3 && bits != 4 && bits != 8)
    malformed(q.name,
              fmt::format("{} packs {} bits per field{}; GPTQ has 2, 3, 4 or 8", quote_name(q.name),
                          bits, c.bits ? " (quantization_config)" : " (from the shapes)"));
  return bits;
}

// The layout of one <p>.qweight, checked against its companions.
PackedLayout layout(const HubQuantConfig& c, const TensorInfo& q, const TensorInfo& z,
                    const TensorInfo& s, const TensorInfo* g_idx) {
  for (const TensorInfo* t : {&q, &z})
    if (t->dtype != Dtype::I32 || t->shape.size() != 2)
      malformed(t->name,
                fmt::format("{} is {} {}; GPTQ and AWQ pack I32 matrices", quote_name(t->name),
                            dtype_name(t->dtype), shape_text(t->shape)));
  if ((s.dtype != Dtype::F16 && s.dtype != Dtype::BF16 && s.dtype != Dtype::F32) ||
      s.shape.size() != 2)
    malformed(s.name,
              fmt::format("{} is {} {}; scales are an F16, BF16 or F32 [groups, out] matrix",
                          quote_name(s.name), dtype_name(s.dtype), shape_text(s.shape)));
  if (c.method == "awq" && awq_layout_is(c, "gemv")) {
    if (g_idx)
      malformed(g_idx->name, fmt::format("{} beside an AWQ weight", quote_name(g_idx->name)));
    return gemv_layout(c, q, z, s);
  }
  const uint64_t groups = s.shape[0], out = s.shape[1];
  if (groups == 0 || out == 0 || q.shape[0] == 0)
    malformed(s.name,
              fmt::format("{} is {}: an empty weight", quote_name(s.name), shape_text(s.shape)));
  if (z.shape[0] != groups)
    malformed(z.name, fmt::format("{} has {} rows, {} has {} groups", quote_name(z.name),
                                  z.shape[0], quote_name(s.name), groups));
  PackedLayout l{};
  if (q.shape[1] == out) {
    l.kind = SchemeKind::gptq;
    l.bits = gptq_bits(c, q, z, g_idx);
    l.in = q.shape[0] * 32 / l.bits;
    if (q.shape[0] * 32 % l.bits || z.shape[1] * 32 != out * l.bits)
      malformed(q.name, fmt::format("{} {} and {} {} do not pack {}-bit fields of {} outputs",
                                    quote_name(q.name), shape_text(q.shape), quote_name(z.name),
                                    shape_text(z.shape), l.bits, out));
    l.v2 = c.checkpoint_format == "gptq_v2";
  } else if (q.shape[1] * 8 == out) {
    l.kind = SchemeKind::awq;
    l.bits = 4;
    l.in = q.shape[0];
    if (c.bits && *c.bits != 4)
      malformed(q.name,
                fmt::format("quantization_config says {} bits; AWQ's GEMM layout {} packs 4",
                            *c.bits, shape_text(q.shape)));
    if (z.shape[1] * 8 != out)
      malformed(z.name, fmt::format("{} is {}; AWQ zero points of {} outputs are [groups, {}]",
                                    quote_name(z.name), shape_text(z.shape), out, out / 8));
    if (g_idx)
      malformed(g_idx->name, fmt::format("{} beside an AWQ weight", quote_name(g_idx->name)));
  } else {
    refuse_undecoded(q.name,
                     fmt::format("{} {} with scales {}: neither GPTQ [in*bits/32, out] nor "
                                 "AWQ GEMM [in, out/8] (AWQ GEMV is read when "
                                 "quantization_config names it; kernel layouts are not decoded)",
                                 quote_name(q.name), shape_text(q.shape), shape_text(s.shape)));
  }
  l.out = out;
  const bool is_awq = l.kind == SchemeKind::awq;
  if ((c.method == "gptq" && is_awq) || (c.method == "awq" && !is_awq))
    malformed(q.name, fmt::format("{} is laid out as {} but quant_method is {}", quote_name(q.name),
                                  is_awq ? "AWQ" : "GPTQ", quote_name(c.method)));
  if (g_idx && (g_idx->dtype != Dtype::I32 || g_idx->shape != Shape{l.in}))
    malformed(g_idx->name, fmt::format("{} is {} {}; g_idx is I32 [{}]", quote_name(g_idx->name),
                                       dtype_name(g_idx->dtype), shape_text(g_idx->shape), l.in));
  // Group: the config's (-1: one group; hub_quant_config refused others below 1), else what the
  // shapes imply.
  if (c.group_size && *c.group_size > 0)
    l.group = static_cast<uint64_t>(*c.group_size);
  else if (c.group_size || groups == 1)
    l.group = 0;
  else if (l.in % groups == 0 || g_idx)
    l.group = ceil_div(l.in, groups);  // with g_idx only a name: g_idx maps the inputs
  else  // several group sizes give that many groups: the config must say
    malformed(s.name, fmt::format("{} has {} groups of {} inputs, which no group size tells "
                                  "apart without the model's quantization_config",
                                  quote_name(s.name), groups, l.in));
  const uint64_t need = l.group ? ceil_div(l.in, l.group) : 1;
  // With g_idx (desc_act) the groups are those g_idx names, checked by detect.
  if (!g_idx && need != groups)
    malformed(s.name,
              fmt::format("{} has {} groups; {} inputs in groups of {} need {}", quote_name(s.name),
                          groups, l.in, l.group ? l.group : l.in, need));
  return l;
}

std::vector<QuantizedWeight> detect(const TensorSet& set, SchemeKind kind) {
  std::optional<HubQuantConfig> config;
  std::vector<QuantizedWeight> out;
  for (const TensorInfo* qp : set.tensors()) {
    auto base = strip_suffix(qp->name, kQweight);
    if (!base) continue;
    const std::string b(*base);
    const TensorInfo* z = set.find(b + std::string(kQzeros));
    if (!z) continue;  // tinyllm int4's
    const TensorInfo* s = set.find(b + std::string(kScales));
    if (!s)
      malformed(qp->name,
                fmt::format("{} has no {}", quote_name(qp->name), quote_name(b + ".scales")));
    const TensorInfo* g_idx = set.find(b + std::string(kGidx));
    if (!config) config = hub_quant_config(set);
    const PackedLayout l = layout(*config, *qp, *z, *s, g_idx);
    if (l.kind != kind) continue;
    QuantizedWeight w;
    w.name = b + ".weight";
    if (kind == SchemeKind::gptq)
      w.scheme = QuantScheme(GptqOptions{l.bits, l.group, l.v2});
    else
      w.scheme = QuantScheme(AwqOptions{l.bits, l.group, l.gemv});
    w.shape = Shape{l.out, l.in};
    w.dtype = s->dtype;
    // Every input's group checked here, so that validate reports a bad one.
    if (g_idx) group_indices(set.view(g_idx->name).bytes(), g_idx->name, l.in, s->shape[0]);
    for (const TensorInfo* t : {qp, z, s, g_idx}) add_stored(w, t);
    out.push_back(std::move(w));
  }
  return out;
}

// AWQ: the field of logical column n in the run of eight its word holds.
inline uint32_t awq_field(const std::byte* words, uint64_t row, uint64_t n) {
  return (load_word(words, row + n / 8) >> (4 * kAwqNibble[n % 8])) & 0xF;
}

class PackedDecoder final : public WeightDecoder {
 public:
  PackedDecoder(const TensorSet& set, const QuantizedWeight& w)
      : qweight_(set.view(w.stored[0])),
        out_(w.shape[0]),
        in_(w.shape[1]),
        awq_(w.scheme.kind() == SchemeKind::awq),
        reference_(w.dtype) {
    const uint64_t group = w.scheme.block();
    if (const auto* o = std::get_if<GptqOptions>(&w.scheme.options())) {
      bits_ = o->bits;
      v2_ = o->v2;
    }
    const TensorInfo& s = set.at(w.stored[2]);
    const uint64_t groups = s.shape[0];
    scales_ = set.f32(w.stored[2]);
    // Zero points unpacked once: [groups, out], small beside the weight.
    const TensorView zeros = set.view(w.stored[1]);  // kept: a pread file's view owns its bytes
    const std::byte* zw = zeros.bytes().data();
    const uint64_t z_cols = set.at(w.stored[1]).shape[1];
    zeros_.resize(groups * out_);
    const uint32_t mask = (1u << bits_) - 1;
    for (uint64_t g = 0; g < groups; ++g)
      for (uint64_t n = 0; n < out_; ++n) {
        uint32_t z = awq_ ? awq_field(zw, g * z_cols, n) : field(zw + 4 * g * z_cols, 1, n, bits_);
        if (!awq_ && !v2_) z = (z + 1) & mask;
        zeros_[g * out_ + n] = static_cast<float>(z);
      }
    if (w.stored.size() > 3) {
      group_of_ = group_indices(set.view(w.stored[3]).bytes(), w.stored[3], in_, groups);
    } else {
      group_of_.resize(in_);
      for (uint64_t k = 0; k < in_; ++k)
        group_of_[k] = static_cast<uint32_t>(group ? k / group : 0);
    }
  }

  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    const uint64_t out_bytes = dtype_bits(out) / 8;
    check_destination(count, out, dst);
    // Whole tiles of output rows are decoded (k outer, so qweight is read row by row), and the
    // part of each that was asked for is stored.
    std::vector<float> tile;
    const uint64_t end = first + count;
    for (uint64_t n0 = first / in_; n0 * in_ < end; n0 += kTileRows) {
      const uint64_t rows = std::min(kTileRows, out_ - n0);
      tile.resize(rows * in_);
      decode_tile(n0, rows, tile);
      const uint64_t lo = std::max(first, n0 * in_), hi = std::min(end, (n0 + rows) * in_);
      store_rounded(std::span(tile).subspan(lo - n0 * in_, hi - lo), reference_, out,
                    dst.subspan((lo - first) * out_bytes, (hi - lo) * out_bytes));
    }
  }

 private:
  void decode_tile(uint64_t n0, uint64_t rows, std::span<float> tile) const {
    const std::byte* words = qweight_.bytes().data();
    for (uint64_t k = 0; k < in_; ++k) {
      const uint64_t g = group_of_[k];
      const float* s = scales_.data() + g * out_;
      const float* z = zeros_.data() + g * out_;
      for (uint64_t n = n0; n < n0 + rows; ++n) {
        // GPTQ: column n of qweight [in*bits/32, out] is input k's stream; AWQ: row k of
        // [in, out/8] holds every output of input k.
        const uint32_t q =
            awq_ ? awq_field(words, k * (out_ / 8), n) : field(words + 4 * n, out_, k, bits_);
        tile[(n - n0) * in_ + k] = s[n] * (static_cast<float>(q) - z[n]);
      }
    }
  }

  TensorView qweight_;
  uint64_t out_, in_;
  bool awq_;
  Dtype reference_;
  uint64_t bits_ = 4;
  bool v2_ = false;
  std::vector<float> scales_, zeros_;
  std::vector<uint32_t> group_of_;
};

// AWQ GEMV: stored as the Linear's [out, in], read element by element.
class AwqGemvDecoder final : public WeightDecoder {
 public:
  AwqGemvDecoder(const TensorSet& set, const QuantizedWeight& w)
      : qweight_(set.view(w.stored[0])),
        qzeros_(set.view(w.stored[1])),
        scales_(set.view(w.stored[2])),
        scale_dtype_(set.at(w.stored[2]).dtype),
        in_(w.shape[1]),
        group_(w.scheme.block() ? w.scheme.block() : w.shape[1]),
        z_words_(set.at(w.stored[1]).shape[1]),
        reference_(w.dtype) {}

  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    decode_chunked(first, count, reference_, out, dst, [&](uint64_t e, std::span<float> v) {
      const std::byte* q = qweight_.bytes().data();
      const std::byte* z = qzeros_.bytes().data();
      const std::byte* s = scales_.bytes().data();
      const uint64_t scale_bytes = dtype_bits(scale_dtype_) / 8;
      for (size_t i = 0; i < v.size(); ++i) {
        const uint64_t n = (e + i) / in_, k = (e + i) % in_, g = k / group_;
        const uint32_t code = (load_word(q, n * (in_ / 8) + k / 8) >> (4 * (k % 8))) & 0xF;
        const uint32_t zero = (load_word(z, n * z_words_ + g / 8) >> (4 * (g % 8))) & 0xF;
        const float scale = scale_value(scale_dtype_, s + (n * z_words_ * 8 + g) * scale_bytes);
        v[i] = (static_cast<float>(code) - static_cast<float>(zero)) * scale;
      }
    });
  }

 private:
  TensorView qweight_, qzeros_, scales_;
  Dtype scale_dtype_;
  uint64_t in_, group_, z_words_;
  Dtype reference_;
};

std::vector<StoredPart> whole_parts(const TensorSet&, const QuantizedWeight& w) {
  // GPTQ and AWQ GEMM are stored transposed: a slice of output rows needs every word row, so each
  // part is read whole (AWQ GEMV's too, though its rows are the outputs).
  std::vector<StoredPart> parts;
  for (const std::string& name : w.stored) parts.push_back({name});
  return parts;
}

std::shared_ptr<const WeightDecoder> packed_decoder(const TensorSet& set,
                                                    const QuantizedWeight& w) {
  if (const auto* a = std::get_if<AwqOptions>(&w.scheme.options()); a && a->gemv)
    return std::make_shared<AwqGemvDecoder>(set, w);
  return std::make_shared<PackedDecoder>(set, w);
}

}  // namespace

const SchemeEntry& gptq_scheme_entry() noexcept {
  static const SchemeEntry entry = read_only_entry(
      SchemeKind::gptq, "gptq-<bits>bit[-g<group>][-v2]", "gptq-4bit-g128",
      "<p>.qweight I32 [in*bits/32, out] + <p>.qzeros + <p>.scales [+ <p>.g_idx]",
      [](const QuantScheme::Options& o) {
        const auto& g = std::get<GptqOptions>(o);
        return fmt::format("gptq-{}bit{}{}", g.bits, g.group ? fmt::format("-g{}", g.group) : "",
                           g.v2 ? "-v2" : "");
      },
      [](const QuantScheme::Options& o) {
        const uint64_t bits = std::get<GptqOptions>(o).bits;
        if (bits != 2 && bits != 3 && bits != 4 && bits != 8)
          throw_invalid(fmt::format("GPTQ packs 2, 3, 4 or 8 bits, not {}", bits));
      },
      [](const TensorSet& set) { return detect(set, SchemeKind::gptq); }, packed_decoder,
      whole_parts);
  return entry;
}

const SchemeEntry& awq_scheme_entry() noexcept {
  static const SchemeEntry entry = read_only_entry(
      SchemeKind::awq, "awq-4bit[-g<group>][-gemv]", "awq-4bit-g128",
      "<p>.qweight I32 [in, out/8] + <p>.qzeros [groups, out/8] + <p>.scales [groups, out] (GEMM)\n"
      "GEMV (config version \"gemv\"): <p>.qweight I32 [out, in/8] + <p>.qzeros [out, W] + <p>.scales [out, 8W]",
      [](const QuantScheme::Options& o) {
        const auto& a = std::get<AwqOptions>(o);
        return fmt::format("awq-{}bit{}{}", a.bits, a.group ? fmt::format("-g{}", a.group) : "",
                           a.gemv ? "-gemv" : "");
      },
      [](const QuantScheme::Options& o) {
        if (std::get<AwqOptions>(o).bits != 4) throw_invalid("AWQ packs 4 bits");
      },
      [](const TensorSet& set) { return detect(set, SchemeKind::awq); }, packed_decoder,
      whole_parts);
  return entry;
}

}  // namespace tlio::detail
