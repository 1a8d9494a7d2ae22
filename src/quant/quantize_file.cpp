// quant/quantize_file.cpp: whole-file quantize (tlio quantize). It streams: tensors are processed
// in chunks of elements, so memory stays bounded whatever the model size (a nested bnb weight
// keeps its absmax, one float per block, until the end).
#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "common/text.hpp"
#include "quant/rewrite_steps.hpp"
#include "quant/schemes.hpp"
#include "quant/tensor_selection.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio {

using detail::quote_name;

namespace detail {

QuantizeReport quantize_into(const File& src, Writer& w, const QuantizeOptions& options,
                             const std::vector<QuantizedWeight>& existing, bool allow_none) {
  const SchemeEntry& entry = scheme_entry(options.scheme.kind());
  if (entry.info.read_only)
    throw Error(
        ErrorCode::unsupported, Rule::none, {}, std::nullopt,
        fmt::format("tlio reads {} weights but does not write them", options.scheme.name()));
  const std::unique_ptr<WeightEncoder> scheme = entry.encoder(options.scheme.options());
  if (!scheme)  // a form of a written scheme that tlio only reads (FP8 per tensor, MXFP8)
    throw Error(
        ErrorCode::unsupported, Rule::none, {}, std::nullopt,
        fmt::format("tlio reads {} weights but does not write them", options.scheme.name()));
  const NameFilter filter(options.include, options.exclude);

  // Weights already quantized stay as they are; a file holds one int4 group.
  for (const auto& q : existing)
    if (options.scheme.kind() == SchemeKind::int4 && q.scheme.kind() == SchemeKind::int4 &&
        !(q.scheme == options.scheme))
      throw_invalid(fmt::format("the file already holds {} weights; cannot add {}", q.scheme.name(),
                                options.scheme.name()));
  const auto stored = stored_tensor_names(existing);
  auto is_stored_part = [&](const std::string& name) { return stored.contains(name); };

  QuantizeReport report;
  // Why the tensors not quantized are kept, in this order.
  enum Why : size_t { already_quantized, not_selected, excluded, one_d, kWhyCount };
  std::vector<std::vector<std::string>> kept_for(kWhyCount);
  for (const QuantizedWeight& q : existing)
    if (src.header().find(q.stored.front())) kept_for[already_quantized].push_back(q.name);
  // The decision for each tensor, before anything is declared: a selection of nothing is an
  // error with nothing written.
  std::vector<const TensorInfo*> selected;
  for (const TensorInfo& t : src.tensors()) {
    if (is_stored_part(t.name)) continue;
    const bool by_default = scheme->selected_by_default(t);
    if (!filter.includes(t.name, by_default)) {
      kept_for[not_selected].push_back(t.name);
    } else if (filter.excludes(t.name)) {
      kept_for[excluded].push_back(t.name);
    } else if (t.shape.size() <= 1 && !options.allow_1d) {
      kept_for[one_d].push_back(t.name);
    } else if (std::string why = scheme->unquantizable(t); !why.empty()) {
      if (filter.has_include())
        throw Error(ErrorCode::invalid_argument, Rule::none, t.name, std::nullopt,
                    fmt::format("cannot quantize {}: {}", quote_name(t.name), why));
      report.items.push_back({t.name, false, why, 0, 0, t.byte_size(), t.byte_size()});
    } else {
      selected.push_back(&t);
    }
  }
  const char* const reasons[kWhyCount] = {
      "already quantized",
      filter.has_include() ? "not matched by include"
                           : "not in the default selection (linear layers' weights)",
      "matched by exclude", "1-D (biases, norms)"};
  for (size_t r = 0; r < kWhyCount; ++r)
    if (!kept_for[r].empty()) report.kept.push_back({reasons[r], std::move(kept_for[r])});
  if (selected.empty() && !allow_none) {
    std::string why;
    for (const QuantizeReport::Kept& k : report.kept)
      why += fmt::format(
          "; {} {}{}", k.names.size(), k.reason,
          k.reason.starts_with("1-D") ? ", quantized only with allow_1d (--allow-1d)" : "");
    for (const QuantizeReport::Item& i : report.items)
      why += fmt::format("; {}: {}", quote_name(i.name), i.note);
    throw_invalid(
        filter.has_include()
            ? fmt::format("include {} selects no tensor to quantize{}", quote_name(options.include),
                          why)
            : fmt::format("no tensor to quantize: the default selection is the weights "
                          "of linear layers (2-D, not embeddings or the output head), and "
                          "{} has none (choose others with include, --include REGEX){}",
                          src.name(), why));
  }

  Metadata meta = src.metadata();
  scheme->update_metadata(meta);
  w.set_metadata(meta);
  std::vector<size_t> item_of;
  for (const TensorInfo& t : src.tensors()) {
    if (std::find(selected.begin(), selected.end(), &t) == selected.end()) {
      w.declare(t.name, t.dtype, t.shape);
      continue;
    }
    QuantizeReport::Item item{t.name, true, {}, 0, 0, t.byte_size(), 0};
    try {
      for (TensorData& d : scheme->outputs(src, t)) {
        if (d.name != t.name && src.header().find(d.name))
          throw_invalid(fmt::format("cannot quantize {}: {} already exists", quote_name(t.name),
                                    quote_name(d.name)));
        item.bytes_after += tensor_bytes(d.dtype, d.shape).value_or(0);
        w.declare(d.name, d.dtype, d.shape);
      }
    } catch (const Error& e) {
      if (!e.tensor().empty()) throw;
      throw e.with_tensor(t.name, "tensor " + quote_name(t.name));
    }
    item_of.push_back(report.items.size());
    report.items.push_back(std::move(item));
  }
  uint64_t total = 0, done = 0;
  for (const TensorInfo& t : w.layout()) total += t.byte_size();
  const std::function<void(uint64_t)> tick = [&](uint64_t bytes) {
    done += bytes;
    if (options.progress) options.progress(done, total);
  };
  // Copy the others first (in-kernel), then quantize chunk by chunk.
  std::vector<std::string_view> kept;
  for (const TensorInfo& t : src.tensors())
    if (std::find(selected.begin(), selected.end(), &t) == selected.end()) kept.push_back(t.name);
  w.copy_many_from(src, kept, {}, tick);
  for (size_t k = 0; k < selected.size(); ++k) {
    const TensorInfo& t = *selected[k];
    try {
      scheme->write(w, src, t, report.items[item_of[k]], tick);
    } catch (const Error& e) {
      if (!e.tensor().empty()) throw;
      throw e.with_tensor(t.name, "tensor " + quote_name(t.name));
    }
  }
  // Skipped and quantized items were recorded in two passes: back into file order.
  std::unordered_map<std::string_view, size_t> position;
  for (size_t i = 0; i < src.tensors().size(); ++i) position.emplace(src.tensors()[i].name, i);
  std::stable_sort(report.items.begin(), report.items.end(),
                   [&](const QuantizeReport::Item& a, const QuantizeReport::Item& b) {
                     return position.at(a.name) < position.at(b.name);
                   });
  report.data_bytes_before = src.header().data_size();
  for (const TensorInfo& t : w.layout()) report.data_bytes_after += t.byte_size();
  return report;
}

}  // namespace detail

QuantizeReport quantize_file(const File& src, const std::filesystem::path& out,
                             const QuantizeOptions& options) {
  const std::vector<QuantizedWeight> existing = find_quantized_weights(src);
  // The output first: a destination that is not a file is refused before anything else.
  Writer w = Writer::to_file(out);
  QuantizeReport report = detail::quantize_into(src, w, options, existing, false);
  w.commit();
  return report;
}

}  // namespace tlio
