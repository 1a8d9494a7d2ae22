// common/text.hpp: small text helpers shared by the modules that select tensors by name.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>

namespace tlio::detail {

/// `s` with A-Z made a-z, other bytes as they are (URL schemes, header names, settings).
std::string ascii_lower(std::string_view s);
/// `s` without the spaces, tabs, CRs and LFs at its ends.
std::string_view trim_blanks(std::string_view s) noexcept;
/// The environment variable `name`, or nullopt when it is unset or empty (as the AWS CLI and
/// huggingface_hub treat empty ones).
std::optional<std::string> env_value(const char* name);

/// Compiles a user's ECMAScript regex; Error{invalid_argument} naming `what` (e.g. "include").
std::regex compile_regex(const std::string& pattern, const char* what);

/// Selection by include/exclude patterns: with an include pattern, names it finds; otherwise the
/// default choice; minus names the exclude pattern finds. Empty patterns are absent.
/// 218103808 as "218,103,808", for people reading sizes in messages.
std::string digits_grouped(uint64_t n);

class NameFilter {
 public:
  NameFilter(const std::string& include, const std::string& exclude);
  bool selects(const std::string& name, bool by_default) const;
  /// The include regex alone (by_default without one); the exclude regex alone.
  bool includes(const std::string& name, bool by_default) const;
  bool excludes(const std::string& name) const;
  bool has_include() const noexcept { return has_include_; }

 private:
  bool has_include_, has_exclude_;
  std::regex include_, exclude_;
};

}  // namespace tlio::detail
