// model/folder_rewrites.cpp: convert, copy, edit, quantize and dequantize of whole model folders
// (tlio/folder_rewrite.hpp): each a step per shard (quant/rewrite_steps.hpp) over the shared
// folder rewrite, with the checks of the whole folder and config.json's edits.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>

#include "common/json_doc.hpp"
#include "common/json_members.hpp"
#include "common/json_text.hpp"
#include "model/folder_job.hpp"
#include "model/folder_rewrite.hpp"
#include "model/rewrite_counts.hpp"
#include "quant/rewrite_steps.hpp"
#include "quant/schemes.hpp"
#include "tlio/error.hpp"
#include "tlio/folder_rewrite.hpp"

namespace tlio {

using detail::quote_name;

namespace {

// config.json with its dtype set: "torch_dtype" and "dtype", whichever it has (transformers
// wrote the first, newer versions the second), "torch_dtype" when it has neither.
std::string with_dtype(const std::string& config, const std::string& source, Dtype d) {
  const std::string value = "\"" + std::string(torch_dtype_name(d)) + "\"";
  const detail::JsonDoc doc(config, source, Rule::model);
  const bool has_torch = !doc.root()["torch_dtype"].error(), has_new = !doc.root()["dtype"].error();
  std::string out = config;
  if (has_torch || !has_new)
    out = detail::set_json_member(out, "torch_dtype", value, source, Rule::model);
  if (has_new) out = detail::set_json_member(out, "dtype", value, source, Rule::model);
  return out;
}

// config.json whose quantization_config lists the modules of `restored` (dequantized by a
// convert that left others quantized) among those its loaders must not treat as quantized:
// compressed-tensors' "ignore", the others' "modules_to_not_convert".
std::string with_plain_modules(const std::string& config, const std::string& source,
                               const std::vector<const QuantizedWeight*>& restored) {
  const std::optional<std::string> qc =
      detail::json_member_text(config, "quantization_config", source, Rule::model);
  if (!qc) return config;
  const detail::JsonDoc doc(*qc, source, Rule::model);
  const std::string key = doc.optional_string("quant_method").value_or("") == "compressed-tensors"
                              ? "ignore"
                              : "modules_to_not_convert";
  std::vector<std::string> names;
  simdjson::dom::array listed;
  if (doc.root()[key].get_array().get(listed) == simdjson::SUCCESS)
    for (simdjson::dom::element e : listed)
      if (std::string_view v; e.get_string().get(v) == simdjson::SUCCESS)
        names.push_back(detail::quote_name(v));
  for (const QuantizedWeight* q : restored) {
    // The module holding the weight: "<m>.weight" -> "<m>"; gpt-oss's experts "<m>.gate_up_proj" ->
    // "<m>".
    std::string_view module = q->name;
    if (module.ends_with(".weight") || q->scheme.kind() == SchemeKind::mxfp4)
      module = module.substr(
          0, module.rfind('.') == std::string_view::npos ? module.size() : module.rfind('.'));
    if (std::find(names.begin(), names.end(), detail::quote_name(module)) == names.end())
      names.push_back(detail::quote_name(module));
  }
  const std::string edited = detail::set_json_member(
      *qc, key, fmt::format("[{}]", fmt::join(names, ", ")), source, Rule::model);
  return detail::set_json_member(config, "quantization_config", edited, source, Rule::model);
}

detail::FolderSource open_folder(const std::string& src, const FolderOptions& folder) {
  return detail::FolderSource(detail::Location::parse(src), folder.open);
}

// The rewrite run, and what it published handed back.
void run(const detail::FolderSource& source, const std::string& out, detail::FolderRewrite& how,
         const FolderOptions& folder) {
  how.max_shard_size = folder.max_shard_size;
  how.job = folder.job;
  FolderFiles written = detail::rewrite_folder(source, detail::Location::parse(out), how);
  if (folder.files) *folder.files = std::move(written);
}

// A selection that left none of the folder's tensors (each shard's step allows that for itself).
void refuse_empty_selection(uint64_t written, uint64_t dropped,
                            const detail::FolderSource& source) {
  if (written == 0 && dropped > 0)
    throw_invalid(fmt::format("the selection leaves none of the {} tensors of {}", dropped,
                              source.where.name()));
}

void add(ConvertFileReport& total, const ConvertFileReport& r) {
  total.converted += r.converted;
  total.dequantized += r.dequantized;
  total.kept += r.kept;
  total.dropped += r.dropped;
  total.renamed += r.renamed;
  total.ties_removed += r.ties_removed;
  total.ties_repointed += r.ties_repointed;
  total.data_bytes_in += r.data_bytes_in;
  total.data_bytes_out += r.data_bytes_out;
  total.lost.insert(total.lost.end(), r.lost.begin(), r.lost.end());
}

ConvertFileReport rewrite_tensors(const std::string& src, const std::string& out,
                                  const ConvertFileOptions& options, bool convert_dtypes,
                                  const FolderOptions& folder) {
  if (convert_dtypes && torch_dtype_name(options.dtype).empty())
    throw_invalid(
        fmt::format("a model's weights cannot be {}: torch has no such dtype to load them as",
                    dtype_name(options.dtype)));
  if (convert_dtypes && dtype_bits(options.dtype) <= 8 && !options.cast)
    throw_invalid(fmt::format(
        "converting a model to {} casts every tensor selected, norms and embeddings "
        "included, with no scale: quantize --scheme fp8-block writes FP8 weights with "
        "their scales, as the Hub's loaders read them (--cast, cast=True in Python, keeps the "
        "plain cast)",
        dtype_name(options.dtype)));
  if (detail::abort_if_asked(detail::Location::parse(out), folder.job)) return {};
  const detail::FolderSource source = open_folder(src, folder);
  const std::vector<QuantizedWeight> weights = detail::find_quantized_weights(*source.set);
  // A model whose quantized weights are all dequantized is no longer quantized; one partly
  // dequantized names the plain modules in its config.
  const std::vector<const QuantizedWeight*> restored =
      detail::weights_to_restore(weights, options, convert_dtypes);
  const bool plain = !weights.empty() && restored.size() == weights.size();
  ConvertFileReport total;
  detail::FolderRewrite how;
  how.write_shard = [&](size_t i, Writer& w, const ProgressCallback& progress) {
    ConvertFileOptions o = options;
    o.progress = progress;
    add(total, detail::convert_into(*source.set, source.weights.files[i], w, o, weights,
                                    convert_dtypes, true));
  };
  if (convert_dtypes)
    how.edit_config = [&](const std::string& text, const std::string& name) {
      const std::string edited = plain ? detail::set_json_member(text, "quantization_config",
                                                                 std::nullopt, name, Rule::model)
                                 : restored.empty() ? text
                                                    : with_plain_modules(text, name, restored);
      return with_dtype(edited, name, options.dtype);
    };
  how.before_publish = [&] {
    refuse_empty_selection(total.converted + total.kept, total.dropped, source);
  };
  how.restart = [&] { total = {}; };
  how.save_counts = [&] { return detail::counts_text(total); };
  how.load_counts = [&](const std::string& text, const std::string& name) {
    add(total, detail::convert_counts(text, name));
  };
  how.progress = options.progress;
  run(source, out, how, folder);
  return total;
}

void add(EditReport& total, EditReport&& r, bool first) {
  total.kept += r.kept;
  total.dropped += r.dropped;
  total.renamed += r.renamed;
  total.ties_removed += r.ties_removed;
  total.ties_repointed += r.ties_repointed;
  total.data_bytes += r.data_bytes;
  total.source_data_bytes += r.source_data_bytes;
  if (first) total.metadata = std::move(r.metadata);
}

// Quantize's reports of every shard as one: items in shard order, kept names under one reason.
void add(QuantizeReport& total, QuantizeReport&& r) {
  for (QuantizeReport::Item& i : r.items) total.items.push_back(std::move(i));
  for (QuantizeReport::Kept& k : r.kept) {
    auto same = std::find_if(total.kept.begin(), total.kept.end(),
                             [&](const QuantizeReport::Kept& t) { return t.reason == k.reason; });
    if (same == total.kept.end()) {
      total.kept.push_back(std::move(k));
    } else {
      for (std::string& n : k.names) same->names.push_back(std::move(n));
    }
  }
  total.data_bytes_before += r.data_bytes_before;
  total.data_bytes_after += r.data_bytes_after;
}

}  // namespace

ConvertFileReport convert_folder(const std::string& src, const std::string& out,
                                 const ConvertFileOptions& options, const FolderOptions& folder) {
  return rewrite_tensors(src, out, options, true, folder);
}

ConvertFileReport copy_folder(const std::string& src, const std::string& out,
                              const TensorSelection& tensors, const ProgressCallback& progress,
                              const FolderOptions& folder) {
  ConvertFileOptions options;
  options.tensors = tensors;
  options.progress = progress;
  return rewrite_tensors(src, out, options, false, folder);
}

EditReport edit_folder(const std::string& src, const std::string& out, const EditOptions& options,
                       const FolderOptions& folder) {
  const detail::FolderSource source = open_folder(src, folder);
  EditReport total;
  detail::FolderRewrite how;
  how.write_shard = [&](size_t i, Writer& w, const ProgressCallback& progress) {
    EditOptions o = options;
    o.progress = progress;
    try {
      add(total, detail::edit_into(source.weights.files[i], w, o, true), i == 0);
    } catch (const Error& e) {
      throw e.with_source(source.where.name_of(source.weights.names[i]));
    }
  };
  how.before_publish = [&] { refuse_empty_selection(total.kept, total.dropped, source); };
  how.restart = [&] { total = {}; };
  how.progress = options.progress;
  run(source, out, how, folder);
  return total;
}

QuantizeReport quantize_folder(const std::string& src, const std::string& out,
                               const QuantizeOptions& options, const FolderOptions& folder) {
  if (detail::abort_if_asked(detail::Location::parse(out), folder.job)) return {};
  const detail::FolderSource source = open_folder(src, folder);
  const std::vector<QuantizedWeight> existing = detail::find_quantized_weights(*source.set);
  QuantizeReport total;
  detail::FolderRewrite how;
  how.write_shard = [&](size_t i, Writer& w, const ProgressCallback& progress) {
    QuantizeOptions o = options;
    o.progress = progress;
    add(total, detail::quantize_into(source.weights.files[i], w, o, existing, true));
  };
  // config.json gets the quantization_config its loaders read (FP8: transformers, vLLM;
  // bitsandbytes: transformers), naming
  // the modules left plain so that they are not taken for quantized ones.
  const std::unique_ptr<detail::WeightEncoder> encoder =
      detail::scheme_entry(options.scheme.kind()).encoder(options.scheme.options());
  how.edit_config = [&](const std::string& text, const std::string& name) {
    std::vector<std::string> plain;
    auto add_module = [&](const std::string& tensor) {
      if (tensor.ends_with(".weight")) plain.push_back(tensor.substr(0, tensor.size() - 7));
    };
    for (const QuantizeReport::Kept& k : total.kept)
      std::for_each(k.names.begin(), k.names.end(), add_module);
    for (const QuantizeReport::Item& i : total.items)
      if (!i.quantized) add_module(i.name);
    // A head tied to the embeddings is stored under the embeddings' name only: named here so that
    // a loader that takes this list as the whole of its exceptions leaves it plain too.
    if (std::none_of(total.items.begin(), total.items.end(),
                     [](const QuantizeReport::Item& i) {
                       return i.quantized && i.name == "lm_head.weight";
                     }) &&
        std::find(plain.begin(), plain.end(), "lm_head") == plain.end())
      plain.push_back("lm_head");
    Dtype weights_dtype = Dtype::F32;  // bitsandbytes' compute dtype: the model's
    for (const QuantizeReport::Item& i : total.items)
      if (i.quantized) {
        weights_dtype = source.set->at(i.name).dtype;
        break;
      }
    const std::string config =
        encoder ? encoder->quantization_config(plain, weights_dtype) : std::string();
    if (config.empty()) return text;
    const std::string edited =
        detail::set_json_member(text, "quantization_config", config, name, Rule::model);
    return encoder->quantization_too()  // MLX's loaders read "quantization" first
               ? detail::set_json_member(edited, "quantization", config, name, Rule::model)
               : edited;
  };
  how.before_publish = [&] {
    if (std::any_of(total.items.begin(), total.items.end(),
                    [](const auto& i) { return i.quantized; }))
      return;
    std::string why;
    for (const QuantizeReport::Kept& k : total.kept)
      why += fmt::format("; {} {}", k.names.size(), k.reason);
    for (const QuantizeReport::Item& i : total.items)
      why += fmt::format("; {}: {}", quote_name(i.name), i.note);
    throw_invalid(fmt::format("no tensor of {} to quantize{}", source.where.name(), why));
  };
  how.restart = [&] { total = {}; };
  how.save_counts = [&] { return detail::counts_text(total); };
  how.load_counts = [&](const std::string& text, const std::string& name) {
    add(total, detail::quantize_counts(text, name));
  };
  how.progress = options.progress;
  run(source, out, how, folder);
  return total;
}

DequantizeReport dequantize_folder(const std::string& src, const std::string& out,
                                   std::optional<Dtype> dtype, const ProgressCallback& progress,
                                   const FolderOptions& folder) {
  detail::check_dequantize_dtype(dtype);
  if (detail::abort_if_asked(detail::Location::parse(out), folder.job)) return {};
  const detail::FolderSource source = open_folder(src, folder);
  const std::vector<QuantizedWeight> weights = detail::find_quantized_weights(*source.set);
  DequantizeReport total;
  detail::FolderRewrite how;
  auto add_dequantized = [&](const DequantizeReport& r) {
    total.restored += r.restored;
    total.scheme = r.scheme;
  };
  how.write_shard = [&](size_t i, Writer& w, const ProgressCallback& shard_progress) {
    add_dequantized(detail::dequantize_into(*source.set, source.weights.files[i], w, weights, dtype,
                                            shard_progress));
  };
  how.save_counts = [&] { return detail::counts_text(total); };
  how.load_counts = [&](const std::string& text, const std::string& name) {
    add_dequantized(detail::dequantize_counts(text, name));
  };
  const bool mlx = std::any_of(weights.begin(), weights.end(), [](const QuantizedWeight& w) {
    return w.scheme.kind() == SchemeKind::mlx;
  });
  how.edit_config = [&](const std::string& text, const std::string& name) {
    std::string edited =
        detail::set_json_member(text, "quantization_config", std::nullopt, name, Rule::model);
    if (mlx)  // its copy, which MLX's loaders read first
      edited = detail::set_json_member(edited, "quantization", std::nullopt, name, Rule::model);
    return dtype ? with_dtype(edited, name, *dtype) : edited;
  };
  how.restart = [&] { total = {}; };
  how.progress = progress;
  run(source, out, how, folder);
  return total;
}

}  // namespace tlio
