// gguf_convert/gguf_import_folder.cpp: a GGUF file's model written back as a Hugging Face folder:
// names mapped through the export's table, Q/K rows put back, the side files rebuilt from its keys,
// all published as one set.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "common/checked.hpp"
#include "format/writer_access.hpp"
#include "gguf_convert/carry_proof.hpp"
#include "gguf_convert/gguf_arch.hpp"
#include "gguf_convert/gguf_import.hpp"
#include "gguf_convert/gguf_import_stacked.hpp"
#include "gguf_convert/gguf_to_hf.hpp"
#include "gguf_convert/gguf_to_mlx.hpp"
#include "io/atomic_file.hpp"
#include "io/location.hpp"
#include "model/layout.hpp"
#include "tlio/error.hpp"
#include "tlio/gguf.hpp"
#include "tlio/gguf_convert.hpp"

namespace tlio {

namespace {

// One tensor of the folder: a GGUF tensor, one expert of a stacked one, or one made of several
// GGUF tensors (`stacked`: gpt-oss's experts held stacked, DeepSeek's kv_b_proj).
struct Planned {
  const GgufTensorInfo* t;
  std::string name;
  Shape shape;
  uint64_t permute_heads;
  std::optional<uint64_t> expert;
  const detail::StackedImport* stacked = nullptr;
  float shift = 0;  // taken off every value (GgufName::shift: Gemma's norms)
  std::optional<detail::MlxCarry> carry = {};  // a transcode's weight in MLX's layout
};

// OpenAI's MXFP4 experts, as transformers reads them (the rest of the model stays plain).
constexpr std::string_view kMxfp4Config =
    R"("quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": )"
    R"(["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]})";

// The folder's tensors GGUF tensor `t` becomes: itself under its Hugging Face name (1 or 2
// dimensions, whole heads where its rows are put back), or a stack's experts, each [rows,
// columns].
std::vector<Planned> plan_tensor(const GgufFile& src, const GgufTensorInfo& t,
                                 const std::vector<std::pair<std::string, detail::GgufName>>& names,
                                 const detail::HfConfig& c) {
  const auto refuse = [&](const std::string& what) {
    throw Error(ErrorCode::format, Rule::gguf, t.name, std::nullopt, what, src.name());
  };
  std::vector<Planned> out;
  if (names.front().second.expert) {
    if (detail::gguf_output_dtype(t, Dtype::F32) != Dtype::F32)  // experts are floating weights
      refuse(fmt::format("{} is {}, not a stack of floating experts", t.name,
                         ggml_type(t.type)->name));
    if (t.ne.size() != 3 || t.ne[2] != c.experts || names.size() != c.experts)
      refuse(fmt::format("{} is [{}], not a stack of {} experts", t.name, fmt::join(t.ne, ", "),
                         c.experts));
    for (const auto& [hf, g] : names) out.push_back({&t, hf, Shape{t.ne[1], t.ne[0]}, 0, g.expert});
    std::sort(out.begin(), out.end(),
              [](const Planned& a, const Planned& b) { return *a.expert < *b.expert; });
    return out;
  }
  const auto& [hf, g] = names.front();
  if (t.ne.size() > 2)
    refuse(fmt::format("{} has {} dimensions; {} has 1 or 2", t.name, t.ne.size(), hf));
  const uint64_t rows = t.ne.size() == 2 ? t.ne[1] : t.element_count(), heads = g.permute_heads;
  if (heads && (rows % heads != 0 || (rows / heads) % 2 != 0))
    refuse(fmt::format("{} has {} rows, not {} heads of an even size", t.name, rows, heads));
  Shape shape;
  for (uint64_t d : t.shape()) shape.push_back(d);
  out.push_back({&t, hf, std::move(shape), heads, std::nullopt, nullptr, g.shift});
  return out;
}

