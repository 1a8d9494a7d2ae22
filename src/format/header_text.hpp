// format/header_text.hpp: the canonical layout and header text (writer rules 1-4): what the
// Writer writes, what File::is_canonical compares with, and the order shard, slice and edit
// plan their outputs in.
#pragma once

#include <string>
#include <vector>

#include "tlio/header.hpp"

namespace tlio::detail {

/// Sorts tensors into canonical write order (dtype rank, then name bytes) and assigns
/// contiguous data offsets. Throws Error{invalid_argument} on size overflow.
void canonical_layout(std::vector<TensorInfo>& tensors);

/// The canonical header text (writer rules 1-4, padding included) for `tensors` laid out in the
/// order given, with their begin/end as given. Metadata is omitted when empty.
std::string canonical_header(const Metadata& metadata, const std::vector<TensorInfo>& tensors);

}  // namespace tlio::detail
