// checkpoint/torch_walk.cpp: the naming walk over a checkpoint's object, and --key's descent.
#include "checkpoint/torch_walk.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "checkpoint/pickle.hpp"
#include "common/json_text.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

/// How deep the walk goes into nested containers, and how many values it may visit.
constexpr size_t kMaxWalkDepth = 1000;
constexpr uint64_t kMaxWalkSteps = uint64_t{1} << 24;

}  // namespace

std::optional<std::string> key_text(const Pickle& p, ValueId k) {
  if (p[k].kind == PyKind::text) return p[k].text;
  if (p[k].kind == PyKind::integer) return std::to_string(p[k].integer);
  return std::nullopt;
}

std::optional<size_t> model_part(const std::vector<std::string>& keys,
                                 const std::function<bool(size_t)>& holds_dict) {
  static constexpr std::string_view kModelKeys[] = {"state_dict", "model", "model_state_dict",
                                                    "module", "net"};
  static constexpr std::string_view kTrainingKeys[] = {
      "optimizer", "optimizer_state_dict", "optimizers", "optimizer_states", "lr_scheduler",
      "scheduler", "lr_schedulers",        "scaler"};
  const auto index_of = [&](std::string_view name) -> std::optional<size_t> {
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == name) return i;
    return std::nullopt;
  };
  bool training = false;
  for (const std::string_view k : kTrainingKeys) training = training || index_of(k);
  for (const std::string_view k : kModelKeys) {
    const std::optional<size_t> i = index_of(k);
    // "state_dict" is taken on its own; the others only beside training state.
    if (i && holds_dict(*i) && (training || k == "state_dict")) return i;
  }
  return std::nullopt;
}

ValueId descend(const Pickle& p, ValueId root, const std::string& key) {
  ValueId v = root;
  size_t start = 0;
  while (start <= key.size()) {
    const size_t dot = std::min(key.find('.', start), key.size());
    const std::string part = key.substr(start, dot - start);
    const PyValue& c = p[v];
    ValueId next = kNoValue;
    const std::vector<ValueId>* pairs = c.kind == PyKind::dict ? &c.pairs
                                        : c.kind == PyKind::object && c.state != kNoValue
                                            ? &p[c.state].pairs
                                            : nullptr;
    if (pairs)
      for (size_t i = 0; i + 1 < pairs->size(); i += 2)
        if (key_text(p, (*pairs)[i]) == part) next = (*pairs)[i + 1];
    if (next == kNoValue && (c.kind == PyKind::list || c.kind == PyKind::tuple)) {
      char* stop = nullptr;
      const unsigned long long i = std::strtoull(part.c_str(), &stop, 10);
      if (!part.empty() && *stop == '\0' && i < c.items.size())
        next = c.items[static_cast<size_t>(i)];
    }
    if (next == kNoValue) {
      // Say what is there instead: the keys of this level (the first few), or its indices.
      const std::string where =
          start == 0 ? "the checkpoint's top level" : quote_name(key.substr(0, start - 1));
      std::string there;
      if (pairs) {
        constexpr size_t kShown = 20;
        std::vector<std::string> keys;
        for (size_t i = 0; i + 1 < pairs->size(); i += 2)
          if (keys.size() < kShown) {
            const std::optional<std::string> k = key_text(p, (*pairs)[i]);
            keys.push_back(k ? quote_name(*k) : std::string("(a key that is not text)"));
          }
        const size_t total = pairs->size() / 2;
        there =
            keys.empty()
                ? where + " is empty"
                : fmt::format("{} has {} key{}: {}{}", where, total, total == 1 ? "" : "s",
                              fmt::join(keys, ", "),
                              total > kShown ? fmt::format(", ... ({} more)", total - kShown) : "");
      } else if (c.kind == PyKind::list || c.kind == PyKind::tuple) {
        there = c.items.empty()
                    ? where + " is empty"
                    : fmt::format("{} is a list: indices 0..{}", where, c.items.size() - 1);
      } else {
        there = where + " holds no keys (not a dict, list or object)";
      }
      throw Error(ErrorCode::not_found, Rule::none, key, std::nullopt,
                  fmt::format("--key {}: no {} in the checkpoint; {}", quote_name(key),
                              quote_name(key.substr(0, dot)), there));
    }
    v = next;
    start = dot + 1;
  }
  return v;
}

