// gguf_convert/gguf_import_stacked.hpp: Hugging Face tensors made of several GGUF tensors on
// import: gpt-oss's experts held stacked (gate and up interleaved again into one tensor, weights
// transposed back to [experts, in, out]; MXFP4 experts as OpenAI's `_blocks` and `_scales`,
// repacked without a value changing) and DeepSeek's kv_b_proj (attn_k_b and attn_v_b merged
// back per head).
#pragma once

#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "gguf_convert/gguf_arch.hpp"
#include "tlio/gguf.hpp"
#include "tlio/gguf_convert.hpp"
#include "tlio/writer.hpp"

namespace tlio::detail {

/// One Hugging Face tensor and the GGUF tensors it is made of: a stacked expert tensor's parts
/// (sources[k] the part whose `first` is k), or kv_b_proj's attn_k_b and attn_v_b.
struct StackedImport {
  std::string name;  ///< "model.layers.N.mlp.experts.gate_up_proj"
  const GgufStackedPart* part;
  std::vector<const GgufTensorInfo*> sources;
  /// Written as OpenAI's MXFP4 `name_blocks` and `name_scales` (every source MXFP4).
  bool mxfp4 = false;
};

/// The tensors of `arch`'s stacked experts and split parts found in `src` for a model of `c`:
/// each checked (every part there, floating or a block type, of the shape of the others,
/// [in, out, experts] or [out, experts]; k_b and v_b of the MLA keys' shapes); the GGUF tensors
/// taken are added to `taken`. Every expert weight MXFP4, or none taken as MXFP4 (decoded).
/// Error{format, "gguf"} naming what is missing or misshapen.
std::vector<StackedImport> plan_stacked_imports(const GgufFile& src, const GgufArch& arch,
                                                const HfConfig& c,
                                                std::vector<const GgufTensorInfo*>& taken);

/// The tensors (name, dtype, shape) `s` is written as: one, or MXFP4's blocks and scales.
std::vector<std::tuple<std::string, Dtype, Shape>> stacked_import_tensors(const StackedImport& s,
                                                                          Dtype floats);

/// Writes `s` into `w` (declared as stacked_import_tensors says) in pieces; counts it in
/// `report` and calls `written` with the elements of each piece.
void write_stacked_import(const GgufFile& src, const StackedImport& s, Dtype floats, Writer& w,
                          GgufImportReport& report, const std::function<void(uint64_t)>& written);

}  // namespace tlio::detail
