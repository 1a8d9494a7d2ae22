// quant/hub/hub_config.hpp: what a model's quantization_config says, as the Hub's formats read
// it (config.json's member, or quantize_config.json of older GPTQ folders), and the formats tlio
// recognises but does not decode, refused by name; and the small helpers the hub units share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "quant/tensor_set.hpp"
#include "tlio/quant.hpp"

namespace tlio::detail {

struct HubQuantConfig {
  std::string method;  ///< quant_method ("fp8", "gptq", "awq", ...), "" without a config
  /// weight_block_size (fp8), or compressed-tensors' config_groups[*].weights.block_structure
  std::optional<uint64_t> block_rows, block_cols;
  /// bits, w_bit, wbits; compressed-tensors: the first config group's weights.num_bits
  std::optional<uint64_t> bits;
  /// group_size, q_group_size (-1: one group); compressed-tensors: weights.group_size
  std::optional<int64_t> group_size;
  std::optional<bool> sym;
  std::string checkpoint_format;  ///< GPTQ's checkpoint_format (or format): "gptq", "gptq_v2", ...
  std::string version;            ///< AWQ's version: "gemm", "gemv", ...
  std::string ct_format;          ///< compressed-tensors' format
  std::string ct_sparsity;        ///< compressed-tensors' sparsity_config.format
  std::string quant_algo;         ///< ModelOpt's quant_algo ("NVFP4", "FP8", ...)
  /// compressed-tensors' config_groups: with one, its group_size is every weight's
  size_t ct_config_groups = 0;
};

/// True when the config's version or GPTQModel's "format" names AWQ's `layout` ("gemm", "gemv"),
/// in any case.
bool awq_layout_is(const HubQuantConfig& config, std::string_view layout);

/// The set's quantization_config; an empty one when it has none. Error{format, "quant"} for
/// JSON that is not an object or options of the wrong type.
HubQuantConfig hub_quant_config(const TensorSet& set);

/// Throws Error{unsupported, "quant"} naming the format when the set is quantized in a form tlio
/// recognises but does not decode (by its config or by its tensors' names): its values are
/// never read as if they were plain.
void refuse_undecoded_formats(const TensorSet& set, const HubQuantConfig& config);

/// Throws Error{unsupported, "quant"} naming `tensor`: a form tlio recognises and does not decode.
[[noreturn]] void refuse_undecoded(std::string tensor, std::string detail);

/// Throws Error{format, "quant"} naming `tensor`: a Hub format's tensors that do not fit.
[[noreturn]] void malformed(const std::string& tensor, std::string detail);

/// Adds `t` (when there is one) to the stored tensors of `w`, with its bytes.
inline void add_stored(QuantizedWeight& w, const TensorInfo* t) {
  if (!t) return;
  w.stored.push_back(t->name);
  w.stored_bytes += t->byte_size();
}

/// "[576, 7168]", as the Hub formats' messages show shapes.
std::string shape_text(const Shape& shape);

/// a / b rounded up (b > 0), without the overflow of (a + b - 1) / b.
inline uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/// `name` without `suffix` when it ends with it.
inline std::optional<std::string_view> strip_suffix(std::string_view name,
                                                    std::string_view suffix) {
  if (!name.ends_with(suffix)) return std::nullopt;
  return name.substr(0, name.size() - suffix.size());
}

}  // namespace tlio::detail
