// quant/tensor_selection.hpp: which tensors of a file a rewrite keeps and under which names
// (TensorSelection: keep, drop, rename), shared by edit_file and convert_file. It lives in quant
// because a quantized weight's stored tensors must stay together, and only the scheme registry
// knows which they are.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "tlio/edit.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"

namespace tlio::detail {

struct SelectedTensor {
  const TensorInfo* source;  ///< the source's entry
  std::string name;          ///< the name it gets
};

struct SelectionPlan {
  std::vector<SelectedTensor> tensors;  ///< in the source's file order
  size_t dropped = 0;
  size_t renamed = 0;
  /// The source's metadata with its tie records ({alias: kept tensor}, as save_model and
  /// import write them for tied weights) following the selection: an alias is renamed by the
  /// rename rules and points to its tensor's new name; a record whose tensor or alias is left
  /// out is removed (counted in ties_removed); a tensor left out whose alias is kept is written
  /// under the alias (ties_repointed; its record goes). Other entries are as they were.
  Metadata metadata;
  size_t ties_removed = 0, ties_repointed = 0;
  /// Each quantized weight the selection keeps: its logical name -> the name it gets (renamed
  /// as its stored tensors are), for rewrites that write it dequantized.
  std::map<std::string, std::string, std::less<>> weight_names;
};

/// Applies `selection` to the tensors of `src` (see TensorSelection). Throws
/// Error{invalid_argument} for a bad regex or replacement, for two tensors given one name
/// (naming both sources and the name), and, unless `allow_empty` (a shard of a folder, whose
/// caller checks the whole), when no tensor of a file that has some is kept. `weights`: the
/// quantized weights of the whole model `src` is a shard of (their parts may be in other
/// shards); nullptr: `src`'s own.
SelectionPlan plan_selection(const File& src, const TensorSelection& selection,
                             bool allow_empty = false,
                             const std::vector<QuantizedWeight>* weights = nullptr);

/// quantize's default selection: the weight of every linear layer, whatever the model calls it
/// (`q_proj`, GPT-2's `c_attn`, NeoX's `query_key_value`, Mixtral's `w1`, Phi's `fc1`, an
/// `nn.Sequential`'s `0.weight`): a 2-D tensor whose name ends in "weight", as transformers
/// replaces every nn.Linear (and Conv1D) with a quantized one, except an embedding (a name
/// part holding "embed", GPT-2's `wte`/`wpe`, T5's `shared`) and the output head (`lm_head`,
/// a top-level `output`, a classifier's `score` or `classifier`), which transformers keeps.
bool is_linear_weight(const TensorInfo& t);

}  // namespace tlio::detail
