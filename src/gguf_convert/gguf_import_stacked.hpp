// gguf_convert/gguf_import_stacked.hpp: experts a Hugging Face layer holds stacked (gpt-oss's,
// GgufStackedPart) put back together from llama.cpp's tensors on import: gate and up interleaved
// again into one tensor, weights transposed back to [experts, in, out]; MXFP4 experts as OpenAI's
// `_blocks` and `_scales`, repacked without a value changing.
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

/// One Hugging Face tensor of stacked experts and the GGUF tensors it is made of, one per part
/// (sources[k] is the part whose `first` is k).
struct StackedImport {
  std::string name;  ///< "model.layers.N.mlp.experts.gate_up_proj"
  const GgufStackedPart* part;
  std::vector<const GgufTensorInfo*> sources;
  /// Written as OpenAI's MXFP4 `name_blocks` and `name_scales` (every source MXFP4).
  bool mxfp4 = false;
};

/// The stacked tensors of layer parts `parts` found in `src` for a model of `c`: each checked
/// (every part there, of the shape of the others, [in, out, experts] or [out, experts]); the
/// GGUF tensors taken are added to `taken`. Error{format, "gguf"} naming what is missing or
/// misshapen.
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
