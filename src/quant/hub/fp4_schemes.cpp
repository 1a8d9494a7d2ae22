// quant/hub/fp4_schemes.cpp: the registry entries of the FP4 (E2M1) formats, read only. Two
// codes per byte, the low nibble first (element 2i), each times the scale of its group of inputs:
//   mxfp4: an E8M0 scale (2^(b-127)) per 32 inputs. gpt-oss stores MoE experts as
//          <p>_blocks U8 [E, out, in/32, 16] + <p>_scales U8 [E, out, in/32], read as <p> in
//          transformers' layout [E, in, out] (OpenAI's own <p>.blocks/.scales: [E, out, in]);
//          compressed-tensors mxfp4-pack-quantized as <m>.weight_packed + <m>.weight_scale U8.
//   nvfp4: an E4M3 scale per 16 inputs with a global F32 scale: compressed-tensors
//          (<m>.weight_packed, s = e4m3 / weight_global_scale) or NVIDIA ModelOpt (<m>.weight,
//          s = e4m3 * weight_scale_2).
// y = v * s in f32, s itself rounded to f32 first, then one rounding to BF16, the dtype every
// reference returns. Code 8 is -0 except in ModelOpt's table (+0).
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>

#include "common/json_text.hpp"
#include "quant/hub/hub_config.hpp"
#include "quant/hub/hub_kernels.hpp"
#include "quant/hub/hub_values.hpp"
#include "quant/schemes.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

constexpr uint64_t kNvGroup = 16;  // inputs per E4M3 scale of NVFP4

void expect_dtype(const TensorInfo& t, std::initializer_list<Dtype> dtypes, std::string_view what) {
  if (std::find(dtypes.begin(), dtypes.end(), t.dtype) == dtypes.end())
    malformed(t.name, fmt::format("{} is {}; {}", quote_name(t.name), dtype_name(t.dtype), what));
}

void expect_shape(const TensorInfo& t, const Shape& need, std::string_view why) {
  if (t.shape != need)
    malformed(t.name, fmt::format("{} is {}; {} needs {}", quote_name(t.name), shape_text(t.shape),
                                  why, shape_text(need)));
}

// A [rows, in/2] matrix of packed codes with its [rows, ceil(in/group)] scales: the weight's
// [rows, in].
Shape packed_matrix(const TensorInfo& codes, const TensorInfo& scales, uint64_t group) {
  expect_dtype(codes, {Dtype::U8}, "FP4 codes are packed two per U8");
  if (codes.shape.size() != 2)
    malformed(codes.name, fmt::format("{} is {}; packed FP4 codes are a [out, in/2] matrix",
                                      quote_name(codes.name), shape_text(codes.shape)));
  const Shape weight{codes.shape[0], codes.shape[1] * 2};
  expect_shape(scales, {weight[0], ceil_div(weight[1], group)},
               fmt::format("a {} weight in groups of {}", shape_text(weight), group));
  return weight;
}

QuantizedWeight weight_of(std::string name, QuantScheme scheme, Shape shape,
                          std::initializer_list<const TensorInfo*> parts) {
  QuantizedWeight w;
  w.name = std::move(name);
  w.scheme = std::move(scheme);
  w.shape = std::move(shape);
  w.dtype = Dtype::BF16;
  for (const TensorInfo* t : parts) add_stored(w, t);
  return w;
}

// gpt-oss: <p>_blocks [..., out, in/32, 16] with <p>_scales [..., out, in/32]; `transposed`
// for transformers' names (logical [..., in, out]).
std::optional<QuantizedWeight> gpt_oss_weight(const TensorSet& set, const TensorInfo& blocks,
                                              std::string_view base, bool transposed) {
  const TensorInfo* scales = set.find(std::string(base) + (transposed ? "_scales" : ".scales"));
  if (blocks.dtype != Dtype::U8) return std::nullopt;
  // U8 blocks of 16 bytes are MXFP4 codes: without their scales they are never read as plain.
  if (!scales && blocks.shape.size() >= 3 && blocks.shape.back() == kMxGroup / 2)
    malformed(
        blocks.name,
        fmt::format("{} has no {} (a shard read without the others?)", quote_name(blocks.name),
                    quote_name(std::string(base) + (transposed ? "_scales" : ".scales"))));
  if (!scales) return std::nullopt;
  const Shape& b = blocks.shape;
  if (b.size() < 3 || b.back() != kMxGroup / 2)
    malformed(blocks.name, fmt::format("{} is {}; MXFP4 blocks are [..., out, in/32, 16]",
                                       quote_name(blocks.name), shape_text(b)));
  expect_dtype(*scales, {Dtype::U8, Dtype::F8_E8M0}, "MXFP4 scales are E8M0 bytes");
  expect_shape(*scales, Shape(std::span(b.begin(), b.end() - 1)),
               fmt::format("{} {}", quote_name(blocks.name), shape_text(b)));
  Shape logical(std::span(b.begin(), b.end() - 2));
  const uint64_t out = b[b.size() - 3], in = b[b.size() - 2] * kMxGroup;
  logical[logical.size() - 1] = transposed ? in : out;
  logical.push_back(transposed ? out : in);
  return weight_of(std::string(base), QuantScheme(Mxfp4Options{transposed}), std::move(logical),
                   {&blocks, scales});
}

