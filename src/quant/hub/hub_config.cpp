// quant/hub/hub_config.cpp: see hub_config.hpp.
#include "quant/hub/hub_config.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include "common/json_doc.hpp"
#include "common/json_text.hpp"
#include "common/text.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace dom = simdjson::dom;

namespace {

constexpr const char* kSource = "quantization_config";

std::optional<int64_t> optional_int(const JsonDoc& doc, const char* key) {
  dom::element v;
  if (doc.root()[key].get(v) != simdjson::SUCCESS || v.is_null()) return std::nullopt;
  int64_t i = 0;
  if (v.get_int64().get(i)) doc.fail(key, fmt::format("{} is not an integer", key));
  return i;
}

std::optional<uint64_t> positive(const JsonDoc& doc, const char* key) {
  const std::optional<int64_t> v = optional_int(doc, key);
  if (v && *v <= 0) doc.fail(key, fmt::format("{} is {}; it must be positive", key, *v));
  return v ? std::optional<uint64_t>(static_cast<uint64_t>(*v)) : std::nullopt;
}

std::string string_or_empty(const JsonDoc& doc, const char* key) {
  return doc.optional_string(key).value_or("");
}

[[noreturn]] void refuse(std::string_view what, std::string_view why, std::string tensor = {}) {
  refuse_undecoded(
      std::move(tensor),
      fmt::format("quantized as {} ({}), which tlio does not decode; its stored values "
                  "are not weights and are not read as such",
                  what, why));
}

// What the config's method names, when it is a form tlio does not decode.
std::optional<std::string> undecoded_method(const HubQuantConfig& c) {
  const std::string& m = c.method;
  if (m == "hqq") return "HQQ";
  if (m == "torchao") return "torchao";
  if (m == "exl2" || m == "exl3") return "ExLlama " + m.substr(3);  // "exl2" -> "ExLlama 2"
  if (m == "quark") return "AMD Quark";
  if (m == "modelopt" && !c.quant_algo.empty() && c.quant_algo != "NVFP4" &&
      c.quant_algo != "FP8" && c.quant_algo != "MIXED_PRECISION")
    return "NVIDIA ModelOpt " + c.quant_algo;
  if (m == "aqlm" || m == "vptq" || m == "eetq" || m == "higgs" || m == "spqr" || m == "fp_quant" ||
      m == "bitnet" || m == "quanto")
    return m;
  if (m == "compressed-tensors") {
    for (const std::string& f : {c.ct_format, c.ct_sparsity})
      if (f == "sparse-bitmask" || f == "sparse-24-bitmask" || f == "marlin-24")
        return "compressed-tensors " + f;
    if (c.ct_format.empty()) return "compressed-tensors (no format)";
  }
  if (m == "gptq" && (c.checkpoint_format == "marlin" || c.checkpoint_format == "gptq_p"))
    return "GPTQ " + c.checkpoint_format;
  for (const std::string& layout : {c.version, c.checkpoint_format})  // GPTQModel writes "format"
    if (const std::string l = ascii_lower(layout);
        m == "awq" && !l.empty() && l != "gemm" && l != "gemv")
      return "AWQ " + layout;
  return std::nullopt;
}

// Reads [rows, cols] of a block size array into c; false when `v` is not two positive integers.
bool read_block(dom::element v, HubQuantConfig& c) {
  dom::array a;
  uint64_t r = 0, k = 0;
  if (v.get_array().get(a) || a.size() != 2 || a.at(0).get_uint64().get(r) ||
      a.at(1).get_uint64().get(k) || r == 0 || k == 0)
    return false;
  c.block_rows = r;
  c.block_cols = k;
  return true;
}

}  // namespace

bool awq_layout_is(const HubQuantConfig& config, std::string_view layout) {
  return ascii_lower(config.version) == layout || ascii_lower(config.checkpoint_format) == layout;
}

void malformed(const std::string& tensor, std::string detail) {
  throw_format(Rule::quant, tensor, std::move(detail));
}

void refuse_undecoded(std::string tensor, std::string detail) {
  throw Error(ErrorCode::unsupported, Rule::quant, std::move(tensor), std::nullopt,
              std::move(detail));
}

