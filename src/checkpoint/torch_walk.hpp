// checkpoint/torch_walk.hpp: naming the tensors of a checkpoint by walking its object (dict keys
// and list indices joined with ".").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/pickle.hpp"
#include "tlio/checkpoint.hpp"

namespace tlio::detail {

struct NamedTensor {
  std::string name;
  size_t tensor;
};

struct NamedTensors {
  std::vector<NamedTensor> tensors;
  uint64_t dropped = 0;
  std::vector<DroppedValue> dropped_values;  // the first kMaxDroppedListed
};

// A dict key as a name part: text, or an integer's digits; nullopt for anything else.
std::optional<std::string> key_text(const Pickle& p, ValueId k);

// The value at `key` (a.b.c: dict keys, list indices) under `root`.
ValueId descend(const Pickle& p, ValueId root, const std::string& key);

// The tensors under `root`, named by their path, in the order the walk meets them.
NamedTensors walk_names(const Pickle& p, ValueId root);

}  // namespace tlio::detail
