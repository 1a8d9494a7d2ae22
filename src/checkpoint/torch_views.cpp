// checkpoint/torch_views.cpp: each tensor's view checked against its storage, the plan of what
// is written (names, dtypes, shapes, exact aliases), and the gather of a strided view.
#include "checkpoint/torch_views.hpp"

#include <fmt/core.h>

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "checkpoint/torch_walk.hpp"
#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "tlio/error.hpp"
#include "tlio/shape.hpp"

namespace tlio::detail {
namespace {

// The output projection that transformers ties to the input embeddings (its models'
// _tied_weights_keys): `lm_head.weight`, at the top or under a wrapper's prefix.
bool is_tied_output_head(std::string_view name) {
  return name == "lm_head.weight" || name.ends_with(".lm_head.weight");
}

// Checks a tensor's view against its storage; returns the dtype it is written as.
Dtype check_view(Checkpoint& c, const std::string& name, const TensorRecord& t, bool* contiguous) {
  const StorageRecord& s = c.resolver.storages[t.storage];
  if (!s.dtype)
    throw Error(ErrorCode::unsupported, Rule::checkpoint, name, std::nullopt,
                fmt::format("tensor {} is stored as {}, which safetensors has no dtype for",
                            quote_name(name), s.type_name));
  const Dtype dtype = t.dtype.value_or(*s.dtype);
  if (t.size.size() != t.stride.size())
    refuse_checkpoint(name, fmt::format("tensor {} has {} sizes but {} strides", quote_name(name),
                                        t.size.size(), t.stride.size()));
  if (t.offset < 0)
    refuse_checkpoint(name,
                      fmt::format("tensor {} has a negative storage offset", quote_name(name)));
  uint64_t last = static_cast<uint64_t>(t.offset), numel = 1;
  bool empty = false;
  for (size_t i = 0; i < t.size.size(); ++i) {
    if (t.size[i] < 0 || t.stride[i] < 0)
      refuse_checkpoint(name,
                        fmt::format("tensor {} has a negative size or stride", quote_name(name)));
    if (t.size[i] == 0) empty = true;
    const auto n = detail::checked_mul(numel, static_cast<uint64_t>(t.size[i]));
    if (!n) refuse_checkpoint(name, fmt::format("tensor {}: its size overflows", quote_name(name)));
    numel = *n;
  }
  if (!empty)
    for (size_t i = 0; i < t.size.size(); ++i) {
      const auto step = detail::checked_mul(static_cast<uint64_t>(t.size[i] - 1),
                                            static_cast<uint64_t>(t.stride[i]));
      const auto sum = step ? detail::checked_add(last, *step) : std::nullopt;
      if (!sum)
        refuse_checkpoint(name, fmt::format("tensor {}: its view overflows", quote_name(name)));
      last = *sum;
    }
  // The view's elements (of `dtype`) must lie inside the storage's bytes.
  const unsigned element = dtype_bits(dtype) / 8;
  const auto storage_bytes = detail::checked_mul(s.numel, dtype_bits(*s.dtype) / 8);
  const auto end = detail::checked_add(last, 1);
  const auto view_end = end ? detail::checked_mul(*end, element) : std::nullopt;
  if (!empty && (!view_end || !storage_bytes || *view_end > *storage_bytes))
    refuse_checkpoint(
        name,
        fmt::format("tensor {} reaches element {} of a storage of {} bytes ({} {}-byte elements)",
                    quote_name(name), last, storage_bytes.value_or(0),
                    storage_bytes.value_or(0) / element, element));
  // Row-major strides: then the bytes can be written in one piece.
  uint64_t expected = 1;
  *contiguous = true;
  for (size_t i = t.size.size(); i-- > 0;) {
    if (t.size[i] != 1 && static_cast<uint64_t>(t.stride[i]) != expected) *contiguous = false;
    expected *= static_cast<uint64_t>(t.size[i]);
  }
  return dtype;
}

}  // namespace

std::vector<TensorPlan> plan_tensors(Checkpoint& c, const ImportOptions& options,
                                     CheckpointContents& contents) {
  ValueId root = c.root;
  if (!options.key.empty()) {
    root = descend(c.pickle, root, options.key);
  } else if (!options.import_all && c.pickle[root].kind == PyKind::dict) {
    const auto& pairs = c.pickle[root].pairs;
    std::vector<std::string> keys;
    std::vector<ValueId> values;
    for (size_t i = 0; i + 1 < pairs.size(); i += 2)
      if (const std::optional<std::string> name = key_text(c.pickle, pairs[i])) {
        keys.push_back(*name);
        values.push_back(pairs[i + 1]);
      }
    const std::optional<size_t> model =
        model_part(keys, [&](size_t i) { return c.pickle[values[i]].kind == PyKind::dict; });
    if (model) {
      root = values[*model];
      contents.chosen_key = keys[*model];
      for (const std::string& k : keys)
        if (k != keys[*model]) contents.other_keys.push_back(k);
    }
  }
  NamedTensors w = walk_names(c.pickle, root);
  contents.format = c.format;
  contents.dropped_values = w.dropped;
  contents.dropped = std::move(w.dropped_values);
  std::vector<TensorPlan> plans;
  std::unordered_set<std::string> names;
  for (const NamedTensor& n : w.tensors) {
    const std::string name = n.name.empty() ? "tensor" : n.name;
    if (!names.insert(name).second)
      refuse_checkpoint(name, fmt::format("two tensors would be named {}", quote_name(name)));
    const TensorRecord& t = c.resolver.tensors[n.tensor];
    std::string why = t.unsupported;
    TensorPlan pl{name, n.tensor, Dtype::F32, {}, true, {}};
    if (why.empty()) {
      try {
        pl.dtype = check_view(c, name, t, &pl.contiguous);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::unsupported) throw;
        why = e.detail();
      }
    } else {
      why = fmt::format("tensor {}: {}", quote_name(name), why);
    }
    if (!why.empty()) {
      if (!options.skip_unsupported)
        throw Error(ErrorCode::unsupported, Rule::checkpoint, name, std::nullopt,
                    why + " (--skip-unsupported leaves it out)");
      contents.skipped.push_back(why);
      continue;
    }
    for (int64_t d : t.size) pl.shape.push_back(static_cast<uint64_t>(d));
    plans.push_back(std::move(pl));
  }
  // Exact aliases (same storage, offset, sizes, strides, dtype): one name is written, the others
  // recorded: the alphabetically first, except that a tied output head comes last of all, as
  // save_pretrained drops it for the input embeddings (what transformers and tlio's model checks
  // then expect).
  const auto before = [](const std::string& a, const std::string& b) {
    const bool head_a = is_tied_output_head(a), head_b = is_tied_output_head(b);
    return head_a != head_b ? head_b : a < b;
  };
  std::map<std::tuple<size_t, int64_t, std::vector<int64_t>, std::vector<int64_t>, Dtype>,
           std::string>
      first;
  for (const TensorPlan& pl : plans) {
    const TensorRecord& t = c.resolver.tensors[pl.tensor];
    auto key = std::make_tuple(t.storage, t.offset, t.size, t.stride, pl.dtype);
    auto [it, inserted] = first.emplace(key, pl.name);
    if (!inserted && before(pl.name, it->second)) it->second = pl.name;
  }
  for (TensorPlan& pl : plans) {
    const TensorRecord& t = c.resolver.tensors[pl.tensor];
    const std::string& kept =
        first.at(std::make_tuple(t.storage, t.offset, t.size, t.stride, pl.dtype));
    if (kept != pl.name) pl.alias_of = kept;
  }
  for (const TensorPlan& pl : plans)
    contents.tensors.push_back({pl.name, pl.dtype, Shape(pl.shape), pl.contiguous, pl.alias_of});
  return plans;
}

void gather_view(std::span<const std::byte> storage, const TensorRecord& t, unsigned element,
                 unsigned swap_unit, uint64_t first, uint64_t count, std::byte* out) {
  const size_t rank = t.size.size();
  std::vector<uint64_t> index(rank);
  uint64_t rest = first;
  for (size_t i = rank; i-- > 0;) {
    const auto n = static_cast<uint64_t>(t.size[i]);
    index[i] = rest % n;
    rest /= n;
  }
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t at = static_cast<uint64_t>(t.offset);
    for (size_t i = 0; i < rank; ++i) at += index[i] * static_cast<uint64_t>(t.stride[i]);
    const std::byte* src = storage.data() + at * element;
    if (swap_unit)
      for (unsigned part = 0; part < element; part += swap_unit)
        for (unsigned b = 0; b < swap_unit; ++b)
          out[k * element + part + b] = src[part + swap_unit - 1 - b];
    else
      std::memcpy(out + k * element, src, element);
    for (size_t i = rank; i-- > 0;) {  // next index, last dimension fastest
      if (++index[i] < static_cast<uint64_t>(t.size[i])) break;
      index[i] = 0;
    }
  }
}

}  // namespace tlio::detail
