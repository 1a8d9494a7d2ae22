// common/json_text.hpp: JSON string literals, for the canonical header (whose escaping must be
// the reference's byte for byte) and for names in messages, quoted so that control characters
// and quotes in a hostile name stay visible and cannot break the one-line message.
#pragma once

#include <string>
#include <string_view>

namespace tlio::detail {

/// Appends `s` as a JSON string literal with the reference escaping (serde_json compact).
void append_json_string(std::string& out, std::string_view s);

/// `s` as a JSON string literal, for messages: `tensor "a\nb"`.
inline std::string quote_name(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

}  // namespace tlio::detail
