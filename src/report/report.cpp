// report/report.cpp: a model's report (tensor_figures over all its names, with its summary) and
// the report as JSON.
#include "tlio/report.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "common/json_text.hpp"
#include "common/text.hpp"
#include "io/atomic_file.hpp"
#include "io/location.hpp"
#include "report/pairing.hpp"
#include "report/report_figures.hpp"
#include "tlio/header.hpp"

namespace tlio {

ModelReport make_report(const std::string& location, const ReportOptions& options) {
  const std::unique_ptr<const Weights> opened = Weights::open(location, options.open);
  const Weights& model = *opened;
  std::unique_ptr<const Weights> reference;
  if (!options.reference.empty()) reference = Weights::open(options.reference, options.open);
  std::vector<std::string> names = model.value_names();
  std::optional<std::regex> filter;
  if (!options.filter.empty()) filter = detail::compile_regex(options.filter, "filter");
  const auto selected = [&](const std::string& n) {
    return !filter || std::regex_search(n, *filter);
  };
  std::erase_if(names, [&](const std::string& n) { return !selected(n); });
  // Layer by layer: "layers.2" before "layers.10", as people read a model.
  std::stable_sort(names.begin(), names.end(),
                   [](const std::string& a, const std::string& b) { return natural_less(a, b); });

  ModelReport r;
  r.name = model.name();
  r.format = weights_kind_name(model.kind());
  r.stored_size = model.stored_size();
  r.files = model.file_count();
  for (const auto& [key, value] : model.metadata()) r.metadata.emplace_back(key, value);
  if (!model.config_json().empty()) r.metadata.emplace_back("config.json", model.config_json());
  if (!model.quantization_config().empty())
    r.metadata.emplace_back("quantization_config", model.quantization_config());
  FigureOptions figure_options;
  figure_options.bins = options.bins;
  figure_options.progress = options.progress;
  std::optional<detail::Pairings> pairs;
  if (reference) {
    r.reference = reference->name();
    figure_options.reference = reference.get();
    pairs = detail::pair_names(model, *reference);
    for (const std::string& n : names)
      if (!pairs->find(n) && !pairs->made(n)) r.only_in_model.push_back(n);
    for (std::string& n : pairs->unpaired_reference())
      if (selected(n)) r.only_in_reference.push_back(std::move(n));
  }
  r.tensors = detail::tensor_figures(model, names, figure_options, pairs ? &*pairs : nullptr);
  std::map<std::string, uint64_t> by_type;
  for (const TensorFigures& t : r.tensors) {
    r.parameters += t.elements;
    by_type[t.type] += t.elements;
  }
  r.types.assign(by_type.begin(), by_type.end());
  std::stable_sort(r.types.begin(), r.types.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return r;
}

namespace {

std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

// Names and metadata as JSON strings, valid UTF-8 whatever bytes the file holds.
std::string json_string(std::string_view s) {
  std::string out;
  detail::append_json_string(out, detail::valid_utf8(s));
  return out;
}

std::string tensor_json(const TensorFigures& t) {
  std::string out = fmt::format(
      "{{\"name\":{},\"type\":{},\"shape\":[{}],\"elements\":{},\"stored_bytes\":{},"
      "\"layer\":{},\"numeric\":{}",
      json_string(t.name), json_string(t.type), fmt::join(t.shape, ","), t.elements, t.stored_bytes,
      t.layer ? std::to_string(*t.layer) : "null", t.numeric);
  if (t.numeric) {
    const ValueStats& s = t.stats;
    const bool any = s.count > 0, finite = s.finite() > 0;
    out += fmt::format(
        ",\"count\":{},\"nan\":{},\"inf\":{},\"zero\":{},\"min\":{},\"max\":{},\"mean\":{},\"std\":{},"
        "\"max_over_std\":{},\"histogram\":[{}]",
        s.count, s.nan, s.inf, s.zero, any ? json_number(s.min) : "null",
        any ? json_number(s.max) : "null", finite ? json_number(s.mean) : "null",
        finite ? json_number(s.std_dev()) : "null", json_number(detail::max_over_std(s)),
        fmt::join(t.histogram, ","));
  }
  if (t.error) {
    const TensorError& e = *t.error;
    out += fmt::format(
        ",\"error\":{{\"reference\":{},\"reference_type\":{},\"rmse\":{},\"max_abs\":{},\"cosine\":{},"
        "\"sqnr_db\":{},\"nonfinite\":{},\"nonfinite_mismatch\":{}}}",
        json_string(e.reference), json_string(e.reference_type), json_number(e.rmse),
        json_number(e.max_abs), json_number(e.cosine), json_number(e.sqnr_db), e.nonfinite,
        e.nonfinite_mismatch);
  }
  if (!t.note.empty()) out += fmt::format(",\"note\":{}", json_string(t.note));
  return out + "}";
}

std::string names_json(const std::vector<std::string>& names) {
  std::vector<std::string> quoted;
  for (const std::string& n : names) quoted.push_back(json_string(n));
  return fmt::format("[{}]", fmt::join(quoted, ","));
}

}  // namespace

std::string report_json(const ModelReport& r) {
  std::vector<std::string> types, metadata, tensors;
  for (const auto& [type, n] : r.types)
    types.push_back(fmt::format("{{\"type\":{},\"parameters\":{}}}", json_string(type), n));
  for (const auto& [key, value] : r.metadata)
    metadata.push_back(json_string(key) + ":" + json_string(value));
  for (const TensorFigures& t : r.tensors) tensors.push_back(tensor_json(t));
  return fmt::format(
      "{{\"model\":{},\"format\":{},\"reference\":{},\"parameters\":{},\"stored_size\":{},\"files\":{},"
      "\"types\":[{}],\"metadata\":{{{}}},\"only_in_model\":{},\"only_in_reference\":{},"
      "\"tensors\":[{}]}}",
      json_string(r.name), json_string(r.format),
      r.reference.empty() ? "null" : json_string(r.reference), r.parameters, r.stored_size, r.files,
      fmt::join(types, ","), fmt::join(metadata, ","), names_json(r.only_in_model),
      names_json(r.only_in_reference), fmt::join(tensors, ","));
}

void write_report_html(const ModelReport& report, const std::string& out) {
  detail::OutputSet set;
  set.add_text(detail::Location::parse(out), report_html(report));
  set.commit();
}

}  // namespace tlio
