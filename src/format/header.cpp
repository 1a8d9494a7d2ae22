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

namespace {

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

}  // namespace

bool natural_less(std::string_view a, std::string_view b) noexcept {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      // Compare the runs' values without parsing them (they may be longer than any integer):
      // past leading zeros, the longer run is larger; of equal length, the bytes decide.
      size_t ie = i, je = j;
      while (ie < a.size() && is_digit(a[ie])) ++ie;
      while (je < b.size() && is_digit(b[je])) ++je;
      size_t iz = i, jz = j;
      while (iz + 1 < ie && a[iz] == '0') ++iz;
      while (jz + 1 < je && b[jz] == '0') ++jz;
      const std::string_view va = a.substr(iz, ie - iz), vb = b.substr(jz, je - jz);
      if (va.size() != vb.size()) return va.size() < vb.size();
      if (va != vb) return va < vb;
      // Same value: more leading zeros first, so "01" and "1" are still ordered.
      if (ie - i != je - j) return ie - i > je - j;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace tlio
