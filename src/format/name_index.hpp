// format/name_index.hpp: an open-addressing hash index from tensor name to position, stored in a
// plain vector of slots. Used to detect duplicate names while parsing and for Header::find,
// without a node allocation per name (headers may hold millions of tensors).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace tlio::detail {

/// Sizes `slots` for up to `count` names (load factor <= 1/2) and clears it.
inline void name_index_reset(std::vector<uint32_t>& slots, size_t count) {
  size_t cap = 16;
  while (cap < count * 2) cap <<= 1;
  slots.assign(cap, 0);
}

/// Looks `name` up; `name_of(pos)` gives the name stored at a position. Returns the slot where
/// the name is or would go, and the position found there (or -1).
template <class NameOf>
std::pair<size_t, int64_t> name_index_probe(const std::vector<uint32_t>& slots,
                                            std::string_view name, const NameOf& name_of) {
  const size_t mask = slots.size() - 1;
  size_t i = std::hash<std::string_view>{}(name) & mask;
  while (slots[i] != 0) {
    uint32_t pos = slots[i] - 1;
    if (name_of(pos) == name) return {i, pos};
    i = (i + 1) & mask;
  }
  return {i, -1};
}

/// Inserts `name` at position `pos` unless an equal name is present; returns that name's
/// position, or -1 when the name was new.
template <class NameOf>
int64_t name_index_insert(std::vector<uint32_t>& slots, std::string_view name, uint32_t pos,
                          const NameOf& name_of) {
  auto [slot, found] = name_index_probe(slots, name, name_of);
  if (found < 0) slots[slot] = pos + 1;
  return found;
}

}  // namespace tlio::detail
