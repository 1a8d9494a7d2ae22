// gguf_convert/gguf_import.cpp: a GGUF file's tensors written as a safetensors file: declared first
// from the GGUF header (numpy order, the target dtype), then written tensor by tensor in pieces,
// each piece decoded on every core (whole rows, put back in place where the export interleaved
// them).
#include "gguf_convert/gguf_import.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/parallel.hpp"
#include "gguf_convert/gguf_arch.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/gguf.hpp"
#include "tlio/gguf_convert.hpp"

namespace tlio {

namespace {

// Elements decoded per piece: the writer's buffer holds one piece.
constexpr uint64_t kPieceElements = uint64_t{1} << 22;
// Elements below which a piece is decoded on this thread alone.
constexpr uint64_t kParallelElements = uint64_t{1} << 16;

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
          fmt::format(
              "tensor {} is {}, a ggml type tlio does not decode (IQ1/IQ2/IQ3 codebook types "
              "are not carried); nothing was written",
              t.name, ggml_type(t.type)->name),
          src.name());
}

void write_gguf_tensor(const GgufFile& src, const GgufTensorInfo& t, const std::string& name,
                       Dtype to, uint64_t permute_heads, Writer& w, GgufImportReport& report,
                       const std::function<void(uint64_t)>& written) {
  const std::optional<Dtype> plain = ggml_plain_dtype(t.type);
  ++report.tensors;
  if (!plain)
    ++report.decoded;
  else if (*plain != to)
    ++report.converted;
  else
    ++report.kept;
  report.data_bytes_in += t.bytes;
  const unsigned threads = thread_count(configured_threads());
  const uint64_t n = t.element_count(), size = dtype_bits(to) / 8;
  const uint64_t block = ggml_type(t.type)->block;
  // Interleaved rows are read a piece of whole heads at a time, then put back in place (a 1-D
  // tensor's rows are its values).
  const uint64_t rows = t.ne.size() == 2 ? t.ne[1] : n, cols = t.ne.size() == 2 ? t.ne[0] : 1;
  const uint64_t head_rows = permute_heads ? rows / permute_heads : 0;
  const uint64_t head = head_rows * cols;
  const uint64_t step = head ? std::max<uint64_t>(1, kPieceElements / head) * head : kPieceElements;
  std::vector<std::byte> piece, placed;
  for (uint64_t first = 0; first < n;) {
    const uint64_t count = std::min(step, n - first);
    piece.resize(count * size);
    parallel_for(count, kParallelElements, block, threads, [&](uint64_t b, uint64_t e) {
      src.read_values(t, first + b, e - b, to, std::span(piece).subspan(b * size, (e - b) * size));
    });
    if (head) {
      const uint64_t row_bytes = cols * size;
      placed.resize(piece.size());
      for (uint64_t r = 0; r < count / cols; ++r)
        std::memcpy(placed.data() + r * row_bytes,
                    piece.data() + gguf_row_of_hf_row(r, head_rows) * row_bytes, row_bytes);
      piece.swap(placed);
    }
    w.append(name, piece);
    report.data_bytes_out += piece.size();
    first += count;
    if (written) written(count);
  }
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
    detail::write_gguf_tensor(src, t, t.name, detail::gguf_output_dtype(t, options.dtype), 0, w,
                              report, [&](uint64_t count) {
                                done += count;
                                if (options.progress) options.progress(done, total);
                              });
  w.commit();
  return report;
}

}  // namespace tlio
