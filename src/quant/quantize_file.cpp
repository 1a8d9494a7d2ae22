// quant/quantize_file.cpp: whole-file quantize and dequantize (tlio quantize / dequantize).
// Both stream: matrices are processed in blocks of rows, so memory stays bounded whatever the
// model size.
#include <cmath>

#include <fmt/core.h>

#include "common/text.hpp"
#include "format/quote.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio {

using detail::quote_name;

namespace {

// Input elements processed per block when quantizing or dequantizing.
constexpr uint64_t kBlockElements = uint64_t{4} << 20;

// Why `t` cannot be quantized with `group`, or "" when it can.
std::string unquantizable(const TensorInfo& t, uint64_t group) {
  if (t.shape.size() != 2) return fmt::format("rank {} (int4 needs a matrix)", t.shape.size());
  if (!is_floating(t.dtype) || !can_convert(t.dtype, Dtype::F32))
    return fmt::format("dtype {} is not a floating type", dtype_name(t.dtype));
  if (t.shape[1] % 2) return fmt::format("{} columns (int4 needs an even number)", t.shape[1]);
  if (t.shape[1] % group) return fmt::format("{} columns are not a multiple of group {}", t.shape[1], group);
  return {};
}

}  // namespace

QuantizeReport quantize_file(const File& src, const std::filesystem::path& out,
                             const QuantizeOptions& options) {
  const std::optional<uint64_t> group = parse_int4_scheme(options.scheme);
  if (!group)
    throw Error(ErrorCode::unsupported, {}, {}, std::nullopt,
                fmt::format("unknown quantization scheme {} (int4-g<group>-sym)",
                            quote_name(options.scheme)));
  const detail::NameFilter filter(options.include, options.exclude);

  // Weights already quantized stay as they are, and must share the scheme.
  std::vector<QuantizedWeight> existing = find_quantized_weights(src);
  if (!existing.empty() && existing[0].scheme != options.scheme)
    throw_invalid(fmt::format("the file already holds {} weights; cannot add {}",
                              existing[0].scheme, options.scheme));
  auto is_stored_part = [&](const std::string& name) {
    for (const auto& w : existing)
      for (const auto& s : w.stored)
        if (s == name) return true;
    return is_quantization_companion(src, name);
  };

  QuantizeReport report;
  Writer w = Writer::to_file(out);
  Metadata meta = src.metadata();
  meta["format"] = "tinyllm";
  meta["quant"] = options.scheme;
  w.set_metadata(meta);
  std::vector<const TensorInfo*> selected;
  for (const TensorInfo& t : src.tensors()) {
    bool pick = !is_stored_part(t.name) &&
                filter.selects(t.name, t.name.ends_with("_proj.weight") && t.shape.size() == 2);
    if (pick) {
      std::string why = unquantizable(t, *group);
      if (!why.empty()) {
        if (filter.has_include())
          throw Error(ErrorCode::invalid_argument, {}, t.name, std::nullopt,
                      fmt::format("cannot quantize {}: {}", quote_name(t.name), why));
        report.items.push_back({t.name, false, why, 0, 0, t.byte_size(), t.byte_size()});
        pick = false;
      }
    }
    if (!pick) {
      w.declare(t.name, t.dtype, t.shape);
      continue;
    }
    for (const char* suffix : {".qweight", ".scales"})
      if (src.header().find(t.name + suffix))
        throw_invalid(fmt::format("cannot quantize {}: {} already exists", quote_name(t.name),
                                  quote_name(t.name + suffix)));
    selected.push_back(&t);
    w.declare(t.name + ".qweight", Dtype::U8, {t.shape[0], t.shape[1] / 2});
    w.declare(t.name + ".scales", Dtype::F16, {t.shape[0], t.shape[1] / *group});
  }
  uint64_t total = 0, done = 0;
  for (const TensorInfo& t : w.layout()) total += t.byte_size();
  auto tick = [&](uint64_t bytes) {
    done += bytes;
    if (options.progress) options.progress(done, total);
  };
  // Copy the others first (in-kernel), then quantize in blocks of rows.
  for (const TensorInfo& t : src.tensors())
    if (std::find(selected.begin(), selected.end(), &t) == selected.end()) {
      w.copy_from(t.name, src, t.name);
      tick(t.byte_size());
    }
  for (const TensorInfo* t : selected) {
    const uint64_t rows = t->shape[0], cols = t->shape[1], in_bits = dtype_bits(t->dtype);
    const uint64_t block_rows = std::max<uint64_t>(1, kBlockElements / std::max<uint64_t>(cols, 1));
    const TensorView view = src.view(t->name);
    QuantizeReport::Item item{t->name, true, {}, 0, 0, t->byte_size(), 0};
    double sq = 0, max_abs = 0;
    std::vector<float> block, back;
    std::vector<uint8_t> q;
    std::vector<uint16_t> s;
    for (uint64_t r0 = 0; r0 < rows; r0 += block_rows) {
      const uint64_t n = std::min(block_rows, rows - r0), elems = n * cols;
      block.resize(elems);
      back.resize(elems);
      q.resize(elems / 2);
      s.resize(elems / *group);
      try {
        convert(t->dtype, view.bytes().subspan(r0 * cols * in_bits / 8, elems * in_bits / 8),
                Dtype::F32, std::as_writable_bytes(std::span(block)), elems);
        int4_quantize(block, n, cols, *group, q, s);
        int4_dequantize_rows(q, s, n, cols, *group, 0, n, Dtype::F32,
                             std::as_writable_bytes(std::span(back)));
      } catch (const Error& e) {
        throw Error(e.code(), e.rule(), t->name, std::nullopt,
                    fmt::format("tensor {}: {}", quote_name(t->name), e.detail()));
      }
      for (uint64_t i = 0; i < elems; ++i) {
        const double d = static_cast<double>(back[i]) - static_cast<double>(block[i]);
        sq += d * d;
        max_abs = std::max(max_abs, std::fabs(d));
      }
      w.append(t->name + ".qweight", std::as_bytes(std::span(q)));
      w.append(t->name + ".scales", std::as_bytes(std::span(s)));
      tick(q.size() + s.size() * 2);
    }
    item.rmse = rows * cols != 0 ? std::sqrt(sq / static_cast<double>(rows * cols)) : 0;
    item.max_abs_error = max_abs;
    item.bytes_after = rows * cols / 2 + rows * (cols / *group) * 2;
    report.items.push_back(std::move(item));
  }
  w.commit();
  report.data_bytes_before = src.header().data_size();
  for (const TensorInfo& t : w.layout()) report.data_bytes_after += t.byte_size();
  return report;
}

