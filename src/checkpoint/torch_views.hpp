// checkpoint/torch_views.hpp: the plan of a checkpoint's tensors (names, dtypes, shapes, aliases),
// each view checked against its storage, and the gather of a strided view.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/torch_container.hpp"
#include "checkpoint/torch_resolver.hpp"
#include "tlio/checkpoint.hpp"
#include "tlio/dtype.hpp"

namespace tlio::detail {

struct TensorPlan {
  std::string name;
  size_t tensor;
  Dtype dtype;
  std::vector<uint64_t> shape;
  bool contiguous = true;
  std::string alias_of;
};

// The tensors to write (under options.key, else a top-level "state_dict" when there is one),
// each view checked against its storage's record; fills `contents`. An unsupported tensor
// throws, or with options.skip_unsupported is left out and listed.
std::vector<TensorPlan> plan_tensors(Checkpoint& c, const ImportOptions& options,
                                     CheckpointContents& contents);

// Copies elements [first, first + count) of the row-major order of view `t` into `out`,
// reversing the bytes of each `swap_unit`-byte part of an element when swap_unit is not 0 (a
// big-endian checkpoint: the element size, or half of it for a complex value).
void gather_view(std::span<const std::byte> storage, const TensorRecord& t, unsigned element,
                 unsigned swap_unit, uint64_t first, uint64_t count, std::byte* out);

}  // namespace tlio::detail