NamedTensors walk_names(const Pickle& p, ValueId root) {
  NamedTensors out;
  struct Item {
    ValueId value;
    std::string path;
    size_t depth;
  };
  std::vector<Item> todo{{root, "", 0}};
  std::unordered_set<ValueId> seen;  // containers are walked once: no cycles, no blow-up
  uint64_t steps = 0;
  auto join = [](const std::string& path, const std::string& part) {
    return path.empty() ? part : path + "." + part;
  };
  auto drop = [&](const std::string& path, std::string_view kind) {
    ++out.dropped;
    if (out.dropped_values.size() < kMaxDroppedListed)
      out.dropped_values.push_back({path, std::string(kind)});
  };
  auto kind_of = [](const PyValue& v) -> std::string_view {
    switch (v.kind) {
      case PyKind::none:
        return "None";
      case PyKind::boolean:
        return "bool";
      case PyKind::integer:
      case PyKind::big_integer:
        return "int";
      case PyKind::floating:
        return "float";
      case PyKind::text:
        return "str";
      case PyKind::bytes:
        return "bytes";
      case PyKind::global:
        return "global";
      case PyKind::resolved:
        return "storage";
      default:
        return "object";
    }
  };
  while (!todo.empty()) {
    Item it = std::move(todo.back());
    todo.pop_back();
    if (++steps > kMaxWalkSteps)
      throw_format(Rule::checkpoint, {},
                   fmt::format("the object holds more than {} values", kMaxWalkSteps));
    const PyValue& v = p[it.value];
    if (v.kind == PyKind::resolved) {
      if (v.text == "tensor")
        out.tensors.push_back({it.path, static_cast<size_t>(v.integer)});
      else
        drop(it.path, "storage");  // a bare storage
      continue;
    }
    const bool container = v.kind == PyKind::dict || v.kind == PyKind::list ||
                           v.kind == PyKind::tuple || v.kind == PyKind::set ||
                           v.kind == PyKind::object;
    if (!container) {
      drop(it.path, kind_of(v));
      continue;
    }
    if (!seen.insert(it.value).second) continue;
    if (it.depth >= kMaxWalkDepth)
      throw_format(Rule::checkpoint, {},
                   fmt::format("the object nests deeper than {} levels", kMaxWalkDepth));
    // Children pushed in reverse so they are met in order.
    std::vector<Item> children;
    // `attributes`: an object's state. An nn.Module keeps its tensors in the dicts _parameters,
    // _buffers and _modules, which name nothing in state_dict ("0.weight", not
    // "_modules.0._parameters.weight"): a whole-module torch.save imports under those names.
    auto add_pairs = [&](const std::vector<ValueId>& pairs, const std::string& base,
                         bool attributes = false) {
      for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
        const std::optional<std::string> k = key_text(p, pairs[i]);
        if (!k) {
          drop(base, "key");
          continue;
        }
        const bool module_dict =
            attributes && (*k == "_parameters" || *k == "_buffers" || *k == "_modules");
        children.push_back({pairs[i + 1], module_dict ? base : join(base, *k), it.depth + 1});
      }
    };
    auto add_items = [&](const std::vector<ValueId>& items, const std::string& base) {
      for (size_t i = 0; i < items.size(); ++i)
        children.push_back({items[i], join(base, std::to_string(i)), it.depth + 1});
    };
    if (v.kind == PyKind::dict) {
      add_pairs(v.pairs, it.path);
    } else if (v.kind == PyKind::object) {
      // An inert object: its state (attributes), then what was set or appended into it, then
      // the arguments it was made from.
      if (v.state != kNoValue) {
        if (p[v.state].kind == PyKind::dict)
          add_pairs(p[v.state].pairs, it.path, true);
        else
          children.push_back({v.state, it.path, it.depth + 1});
      }
      add_pairs(v.pairs, it.path);
      add_items(v.items, it.path);
      if (v.args != kNoValue && p[v.args].kind == PyKind::tuple)
        add_items(p[v.args].items, it.path);
    } else {
      add_items(v.items, it.path);
    }
    for (auto c = children.rbegin(); c != children.rend(); ++c) todo.push_back(std::move(*c));
  }
  return out;
}

}  // namespace tlio::detail
