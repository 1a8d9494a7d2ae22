// gguf_convert/gguf_export.cpp: a Hugging Face folder written as a GGUF file: a plan made from
// config.json, the tokenizer and the safetensors headers (names, types, shapes, so the whole GGUF
// header is known before a weight is read), then one pass over the tensors in the converter's
// order, each written in pieces of whole rows (gguf_export_parts.hpp).
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <set>

#include "common/json_doc.hpp"
#include "common/parallel.hpp"
#include "gguf/ggml_blocks.hpp"
#include "gguf/gguf_header.hpp"
#include "gguf/gguf_writer.hpp"
#include "gguf_convert/carry_proof.hpp"
#include "gguf_convert/ggml_carry.hpp"
#include "gguf_convert/gguf_arch.hpp"
#include "gguf_convert/gguf_export_parts.hpp"
#include "gguf_convert/gguf_import.hpp"
#include "gguf_convert/gguf_mix.hpp"
#include "gguf_convert/gguf_requantize.hpp"
#include "gguf_convert/gguf_spm.hpp"
#include "gguf_convert/gguf_vocab.hpp"
#include "io/location.hpp"
#include "model/location.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/gguf.hpp"
#include "tlio/gguf_convert.hpp"
#include "tlio/model.hpp"
#include "tlio/quant.hpp"
#include "tlio/weights_kind.hpp"