// A transcode's weights in MLX's layout: each carried or, with `lossy`, requantized; the ones no
// rule carries refused together, before anything is written.
void plan_mlx_carries(const GgufFile& src, std::vector<Planned>& plan,
                      const TranscodeOptions& options) {
  std::vector<std::string> refused;
  bool fixed_by_lossy = true;  // every refusal one --lossy takes
  for (Planned& p : plan) {
    if (p.stacked) {
      if (!ggml_plain_dtype(p.t->type)) {
        refused.push_back(fmt::format("{} (experts held stacked are not carried yet)", p.name));
        fixed_by_lossy = false;
      }
      continue;
    }
    std::string why;
    p.carry = detail::mlx_carry_of(*p.t, p.name, p.shape.back(), options, why);
    if (!why.empty()) refused.push_back(fmt::format("{} ({}: {})", p.name, p.t->name, why));
  }
  if (refused.empty()) return;
  detail::refuse_weights(refused, "MLX's layout", fixed_by_lossy, Rule::gguf, src.name());
}

// config.json's "quantization" and its copy "quantization_config" (mlx-lm reads the first).
std::string mlx_members(const std::vector<std::pair<std::string, MlxOptions>>& weights) {
  const std::string json = detail::mlx_quantization_json(weights);
  if (json.empty()) return {};
  return fmt::format("\"quantization\": {0},\n  \"quantization_config\": {0}", json);
}

}  // namespace

GgufImportReport import_gguf_model(const GgufFile& src, const std::string& out_dir,
                                   const GgufImportOptions& options) {
  return detail::import_gguf_folder(src, out_dir, options, nullptr, nullptr);
}

