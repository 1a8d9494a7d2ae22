// quant/convert_file.cpp: whole-file dtype conversion (tlio convert --dtype). It lives above the
// dtype module because quantized weights are dequantized, never cast: only the scheme registry
// names their stored tensors and decodes them.
#include "tlio/convert_file.hpp"

#include <fmt/core.h>

#include <map>
#include <string_view>
#include <vector>

#include "common/json_text.hpp"
#include "common/text.hpp"
#include "dtype/for_tensor.hpp"
#include "dtype/lost_values.hpp"
#include "quant/rewrite_steps.hpp"
#include "quant/schemes.hpp"
#include "quant/tensor_selection.hpp"
#include "tlio/error.hpp"
#include "tlio/quant.hpp"

namespace tlio {

namespace {

// Output produced per conversion step: large enough to use every core (convert() splits arrays
// of a million elements and more), small enough to keep memory bounded.
constexpr size_t kConvertChunkBytes = size_t{16} << 20;

}  // namespace

namespace detail {

std::vector<const QuantizedWeight*> weights_to_restore(const std::vector<QuantizedWeight>& weights,
                                                       const ConvertFileOptions& options,
                                                       bool convert_dtypes) {
  std::vector<const QuantizedWeight*> restored;
  if (!convert_dtypes) return restored;
  const NameFilter filter(options.include, options.exclude);
  for (const QuantizedWeight& q : weights)
    if (filter.selects(q.name, true)) restored.push_back(&q);
  return restored;
}

ConvertFileReport convert_into(const TensorSet& set, const File& src, Writer& w,
                               const ConvertFileOptions& options,
                               const std::vector<QuantizedWeight>& weights, bool convert_dtypes,
                               bool allow_empty) {
  const Dtype to = options.dtype;
  if (convert_dtypes && (!is_floating(to) || !can_convert(Dtype::F32, to)))
    throw_invalid(fmt::format("cannot convert tensors to {}: not a supported floating dtype",
                              dtype_name(to)));
  const NameFilter filter(options.include, options.exclude);
  const StoredParts quantized_parts = stored_tensor_names(weights);
  // Quantized weights the filter selects are dequantized, never cast: each takes the place of
  // its first stored tensor (and follows it when the selection drops it); its parts go.
  std::map<std::string_view, const QuantizedWeight*> restored_at;
  StoredParts restored_parts;
  for (const QuantizedWeight* q : weights_to_restore(weights, options, convert_dtypes)) {
    restored_at.emplace(q->stored.front(), q);
    restored_parts.insert(q->stored.begin(), q->stored.end());
  }

  ConvertFileReport report;
  const SelectionPlan plan = plan_selection(src, options.tensors, allow_empty, &weights);
  report.dropped = plan.dropped;
  report.renamed = plan.renamed;
  report.ties_removed = plan.ties_removed;
  report.ties_repointed = plan.ties_repointed;
  Metadata metadata = plan.metadata;
  if (!weights.empty() && restored_at.size() == weights.size())
    erase_quantization_records(metadata);
  w.set_metadata(metadata);
  // The stored tensors of quantized weights keep their dtype (the registry says which they are).
  std::map<std::string_view, const TensorInfo*> source_of;
  std::map<std::string_view, const QuantizedWeight*> restored_of;
  for (const SelectedTensor& p : plan.tensors) {
    const TensorInfo& t = *p.source;
    report.data_bytes_in += t.byte_size();
    if (restored_parts.contains(t.name)) {
      if (auto q = restored_at.find(t.name); q != restored_at.end()) {
        // Its name as the selection renames it (the parts' stem); a name taken is refused.
        const auto renamed = plan.weight_names.find(q->second->name);
        const std::string& name =
            renamed != plan.weight_names.end() ? renamed->second : q->second->name;
        if (source_of.contains(name) || restored_of.contains(name) ||
            (src.header().find(name) && !quantized_parts.contains(name)))
          throw_invalid(
              fmt::format("cannot dequantize {}: a tensor of that name exists", quote_name(name)));
        w.declare(name, to, q->second->shape);
        restored_of.emplace(name, q->second);
      }
      continue;
    }
    bool c = convert_dtypes && is_floating(t.dtype) && can_convert(t.dtype, to) && t.dtype != to &&
             !quantized_parts.contains(t.name) && filter.selects(t.name, true);
    w.declare(p.name, c ? to : t.dtype, t.shape);
    source_of.emplace(p.name, &t);
  }
  uint64_t total = 0;
  for (const TensorInfo& t : w.layout()) total += t.byte_size();
  uint64_t done = 0;
  auto tick = [&](uint64_t bytes) {
    done += bytes;
    if (options.progress) options.progress(done, total);
  };
  // Kept tensors first, in one call (from a URL: few requests, several in flight).
  std::vector<std::string_view> kept, kept_sources;
  for (const TensorInfo& t : w.layout()) {
    report.data_bytes_out += t.byte_size();
    if (restored_of.contains(t.name)) continue;
    const TensorInfo& s = *source_of.at(t.name);
    if (t.dtype == s.dtype) {
      kept.push_back(t.name);
      kept_sources.push_back(s.name);
    }
  }
  report.kept = kept.size();
  w.copy_many_from(src, kept, kept_sources, tick);
  for (const TensorInfo& t : w.layout()) {
    if (auto q = restored_of.find(t.name); q != restored_of.end()) {
      ++report.converted;
      ++report.dequantized;
      write_decoded(set, *q->second, to, w, t.name, tick);
      continue;
    }
    const TensorInfo& s = *source_of.at(t.name);
    if (t.dtype == s.dtype) continue;
    ++report.converted;
    // A mapped source is converted in place; any other (pread, a URL) is read chunk by chunk,
    // so a tensor never has to fit in memory whole.
    const bool mapped = !src.mapped_data().empty() || s.byte_size() == 0;
    const std::span<const std::byte> whole =
        mapped ? src.mapped_data().subspan(static_cast<size_t>(s.begin),
                                           static_cast<size_t>(s.byte_size()))
               : std::span<const std::byte>{};
    std::vector<std::byte> chunk;
    const unsigned in_bits = dtype_bits(s.dtype), out_bits = dtype_bits(t.dtype);
    const bool can_lose = can_lose_values(s.dtype, t.dtype);
    LostValues lost{t.name};
    for_tensor(t.name, [&] {
      w.write_from(
          t.name,
          [&](uint64_t offset, std::span<std::byte> buf) {
            const uint64_t first = offset * 8 / out_bits, count = buf.size() * 8 / out_bits;
            const uint64_t in_offset = first * in_bits / 8, in_size = count * in_bits / 8;
            std::span<const std::byte> in;
            if (mapped) {
              in = whole.subspan(static_cast<size_t>(in_offset), static_cast<size_t>(in_size));
            } else {
              chunk.resize(static_cast<size_t>(in_size));
              src.read_data(s.begin + in_offset, chunk);
              in = chunk;
            }
            if (can_lose) {
              const LostCounts l = convert_counting_lost(s.dtype, in, t.dtype, buf, count);
              lost.overflowed += l.overflowed;
              lost.flushed += l.flushed;
            } else {
              convert(s.dtype, in, t.dtype, buf, count);
            }
            tick(buf.size());
          },
          kConvertChunkBytes);
    });
    if (lost.overflowed || lost.flushed) report.lost.push_back(std::move(lost));
  }
  return report;
}

}  // namespace detail

LostValues ConvertFileReport::lost_total() const noexcept {
  LostValues total;
  for (const LostValues& l : lost) {
    total.overflowed += l.overflowed;
    total.flushed += l.flushed;
  }
  return total;
}

ConvertFileReport convert_file(const File& src, const std::filesystem::path& out,
                               const ConvertFileOptions& options) {
  const std::vector<QuantizedWeight> weights = find_quantized_weights(src);
  Writer w = Writer::to_file(out);
  const ConvertFileReport report =
      detail::convert_into(detail::TensorSet({&src}), src, w, options, weights, true, false);
  w.commit();
  return report;
}

}  // namespace tlio
