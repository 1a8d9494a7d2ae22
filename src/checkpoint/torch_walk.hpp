// checkpoint/torch_walk.hpp: naming the tensors of a checkpoint by walking its object (dict keys
// and list indices joined with ".").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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

// Which of a checkpoint's top-level keys is the model's part: "state_dict" on its own, or a
// model key ("model", "module", ...) beside training state ("optimizer", "lr_scheduler", ...),
// as Lightning, the transformers Trainer and most training loops save; `holds_dict(i)` says
// whether keys[i] holds a dict. nullopt: the whole object is the model's.
std::optional<size_t> model_part(const std::vector<std::string>& keys,
                                 const std::function<bool(size_t)>& holds_dict);

// The tensors under `root`, named by their path, in the order the walk meets them.
NamedTensors walk_names(const Pickle& p, ValueId root);

}  // namespace tlio::detail
