#include "common/text.hpp"

#include <fmt/core.h>

#include <cstdlib>

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

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string_view trim_blanks(std::string_view s) noexcept {
  constexpr std::string_view kBlanks = " \t\r\n";
  const size_t first = s.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlanks) - first + 1);
}

std::optional<std::string> env_value(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
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