namespace detail {

GgufImportReport import_gguf_folder(const GgufFile& src, const std::string& out_dir,
                                    const GgufImportOptions& options,
                                    const TranscodeOptions* transcode, TranscodeReport* carried) {
  detail::check_gguf_import(src, options.dtype);
  const detail::GgufArch& arch = detail::gguf_arch_of(src);
  const detail::HfConfig c = detail::hf_config_of(arch, src);

  // Every tensor's Hugging Face names (a stack's, one per expert), before anything is written.
  std::map<std::string, std::vector<std::pair<std::string, detail::GgufName>>, std::less<>> back;
  for (auto& [hf, g] : detail::gguf_names_of(arch, c)) back[g.name].emplace_back(hf, g);
  for (const GgufTensorInfo& t : src.tensors())
    if (auto experts = detail::gguf_expert_names_of(arch, c, t.name); !experts.empty())
      back[t.name] = std::move(experts);
  std::vector<const GgufTensorInfo*> taken;  // by tensors made of several
  const std::vector<detail::StackedImport> stacked =
      detail::plan_stacked_imports(src, arch, c, taken);
  std::vector<Planned> plan;
  uint64_t total = 0;
  for (const GgufTensorInfo& t : src.tensors()) {
    if (std::find(taken.begin(), taken.end(), &t) != taken.end()) {
      total += t.element_count();
      for (const detail::StackedImport& s : stacked)  // where its first part is
        if (s.sources.front() == &t) plan.push_back({&t, s.name, {}, 0, std::nullopt, &s});
      continue;
    }
    // RoPE's factors (Llama 3's, LongRoPE's) are config.json's rope_scaling (hf_config_of).
    if (detail::is_rope_tensor(c.rope_scaling, t.name)) continue;
    const auto it = back.find(t.name);
    if (it == back.end())
      throw Error(
          ErrorCode::unsupported, Rule::gguf, t.name, std::nullopt,
          fmt::format("tensor {} has no Hugging Face name in {}'s table ({}); nothing was written",
                      t.name, arch.hf_class, arch.name),
          src.name());
    for (Planned& p : plan_tensor(src, t, it->second, c)) plan.push_back(std::move(p));
    total += t.element_count();
  }
  // A transcode's weights in MLX's layout: their config in config.json and, as mlx-lm writes a
  // file, in the weights' metadata.
  std::vector<std::pair<std::string, MlxOptions>> mlx_weights;
  Metadata metadata = detail::kModelMetadata;
  if (transcode) {
    plan_mlx_carries(src, plan, *transcode);
    for (const Planned& p : plan)
      if (p.carry) mlx_weights.emplace_back(p.name, p.carry->options);
    metadata = {{"format", "mlx"},
                {"quantization_config", detail::mlx_quantization_json(mlx_weights)}};
  }

  const detail::Location out = detail::Location::parse(out_dir);
  detail::create_output_folder(out);
  detail::OutputSet set;  // nothing replaces the folder's contents until every file is whole
  GgufImportReport report;
  Writer w = detail::WriterAccess::into_set(set, out.join("model.safetensors"), metadata);
  for (const Planned& p : plan)
    if (p.stacked)
      for (auto& [name, dtype, shape] : detail::stacked_import_tensors(*p.stacked, options.dtype))
        w.declare(name, dtype, shape);
    else if (p.carry)
      for (auto& [name, dtype, shape] :
           detail::mlx_carry_tensors(p.name, p.shape[0], p.shape.back(), *p.carry))
        w.declare(name, dtype, shape);
    else
      w.declare(p.name, detail::gguf_output_dtype(*p.t, options.dtype), p.shape);
  uint64_t done = 0;
  const auto progress = [&](uint64_t count) {
    done += count;
    if (options.progress) options.progress(done, total);
  };
  for (const Planned& p : plan)
    if (p.stacked) {
      detail::write_stacked_import(src, *p.stacked, options.dtype, w, report, progress);
    } else if (p.carry) {
      const uint64_t rows = p.shape[0], cols = p.shape.back();
      const detail::GgufRows at{p.t, rows, cols, p.expert.value_or(0) * rows,
                                p.permute_heads ? rows / p.permute_heads : 0};
      TranscodeReport::Item& item = carried->items.emplace_back();
      item.name = p.name;
      detail::write_mlx_carry(src, at, p.name, *p.carry, w, item, progress);
      ++report.tensors;
      report.data_bytes_in += p.expert ? p.t->bytes / p.t->ne[2] : p.t->bytes;
      for (const auto& [name, dtype, shape] :
           detail::mlx_carry_tensors(p.name, rows, cols, *p.carry))
        report.data_bytes_out += detail::tensor_size(dtype_bits(dtype), shape).bytes;
    } else
      detail::write_gguf_tensor(src, *p.t, p.name, detail::gguf_output_dtype(*p.t, options.dtype),
                                p.permute_heads, p.expert, w, report, progress, p.shift);
  w.commit();
  report.files.push_back("model.safetensors");

  const auto add = [&](const char* file, const std::string& text) {
    set.add_text(out.join(file), text);
    report.files.push_back(file);
  };
  const bool mxfp4 = std::any_of(stacked.begin(), stacked.end(),
                                 [](const detail::StackedImport& s) { return s.mxfp4; });
  add("config.json",
      detail::config_json_of(arch, c, options.dtype,
                             mxfp4 ? std::string(kMxfp4Config) : mlx_members(mlx_weights)));
  if (const std::optional<std::string> generation = detail::generation_config_of(c))
    add("generation_config.json", *generation);
  if (const std::optional<std::string> tokenizer =
          detail::tokenizer_json_of(src, report.tokenizer_note))
    add("tokenizer.json", *tokenizer);
  add("tokenizer_config.json", detail::tokenizer_config_of(src, c));
  // A previous model's files that would not match this one: removed when not written anew.
  constexpr std::string_view kStale[] = {
      "generation_config.json", "tokenizer.json", "tokenizer.model", "special_tokens_map.json",
      "added_tokens.json",      "vocab.json",     "merges.txt",      "chat_template.jinja",
      "chat_template.json"};
  detail::publish_weights(set, out, report.files, kStale);
  return report;
}

}  // namespace detail

}  // namespace tlio
