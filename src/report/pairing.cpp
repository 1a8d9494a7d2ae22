// report/pairing.cpp: a model's tensors paired with a reference's, by name or through the GGUF
// export's names.
#include "report/pairing.hpp"

#include <fmt/core.h>

#include <set>

#include "gguf_convert/gguf_arch.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

uint64_t Pairing::reference_row(uint64_t row, uint64_t rows) const noexcept {
  if (!permute_heads) return row;
  const uint64_t d = rows / permute_heads;
  return model_is_gguf ? hf_row_of_gguf_row(row, d) : gguf_row_of_hf_row(row, d);
}

const Pairing* Pairings::find(std::string_view name) const {
  const auto it = by_model_.find(name);
  return it == by_model_.end() ? nullptr : &it->second;
}

std::vector<std::string> Pairings::unpaired_reference() const {
  std::set<std::string_view> paired;
  for (const auto& [name, p] : by_model_) paired.insert(p.reference);
  std::vector<std::string> out;
  for (const std::string& n : reference_names_)
    if (!paired.contains(n) && !made(n)) out.push_back(n);
  return out;
}

namespace {

// The GGUF name and row interleave of each value name of `folder` (names the export leaves out,
// or does not know, have none).
std::map<std::string, GgufName, std::less<>> gguf_names(const Weights& folder) {
  if (folder.config_json().empty())
    throw Error(ErrorCode::unsupported, Rule::model, "config.json", std::nullopt,
                "pairing a GGUF file's tensors with a folder's needs the folder's config.json (its "
                "architecture names the tensors)",
                folder.name());
  const HfConfig c = parse_hf_names(folder.config_json(), folder.name());
  const GgufArch& arch = gguf_arch_for(c.hf_class);
  std::map<std::string, GgufName, std::less<>> out;
  for (const std::string& name : folder.value_names()) {
    try {
      std::optional<GgufName> g = gguf_name_for(arch, c, name);
      if (g && !g->expert) out.emplace(name, std::move(*g));  // an expert is part of a stack
    } catch (const Error& e) {
      if (e.code() != ErrorCode::unsupported) throw;  // a name the table does not know: unpaired
    }
  }
  return out;
}

}  // namespace

Pairings pair_names(const Weights& model, const Weights& reference) {
  const std::vector<std::string> names = model.value_names();
  Pairings out = [&] {  // by the export's names across GGUF and a folder, else by name
    Pairings p;
    p.reference_names_ = reference.value_names();
    const bool gguf_to_folder =
        model.kind() == WeightsKind::gguf && reference.kind() == WeightsKind::model_folder;
    const bool folder_to_gguf =
        model.kind() == WeightsKind::model_folder && reference.kind() == WeightsKind::gguf;
    if (gguf_to_folder || folder_to_gguf) p.made_.emplace(kRopeFreqsName);
    if (gguf_to_folder) {
      std::map<std::string_view, std::pair<std::string_view, uint64_t>> by_gguf_name;
      const auto hf = gguf_names(reference);
      for (const auto& [hf_name, g] : hf)
        by_gguf_name.emplace(g.name, std::pair(std::string_view(hf_name), g.permute_heads));
      for (const std::string& n : names)
        if (const auto it = by_gguf_name.find(n); it != by_gguf_name.end())
          p.by_model_.emplace(n, Pairing{std::string(it->second.first), it->second.second, true});
      return p;
    }
    if (folder_to_gguf) {
      const std::set<std::string_view> in_reference(p.reference_names_.begin(),
                                                    p.reference_names_.end());
      for (const auto& [hf_name, g] : gguf_names(model))
        if (in_reference.contains(g.name))
          p.by_model_.emplace(hf_name, Pairing{g.name, g.permute_heads, false});
      return p;
    }
    const std::set<std::string_view> in_reference(p.reference_names_.begin(),
                                                  p.reference_names_.end());
    for (const std::string& n : names)
      if (in_reference.contains(n)) p.by_model_.emplace(n, Pairing{n, 0, false});
    return p;
  }();
  // A GGUF file and a lone safetensors file pair only when the file holds GGUF names (an import).
  const bool model_is_gguf = model.kind() == WeightsKind::gguf;
  if (out.by_model_.empty() && model_is_gguf != (reference.kind() == WeightsKind::gguf) &&
      !names.empty() && !out.reference_names_.empty()) {
    const Weights& gguf = model_is_gguf ? model : reference;
    const Weights& other = model_is_gguf ? reference : model;
    throw Error(
        ErrorCode::unsupported, Rule::none, {}, std::nullopt,
        fmt::format(
            "no tensor of {} pairs with one of {}: a GGUF file pairs with a model folder (its "
            "config.json names the tensors in GGUF) or with a file of GGUF names",
            gguf.name(), other.name()),
        other.name());
  }
  return out;
}

}  // namespace tlio::detail