std::vector<QuantizedWeight> detect_mxfp4(const TensorSet& set) {
  std::vector<QuantizedWeight> out;
  for (const TensorInfo* t : set.tensors()) {
    std::optional<QuantizedWeight> w;
    const auto hf = strip_suffix(t->name, "_blocks"), openai = strip_suffix(t->name, ".blocks");
    const auto ct = strip_suffix(t->name, ".weight_packed");
    if (hf || openai) {
      w = gpt_oss_weight(set, *t, hf ? *hf : *openai, hf.has_value());
    } else if (ct) {
      const std::string b(*ct);
      const TensorInfo* s = set.find(b + ".weight_scale");
      if (!s || set.find(b + ".weight_global_scale") ||
          (s->dtype != Dtype::U8 && s->dtype != Dtype::F8_E8M0) || t->dtype != Dtype::U8)
        continue;  // nvfp4's, compressed-tensors integers', or scales in another shard
      w = weight_of(b + ".weight", QuantScheme(Mxfp4Options{}), packed_matrix(*t, *s, kMxGroup),
                    {t, s});
    }
    if (w) out.push_back(std::move(*w));
  }
  return out;
}

void expect_global(const TensorInfo& g) {
  expect_dtype(g, {Dtype::F32}, "an NVFP4 global scale is F32");
  if (g.element_count() != 1)
    malformed(g.name, fmt::format("{} is {}; an NVFP4 global scale is one value",
                                  quote_name(g.name), shape_text(g.shape)));
}

std::vector<QuantizedWeight> detect_nvfp4(const TensorSet& set) {
  std::vector<QuantizedWeight> out;
  for (const TensorInfo* t : set.tensors()) {
    // compressed-tensors: weight_packed + weight_global_scale; ModelOpt: U8 weight +
    // weight_scale_2.
    const auto ct = strip_suffix(t->name, ".weight_packed");
    const auto modelopt = strip_suffix(t->name, ".weight");
    const std::string b(ct ? *ct : modelopt ? *modelopt : "");
    if (!ct && !(modelopt && t->dtype == Dtype::U8)) continue;
    const TensorInfo* global = set.find(b + (ct ? ".weight_global_scale" : ".weight_scale_2"));
    const TensorInfo* s = set.find(b + ".weight_scale");
    if (!global) continue;  // another scheme's, or a shard read without its global scale
    if (!s)
      malformed(t->name, fmt::format("{} has {} but no {}", quote_name(t->name),
                                     quote_name(global->name), quote_name(b + ".weight_scale")));
    expect_global(*global);
    expect_dtype(*s, {Dtype::F8_E4M3}, "NVFP4 scales are F8_E4M3");
    const Shape shape = packed_matrix(*t, *s, kNvGroup);
    out.push_back(
        weight_of(b + ".weight", QuantScheme(Nvfp4Options{!ct}), shape,
                  {t, s, global, set.find(b + (ct ? ".input_global_scale" : ".input_scale"))}));
  }
  return out;
}

// Inputs per stored row a transposed chunk spans (one MXFP4 group), and the most elements a
// chunk holds whatever the outputs (16 MiB of F32 per thread).
constexpr uint64_t kTransposedInputs = kMxGroup, kMaxTransposedChunk = uint64_t{1} << 22;
// Stored rows decoded before their values are written out (a 64-byte line of F32 per input).
constexpr uint64_t kTileRows = 16;

// Both schemes: codes [rows, in/2] (gpt-oss: [E * out, in/2]), one scale byte per group.
class Fp4Decoder final : public WeightDecoder {
 public:
  Fp4Decoder(const TensorSet& set, const QuantizedWeight& w)
      : codes_(set.view(w.stored[0])), scales_(set.view(w.stored[1])), reference_(w.dtype) {
    if (const auto* o = std::get_if<Mxfp4Options>(&w.scheme.options())) {
      group_ = kMxGroup;
      transposed_ = o->transposed;
      scale_of_ = e8m0_scales(scales_.dtype());
      value_ = e2m1_values(true);
    } else {
      const bool modelopt = std::get<Nvfp4Options>(w.scheme.options()).modelopt;
      group_ = kNvGroup;
      value_ = e2m1_values(!modelopt);
      const float global = set.f32(w.stored[2])[0];
      // compressed-tensors divides by its global scale, ModelOpt multiplies: each rounds in f32.
      for (size_t b = 0; b < 256; ++b)
        scale_of_[b] = modelopt ? e4m3_values()[b] * global : e4m3_values()[b] / global;
    }
    const size_t rank = w.shape.size();
    in_ = transposed_ ? w.shape[rank - 2] : w.shape[rank - 1];
    out_ = transposed_ ? w.shape[rank - 1] : w.shape[rank - 2];
    groups_ = ceil_div(in_, group_);
  }

