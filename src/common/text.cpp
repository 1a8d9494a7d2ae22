#include "common/text.hpp"

#include <fmt/core.h>

#include "common/json_text.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

std::regex compile_regex(const std::string& pattern, const char* what) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw_invalid(fmt::format("invalid {} regex {}: {}", what, quote_name(pattern), e.what()));
  }
}

std::string digits_grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

NameFilter::NameFilter(const std::string& include, const std::string& exclude)
    : has_include_(!include.empty()),
      has_exclude_(!exclude.empty()),
      include_(compile_regex(has_include_ ? include : ".", "include")),
      exclude_(compile_regex(has_exclude_ ? exclude : ".", "exclude")) {}

bool NameFilter::includes(const std::string& name, bool by_default) const {
  return has_include_ ? std::regex_search(name, include_) : by_default;
}

bool NameFilter::excludes(const std::string& name) const {
  return has_exclude_ && std::regex_search(name, exclude_);
}

bool NameFilter::selects(const std::string& name, bool by_default) const {
  return includes(name, by_default) && !excludes(name);
}

}  // namespace tlio::detail
