// gguf_convert/gguf_requantize.cpp: GGUF to GGUF in other types, as llama_model_quantize does it
// (src/llama-quant.cpp): which tensors it quantizes, the type the mix gives each, the row
// fallback, the tensors in its order (the model loader's map: by layer, then name), the metadata
// copied and the two keys it sets moved last. Values pass through F32 as in llama.cpp: decoded
// bit for bit as ggml decodes them, encoded by ggml's reference quantizers.
#include "gguf_convert/gguf_requantize.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
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

// The rows encoded at once: a few MiB of F32, split over the cores.
constexpr uint64_t kChunkValues = uint64_t{1} << 21;

// What llama-quantize quantizes: a weight of 2 dimensions or more that is not a norm or a
// mixture of experts' router (the architectures tlio knows have no other exceptions).
bool quantizes(const GgufTensorInfo& t) {
  const std::string_view n = t.name;
  return n.ends_with("weight") && t.ne.size() >= 2 && !n.ends_with("_norm.weight") &&
         n.find("ffn_gate_inp") == std::string_view::npos;
}

// The layer of "blk.N.*", -1 for the others: llama.cpp's model loader orders tensors by it,
// then by name.
int layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  int layer = -1;
  const auto [end, ec] = std::from_chars(name.data() + 4, name.data() + name.size(), layer);
  return ec == std::errc{} && end != name.data() + name.size() && *end == '.' ? layer : -1;
}

bool is_plain(uint32_t type) {
  return type == ggml_id(GgmlTypeId::F32) || type == ggml_id(GgmlTypeId::F16) ||
         type == ggml_id(GgmlTypeId::BF16);
}

// The tensor's values decoded to F32 and encoded as `type`, a chunk of whole rows at a time.
void requantize_tensor(const GgufFile& f, const GgufTensorInfo& t, uint32_t type, GgufWriter& w) {
  const uint64_t row = t.ne[0], rows = t.element_count() / row;
  const GgmlType out = *ggml_type(type);
  const uint64_t row_bytes = row / out.block * out.block_bytes;
  const uint64_t per_chunk = std::max<uint64_t>(1, kChunkValues / row);
  std::vector<float> values;
  std::vector<std::byte> encoded;
  for (uint64_t r = 0; r < rows; r += per_chunk) {
    const uint64_t n = std::min(per_chunk, rows - r);
    values.resize(n * row);
    encoded.resize(n * row_bytes);
    f.read_values(t, r * row, n * row, Dtype::F32, std::as_writable_bytes(std::span(values)));
    parallel_for(n, 2, 1, thread_count(configured_threads()), [&](uint64_t a, uint64_t b) {
      for (uint64_t i = a; i < b; ++i)
        ggml_encode(type, std::span(values).subspan(i * row, row),
                    std::span(encoded).subspan(i * row_bytes, row_bytes));
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
// removed from where it was and added at the end; a split set's keys dropped.
std::vector<GgufKeyValue> requantized_metadata(const GgufFile& f, uint32_t file_type) {
  std::vector<GgufKeyValue> kv;
  for (const GgufKeyValue& e : f.metadata())
    if (e.key != "general.quantization_version" && e.key != "general.file_type" &&
        !e.key.starts_with("split."))
      kv.push_back(e);
  kv.push_back({"general.quantization_version", gguf_u32(kQuantizationVersion)});
  kv.push_back({"general.file_type", gguf_u32(file_type)});
  return kv;
}

}  // namespace

GgufExportReport requantize_gguf(const std::string& src, const std::string& out,
                                 const GgufExportOptions& options, const AskedTypes& asked) {
  if (options.split_max_size)
    throw_invalid("a GGUF requantized is written as one file (split_max_size is an export's)");
  const GgufFile f = GgufFile::open(src, options.open);
  const GgufArch& arch = gguf_arch_of(f);  // an architecture tlio does not know is refused
  const HfConfig config = hf_config_of(arch, f);
  MixModel model{config.layers, 0, true, arch.is_70b(config)};
  std::vector<const GgufTensorInfo*> order;
  for (const GgufTensorInfo& t : f.tensors()) {
    order.push_back(&t);
    model.value_layers += t.name.find("attn_v.weight") != std::string::npos;
    model.tied &= t.name != "output.weight";
  }
  std::sort(order.begin(), order.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) {
    const int la = layer_of(a->name), lb = layer_of(b->name);
    return la != lb ? la < lb : a->name < b->name;
  });

  GgufExportReport report;
  report.architecture = std::string(arch.name);
  std::vector<GgufTensorDecl> decls;
  std::vector<std::string> refused;
  std::map<std::string, size_t> counts;
  for (const GgufTensorInfo* t : order) {
    uint32_t type = t->type;
    if (quantizes(*t)) {
      const uint32_t want =
          asked.mix ? gguf_mix_type(*asked.mix, model, t->name, t->ne[0]) : asked.base.id;
      type = gguf_row_fallback(want, t->ne[0]);
      if (type != want)
        report.fallbacks.push_back(fmt::format("{}: {} -> {} (rows of {})", t->name,
                                               ggml_type(want)->name, ggml_type(type)->name,
                                               t->ne[0]));
      if (type != t->type && !is_plain(t->type) && !options.allow_requantize)
        refused.push_back(fmt::format("{} ({})", t->name, ggml_type(t->type)->name));
    }
    decls.push_back({t->name, type, t->ne});
    ++counts[std::string(ggml_type(type)->name)];
  }
  if (!refused.empty())
    throw Error(ErrorCode::invalid_argument, Rule::gguf, {}, std::nullopt,
                fmt::format("{} weight{} quantized already: requantizing loses quality twice "
                            "(allow_requantize, --allow-requantize, does it): {}; nothing was "
                            "written",
                            refused.size(), refused.size() == 1 ? " is" : "s are",
                            fmt::join(refused.begin(),
                                      refused.begin() + std::min<size_t>(refused.size(), 5), ", ")),
                f.name());

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
  for (const auto& [name, n] : counts) report.type_counts.emplace_back(name, n);
  report.bytes_in = f.size();
  report.bytes_out = w.size();
  report.files = {out};
  return report;
}

}  // namespace tlio::detail
