// gguf_convert/gguf_import_stacked.cpp: stacked experts put back together on import
// (gguf_import_stacked.hpp), the inverse of gguf_export_parts.cpp's stacked and MXFP4 writers.
#include "gguf_convert/gguf_import_stacked.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>

#include "gguf_convert/gguf_import.hpp"
#include "quant/schemes.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/ggml.hpp"

namespace tlio::detail {

namespace {

constexpr uint64_t kMxfp4Group = 32, kMxfp4Codes = 16;  // values per block, bytes of its codes
// Bytes gathered before they are appended to the writer.
constexpr uint64_t kPieceBytes = uint64_t{4} << 20;
// Values a decoder holds at once (a band of rows, or of one row the part asked for): what a
// file's shapes cannot stretch, whatever they are.
constexpr uint64_t kBandValues = uint64_t{1} << 20;

[[noreturn]] void refuse(const GgufFile& src, const std::string& name, const std::string& what) {
  throw Error(ErrorCode::format, Rule::gguf, name, std::nullopt, what, src.name());
}

// GGUF tensor blk.`layer`.`part` of Hugging Face tensor `whole`: there, and floating (or a block
// type: decoded).
const GgufTensorInfo& source_of(const GgufFile& src, uint64_t layer, std::string_view part,
                                const std::string& whole) {
  const std::string name = fmt::format("blk.{}.{}", layer, part);
  const GgufTensorInfo* t = src.tensor(name);
  if (!t) {
    const bool kv_b_whole = src.tensor(fmt::format("blk.{}.attn_kv_b.weight", layer)) != nullptr;
    refuse(src, name,
           fmt::format("the file has no {}: {} is made of it{}", name, whole,
                       kv_b_whole ? " (an older DeepSeek GGUF, attn_kv_b.weight whole, is not "
                                    "imported)"
                                  : ""));
  }
  if (gguf_output_dtype(*t, Dtype::F32) != Dtype::F32)
    refuse(src, name,
           fmt::format("{} is {}, not floating weights", name, ggml_type(t->type)->name));
  if (t->element_count() == 0)  // a dimension of 0: nothing to put back, no row to divide by
    refuse(src, name, fmt::format("{} has no values", name));
  return *t;
}

// The Hugging Face tensor [experts, rows, out] (rows 1 for a bias) as a WeightDecoder: element
// (e, a, b) is source b % every's (e, b / every, a), the GGUF tensors [rows, out/every, experts]
// (ne order) each part's. Rows are decoded a band at a time.
class StackedDecoder final : public WeightDecoder {
 public:
  StackedDecoder(const GgufFile& src, const StackedImport& s)
      : src_(src),
        s_(s),
        every_(s.part->every),
        rows_(s.part->transposed ? s.sources[0]->ne[0] : 1),
        taken_(s.part->transposed ? s.sources[0]->ne[1] : s.sources[0]->ne[0]),
        out_(taken_ * every_) {}

  // Bands of whole rows where a row is short; else one row at a time, only the part asked for.
  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    const uint64_t size = dtype_bits(out) / 8, end = first + count;
    const uint64_t band_rows = std::max<uint64_t>(1, kBandValues / out_);
    std::vector<float> band, column;
    for (uint64_t row = first / out_; row * out_ < end;) {
      const uint64_t e = row / rows_, a0 = row % rows_;
      const uint64_t n = std::min({rows_ - a0, band_rows, (end - 1) / out_ - row + 1});
      // The values [from, to) of rows [row, row + n) asked for, columns [c0, c1) of each.
      const uint64_t from = std::max(first, row * out_), to = std::min(end, (row + n) * out_);
      const uint64_t c0 = n == 1 ? from - row * out_ : 0, c1 = n == 1 ? to - row * out_ : out_;
      band.resize(n * (c1 - c0));
      column.resize(n);
      for (uint64_t b = c0; b < c1; ++b) {
        src_.read_values(*s_.sources[b % every_], (e * taken_ + b / every_) * rows_ + a0, n,
                         Dtype::F32, std::as_writable_bytes(std::span(column)));
        for (uint64_t j = 0; j < n; ++j) band[j * (c1 - c0) + b - c0] = column[j];
      }
      const uint64_t skip = n == 1 ? 0 : from - row * out_;
      convert(Dtype::F32, std::as_bytes(std::span(band).subspan(skip, to - from)), out,
              dst.subspan((from - first) * size, (to - from) * size), to - from);
      row += n;
    }
  }
  uint64_t natural_chunk() const override {
    return out_ <= kBandValues ? kBandValues / out_ * out_ : 0;
  }

 private:
  const GgufFile& src_;
  const StackedImport& s_;
  uint64_t every_, rows_, taken_, out_;
};

// DeepSeek's kv_b_proj [heads * (nope + value), kv_lora] from llama.cpp's attn_k_b [heads,
// kv_lora, nope] (transposed per head) and attn_v_b [heads, value, kv_lora]: row (h, i) is
// column i of k_b's head h for i < nope, else v_b's row (h, i - nope).
class KvBDecoder final : public WeightDecoder {
 public:
  KvBDecoder(const GgufFile& src, const StackedImport& s)
      : src_(src),
        k_b_(*s.sources[0]),
        v_b_(*s.sources[1]),
        nope_(s.sources[0]->ne[0]),
        lora_(s.sources[0]->ne[1]),
        value_(s.sources[1]->ne[1]) {}