DequantizeReport dequantize_file(const File& src, const std::filesystem::path& out, Dtype dtype,
                                 const ProgressCallback& progress) {
  if (dtype != Dtype::F32 && dtype != Dtype::F16 && dtype != Dtype::BF16)
    throw_invalid(fmt::format("dequantize writes F32, F16 or BF16, not {}", dtype_name(dtype)));
  const std::vector<QuantizedWeight> weights = find_quantized_weights(src);
  DequantizeReport report;
  report.restored = weights.size();
  if (!weights.empty()) report.scheme = weights[0].scheme;
  auto is_stored_part = [&](const std::string& name) {
    for (const auto& q : weights)
      for (const auto& s : q.stored)
        if (s == name) return true;
    return false;
  };
  Writer w = Writer::to_file(out);
  Metadata meta = src.metadata();
  meta.erase("quant");
  w.set_metadata(meta);
  for (const TensorInfo& t : src.tensors())
    if (!is_stored_part(t.name)) w.declare(t.name, t.dtype, t.shape);
  for (const QuantizedWeight& q : weights) {
    if (src.header().find(q.name))
      throw_invalid(fmt::format("cannot restore {}: a tensor of that name exists", quote_name(q.name)));
    w.declare(q.name, dtype, q.shape);
  }
  uint64_t total = 0, done = 0;
  for (const TensorInfo& t : w.layout()) total += t.byte_size();
  auto tick = [&](uint64_t bytes) {
    done += bytes;
    if (progress) progress(done, total);
  };
  for (const TensorInfo& t : src.tensors())
    if (!is_stored_part(t.name)) {
      w.copy_from(t.name, src, t.name);
      tick(t.byte_size());
    }
  for (const QuantizedWeight& q : weights) {
    const Int4Weight iw(src, q.name);
    const uint64_t cols = iw.cols(), out_bytes = dtype_bits(dtype) / 8;
    const uint64_t block_rows = std::max<uint64_t>(1, kBlockElements / std::max<uint64_t>(cols, 1));
    std::vector<std::byte> buf;
    for (uint64_t r0 = 0; r0 < iw.rows(); r0 += block_rows) {
      const uint64_t n = std::min(block_rows, iw.rows() - r0);
      buf.resize(n * cols * out_bytes);
      iw.dequantize_rows(r0, n, dtype, buf);
      w.append(q.name, buf);
      tick(buf.size());
    }
  }
  w.commit();
  return report;
}

}  // namespace tlio
