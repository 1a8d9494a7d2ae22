// quant/tensor_selection.hpp: which tensors of a file a rewrite keeps and under which names
// (TensorSelection: keep, drop, rename), shared by edit_file and convert_file. It lives in quant
// because a quantized weight's stored tensors must stay together, and only the scheme registry
// knows which they are.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tlio/edit.hpp"
#include "tlio/file.hpp"

namespace tlio::detail {

struct SelectedTensor {
  const TensorInfo* source;  ///< the source's entry
  std::string name;          ///< the name it gets
};

struct SelectionPlan {
  std::vector<SelectedTensor> tensors;  ///< in the source's file order
  size_t dropped = 0;
  size_t renamed = 0;
};

/// Applies `selection` to the tensors of `src` (see TensorSelection). Throws
/// Error{invalid_argument} for a bad regex or replacement, for two tensors given one name
/// (naming both sources and the name), and, unless `allow_empty` (a shard of a folder, whose
/// caller checks the whole), when no tensor of a file that has some is kept.
SelectionPlan plan_selection(const File& src, const TensorSelection& selection, bool allow_empty = false);

}  // namespace tlio::detail