  // A band of rows at a time, all k_b's or all v_b's of one head; a row is lora values.
  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    const uint64_t size = dtype_bits(out) / 8, per_head = nope_ + value_, end = first + count;
    const uint64_t band_rows = std::max<uint64_t>(1, kBandValues / lora_);
    std::vector<float> band, column;
    for (uint64_t row = first / lora_; row * lora_ < end;) {
      const uint64_t h = row / per_head, i0 = row % per_head;
      const uint64_t kind_end = i0 < nope_ ? nope_ : per_head;  // a band stays in k_b or v_b
      const uint64_t n = std::min({kind_end - i0, band_rows, (end - 1) / lora_ - row + 1});
      band.resize(n * lora_);
      if (i0 < nope_) {  // column i of k_b's head h, [lora, nope]: a value per lora row
        column.resize(n);
        for (uint64_t c = 0; c < lora_; ++c) {
          src_.read_values(k_b_, (h * lora_ + c) * nope_ + i0, n, Dtype::F32,
                           std::as_writable_bytes(std::span(column)));
          for (uint64_t j = 0; j < n; ++j) band[j * lora_ + c] = column[j];
        }
      } else {  // v_b's rows as they are
        src_.read_values(v_b_, (h * value_ + i0 - nope_) * lora_, n * lora_, Dtype::F32,
                         std::as_writable_bytes(std::span(band)));
      }
      const uint64_t from = std::max(first, row * lora_), to = std::min(end, (row + n) * lora_);
      convert(Dtype::F32, std::as_bytes(std::span(band).subspan(from - row * lora_, to - from)),
              out, dst.subspan((from - first) * size, (to - from) * size), to - from);
      row += n;
    }
  }
  uint64_t natural_chunk() const override {
    return lora_ <= kBandValues ? kBandValues / lora_ * lora_ : 0;
  }

 private:
  const GgufFile& src_;
  const GgufTensorInfo &k_b_, &v_b_;
  uint64_t nope_, lora_, value_;
};

// OpenAI's MXFP4 from ggml's: `name_blocks` [E, out, in/32, 16] (codes 2i, 2i + 1 in byte i's low
// and high nibbles) and `name_scales` [E, out, in/32], row (e, b) from GGUF row (e, b / every) of
// source b % every, whose blocks are a scale byte then codes j, j + 16 in byte j's nibbles.
void write_mxfp4(const GgufFile& src, const StackedImport& s, Writer& w, GgufImportReport& report,
                 const std::function<void(uint64_t)>& written) {
  const uint64_t groups = s.sources[0]->ne[0] / kMxfp4Group, taken = s.sources[0]->ne[1],
                 experts = s.sources[0]->ne[2], every = s.part->every;
  const uint64_t block_bytes = ggml_type(ggml_id(GgmlTypeId::MXFP4))->block_bytes;
  std::vector<std::byte> row(groups * block_bytes), piece;
  for (const bool scales : {false, true}) {
    const std::string name = s.name + (scales ? "_scales" : "_blocks");
    for (uint64_t e = 0; e < experts; ++e)
      for (uint64_t b = 0; b < taken * every; ++b) {
        src.read(*s.sources[b % every], (e * taken + b / every) * row.size(), row);
        for (uint64_t g = 0; g < groups; ++g) {
          const auto* block = reinterpret_cast<const uint8_t*>(row.data() + g * block_bytes);
          if (scales) {
            piece.push_back(std::byte{block[0]});
            continue;
          }
          const uint8_t* qs = block + 1;
          for (unsigned i = 0; i < kMxfp4Codes / 2; ++i)  // codes 2i, 2i + 1: qs' low nibbles
            piece.push_back(
                std::byte(static_cast<uint8_t>((qs[2 * i] & 15) | (qs[2 * i + 1] << 4))));
          for (unsigned i = 0; i < kMxfp4Codes / 2; ++i)  // codes 2i + 16, 2i + 17: high nibbles
            piece.push_back(
                std::byte(static_cast<uint8_t>((qs[2 * i] >> 4) | (qs[2 * i + 1] & 0xf0))));
        }
        if (piece.size() >= kPieceBytes || (e + 1 == experts && b + 1 == taken * every)) {
          w.append(name, piece);
          report.data_bytes_out += piece.size();
          if (written && !scales) written(piece.size() * 2);  // two values a byte
          piece.clear();
        }
      }
  }
  report.tensors += 2;
  report.kept += 2;
}

}  // namespace