  uint64_t natural_chunk() const override {
    return transposed_ && out_ * kTransposedInputs <= kMaxTransposedChunk ? out_ * kTransposedInputs
                                                                          : 0;
  }

  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    const auto fill = [&](uint64_t e, std::span<float> v) {
      if (transposed_)
        fill_transposed(e, v);
      else
        fill_rows(e, v);
    };
    if (!transposed_) {
      decode_chunked(first, count, reference_, out, dst, fill);
      return;
    }
    // Transposed chunks span kTransposedInputs inputs (a group) of every output and start on a
    // group, so that each stored row is decoded along whole groups: the elements up to the first
    // such start go first.
    const uint64_t chunk = out_ * kTransposedInputs;
    const uint64_t head = std::min(count, (chunk - first % chunk) % chunk);
    const uint64_t bytes = dtype_bits(out) / 8;
    decode_chunked(first, head, reference_, out, dst.first(head * bytes), fill);
    decode_chunked(first + head, count - head, reference_, out, dst.subspan(head * bytes), fill,
                   std::min(chunk, kMaxTransposedChunk));
  }

 private:
  // Stored order: element e is column e % in of row e / in; each group's scale read once.
  void fill_rows(uint64_t e, std::span<float> v) const {
    const auto* codes = reinterpret_cast<const uint8_t*>(codes_.bytes().data());
    const auto* scales = reinterpret_cast<const uint8_t*>(scales_.bytes().data());
    for (size_t i = 0; i < v.size();) {
      const uint64_t r = (e + i) / in_, c0 = (e + i) % in_;
      const uint64_t take = std::min<uint64_t>(in_ - c0, v.size() - i);
      const uint8_t* row = codes + r * (in_ / 2);
      float* o = &v[i];  // o[c - c0] is column c's value
      for (uint64_t c = c0; c < c0 + take;) {
        const uint64_t end = std::min(c0 + take, (c / group_ + 1) * group_);
        const float s = scale_of_[scales[r * groups_ + c / group_]];
        if (c % 2) {  // a run starting at a byte's high nibble
          o[c - c0] = value_[row[c / 2] >> 4] * s;
          ++c;
        }
        for (; c + 1 < end; c += 2) {
          o[c - c0] = value_[row[c / 2] & 0xF] * s;
          o[c + 1 - c0] = value_[row[c / 2] >> 4] * s;
        }
        if (c < end) {
          o[c - c0] = value_[row[c / 2] & 0xF] * s;
          ++c;
        }
      }
      i += take;
    }
  }

  // Transformers' layout [E, in, out]: element e is input k of output r of expert x, so a run
  // of `out` elements is one input across outputs. Whole runs are decoded a stored row at a time,
  // along the row (decode_inputs), then spread over the outputs; partial runs a nibble per
  // stored row.
  void fill_transposed(uint64_t e, std::span<float> v) const {
    const auto* codes = reinterpret_cast<const uint8_t*>(codes_.bytes().data());
    const auto* scales = reinterpret_cast<const uint8_t*>(scales_.bytes().data());
    const uint64_t per_expert = in_ * out_, row_bytes = in_ / 2;
    for (size_t i = 0; i < v.size();) {
      const uint64_t x = (e + i) / per_expert, k = (e + i) % per_expert / out_, r0 = (e + i) % out_;
      const uint64_t left = v.size() - i;
      const uint8_t* c = codes + (x * out_ + r0) * row_bytes;
      const uint8_t* s = scales + (x * out_ + r0) * groups_;
      if (r0 != 0 || left < out_) {
        const uint64_t take = std::min(out_ - r0, left);
        const unsigned shift = k % 2 ? 4 : 0;
        const uint8_t* code = c + k / 2;
        const uint8_t* scale = s + k / kMxGroup;
        for (uint64_t j = 0; j < take; ++j)
          v[i + j] = value_[(code[j * row_bytes] >> shift) & 0xF] * scale_of_[scale[j * groups_]];
        i += take;
        continue;
      }
      const uint64_t runs = std::min(left / out_, in_ - k);  // inputs k .. k + runs - 1
      // A tile of stored rows decoded along each row, then written out a cache line of outputs
      // per input.
      thread_local std::vector<float> tile;
      tile.resize(kTileRows * runs);
      for (uint64_t first_row = 0; first_row < out_; first_row += kTileRows) {
        const uint64_t rows = std::min(kTileRows, out_ - first_row);
        for (uint64_t r = 0; r < rows; ++r)
          decode_inputs(c + (first_row + r) * row_bytes, s + (first_row + r) * groups_, k, runs,
                        &tile[r * runs]);
        for (uint64_t j = 0; j < runs; ++j) {
          float* o = &v[i + j * out_ + first_row];
          for (uint64_t r = 0; r < rows; ++r) o[r] = tile[r * runs + j];
        }
      }
      i += runs * out_;
    }
  }

  // Inputs k .. k + n - 1 of one stored row of MXFP4 codes (`codes`, `scales` at its start):
  // whole groups with the SIMD kernel, the ends a value at a time, the same bits either way
  // (MXFP4's table has code 8 as -0, the kernel's negative_zero).
  void decode_inputs(const uint8_t* codes, const uint8_t* scales, uint64_t k, uint64_t n,
                     float* out) const {
    const auto one = [&](uint64_t kk) {
      return value_[(codes[kk / 2] >> (kk % 2 * 4)) & 0xF] * scale_of_[scales[kk / kMxGroup]];
    };
    uint64_t j = 0;
    for (; j < n && (k + j) % kMxGroup != 0; ++j) out[j] = one(k + j);
    for (; j + kMxGroup <= n; j += kMxGroup)
      e2m1_scaled(codes + (k + j) / 2, kMxGroup / 2, scale_of_[scales[(k + j) / kMxGroup]], true,
                  out + j);
    for (; j < n; ++j) out[j] = one(k + j);
  }

  TensorView codes_, scales_;
  Dtype reference_;
  uint64_t group_ = 0, in_ = 0, out_ = 0, groups_ = 0;
  bool transposed_ = false;
  std::array<float, 256> scale_of_{};
  std::array<float, 16> value_{};
};

