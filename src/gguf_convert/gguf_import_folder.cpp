// gguf_convert/gguf_import_folder.cpp: a GGUF file's model written back as a Hugging Face folder:
// names mapped through the export's table, Q/K rows put back, the side files rebuilt from its keys,
// all published as one set.
#include <fmt/core.h>

#include <map>

#include "format/writer_access.hpp"
#include "gguf_convert/gguf_arch.hpp"
#include "gguf_convert/gguf_import.hpp"
#include "gguf_convert/gguf_to_hf.hpp"
#include "io/atomic_file.hpp"
#include "io/location.hpp"
#include "model/layout.hpp"
#include "tlio/error.hpp"
#include "tlio/gguf.hpp"
#include "tlio/gguf_convert.hpp"

namespace tlio {

GgufImportReport import_gguf_model(const GgufFile& src, const std::string& out_dir,
                                   const GgufImportOptions& options) {
  detail::check_gguf_import(src, options.dtype);
  const GgufValue* arch_key = src.find("general.architecture");
  const std::string* arch_name = arch_key ? arch_key->as_string() : nullptr;
  const detail::GgufArch& arch = detail::gguf_arch_named(arch_name ? *arch_name : "");
  const detail::HfConfig c = detail::hf_config_of(arch, src);

  // Every tensor's Hugging Face name, before anything is written.
  std::map<std::string, std::pair<std::string, uint64_t>, std::less<>> back;  // GGUF -> HF, heads
  for (auto& [hf, g] : detail::gguf_names_of(arch, c))
    back.emplace(g.name, std::pair(hf, g.permute_heads));
  struct Planned {
    const GgufTensorInfo* t;
    std::string name;
    uint64_t permute_heads;
  };
  std::vector<Planned> plan;
  uint64_t total = 0;
  for (const GgufTensorInfo& t : src.tensors()) {
    // Llama 3's RoPE factors are config.json's rope_scaling (hf_config_of read them).
    if (t.name == detail::kRopeFreqsName &&
        c.rope_scaling.kind == detail::RopeScaling::Kind::llama3)
      continue;
    const auto it = back.find(t.name);
    if (it == back.end())
      throw Error(
          ErrorCode::unsupported, Rule::gguf, t.name, std::nullopt,
          fmt::format("tensor {} has no Hugging Face name in {}'s table ({}); nothing was written",
                      t.name, arch.hf_class, arch.name),
          src.name());
    if (t.ne.size() > 2)
      throw Error(
          ErrorCode::format, Rule::gguf, t.name, std::nullopt,
          fmt::format("{} has {} dimensions; {} has 1 or 2", t.name, t.ne.size(), it->second.first),
          src.name());
    const uint64_t rows = t.ne.size() == 2 ? t.ne[1] : t.element_count(), heads = it->second.second;
    if (heads && (rows % heads != 0 || (rows / heads) % 2 != 0))
      throw Error(ErrorCode::format, Rule::gguf, t.name, std::nullopt,
                  fmt::format("{} has {} rows, not {} heads of an even size", t.name, rows, heads),
                  src.name());
    plan.push_back({&t, it->second.first, heads});
    total += t.element_count();
  }

  const detail::Location out = detail::Location::parse(out_dir);
  detail::create_output_folder(out);
  detail::OutputSet set;  // nothing replaces the folder's contents until every file is whole
  GgufImportReport report;
  Writer w =
      detail::WriterAccess::into_set(set, out.join("model.safetensors"), detail::kModelMetadata);
  for (const Planned& p : plan) {
    Shape shape;
    for (uint64_t d : p.t->shape()) shape.push_back(d);
    w.declare(p.name, detail::gguf_output_dtype(*p.t, options.dtype), std::move(shape));
  }
  uint64_t done = 0;
  for (const Planned& p : plan)
    detail::write_gguf_tensor(src, *p.t, p.name, detail::gguf_output_dtype(*p.t, options.dtype),
                              p.permute_heads, w, report, [&](uint64_t count) {
                                done += count;
                                if (options.progress) options.progress(done, total);
                              });
  w.commit();
  report.files.push_back("model.safetensors");

  const auto add = [&](const char* file, const std::string& text) {
    set.add_text(out.join(file), text);
    report.files.push_back(file);
  };
  add("config.json", detail::config_json_of(arch, c, options.dtype));
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

}  // namespace tlio
