// gguf_convert/gguf_import.cpp: a GGUF file's tensors written as a safetensors file: declared first
// from the GGUF header (numpy order, the target dtype), then written tensor by tensor, each a
// decoder that streams through write_decoded as a quantized weight does (decoded on every core,
// rows put back in place where the export interleaved them).
#include "gguf_convert/gguf_import.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "gguf_convert/gguf_arch.hpp"
#include "quant/schemes.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/gguf.hpp"
#include "tlio/gguf_convert.hpp"

namespace tlio {

namespace {

// Elements of an integer tensor copied per piece.
constexpr uint64_t kPieceElements = uint64_t{1} << 22;

bool is_float(Dtype d) noexcept {
  return d == Dtype::F32 || d == Dtype::F16 || d == Dtype::BF16 || d == Dtype::F64;
}

// A scalar or string value as safetensors metadata text, or nullopt for an array.
std::optional<std::string> metadata_text(const GgufValue& v) {
  if (const std::string* s = v.as_string()) return *s;
  if (v.type == GgufValueType::ARRAY) return std::nullopt;
  if (v.type == GgufValueType::BOOL)
    return v.as_uint() != 0u ? "true" : "false";  // any non-zero byte, as ggml
  if (v.type == GgufValueType::INT64) {
    int64_t i;
    std::memcpy(&i, v.bytes.data(), 8);
    return fmt::format("{}", i);
  }
  if (const std::optional<uint64_t> u = v.as_uint()) return fmt::format("{}", *u);
  if (v.type == GgufValueType::FLOAT32)
    return fmt::format("{}", static_cast<float>(*v.as_double()));
  return fmt::format("{}", *v.as_double());  // FLOAT64, negative INT8..INT32
}

}  // namespace

namespace detail {

Dtype gguf_output_dtype(const GgufTensorInfo& t, Dtype floats) {
  const std::optional<Dtype> plain = ggml_plain_dtype(t.type);
  return plain && !is_float(*plain) ? *plain : floats;
}

void check_gguf_import(const GgufFile& src, Dtype dtype) {
  if (dtype != Dtype::F32 && dtype != Dtype::F16 && dtype != Dtype::BF16)
    throw_invalid(
        fmt::format("GGUF tensors are imported as F32, F16 or BF16, not {}", dtype_name(dtype)));
  for (const GgufTensorInfo& t : src.tensors())
    if (!ggml_decodes(t.type))
      throw Error(
          ErrorCode::unsupported, Rule::gguf, t.name, std::nullopt,
          fmt::format("tensor {} is {}, a ggml type tlio does not decode (ggml does not either); "
                      "nothing was written",
                      t.name, ggml_type(t.type)->name),
          src.name());
}

namespace {

// A GGUF tensor as a WeightDecoder, so that it streams through write_decoded as a quantized
// weight does: its elements in the order a Hugging Face folder has them (the rows the export
// interleaved per head put back in place; a 1-D tensor's rows are its values), each range
// decoded as ggml decodes it.
// The rows of a tensor whose rows the export may interleave: a matrix's, or a 1-D tensor's
// values.
uint64_t rows_of(const GgufTensorInfo& t) { return t.ne.size() == 2 ? t.ne[1] : t.element_count(); }

class GgufTensorDecoder final : public WeightDecoder {
 public:
  GgufTensorDecoder(const GgufFile& file, const GgufTensorInfo& t, uint64_t permute_heads,
                    uint64_t base, float shift)
      : file_(file), t_(t), cols_(t.ne.size() == 2 ? t.ne[0] : 1), base_(base), shift_(shift) {
    if (permute_heads) head_rows_ = rows_of(t) / permute_heads;
  }
  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    if (shift_ != 0) {  // as F32, the shift taken off, then in `out`
      std::vector<float> values(count);
      file_.read_values(t_, base_ + first, count, Dtype::F32,
                        std::as_writable_bytes(std::span(values)));
      for (float& v : values) v -= shift_;
      return convert(Dtype::F32, std::as_bytes(std::span(values)), out, dst, count);
    }
    if (head_rows_ == 0) return file_.read_values(t_, base_ + first, count, out, dst);
    const uint64_t size = dtype_bits(out) / 8;
    while (count > 0) {  // a row at a time, each from its place in the GGUF
      const uint64_t row = first / cols_, col = first % cols_, n = std::min(count, cols_ - col);
      file_.read_values(t_, base_ + gguf_row_of_hf_row(row, head_rows_) * cols_ + col, n, out,
                        dst.first(n * size));
      dst = dst.subspan(n * size);
      first += n;
      count -= n;
    }
  }

