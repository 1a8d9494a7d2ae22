// quant/tensor_selection.cpp: keep, drop and rename over a file's tensors, quantized weights whole.
#include "quant/tensor_selection.hpp"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/json_text.hpp"
#include "common/text.hpp"
#include "tlio/error.hpp"
#include "tlio/quant.hpp"

namespace tlio::detail {

namespace {

struct RenameRule {
  std::regex pattern;
  std::string format;  // the replacement in std::regex_replace's syntax ($1, $&, $$)
};

// `\1`..`\9` and `\0` as the users write them (Python's re.sub, sed), in the ECMAScript
// format std::regex_replace takes; `\\` is a backslash, and a `$` is literal.
std::string replacement_format(const std::string& replacement, unsigned groups,
                               const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < replacement.size(); ++i) {
    const char c = replacement[i];
    if (c == '$') {
      out += "$$";
    } else if (c == '\\' && i + 1 < replacement.size() && replacement[i + 1] >= '0' &&
               replacement[i + 1] <= '9') {
      const unsigned g = static_cast<unsigned>(replacement[++i] - '0');
      if (g > groups)
        throw_invalid(fmt::format(
            "rename replacement {} refers to group \\{}, but regex {} has "
            "{} group{}",
            quote_name(replacement), g, quote_name(pattern), groups, groups == 1 ? "" : "s"));
      out += g == 0 ? std::string("$&") : fmt::format("${}", g);
    } else if (c == '\\' && i + 1 < replacement.size() && replacement[i + 1] == '\\') {
      out += '\\';
      ++i;
    } else {
      out += c;
    }
  }
  return out;
}

// The index of the first of `patterns` found in `name`, or -1.
int first_match(const std::vector<std::regex>& patterns, const std::string& name) {
  for (size_t i = 0; i < patterns.size(); ++i)
    if (std::regex_search(name, patterns[i])) return static_cast<int>(i);
  return -1;
}

bool matches_any(const std::vector<std::regex>& patterns, const std::string& name) {
  return first_match(patterns, name) >= 0;
}

// The part of a quantized weight's stored names that names the layer: their longest common
// prefix, cut back to a '.' unless every name is it or goes on with a '.'. Renaming it renames
// every stored tensor alike, so the weight stays whole.
std::string common_stem(const std::vector<std::string>& names) {
  std::string_view prefix = names.front();
  for (const std::string& n : names) {
    size_t k = 0;
    while (k < prefix.size() && k < n.size() && prefix[k] == n[k]) ++k;
    prefix = prefix.substr(0, k);
  }
  bool at_boundary = true;
  for (const std::string& n : names)
    if (n.size() > prefix.size() && n[prefix.size()] != '.') at_boundary = false;
  if (at_boundary) return std::string(prefix);
  const size_t dot = prefix.rfind('.');
  return dot == std::string_view::npos ? std::string() : std::string(prefix.substr(0, dot));
}

// The tie records of `src` as `plan` leaves them: renamed, re-pointed (no record: the alias is a
// tensor now) or removed. `alias_of`: the tensors left out that are written under their alias.
void follow_ties(const File& src,
                 const std::unordered_map<std::string_view, std::string_view>& alias_of,
                 const std::function<bool(const std::string&, const std::string&)>& is_tie,
                 const std::function<bool(const std::string&)>& selected,
                 const std::function<std::string(const std::string&)>& new_alias,
                 SelectionPlan& plan) {
  std::unordered_map<std::string_view, std::string_view> new_name;
  for (const SelectedTensor& s : plan.tensors) new_name.emplace(s.source->name, s.name);
  for (const auto& [key, value] : src.metadata()) {
    if (!is_tie(key, value)) {
      plan.metadata.emplace(key, value);
      continue;
    }
    if (const auto a = alias_of.find(value); a != alias_of.end()) {
      if (a->second == key)
        ++plan.ties_repointed;
      else if (selected(key))
        plan.metadata[new_alias(key)] = std::string(new_name.at(value));
      else
        ++plan.ties_removed;
      continue;
    }
    const auto kept = new_name.find(value);
    if (kept == new_name.end() || !selected(key)) {
      ++plan.ties_removed;
      continue;
    }
    plan.metadata[new_alias(key)] = std::string(kept->second);
  }
}

}  // namespace

