// format/header.cpp: the lookups of a parsed Header and TensorInfo (find, at, sorted_names).
#include "tlio/header.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_text.hpp"
#include "format/name_index.hpp"
#include "tlio/error.hpp"

namespace tlio {

using detail::quote_name;

uint64_t TensorInfo::element_count() const noexcept {
  for (uint64_t d : shape)
    if (d == 0) return 0;
  uint64_t c = 1;
  for (uint64_t d : shape) c *= d;  // validated headers guarantee no overflow here
  return c;
}

const TensorInfo* Header::find(std::string_view name) const noexcept {
  int64_t pos = detail::name_index_find(
      name_slots_, name, [this](uint32_t p) -> std::string_view { return tensors_[p].name; });
  return pos < 0 ? nullptr : &tensors_[static_cast<size_t>(pos)];
}

const TensorInfo& Header::at(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  throw Error(ErrorCode::not_found, Rule::none, std::string(name), std::nullopt,
              fmt::format("no tensor named {}", quote_name(name)));
}

std::vector<std::string_view> Header::sorted_names() const {
  std::vector<std::string_view> names;
  names.reserve(tensors_.size());
  for (const auto& t : tensors_) names.emplace_back(t.name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tlio
