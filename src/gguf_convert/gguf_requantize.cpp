// gguf_convert/gguf_requantize.cpp: GGUF to GGUF in other types, as llama_model_quantize does it
// (src/llama-quant.cpp): which tensors it quantizes, the type the mix gives each, the row
// fallback, the tensors in its order (the model loader's map: by layer, then name), the metadata
// copied and the two keys it sets moved last. Values pass through F32 as in llama.cpp: decoded
// bit for bit as ggml decodes them, encoded by ggml's reference quantizers.
#include "gguf_convert/gguf_requantize.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "common/parallel.hpp"
#include "gguf/gguf_writer.hpp"
#include "gguf_convert/gguf_arch.hpp"
#include "gguf_convert/gguf_to_hf.hpp"
#include "io/location.hpp"
#include "tlio/error.hpp"
#include "tlio/ggml.hpp"
#include "tlio/gguf.hpp"

namespace tlio::detail {
namespace {

// The values decoded and encoded at once (a multiple of the target's block), over the cores.
constexpr uint64_t kChunkValues = uint64_t{1} << 21;

// Dimensions as ggml_n_dims counts them: trailing sizes of 1 do not count.
size_t n_dims(const GgufTensorInfo& t) {
  size_t n = t.ne.size();
  while (n > 1 && t.ne[n - 1] == 1) --n;
  return n;
}

// What llama-quantize quantizes: a weight of 2 dimensions or more that is not a norm or a
// mixture of experts' router (the architectures tlio knows have no other exceptions).
bool quantizes(const GgufTensorInfo& t) {
  const std::string_view n = t.name;
  return n.ends_with("weight") && n_dims(t) >= 2 && t.element_count() != 0 &&
         !n.ends_with("_norm.weight") && n.find("ffn_gate_inp") == std::string_view::npos;
}

bool is_plain(uint32_t type) {
  return type == ggml_id(GgmlTypeId::F32) || type == ggml_id(GgmlTypeId::F16) ||
         type == ggml_id(GgmlTypeId::BF16);
}

// A source type whose values a requantize can take: floating, or a block type ggml decodes.
bool has_float_values(uint32_t type) {
  return is_plain(type) || (!ggml_plain_dtype(type) && ggml_decodes(type));
}

// The tensor's values decoded to F32 and encoded as `type`, a chunk of whole blocks at a time.
void requantize_tensor(const GgufFile& f, const GgufTensorInfo& t, uint32_t type, GgufWriter& w) {
  const GgmlType out = *ggml_type(type);
  const uint64_t total = t.element_count();
  const uint64_t chunk = std::max<uint64_t>(1, kChunkValues / out.block) * out.block;
  std::vector<float> values;
  std::vector<std::byte> encoded;
  for (uint64_t first = 0; first < total; first += chunk) {
    const uint64_t n = std::min(chunk, total - first), blocks = n / out.block;
    values.resize(n);
    encoded.resize(blocks * out.block_bytes);
    f.read_values(t, first, n, Dtype::F32, std::as_writable_bytes(std::span(values)));
    parallel_for(blocks, 64, 1, thread_count(configured_threads()), [&](uint64_t a, uint64_t b) {
      ggml_encode(type, std::span(values).subspan(a * out.block, (b - a) * out.block),
                  std::span(encoded).subspan(a * out.block_bytes, (b - a) * out.block_bytes));
    });
    w.append(encoded);
  }
}

void copy_tensor(const GgufFile& f, const GgufTensorInfo& t, GgufWriter& w) {
  std::vector<std::byte> buf(std::min<uint64_t>(t.bytes, uint64_t{8} << 20));
  for (uint64_t at = 0; at < t.bytes; at += buf.size()) {
    const auto piece = std::span(buf).first(std::min<uint64_t>(buf.size(), t.bytes - at));
    f.read(t, at, piece);
    w.append(piece);
  }
}

// The metadata as llama-quantize writes it: the source's keys, then the two it sets, each
// removed from where it was and added at the end; a split set's three keys dropped.
std::vector<GgufKeyValue> requantized_metadata(const GgufFile& f, uint32_t file_type) {
  std::vector<GgufKeyValue> kv;
  for (const GgufKeyValue& e : f.metadata())
    if (e.key != "general.quantization_version" && e.key != "general.file_type" &&
        e.key != "split.no" && e.key != "split.count" && e.key != "split.tensors.count")
      kv.push_back(e);
  kv.push_back({"general.quantization_version", gguf_u32(kQuantizationVersion)});
  kv.push_back({"general.file_type", gguf_u32(file_type)});
  return kv;
}

// The model the mix rules read: its architecture (one tlio's table knows), layers, experts,
// attn_v tensors, tied embeddings.
MixModel mix_model(const GgufFile& f, std::string& architecture) {
  const GgufArch* arch = nullptr;
  try {
    arch = &gguf_arch_of(f);
  } catch (const Error& e) {
    throw Error(ErrorCode::unsupported, Rule::gguf, {}, std::nullopt,
                fmt::format("requantizing follows llama.cpp's rules for the architectures tlio's "
                            "table knows: {}",
                            e.what()),
                f.name());
  }
  architecture = std::string(arch->name);
  MixModel model = mix_model_of(*arch, hf_config_of(*arch, f));
  for (const GgufTensorInfo& t : f.tensors()) model.count(t.name);
  return model;
}

// Every tensor in llama.cpp's order with the type it gets; nothing written yet, so a refusal
// leaves nothing behind.
std::vector<GgufTensorDecl> plan(const GgufFile& f, const std::vector<const GgufTensorInfo*>& order,
                                 const AskedTypes& asked, const GgufExportOptions& options,
                                 GgufExportReport& report) {
  const MixModel model = mix_model(f, report.architecture);
  std::vector<GgufTensorDecl> decls;
  std::vector<std::string> refused;
  std::map<std::string, size_t> counts;
  for (const GgufTensorInfo* t : order) {
    uint32_t type = t->type;
    if (quantizes(*t)) {
      type = gguf_weight_type(asked, model, t->name, t->ne[0], report.fallbacks);
      if (type != t->type && !has_float_values(t->type))
        throw Error(ErrorCode::unsupported, Rule::gguf, t->name, std::nullopt,
                    fmt::format("weight {} is {}, which has no float values to requantize; "
                                "nothing was written",
                                t->name, ggml_type(t->type)->name),
                    f.name());
      if (type != t->type && !is_plain(t->type) && !options.allow_requantize)
        refused.push_back(fmt::format("{} ({})", t->name, ggml_type(t->type)->name));
    }
    decls.push_back({t->name, type, t->ne});
    ++counts[std::string(ggml_type(type)->name)];
  }
  if (!refused.empty())
    throw Error(ErrorCode::invalid_argument, Rule::gguf, {}, std::nullopt,
                fmt::format("{} weight{} quantized already: writing {} again loses quality twice "
                            "(allow_requantize, --allow-requantize, does it): {}; nothing was "
                            "written",
                            refused.size(), refused.size() == 1 ? " is" : "s are",
                            refused.size() == 1 ? "it" : "them",
                            fmt::join(refused.begin(),
                                      refused.begin() + std::min<size_t>(refused.size(), 5), ", ")),
                f.name());
  for (const auto& [name, n] : counts) report.type_counts.emplace_back(name, n);
  return decls;
}

}  // namespace

GgufExportReport requantize_gguf(const std::string& src, const std::string& out,
                                 const GgufExportOptions& options, const AskedTypes& asked) {
  if (options.split_max_size)
    throw_invalid("a GGUF requantized is written as one file (split_max_size is an export's)");
  const GgufFile f = GgufFile::open(src, options.open);
  std::vector<const GgufTensorInfo*> order;
  for (const GgufTensorInfo& t : f.tensors()) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) {
    const int64_t la = gguf_layer_of(a->name).value_or(-1),
                  lb = gguf_layer_of(b->name).value_or(-1);
    return la != lb ? la < lb : a->name < b->name;
  });
  GgufExportReport report;
  const std::vector<GgufTensorDecl> decls = plan(f, order, asked, options, report);

  GgufWriter w(Location::parse(out), requantized_metadata(f, asked.file_type), decls,
               f.alignment());
  uint64_t done = 0, total = 0;
  for (const GgufTensorInfo* t : order) total += t->bytes;
  for (size_t i = 0; i < order.size(); ++i) {
    const GgufTensorInfo& t = *order[i];
    if (decls[i].type == t.type)
      copy_tensor(f, t, w);
    else
      requantize_tensor(f, t, decls[i].type, w);
    done += t.bytes;
    if (options.progress) options.progress(done, total);
  }
  w.commit();
  report.tensors = order.size();
  report.bytes_in = f.size();
  report.bytes_out = w.size();
  report.files = {out};
  return report;
}

}  // namespace tlio::detail