 private:
  const GgufFile& file_;
  const GgufTensorInfo& t_;
  uint64_t cols_, base_;  // base_: the first element read (an expert's, in a stack)
  float shift_;           // taken off every value (not with permuted rows: no row has both)
  uint64_t head_rows_ = 0;
};

}  // namespace

void write_gguf_tensor(const GgufFile& src, const GgufTensorInfo& t, const std::string& name,
                       Dtype to, uint64_t permute_heads, std::optional<uint64_t> expert, Writer& w,
                       GgufImportReport& report, const std::function<void(uint64_t)>& written,
                       float shift) {
  const std::optional<Dtype> plain = ggml_plain_dtype(t.type);
  ++report.tensors;
  if (!plain)
    ++report.decoded;
  else if (*plain != to)
    ++report.converted;
  else
    ++report.kept;
  report.data_bytes_in += expert ? t.bytes / t.ne[2] : t.bytes;
  const uint64_t size = dtype_bits(to) / 8;
  if (plain && !is_float(*plain)) {  // integers keep their bytes: no float on the way
    // In pieces, or a row at a time from its place where the export interleaved the rows.
    const uint64_t rows = rows_of(t), head_rows = permute_heads ? rows / permute_heads : 0;
    const uint64_t row_bytes = rows ? t.bytes / rows : 0;
    const uint64_t piece_bytes =
        head_rows ? row_bytes : std::max<uint64_t>(1, kPieceElements * size);
    std::vector<std::byte> piece;
    for (uint64_t at = 0; at < t.bytes; at += piece.size()) {
      piece.resize(static_cast<size_t>(std::min(piece_bytes, t.bytes - at)));
      const uint64_t from =
          head_rows ? gguf_row_of_hf_row(at / row_bytes, head_rows) * row_bytes : at;
      src.read(t, from, piece);
      w.append(name, piece);
      report.data_bytes_out += piece.size();
      if (written) written(piece.size() / size);
    }
    return;
  }
  // An expert of a stack: its [rows, columns] slice (each counted in the report as a tensor).
  const uint64_t count = expert ? t.ne[0] * t.ne[1] : t.element_count();
  write_decoded(GgufTensorDecoder(src, t, permute_heads, expert.value_or(0) * count, shift), count,
                to, w, name, [&](uint64_t bytes) {
                  report.data_bytes_out += bytes;
                  if (written) written(bytes / size);
                });
}

}  // namespace detail

Metadata gguf_scalar_metadata(const GgufFile& f) {
  Metadata metadata;
  for (const GgufKeyValue& kv : f.metadata())
    if (std::optional<std::string> text = metadata_text(kv.value))
      metadata.emplace(kv.key, std::move(*text));
  return metadata;
}

GgufImportReport import_gguf(const GgufFile& src, const std::filesystem::path& out,
                             const GgufImportOptions& options) {
  detail::check_gguf_import(src, options.dtype);

  GgufImportReport report;
  Writer w = Writer::to_file(out);
  const Metadata metadata = gguf_scalar_metadata(src);
  report.metadata_kept = metadata.size();
  report.metadata_skipped = src.metadata().size() - metadata.size();
  w.set_metadata(metadata);
  uint64_t total = 0;
  for (const GgufTensorInfo& t : src.tensors()) {
    Shape shape;
    for (uint64_t d : t.shape()) shape.push_back(d);
    w.declare(t.name, detail::gguf_output_dtype(t, options.dtype), std::move(shape));
    total += t.element_count();  // each tensor's elements are backed by its bytes: no overflow
  }

  uint64_t done = 0;
  for (const GgufTensorInfo& t : src.tensors())
    detail::write_gguf_tensor(src, t, t.name, detail::gguf_output_dtype(t, options.dtype), 0,
                              std::nullopt, w, report, [&](uint64_t count) {
                                done += count;
                                if (options.progress) options.progress(done, total);
                              });
  w.commit();
  return report;
}

}  // namespace tlio