SelectionPlan plan_selection(const File& src, const TensorSelection& selection, bool allow_empty,
                             const std::vector<QuantizedWeight>* weights) {
  std::vector<std::regex> keep, drop;
  for (const std::string& re : selection.keep) keep.push_back(compile_regex(re, "keep"));
  for (const std::string& re : selection.drop) drop.push_back(compile_regex(re, "drop"));
  std::vector<RenameRule> rules;
  for (const auto& [re, replacement] : selection.rename) {
    std::regex pattern = compile_regex(re, "rename");
    std::string format = replacement_format(replacement, pattern.mark_count(), re);
    rules.push_back({std::move(pattern), std::move(format)});
  }
  const auto selected = [&](const std::string& name) {
    return (keep.empty() || matches_any(keep, name)) && !matches_any(drop, name);
  };
  const auto renamed = [&](std::string name) {
    for (const RenameRule& r : rules) name = std::regex_replace(name, r.pattern, r.format);
    return name;
  };

  // Quantized weights decide for their stored tensors (only looked for when the selection can
  // tell them apart from plain ones).
  struct Decision {
    bool keep;
    std::string name;
  };
  std::unordered_map<std::string_view, Decision> decided;
  std::map<std::string, std::string, std::less<>> weight_names;
  if (!selection.empty()) {
    const std::vector<QuantizedWeight> own =
        weights ? std::vector<QuantizedWeight>{} : find_quantized_weights(src);
    for (const QuantizedWeight& w : weights ? *weights : own) {
      const bool kept = selected(w.name);
      for (const std::string& part : w.stored) {
        if (part == w.name) continue;
        // A pattern that would split the weight: a drop naming a part of a kept one, or a keep
        // naming a part of one left out.
        const int drop_hit = first_match(drop, part);
        // (A weight its logical name drops is dropped whole, whatever keep says of its parts.)
        const int keep_hit = kept || keep.empty() || drop_hit >= 0 || matches_any(drop, w.name)
                                 ? -1
                                 : first_match(keep, part);
        if ((kept && drop_hit >= 0) || keep_hit >= 0)
          throw_invalid(
              fmt::format("{} regex {} matches {}, a stored tensor of quantized weight "
                          "{} ({}), which moves whole: select the weight by its name, "
                          "or dequantize it first",
                          kept ? "drop" : "keep",
                          quote_name(kept ? selection.drop[drop_hit] : selection.keep[keep_hit]),
                          quote_name(part), quote_name(w.name), w.scheme.name()),
              part);
      }
      const std::string stem = common_stem(w.stored);
      const std::string new_stem = rules.empty() ? stem : renamed(stem);
      for (const std::string& part : w.stored)
        if (const TensorInfo* t = src.header().find(part))  // this shard's parts
          decided.emplace(t->name, Decision{kept, new_stem + part.substr(stem.size())});
      if (kept)
        weight_names.emplace(
            w.name, w.name.starts_with(stem) ? new_stem + w.name.substr(stem.size()) : w.name);
    }
  }

  SelectionPlan plan;
  plan.weight_names = std::move(weight_names);
  // Tie records: a metadata value that names a tensor, under a key that names none. A tied
  // tensor left out whose alias is kept is written under the alias instead ("re-pointed").
  const auto is_tie = [&](const std::string& key, const std::string& value) {
    return src.header().find(value) && !src.header().find(key) && !decided.contains(value);
  };
  std::unordered_map<std::string_view, std::string_view> alias_of;
  for (const auto& [key, value] : src.metadata())
    if (is_tie(key, value) && !selected(value) && selected(key)) alias_of.emplace(value, key);
  std::map<std::string, const TensorInfo*, std::less<>> by_new_name;
  for (const TensorInfo& t : src.tensors()) {
    const auto d = decided.find(t.name);
    const auto alias = alias_of.find(t.name);
    const bool kept =
        d != decided.end() ? d->second.keep : selected(t.name) || alias != alias_of.end();
    if (!kept) {
      ++plan.dropped;
      continue;
    }
    const std::string& as = alias != alias_of.end() ? std::string(alias->second) : t.name;
    std::string name = d != decided.end() ? d->second.name : rules.empty() ? as : renamed(as);
    if (name != t.name) {
      ++plan.renamed;
      if (name == "__metadata__")
        throw_invalid(fmt::format("renaming gives tensor {} the name \"__metadata__\", which the "
                                  "format keeps for metadata",
                                  quote_name(t.name)),
                      t.name);
      if (!simdjson::validate_utf8(name.data(), name.size()))
        throw_invalid(fmt::format("renaming gives tensor {} a name that is not valid UTF-8 "
                                  "(a regex split a multi-byte character?)",
                                  quote_name(t.name)),
                      t.name);
    }
    const auto [slot, inserted] = by_new_name.try_emplace(name, &t);
    if (!inserted)
      throw_invalid(
          fmt::format("renaming gives tensors {} and {} the same name {}",
                      quote_name(slot->second->name), quote_name(t.name), quote_name(name)),
          name);
    plan.tensors.push_back({&t, std::move(name)});
  }
  follow_ties(
      src, alias_of, is_tie, selected,
      [&](const std::string& n) { return rules.empty() ? n : renamed(n); }, plan);
  if (plan.tensors.empty() && !src.tensors().empty() && !allow_empty)
    throw_invalid(fmt::format("the selection leaves none of the {} tensor{} of {}",
                              src.tensors().size(), src.tensors().size() == 1 ? "" : "s",
                              src.name()));
  return plan;
}

bool is_linear_weight(const TensorInfo& t) {
  if (t.shape.size() != 2) return false;
  const std::string_view name = t.name;
  if (name != "weight" && !name.ends_with(".weight")) return false;
  // The module path's parts, the parameter name ("weight") left out.
  std::vector<std::string_view> parts;
  for (size_t start = 0; start < name.size();) {
    const size_t dot = std::min(name.find('.', start), name.size());
    parts.push_back(name.substr(start, dot - start));
    start = dot + 1;
  }
  parts.pop_back();
  for (std::string_view part : parts)
    if (part.find("embed") != std::string_view::npos || part == "wte" || part == "wpe" ||
        part == "shared" || part == "lm_head" || part == "score" || part == "classifier")
      return false;
  return !(parts.size() == 1 && parts[0] == "output");
}

}  // namespace tlio::detail