std::string shape_text(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

HubQuantConfig hub_quant_config(const TensorSet& set) {
  HubQuantConfig c;
  // A folder's config.json, else what a lone file tlio quantized records in its metadata.
  std::string_view text = set.quantization_config();
  if (text.empty())
    if (auto own = set.metadata().find("quantization_config"); own != set.metadata().end())
      text = own->second;
  if (text.empty()) return c;
  const JsonDoc doc(text, kSource, Rule::quant);
  c.method = string_or_empty(doc, "quant_method");
  c.checkpoint_format = string_or_empty(doc, "checkpoint_format");
  if (c.method == "compressed-tensors")
    c.ct_format = string_or_empty(doc, "format");
  else if (c.checkpoint_format.empty())
    c.checkpoint_format = string_or_empty(doc, "format");
  c.version = string_or_empty(doc, "version");
  c.quant_algo = string_or_empty(doc, "quant_algo");
  dom::element sparsity;
  if (doc.root()["sparsity_config"]["format"].get(sparsity) == simdjson::SUCCESS &&
      sparsity.is_string())
    c.ct_sparsity = std::string(sparsity.get_string().value_unsafe());
  // A form tlio does not decode is refused by name, whatever its other options look like, and
  // the options of other methods (bitsandbytes, FBGEMM, ...) are theirs.
  const std::string& m = c.method;
  if (undecoded_method(c) ||
      !(m.empty() || m == "fp8" || m == "gptq" || m == "awq" || m == "compressed-tensors" ||
        m == "auto-round" || m == "mxfp4" || m == "modelopt"))
    return c;
  dom::element block;
  if (doc.root()["weight_block_size"].get(block) == simdjson::SUCCESS && !block.is_null() &&
      !read_block(block, c))
    doc.fail("weight_block_size", "weight_block_size is not two positive integers");
  // compressed-tensors: the first group's weights (a mixed-precision model's other groups are
  // told apart by their tensors' shapes, which the decoders check against these).
  dom::object groups;
  if (doc.root()["config_groups"].get_object().get(groups) == simdjson::SUCCESS) {
    c.ct_config_groups = groups.size();
    for (auto [name, group] : groups) {
      dom::element weights, structure;
      if (group["weights"].get(weights) != simdjson::SUCCESS || !weights.is_object()) continue;
      if (weights["block_structure"].get(structure) == simdjson::SUCCESS && !structure.is_null() &&
          !read_block(structure, c))
        doc.fail("config_groups", fmt::format("config_groups.{}.weights.block_structure is not two "
                                              "positive integers",
                                              name));
      uint64_t bits = 0;
      int64_t group_size = 0;
      if (weights["num_bits"].get_uint64().get(bits) == simdjson::SUCCESS && bits > 0)
        c.bits = bits;
      if (weights["group_size"].get_int64().get(group_size) == simdjson::SUCCESS && group_size > 0)
        c.group_size = group_size;
      break;
    }
  }
  for (const char* key : {"bits", "w_bit", "wbits"})
    if (!c.bits) c.bits = positive(doc, key);
  for (const char* key : {"group_size", "q_group_size"})
    if (!c.group_size) {
      c.group_size = optional_int(doc, key);
      if (c.group_size && *c.group_size != -1 && *c.group_size <= 0)
        doc.fail(key, fmt::format("{} is {}; a group is -1 (one group) or a positive size", key,
                                  *c.group_size));
    }
  c.sym = doc.optional_bool("sym");
  return c;
}

void refuse_undecoded_formats(const TensorSet& set, const HubQuantConfig& config) {
  if (auto what = undecoded_method(config))
    refuse(*what, fmt::format("quant_method {}", quote_name(config.method)));
  for (const TensorInfo* t : set.tensors()) {
    const std::string_view n = t->name;
    for (const char* part : {".bitmask", ".row_offsets"})
      if (strip_suffix(n, part)) refuse("compressed-tensors sparse", quote_name(n), t->name);
    for (const char* part : {".scale_packed", ".meta"})
      if (auto base = strip_suffix(n, part);
          base && set.find(std::string(*base) + ".weight_packed"))
        refuse("compressed-tensors marlin-24", quote_name(n), t->name);
    if (strip_suffix(n, ".trellis")) refuse("ExLlama 3", quote_name(n), t->name);
    if (strip_suffix(n, ".q_invperm") || strip_suffix(n, ".q_scale_max"))
      refuse("ExLlama 2", quote_name(n), t->name);
    if (strip_suffix(n, ".W_q") && t->dtype == Dtype::U8) refuse("HQQ", quote_name(n), t->name);
    // (<p>.weight with <p>.weight_scale is the FP8 scheme's: decoded)
    if (t->dtype == Dtype::F8_E4M3 && !n.ends_with(".weight") &&
        set.find(std::string(n) + "_scale"))
      refuse("FBGEMM FP8 experts", fmt::format("{} with its _scale", quote_name(n)), t->name);
    // ModelOpt's and AWQ-style smoothing: inputs scaled before the weight, which tlio would drop.
    if (auto base = strip_suffix(n, ".pre_quant_scale");
        base && set.find(std::string(*base) + ".weight"))
      refuse("AWQ-style pre-quantization scales", quote_name(n), t->name);
    if (auto base = strip_suffix(n, ".scale"); base && t->dtype == Dtype::F8_E8M0) {
      const TensorInfo* w = set.find(std::string(*base) + ".weight");
      if (w) refuse("DeepSeek-V4 FP8/FP4 with E8M0 scales", quote_name(n), t->name);
    }
  }
}

}  // namespace tlio::detail