namespace tlio {

namespace {

using detail::PiecePass;
using detail::PlannedTensor;
using detail::SourcePart;

std::string folder_name(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const size_t slash = d.find_last_of('/');
  return slash == std::string::npos ? d : d.substr(slash + 1);
}

// One tensor's place in the export: checked (floating, 1 or 2 dimensions, not empty, whole heads
// where rows are permuted, the embeddings one row per token), its GGUF dimensions, and whether
// it is a weight (the rest stay F32, as llama.cpp's converter and quantizer keep them).
PlannedTensor plan_tensor(const File& f, const TensorInfo& t, const detail::GgufName& name,
                          const detail::HfConfig& c) {
  if (!can_convert(t.dtype, Dtype::F32) || is_integer(t.dtype) || t.dtype == Dtype::BOOL)
    throw Error(
        ErrorCode::unsupported, Rule::none, t.name, std::nullopt,
        fmt::format("tensor {} is {}: only floating weights, and quantized weights in a form tlio "
                    "decodes, are exported to GGUF",
                    t.name, dtype_name(t.dtype)),
        f.name());
  if (t.shape.size() == 0 || t.shape.size() > 2)
    throw Error(ErrorCode::unsupported, Rule::none, t.name, std::nullopt,
                fmt::format("tensor {} has {} dimensions; the architectures exported have 1 or 2",
                            t.name, t.shape.size()),
                f.name());
  if (t.element_count() == 0)
    throw Error(ErrorCode::format, Rule::model, t.name, std::nullopt,
                fmt::format("tensor {} has no values", t.name), f.name());
  if (t.shape.back() * dtype_bits(t.dtype) % 8 != 0)
    throw Error(
        ErrorCode::unsupported, Rule::none, t.name, std::nullopt,
        fmt::format("tensor {} is {} with rows of {} values, which do not start on whole bytes",
                    t.name, dtype_name(t.dtype), t.shape.back()),
        f.name());
  if (name.permute_heads &&
      (t.shape[0] % name.permute_heads != 0 || (t.shape[0] / name.permute_heads) % 2 != 0))
    throw Error(ErrorCode::format, Rule::model, t.name, std::nullopt,
                fmt::format("{} has {} rows, not {} heads of an even size", t.name, t.shape[0],
                            name.permute_heads),
                f.name());
  PlannedTensor p{{{&f, &t, nullptr}},
                  {name.name, ggml_id(GgmlTypeId::F32), {}},
                  name.permute_heads,
                  name.shift,
                  false,
                  {}};
  p.decl.ne.assign(t.shape.begin(), t.shape.end());
  std::reverse(p.decl.ne.begin(), p.decl.ne.end());
  // Routers stay F32, as llama.cpp's converter and llama-quantize keep them.
  p.weight = t.shape.size() == 2 && name.name.ends_with(".weight") &&
             !name.name.ends_with("_norm.weight") && !name.name.ends_with(".ffn_gate_inp.weight") &&
             !name.name.ends_with(".ffn_gate_inp_shexp.weight");
  if (p.decl.name == "token_embd.weight" &&
      (t.shape.size() != 2 || t.shape[0] != c.vocab_size || t.shape[1] != c.hidden_size))
    throw Error(
        ErrorCode::format, Rule::model, t.name, std::nullopt,
        fmt::format(
            "{} is [{}], not [vocab_size {}, hidden_size {}]: llama.cpp needs one row per token",
            t.name, fmt::join(t.shape, ", "), c.vocab_size, c.hidden_size),
        f.name());
  return p;
}

// general.file_type: the type asked for; MXFP4_MOE where MXFP4 experts are copied and the rest
// are plain floats, as llama.cpp's converter says.
uint32_t file_type_written(const detail::AskedTypes& asked,
                           const std::vector<PlannedTensor>& plan) {
  const bool floats = asked.file_type == detail::kFileTypeF32 ||
                      asked.file_type == detail::kFileTypeF16 ||
                      asked.file_type == detail::kFileTypeBf16;
  const bool mxfp4 =
      std::any_of(plan.begin(), plan.end(), [](const PlannedTensor& p) { return p.copy_mxfp4; });
  return floats && mxfp4 ? detail::kFileTypeMxfp4Moe : asked.file_type;
}

// How a tensor taken apart is read (GgufStackedPart): as [experts, in, out] (a bias [experts,
// out] as [experts, 1, out]; DeepSeek's kv_b_proj [heads * (nope + value), kv_lora] as [heads,
// nope + value, kv_lora]) with the in-rows [begin, end) taken; checked against the config.
detail::StackedView stacked_view(const File& f, const TensorInfo& t,
                                 const detail::GgufStackedPart& part, const detail::HfConfig& c) {
  using Rows = detail::GgufStackedPart::HeadRows;
  const Shape& s = t.shape;
  const auto refuse = [&](const std::string& what) {
    throw Error(ErrorCode::format, Rule::model, t.name, std::nullopt,
                fmt::format("{} is [{}], not {}", t.name, fmt::join(s, ", "), what), f.name());
  };
  if (part.head_rows != Rows::none) {
    const uint64_t per_head = c.qk_nope_head_dim + c.v_head_dim;
    if (s.size() != 2 || s[0] % c.heads != 0 || s[0] / c.heads != per_head ||
        s[1] != c.kv_lora_rank)
      refuse(fmt::format("[{} heads x (qk_nope_head_dim {} + v_head_dim {}), kv_lora_rank {}]",
                         c.heads, c.qk_nope_head_dim, c.v_head_dim, c.kv_lora_rank));
    const bool nope = part.head_rows == Rows::mla_nope;
    return {c.heads, per_head, s[1], nope ? 0 : c.qk_nope_head_dim,
            nope ? c.qk_nope_head_dim : per_head};
  }
  if (s.size() != (part.transposed ? 3u : 2u) || s[0] != c.experts || s.back() == 0 ||
      s.back() % part.every != 0 || t.element_count() == 0)
    refuse(fmt::format("the {} experts' {} held stacked ([{}, {}out])", c.experts,
                       part.transposed ? "weights" : "biases", c.experts,
                       part.transposed ? "in, " : ""));
  return part.transposed ? detail::StackedView{s[0], s[1], s[2], 0, s[1]}
                         : detail::StackedView{s[0], 1, s[1], 0, 1};
}

// A tensor taken apart (gpt-oss's experts held stacked, DeepSeek's kv_b_proj; GgufStackedPart):
// checked (floating or a form tlio decodes; stacked_view), its GGUF dimensions; MXFP4 blocks of
// gpt-oss are copied as they are, as llama.cpp's converter copies them, whatever type is asked
// for.
PlannedTensor plan_stacked(const File& f, const TensorInfo& t, const QuantizedWeight* quantized,
                           const detail::GgufName& name, const detail::GgufStackedPart& part,
                           const detail::HfConfig& c) {
  if (!quantized && (!can_convert(t.dtype, Dtype::F32) || is_integer(t.dtype) ||
                     t.dtype == Dtype::BOOL || dtype_bits(t.dtype) % 8 != 0))
    throw Error(ErrorCode::unsupported, Rule::none, t.name, std::nullopt,
                fmt::format("tensor {} is {}: it is exported from floating weights, or quantized "
                            "ones in a form tlio decodes",
                            t.name, dtype_name(t.dtype)),
                f.name());
  const detail::StackedView v = stacked_view(f, t, part, c);
  PlannedTensor p{{{&f, &t, quantized}},
                  {name.name, ggml_id(GgmlTypeId::F32), {}},
                  0,
                  0,
                  part.transposed || part.head_rows != detail::GgufStackedPart::HeadRows::none,
                  {},
                  &part,
                  false,
                  v};
  const uint64_t taken = v.out / part.every, in_rows = v.end - v.begin;
  if (part.transposed)  // GGUF rows are the source's columns: in_rows values each
    p.decl.ne = {in_rows, taken, v.experts};
  else if (v.in == 1)  // a bias
    p.decl.ne = {taken, v.experts};
  else
    p.decl.ne = {taken, in_rows, v.experts};
  const auto* mxfp4 = quantized ? std::get_if<Mxfp4Options>(&quantized->scheme.options()) : nullptr;
  if (mxfp4 && mxfp4->transposed && part.transposed) {
    p.copy_mxfp4 = true;
    p.weight = false;  // its type is MXFP4 whatever is asked for
    p.decl.type = ggml_id(GgmlTypeId::MXFP4);
  }
  return p;
}

// Each weight's type: the one asked for, or the mix's choice for it; then llama.cpp's fallback
// where its rows are not whole blocks, noted in the report.
void choose_types(std::vector<PlannedTensor>& plan, const detail::AskedTypes& asked,
                  const detail::GgufArch& arch, const detail::HfConfig& c,
                  GgufExportReport& report) {
  detail::MixModel model = detail::mix_model_of(arch, c);
  for (const PlannedTensor& p : plan) model.count(p.decl.name);
  for (PlannedTensor& p : plan) {
    if (!p.weight) continue;
    p.decl.type =
        detail::gguf_weight_type(asked, model, p.decl.name, p.decl.ne[0], report.fallbacks);
  }
}

// The split each tensor goes to: a new one begun where the next tensor would take the current
// one past `max_bytes` of tensor data (0: all in one); at most llama.cpp's 65,535 files.
std::vector<size_t> plan_splits(const std::vector<PlannedTensor>& plan, uint64_t max_bytes) {
  std::vector<size_t> split_of(plan.size(), 0);
  uint64_t used = 0;
  size_t split = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const detail::GgufTensorDecl& d = plan[i].decl;
    const uint64_t bytes =
        detail::gguf_padded(detail::gguf_tensor_bytes(d.type, d.ne, d.name), kDefaultGgufAlignment);
    if (max_bytes && used > 0 && used + bytes > max_bytes) {
      ++split;
      used = 0;
    }
    split_of[i] = split;
    used += bytes;
  }
  if (split >= UINT16_MAX)
    throw_invalid(fmt::format("{} splits of at most {} bytes: llama.cpp reads at most {}",
                              split + 1, max_bytes, UINT16_MAX));
  return split_of;
}

// The vocabulary as llama.cpp's keys, from the file llama.cpp's converter reads for the llama
// family: a SentencePiece tokenizer.model when there is one, else tokenizer.json (byte-level BPE,
// or a SentencePiece vocabulary written as BPE with byte fallback: scored by its merges).
std::vector<GgufKeyValue> vocabulary_keys(const detail::ModelLocation& where,
                                          const detail::HfConfig& c) {
  const std::optional<std::string> config = where.read_text("tokenizer_config.json");
  if (const std::optional<std::string> spm = where.read_text("tokenizer.model")) {
    if (spm->size() > detail::kMaxSentencePieceBytes)
      throw Error(ErrorCode::format, Rule::model, "tokenizer.model", std::nullopt,
                  fmt::format("tokenizer.model has {} bytes, more than the {} read", spm->size(),
                              detail::kMaxSentencePieceBytes),
                  where.name_of("tokenizer.model"));
    const detail::SentencePieceModel model = detail::parse_sentencepiece(
        std::as_bytes(std::span(*spm)), where.name_of("tokenizer.model"));
    return detail::gguf_spm_tokenizer(model, where.name_of("tokenizer.model"), config, c,
                                      where.exists("tokenizer.json"));
  }
  const std::optional<std::string> json = where.read_text("tokenizer.json");
  if (!json)
    throw Error(
        ErrorCode::format, Rule::model, "tokenizer.json", std::nullopt,
        "a GGUF export needs tokenizer.json or tokenizer.model: llama.cpp loads no model without its "
        "vocabulary",
        where.name());
  if (const auto spm = detail::sentencepiece_of_tokenizer_json(
          *json, where.name_of("tokenizer.json"), c.vocab_size))
    return detail::gguf_spm_tokenizer(*spm, where.name_of("tokenizer.json"), config, c, true);
  return detail::gguf_tokenizer(*json, where.name_of("tokenizer.json"), config, c);
}

// The vocabulary's keys, and the chat template from where transformers 5 saves it
// (chat_template.jinja, or chat_template.json's) when tokenizer_config.json has none, as
// llama.cpp's converter reads it.
std::vector<GgufKeyValue> tokenizer_keys(const detail::ModelLocation& where,
                                         const detail::HfConfig& c) {
  std::vector<GgufKeyValue> kv = vocabulary_keys(where, c);
  constexpr std::string_view kChatTemplate = "tokenizer.chat_template";
  if (std::any_of(kv.begin(), kv.end(),
                  [&](const GgufKeyValue& k) { return k.key == kChatTemplate; }))
    return kv;
  std::optional<std::string> chat = where.read_text("chat_template.jinja");
  if (!chat)
    if (const std::optional<std::string> json = where.read_text("chat_template.json"))
      chat = detail::JsonDoc(*json, where.name_of("chat_template.json"), Rule::model)
                 .optional_string("chat_template");
  if (chat) kv.push_back({std::string(kChatTemplate), detail::gguf_string(*chat)});
  return kv;
}

// A file's tensors by name.
std::vector<std::reference_wrapper<const TensorInfo>> by_name(const File& f) {
  std::vector<std::reference_wrapper<const TensorInfo>> out(f.tensors().begin(), f.tensors().end());
  std::sort(out.begin(), out.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  return out;
}

// The tensors in the order llama.cpp's converter writes them: RoPE's factors and gpt-oss's
// MXFP4 experts first, then each file's tensors by name (gguf-py reads a file's header sorted by
// name; the data's order differs where dtypes mix, FP8 weights with F32 scales), each expert
// stack where its last part comes.
struct ExportPlan {
  std::deque<TensorInfo> logical;  // quantized weights' TensorInfo, F32 as they are read
  std::vector<PlannedTensor> tensors;
};

ExportPlan plan_export(const Model& model, const detail::GgufArch& arch,
                       const detail::HfConfig& c) {
  ExportPlan out;
  for (auto& [name, values] : detail::rope_tensors(
           c.rope_scaling, c.rope_theta.value_or(detail::kDefaultRopeTheta), c.head_dim)) {
    PlannedTensor made{{}, {std::string(name), 0, {values.size()}}, 0, 0, false, {}};
    made.made = std::move(values);
    out.tensors.push_back(std::move(made));
  }
  // Quantized weights (bitsandbytes, FP8, GPTQ, ...: every form tlio decodes; one it does not is
  // refused by name) are planned under their logical names where their first part lies.
  std::map<std::string_view, const QuantizedWeight*> first_part;
  std::set<std::string_view> stored;
  for (const QuantizedWeight& w : model.quantized()) {
    first_part.emplace(w.stored.front(), &w);
    stored.insert(w.stored.begin(), w.stored.end());
  }
  std::map<std::string, std::pair<PlannedTensor, uint64_t>> stacks;  // by name: parts so far
  // MXFP4 experts copied as they are: first, where llama.cpp's converter writes them.
  std::vector<PlannedTensor> copied;
  for (const File& f : model.files())
    for (const TensorInfo& t : by_name(f)) {
      const TensorInfo* info = &t;
      const QuantizedWeight* quantized = nullptr;
      if (stored.contains(t.name)) {
        const auto w = first_part.find(t.name);
        if (w == first_part.end()) continue;
        quantized = w->second;
        TensorInfo& li = out.logical.emplace_back();
        li.name = quantized->name;
        li.dtype = Dtype::F32;
        li.shape = quantized->shape;
        info = &li;
      }
      const auto stacked = detail::gguf_stacked_names_for(arch, c, info->name);
      for (const auto& [name, part] : stacked) {
        PlannedTensor one = plan_stacked(f, *info, quantized, name, *part, c);
        (one.copy_mxfp4 ? copied : out.tensors).push_back(std::move(one));
      }
      if (!stacked.empty()) continue;
      const std::optional<detail::GgufName> name = detail::gguf_name_for(arch, c, info->name);
      if (!name) continue;
      PlannedTensor one = plan_tensor(f, *info, *name, c);
      one.parts.front().quantized = quantized;
      if (!name->expert) {
        out.tensors.push_back(std::move(one));
        continue;
      }
      auto& [stack, have] = stacks[name->name];
      if (stack.parts.empty()) {
        if (one.decl.ne.size() != 2)
          throw Error(ErrorCode::format, Rule::model, info->name, std::nullopt,
                      fmt::format("{} is [{}]: an expert's weight has 2 dimensions", info->name,
                                  fmt::join(info->shape, ", ")),
                      f.name());
        stack = one;
        stack.parts.assign(c.experts, SourcePart{nullptr, nullptr, nullptr});
        stack.decl.ne.push_back(c.experts);
      } else if ((one.decl.ne.size() != 2 || stack.decl.ne.size() != 3 ||
                  !std::equal(one.decl.ne.begin(), one.decl.ne.end(), stack.decl.ne.begin()))) {
        throw Error(ErrorCode::format, Rule::model, info->name, std::nullopt,
                    fmt::format("{} is [{}], unlike the other experts of {}", info->name,
                                fmt::join(info->shape, ", "), name->name),
                    f.name());
      }
      SourcePart& part = stack.parts[*name->expert];
      if (part.info)
        throw Error(ErrorCode::format, Rule::model, info->name, std::nullopt,
                    fmt::format("{} appears twice", info->name), f.name());
      part = one.parts.front();
      if (++have == c.experts) {
        out.tensors.push_back(std::move(stack));
        stacks.erase(name->name);
      }
    }
  if (!stacks.empty()) {
    const auto& [name, stack] = *stacks.begin();
    const auto missing = std::find_if(stack.first.parts.begin(), stack.first.parts.end(),
                                      [](const SourcePart& p) { return !p.info; });
    throw Error(ErrorCode::format, Rule::model, name, std::nullopt,
                fmt::format("{} lacks expert {} of {}: every expert of a layer is stacked into it",
                            name, missing - stack.first.parts.begin(), c.experts),
                model.name());
  }
  const auto first_read = std::find_if(out.tensors.begin(), out.tensors.end(),
                                       [](const PlannedTensor& p) { return !p.parts.empty(); });
  out.tensors.insert(first_read, std::make_move_iterator(copied.begin()),
                     std::make_move_iterator(copied.end()));
  return out;
}

}  // namespace

std::string gguf_split_name(std::string_view out, size_t index, size_t count) {
  std::string_view prefix = out;
  if (prefix.ends_with(".gguf")) prefix.remove_suffix(5);
  return fmt::format("{}-{:05}-of-{:05}.gguf", prefix, index + 1, count);
}

namespace {

// A transcode's quantized weights: each carried into the ggml type that computes its values, or
// with `lossy` requantized into the type of its width; the ones neither takes refused together,
// before anything is written. gpt-oss's MXFP4 experts are copied as an export copies them.
void plan_ggml_carries(std::vector<PlannedTensor>& plan, std::span<const File> files,
                       const TranscodeOptions& options, const std::string& where) {
  std::vector<std::string> refused;
  bool fixed_by_lossy = true;  // every refusal one --lossy takes
  for (PlannedTensor& p : plan) {
    const auto quantized = [](const SourcePart& part) { return part.quantized != nullptr; };
    if (p.copy_mxfp4 || std::none_of(p.parts.begin(), p.parts.end(), quantized)) continue;
    const QuantizedWeight& w = *std::find_if(p.parts.begin(), p.parts.end(), quantized)->quantized;
    if (!std::all_of(p.parts.begin(), p.parts.end(), quantized)) {  // a stack of mixed experts
      refused.push_back(fmt::format("{} (its experts are stored in different forms)", w.name));
      fixed_by_lossy = false;
      continue;
    }
    if (p.stacked) {
      refused.push_back(fmt::format("{} (a stack taken apart)", w.name));
      fixed_by_lossy = false;
      continue;
    }
    // An expert stack's parts are carried into one type, or none is.
    std::string why;
    const std::optional<uint32_t> first = detail::ggml_carry_type(files, w, why);
    bool all = first.has_value();
    for (const SourcePart& other : p.parts) {
      std::string other_why;
      all = all && detail::ggml_carry_type(files, *other.quantized, other_why) == first;
    }
    if (!all && !options.lossy) {
      refused.push_back(fmt::format("{} ({})", w.name, why.empty() ? "its experts differ" : why));
      continue;
    }
    p.decl.type = all ? *first : detail::ggml_lossy_type(w);
    p.carry = true;
  }
  if (refused.empty()) return;
  detail::refuse_weights(refused, "ggml's blocks", fixed_by_lossy, Rule::none, where);
}

}  // namespace

GgufExportReport export_gguf(const std::string& model_dir, const std::string& out,
                             const GgufExportOptions& options) {
  return detail::export_gguf_folder(model_dir, out, options, nullptr, nullptr);
}

namespace detail {

GgufExportReport export_gguf_folder(const std::string& model_dir, const std::string& out,
                                    const GgufExportOptions& options,
                                    const TranscodeOptions* transcode, TranscodeReport* carried) {
  const AskedTypes asked = asked_types(options.type, options.pure);
  if (weights_kind(model_dir, options.open) == WeightsKind::gguf) {
    if (transcode)
      throw Error(ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
                  "a GGUF file already: a transcode to GGUF reads a model folder",
                  detail::Location::parse(model_dir).display());
    return requantize_gguf(model_dir, out, options, asked);
  }
  const Model model = Model::open(model_dir, options.open);
  const detail::ModelLocation where(detail::Location::parse(model_dir), options.open);
  if (model.config_json().empty())  // read by Model::open
    throw Error(ErrorCode::format, Rule::model, "config.json", std::nullopt,
                "a GGUF export needs config.json (the architecture and its hyperparameters)",
                where.name());
  const detail::HfConfig c =
      detail::parse_hf_config(model.config_json(), where.name_of("config.json"));
  const detail::GgufArch& arch = detail::gguf_arch_for(c.hf_class);

  // The plan: every tensor's GGUF name, type and dimensions, in file order.
  GgufExportReport report;
  report.architecture = std::string(arch.name);
  ExportPlan planned = plan_export(model, arch, c);
  std::vector<PlannedTensor>& plan = planned.tensors;
  if (std::none_of(plan.begin(), plan.end(),
                   [](const PlannedTensor& p) { return p.decl.name == "token_embd.weight"; }))
    throw Error(ErrorCode::format, Rule::model, "model.embed_tokens.weight", std::nullopt,
                "the model has no model.embed_tokens.weight: llama.cpp needs the token embeddings",
                model.name());
  choose_types(plan, asked, arch, c, report);
  if (transcode) plan_ggml_carries(plan, model.files(), *transcode, where.name());
  std::map<std::string, size_t> counts;
  for (const PlannedTensor& p : plan) ++counts[std::string(ggml_type(p.decl.type)->name)];
  for (const auto& [type, n] : counts) report.type_counts.emplace_back(type, n);

  std::vector<GgufKeyValue> metadata = {
      {"general.architecture", detail::gguf_string(std::string(arch.name))},
      {"general.type", detail::gguf_string("model")},
      {"general.name", detail::gguf_string(folder_name(model_dir))},
      {"general.file_type", detail::gguf_u32(file_type_written(asked, plan))},
  };
  // Written whatever the types, as llama.cpp's converter writes it.
  metadata.push_back(
      {"general.quantization_version", detail::gguf_u32(detail::kQuantizationVersion)});
  for (GgufKeyValue& kv : detail::gguf_hyperparameters(arch, c)) metadata.push_back(std::move(kv));
  for (GgufKeyValue& kv : tokenizer_keys(where, c)) metadata.push_back(std::move(kv));

  // The files: one, or llama.cpp's splits of at most split_max_size tensor bytes each.
  const std::vector<size_t> split_of = plan_splits(plan, options.split_max_size);
  const size_t splits = split_of.empty() ? 1 : split_of.back() + 1;
  std::vector<std::unique_ptr<detail::GgufWriter>> writers;
  uint64_t total = 0;
  for (size_t s = 0; s < splits; ++s) {
    std::vector<detail::GgufTensorDecl> decls;
    for (size_t i = 0; i < plan.size(); ++i)
      if (split_of[i] == s) decls.push_back(plan[i].decl);
    std::vector<GgufKeyValue> keys = s == 0 ? metadata : std::vector<GgufKeyValue>{};
    if (splits > 1) {  // llama.cpp's split keys, in every file
      keys.push_back({"split.no", detail::gguf_u16(static_cast<uint16_t>(s))});
      keys.push_back({"split.count", detail::gguf_u16(static_cast<uint16_t>(splits))});
      keys.push_back({"split.tensors.count", detail::gguf_i32(static_cast<int32_t>(plan.size()))});
    }
    const std::string name = splits > 1 ? gguf_split_name(out, s, splits) : out;
    writers.push_back(std::make_unique<detail::GgufWriter>(detail::Location::parse(name), keys,
                                                           std::move(decls)));
    report.files.push_back(name);
  }
  for (const PlannedTensor& p : plan)
    if (!p.parts.empty())
      total +=
          std::accumulate(p.decl.ne.begin(), p.decl.ne.end(), uint64_t{1}, std::multiplies<>());

  // The pass: each tensor in pieces of rows, read, converted, permuted, encoded, appended.
  PiecePass pass{
      detail::thread_count(detail::configured_threads()), model.files(), {}, {}, carried};
  if (carried)  // what a transcode writes as floats (a stack is one tensor, an item per expert)
    carried->plain =
        static_cast<size_t>(std::count_if(plan.begin(), plan.end(), [](const PlannedTensor& p) {
          return !p.carry && !p.copy_mxfp4;
        }));
  uint64_t done = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    report.bytes_in +=
        detail::write_tensor(plan[i], *writers[split_of[i]], pass, [&](uint64_t values) {
          done += values;
          if (options.progress) options.progress(done, total);
        });
    ++report.tensors;
  }
  detail::OutputSet set;  // the splits published together
  for (const auto& w : writers) {
    w->commit_into(set);
    report.bytes_out += w->size();
  }
  set.commit();
  return report;
}

}  // namespace detail

}  // namespace tlio