std::vector<StackedImport> plan_stacked_imports(const GgufFile& src, const GgufArch& arch,
                                                const HfConfig& c,
                                                std::vector<const GgufTensorInfo*>& taken) {
  std::vector<StackedImport> out;
  if (!arch.split.empty())  // DeepSeek's kv_b_proj from its k_b and v_b
    for (uint64_t layer = 0; layer < c.layers; ++layer) {
      StackedImport s{
          fmt::format("model.layers.{}.{}", layer, arch.split[0].hf), &arch.split[0], {}, false};
      for (const GgufStackedPart& part : arch.split) {
        s.sources.push_back(&source_of(src, layer, part.gguf, s.name));
        taken.push_back(s.sources.back());
      }
      const std::vector<uint64_t> k_b{c.qk_nope_head_dim, c.kv_lora_rank, c.heads},
          v_b{c.kv_lora_rank, c.v_head_dim, c.heads};
      if (s.sources[0]->ne != k_b || s.sources[1]->ne != v_b)
        refuse(src, s.sources[0]->name,
               fmt::format("{} and {} are [{}] and [{}], not [{}] and [{}] as the MLA keys say",
                           s.sources[0]->name, s.sources[1]->name,
                           fmt::join(s.sources[0]->ne, ", "), fmt::join(s.sources[1]->ne, ", "),
                           fmt::join(k_b, ", "), fmt::join(v_b, ", ")));
      out.push_back(std::move(s));
    }
  if (!arch.experts) return out;
  const std::span<const GgufStackedPart> parts = arch.experts->stacked;
  for (uint64_t layer = 0; layer < c.layers; ++layer)
    for (const GgufStackedPart& part : parts) {
      if (part.first != 0) continue;  // a tensor is planned by its first part
      StackedImport s{fmt::format("model.layers.{}.{}", layer, part.hf), &part, {}, false};
      for (const GgufStackedPart& other : parts)
        if (other.hf == part.hf) {
          const GgufTensorInfo* t = &source_of(src, layer, other.gguf, s.name);
          const std::string& name = t->name;
          const size_t dims = part.transposed ? 3 : 2;
          if (t->ne.size() != dims || t->ne.back() != c.experts ||
              (!s.sources.empty() && t->ne != s.sources[0]->ne))
            refuse(src, name,
                   fmt::format("{} is [{}], not the {} experts' {} as the other parts of {}", name,
                               fmt::join(t->ne, ", "), c.experts,
                               part.transposed ? "weights" : "biases", s.name));
          s.sources.push_back(t);
          taken.push_back(t);
        }
      s.mxfp4 = part.transposed &&
                std::all_of(s.sources.begin(), s.sources.end(), [](const GgufTensorInfo* t) {
                  return t->type == ggml_id(GgmlTypeId::MXFP4);
                });
      out.push_back(std::move(s));
    }
  // OpenAI's blocks for every expert weight or for none: one quantization_config says which
  // (a file with some MXFP4 and some not, a requantized one, is decoded throughout).
  const auto weights = [](const StackedImport& s) { return s.part->transposed; };
  if (!std::all_of(out.begin(), out.end(),
                   [&](const StackedImport& s) { return !weights(s) || s.mxfp4; }))
    for (StackedImport& s : out) s.mxfp4 = false;
  return out;
}

std::vector<std::tuple<std::string, Dtype, Shape>> stacked_import_tensors(const StackedImport& s,
                                                                          Dtype floats) {
  const std::vector<uint64_t>& ne = s.sources[0]->ne;
  const uint64_t every = s.part->every;
  if (s.part->head_rows != GgufStackedPart::HeadRows::none)  // kv_b_proj
    return {{s.name, floats, Shape{ne[2] * (ne[0] + s.sources[1]->ne[1]), ne[1]}}};
  if (!s.part->transposed) return {{s.name, floats, Shape{ne[1], ne[0] * every}}};
  if (!s.mxfp4) return {{s.name, floats, Shape{ne[2], ne[0], ne[1] * every}}};
  const uint64_t groups = ne[0] / kMxfp4Group;
  return {{s.name + "_blocks", Dtype::U8, Shape{ne[2], ne[1] * every, groups, kMxfp4Codes}},
          {s.name + "_scales", Dtype::U8, Shape{ne[2], ne[1] * every, groups}}};
}

void write_stacked_import(const GgufFile& src, const StackedImport& s, Dtype floats, Writer& w,
                          GgufImportReport& report, const std::function<void(uint64_t)>& written) {
  uint64_t elements = 0;
  for (const GgufTensorInfo* t : s.sources) {
    report.data_bytes_in += t->bytes;
    elements += t->element_count();
  }
  if (s.mxfp4) return write_mxfp4(src, s, w, report, written);
  ++report.tensors;
  ++report.decoded;
  const uint64_t size = dtype_bits(floats) / 8;
  const auto tick = [&](uint64_t bytes) {
    report.data_bytes_out += bytes;
    if (written) written(bytes / size);
  };
  if (s.part->head_rows != GgufStackedPart::HeadRows::none)
    write_decoded(KvBDecoder(src, s), elements, floats, w, s.name, tick);
  else
    write_decoded(StackedDecoder(src, s), elements, floats, w, s.name, tick);
}

}  // namespace tlio::detail