std::shared_ptr<const WeightDecoder> fp4_decoder(const TensorSet& set, const QuantizedWeight& w) {
  return std::make_shared<Fp4Decoder>(set, w);
}

std::vector<StoredPart> fp4_parts(const TensorSet&, const QuantizedWeight& w) {
  const size_t rank = w.shape.size();
  const bool transposed =
      w.scheme.kind() == SchemeKind::mxfp4 && std::get<Mxfp4Options>(w.scheme.options()).transposed;
  const uint64_t group = w.scheme.block();
  std::vector<StoredPart> parts;
  if (transposed) {  // an expert's rows are read whole: its elements run across all of them
    const uint64_t per_expert = w.shape[rank - 1] * w.shape[rank - 2];
    parts = {{w.stored[0], 0, 0, per_expert, per_expert / 2},
             {w.stored[1], 0, 0, per_expert, per_expert / group}};
  } else {
    const uint64_t in = w.shape[rank - 1];
    parts = {{w.stored[0], in, in / 2, 2, 1}, {w.stored[1], in, ceil_div(in, group), group, 1}};
  }
  for (size_t i = 2; i < w.stored.size(); ++i) parts.push_back({w.stored[i]});
  return parts;
}

}  // namespace

const SchemeEntry& mxfp4_scheme_entry() noexcept {
  static const SchemeEntry entry = read_only_entry(
      SchemeKind::mxfp4, "mxfp4", "mxfp4",
      "gpt-oss: <p>_blocks U8 [E, out, in/32, 16] + <p>_scales U8 [E, out, in/32] -> <p> [E, in, out]\n"
      "compressed-tensors: <p>.weight_packed U8 [out, in/2] + <p>.weight_scale U8 [out, in/32]",
      [](const QuantScheme::Options&) { return std::string("mxfp4"); },
      [](const QuantScheme::Options&) {}, detect_mxfp4, fp4_decoder, fp4_parts);
  return entry;
}

const SchemeEntry& nvfp4_scheme_entry() noexcept {
  static const SchemeEntry entry = read_only_entry(
      SchemeKind::nvfp4, "nvfp4", "nvfp4",
      "compressed-tensors: <p>.weight_packed U8 [out, in/2] + <p>.weight_scale F8_E4M3 [out, in/16]"
      " + <p>.weight_global_scale F32\n"
      "ModelOpt: <p>.weight U8 [out, in/2] + <p>.weight_scale F8_E4M3 + <p>.weight_scale_2 F32",
      [](const QuantScheme::Options&) { return std::string("nvfp4"); },
      [](const QuantScheme::Options&) {}, detect_nvfp4, fp4_decoder, fp4_parts);
  return entry;
}

}  // namespace tlio::detail
